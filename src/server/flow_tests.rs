//! Transcripts of the server's flows through [`ServerCore::handle`], without a runtime: each
//! test feeds inputs (requests, the store's and the authority's answers, waits that end) and
//! asserts the exact step that comes back: the effects in order and what the flow waits for.

use crate::event::Event;
use crate::ids::{Epoch, OpId, RangeId, ServerId};
use crate::map::{RangeRow, RangeState, Strategy};
use crate::msg::{FinishError, Msg, Record, Refusal, StreamDigest};
use crate::server::flow::{After, Chunks, FenceCall, Input, Next, Peer, Step, Then, Wait, Want};
use crate::server::{Effect, HeldState, Notifier, ServerCore};

const R: RangeId = RangeId(1);

/// Range r1 (the whole key space) for server-1's session 1, at `epoch`.
fn row(epoch: u64) -> RangeRow {
    RangeRow { id: R, start: vec![], end: None, owner: Some(ServerId(1)), owner_session: 1, epoch: Epoch(epoch), state: RangeState::Preparing, sources: vec![], sealed: 0, born_ms: 0 }
}

fn rec(seq: u64, epoch: u64) -> Record {
    Record { epoch: Epoch(epoch), id: OpId { client: 1, seq }, key: format!("k{seq}").into_bytes(), bytes: vec![b'x'; 2].into(), bulk: 0 }
}

/// Server-1 with session 1, lease trusted until 10 s, serving r1 at epoch 2 with `records`.
fn serving(records: Vec<Record>) -> ServerCore {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.lease_valid_until_us = 10_000_000;
    core.begin_open(&row(2)).unwrap();
    core.finish_open(&row(2), None, Ok(records)).unwrap();
    core.take_effects();
    core
}

fn request(core: &mut ServerCore, msg: Msg, now_us: u64) -> Step {
    core.handle(Input::Request { msg, link_backlog_us: 0 }, now_us)
}

fn append(seq: u64) -> Msg {
    let r = rec(seq, 2);
    Msg::Append { range: R, epoch: Epoch(2), key: r.key, id: r.id, bytes: r.bytes, bulk: 0 }
}

/// The events of `effects`, as the trace shows them.
fn events(effects: &[Effect]) -> Vec<String> {
    effects.iter().filter_map(|e| if let Effect::Event(e) = e { Some(e.to_string()) } else { None }).collect()
}

/// The continuation of a call to the store, with its request.
fn store_call(step: Step) -> (Msg, Then) {
    match step.next {
        Next::Call { to: Peer::Store, msg, timeout_ms: 1000, then } => (msg, then),
        other => panic!("not a store call: {other:?}"),
    }
}

#[test]
fn server_flow_session_registers_renews_and_registers_again_once_expired() {
    let mut core = ServerCore::new(ServerId(1));
    let step = core.handle(Input::Start, 5_000);
    let Next::Call { to: Peer::Authority, msg: Msg::RegisterServer { server: ServerId(1), incarnation: 5_000 }, timeout_ms: 500, then } = step.next else { panic!("{:?}", step.next) };
    assert_eq!(then, Then::Registered { sent_us: 5_000 });
    // Registered: the lease runs lease - margin from the send, and the renewal goes at once.
    let step = core.handle(Input::Answered { then, answer: Some(Msg::Registered { session: 3 }) }, 9_000);
    assert_eq!(events(&step.effects), vec!["renewed server=1 session=3 ok=true valid_until_ms=1805".to_string()]);
    let Next::Call { to: Peer::Authority, msg: Msg::RenewSession { session: 3, .. }, then, .. } = step.next else { panic!("{:?}", step.next) };
    assert_eq!(then, Then::Renewed { session: 3, sent_us: 9_000 });
    // No answer: sleep the renew interval; the lease runs out by itself.
    let step = core.handle(Input::Answered { then: then.clone(), answer: None }, 509_000);
    assert!(step.effects.is_empty());
    assert!(matches!(step.next, Next::Sleep { ms: 400, then: Then::Session }));
    assert_eq!(core.lease_valid_until_us, 1_805_000);
    // Refused: the session expired; the server drops everything and registers anew.
    let step = core.handle(Input::Answered { then, answer: Some(Msg::SessionRenewed { ok: false }) }, 600_000);
    assert_eq!(events(&step.effects), vec!["session_expired server=1 session=3".to_string()]);
    assert_eq!(core.session, None);
    assert!(matches!(step.next, Next::Call { to: Peer::Authority, msg: Msg::RegisterServer { incarnation: 5_000, .. }, then: Then::Registered { sent_us: 600_000 }, .. }));
}

#[test]
fn server_flow_append_is_answered_once_visible_after_an_earlier_offset_arrives() {
    let mut core = serving(vec![]);
    let (first, then_first) = store_call(request(&mut core, append(1), 10));
    assert!(matches!(first, Msg::StoreAppend { stream: R, server: ServerId(1), record: Record { epoch: Epoch(2), .. } }));
    let (_, then_second) = store_call(request(&mut core, append(2), 11));
    // The second's acknowledgement (offset 1) overtakes the first's (offset 0): not visible yet.
    let step = core.handle(Input::Answered { then: then_second, answer: Some(Msg::StoreAppended { result: Ok(1) }) }, 20);
    let notifier = Notifier { range: R, serial: 1 };
    assert_eq!(step.effects, vec![Effect::Progress(notifier), Effect::Progress(notifier)], "the effect finished; the acknowledged records applied (none: a gap)");
    let Next::Wait { wait, timeout_ms: Some(1000) } = step.next else { panic!("{:?}", step.next) };
    assert_eq!(wait, Wait::Applied { range: R, epoch: Epoch(2), op: OpId { client: 1, seq: 2 } });
    assert_eq!(core.poll(&wait), Some(notifier), "waits for the gap to fill");
    let step = core.handle(Input::Answered { then: then_first, answer: Some(Msg::StoreAppended { result: Ok(0) }) }, 21);
    assert_eq!(step.effects, vec![Effect::Progress(notifier), Effect::Progress(notifier)]);
    assert!(matches!(step.next, Next::Wait { .. }));
    assert_eq!(core.poll(&wait), None, "both applied, in stream order");
    let step = core.handle(Input::Waited { wait, timed_out: false }, 22);
    assert!(step.effects.is_empty());
    assert!(matches!(step.next, Next::Done(Some(Msg::Served { result: Ok(_) }))));
    assert_eq!(core.ranges[&R].next_offset, 2);
}

#[test]
fn server_flow_append_not_visible_in_time_is_unknown_and_reloads_in_the_background() {
    let mut core = serving(vec![]);
    let (_, then) = store_call(request(&mut core, append(1), 10));
    let step = core.handle(Input::Answered { then, answer: Some(Msg::StoreAppended { result: Ok(3) }) }, 20);
    let Next::Wait { wait, .. } = step.next else { panic!("{:?}", step.next) };
    let step = core.handle(Input::Waited { wait, timed_out: true }, 1_020);
    assert_eq!(step.effects, vec![Effect::Spawn(Then::Resync(row(2)))]);
    assert!(matches!(step.next, Next::Done(Some(Msg::ServedUnknown))));
    assert_eq!(core.ranges[&R].state, HeldState::Loading, "refuses requests until reloaded");
    // The reload's fence finds no answer: it tries again after the renew interval.
    let step = core.handle(Input::Resume(Then::Resync(row(2))), 1_030);
    let (fence, then) = store_call(step);
    assert!(matches!(fence, Msg::Fence { stream: R, epoch: Epoch(2), from: 0, ref bar } if bar.is_empty()), "{fence:?}");
    let step = core.handle(Input::Answered { then, answer: None }, 2_030);
    assert!(matches!(step.next, Next::Sleep { ms: 400, then: Then::Resync(_) }), "{:?}", step.next);
    // An append whose answer never came is barred by the next reload's fence.
    let mut core = serving(vec![]);
    let (_, then) = store_call(request(&mut core, append(4), 10));
    let step = core.handle(Input::Answered { then, answer: None }, 1_010);
    assert_eq!(step.effects.last(), Some(&Effect::Spawn(Then::Resync(row(2)))));
    assert!(matches!(step.next, Next::Done(Some(Msg::ServedUnknown))));
    let (fence, _) = store_call(core.handle(Input::Resume(Then::Resync(row(2))), 1_020));
    assert!(matches!(fence, Msg::Fence { ref bar, .. } if *bar == vec![OpId { client: 1, seq: 4 }]), "{fence:?}");
}

#[test]
fn server_flow_append_fenced_by_a_newer_owner_is_refused_and_the_range_dropped() {
    let mut core = serving(vec![]);
    let (_, then) = store_call(request(&mut core, append(1), 10));
    let step = core.handle(Input::Answered { then, answer: Some(Msg::StoreAppended { result: Err(Epoch(3)) }) }, 20);
    assert_eq!(events(&step.effects), vec!["dropped server=1 range=1 epoch=2 reason=fenced".to_string()]);
    assert!(matches!(step.next, Next::Done(Some(Msg::Served { result: Err(Refusal::Fenced { fence: Epoch(3) }) }))));
    assert!(core.ranges.is_empty());
}

#[test]
fn server_flow_open_fences_then_reads_the_rest_a_chunk_at_a_time() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    let open = Msg::Open { row: Box::new(row(2)), leader_epoch: 1, lineage: vec![] };
    let (fence, then) = store_call(request(&mut core, open, 10));
    assert!(matches!(fence, Msg::Fence { stream: R, epoch: Epoch(2), from: 0, .. }));
    // The fence's answer carries the first record of three.
    let answer = Msg::FenceResult { result: Ok(vec![rec(1, 1)]), length: 3, prefix: StreamDigest::default() };
    let (read, then) = store_call(core.handle(Input::Answered { then, answer: Some(answer) }, 20));
    assert!(matches!(read, Msg::ReadStream { stream: R, from: 1, upto: Some(3), precopy: false }), "{read:?}");
    // Unanswered twice, then asked again at the same offset.
    let (_, then) = store_call(core.handle(Input::Answered { then, answer: None }, 1_020));
    let (read, then) = store_call(core.handle(Input::Answered { then, answer: None }, 2_020));
    assert!(matches!(read, Msg::ReadStream { from: 1, .. }));
    let answer = Msg::StreamRead { records: vec![rec(2, 1), rec(3, 1)], length: 3, precopy: false };
    let step = core.handle(Input::Answered { then, answer: Some(answer) }, 2_030);
    assert_eq!(events(&step.effects), vec!["activated server=1 range=1 epoch=2 records=3 stream=3".to_string()]);
    assert!(matches!(step.next, Next::Done(Some(Msg::Opened { result: Ok(()) }))));
}

#[test]
fn server_flow_open_gives_up_after_three_unanswered_chunks() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.begin_open(&row(2)).unwrap();
    let read = Chunks { stream: R, from: 0, out: vec![], end: Some(5), misses: 0, precopy: false, want: Want::Loading(row(2)), after: After::Opened { row: row(2), base: None } };
    let mut then = Then::Chunk(Box::new(read));
    for _ in 0..2 {
        then = store_call(core.handle(Input::Answered { then, answer: None }, 10)).1;
    }
    let step = core.handle(Input::Answered { then, answer: None }, 10);
    assert_eq!(events(&step.effects), vec!["dropped server=1 range=1 epoch=2 reason=load_refused: store did not answer the fence".to_string()]);
    assert!(matches!(step.next, Next::Done(Some(Msg::Opened { result: Err(ref e) })) if e == "store did not answer the fence"), "{:?}", step.next);
}

#[test]
fn server_flow_transfer_no_longer_wanted_stops_before_the_next_chunk() {
    let mut core = serving(vec![]);
    // A reload of epoch 1 whose range is now held at epoch 2: abandoned, nothing more read.
    let call = FenceCall { row: row(1), from: 0, bar: vec![], reload: true, after: After::Resynced(row(1)) };
    let answer = Msg::FenceResult { result: Ok(vec![rec(1, 1)]), length: 9, prefix: StreamDigest::default() };
    let step = core.handle(Input::Answered { then: Then::Fenced(Box::new(call)), answer: Some(answer) }, 10);
    assert!(step.effects.is_empty(), "{:?}", step.effects);
    assert!(matches!(step.next, Next::Done(None)));
}

#[test]
fn server_flow_pause_answers_the_digest_once_drained_within_a_bound_of_the_link_backlog() {
    let mut core = serving(vec![rec(1, 2)]);
    let (_, then) = store_call(request(&mut core, append(2), 10));
    let pause = Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 1 };
    let step = core.handle(Input::Request { msg: pause, link_backlog_us: 2_500 }, 20);
    assert_eq!(events(&step.effects), vec!["paused server=1 range=1 epoch=2".to_string()]);
    let Next::Wait { wait, timeout_ms: Some(2_003) } = step.next else { panic!("{:?}", step.next) };
    assert_eq!(core.poll(&wait), Some(Notifier { range: R, serial: 1 }), "an admitted append in flight");
    core.handle(Input::Answered { then, answer: Some(Msg::StoreAppended { result: Ok(1) }) }, 30);
    assert_eq!(core.poll(&wait), None);
    let step = core.handle(Input::Waited { wait: wait.clone(), timed_out: false }, 31);
    let digest = StreamDigest::of(&[rec(1, 2), rec(2, 2)]);
    assert_eq!(step.effects, vec![Effect::Event(Event::Drained { server: ServerId(1), range: R, epoch: Epoch(2), digest })]);
    assert!(matches!(step.next, Next::Done(Some(Msg::PausedAt { result: Ok(d) })) if d == digest));
    // Not drained in time: an error, and no drained event.
    let step = core.handle(Input::Waited { wait, timed_out: true }, 5_000);
    assert!(step.effects.is_empty());
    assert!(matches!(step.next, Next::Done(Some(Msg::PausedAt { result: Err(ref e) })) if e == "server-1: r1 did not drain in time"), "{:?}", step.next);
}

#[test]
fn server_flow_repeated_finish_waits_for_the_running_one_without_a_bound_of_its_own() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    let finish = Msg::FinishMove { row: Box::new(row(3)), digest: StreamDigest::default(), strategy: Strategy::StopAndCopy, lineage: vec![], leader_epoch: 1 };
    let step = request(&mut core, finish, 10);
    let Next::Detach { flow, patience_ms: 250, otherwise: Msg::MoveFinished { result: Err(FinishError::InProgress) } } = step.next else { panic!("{:?}", step.next) };
    // The first attempt: fence at the transfer's epoch from offset 0 (nothing pre-copied).
    let (fence, _) = store_call(core.handle(Input::Resume(flow.clone()), 11));
    assert!(matches!(fence, Msg::Fence { epoch: Epoch(3), from: 0, .. }));
    // A repeated one waits for the range to leave `Loading`, with no timeout of its own.
    let step = core.handle(Input::Resume(flow), 12);
    let Next::Wait { wait, timeout_ms: None } = step.next else { panic!("{:?}", step.next) };
    assert_eq!(core.poll(&wait), Some(Notifier { range: R, serial: 1 }));
    core.finish_open(&row(3), None, Err("the store did not answer".into())).unwrap_err();
    assert_eq!(core.take_effects()[0], Effect::Progress(Notifier { range: R, serial: 1 }), "the failure wakes it");
    assert_eq!(core.poll(&wait), None);
    let step = core.handle(Input::Waited { wait, timed_out: false }, 13);
    assert!(matches!(step.next, Next::Done(Some(Msg::MoveFinished { result: Err(FinishError::NotNow(_)) }))), "{:?}", step.next);
}

#[test]
fn server_flow_open_reads_the_lineage_keeping_the_sources_keys_then_fences() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    let parent = crate::msg::Source { stream: RangeId(7), upto: 2, start: b"k1".to_vec(), end: Some(b"k2".to_vec()) };
    let open = Msg::Open { row: Box::new(row(2)), leader_epoch: 1, lineage: vec![parent] };
    let (read, then) = store_call(request(&mut core, open, 10));
    assert!(matches!(read, Msg::ReadStream { stream: RangeId(7), from: 0, upto: Some(2), precopy: false }), "{read:?}");
    let answer = Msg::StreamRead { records: vec![rec(1, 1), rec(2, 1)], length: 2, precopy: false };
    let (fence, then) = store_call(core.handle(Input::Answered { then, answer: Some(answer) }, 20));
    assert!(matches!(fence, Msg::Fence { stream: R, epoch: Epoch(2), from: 0, .. }), "{fence:?}");
    let answer = Msg::FenceResult { result: Ok(vec![]), length: 0, prefix: StreamDigest::default() };
    let step = core.handle(Input::Answered { then, answer: Some(answer) }, 30);
    assert_eq!(events(&step.effects), vec!["activated server=1 range=1 epoch=2 records=1 stream=0".to_string()], "k1 inherited, k2 outside the source's keys");
    assert!(matches!(step.next, Next::Done(Some(Msg::Opened { result: Ok(()) }))));
    assert_eq!(core.ranges[&R].base.as_slice(), &[rec(1, 1)]);
}

#[test]
fn server_flow_open_fails_when_a_source_ends_short_of_its_sealed_length() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    let parent = crate::msg::Source { stream: RangeId(7), upto: 3, start: vec![], end: None };
    let (_, then) = store_call(request(&mut core, Msg::Open { row: Box::new(row(2)), leader_epoch: 1, lineage: vec![parent] }, 10));
    let answer = Msg::StreamRead { records: vec![rec(1, 1)], length: 1, precopy: false };
    let (read, then) = store_call(core.handle(Input::Answered { then, answer: Some(answer) }, 20));
    assert!(matches!(read, Msg::ReadStream { from: 1, upto: Some(3), .. }), "the rest asked for: {read:?}");
    let answer = Msg::StreamRead { records: vec![], length: 1, precopy: false };
    let step = core.handle(Input::Answered { then, answer: Some(answer) }, 30);
    assert!(matches!(step.next, Next::Done(Some(Msg::Opened { result: Err(ref e) })) if e == "store did not answer the fence"), "{:?}", step.next);
    assert!(core.ranges.is_empty());
}

#[test]
fn server_flow_publish_before_fence_serves_after_an_unfenced_read_and_sends_the_fence_unawaited() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    core.mutation = Some(crate::config::Mutation::PublishBeforeFence);
    let (read, then) = store_call(request(&mut core, Msg::Open { row: Box::new(row(2)), leader_epoch: 1, lineage: vec![] }, 10));
    assert!(matches!(read, Msg::ReadStream { stream: R, from: 0, upto: None, .. }), "{read:?}");
    let answer = Msg::StreamRead { records: vec![rec(1, 1)], length: 1, precopy: false };
    let step = core.handle(Input::Answered { then, answer: Some(answer) }, 20);
    assert_eq!(step.effects[0], Effect::Spawn(Then::LooseFence(row(2))), "the fence's task is spawned before the range serves");
    assert_eq!(events(&step.effects), vec!["activated server=1 range=1 epoch=2 records=1 stream=1".to_string()]);
    assert!(matches!(step.next, Next::Done(Some(Msg::Opened { result: Ok(()) }))));
    let (fence, then) = store_call(core.handle(Input::Resume(Then::LooseFence(row(2))), 21));
    assert!(matches!(fence, Msg::Fence { epoch: Epoch(2), from: 0, .. }));
    assert_eq!(then, Then::Ignore);
    assert!(matches!(core.handle(Input::Answered { then, answer: None }, 22).next, Next::Done(None)));
}

#[test]
fn server_flow_move_target_precopies_then_fences_copies_the_tail_and_serves() {
    let mut core = ServerCore::new(ServerId(1));
    core.session = Some(1);
    let pre_copy = Msg::PreCopy { row: Box::new(row(3)), threshold_bytes: 0, max_rounds: 4, leader_epoch: 1 };
    let (read, then) = store_call(request(&mut core, pre_copy, 10));
    assert!(matches!(read, Msg::ReadStream { stream: R, from: 0, upto: None, precopy: true }), "{read:?}");
    let answer = Msg::StreamRead { records: vec![rec(1, 2)], length: 2, precopy: true };
    let (read, then) = store_call(core.handle(Input::Answered { then, answer: Some(answer) }, 20));
    assert!(matches!(read, Msg::ReadStream { from: 1, upto: Some(2), precopy: true, .. }), "to the durable end of the first answer: {read:?}");
    let answer = Msg::StreamRead { records: vec![rec(2, 2)], length: 2, precopy: true };
    let step = core.handle(Input::Answered { then, answer: Some(answer) }, 30);
    assert_eq!(events(&step.effects), vec!["precopied server=1 range=1 epoch=3 round=1 bytes=4".to_string()]);
    assert!(matches!(step.next, Next::Done(Some(Msg::PreCopied { result: Ok(ref p) })) if p.rounds == 1 && p.bytes == 4 && !p.ready), "{:?}", step.next);
    // The cutover: fence at the transfer's epoch past the two records copied, then the tail.
    let all = [rec(1, 2), rec(2, 2), rec(3, 2)];
    let finish = Msg::FinishMove { row: Box::new(row(3)), digest: StreamDigest::of(&all), strategy: Strategy::PreCopy, lineage: vec![], leader_epoch: 1 };
    let Next::Detach { flow, .. } = request(&mut core, finish, 40).next else { panic!() };
    let (fence, then) = store_call(core.handle(Input::Resume(flow), 41));
    assert!(matches!(fence, Msg::Fence { stream: R, epoch: Epoch(3), from: 2, ref bar } if bar.is_empty()), "{fence:?}");
    let answer = Msg::FenceResult { result: Ok(vec![rec(3, 2)]), length: 3, prefix: StreamDigest::default() };
    let step = core.handle(Input::Answered { then, answer: Some(answer) }, 50);
    let events = events(&step.effects);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].starts_with("activated server=1 range=1 epoch=3 records=3 stream=3"), "{events:?}");
    assert!(events[1].starts_with("handoff server=1 range=1 epoch=3"), "{events:?}");
    assert!(matches!(step.next, Next::Done(Some(Msg::MoveFinished { result: Ok(()) }))));
    assert!(core.copies.is_empty());
}
