//! The frontend node (a driver): performs what [`FrontendCore`] returns and feeds the answers
//! back. One task per client request (as the seam's `serve` spawns it) and one background
//! refresher; each performs the outputs of its own ticket in order: goals are reached, a send
//! or a map read is a call through the seam, a wait or a backoff is a sleep (the backoff's
//! random half drawn from the seeded RNG when it starts), and a reply is the answer to the
//! client. No rule lives here: see [`super::core`].

use super::core::{FrontendCore, Input, Output};
use crate::config::{frontend_addr, lock_addr, server_addr, Knobs};
use crate::msg::Msg;
use crate::seam::{now_us, sleep_ms, Rpc};
use madsim::rand::Rng;
use std::cell::RefCell;
use std::rc::Rc;

/// Run frontend `n` forever.
pub async fn run(n: u32, knobs: Knobs, net: crate::seam::Net) {
    let rpc = Rpc::bind(frontend_addr(n), &net).await;
    let core = Rc::new(RefCell::new(FrontendCore::new(knobs, now_us())));
    {
        // Keep the cache fresh, and know whether the map can still be read at all.
        let (core, rpc) = (core.clone(), rpc.clone());
        crate::seam::spawn(async move {
            let mut input = Input::Boot;
            loop {
                let outputs = handle(n, &core, input);
                input = perform(n, &rpc, outputs).await.expect("the refresher answers no client");
            }
        });
    }
    let rpc2 = rpc.clone();
    rpc.serve(move |msg, _from| {
        let (core, rpc) = (core.clone(), rpc2.clone());
        async move {
            let mut input = match msg {
                Msg::ClientAppend { key, id, bytes, bulk } => Input::Append { key, id, bytes, bulk },
                Msg::ClientRead { key, level } => Input::Read { key, level },
                other => panic!("frontend-{n}: unexpected message {other:?}"),
            };
            loop {
                let outputs = handle(n, &core, input);
                match perform(n, &rpc, outputs).await {
                    Ok(next) => input = next,
                    Err(reply) => return Some(reply),
                }
            }
        }
    });
    std::future::pending::<()>().await;
}

/// Feed `input` to frontend `n`'s core now; a newer cached map is recorded in the history
/// ([`crate::event::Event::MapCached`]).
fn handle(n: u32, core: &RefCell<FrontendCore>, input: Input) -> Vec<Output> {
    let mut core = core.borrow_mut();
    let before = core.map().version;
    let outputs = core.handle(input, now_us());
    let version = core.map().version;
    if version != before {
        crate::event::emit(crate::event::Event::MapCached { frontend: n, version });
    }
    outputs
}

/// The history's record of frontend `n` sending `msg` to `to` (an `Append` or a `Read`).
fn routed(n: u32, to: crate::ids::ServerId, msg: &Msg, note: &super::core::Attempt) {
    use crate::event::{ClientOp, Event};
    let (op, id, range, epoch) = match msg {
        Msg::Append { range, epoch, id, .. } => (ClientOp::Append, Some(*id), *range, *epoch),
        Msg::Read { range, epoch, .. } => (ClientOp::Read, None, *range, *epoch),
        other => panic!("frontend-{n}: the core sent {other:?} to a server"),
    };
    crate::event::emit(Event::Routed { frontend: n, op, id, range, epoch, to, version: note.version, attempt: note.attempt, after: note.after.clone() });
}

/// A backoff's wait, ms: uniform in `[base_ms / 2, base_ms]`, from the seeded RNG.
fn backoff_ms(base_ms: u64) -> u64 {
    let jitter = madsim::rand::thread_rng().gen_range(0..=base_ms / 2);
    base_ms / 2 + jitter
}

/// Perform one call's `outputs` (frontend `n`'s) in order: `Ok(the input they end with)` (a call's answer, a map
/// read's answer, a wait's end), or `Err(the reply to the client)`.
async fn perform(n: u32, rpc: &Rpc, outputs: Vec<Output>) -> Result<Input, Msg> {
    let mut outputs = outputs.into_iter();
    for output in outputs.by_ref() {
        let next = match output {
            Output::Goal(goal) => {
                crate::goal::reach(goal);
                continue;
            }
            Output::Reply { msg, .. } => Err(msg),
            Output::Send { ticket, to, msg, timeout_ms, note } => {
                routed(n, to, &msg, &note);
                Ok(Input::Answer { ticket, answer: rpc.call(server_addr(to), msg, timeout_ms).await.ok() })
            }
            Output::ReadMap { ticket, timeout_ms } => {
                let map = match rpc.call(lock_addr(), Msg::GetMap, timeout_ms).await {
                    Ok(Msg::Map { map }) => Some(map),
                    _ => None,
                };
                Ok(Input::MapRead { ticket, map })
            }
            Output::Wait { ticket, ms } => {
                sleep_ms(ms).await;
                Ok(Input::Woke { ticket })
            }
            Output::Backoff { ticket, base_ms } => {
                sleep_ms(backoff_ms(base_ms)).await;
                Ok(Input::Woke { ticket })
            }
        };
        assert!(outputs.next().is_none(), "the frontend's core returns one output that waits or replies, last");
        return next;
    }
    panic!("the frontend's core returned no output that waits or replies")
}

#[cfg(test)]
mod tests {
    //! The node's retry loop and outcomes end to end on a madsim runtime, against a scripted
    //! authority (answers the map or is silent) and scripted servers (each answers its queue of
    //! replies in order, then `Ok`): the driver performs the core's outputs as the seam's calls
    //! and sleeps.
    use super::*;
    use crate::config::{client_addr, Mutation};
    use crate::ids::{Epoch, OpId, RangeId, ServerId};
    use crate::map::{MapOp, PartitionMap};
    use crate::msg::{Outcome, ReadLevel, Refusal};
    use crate::seam::Net;
    use crate::testkit::block_on;
    use std::collections::{BTreeMap, VecDeque};
    use std::sync::{Arc, Mutex};

    use crate::testkit::frontend_map as map;

    /// What the scripted peers do and saw.
    #[derive(Default)]
    struct Script {
        /// The map the authority answers with; `None`: the authority is silent.
        map: Option<PartitionMap>,
        /// Per server, its next replies (`None`: no answer); when empty it answers `Ok(b"v")`.
        replies: BTreeMap<u32, VecDeque<Option<Msg>>>,
        /// Every request a server got, with the server and the time (ms).
        seen: Vec<(u32, Msg, u64)>,
        /// The map the authority answers with once a server got its first request (the range
        /// moved meanwhile).
        then_map: Option<PartitionMap>,
        /// When the client sends its request, ms (0: at 100 ms).
        send_at_ms: u64,
        /// How many times the authority was asked for the map.
        map_reads: u32,
        /// From the n-th read of the map on (counting from 1), the authority answers this map.
        map_from_read: Option<(u32, PartitionMap)>,
    }

    fn net() -> Net {
        Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }
    }

    /// Start the scripted authority and servers 1 to 3, a real frontend-1 with `knobs`, and send
    /// `request` from a client at 100 ms. Returns the frontend's answer, when it came (ms), and
    /// the script.
    fn exchange(knobs: Knobs, script: Script, request: Msg) -> (Msg, u64, Script) {
        let script = Arc::new(Mutex::new(script));
        let answer = Arc::new(Mutex::new(None));
        let (s, a) = (script.clone(), answer.clone());
        block_on(async move {
            let h = madsim::runtime::Handle::current();
            let s2 = s.clone();
            h.create_node().name("lock-1").ip(lock_addr().ip()).init(move || {
                let s = s2.clone();
                async move {
                    let rpc = Rpc::bind(lock_addr(), &net()).await;
                    rpc.serve(move |msg, _| {
                        let map = {
                            let s = &mut *s.lock().unwrap();
                            s.map_reads += 1;
                            if let Some((from, map)) = &s.map_from_read {
                                if s.map_reads >= *from {
                                    s.map = Some(map.clone());
                                }
                            }
                            s.map.clone()
                        };
                        async move {
                            assert!(matches!(msg, Msg::GetMap));
                            map.map(|map| Msg::Map { map: map.into() })
                        }
                    });
                    std::future::pending::<()>().await
                }
            }).build();
            for n in 1..=3u32 {
                let s2 = s.clone();
                h.create_node().name(format!("server-{n}")).ip(server_addr(ServerId(n)).ip()).init(move || {
                    let s = s2.clone();
                    async move {
                        let rpc = Rpc::bind(server_addr(ServerId(n)), &net()).await;
                        rpc.serve(move |msg, _| {
                            let mut s = s.lock().unwrap();
                            s.seen.push((n, msg, now_us() / 1000));
                            if let Some(m) = s.then_map.take() {
                                s.map = Some(m);
                            }
                            let reply = s.replies.entry(n).or_default().pop_front().unwrap_or(Some(Msg::Served { result: Ok(bytes::Bytes::from_static(b"v")) }));
                            async move { reply }
                        });
                        std::future::pending::<()>().await
                    }
                }).build();
            }
            h.create_node().name("frontend-1").ip(frontend_addr(1).ip()).init(move || run(1, knobs.clone(), net())).build();
            let (a2, send_at_ms) = (a.clone(), s.lock().unwrap().send_at_ms);
            h.create_node().name("client").ip(client_addr(1).ip()).init(move || {
                let (a, request) = (a2.clone(), request.clone());
                async move {
                    let rpc = Rpc::bind(client_addr(1), &net()).await;
                    sleep_ms(if send_at_ms == 0 { 100 } else { send_at_ms }).await;
                    let reply = rpc.call(frontend_addr(1), request, 600_000).await.expect("the frontend answers");
                    *a.lock().unwrap() = Some((reply, now_us() / 1000));
                }
            }).build();
            while a.lock().unwrap().is_none() {
                sleep_ms(50).await;
            }
        });
        let (reply, at_ms) = answer.lock().unwrap().take().unwrap();
        let script = std::mem::take(&mut *script.lock().unwrap());
        (reply, at_ms, script)
    }

    const ID: OpId = OpId { client: 1, seq: 7 };

    fn append_req() -> Msg {
        Msg::ClientAppend { key: b"k".to_vec(), id: ID, bytes: bytes::Bytes::from_static(b"x"), bulk: 0 }
    }

    fn script(replies: &[(u32, Option<Msg>)]) -> Script {
        let mut s = Script { map: Some(map(false)), ..Default::default() };
        for (n, r) in replies {
            s.replies.entry(*n).or_default().push_back(r.clone());
        }
        s
    }

    fn refused(r: Refusal) -> Option<Msg> {
        Some(Msg::Served { result: Err(r) })
    }

    fn outcome(reply: &Msg) -> &Outcome {
        let Msg::ClientResult { outcome, .. } = reply else { panic!("{reply:?}") };
        outcome
    }

    /// (server, range, epoch, id) of each append the servers got.
    fn appends(s: &Script) -> Vec<(u32, u64, u64, OpId)> {
        s.seen.iter().filter_map(|(n, m, _)| if let Msg::Append { range, epoch, id, .. } = m { Some((*n, range.0, epoch.0, *id)) } else { None }).collect()
    }

    #[test]
    fn frontend_append_goes_to_the_owner_and_retries_with_the_same_id() {
        let (reply, _, s) = exchange(Knobs::default(), script(&[(1, refused(Refusal::NotReady)), (1, Some(Msg::ServedUnknown))]), append_req());
        assert_eq!(outcome(&reply), &Outcome::Ok);
        assert_eq!(appends(&s), vec![(1, 1, 1, ID); 3], "same id every attempt");
        // Mutation fresh-id-on-retry: each retry a new id.
        let knobs = Knobs { mutation: Some(Mutation::FreshIdOnRetry), ..Knobs::default() };
        let (_, _, s) = exchange(knobs, script(&[(1, refused(Refusal::NotReady))]), append_req());
        let ids: Vec<OpId> = appends(&s).iter().map(|a| a.3).collect();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], ID);
        assert_ne!(ids[1], ID);
    }

    /// A reload barred the id after an attempt ended unknown: the bar (a `Fenced` refusal at
    /// the route's own epoch) settles the append as definitely failed at once; a refusal by a
    /// newer fence is a deposed owner's and the append is retried, still unknown.
    #[test]
    fn frontend_append_settled_by_the_store_s_bar_fails_definitely_and_stops_retrying() {
        let knobs = Knobs { frontend_attempts: 8, ..Knobs::default() };
        let barred = || (1, refused(Refusal::Fenced { fence: Epoch(1) }));
        let (reply, _, s) = exchange(knobs.clone(), script(&[(1, Some(Msg::ServedUnknown)), barred(), barred(), barred()]), append_req());
        assert!(matches!(outcome(&reply), Outcome::Failed(why) if why.contains("barred from r1's stream at epoch 1")), "{reply:?}");
        assert_eq!(appends(&s).len(), 2, "no retry after the bar");
        let newer = || (1, refused(Refusal::Fenced { fence: Epoch(2) }));
        let (reply, _, s) = exchange(Knobs { frontend_attempts: 3, ..knobs }, script(&[(1, Some(Msg::ServedUnknown)), newer(), newer()]), append_req());
        assert!(matches!(outcome(&reply), Outcome::Unknown(_)), "{reply:?}");
        assert_eq!(appends(&s).len(), 3);
    }

    #[test]
    fn frontend_append_fails_definitely_only_when_no_attempt_can_have_taken_effect() {
        let knobs = Knobs { frontend_attempts: 3, ..Knobs::default() };
        let stale = || (1, refused(Refusal::StaleEpoch { current: Epoch(9) }));
        let (reply, _, s) = exchange(knobs.clone(), script(&[stale(), stale(), stale()]), append_req());
        assert!(matches!(outcome(&reply), Outcome::Failed(why) if why.starts_with("3 attempts; last: server-1 refused: StaleEpoch")), "{reply:?}");
        assert_eq!(appends(&s).len(), 3, "exactly frontend_attempts attempts");
        for unknown in [Some(Msg::ServedUnknown), None, refused(Refusal::InFlight)] {
            let (reply, _, _) = exchange(knobs.clone(), script(&[(1, unknown.clone()), stale(), stale()]), append_req());
            assert!(matches!(outcome(&reply), Outcome::Unknown(_)), "after {unknown:?}: {reply:?}");
        }
        // The reason names the last attempt's fate.
        for (last, why) in [(Some(Msg::ServedUnknown), "server-1: store outcome unknown"), (None, "server-1: no answer")] {
            let (reply, at_ms, _) = exchange(knobs.clone(), script(&[stale(), stale(), (1, last)]), append_req());
            assert!(matches!(outcome(&reply), Outcome::Unknown(w) if w == &format!("3 attempts; last: {why}")), "{reply:?}");
            let bound = knobs.rpc_timeout_ms + knobs.store_timeout_ms;
            assert!(at_ms < 100 + bound + 500, "an attempt waits rpc + store timeout ({bound} ms) at most: {at_ms}");
        }
        // A read has no effect: after no answer it simply failed.
        let read = Msg::ClientRead { key: b"k".to_vec(), level: ReadLevel::Strong };
        let (reply, _, _) = exchange(knobs.clone(), script(&[(1, None), stale(), stale()]), read.clone());
        assert!(matches!(outcome(&reply), Outcome::Failed(_)), "{reply:?}");
        let (reply, _, s) = exchange(knobs, script(&[]), read);
        assert!(matches!(&reply, Msg::ClientResult { outcome: Outcome::Ok, value } if value == &b"v"[..]), "{reply:?}");
        assert!(matches!(&s.seen[..], [(1, Msg::Read { range: RangeId(1), epoch: Epoch(1), .. }, _)]), "{:?}", s.seen);
    }

    #[test]
    fn frontend_follows_a_newer_owner_named_by_a_refusal() {
        let moved = |epoch| (1, refused(Refusal::Moved { owner: ServerId(2), epoch: Epoch(epoch) }));
        let (reply, _, s) = exchange(Knobs::default(), script(&[moved(5)]), append_req());
        assert_eq!(outcome(&reply), &Outcome::Ok);
        assert_eq!(appends(&s), vec![(1, 1, 1, ID), (2, 1, 5, ID)], "the hint wins over the cache");
        // A cache that caught up with the hint (same range, epoch at least the hint's) wins.
        let mut newer = map(false);
        newer.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(3), owner_session: 3 }, MapOp::Activate { range: RangeId(1), epoch: Epoch(2) }]).unwrap();
        let mut s = script(&[moved(2)]);
        s.then_map = Some(newer);
        let (_, _, s) = exchange(Knobs::default(), s, append_req());
        assert_eq!(appends(&s), vec![(1, 1, 1, ID), (3, 1, 2, ID)]);
        // A hint no newer than the route is ignored: the retry goes by the map again.
        let (reply, _, s) = exchange(Knobs::default(), script(&[moved(1)]), append_req());
        assert_eq!(outcome(&reply), &Outcome::Ok);
        assert_eq!(appends(&s), vec![(1, 1, 1, ID), (1, 1, 1, ID)]);
    }

    #[test]
    fn frontend_fails_fast_when_the_map_is_too_stale_and_waits_without_an_owner() {
        // Staleness counts from boot: once past it, nothing is tried at all.
        let knobs = Knobs { map_staleness_ms: 50, ..Knobs::default() };
        let silent = Script { map: None, ..Default::default() };
        let (reply, at_ms, _) = exchange(knobs, silent, append_req());
        assert!(matches!(outcome(&reply), Outcome::MapUnavailable(why) if why.contains("map_staleness_ms=50")), "{reply:?}");
        assert!(at_ms < 200, "at once, not after a refresh of the map ({} ms timeout): {at_ms} ms", Knobs::default().rpc_timeout_ms);
        let read = Msg::ClientRead { key: b"k".to_vec(), level: ReadLevel::Strong };
        let (reply, _, _) = exchange(Knobs { map_staleness_ms: 50, ..Knobs::default() }, Script { map: None, ..Default::default() }, read);
        assert!(matches!(outcome(&reply), Outcome::MapUnavailable(_)), "{reply:?}");
        // Staleness in whole seconds: 1.5 s without a map read is beyond 1 s.
        let silent = Script { map: None, send_at_ms: 1_500, ..Default::default() };
        let (reply, at_ms, _) = exchange(Knobs { map_staleness_ms: 1_000, ..Knobs::default() }, silent, append_req());
        assert!(matches!(outcome(&reply), Outcome::MapUnavailable(why) if why.contains("last read 15")), "{reply:?}");
        assert!(at_ms < 1_600, "{at_ms}");
        // A map with no active owner for the key: refused after the attempts, nothing sent.
        let knobs = Knobs { frontend_attempts: 3, ..Knobs::default() };
        let (reply, at_ms, s) = exchange(knobs, Script { map: Some(map(true)), ..Default::default() }, append_req());
        assert!(matches!(outcome(&reply), Outcome::Failed(why) if why.contains("no active owner")), "{reply:?}");
        assert!(s.seen.is_empty());
        assert!(at_ms - 100 >= 20 / 2 * 2 + 40 / 2, "the second and third attempts back off (>= 20 + 20 ms): {at_ms}");
        // With a long backoff: attempts 1 to 3 each wait at least half of it (500 ms).
        let knobs = Knobs { frontend_attempts: 4, frontend_backoff_ms: 1_000, frontend_backoff_ms_max: 1_000, ..Knobs::default() };
        let (_, at_ms, _) = exchange(knobs, Script { map: Some(map(true)), ..Default::default() }, append_req());
        assert!(at_ms - 100 >= 1_500, "{at_ms}");
        // Staleness 0 switches the check off: a frontend that never read the map just fails.
        let knobs = Knobs { map_staleness_ms: 0, frontend_attempts: 2, ..Knobs::default() };
        let (reply, _, _) = exchange(knobs, Script { map: None, ..Default::default() }, append_req());
        assert!(matches!(outcome(&reply), Outcome::Failed(why) if why.contains("no active owner")), "{reply:?}");
    }

    /// A refusal that says the route is stale makes the frontend read the map again before the
    /// retry, at once (not only at the next background refresh, `renew_interval_ms` apart), even
    /// when its last read is recent (more than 10 ms ago); so does a `NotReady` after its
    /// backoff (a paused range may have moved).
    #[test]
    fn frontend_refreshes_the_map_before_retrying_a_stale_route() {
        let mut moved = map(false);
        moved.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(2), owner_session: 2 }, MapOp::Activate { range: RangeId(1), epoch: Epoch(2) }]).unwrap();
        for (refusal, send_at_ms) in [(Refusal::NotOwner, 100), (Refusal::NotOwner, 500), (Refusal::NotReady, 500)] {
            let mut s = script(&[(1, refused(refusal))]);
            s.then_map = Some(moved.clone());
            s.send_at_ms = send_at_ms;
            let (reply, _, s) = exchange(Knobs::default(), s, append_req());
            assert_eq!(outcome(&reply), &Outcome::Ok);
            assert_eq!(appends(&s), vec![(1, 1, 1, ID), (2, 1, 2, ID)], "sent at {send_at_ms} ms");
        }
    }

    /// A request that finds no owner for its key in the cached map reads the map again and
    /// retries at once; only later attempts back off (here by 0.5 to 1 s each).
    #[test]
    fn frontend_retries_at_once_after_reading_the_map_again_for_a_missing_owner() {
        let knobs = Knobs { frontend_backoff_ms: 1_000, frontend_backoff_ms_max: 1_000, ..Knobs::default() };
        // The boot read finds r1 preparing; the second read finds it active on server-1.
        let s = Script { map: Some(map(true)), map_from_read: Some((2, map(false))), ..Default::default() };
        let (reply, at_ms, s) = exchange(knobs, s, append_req());
        assert_eq!(outcome(&reply), &Outcome::Ok);
        assert_eq!(appends(&s), vec![(1, 1, 1, ID)]);
        assert_eq!(s.map_reads, 2, "the boot read and one on demand");
        assert!(at_ms - 100 < 100, "answered {} ms after the request", at_ms - 100);
    }

    /// Backoff grows with the attempt and is bounded: two `NotReady` refusals cost at least
    /// 10 + 20 ms and well under the cap.
    #[test]
    fn frontend_backs_off_between_busy_refusals() {
        let (_, at_ms, s) = exchange(Knobs::default(), script(&[(1, refused(Refusal::NotReady)), (1, refused(Refusal::NotReady))]), append_req());
        let times: Vec<u64> = s.seen.iter().map(|(_, _, t)| *t).collect();
        assert_eq!(times.len(), 3);
        assert!(times[1] - times[0] >= 10 && times[2] - times[1] >= 20, "{times:?}");
        assert!(at_ms - 100 < 200, "{at_ms}");
        let knobs = Knobs { frontend_backoff_ms: 400, frontend_backoff_ms_max: 400, ..Knobs::default() };
        let (_, _, s) = exchange(knobs, script(&[(1, refused(Refusal::NotReady)), (1, refused(Refusal::NotReady))]), append_req());
        let times: Vec<u64> = s.seen.iter().map(|(_, _, t)| *t).collect();
        assert!(times[2] - times[1] >= 200 && times[2] - times[1] <= 450, "capped at 400: {times:?}");
    }

    /// A backoff waits a random half of its base, spread over [base / 2, base] (seeded: 200
    /// draws per base).
    #[test]
    fn frontend_backoff_waits_a_random_half_of_its_base() {
        block_on(async move {
            for base in [100u64, 200, 400, 800] {
                let waits: Vec<u64> = (0..200).map(|_| backoff_ms(base)).collect();
                let (lo, hi) = (*waits.iter().min().unwrap(), *waits.iter().max().unwrap());
                assert!(lo >= base / 2 && hi <= base, "{lo}..{hi} ms, base {base}");
                assert!(lo < base / 2 + base / 10 && hi > base - base / 10, "spread {lo}..{hi} ms, base {base}");
            }
        });
    }
}
