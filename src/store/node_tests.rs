//! The store's node task on a madsim runtime, answering through the driver's `answer`: what is
//! acknowledged is durable, what a fence refuses is traced, a fence returns exactly the sealed
//! content.

use super::core::{StoreCore, StoreRecord, Streams};
use super::node::answer;
use crate::config::Mutation;
use crate::ids::{Epoch, OpId, RangeId, ServerId};
use crate::msg::{Msg, Record, StreamDigest};
use crate::seam::Disk;
use crate::testkit::{block_on, capture, has};
use std::cell::RefCell;

fn rec(seq: u64, epoch: u64) -> Record {
    Record { epoch: Epoch(epoch), id: OpId { client: 1, seq }, key: format!("k{seq}").into_bytes(), bytes: vec![b'x'; seq as usize].into(), bulk: 0 }
}

const S: RangeId = RangeId(1);

/// One request answered by the node under `mutation` (the core's), with a read budget.
async fn handle(state: &RefCell<StoreCore>, disk: &Disk<StoreRecord>, msg: Msg, mutation: Option<Mutation>, budget: u64) -> Option<Msg> {
    state.borrow_mut().mutation = mutation;
    Some(answer(state, disk, msg, budget).await)
}

fn append(state: &RefCell<StoreCore>, disk: &Disk<StoreRecord>, r: Record, m: Option<Mutation>) -> (Option<Msg>, Vec<String>) {
    capture(|| block_on(handle(state, disk, Msg::StoreAppend { stream: S, server: ServerId(1), record: r }, m, u64::MAX)))
}

fn durable_appends(disk: &Disk<StoreRecord>) -> usize {
    disk.read_durable().iter().filter(|r| matches!(r, StoreRecord::Append { .. })).count()
}

#[test]
fn store_node_acknowledges_only_durable_appends_and_traces_each_outcome() {
    let state = RefCell::new(StoreCore::default());
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
    state.borrow_mut().streams.fence(S, Epoch(3)).unwrap();
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
    // An owner's append timed out, it reloaded at the same epoch, and the held copy lands
    // afterwards at that epoch, behind the reload, unseen by the owner.
    let state = RefCell::new(StoreCore::default());
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
    let state = RefCell::new(StoreCore::default());
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
    let state = RefCell::new(StoreCore::default());
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
fn store_node_read_stream_returns_the_durable_slice() {
    let state = RefCell::new(StoreCore::default());
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
