//! Whole items on worker threads, results in item order: each of `jobs` scoped threads takes
//! the next item until none is left, so which thread ran what never shows in the result. Used
//! where every item runs whole seeds on its own thread (madsim's runtime is per thread): a
//! mutants hunt, an explore batch, a mutation of `hunt`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f(i, &items[i])` for every item, on `jobs` threads (at least 1, at most one per item);
/// the results in item order.
pub fn in_order<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { return };
                let out = f(i, item);
                *slots[i].lock().expect("slot") = Some(out);
            });
        }
    });
    slots.into_iter().map(|s| s.into_inner().expect("slot").expect("every item ran")).collect()
}
