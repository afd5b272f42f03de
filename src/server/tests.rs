//! Unit transcripts of [`crate::server::ServerCore`]'s steps, without a runtime: the authority
//! check and admission, commands from leaders, the store's answers, bounded reads, the move's
//! steps at both ends, and pre-copy rounds. Kept apart from `core.rs` so the rules can be read
//! as a list; the flows that string the steps together are tested in `flow_tests.rs`, the node
//! task in `node_tests.rs`.

use crate::config::Mutation;
use crate::ids::{Epoch, OpId, RangeId, ServerId};
use crate::map::{RangeRow, RangeState, Strategy};
use crate::msg::{FinishError, ReadLevel, Record, Refusal, StreamDigest};
use crate::server::{HeldState, ServerCore};
use crate::testkit::has;

/// Run `f` on `core` and return its result with the events it queued, rendered as the trace
/// shows them (what was queued before is dropped).
fn capture<R>(core: &mut ServerCore, f: impl FnOnce(&mut ServerCore) -> R) -> (R, Vec<String>) {
    core.take_effects();
    let r = f(core);
    let events = core.take_effects().into_iter().filter_map(|e| match e {
        crate::server::Effect::Event(e) => Some(e.to_string()),
        _ => None,
    });
    (r, events.collect())
}
use std::rc::Rc;

const R: RangeId = RangeId(1);

/// Range r1 `[a, m)` for server-1's `session`, at `epoch`.
fn row(epoch: u64, session: u64) -> RangeRow {
    RangeRow {
        id: R,
        start: b"a".to_vec(),
        end: Some(b"m".to_vec()),
        owner: Some(ServerId(1)),
        owner_session: session,
        epoch: Epoch(epoch),
        state: RangeState::Preparing,
        sources: vec![],
        sealed: 0,
        born_ms: 0,
    }
}

fn rec(seq: u64, epoch: u64, key: &str, bytes: &str) -> Record {
    rec_bulk(seq, epoch, key.as_bytes(), bytes.as_bytes(), 0)
}

/// Server-1 with session 1, lease trusted until 1 s, serving r1 at `epoch` with `records`.
fn serving(epoch: u64, records: Vec<Record>) -> ServerCore {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.lease_valid_until_us = 1_000_000;
    let r = row(epoch, 1);
    assert_eq!(core.begin_open(&r), Ok(Some(0)));
    core.finish_open(&r, None, Ok(records)).unwrap();
    core
}

fn id(seq: u64) -> OpId {
    OpId { client: 1, seq }
}

fn strong(core: &mut ServerCore, epoch: u64, key: &str, now_us: u64) -> Result<Vec<u8>, Refusal> {
    core.read(R, Epoch(epoch), key.as_bytes(), ReadLevel::Strong, now_us).map(|v| v.to_vec())
}

fn bounded(core: &mut ServerCore, ms: u64, now_us: u64) -> Result<Vec<u8>, Refusal> {
    core.read(R, Epoch(1), b"b", ReadLevel::Bounded { ms }, now_us).map(|v| v.to_vec())
}

/// Guards `authorize` against admitting a newer epoch (mutation `server-admits-newer-epoch`): a request naming a newer epoch than the one held is
/// refused (the map knows a newer owner), and never admitted at that epoch.
#[test]
fn server_refuses_a_request_naming_a_newer_epoch() {
    let mut core = serving(4, vec![]);
    let (r, events) = capture(&mut core, |core| core.admit(R, Epoch(5), b"b", id(1), 10));
    assert_eq!(r, Err(Refusal::NotOwner));
    assert!(has(&events, "refused server=1 range=1 epoch=5"), "{events:?}");
    assert_eq!(strong(&mut core, 5, "b", 10), Err(Refusal::NotOwner));
    assert!(core.ranges[&R].inflight.is_empty());
    // Mutation server-skips-epoch-check: admitted, but the effect carries the held epoch.
    core.mutation = Some(Mutation::ServerSkipsEpochCheck);
    assert_eq!(core.admit(R, Epoch(5), b"b", id(1), 10), Ok(Some(Epoch(4))));
    assert_eq!(core.admit(R, Epoch(3), b"b", id(2), 10), Ok(Some(Epoch(4))));
}

#[test]
fn server_admission_checks_state_pause_lease_and_session() {
    let mut core = serving(2, vec![]);
    assert_eq!(core.admit(R, Epoch(2), b"b", id(1), 999_999), Ok(Some(Epoch(2))), "the last microsecond of the lease");
    assert_eq!(core.admit(R, Epoch(2), b"b", id(2), 1_000_000), Err(Refusal::LeaseExpired), "the lease ends");
    assert_eq!(core.check(R, Epoch(2), b"b", 1_000_000), Err(Refusal::LeaseExpired));
    assert_eq!(core.check(R, Epoch(2), b"b", 10), Ok(()));
    assert_eq!(core.check(R, Epoch(2), b"a", 10), Ok(()), "the start key is in the range");
    assert_eq!(core.check(R, Epoch(2), b"m", 10), Err(Refusal::KeyOutOfRange), "the end key is not");
    core.pause(R, Epoch(2), 20).unwrap();
    assert_eq!(core.check(R, Epoch(2), b"b", 30), Err(Refusal::NotReady), "paused");
    core.mutation = Some(Mutation::SourceIgnoresPause);
    assert_eq!(core.check(R, Epoch(2), b"b", 30), Ok(()), "mutation source-ignores-pause");
    // Loading refuses; no session refuses whatever the lease time says.
    let mut core = serving(2, vec![]);
    core.suspect(R, Epoch(2)).unwrap();
    assert_eq!(core.ranges[&R].state, HeldState::Loading);
    assert_eq!(core.check(R, Epoch(2), b"b", 10), Err(Refusal::NotReady));
    let mut core = serving(2, vec![]);
    core.session = None;
    assert_eq!(core.check(R, Epoch(2), b"b", 10), Err(Refusal::LeaseExpired));
    core.mutation = Some(Mutation::ServerIgnoresLeaseExpiry);
    assert_eq!(core.check(R, Epoch(2), b"b", 10), Err(Refusal::LeaseExpired), "the mutation needs a session");
    core.session = Some(1);
    assert_eq!(core.check(R, Epoch(2), b"b", 5_000_000), Ok(()), "mutation server-ignores-lease-expiry");
    // The whole check off.
    let mut core = serving(2, vec![]);
    core.mutation = Some(Mutation::ServerSkipsAuthorityCheck);
    assert_eq!(core.admit(R, Epoch(1), b"z", id(1), 9_000_000), Ok(Some(Epoch(1))));
    // Check-then-await-then-admit: admission does not repeat the check.
    let mut core = serving(2, vec![]);
    core.mutation = Some(Mutation::CheckThenAwaitThenAdmit);
    assert_eq!(core.admit(R, Epoch(2), b"b", id(1), 9_000_000), Ok(Some(Epoch(2))));
    assert_eq!(core.admit(RangeId(7), Epoch(2), b"b", id(2), 10), Err(Refusal::NotOwner));
}

#[test]
fn server_admission_traces_and_deduplicates() {
    let mut core = serving(3, vec![rec(1, 3, "b", "x;")]);
    let (r, events) = capture(&mut core, |core| core.admit(R, Epoch(3), b"c", id(2), 10));
    assert_eq!(r, Ok(Some(Epoch(3))));
    assert_eq!(events, vec!["admit server=1 session=1 range=1 epoch=3 key=c client=1 seq=2".to_string()]);
    assert!(core.ranges[&R].inflight.contains(&id(2)));
    let (r, events) = capture(&mut core, |core| core.admit(R, Epoch(3), b"b", id(1), 10));
    assert_eq!(r, Ok(None), "already in the stream: no new effect");
    assert!(events.is_empty(), "{events:?}");
    let (r, events) = capture(&mut core, |core| core.admit(R, Epoch(2), b"b", id(3), 10));
    assert_eq!(r, Err(Refusal::StaleEpoch { current: Epoch(3) }));
    assert!(has(&events, "refused server=1 range=1 epoch=2 key=b op=append"), "{events:?}");
}

/// Guards `finish_append` (mutation `server-keeps-fenced-range`): a fence above our epoch means a newer owner; the
/// range is dropped, and nothing more is admitted or read here.
#[test]
fn server_fenced_by_a_newer_owner_drops_the_range() {
    let mut core = serving(3, vec![]);
    let r1 = rec(1, 3, "b", "x;");
    core.admit(R, Epoch(3), b"b", r1.id, 10).unwrap();
    let (resync, events) = capture(&mut core, |core| core.finish_append(R, &r1, Some(Err(Epoch(4)))));
    assert_eq!(resync, None);
    assert!(!core.ranges.contains_key(&R));
    assert!(has(&events, "dropped server=1 range=1 epoch=3"), "{events:?}");
    assert_eq!(core.admit(R, Epoch(3), b"b", id(2), 10), Err(Refusal::NotOwner));
    assert_eq!(strong(&mut core, 3, "b", 10), Err(Refusal::NotOwner));
    // A fence at our own epoch (raised by our own open) is not a newer owner.
    let mut core = serving(3, vec![]);
    core.admit(R, Epoch(3), b"b", r1.id, 10).unwrap();
    assert_eq!(core.finish_append(R, &r1, Some(Err(Epoch(3)))), None);
    assert!(core.ranges.contains_key(&R));
    assert!(core.ranges[&R].inflight.is_empty(), "the refused append is no longer in flight");
    assert_eq!(core.admit(R, Epoch(3), b"b", r1.id, 10), Ok(Some(Epoch(3))), "and may be retried");
}

#[test]
fn server_store_answers_for_another_epoch_or_an_old_offset_change_nothing() {
    let mut core = serving(3, vec![rec(1, 3, "b", "x;")]);
    let old = rec(9, 2, "b", "old;");
    core.ranges.get_mut(&R).unwrap().inflight.insert(old.id);
    assert_eq!(core.finish_append(R, &old, Some(Err(Epoch(9)))), None);
    assert!(core.ranges.contains_key(&R), "an answer to an earlier epoch's append does not drop us");
    assert!(core.ranges[&R].inflight.contains(&old.id));
    assert_eq!(core.finish_append(R, &old, None), None, "nor makes us reload");
    assert_eq!(core.ranges[&R].state, HeldState::Active);
    // A duplicate acknowledgement of an offset already applied.
    let dup = rec(1, 3, "b", "x;");
    core.finish_append(R, &dup, Some(Ok(0)));
    assert_eq!(strong(&mut core, 3, "b", 10), Ok(b"x;".to_vec()));
    assert!(core.ranges[&R].acked.is_empty());
    assert_eq!(core.finish_append(RangeId(8), &dup, Some(Ok(0))), None, "a range not held");
    // While reloading, an acknowledgement waits for the reload.
    let r2 = rec(2, 3, "b", "y;");
    core.admit(R, Epoch(3), b"b", r2.id, 10).unwrap();
    let row3 = core.suspect(R, Epoch(3)).expect("reload");
    assert_eq!(core.suspect(R, Epoch(3)), None, "already reloading");
    core.finish_append(R, &r2, Some(Ok(1)));
    assert_eq!(core.ranges[&R].next_offset, 1, "not applied while loading");
    assert_eq!(core.load_from(&row3), 1, "the reload keeps the record applied");
    core.finish_open(&row3, None, Ok(vec![])).unwrap();
    assert_eq!(strong(&mut core, 3, "b", 10), Ok(b"x;y;".to_vec()));
    assert_eq!(core.ranges[&R].next_offset, 2);
}

/// Guards `command` (mutation `server-obeys-deposed-leader`): a deposed leader's command is refused and traced; a newer
/// leader's raises the bar.
#[test]
fn server_refuses_a_deposed_leaders_command() {
    let mut core = ServerCore::new(ServerId(1));
    assert_eq!(core.command(3, "open"), Ok(()));
    assert_eq!(core.leader_epoch_seen, 3);
    assert_eq!(core.command(3, "pause"), Ok(()), "the same term again");
    let (r, events) = capture(&mut core, |core| core.command(2, "release"));
    assert_eq!(r, Err("server-1: stale leader epoch 2 (seen 3)".to_string()));
    assert_eq!(events, vec!["stale_command server=1 command=release leader_epoch=2 seen=3".to_string()]);
    assert_eq!(core.command(5, "open"), Ok(()));
    assert_eq!(core.leader_epoch_seen, 5);
    assert!(core.command(4, "pause").is_err());
    assert_eq!(core.leader_epoch_seen, 5, "a refused command does not lower the bar");
    core.mutation = Some(Mutation::ServerSkipsEpochCheck);
    assert_eq!(core.command(1, "pause"), Ok(()));
    assert_eq!(core.leader_epoch_seen, 5);
}

/// Bounded reads: the age since this server last knew itself the owner, inflated by the
/// drift allowance (5% here), against the bound.
#[test]
fn server_bounded_read_age_and_drift_arithmetic() {
    let mut core = serving(1, vec![rec(1, 1, "b", "v;")]);
    core.drift_ppm = 50_000;
    assert_eq!(bounded(&mut core, 0, 10), Ok(b"v;".to_vec()), "within the lease: age 0");
    // 100 ms past the lease: 100 ms + 5% = 105 ms.
    assert_eq!(bounded(&mut core, 104, 1_100_000), Err(Refusal::TooStale { age_ms: 105 }));
    assert_eq!(bounded(&mut core, 105, 1_100_000), Ok(b"v;".to_vec()));
    assert_eq!(strong(&mut core, 1, "b", 1_100_000), Err(Refusal::LeaseExpired), "a strong read is refused there");
    // 1 s past: 1050 ms.
    assert_eq!(bounded(&mut core, 1000, 2_000_000), Err(Refusal::TooStale { age_ms: 1050 }));
    core.drift_ppm = 0;
    assert_eq!(bounded(&mut core, 1000, 2_000_000), Ok(b"v;".to_vec()));
    assert_eq!(bounded(&mut core, 999, 2_000_000), Err(Refusal::TooStale { age_ms: 1000 }));
    // Paused at 0.5 s: it knew itself the owner until the pause, not until the lease's end.
    core.pause(R, Epoch(1), 500_000).unwrap();
    assert_eq!(bounded(&mut core, 299, 800_000), Err(Refusal::TooStale { age_ms: 300 }));
    assert_eq!(bounded(&mut core, 300, 800_000), Ok(b"v;".to_vec()));
    // A pause after the lease's end counts from the lease's end.
    let mut core = serving(1, vec![]);
    core.drift_ppm = 0;
    core.pause(R, Epoch(1), 3_000_000).unwrap();
    assert_eq!(bounded(&mut core, 999, 2_000_000), Err(Refusal::TooStale { age_ms: 1000 }));
    // Without a session it never knew: the age counts from time 0.
    let mut core = serving(1, vec![]);
    core.drift_ppm = 0;
    core.session = None;
    assert_eq!(bounded(&mut core, 499, 500_000), Err(Refusal::TooStale { age_ms: 500 }));
    // The other refusals of a bounded read; the epoch named is not checked.
    let mut core = serving(1, vec![]);
    assert_eq!(core.read(R, Epoch(9), b"b", ReadLevel::Bounded { ms: 10 }, 10).map(|v| v.to_vec()), Ok(vec![]), "the epoch named is not checked");
    assert_eq!(core.read(R, Epoch(1), b"z", ReadLevel::Bounded { ms: 10 }, 10), Err(Refusal::KeyOutOfRange));
    assert_eq!(core.read(RangeId(9), Epoch(1), b"b", ReadLevel::Bounded { ms: 10 }, 10), Err(Refusal::NotOwner));
    core.suspect(R, Epoch(1)).unwrap();
    assert_eq!(core.read(R, Epoch(1), b"b", ReadLevel::Bounded { ms: 10 }, 10), Err(Refusal::NotReady));
}

#[test]
fn server_reads_are_traced_with_their_level() {
    let mut core = serving(1, vec![rec(1, 1, "b", "v;")]);
    let (r, events) = capture(&mut core, |core| core.read(R, Epoch(1), b"b", ReadLevel::Bounded { ms: 5 }, 10));
    assert_eq!(r.map(|v| v.to_vec()), Ok(b"v;".to_vec()));
    assert_eq!(events, vec!["read_served server=1 range=1 epoch=1 key=b level=bounded".to_string()]);
    let (_, events) = capture(&mut core, |core| core.read(R, Epoch(1), b"c", ReadLevel::Strong, 10));
    assert_eq!(events, vec!["read_served server=1 range=1 epoch=1 key=c level=strong".to_string()]);
    let (_, events) = capture(&mut core, |core| core.read(R, Epoch(0), b"c", ReadLevel::Strong, 10));
    assert!(has(&events, "refused server=1 range=1 epoch=0 key=c op=read"), "{events:?}");
}

#[test]
fn server_load_reports_active_unpaused_ranges_with_recent_ops() {
    let mut core = serving(1, vec![rec(1, 1, "b", "12345")]);
    core.lease_valid_until_us = 10_000_000;
    for t in 0..300u64 {
        strong(&mut core, 1, "c", t * 10_000).unwrap(); // 300 reads over 3 s
    }
    let loads = core.load(3_000_000);
    assert_eq!(loads.len(), 1);
    let l = &loads[0];
    assert_eq!((l.range, l.epoch, l.bytes, l.records), (R, Epoch(1), 5, 1));
    // 256 remembered; those in the last 2 s: t >= 1 s, i.e. 200 of them (100 per second).
    assert!((l.ops_per_s - 100.0).abs() < 1e-9, "{}", l.ops_per_s);
    assert_eq!(l.keys.len(), 64, "a quarter of the sample");
    core.pause(R, Epoch(1), 3_000_000).unwrap();
    assert!(core.load(3_000_000).is_empty(), "paused ranges do not report");
    let mut loading = serving(1, vec![]);
    loading.suspect(R, Epoch(1));
    assert!(loading.load(0).is_empty());
}

#[test]
fn server_open_rules_reopen_and_refused_load() {
    let mut core = serving(3, vec![]);
    assert!(core.begin_open(&row(2, 1)).unwrap_err().contains("held at newer"));
    assert_eq!(core.begin_open(&row(3, 1)), Ok(None), "already active at that epoch");
    let (r, events) = capture(&mut core, |core| core.begin_open(&row(4, 1)));
    assert_eq!(r, Ok(Some(0)), "drained: the (empty) content is kept, the load starts at offset 0");
    assert!(has(&events, "dropped server=1 range=1 epoch=3"), "{events:?}");
    assert_eq!(core.ranges[&R].state, HeldState::Loading);
    assert!(core.begin_open(&row(4, 1)).unwrap_err().contains("already loading"));
    assert!(core.finish_open(&row(5, 1), None, Ok(vec![])).is_err(), "not the epoch being opened");
    let (r, events) = capture(&mut core, |core| core.finish_open(&row(4, 1), None, Err("fence already at 6".into())));
    assert_eq!(r, Err("fence already at 6".to_string()));
    assert!(!core.ranges.contains_key(&R));
    assert!(has(&events, "dropped server=1 range=1 epoch=4"), "{events:?}");
    // A reopen forgets where the range had moved.
    core.moved.insert(R, (ServerId(2), Epoch(5)));
    core.begin_open(&row(6, 1)).unwrap();
    assert!(core.moved.is_empty());
}

#[test]
fn server_open_loads_lineage_filtered_to_the_range_and_deduplicated() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.lease_valid_until_us = 1_000_000;
    let r = row(5, 1);
    core.begin_open(&r).unwrap();
    let base = Rc::new(vec![rec(1, 1, "b", "p;"), rec(2, 1, "z", "outside;")]);
    let stream = vec![rec(3, 5, "b", "c;"), rec(1, 1, "b", "p;")];
    let (_, events) = capture(&mut core, |core| core.finish_open(&r, Some(base), Ok(stream.clone())));
    assert_eq!(strong(&mut core, 5, "b", 10), Ok(b"p;c;".to_vec()), "base first, a record seen twice applied once");
    assert!(events.contains(&"activated server=1 range=1 epoch=5 records=4 stream=2".to_string()), "{events:?}");
    let h = &core.ranges[&R];
    assert_eq!(h.next_offset, 2);
    assert_eq!(h.digest, StreamDigest::of(&stream), "the digest covers the stream, not the base");
    assert!(h.applied.contains(&id(1)) && h.applied.contains(&id(3)) && !h.applied.contains(&id(2)));
    // A reload that starts over from offset 0 (the store's prefix differs) keeps the base.
    let again = core.suspect(R, Epoch(5)).unwrap();
    assert_eq!(capture(&mut core, |core| core.keep_prefix(&again, 2, StreamDigest::default())).0, 0);
    core.finish_open(&again, None, Ok(stream.clone())).unwrap();
    assert_eq!(strong(&mut core, 5, "b", 10), Ok(b"p;c;".to_vec()));
    // Acknowledgements beyond the loaded stream survive the reload and apply in order.
    let late = rec(4, 5, "b", "d;");
    let again = core.suspect(R, Epoch(5)).unwrap();
    core.finish_append(R, &late, Some(Ok(2)));
    core.finish_append(R, &rec(0, 5, "b", "stale;"), Some(Ok(0)));
    assert_eq!(core.keep_prefix(&again, 2, StreamDigest::of(&stream)), 2, "the prefix matches: kept");
    core.finish_open(&again, None, Ok(vec![])).unwrap();
    assert_eq!(strong(&mut core, 5, "b", 10), Ok(b"p;c;d;".to_vec()));
    assert!(core.ranges[&R].acked.is_empty());
}

#[test]
fn server_pause_drain_and_release() {
    let mut core = serving(2, vec![rec(1, 2, "b", "x;")]);
    assert!(core.pause(R, Epoch(1), 10).is_err(), "not held at that epoch");
    assert!(core.drained(R, Epoch(2)).is_err(), "not paused yet");
    let r2 = rec(2, 2, "c", "yy;");
    core.admit(R, Epoch(2), b"c", r2.id, 5).unwrap();
    let (_, events) = capture(&mut core, |core| core.pause(R, Epoch(2), 10));
    assert_eq!(events, vec!["paused server=1 range=1 epoch=2".to_string()]);
    let (_, events) = capture(&mut core, |core| core.pause(R, Epoch(2), 20));
    assert!(events.is_empty(), "idempotent");
    assert_eq!(core.ranges[&R].paused_at_us, 10);
    assert_eq!(core.drained(R, Epoch(2)), Ok(None), "an admitted append is on its way");
    core.finish_append(R, &r2, Some(Ok(2))); // acknowledged past a gap
    assert_eq!(core.drained(R, Epoch(2)), Ok(None), "an acknowledgement waits behind a gap");
    core.ranges.get_mut(&R).unwrap().acked.clear();
    let row2 = core.suspect(R, Epoch(2)).unwrap();
    assert_eq!(core.drained(R, Epoch(2)), Ok(None), "reloading");
    core.finish_open(&row2, None, Ok(vec![r2.clone()])).unwrap();
    let d = core.drained(R, Epoch(2)).unwrap().expect("drained");
    assert_eq!((d.records, d.bytes), (2, 5));
    assert!(core.drained(R, Epoch(3)).is_err());
    // Mutation pause-skips-drain: the digest at once.
    let mut m = serving(2, vec![]);
    m.admit(R, Epoch(2), b"c", r2.id, 5).unwrap();
    m.pause(R, Epoch(2), 10).unwrap();
    assert_eq!(m.drained(R, Epoch(2)), Ok(None));
    m.mutation = Some(Mutation::PauseSkipsDrain);
    assert!(matches!(m.drained(R, Epoch(2)), Ok(Some(_))));
    // Release at another epoch does not drop the range (the hint is kept for later).
    core.release(R, Epoch(1), ServerId(2), Epoch(3));
    assert!(core.ranges.contains_key(&R));
    core.moved.clear();
    let (_, events) = capture(&mut core, |core| core.release(R, Epoch(2), ServerId(2), Epoch(3)));
    assert!(!core.ranges.contains_key(&R));
    assert!(has(&events, "dropped server=1 range=1 epoch=2"), "{events:?}");
    assert_eq!(core.moved.get(&R), Some(&(ServerId(2), Epoch(3))));
    let (r, events) = capture(&mut core, |core| core.admit(R, Epoch(2), b"b", id(9), 10));
    assert_eq!(r, Err(Refusal::Moved { owner: ServerId(2), epoch: Epoch(3) }));
    assert!(has(&events, "redirected server=1 range=1 epoch=2 key=b to=2 new_epoch=3"), "{events:?}");
    // A split or merge (epoch 0): nobody to name.
    let mut s = serving(2, vec![]);
    s.pause(R, Epoch(2), 10).unwrap();
    s.release(R, Epoch(2), ServerId(0), Epoch(0));
    assert!(s.ranges.is_empty() && s.moved.is_empty());
    assert_eq!(s.admit(R, Epoch(2), b"b", id(9), 10), Err(Refusal::NotOwner));
}

#[test]
fn server_release_does_not_name_an_older_owner_over_a_newer_epoch_held_here() {
    let mut core = serving(5, vec![]);
    core.release(R, Epoch(2), ServerId(2), Epoch(3));
    assert!(core.moved.is_empty());
    core.release(R, Epoch(2), ServerId(2), Epoch(5));
    assert!(core.moved.is_empty(), "a release naming the epoch held here names no other owner");
    core.release(R, Epoch(2), ServerId(2), Epoch(6));
    assert_eq!(core.moved.get(&R), Some(&(ServerId(2), Epoch(6))));
    assert!(core.ranges.contains_key(&R));
}

#[test]
fn server_move_target_verifies_the_copy_and_reports_the_handoff() {
    let digest_of = |records: &[Record]| StreamDigest::of(records);
    let (a, b) = (rec(1, 1, "b", "first;"), rec(2, 1, "c", "second;"));
    let mut t = ServerCore::new(ServerId(1));
    t.session = Some(1);
    t.lease_valid_until_us = 1_000_000;
    let r = row(2, 1);
    assert_eq!(t.begin_finish(&r), Ok(Some(vec![])));
    let (res, events) = capture(&mut t, |t| t.complete_move(&r, Rc::new(vec![]), vec![a.clone()], vec![b.clone()], digest_of(&[a.clone(), b.clone()]), Strategy::PreCopy));
    assert_eq!(res, Ok(()));
    assert!(events.contains(&"handoff server=1 range=1 epoch=2 strategy=pre-copy precopy_bytes=6 tail_bytes=7 bytes=13".to_string()), "{events:?}");
    assert_eq!(t.begin_finish(&r), Ok(None), "a repeated finish: already serving");
    // Same length and bytes, another checksum: diverged.
    let mut t = ServerCore::new(ServerId(1));
    t.session = Some(1);
    t.begin_finish(&r).unwrap();
    let forged = rec(2, 1, "c", "secoNd;");
    let (res, events) = capture(&mut t, |t| t.complete_move(&r, Rc::new(vec![]), vec![a.clone()], vec![forged.clone()], digest_of(&[a.clone(), b.clone()]), Strategy::PreCopy));
    assert!(matches!(res, Err(FinishError::Diverged(ref why)) if why.contains("does not match")), "{res:?}");
    assert!(has(&events, "diverged server=1 range=1 epoch=2"), "{events:?}");
    assert!(!t.ranges.contains_key(&R));
    // Mutation target-skips-verify serves it.
    t.mutation = Some(Mutation::TargetSkipsVerify);
    t.begin_finish(&r).unwrap();
    assert_eq!(t.complete_move(&r, Rc::new(vec![]), vec![a.clone()], vec![forged], digest_of(&[a.clone(), b.clone()]), Strategy::StopAndCopy), Ok(()));
    // Not loading any more at that epoch: not now.
    let mut t = ServerCore::new(ServerId(1));
    t.session = Some(1);
    assert!(matches!(t.complete_move(&r, Rc::new(vec![]), vec![], vec![], StreamDigest::default(), Strategy::PreCopy), Err(FinishError::NotNow(_))));
}

#[test]
fn server_pre_copy_rounds_until_the_tail_is_small_or_the_rounds_run_out() {
    let mut t = ServerCore::new(ServerId(1));
    t.session = Some(1);
    let r = row(2, 1);
    assert!(t.begin_copy_round(&row(2, 9), 10, 4).is_err(), "another session's target");
    assert_eq!(t.begin_copy_round(&r, 10, 4), Ok(Ok(0)));
    let busy = t.begin_copy_round(&r, 10, 4).unwrap().unwrap_err();
    assert_eq!((busy.rounds, busy.ready), (0, false), "a round is running");
    let (p, events) = capture(&mut t, |t| t.finish_copy_round(&r, 0, Some(vec![rec(1, 1, "b", "0123456789ab")])));
    assert_eq!((p.rounds, p.bytes, p.ready), (1, 12, false));
    assert_eq!(events, vec!["precopied server=1 range=1 epoch=2 round=1 bytes=12".to_string()]);
    assert_eq!(t.begin_copy_round(&r, 10, 4), Ok(Ok(1)), "12 bytes > 10: another round from offset 1");
    let p = t.finish_copy_round(&r, 0, Some(vec![rec(9, 1, "b", "x")]));
    assert_eq!((p.rounds, p.bytes), (1, 12), "a round read from the wrong offset is dropped");
    assert_eq!(t.begin_copy_round(&r, 10, 4), Ok(Ok(1)));
    let p = t.finish_copy_round(&r, 1, None);
    assert_eq!(p.rounds, 1, "the store did not answer");
    assert_eq!(t.begin_copy_round(&r, 10, 4), Ok(Ok(1)));
    t.finish_copy_round(&r, 1, Some(vec![rec(2, 1, "c", "0123456789")]));
    let done = t.begin_copy_round(&r, 10, 4).unwrap().unwrap_err();
    assert_eq!((done.rounds, done.bytes, done.ready), (2, 22, true), "10 bytes <= 10: ready");
    // The round limit.
    let mut t = ServerCore::new(ServerId(1));
    t.session = Some(1);
    t.begin_copy_round(&r, 0, 1).unwrap().unwrap();
    t.finish_copy_round(&r, 0, Some(vec![rec(1, 1, "b", "big")]));
    assert!(t.begin_copy_round(&r, 0, 1).unwrap().unwrap_err().ready, "max one round");
    // A new transfer epoch starts over; the finish takes the copy only at its epoch.
    let r3 = row(3, 1);
    assert_eq!(t.begin_copy_round(&r3, 0, 1), Ok(Ok(0)));
    t.finish_copy_round(&r3, 0, Some(vec![rec(1, 1, "b", "big"), rec(2, 1, "c", "more")]));
    assert_eq!(t.finish_copy_round(&row(7, 1), 0, Some(vec![])).rounds, 0, "no copy at that epoch");
    assert_eq!(t.begin_finish(&r3).unwrap().map(|v| v.len()), Some(2));
    let mut t = ServerCore::new(ServerId(1));
    t.session = Some(1);
    t.begin_copy_round(&r, 0, 1).unwrap().unwrap();
    assert_eq!(t.begin_finish(&r), Ok(Some(vec![])), "a copy still running is not used");
}

#[test]
fn server_losing_its_session_drops_everything() {
    let mut core = serving(2, vec![]);
    core.copies.insert(RangeId(5), crate::server::CopyState { row: row(2, 1), records: vec![], rounds: 0, last_round_bytes: 0, busy: false });
    let (_, events) = capture(&mut core, |core| core.lose_session("session_expired"));
    assert_eq!(events, vec!["dropped server=1 range=1 epoch=2 reason=session_expired".to_string()]);
    assert!(core.ranges.is_empty() && core.copies.is_empty());
    assert_eq!((core.session, core.lease_valid_until_us), (None, 0));
}

// Longer exchanges: the worked move at both ends, sessions, reloads, ack order, the kept
// pre-copy and reopening over kept content.

fn active(core: &mut ServerCore, r: &RangeRow) {
    assert_eq!(core.begin_open(r), Ok(Some(0)));
    core.finish_open(r, None, Ok(vec![])).unwrap();
}

/// The seed design's worked move at both ends, without a runtime: A (server-1) holds r1 at
/// epoch 1 with 6 bytes, then takes 7 more (13); B (server-2) pre-copied the first 6;
/// A pauses and drains (digest: 2 records, 13 bytes); B fences, copies the 7-byte tail,
/// verifies against the digest and serves at epoch 2; A is released and answers a held
/// append at epoch 1 with a hint naming B; the retry lands at B, which ends with 19 bytes.
/// A copy that does not match the digest is refused (`diverged`) and B does not serve.
#[test]
fn server_worked_move_both_ends_6_7_and_6_bytes() {
    let rec = |seq: u64, epoch: u64, bytes: &[u8]| Record { epoch: Epoch(epoch), id: OpId { client: 1, seq }, key: format!("r{seq}").into_bytes(), bytes: bytes.to_vec().into(), bulk: 0 };
    let mut a = ServerCore::new(ServerId(1));
    a.session = Some(1);
    a.lease_valid_until_us = 10_000_000;
    let at_a = RangeRow { start: vec![], end: None, ..row(1, 1) };
    active(&mut a, &at_a);
    let (r1, r2) = (rec(1, 1, b"first;"), rec(2, 1, b"second;"));
    for (i, r) in [&r1, &r2].into_iter().enumerate() {
        assert_eq!(a.admit(RangeId(1), Epoch(1), &r.key, r.id, 10), Ok(Some(Epoch(1))));
        a.finish_append(RangeId(1), r, Some(Ok(i as u64)));
    }
    a.pause(RangeId(1), Epoch(1), 20).unwrap();
    let digest = a.drained(RangeId(1), Epoch(1)).unwrap().expect("nothing in flight");
    assert_eq!((digest.records, digest.bytes), (2, 13));

    let mut b = ServerCore::new(ServerId(2));
    b.session = Some(2);
    b.lease_valid_until_us = 10_000_000;
    let at_b = RangeRow { owner: Some(ServerId(2)), owner_session: 2, epoch: Epoch(2), ..at_a.clone() };
    // A copy short of the tail does not verify: B refuses to serve it.
    assert_eq!(b.begin_finish(&at_b), Ok(Some(vec![])));
    assert!(matches!(b.complete_move(&at_b, Rc::new(vec![]), vec![r1.clone()], vec![], digest, Strategy::PreCopy), Err(FinishError::Diverged(_))));
    assert!(!b.ranges.contains_key(&RangeId(1)));
    // The whole copy: 6 bytes pre-copied, the 7-byte tail read after the fence.
    assert_eq!(b.begin_finish(&at_b), Ok(Some(vec![])));
    b.complete_move(&at_b, Rc::new(vec![]), vec![r1.clone()], vec![r2.clone()], digest, Strategy::PreCopy).unwrap();
    a.release(RangeId(1), Epoch(1), ServerId(2), Epoch(2));

    let r3 = rec(3, 2, b"third;");
    assert_eq!(a.admit(RangeId(1), Epoch(1), &r3.key, r3.id, 30), Err(Refusal::Moved { owner: ServerId(2), epoch: Epoch(2) }), "A adds nothing and names B");
    assert_eq!(b.admit(RangeId(1), Epoch(2), &r3.key, r3.id, 30), Ok(Some(Epoch(2))));
    b.finish_append(RangeId(1), &r3, Some(Ok(2)));
    let bytes: usize = [&r1, &r2, &r3].iter().map(|r| b.read(RangeId(1), Epoch(2), &r.key, ReadLevel::Strong, 30).unwrap().len()).sum();
    assert_eq!(bytes, 19);
}

/// A registration answered late can give the server session 7 while the manager assigned
/// ranges to its unanswered session 5: the server must not open them (it would keep serving
/// after the manager moved them on).
#[test]
fn server_refuses_to_open_a_range_assigned_to_another_session() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(7);
    assert!(core.begin_open(&row(3, 5)).is_err());
    assert!(core.ranges.is_empty());
}

#[test]
fn server_authority_check_refuses_stale_epoch_expired_lease_and_foreign_key() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.lease_valid_until_us = 1_000;
    active(&mut core, &row(4, 1));
    let id = OpId { client: 1, seq: 1 };
    assert_eq!(core.admit(RangeId(1), Epoch(3), b"b", id, 10), Err(Refusal::StaleEpoch { current: Epoch(4) }));
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"z", id, 10), Err(Refusal::KeyOutOfRange));
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", id, 1_000), Err(Refusal::LeaseExpired));
    assert_eq!(core.admit(RangeId(2), Epoch(4), b"b", id, 10), Err(Refusal::NotOwner));
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", id, 10), Ok(Some(Epoch(4))));
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", id, 10), Err(Refusal::InFlight), "same id while in flight");
}

#[test]
fn server_unknown_store_outcome_forces_a_reload_and_a_retry_is_deduplicated() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.lease_valid_until_us = 1_000;
    let r = row(4, 1);
    active(&mut core, &r);
    let id = OpId { client: 1, seq: 1 };
    let rec = Record { epoch: Epoch(4), id, key: b"b".to_vec(), bytes: bytes::Bytes::from_static(b"x;"), bulk: 0 };
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", id, 10), Ok(Some(Epoch(4))));
    let resync = core.finish_append(RangeId(1), &rec, None).expect("must resync");
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", id, 10), Err(Refusal::NotReady));
    // The store did take it: the reload finds it, and a retry is answered without a new effect.
    core.finish_open(&resync, None, Ok(vec![rec.clone()])).unwrap();
    assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", id, 10), Ok(None));
    assert_eq!(core.read(RangeId(1), Epoch(4), b"b", ReadLevel::Strong, 10).map(|v| v.to_vec()), Ok(b"x;".to_vec()));
}

/// Acks that overtake each other, or arrive during a reload, must not reorder a key's content.
#[test]
fn server_content_keeps_stream_order_when_acks_overtake_each_other() {
    let mut core = serving(4, vec![]);
    let rec = |seq: u64, b: &str| rec(seq, 4, "b", b);
    let (a, b, c) = (rec(1, "a;"), rec(2, "b;"), rec(3, "c;"));
    for x in [&a, &b, &c] {
        assert_eq!(core.admit(RangeId(1), Epoch(4), b"b", x.id, 10), Ok(Some(Epoch(4))));
    }
    core.finish_append(RangeId(1), &b, Some(Ok(1)));
    assert_eq!(core.read(RangeId(1), Epoch(4), b"b", ReadLevel::Strong, 10).map(|v| v.to_vec()), Ok(vec![]), "offset 1 waits for offset 0");
    core.finish_append(RangeId(1), &a, Some(Ok(0)));
    assert_eq!(core.read(RangeId(1), Epoch(4), b"b", ReadLevel::Strong, 10).map(|v| v.to_vec()), Ok(b"a;b;".to_vec()));
    // c's outcome is lost: reload past a and b; an ack for offset 3 (d) arrives while reloading.
    let resync = core.finish_append(RangeId(1), &c, None).expect("reload");
    assert_eq!(core.load_from(&resync), 2);
    let d = rec(4, "d;");
    core.ranges.get_mut(&RangeId(1)).unwrap().inflight.insert(d.id);
    core.finish_append(RangeId(1), &d, Some(Ok(3)));
    assert_eq!(core.keep_prefix(&resync, 2, StreamDigest::of(&[a.clone(), b.clone()])), 2);
    core.finish_open(&resync, None, Ok(vec![c.clone()])).unwrap();
    assert_eq!(core.read(RangeId(1), Epoch(4), b"b", ReadLevel::Strong, 10).map(|v| v.to_vec()), Ok(b"a;b;c;d;".to_vec()));
    assert_eq!(core.ranges[&RangeId(1)].digest, StreamDigest::of(&[a, b, c, d]));
}

/// A reload after an unknown outcome keeps the records applied only if the store's digest of
/// that prefix is the same (length, bytes, checksum): a store that lost a record it had
/// acknowledged (mutation `store-acks-before-sync` and a crash), and holds another at its
/// offset, or holds fewer records, makes the server start over from offset 0.
#[test]
fn server_reload_keeps_its_prefix_only_when_the_store_digest_matches() {
    let mut core = serving(4, vec![]);
    let rec = |seq: u64, b: &str| rec(seq, 4, "b", b);
    let (a, b, c, x) = (rec(1, "a;"), rec(2, "b;"), rec(3, "c;"), rec(9, "x;"));
    for (offset, r) in [&a, &b].into_iter().enumerate() {
        core.admit(RangeId(1), Epoch(4), b"b", r.id, 10).unwrap();
        core.finish_append(RangeId(1), r, Some(Ok(offset as u64)));
    }
    core.admit(RangeId(1), Epoch(4), b"b", c.id, 10).unwrap();
    let resync = core.finish_append(RangeId(1), &c, None).expect("reload");
    assert_eq!(core.load_from(&resync), 2);
    // The store lost b and holds x at offset 1: same length, another checksum.
    let (kept, events) = capture(&mut core, |core| core.keep_prefix(&resync, 2, StreamDigest::of(&[a.clone(), x.clone()])));
    assert_eq!(kept, 0, "start over");
    assert!(has(&events, "prefix_diverged server=1 range=1 epoch=4 held_records=2"), "{events:?}");
    assert_eq!(core.load_from(&resync), 0);
    core.finish_open(&resync, None, Ok(vec![a.clone(), x.clone(), c.clone()])).unwrap();
    assert_eq!(core.read(RangeId(1), Epoch(4), b"b", ReadLevel::Strong, 10).map(|v| v.to_vec()), Ok(b"a;x;c;".to_vec()), "the store's content, not ours");
    assert!(!core.ranges[&RangeId(1)].applied.contains(&b.id));
    // A store shorter than the prefix held: its digest counts fewer records.
    let resync = core.suspect(RangeId(1), Epoch(4)).unwrap();
    assert_eq!(core.load_from(&resync), 3);
    let short = StreamDigest::of(&[a.clone(), x.clone()]);
    assert_eq!(capture(&mut core, |core| core.keep_prefix(&resync, 3, short)).0, 0);
    // A matching digest keeps the prefix; one for another offset than the load's is ignored.
    let mut core2 = ServerCore::new(ServerId(1));
    core2.session = Some(1);
    core2.lease_valid_until_us = 1_000;
    active(&mut core2, &row(4, 1));
    core2.admit(RangeId(1), Epoch(4), b"b", a.id, 10).unwrap();
    core2.finish_append(RangeId(1), &a, Some(Ok(0)));
    let resync = core2.suspect(RangeId(1), Epoch(4)).unwrap();
    assert_eq!(core2.keep_prefix(&resync, 1, StreamDigest::of(std::slice::from_ref(&a))), 1);
    assert_eq!(core2.keep_prefix(&resync, 0, StreamDigest::default()), 0, "not the load's offset: nothing changes");
    assert_eq!(core2.load_from(&resync), 1);
}

/// Server-2 in session 2 with a live lease, and the row of range 1 moving to it at epoch 2.
fn move_target() -> (ServerCore, RangeRow) {
    let mut b = ServerCore::new(ServerId(2));
    b.session = Some(2);
    b.lease_valid_until_us = 10_000_000;
    (b, RangeRow { owner: Some(ServerId(2)), owner_session: 2, epoch: Epoch(2), ..row(1, 2) })
}

fn rec_bulk(seq: u64, epoch: u64, key: &[u8], bytes: &[u8], bulk: u64) -> Record {
    Record { epoch: Epoch(epoch), id: OpId { client: 1, seq }, key: key.to_vec(), bytes: bytes.to_vec().into(), bulk }
}

/// A finish attempt that fails short of a verdict (the store did not answer the
/// fence or the tail) gives the pre-copied records back, so the retry copies only the
/// tail; before, the target dropped three rounds of pre-copy and the retry copied
/// everything during the pause. A repeated finish while one runs is `InProgress`.
#[test]
fn server_move_target_keeps_its_pre_copy_across_a_failed_finish() {
    let (mut b, at_b) = move_target();
    let (r1, r2) = (rec_bulk(1, 1, b"b", b"one;", 1 << 20), rec_bulk(2, 1, b"c", b"two;", 0));
    assert_eq!(b.begin_copy_round(&at_b, 0, 4), Ok(Ok(0)));
    let p = b.finish_copy_round(&at_b, 0, Some(vec![r1.clone()]));
    assert_eq!((p.rounds, p.bytes), (1, 4 + (1 << 20)), "bulk bytes count as copied");
    let pre = b.begin_finish(&at_b).unwrap().expect("a finish to run");
    assert_eq!(pre, vec![r1.clone()]);
    assert_eq!(b.begin_finish(&at_b), Err(FinishError::InProgress), "while the first runs");
    b.abandon_finish(&at_b, pre, "store did not answer the fence");
    assert!(!b.ranges.contains_key(&RangeId(1)), "the failed attempt serves nothing");
    // The retry starts from the kept copy: the tail is only r2.
    let pre = b.begin_finish(&at_b).unwrap().expect("a finish to run");
    assert_eq!(pre, vec![r1.clone()]);
    let digest = StreamDigest::of(&[r1.clone(), r2.clone()]);
    b.complete_move(&at_b, Rc::new(vec![]), pre, vec![r2.clone()], digest, Strategy::PreCopy).unwrap();
    assert!(b.copies.is_empty(), "the copy is done with");
    assert_eq!(b.read(RangeId(1), Epoch(2), b"b", ReadLevel::Strong, 10).map(|v| v.to_vec()), Ok(b"one;".to_vec()));
}

/// A finish while a pre-copy round is still reading starts from nothing: the busy copy is
/// left to its round (and a copy made for another epoch is never taken).
#[test]
fn server_move_finish_does_not_take_a_busy_or_foreign_copy() {
    let (mut b, at_b) = move_target();
    let r1 = rec(1, 1, "b", "one;");
    assert_eq!(b.begin_copy_round(&at_b, 0, 4), Ok(Ok(0)));
    b.finish_copy_round(&at_b, 0, Some(vec![r1.clone()]));
    assert_eq!(b.begin_copy_round(&at_b, 0, 4), Ok(Ok(1)), "a second round is reading");
    assert_eq!(b.begin_finish(&at_b), Ok(Some(vec![])), "the busy copy is not taken");
    assert_eq!(b.copies[&R].records, vec![r1.clone()]);
    let mut c = ServerCore::new(ServerId(2));
    c.session = Some(2);
    assert_eq!(c.begin_copy_round(&at_b, 0, 4), Ok(Ok(0)));
    c.finish_copy_round(&at_b, 0, Some(vec![r1.clone()]));
    let at_3 = RangeRow { epoch: Epoch(3), ..at_b.clone() };
    assert_eq!(c.begin_finish(&at_3), Ok(Some(vec![])), "a copy made for epoch 2 is not epoch 3's");
    assert_eq!(c.copies[&R].records, vec![r1]);
}

/// A paused source whose move is rolled back keeps its drained content and
/// loads only what the stream holds past it (a target may have appended at the transfer's
/// epoch), so rolling back a large range costs a fence, not the whole range again. A range
/// with an append in flight is loaded in full.
#[test]
fn server_reopen_at_a_newer_epoch_keeps_drained_content() {
    let mut a = ServerCore::new(ServerId(1));
    a.session = Some(1);
    a.lease_valid_until_us = 10_000_000;
    let at1 = row(1, 1);
    active(&mut a, &at1);
    let r1 = rec_bulk(1, 1, b"b", b"one;", 0);
    assert_eq!(a.admit(RangeId(1), Epoch(1), b"b", r1.id, 10), Ok(Some(Epoch(1))));
    a.finish_append(RangeId(1), &r1, Some(Ok(0)));
    a.pause(RangeId(1), Epoch(1), 20).unwrap();
    assert!(a.drained(RangeId(1), Epoch(1)).unwrap().is_some());
    let at3 = row(3, 1);
    assert_eq!(a.begin_open(&at3), Ok(Some(1)), "load from offset 1 on");
    assert_eq!(a.admit(RangeId(1), Epoch(3), b"b", OpId { client: 1, seq: 9 }, 30), Err(Refusal::NotReady));
    let r2 = rec_bulk(2, 2, b"b", b"two;", 0); // the target's append at the transfer's epoch
    a.finish_open(&at3, None, Ok(vec![r2.clone()])).unwrap();
    assert_eq!(a.read(RangeId(1), Epoch(3), b"b", ReadLevel::Strong, 30).map(|v| v.to_vec()), Ok(b"one;two;".to_vec()));
    assert_eq!(a.ranges[&RangeId(1)].digest, StreamDigest::of(&[r1.clone(), r2.clone()]));
    assert!(!a.ranges[&RangeId(1)].paused);
    // With an append in flight the content cannot be trusted: a full load.
    let r3 = rec_bulk(3, 3, b"b", b"three;", 0);
    assert_eq!(a.admit(RangeId(1), Epoch(3), b"b", r3.id, 40), Ok(Some(Epoch(3))));
    assert_eq!(a.begin_open(&row(4, 1)), Ok(Some(0)));
}
