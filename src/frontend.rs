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
use crate::map::{PartitionMap, RangeState};
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

/// Frontend state: the cached map.
struct Frontend {
    map: PartitionMap,
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
    let fe = Rc::new(RefCell::new(Frontend { map: PartitionMap::default(), last_refresh_us: 0, last_map_us: now_us() }));
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
    if fe.borrow().last_refresh_us + 10_000 > now_us() && fe.borrow().last_refresh_us > 0 {
        return;
    }
    fetch_map(fe, knobs, rpc).await;
}

/// Fetch the map from the authority and keep it if it is not older than the cached one;
/// remember when the fetch started and, if it succeeded, when it ended.
async fn fetch_map(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc) {
    fe.borrow_mut().last_refresh_us = now_us();
    if let Ok(Msg::Map { map }) = rpc.call(lock_addr(), Msg::GetMap, knobs.rpc_timeout_ms).await {
        let mut f = fe.borrow_mut();
        f.last_map_us = now_us();
        if map.version >= f.map.version {
            f.map = map;
        }
    }
}

async fn backoff(knobs: &Knobs, attempt: u32) {
    let base = (knobs.frontend_backoff_ms << attempt.min(16)).min(knobs.frontend_backoff_ms_max);
    let jitter = madsim::rand::thread_rng().gen_range(0..=base / 2);
    sleep_ms(base / 2 + jitter).await;
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
) -> Result<Vec<u8>, Failure> {
    let mut maybe_applied = false;
    let mut last = String::from("no attempt");
    let mut hint: Option<Route> = None;
    for attempt in 0..knobs.frontend_attempts {
        let last_map_us = fe.borrow().last_map_us;
        let age_ms = now_us().saturating_sub(last_map_us) / 1000;
        if knobs.map_staleness_ms > 0 && age_ms > knobs.map_staleness_ms {
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

async fn append(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc, key: Key, id: OpId, bytes: Vec<u8>, bulk: u64) -> Msg {
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
    Msg::ClientResult { outcome, value: Vec::new() }
}

/// A read has no effect, so when the attempts run out it simply failed.
async fn read(fe: &RefCell<Frontend>, knobs: &Knobs, rpc: &Rpc, key: Key, level: ReadLevel) -> Msg {
    let request = |r: Route, _| Msg::Read { range: r.range, epoch: r.epoch, key: key.clone(), level };
    match forward(fe, knobs, rpc, &key, knobs.rpc_timeout_ms, request).await {
        Ok(value) => Msg::ClientResult { outcome: Outcome::Ok, value },
        Err(Failure { reason, unavailable: true, .. }) => Msg::ClientResult { outcome: Outcome::MapUnavailable(reason), value: Vec::new() },
        Err(Failure { reason, .. }) => Msg::ClientResult { outcome: Outcome::Failed(reason), value: Vec::new() },
    }
}
