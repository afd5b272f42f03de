//! Helpers of the library's unit tests: capture the events a step emits, and run an async
//! driver on a madsim runtime (a fixed seed, so the tests are deterministic).

use crate::event::{set_sink, Event};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

/// Run `f` and return its result with every event it emitted, rendered as the trace shows them
/// (`effect stream=1 server=1 epoch=2 ...`).
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let (r, events) = capture_events(f);
    (r, events.iter().map(|e| e.to_string()).collect())
}

/// Run `f` and return its result with every event it emitted.
pub fn capture_events<R>(f: impl FnOnce() -> R) -> (R, Vec<Event>) {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = seen.clone();
    let previous = set_sink(Some(Box::new(move |e| sink.borrow_mut().push(e))));
    let r = f();
    set_sink(previous);
    let events = seen.borrow().clone();
    (r, events)
}

/// Run `future` to completion on a madsim runtime with seed 1, for at most 10 minutes of
/// simulated time (a mutant that never answers fails the test instead of hanging it).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
    rt.set_time_limit(std::time::Duration::from_secs(600));
    rt.block_on(future)
}

/// Whether some event in `events` starts with `prefix` (`"fenced stream=1"`).
pub fn has(events: &[String], prefix: &str) -> bool {
    events.iter().any(|e| e.starts_with(prefix))
}

/// The frontend tests' map (its core's and its node's): one active range `["", unbounded)`
/// owned by server-1 at epoch 1; with `split`, a second range from `m` owned by server-2 at
/// epoch 2, the first still preparing.
pub fn frontend_map(split: bool) -> crate::map::PartitionMap {
    use crate::ids::{Epoch, RangeId, ServerId};
    use crate::map::MapOp;
    let mut map = crate::map::PartitionMap::default();
    let points = if split { vec![b"m".to_vec()] } else { vec![] };
    map.apply_batch(&[MapOp::Bootstrap { split_points: points }]).unwrap();
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
    if split {
        map.apply_batch(&[MapOp::Assign { range: RangeId(2), owner: ServerId(2), owner_session: 2 }, MapOp::Activate { range: RangeId(2), epoch: Epoch(2) }]).unwrap();
    } else {
        map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
    }
    map
}
