//! Transcripts of the store's core without a runtime: the fence and idempotency rules on
//! [`Streams`], the read answer's chunk, and [`StoreCore::handle`]'s steps (what is written,
//! what is traced, when the answer waits for a sync).

use crate::config::Mutation;
use crate::event::Event;
use crate::ids::{Epoch, OpId, RangeId, ServerId};
use crate::msg::{Msg, Record, StreamDigest};
use crate::store::core::{chunk, chunk_budget, Input, Next, StoreCore, StoreRecord, Streams, Then};

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

fn request(core: &mut StoreCore, msg: Msg) -> crate::store::Step {
    core.handle(Input::Request { msg, budget: u64::MAX })
}

fn store_append(r: Record) -> Msg {
    Msg::StoreAppend { stream: S, server: ServerId(1), record: r }
}

#[test]
fn store_core_answers_a_new_append_once_synced_and_a_duplicate_after_a_sync_too() {
    let mut core = StoreCore::default();
    let step = request(&mut core, store_append(rec(1, 1)));
    assert_eq!(step.writes.len(), 1);
    assert!(matches!(&step.writes[0], StoreRecord::Append { stream: S, record } if *record == rec(1, 1)));
    assert!(step.events.is_empty(), "nothing traced before the sync");
    let Next::Sync(then) = step.next else { panic!("{:?}", step.next) };
    assert!(matches!(&then, Then::Effect(a) if a.offset == 0 && a.bytes == 1));
    let step = core.handle(Input::Synced(then));
    assert!(step.writes.is_empty());
    assert_eq!(step.events, vec![Event::Effect { stream: S, server: ServerId(1), epoch: Epoch(1), key: b"k1".to_vec(), id: OpId { client: 1, seq: 1 }, offset: 0, bytes: 1 }]);
    assert!(matches!(step.next, Next::Reply(Msg::StoreAppended { result: Ok(0) })));
    // The retry: nothing written, answered from the stream once synced.
    let step = request(&mut core, store_append(rec(1, 1)));
    assert!(step.writes.is_empty() && step.events.is_empty());
    let Next::Sync(then) = step.next else { panic!("{:?}", step.next) };
    let step = core.handle(Input::Synced(then));
    assert_eq!(step.events.len(), 1);
    assert!(step.events[0].to_string().starts_with("deduplicated stream=1 server=1 epoch=1"), "{:?}", step.events);
    assert!(matches!(step.next, Next::Reply(Msg::StoreAppended { result: Ok(0) })));
}

#[test]
fn store_core_refuses_a_fenced_append_at_once_and_acks_before_sync_under_the_mutation() {
    let mut core = StoreCore::default();
    core.streams.fence(S, Epoch(3)).unwrap();
    let step = request(&mut core, store_append(rec(1, 2)));
    assert!(step.writes.is_empty());
    assert_eq!(step.events, vec![Event::Fenced { stream: S, server: ServerId(1), epoch: Epoch(2), fence: Epoch(3), id: OpId { client: 1, seq: 1 } }]);
    assert!(matches!(step.next, Next::Reply(Msg::StoreAppended { result: Err(Epoch(3)) })));
    // Mutation store-acks-before-sync: written, traced and answered in one step, no sync.
    core.mutation = Some(Mutation::StoreAcksBeforeSync);
    let step = request(&mut core, store_append(rec(2, 3)));
    assert_eq!(step.writes.len(), 1);
    assert_eq!(step.events.len(), 1);
    assert!(matches!(step.next, Next::Reply(Msg::StoreAppended { result: Ok(0) })));
    // Mutation store-ignores-fence: the stale record is taken.
    core.mutation = Some(Mutation::StoreIgnoresFence);
    let step = request(&mut core, store_append(rec(3, 1)));
    assert!(matches!(step.next, Next::Sync(Then::Effect(ref a)) if a.offset == 1));
}

#[test]
fn store_core_fence_writes_fence_and_bar_then_answers_only_the_sealed_length_once_synced() {
    let mut core = StoreCore::default();
    for seq in 1..=3 {
        let Next::Sync(then) = request(&mut core, store_append(rec(seq, 1))).next else { panic!() };
        core.handle(Input::Synced(then));
    }
    // Bar 1 (in the stream: not barred) and 9 (not there: barred).
    let bar = vec![OpId { client: 1, seq: 1 }, OpId { client: 1, seq: 9 }];
    let step = request(&mut core, Msg::Fence { stream: S, epoch: Epoch(2), from: 1, bar });
    assert!(matches!(step.writes.as_slice(), [StoreRecord::Fence { stream: S, epoch: Epoch(2) }, StoreRecord::Bar { stream: S, ids }] if *ids == vec![OpId { client: 1, seq: 9 }]), "{:?}", step.writes);
    assert!(step.events.is_empty());
    let Next::Sync(then) = step.next else { panic!("{:?}", step.next) };
    assert_eq!(then, Then::Fenced { stream: S, epoch: Epoch(2), from: 1, length: 3, budget: u64::MAX });
    // An append at the fence's epoch lands during the sync: past the sealed length.
    assert!(matches!(request(&mut core, store_append(rec(4, 2))).next, Next::Sync(Then::Effect(ref a)) if a.offset == 3));
    let step = core.handle(Input::Synced(then));
    assert_eq!(step.events, vec![Event::Fence { stream: S, epoch: Epoch(2), length: 3 }]);
    let Next::Reply(Msg::FenceResult { result: Ok(records), length: 3, prefix }) = step.next else { panic!("{:?}", step.next) };
    assert_eq!(records, vec![rec(2, 1), rec(3, 1)], "from the offset asked up to the sealed length");
    assert_eq!(prefix, StreamDigest::of(&[rec(1, 1)]));
    // Below the fence: refused at once, nothing written. A seal above it: its length once synced.
    let step = request(&mut core, Msg::Fence { stream: S, epoch: Epoch(1), from: 0, bar: vec![] });
    assert!(step.writes.is_empty() && step.events.is_empty());
    assert!(matches!(step.next, Next::Reply(Msg::FenceResult { result: Err(Epoch(2)), length: 0, .. })));
    let Next::Sync(then) = request(&mut core, Msg::Seal { stream: S, epoch: Epoch(5) }).next else { panic!() };
    let step = core.handle(Input::Synced(then));
    assert_eq!(step.events, vec![Event::Fence { stream: S, epoch: Epoch(5), length: 4 }]);
    assert!(matches!(step.next, Next::Reply(Msg::Sealed { result: Ok(4) })));
}

#[test]
fn store_core_read_answers_what_was_there_when_asked_once_it_is_durable() {
    let mut core = StoreCore::default();
    let Next::Sync(then) = request(&mut core, store_append(rec(1, 1))).next else { panic!() };
    core.handle(Input::Synced(then));
    let step = request(&mut core, Msg::ReadStream { stream: S, from: 0, upto: None, precopy: true });
    assert!(step.writes.is_empty() && step.events.is_empty());
    let Next::Sync(then) = step.next else { panic!("{:?}", step.next) };
    assert_eq!(then, Then::Read { stream: S, from: 0, end: 1, precopy: true, budget: u64::MAX });
    request(&mut core, store_append(rec(2, 1)));
    let step = core.handle(Input::Synced(then));
    assert!(step.events.is_empty());
    assert!(matches!(step.next, Next::Reply(Msg::StreamRead { ref records, length: 1, precopy: true }) if *records == vec![rec(1, 1)]), "{:?}", step.next);
}
