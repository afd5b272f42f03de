//! The seam's disk (a driver: its syncs take simulated time): an append-only log of typed
//! records with fsync semantics, whose unsynced records the harness's crash drops.

use super::clock::sleep_ms;
use std::sync::{Arc, Mutex};

struct DiskInner<R> {
    synced: Vec<R>,
    pending: Vec<R>,
    /// Records ever appended (synced + pending + lost in crashes), for sync marks.
    appended_total: u64,
    /// Records ever made durable or lost: `appended_total - pending.len()`.
    settled_total: u64,
    /// Bumped by every crash, so a sync that straddles a crash makes nothing durable.
    generation: u64,
    sync_ms: u64,
    /// The owning node's name, for `synced` events ("" reports none).
    name: &'static str,
    /// Extra time every sync takes while the harness slows this disk down (0: healthy).
    slow_extra_ms: u64,
}

/// What a crash did to a disk's unsynced records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CrashReport {
    /// Unsynced records lost.
    pub lost: usize,
    /// Unsynced records that reached the platter anyway and survive (torn writes only).
    pub survived: usize,
    /// Whether the record after the survivors was torn (and dropped by recovery).
    pub torn: bool,
}

/// A node's disk: an append-only log of records with fsync semantics.
///
/// [`Disk::append`] buffers a record (the running process sees it at once); [`Disk::sync`] takes
/// `sync_ms` of simulated time and then makes every record appended before the call durable.
/// [`Disk::crash`] (called by the harness when it kills the node) drops everything not yet
/// synced, so a restarted node's [`Disk::read_all`] sees only synced records.
///
/// Records are typed values rather than bytes: the model is about what survives a crash, and
/// skipping serialization keeps sweeps fast.
pub struct Disk<R> {
    inner: Arc<Mutex<DiskInner<R>>>,
}

impl<R> Clone for Disk<R> {
    fn clone(&self) -> Self {
        Disk { inner: self.inner.clone() }
    }
}

impl<R: Clone> Disk<R> {
    /// An empty disk whose fsync takes `sync_ms` milliseconds.
    pub fn new(sync_ms: u64) -> Self {
        Self::named("", sync_ms)
    }

    /// An empty disk of node `name` (`lock-1`, `store-1`): every sync that makes records
    /// durable emits a `synced` event naming it.
    pub fn named(name: &'static str, sync_ms: u64) -> Self {
        let inner = DiskInner { synced: Vec::new(), pending: Vec::new(), appended_total: 0, settled_total: 0, generation: 0, sync_ms, name, slow_extra_ms: 0 };
        Disk { inner: Arc::new(Mutex::new(inner)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DiskInner<R>> {
        self.inner.lock().expect("disk lock poisoned")
    }

    /// Records already durable before the owning node first starts: the harness's initial
    /// content (a preloaded store). Only on a disk nothing was written to yet.
    ///
    /// Panics if the disk is not empty (a harness bug, not an input error).
    pub fn preload(&self, recs: Vec<R>) {
        let mut d = self.lock();
        assert!(d.synced.is_empty() && d.pending.is_empty(), "preload on a used disk");
        d.synced = recs;
    }

    /// Buffer one record (not durable until a later [`Disk::sync`] completes).
    pub fn append(&self, rec: R) {
        let mut d = self.lock();
        d.pending.push(rec);
        d.appended_total += 1;
    }

    /// Make every record appended before this call durable; takes `sync_ms` of simulated time.
    pub async fn sync(&self) {
        // The mark is absolute: concurrent syncs that finish first must not make this one
        // cover records appended after it began.
        let (mark, generation, sync_ms) = {
            let d = self.lock();
            (d.appended_total, d.generation, d.sync_ms + d.slow_extra_ms)
        };
        if sync_ms > 0 {
            sleep_ms(sync_ms).await;
        }
        let mut d = self.lock();
        if d.generation != generation {
            return; // crashed meanwhile: our records are gone, and the process with them
        }
        let n = (mark.saturating_sub(d.settled_total) as usize).min(d.pending.len());
        let DiskInner { synced, pending, .. } = &mut *d;
        synced.extend(pending.drain(..n));
        d.settled_total += n as u64;
        let name = d.name;
        drop(d);
        if n > 0 && !name.is_empty() {
            crate::event::emit(crate::event::Event::Synced { node: name, records: n });
        }
    }

    /// Every record the running process wrote, synced or not, in append order.
    pub fn read_all(&self) -> Vec<R> {
        let d = self.lock();
        d.synced.iter().chain(d.pending.iter()).cloned().collect()
    }

    /// Only the synced records: what a restart would see.
    pub fn read_durable(&self) -> Vec<R> {
        self.lock().synced.clone()
    }

    /// `f` of the synced records, read in place: [`Disk::read_durable`] without a copy of every
    /// record (the harness reads the whole store's disk for its final view).
    pub fn with_durable<T>(&self, f: impl FnOnce(&[R]) -> T) -> T {
        f(&self.lock().synced)
    }

    /// Drop every unsynced record: the harness calls this when it kills the owning node.
    /// Returns how many records were lost.
    pub fn crash(&self) -> usize {
        let mut d = self.lock();
        d.generation += 1;
        let lost = d.pending.len();
        d.pending.clear();
        d.settled_total += lost as u64;
        lost
    }

    /// Crash in the middle of writing: the first `keep` unsynced records had reached the platter
    /// anyway (an fsync in progress, or the OS writing back on its own) and survive, and the
    /// record after them was torn (half written); recovery finds it by its checksum and drops
    /// it, as it drops everything after. Returns what the crash did.
    pub fn crash_torn(&self, keep: usize) -> CrashReport {
        let mut d = self.lock();
        let keep = keep.min(d.pending.len());
        let survived: Vec<R> = d.pending.drain(..keep).collect();
        d.synced.extend(survived);
        let torn = keep > 0 && !d.pending.is_empty();
        d.settled_total += keep as u64;
        drop(d);
        CrashReport { lost: self.crash(), survived: keep, torn }
    }

    /// Make every sync take `extra_ms` longer (the harness's slow-disk fault); 0 restores it.
    pub fn set_slow(&self, extra_ms: u64) {
        self.lock().slow_extra_ms = extra_ms;
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn disk_crash_loses_only_unsynced_records() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
        rt.block_on(async {
            let disk: Disk<u32> = Disk::new(2);
            disk.append(1);
            disk.sync().await;
            disk.append(2);
            assert_eq!(disk.read_all(), vec![1, 2], "the process sees its own unsynced write");
            assert_eq!(disk.crash(), 1);
            assert_eq!(disk.read_all(), vec![1]);
        });
    }

    /// Found in review: with concurrent syncs, a sync that finished second made a record
    /// appended after it began durable.
    #[test]
    fn disk_concurrent_syncs_cover_only_what_was_appended_before_each() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
        rt.block_on(async {
            let disk: Disk<u32> = Disk::new(4);
            disk.append(1);
            let d1 = disk.clone();
            let s1 = madsim::task::spawn(async move { d1.sync().await });
            sleep_ms(1).await;
            disk.append(2);
            let d2 = disk.clone();
            let s2 = madsim::task::spawn(async move { d2.sync().await });
            sleep_ms(1).await;
            disk.append(3); // after both syncs began
            s1.await.unwrap();
            s2.await.unwrap();
            disk.crash();
            assert_eq!(disk.read_all(), vec![1, 2]);
        });
    }

    #[test]
    fn disk_sync_straddling_a_crash_makes_nothing_durable() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
        rt.block_on(async {
            let disk: Disk<u32> = Disk::new(5);
            disk.append(7);
            let d2 = disk.clone();
            let h = madsim::task::spawn(async move { d2.sync().await });
            sleep_ms(1).await;
            disk.crash();
            h.await.unwrap();
            assert!(disk.read_all().is_empty());
        });
    }
}
