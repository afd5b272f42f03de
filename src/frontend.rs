//! Frontends (`frontend-N`): cache the map, route each request straight to the owning server,
//! refresh and retry on stale routes (or follow the new owner a refusal names).
//!
//! [`route`] and [`next_step`] are the decisions, pure; the node task does the I/O. A retry of
//! an append reuses its idempotency id, so an append applies at most once whatever happens to
//! the attempts. The number of attempts is bounded; when they run out the client is told the
//! append definitely failed only if no attempt can have taken effect, and unknown otherwise.
//! The cache is a routing hint: a stale one costs a retry, never correctness.
//!
//! The frontend re-reads the map every `renew_interval_ms` in the background and remembers
//! when a read last succeeded. Once that is longer ago than `map_staleness_ms` (the authority
//! is down, or cut off from this frontend), it stops routing on the cache and fails every
//! operation at once with `MapUnavailable`, until a read of the map succeeds again.

use crate::config::{frontend_addr, lock_addr, server_addr, Knobs, Mutation};
use crate::ids::{Epoch, Key, OpId, RangeId, ServerId};
use crate::map::{PartitionMap, RangeState, SharedMap};
use crate::msg::{Msg, Outcome, ReadLevel, Refusal};
use crate::seam::{now_us, sleep_ms, Rpc};
use madsim::rand::Rng;
use std::cell::RefCell;
use std::rc::Rc;

/// Where to send a request for a key, from the cached map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The range holding the key.
    pub range: RangeId,
    /// Its owner.
    pub owner: ServerId,
    /// The owner's epoch.
    pub epoch: Epoch,
}

/// The route for `key` in `map`, if the range holding it has an active owner.
pub fn route(map: &PartitionMap, key: &[u8]) -> Option<Route> {
    let row = map.lookup(key)?;
    if row.state != RangeState::Active {
        return None;
    }
    Some(Route { range: row.id, owner: row.owner?, epoch: row.epoch })
}

/// What to do after one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Refresh the cached map, then retry.
    Refresh,
    /// Wait (backoff), then retry.
    Backoff,
    /// Retry at once at the server and epoch the refusal named (the range moved there).
    Follow(Route),
}

/// The reaction to a refusal. A refused attempt never took effect itself (a refusal comes
/// before admission, or from the store's fence); `InFlight` says another attempt with the same
/// id is admitted, which may.
pub fn next_step(route: Route, refusal: &Refusal) -> Step {
    match refusal {
        Refusal::Moved { owner, epoch } if *epoch > route.epoch => Step::Follow(Route { owner: *owner, epoch: *epoch, ..route }),
        Refusal::Moved { .. } => Step::Refresh,
        Refusal::NotOwner | Refusal::StaleEpoch { .. } | Refusal::KeyOutOfRange | Refusal::Fenced { .. } | Refusal::LeaseExpired | Refusal::TooStale { .. } => Step::Refresh,
        Refusal::NotReady | Refusal::InFlight => Step::Backoff,
    }
}

/// Whether `refusal` of an append sent along `route` is the store's bar of its id, which
/// settles the append as definitely failed, earlier attempts with an unknown outcome included.
///
/// The store refuses a record when the stream's fence is above the record's epoch or its id
/// is barred. A `Fenced` refusal naming a fence at or below the epoch the attempt was sent at
/// (the epoch the record carries) is therefore the bar. An owner bars an id when it reloads the
/// range after an attempt of its own ended unknown, and only if the id is not in the stream
/// then; the bar is durable and in the same step as the fence, so no attempt's record, however
/// late, can land in the stream. The owner answers `Ok` without a new record for an id already
/// in its content (the stream and the sealed prefixes of the range's ancestors, which is where
/// any earlier attempt to an ancestor landed, if it did: an ancestor is sealed before its
/// children serve), so the refusal also says the id is in neither. No attempt took effect and
/// none can: a definite failure, and retrying is pointless. A `Fenced` refusal naming a newer
/// fence only says this attempt went to a deposed owner; the map is refreshed and the append
/// retried as before.
pub fn settled_by_bar(route: Route, refusal: &Refusal) -> bool {
    matches!(refusal, Refusal::Fenced { fence } if *fence <= route.epoch)
}

/// Frontend state: the cached map.
struct Frontend {
    map: SharedMap,
    /// When a refresh was last started (µs, local clock).
    last_refresh_us: u64,
    /// When a read of the map last succeeded (µs, local clock; boot time until the first).
    last_map_us: u64,
}

/// Why an operation failed without succeeding.
struct Failure {
    reason: String,
    /// Some attempt may have taken effect.
    maybe_applied: bool,
    /// The map was too stale to route on (`MapUnavailable`).
    unavailable: bool,
}

/// Run frontend `n` forever.
pub async fn run(n: u32, knobs: Knobs, net: crate::seam::Net) {
    let rpc = Rpc::bind(frontend_addr(n), &net).await;
    // Staleness counts from boot until the first read of the map: a frontend that never read
    // it fails fast too.
    let fe = Rc::new(RefCell::new(Frontend { map: SharedMap::default(), last_refresh_us: 0, last_map_us: now_us() }));
    let knobs = Rc::new(knobs);
    {
        // Keep the cache fresh, and know whether the map can still be read at all.
        let (fe, knobs, rpc) = (fe.clone(), knobs.clone(), rpc.clone());
        crate::seam::spawn(async move {
            loop {
                fetch_map(&fe, &knobs, &rpc).await;
                sleep_ms(knobs.renew_interval_ms).await;
            }
        });
    }
    let rpc2 = rpc.clone();
    rpc.serve(move |msg, _from| {
        let (fe, knobs, rpc) = (fe.clone(), knobs.clone(), rpc2.clone());
        async move {
            match msg {
                Msg::ClientAppend { key, id, bytes, bulk } => Some(append(&fe, &knobs, &rpc, key, id, bytes, bulk).await),
                Msg::ClientRead { key, level } => Some(read(&fe, &knobs, &rpc, key, level).await),
                other => panic!("frontend-{n}: unexpected message {other:?}"),
            }
        }
    });
    std::future::pending::<()>().await;
}

/// Fetch the map unless another request refreshed it in the last 10 ms.
async fn refresh(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc) {
    if !refresh_due(fe.borrow().last_refresh_us, now_us()) {
        return;
    }
    fetch_map(fe, knobs, rpc).await;
}

/// Whether an on-demand read of the map is due at `now_us`, the last one having started at
/// `last_refresh_us` (0: never): at most one per 10 ms, so a burst of refusals costs the
/// authority one read.
fn refresh_due(last_refresh_us: u64, now_us: u64) -> bool {
    !(last_refresh_us + 10_000 > now_us && last_refresh_us > 0)
}

/// Fetch the map from the authority and keep it if it is not older than the cached one;
/// remember when the fetch started and, if it succeeded, when it ended.
async fn fetch_map(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc) {
    fe.borrow_mut().last_refresh_us = now_us();
    if let Ok(Msg::Map { map }) = rpc.call(lock_addr(), Msg::GetMap, knobs.rpc_timeout_ms).await {
        let mut f = fe.borrow_mut();
        f.last_map_us = now_us();
        if map.version >= f.map.version + 2 && f.map.version > 0 {
            crate::goal::reach(crate::goal::Goal::RoutedOnStaleMap);
        }
        if map.version >= f.map.version {
            f.map = map;
        }
    }
}

async fn backoff(knobs: &Knobs, attempt: u32) {
    sleep_ms(backoff_ms(knobs, attempt)).await;
}

/// How long a retry after `attempt` (from 0) waits, ms: a base that doubles per attempt from
/// `frontend_backoff_ms` up to `frontend_backoff_ms_max`, of which a random half (uniform in
/// [base / 2, base], from the seeded RNG), so the retries of clients refused together spread
/// out.
fn backoff_ms(knobs: &Knobs, attempt: u32) -> u64 {
    let base = (knobs.frontend_backoff_ms << attempt.min(16)).min(knobs.frontend_backoff_ms_max);
    let jitter = madsim::rand::thread_rng().gen_range(0..=base / 2);
    base / 2 + jitter
}

/// Whether a map last read `age_ms` ago (whole ms) is too stale to route on: older than
/// `map_staleness_ms` (0: no bound).
fn too_stale(age_ms: u64, map_staleness_ms: u64) -> bool {
    map_staleness_ms > 0 && age_ms > map_staleness_ms
}

/// Send one client operation to the owner of `key`, refreshing the map and retrying up to
/// `frontend_attempts` times. `request` builds the server request for a route and attempt
/// number (from 0); `timeout_ms` bounds each attempt. Returns the server's answer (`Ok`), or
/// the last reason, whether any attempt may have taken effect (no answer, or the store's
/// outcome unknown), and whether it gave up because the map was too stale to route on.
async fn forward(
    fe: &RefCell<Frontend>,
    knobs: &Knobs,
    rpc: &Rpc,
    key: &[u8],
    timeout_ms: u64,
    request: impl Fn(Route, u32) -> Msg,
) -> Result<bytes::Bytes, Failure> {
    let mut maybe_applied = false;
    let mut last = String::from("no attempt");
    let mut hint: Option<Route> = None;
    for attempt in 0..knobs.frontend_attempts {
        let last_map_us = fe.borrow().last_map_us;
        let age_ms = now_us().saturating_sub(last_map_us) / 1000;
        if too_stale(age_ms, knobs.map_staleness_ms) {
            let reason = format!("MapUnavailable: the map was last read {age_ms} ms ago, beyond map_staleness_ms={}", knobs.map_staleness_ms);
            return Err(Failure { reason, maybe_applied, unavailable: true });
        }
        let cached = route(&fe.borrow().map, key);
        // A refusal's hint wins over a cache that does not know the move yet.
        let route = match (hint.take(), cached) {
            (Some(h), Some(c)) if c.range == h.range && c.epoch >= h.epoch => Some(c),
            (Some(h), _) => Some(h),
            (None, c) => c,
        };
        let Some(r) = route else {
            last = "no active owner in the map".into();
            refresh(fe, knobs, rpc).await;
            if attempt > 0 {
                backoff(knobs, attempt).await;
            }
            continue;
        };
        match rpc.call(server_addr(r.owner), request(r, attempt), timeout_ms).await {
            Ok(Msg::Served { result: Ok(value) }) => return Ok(value),
            Ok(Msg::Served { result: Err(refusal) }) => {
                last = format!("{} refused: {refusal:?}", r.owner);
                // The same id is admitted there already (a duplicate of this request got in
                // first): it may take effect. Found in review.
                maybe_applied |= refusal == Refusal::InFlight;
                if settled_by_bar(r, &refusal) {
                    let reason = format!("{} refused: {refusal:?}: the id is barred from r{}'s stream at epoch {} (no attempt took effect, none can)", r.owner, r.range.0, r.epoch.0);
                    return Err(Failure { reason, maybe_applied: false, unavailable: false });
                }
                match next_step(r, &refusal) {
                    Step::Refresh => refresh(fe, knobs, rpc).await,
                    Step::Backoff => {
                        backoff(knobs, attempt).await;
                        // A range paused for a move that is committed by now: the map says
                        // where it went even if the old owner never heard.
                        if refusal == Refusal::NotReady {
                            refresh(fe, knobs, rpc).await;
                        }
                    }
                    Step::Follow(to) => {
                        hint = Some(to);
                        refresh(fe, knobs, rpc).await; // so later requests go there directly
                    }
                }
            }
            Ok(Msg::ServedUnknown) => {
                maybe_applied = true;
                last = format!("{}: store outcome unknown", r.owner);
                backoff(knobs, attempt).await;
            }
            _ => {
                maybe_applied = true;
                last = format!("{}: no answer", r.owner);
                refresh(fe, knobs, rpc).await;
            }
        }
    }
    Err(Failure { reason: format!("{} attempts; last: {last}", knobs.frontend_attempts), maybe_applied, unavailable: false })
}

async fn append(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc, key: Key, id: OpId, bytes: bytes::Bytes, bulk: u64) -> Msg {
    let fresh = knobs.mutated(Mutation::FreshIdOnRetry);
    // Mutation `fresh-id-on-retry`: every retry a new id (the attempt number in the top bits).
    let request = |r: Route, attempt: u32| {
        let id = if fresh { OpId { seq: id.seq | (attempt as u64) << 48, ..id } } else { id };
        Msg::Append { range: r.range, epoch: r.epoch, key: key.clone(), id, bytes: bytes.clone(), bulk }
    };
    let outcome = match forward(fe, knobs, rpc, &key, knobs.rpc_timeout_ms + knobs.store_timeout_ms, request).await {
        Ok(_) => Outcome::Ok,
        Err(Failure { reason, maybe_applied: true, .. }) => Outcome::Unknown(reason),
        Err(Failure { reason, unavailable: true, .. }) => Outcome::MapUnavailable(reason),
        Err(Failure { reason, .. }) => Outcome::Failed(reason),
    };
    Msg::ClientResult { outcome, value: bytes::Bytes::new() }
}

/// A read has no effect, so when the attempts run out it simply failed.
async fn read(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc, key: Key, level: ReadLevel) -> Msg {
    let request = |r: Route, _| Msg::Read { range: r.range, epoch: r.epoch, key: key.clone(), level };
    match forward(fe, knobs, rpc, &key, knobs.rpc_timeout_ms, request).await {
        Ok(value) => Msg::ClientResult { outcome: Outcome::Ok, value },
        Err(Failure { reason, unavailable: true, .. }) => Msg::ClientResult { outcome: Outcome::MapUnavailable(reason), value: bytes::Bytes::new() },
        Err(Failure { reason, .. }) => Msg::ClientResult { outcome: Outcome::Failed(reason), value: bytes::Bytes::new() },
    }
}

#[cfg(test)]
mod tests {
    //! [`route`] and [`next_step`] as tables, then the node's retry loop and outcomes end to end
    //! on a madsim runtime, against a scripted authority (answers the map or is silent) and
    //! scripted servers (each answers its queue of replies in order, then `Ok`).
    use super::*;
    use crate::config::client_addr;
    use crate::map::MapOp;
    use crate::seam::Net;
    use crate::testkit::block_on;
    use std::collections::{BTreeMap, VecDeque};
    use std::sync::{Arc, Mutex};

    /// One active range `["", unbounded)` owned by server-1 at epoch 1; with `split`, a second
    /// range from `m` owned by server-2 at epoch 2, the first still preparing.
    fn map(split: bool) -> PartitionMap {
        let mut map = PartitionMap::default();
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

    #[test]
    fn frontend_route_needs_an_active_owner() {
        let m = map(true);
        assert_eq!(route(&m, b"a"), None, "r1 is preparing");
        assert_eq!(route(&m, b"x"), Some(Route { range: RangeId(2), owner: ServerId(2), epoch: Epoch(2) }));
        assert_eq!(route(&PartitionMap::default(), b"x"), None);
        let m = map(false);
        assert_eq!(route(&m, b""), Some(Route { range: RangeId(1), owner: ServerId(1), epoch: Epoch(1) }));
    }

    #[test]
    fn frontend_next_step_for_each_refusal() {
        let r = Route { range: RangeId(1), owner: ServerId(1), epoch: Epoch(3) };
        let moved = |epoch| Refusal::Moved { owner: ServerId(2), epoch: Epoch(epoch) };
        assert_eq!(next_step(r, &moved(4)), Step::Follow(Route { owner: ServerId(2), epoch: Epoch(4), ..r }));
        assert_eq!(next_step(r, &moved(3)), Step::Refresh, "a hint no newer than the route is no hint");
        assert_eq!(next_step(r, &moved(2)), Step::Refresh);
        for refusal in [Refusal::NotOwner, Refusal::StaleEpoch { current: Epoch(4) }, Refusal::KeyOutOfRange, Refusal::Fenced { fence: Epoch(4) }, Refusal::LeaseExpired, Refusal::TooStale { age_ms: 9 }] {
            assert_eq!(next_step(r, &refusal), Step::Refresh, "{refusal:?}");
        }
        assert_eq!(next_step(r, &Refusal::NotReady), Step::Backoff);
        assert_eq!(next_step(r, &Refusal::InFlight), Step::Backoff);
    }

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

    /// The rules of the retry loop as tables: a map read on demand at most once per 10 ms
    /// (always when the map was never read); a map too stale to route on only when older than
    /// `map_staleness_ms` (at most that old is fine; 0 is no bound); a backoff whose base
    /// doubles per attempt up to the cap, of which it waits a random half, spread over
    /// [base / 2, base] (seeded: 200 draws per attempt).
    #[test]
    fn frontend_refresh_staleness_and_backoff_rules() {
        assert!(refresh_due(0, 5_000), "never read");
        assert!(!refresh_due(1_000, 1_000), "a read just started");
        assert!(!refresh_due(1_000, 10_999));
        assert!(refresh_due(1_000, 11_000), "10 ms after the last one started");
        assert!(refresh_due(1_000, 60_000));
        assert!(!too_stale(1_000, 1_000), "at most map_staleness_ms old");
        assert!(too_stale(1_001, 1_000));
        assert!(!too_stale(0, 1_000));
        assert!(!too_stale(u64::MAX, 0), "0: no bound");
        let knobs = Knobs { frontend_backoff_ms: 100, frontend_backoff_ms_max: 800, ..Knobs::default() };
        block_on(async move {
            for (attempt, base) in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 800), (40, 800)] {
                let waits: Vec<u64> = (0..200).map(|_| backoff_ms(&knobs, attempt)).collect();
                let (lo, hi) = (*waits.iter().min().unwrap(), *waits.iter().max().unwrap());
                assert!(lo >= base / 2 && hi <= base, "attempt {attempt}: {lo}..{hi} ms, base {base}");
                assert!(lo < base / 2 + base / 10 && hi > base - base / 10, "attempt {attempt}: spread {lo}..{hi} ms, base {base}");
            }
        });
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
}
