//! Buffers the checkers keep from one run to the next on this thread (issue 13). A sweep judges
//! run after run on the same worker thread; memory allocated afresh for each run's index comes
//! from pages the allocator has to fault in again (transparent huge pages: 2 MiB zeroed per
//! fault), which cost the checkers about half of their time. A [`Pooled`] buffer is taken from
//! this thread's spares when built and given back, cleared, when dropped; one grown past
//! [`MAX_ITEMS`] items is dropped instead, so what the pool holds stays bounded by the largest
//! run judged (and by the number of buffers alive at once).

use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// A buffer that can be cleared for reuse without giving back its memory.
pub trait Reuse: Default + 'static {
    /// Empty it, keeping its capacity.
    fn clear_for_reuse(&mut self);
    /// How many items it has room for.
    fn room(&self) -> usize;
}

impl<T: 'static> Reuse for Vec<T> {
    fn clear_for_reuse(&mut self) {
        self.clear();
    }
    fn room(&self) -> usize {
        self.capacity()
    }
}

impl<K: 'static, V: 'static, S: Default + 'static> Reuse for HashMap<K, V, S> {
    fn clear_for_reuse(&mut self) {
        self.clear();
    }
    fn room(&self) -> usize {
        self.capacity()
    }
}

impl<K: 'static, S: Default + 'static> Reuse for HashSet<K, S> {
    fn clear_for_reuse(&mut self) {
        self.clear();
    }
    fn room(&self) -> usize {
        self.capacity()
    }
}

impl<T: 'static> Reuse for hashbrown::HashTable<T> {
    fn clear_for_reuse(&mut self) {
        self.clear();
    }
    fn room(&self) -> usize {
        self.capacity()
    }
}

/// The most items a buffer may have room for and still be kept.
pub const MAX_ITEMS: usize = 1 << 20;

thread_local! {
    static SPARES: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of type `C` taken from this thread's spares (or new), empty; given back on drop.
/// Derefs to the buffer.
pub struct Pooled<C: Reuse>(C);

impl<C: Reuse> Pooled<C> {
    /// An empty buffer: a spare one of this type if the thread has one, else a new one.
    pub fn take() -> Pooled<C> {
        let spare = SPARES.try_with(|s| {
            let mut s = s.borrow_mut();
            let i = s.iter().position(|b| b.is::<C>())?;
            s.swap_remove(i).downcast::<C>().ok()
        });
        Pooled(spare.ok().flatten().map_or_else(C::default, |b| *b))
    }
}

impl<C: Reuse> Default for Pooled<C> {
    fn default() -> Self {
        Pooled::take()
    }
}

impl<C: Reuse> std::ops::Deref for Pooled<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C: Reuse> std::ops::DerefMut for Pooled<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.0
    }
}

impl<C: Reuse> Drop for Pooled<C> {
    fn drop(&mut self) {
        let mut c = std::mem::take(&mut self.0);
        if c.room() == 0 || c.room() > MAX_ITEMS {
            return;
        }
        c.clear_for_reuse();
        // During the thread's teardown the spares may be gone already: the buffer is dropped.
        let _ = SPARES.try_with(|s| s.borrow_mut().push(Box::new(c)));
    }
}
