//! The seam's link faults (shared state the harness sets and the network reads): which faults
//! are in force on which directed link, counted so that overlapping faults each need their
//! removal, and the targeted holds waiting for the next message of a kind.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

/// A fault on a directed link between two nodes, set by the harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkFault {
    /// Messages are held (delayed, not dropped) until the fault is removed: e.g. a write that
    /// reaches the store only after a cutover.
    Hold,
    /// Every message is delivered twice, the copy a little later.
    Duplicate,
    /// One bit of every pre-copy chunk (`StreamRead`) is flipped in transit: the copies diverge,
    /// and the move's final checksum must catch it.
    Corrupt,
    /// Every message waits a random extra 0 to 50 ms, so messages overtake each other.
    Reorder,
}

type Link = (std::net::IpAddr, std::net::IpAddr);

/// The link faults in force, shared by every node of a run. Each is counted, so overlapping
/// faults each need their removal.
#[derive(Clone, Debug, Default)]
pub struct LinkFaults(Arc<FaultState>);

#[derive(Debug, Default)]
struct FaultState {
    faults: Mutex<FaultCounts>,
    holds: Mutex<Holds>,
    /// Entries of `faults` plus entries of `holds`: 0 when no link has a fault or a hold, the
    /// common case, which [`LinkFaults::any`] tells without a lock.
    in_force: AtomicUsize,
}

/// How many faults of each kind are on each link.
type FaultCounts = BTreeMap<(Link, LinkFault), u32>;
/// Per link and message kind, the holds waiting for the next message of that kind.
type Holds = BTreeMap<(Link, &'static str), Vec<Hold>>;

/// How long a targeted hold keeps the message it takes: `ms` of the sender's clock, or less
/// when its `release` comes first (a hold that ends on a protocol event, set by the harness).
#[derive(Clone, Debug)]
pub struct Hold {
    /// The longest the message is held, ms.
    pub ms: u64,
    /// Ends the hold early when released ([`Release::release`]); `None`: held `ms`.
    pub release: Option<Release>,
}

impl Hold {
    /// Wait as long as the hold lasts: `ms`, or until its release if that comes first (a
    /// release that came before the wait began ends it at once).
    pub async fn wait(&self) {
        match &self.release {
            None => super::clock::sleep_ms(self.ms).await,
            Some(release) => {
                let _ = super::clock::timeout_ms(self.ms, release.released()).await;
            }
        }
    }
}

/// The early end of a [`Hold`]: the harness releases it when a protocol event comes (a
/// scenario's `until`), and the message it holds goes on its way. Cloned handles share one
/// release.
#[derive(Clone, Debug, Default)]
pub struct Release(Arc<ReleaseState>);

#[derive(Debug, Default)]
struct ReleaseState {
    released: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Release {
    /// End the hold now (and any wait on it to come).
    pub fn release(&self) {
        self.0.released.store(true, std::sync::atomic::Ordering::Relaxed);
        // One waiter at most (the held message's task); a permit stored before it waits
        // wakes it at once.
        self.0.notify.notify_one();
    }

    /// Whether [`Release::release`] was called.
    pub fn is_released(&self) -> bool {
        self.0.released.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn released(&self) {
        if !self.is_released() {
            self.0.notify.notified().await;
        }
    }
}

impl PartialEq for LinkFaults {
    /// Equal when the same faults are in force now.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.faults() == *other.faults()
    }
}

impl LinkFaults {
    fn faults(&self) -> std::sync::MutexGuard<'_, FaultCounts> {
        self.0.faults.lock().expect("link faults")
    }

    fn holds(&self) -> std::sync::MutexGuard<'_, Holds> {
        self.0.holds.lock().expect("link faults")
    }

    /// Whether any link has a fault or a hold waiting.
    pub(super) fn any(&self) -> bool {
        self.0.in_force.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    /// Hold the next message of kind `kind` ([`Msg::kind_name`](crate::msg::Msg::kind_name)) sent on `link` for `hold_ms`,
    /// then deliver it (a targeted delay: "the next store append from server-1, by 8 s").
    pub fn hold_next(&self, link: Link, kind: &'static str, hold_ms: u64) {
        self.hold_next_until(link, kind, Hold { ms: hold_ms, release: None });
    }

    /// [`LinkFaults::hold_next`] with a [`Hold`] that may end early, on its release.
    pub fn hold_next_until(&self, link: Link, kind: &'static str, hold: Hold) {
        let mut holds = self.holds();
        let waiting = holds.entry((link, kind)).or_default();
        if waiting.is_empty() {
            self.0.in_force.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        waiting.push(hold);
    }

    /// The hold waiting for the next message of `kind` on `link`, if any (consumed).
    pub(super) fn take_hold(&self, link: Link, kind: &'static str) -> Option<Hold> {
        if !self.any() {
            return None;
        }
        let mut holds = self.holds();
        let waiting = holds.get_mut(&(link, kind))?;
        let hold = waiting.remove(0);
        if waiting.is_empty() {
            holds.remove(&(link, kind));
            self.0.in_force.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        Some(hold)
    }

    /// Whether `fault` is in force on `link` (`from`, `to`).
    pub fn has(&self, link: Link, fault: LinkFault) -> bool {
        self.any() && self.faults().contains_key(&(link, fault))
    }

    /// Put `fault` in force on `link` (counted).
    pub fn add(&self, link: Link, fault: LinkFault) {
        let mut faults = self.faults();
        let n = faults.entry((link, fault)).or_insert(0);
        if *n == 0 {
            self.0.in_force.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        *n += 1;
    }

    /// Undo one [`LinkFaults::add`]; held messages go on their way once no hold is left.
    pub fn remove(&self, link: Link, fault: LinkFault) {
        let mut faults = self.faults();
        if let Some(n) = faults.get_mut(&(link, fault)) {
            *n -= 1;
            if *n == 0 {
                faults.remove(&(link, fault));
                self.0.in_force.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Remove every fault (targeted holds not yet used included).
    pub fn clear(&self) {
        let (mut faults, mut holds) = (self.faults(), self.holds());
        faults.clear();
        holds.clear();
        self.0.in_force.store(0, std::sync::atomic::Ordering::Relaxed);
    }
}
