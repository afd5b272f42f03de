//! The durable stream store (`store-1`): one append-only stream per range, and the fence that
//! makes a stale owner's write fail where it takes effect.
//!
//! `append(stream, epoch, record)` fails if the stream's fence is above `epoch`, and is
//! idempotent per stream: a record whose id is already there is not appended twice;
//! `fence(stream, epoch)` raises the fence (never lowers it) and returns the sealed content (from
//! an offset the caller names); `read(stream, from)` returns content without fencing (pre-copy).
//! Appends are synced to disk before they are acknowledged, and so is the fence. Idea: the
//! fencing token of Kleppmann's "How to do distributed locking" (2016) and Azure Storage's
//! stream layer sealing extents on partition reassignment (Calder et al., SOSP 2011).

use crate::config::{Knobs, Mutation};
use crate::event::{emit, Event};
use crate::ids::{Epoch, OpId, RangeId};
use crate::msg::{Msg, Record, StreamDigest};
use crate::seam::{Disk, Rpc};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// A durable record of the store.
#[derive(Clone, Debug)]
pub enum StoreRecord {
    /// The fence of `stream` was raised to `epoch`.
    Fence {
        /// The stream (its range id).
        stream: RangeId,
        /// The new fence: appends at a lower epoch fail from now on.
        epoch: Epoch,
    },
    /// Appends with these ids are barred from `stream` (a reload's fence after an unknown
    /// outcome; see `Msg::Fence::bar`).
    Bar {
        /// The stream (its range id).
        stream: RangeId,
        /// The ids barred, none of them in the stream when barred.
        ids: Vec<OpId>,
    },
    /// `record` was appended to `stream`.
    Append {
        /// The stream (its range id).
        stream: RangeId,
        /// The record, with the writer's epoch and its idempotency id.
        record: Record,
    },
}

/// One stream: its fence and its records in append order.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// Appends below this epoch fail.
    pub fence: Epoch,
    /// The content.
    pub records: Vec<Record>,
    /// Offset of each idempotency id in `records`.
    pub ids: BTreeMap<OpId, u64>,
    /// Ids that may never be appended: an owner reloaded without them while their outcome was
    /// unknown to it (see `Msg::Fence::bar`). An append of one fails like a fenced one.
    pub barred: BTreeSet<OpId>,
    /// `digests[i]`: the digest of `records[..=i]` (24 bytes a record), computed when first
    /// asked for and kept, so each record is hashed here at most once however often a reload
    /// asks for the digest of the prefix it keeps.
    digests: Vec<StreamDigest>,
}

impl Stream {
    fn push(&mut self, record: Record) {
        self.ids.insert(record.id, self.records.len() as u64);
        self.records.push(record);
    }

    /// The digest of the first `n` records, or of all of them when there are fewer (its
    /// `records` then says how many).
    pub fn prefix_digest(&mut self, n: u64) -> StreamDigest {
        let n = (n as usize).min(self.records.len());
        while self.digests.len() < n {
            let mut d = self.digests.last().copied().unwrap_or_default();
            d.add(&self.records[self.digests.len()]);
            self.digests.push(d);
        }
        if n == 0 {
            StreamDigest::default()
        } else {
            self.digests[n - 1]
        }
    }
}

/// The store's streams, rebuilt from disk on start. Pure: the node task below does the I/O.
#[derive(Clone, Debug, Default)]
pub struct Streams {
    /// Streams by id.
    pub streams: BTreeMap<RangeId, Stream>,
}

impl Streams {
    /// Replay durable records.
    pub fn recover(records: &[StoreRecord]) -> Self {
        let mut s = Streams::default();
        for rec in records {
            match rec {
                StoreRecord::Fence { stream, epoch } => {
                    let st = s.streams.entry(*stream).or_default();
                    assert!(*epoch >= st.fence, "fence went down on disk");
                    st.fence = *epoch;
                }
                StoreRecord::Bar { stream, ids } => {
                    s.streams.entry(*stream).or_default().barred.extend(ids.iter().copied());
                }
                StoreRecord::Append { stream, record } => {
                    s.streams.entry(*stream).or_default().push(record.clone());
                }
            }
        }
        s
    }

    /// Raise the fence of `stream` to `epoch`. Returns whether it rose (false: already there).
    ///
    /// Errors: `Err(fence)` when the fence is already above `epoch`.
    pub fn fence(&mut self, stream: RangeId, epoch: Epoch) -> Result<bool, Epoch> {
        let st = self.streams.entry(stream).or_default();
        if st.fence > epoch {
            return Err(st.fence);
        }
        let rose = st.fence < epoch;
        st.fence = epoch;
        Ok(rose)
    }

    /// Append `record` to `stream` if the fence allows its epoch. Returns the record's offset
    /// and whether it is new: an id already in the stream is not appended again (a retry after
    /// an unknown outcome), its first offset is returned instead.
    ///
    /// Errors: `Err(fence)` when the fence is above `record.epoch`.
    pub fn append(&mut self, stream: RangeId, record: Record, ignore_fence: bool) -> Result<(u64, bool), Epoch> {
        let st = self.streams.entry(stream).or_default();
        if (st.fence > record.epoch || st.barred.contains(&record.id)) && !ignore_fence {
            return Err(st.fence);
        }
        if let Some(&offset) = st.ids.get(&record.id) {
            return Ok((offset, false));
        }
        let offset = st.records.len() as u64;
        st.push(record);
        Ok((offset, true))
    }
}

/// Run the store node forever. `disk` survives restarts (the harness owns it).
pub async fn run(knobs: Knobs, disk: Disk<StoreRecord>, net: crate::seam::Net) {
    let records = disk.read_all();
    emit(Event::Recovered { node: "store-1", records: records.len() });
    let state = Rc::new(RefCell::new(Streams::recover(&records)));
    let rpc = Rpc::bind(crate::config::store_addr(), &net).await;
    let knobs = Rc::new(knobs);
    let link = rpc.clone();
    rpc.serve(move |msg, _from| {
        let (state, disk) = (state.clone(), disk.clone());
        let mutation = knobs.mutation;
        // Each read answer is one chunk, sized when the request arrives so that it leaves the
        // link within half the store timeout after what is already queued.
        let budget = chunk_budget(link.bandwidth_bytes_per_s(), knobs.store_timeout_ms, link.link_backlog_us());
        async move { handle(&state, &disk, msg, mutation, budget).await }
    });
    std::future::pending::<()>().await;
}

/// How much link time one read answer aims at, ms: small enough that other traffic on the
/// store's link (append acknowledgements) waits at most about this long behind a transfer,
/// large enough that a chunk's round trip (two latencies and a sync, a few ms) costs little.
pub const CHUNK_TARGET_MS: u64 = 50;

/// The payload bytes one read answer may carry: what the outgoing link (`bandwidth_bytes_per_s`)
/// sends in [`CHUNK_TARGET_MS`], or less when the `backlog_us` already queued on it leaves less
/// than that of half the store timeout (`store_timeout_ms`), but at least a twentieth of the
/// timeout's worth. A reader's timeout per chunk (the store timeout) then holds whatever the
/// stream's size: a transfer that grows with the range is a sequence of bounded chunks
/// (issue 15: a 2 MB stream at 1 MiB/s could never be loaded in one answer within the fixed 1 s
/// timeout).
pub fn chunk_budget(bandwidth_bytes_per_s: u64, store_timeout_ms: u64, backlog_us: u64) -> u64 {
    let room_us = (store_timeout_ms * 500).saturating_sub(backlog_us);
    let window_us = room_us.min(CHUNK_TARGET_MS * 1000).max(store_timeout_ms * 50);
    (bandwidth_bytes_per_s as u128 * window_us as u128 / 1_000_000) as u64
}

/// The records of `records[from..end]` that fit in `budget` payload bytes (wire size), at
/// least one when any is there.
fn chunk(records: &[Record], from: usize, end: usize, budget: u64) -> Vec<Record> {
    let span = records.get(from..end).unwrap_or(&[]);
    // Count first, then copy into a vector of the right size (no regrowth).
    let mut used = 0;
    let mut n = 0;
    for r in span {
        if n > 0 && used + r.wire_bytes() > budget {
            break;
        }
        used += r.wire_bytes();
        n += 1;
    }
    span[..n].to_vec()
}

/// Raise the fence of `stream` to `epoch` and make it, and every record appended before it,
/// durable. Returns the sealed length: only records below it are durable (an append at the
/// same epoch that lands during the sync is not yet; found in review).
///
/// Errors: `Err(fence)` when the fence is already above `epoch`.
///
/// `bar`: ids to bar from the stream, those not in it yet (in the same step as the fence, so an
/// append that lands while the fence syncs is refused too).
async fn raise_fence(state: &RefCell<Streams>, disk: &Disk<StoreRecord>, stream: RangeId, epoch: Epoch, bar: &[OpId]) -> Result<usize, Epoch> {
    let rose = state.borrow_mut().fence(stream, epoch)?;
    if rose {
        disk.append(StoreRecord::Fence { stream, epoch });
    }
    let barred: Vec<OpId> = {
        let mut state = state.borrow_mut();
        let st = state.streams.get_mut(&stream).expect("fence made it");
        bar.iter().copied().filter(|id| !st.ids.contains_key(id) && st.barred.insert(*id)).collect()
    };
    if !barred.is_empty() {
        disk.append(StoreRecord::Bar { stream, ids: barred });
    }
    let len = state.borrow().streams[&stream].records.len();
    disk.sync().await;
    emit(Event::Fence { stream, epoch, length: len });
    Ok(len)
}

/// Answer one request. `mutation` may switch off the fence (`store-ignores-fence`) or the sync
/// before an append's acknowledgement (`store-acks-before-sync`); `budget` bounds the payload
/// of a read answer (see [`chunk_budget`]).
async fn handle(state: &RefCell<Streams>, disk: &Disk<StoreRecord>, msg: Msg, mutation: Option<Mutation>, budget: u64) -> Option<Msg> {
    let ignore_fence = mutation == Some(Mutation::StoreIgnoresFence);
    match msg {
        Msg::ReadStream { stream, from, upto, precopy } => {
            // Only what is durable: a record a crash could still take away must not be copied
            // (the copy would then hold a record the stream lost).
            let len = state.borrow().streams.get(&stream).map_or(0, |s| s.records.len());
            let end = upto.map_or(len, |u| (u as usize).min(len));
            disk.sync().await;
            let st = state.borrow();
            let records = st.streams.get(&stream).map_or(Vec::new(), |s| chunk(&s.records, from as usize, end, budget));
            Some(Msg::StreamRead { records, length: end as u64, precopy })
        }
        Msg::Seal { stream, epoch } => Some(Msg::Sealed { result: raise_fence(state, disk, stream, epoch, &[]).await.map(|len| len as u64) }),
        Msg::Fence { stream, epoch, from, bar } => {
            match raise_fence(state, disk, stream, epoch, &bar).await {
                Ok(len) => {
                    let mut state = state.borrow_mut();
                    let st = state.streams.get_mut(&stream).expect("raise_fence made it");
                    let records = chunk(&st.records, from as usize, len, budget);
                    // The digest of what the caller says it holds (durable: below the sealed
                    // length, synced by the fence), for it to check before keeping it.
                    let prefix = st.prefix_digest(from.min(len as u64));
                    Some(Msg::FenceResult { result: Ok(records), length: len as u64, prefix })
                }
                Err(fence) => Some(Msg::FenceResult { result: Err(fence), length: 0, prefix: StreamDigest::default() }),
            }
        }
        Msg::StoreAppend { stream, server, record } => {
            let (epoch, id, key, len) = (record.epoch, record.id, record.key.clone(), record.payload_bytes() as usize);
            let appended = state.borrow_mut().append(stream, record.clone(), ignore_fence);
            match appended {
                Err(fence) => {
                    emit(Event::Fenced { stream, server, epoch, fence, id });
                    Some(Msg::StoreAppended { result: Err(fence) })
                }
                Ok((offset, false)) => {
                    // Already there; it may not be synced yet, so sync before answering.
                    disk.sync().await;
                    emit(Event::Deduplicated { stream, server, epoch, key, id, offset });
                    Some(Msg::StoreAppended { result: Ok(offset) })
                }
                Ok((offset, true)) => {
                    disk.append(StoreRecord::Append { stream, record });
                    if mutation != Some(Mutation::StoreAcksBeforeSync) {
                        disk.sync().await;
                    }
                    emit(Event::Effect { stream, server, epoch, key, id, offset, bytes: len });
                    Some(Msg::StoreAppended { result: Ok(offset) })
                }
            }
        }
        other => panic!("store-1: unexpected message {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    //! The fence and idempotency rules on [`Streams`], then the node's answers through
    //! [`handle`] on a madsim runtime: what is acknowledged is durable, what a fence refuses is
    //! traced, a fence returns exactly the sealed content.
    use super::*;
    use crate::ids::ServerId;
    use crate::testkit::{block_on, capture, has};

    fn rec(seq: u64, epoch: u64) -> Record {
        Record { epoch: Epoch(epoch), id: OpId { client: 1, seq }, key: format!("k{seq}").into_bytes(), bytes: vec![b'x'; seq as usize].into(), bulk: 0 }
    }

    const S: RangeId = RangeId(1);

    #[test]
    fn store_fence_only_rises_and_says_whether_it_rose() {
        let mut s = Streams::default();
        assert_eq!(s.fence(S, Epoch(3)), Ok(true));
        assert_eq!(s.fence(S, Epoch(3)), Ok(false), "already there");
        assert_eq!(s.fence(S, Epoch(2)), Err(Epoch(3)), "never lowered");
        assert_eq!(s.streams[&S].fence, Epoch(3));
        assert_eq!(s.fence(S, Epoch(5)), Ok(true));
        assert_eq!(s.streams[&S].fence, Epoch(5));
        assert_eq!(s.fence(RangeId(2), Epoch(0)), Ok(false), "a new stream starts at fence 0");
    }

    #[test]
    fn store_append_is_fenced_below_and_admitted_at_or_above_the_fence() {
        let mut s = Streams::default();
        s.fence(S, Epoch(3)).unwrap();
        assert_eq!(s.append(S, rec(1, 2), false), Err(Epoch(3)));
        assert!(s.streams[&S].records.is_empty(), "a fenced record is not stored");
        assert_eq!(s.append(S, rec(1, 3), false), Ok((0, true)), "at the fence");
        assert_eq!(s.append(S, rec(2, 4), false), Ok((1, true)), "above the fence");
        assert_eq!(s.append(S, rec(3, 1), true), Ok((2, true)), "mutation store-ignores-fence");
        assert_eq!(s.streams[&S].records.len(), 3);
    }

    #[test]
    fn store_append_is_idempotent_per_id_and_stream() {
        let mut s = Streams::default();
        assert_eq!(s.append(S, rec(1, 1), false), Ok((0, true)));
        assert_eq!(s.append(S, rec(2, 1), false), Ok((1, true)));
        assert_eq!(s.append(S, rec(1, 1), false), Ok((0, false)), "a retry gets its first offset");
        assert_eq!(s.append(S, rec(2, 1), false), Ok((1, false)));
        assert_eq!(s.streams[&S].records.len(), 2);
        assert_eq!(s.append(RangeId(2), rec(1, 1), false), Ok((0, true)), "ids are per stream");
        // A fenced retry is refused even if the id is there: the writer is stale.
        s.fence(S, Epoch(2)).unwrap();
        assert_eq!(s.append(S, rec(1, 1), false), Err(Epoch(2)));
    }

    #[test]
    fn store_recover_replays_fences_appends_and_ids() {
        let log = vec![
            StoreRecord::Append { stream: S, record: rec(1, 1) },
            StoreRecord::Fence { stream: S, epoch: Epoch(2) },
            StoreRecord::Append { stream: S, record: rec(2, 2) },
            StoreRecord::Fence { stream: RangeId(2), epoch: Epoch(4) },
        ];
        let mut s = Streams::recover(&log);
        assert_eq!(s.streams[&S].fence, Epoch(2));
        assert_eq!(s.streams[&S].records, vec![rec(1, 1), rec(2, 2)]);
        assert_eq!(s.streams[&S].ids[&rec(2, 2).id], 1);
        assert_eq!(s.streams[&RangeId(2)].fence, Epoch(4));
        assert_eq!(s.append(S, rec(2, 2), false), Ok((1, false)), "the id survives the restart");
        assert_eq!(s.append(S, rec(3, 1), false), Err(Epoch(2)), "so does the fence");
        assert_eq!(s.append(S, rec(3, 2), false), Ok((2, true)));
    }

    #[test]
    #[should_panic(expected = "fence went down")]
    fn store_recover_refuses_a_fence_that_went_down() {
        Streams::recover(&[StoreRecord::Fence { stream: S, epoch: Epoch(3) }, StoreRecord::Fence { stream: S, epoch: Epoch(2) }]);
    }

    fn append(state: &RefCell<Streams>, disk: &Disk<StoreRecord>, r: Record, m: Option<Mutation>) -> (Option<Msg>, Vec<String>) {
        capture(|| block_on(handle(state, disk, Msg::StoreAppend { stream: S, server: ServerId(1), record: r }, m, u64::MAX)))
    }

    fn durable_appends(disk: &Disk<StoreRecord>) -> usize {
        disk.read_durable().iter().filter(|r| matches!(r, StoreRecord::Append { .. })).count()
    }

    #[test]
    fn store_node_acknowledges_only_durable_appends_and_traces_each_outcome() {
        let state = RefCell::new(Streams::default());
        let disk = Disk::new(2);
        let (reply, events) = append(&state, &disk, rec(1, 1), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(0) })));
        assert_eq!(durable_appends(&disk), 1, "synced before the acknowledgement");
        assert!(has(&events, "effect stream=1 server=1 epoch=1 key=k1 client=1 seq=1 offset=0 bytes=1"), "{events:?}");
        // A retry: same offset, nothing new on disk, traced as deduplicated.
        let (reply, events) = append(&state, &disk, rec(1, 1), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(0) })));
        assert_eq!(disk.read_all().len(), 1);
        assert!(has(&events, "deduplicated stream=1 server=1 epoch=1") && !has(&events, "effect"), "{events:?}");
        // Fenced: refused, traced, nothing stored.
        state.borrow_mut().fence(S, Epoch(3)).unwrap();
        let (reply, events) = append(&state, &disk, rec(2, 2), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Err(Epoch(3)) })));
        assert!(has(&events, "fenced stream=1 server=1 epoch=2 fence=3"), "{events:?}");
        assert_eq!(disk.read_all().len(), 1);
        // Mutation store-ignores-fence: the stale record lands.
        let (reply, _) = append(&state, &disk, rec(2, 2), Some(Mutation::StoreIgnoresFence));
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(1) })));
    }

    #[test]
    fn store_node_reload_fence_bars_appends_in_doubt_that_are_not_in_the_stream() {
        // Seed 5954: an owner's append timed out, it reloaded at the same epoch, and the held
        // copy landed afterwards at that epoch, behind the reload, unseen by the owner.
        let state = RefCell::new(Streams::default());
        let disk = Disk::new(2);
        let (reply, _) = append(&state, &disk, rec(1, 2), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(0) })));
        // The reload's fence (same epoch) bars 1 (in the stream: loaded, not barred) and 2.
        let bar = vec![OpId { client: 1, seq: 1 }, OpId { client: 1, seq: 2 }];
        let reply = block_on(handle(&state, &disk, Msg::Fence { stream: S, epoch: Epoch(2), from: 0, bar }, None, u64::MAX));
        assert!(matches!(reply, Some(Msg::FenceResult { result: Ok(ref r), length: 1, .. }) if r.len() == 1), "{reply:?}");
        // The late copy of 2 is refused; 1's retry is answered from the stream; 3 lands.
        let (reply, events) = append(&state, &disk, rec(2, 2), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Err(Epoch(2)) })), "{reply:?}");
        assert!(has(&events, "fenced stream=1 server=1 epoch=2 fence=2"), "{events:?}");
        let (reply, _) = append(&state, &disk, rec(1, 2), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(0) })));
        let (reply, _) = append(&state, &disk, rec(3, 2), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(1) })));
        // The bar is durable: a recovered store refuses 2 as well.
        let mut recovered = Streams::recover(&disk.read_durable());
        assert_eq!(recovered.append(S, rec(2, 2), false), Err(Epoch(2)));
        assert_eq!(recovered.streams[&S].records.len(), 2);
    }

    #[test]
    fn store_node_deduplicated_answer_waits_for_the_first_copy_to_be_durable() {
        let state = RefCell::new(Streams::default());
        let disk = Disk::new(2);
        // The first copy is acknowledged before its sync (the mutation), so it is not durable.
        let (reply, _) = append(&state, &disk, rec(1, 1), Some(Mutation::StoreAcksBeforeSync));
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(0) })));
        assert_eq!(durable_appends(&disk), 0, "mutation store-acks-before-sync: acknowledged, not durable");
        let (reply, _) = append(&state, &disk, rec(1, 1), None);
        assert!(matches!(reply, Some(Msg::StoreAppended { result: Ok(0) })));
        assert_eq!(durable_appends(&disk), 1, "the retry's answer comes after a sync");
    }

    #[test]
    fn store_node_fence_returns_the_sealed_content_from_an_offset_and_is_durable() {
        let state = RefCell::new(Streams::default());
        let disk = Disk::new(2);
        for seq in 1..=3 {
            append(&state, &disk, rec(seq, 1), None);
        }
        let (reply, events) = capture(|| block_on(handle(&state, &disk, Msg::Fence { stream: S, epoch: Epoch(2), from: 1, bar: vec![] }, None, u64::MAX)));
        let Some(Msg::FenceResult { result: Ok(records), prefix, .. }) = reply else { panic!("{reply:?}") };
        assert_eq!(records, vec![rec(2, 1), rec(3, 1)]);
        assert_eq!(prefix, StreamDigest::of(&[rec(1, 1)]), "the digest of what the caller keeps");
        assert!(has(&events, "fence stream=1 epoch=2 length=3"), "{events:?}");
        assert!(matches!(disk.read_durable().last(), Some(StoreRecord::Fence { epoch: Epoch(2), .. })), "the fence is durable when answered");
        // Again at the same epoch: same content, no second fence record.
        let reply = block_on(handle(&state, &disk, Msg::Fence { stream: S, epoch: Epoch(2), from: 0, bar: vec![] }, None, u64::MAX));
        assert!(matches!(reply, Some(Msg::FenceResult { result: Ok(ref r), prefix, .. }) if r.len() == 3 && prefix == StreamDigest::default()));
        assert_eq!(disk.read_all().iter().filter(|r| matches!(r, StoreRecord::Fence { .. })).count(), 1);
        // Past the end: empty. Below the fence: refused.
        let reply = block_on(handle(&state, &disk, Msg::Fence { stream: S, epoch: Epoch(2), from: 9, bar: vec![] }, None, u64::MAX));
        let all = StreamDigest::of(&[rec(1, 1), rec(2, 1), rec(3, 1)]);
        assert!(matches!(reply, Some(Msg::FenceResult { result: Ok(ref r), prefix, .. }) if r.is_empty() && prefix == all), "a shorter stream: the digest of all of it (3 records)");
        let reply = block_on(handle(&state, &disk, Msg::Fence { stream: S, epoch: Epoch(1), from: 0, bar: vec![] }, None, u64::MAX));
        assert!(matches!(reply, Some(Msg::FenceResult { result: Err(Epoch(2)), .. })));
        // A seal answers the sealed length; a seal below the fence is refused.
        let reply = block_on(handle(&state, &disk, Msg::Seal { stream: S, epoch: Epoch(4) }, None, u64::MAX));
        assert!(matches!(reply, Some(Msg::Sealed { result: Ok(3) })), "{reply:?}");
        let reply = block_on(handle(&state, &disk, Msg::Seal { stream: S, epoch: Epoch(3) }, None, u64::MAX));
        assert!(matches!(reply, Some(Msg::Sealed { result: Err(Epoch(4)) })));
        assert_eq!(Streams::recover(&disk.read_durable()).streams[&S].fence, Epoch(4));
    }

    #[test]
    fn store_prefix_digest_is_the_digest_of_the_first_records_however_asked() {
        let mut s = Streams::default();
        let recs: Vec<Record> = (1..=5).map(|seq| rec(seq, 1)).collect();
        for r in &recs[..3] {
            s.append(S, r.clone(), false).unwrap();
        }
        let st = s.streams.get_mut(&S).unwrap();
        assert_eq!(st.prefix_digest(2), StreamDigest::of(&recs[..2]));
        assert_eq!(st.prefix_digest(0), StreamDigest::default());
        assert_eq!(st.prefix_digest(7), StreamDigest::of(&recs[..3]), "capped at the stream's length");
        for r in &recs[3..] {
            s.append(S, r.clone(), false).unwrap();
        }
        let st = s.streams.get_mut(&S).unwrap();
        assert_eq!(st.prefix_digest(5), StreamDigest::of(&recs), "extended past what was asked before");
        assert_eq!(st.prefix_digest(1), StreamDigest::of(&recs[..1]));
        let mut recovered = Streams::recover(&recs.iter().map(|r| StoreRecord::Append { stream: S, record: r.clone() }).collect::<Vec<_>>());
        assert_eq!(recovered.streams.get_mut(&S).unwrap().prefix_digest(4), StreamDigest::of(&recs[..4]));
    }

    #[test]
    fn store_node_read_stream_returns_the_durable_slice() {
        let state = RefCell::new(Streams::default());
        let disk = Disk::new(2);
        for seq in 1..=4 {
            append(&state, &disk, rec(seq, 1), None);
        }
        let read = |from, upto| match block_on(handle(&state, &disk, Msg::ReadStream { stream: S, from, upto, precopy: false }, None, u64::MAX)) {
            Some(Msg::StreamRead { records, .. }) => records.iter().map(|r| r.id.seq).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(read(0, None), vec![1, 2, 3, 4]);
        assert_eq!(read(1, Some(3)), vec![2, 3]);
        assert_eq!(read(2, Some(99)), vec![3, 4], "upto past the end stops at the end");
        assert_eq!(read(5, None), Vec::<u64>::new(), "from past the end");
        let other = block_on(handle(&state, &disk, Msg::ReadStream { stream: RangeId(9), from: 0, upto: None, precopy: false }, None, u64::MAX));
        assert!(matches!(other, Some(Msg::StreamRead { records, .. }) if records.is_empty()), "an unknown stream is empty");
    }

    #[test]
    fn store_chunk_budget_is_50_ms_of_link_shrinking_with_its_backlog() {
        let mib = 1024 * 1024;
        assert_eq!(chunk_budget(100 * mib, 1000, 0), 100 * mib / 20, "50 ms at 100 MiB/s");
        assert_eq!(chunk_budget(100 * mib, 1000, 10_000_000), 100 * mib / 20, "never below a twentieth of the timeout");
        // A 200 ms store timeout: 50 ms while the link is free; with 95 ms queued only the 5 ms
        // left of half the timeout, raised to the least, 10 ms.
        assert_eq!(chunk_budget(100 * mib, 200, 0), 100 * mib / 20);
        assert_eq!(chunk_budget(100 * mib, 200, 95_000), 100 * mib / 100);
    }

    #[test]
    fn store_chunk_takes_at_least_one_record_and_stops_at_the_budget() {
        let rec = |n: u64, bulk: u64| Record { epoch: Epoch(1), id: OpId { client: 1, seq: n }, key: b"k".to_vec(), bytes: vec![b'x'; 8].into(), bulk };
        let records = vec![rec(1, 1000), rec(2, 1000), rec(3, 1000)];
        assert_eq!(chunk(&records, 0, 3, 10).len(), 1, "one record even over the budget");
        assert_eq!(chunk(&records, 0, 3, 2 * records[0].wire_bytes()).len(), 2);
        assert_eq!(chunk(&records, 1, 3, u64::MAX).len(), 2);
        assert!(chunk(&records, 3, 3, u64::MAX).is_empty());
    }
}
