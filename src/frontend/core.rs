//! The frontend's rules as a pure core: no runtime, network or clock inside. [`FrontendCore::handle`]
//! takes an [`Input`] (a client's request, a server's answer, a map read's answer, a wait that
//! ended) and the local time, and returns the [`Output`]s to perform: requests to send, map
//! reads, waits, the reply to the client, and the coverage goals reached. The driver in
//! [`super::node`] performs them in order and feeds the answers back; it holds no rule of its
//! own. Idea: raft-rs and quinn-proto keep the protocol a state machine that takes time and
//! inputs and returns outputs, so it is tested without a runtime.
//!
//! Rules:
//! - Route each request on the cached map ([`route`]); a refusal's hint of a newer owner wins
//!   over a cache that does not know the move yet ([`next_step`]).
//! - A refusal that says the route is stale, or no answer, reads the map again before the retry
//!   (at most one read on demand per 10 ms); `NotReady`, `InFlight` and an unknown store
//!   outcome back off first, by a base that doubles per attempt up to a cap, of which a random
//!   half is waited.
//! - A retry of an append reuses its idempotency id, so an append applies at most once. The
//!   attempts are bounded; when they run out the client is told the append definitely failed
//!   only if no attempt can have taken effect, and unknown otherwise. The store's bar of the id
//!   settles it as failed at once ([`settled_by_bar`]).
//! - The map is read again every `renew_interval_ms` in the background. Once the last read that
//!   succeeded is older than `map_staleness_ms`, every operation fails at once with
//!   `MapUnavailable` until a read succeeds again. The cache is a routing hint: a stale one costs
//!   a retry, never correctness.
//!
//! Each [`Ticket`] is one of the driver's tasks: the background refresher, or one client
//! request. Every call to `handle` returns, after any goals, exactly one output that waits (a
//! send, a map read, a wait) or the request's reply, all for the ticket the input named (a new
//! request gets the next ticket).

use crate::config::{Knobs, Mutation};
use crate::event::Retry;
use crate::goal::Goal;
use crate::ids::{Epoch, Key, OpId, RangeId, ServerId};
use crate::map::{PartitionMap, RangeState, SharedMap};
use crate::msg::{Msg, Outcome, ReadLevel, Refusal};
use bytes::Bytes;
use std::collections::BTreeMap;

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

/// Whether an on-demand read of the map is due at `now_us`, the last one having started at
/// `last_refresh_us` (0: never): at most one per 10 ms, so a burst of refusals costs the
/// authority one read.
pub fn refresh_due(last_refresh_us: u64, now_us: u64) -> bool {
    !(last_refresh_us + 10_000 > now_us && last_refresh_us > 0)
}

/// Whether a map last read `age_ms` ago (whole ms) is too stale to route on: older than
/// `map_staleness_ms` (0: no bound).
pub fn too_stale(age_ms: u64, map_staleness_ms: u64) -> bool {
    map_staleness_ms > 0 && age_ms > map_staleness_ms
}

/// The base of the backoff after `attempt` (from 0), ms: `frontend_backoff_ms`, doubled per
/// attempt, at most `frontend_backoff_ms_max`. The wait is a random half of it (see
/// [`Output::Backoff`]), so the retries of clients refused together spread out.
pub fn backoff_base_ms(knobs: &Knobs, attempt: u32) -> u64 {
    (knobs.frontend_backoff_ms << attempt.min(16)).min(knobs.frontend_backoff_ms_max)
}

/// Which of the driver's tasks an input or output belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ticket {
    /// The background refresher: reads the map every `renew_interval_ms`.
    Refresher,
    /// One client request, numbered from 1 in arrival order.
    Request(u64),
}

/// What happened, for [`FrontendCore::handle`].
#[derive(Clone, Debug)]
pub enum Input {
    /// The frontend started: the refresher reads the map.
    Boot,
    /// A client's append (`ClientAppend`) arrived; it gets the next [`Ticket::Request`].
    Append {
        /// The key.
        key: Key,
        /// Its idempotency id, reused by every retry.
        id: OpId,
        /// The record's bytes.
        bytes: Bytes,
        /// Extra bytes the append charges on the wire.
        bulk: u64,
    },
    /// A client's read (`ClientRead`) arrived; it gets the next [`Ticket::Request`].
    Read {
        /// The key.
        key: Key,
        /// How current the read must be.
        level: ReadLevel,
    },
    /// The server's answer to [`Output::Send`] (`None`: no answer in time, or a failed call).
    Answer {
        /// The request the send was for.
        ticket: Ticket,
        /// The answer.
        answer: Option<Msg>,
    },
    /// The authority's answer to [`Output::ReadMap`] (`None`: no map in time).
    MapRead {
        /// Who asked.
        ticket: Ticket,
        /// The map it answered.
        map: Option<SharedMap>,
    },
    /// An [`Output::Wait`] or [`Output::Backoff`] ended.
    Woke {
        /// Who waited.
        ticket: Ticket,
    },
}

/// What to do, from [`FrontendCore::handle`], in order.
#[derive(Clone, Debug)]
pub enum Output {
    /// Send `msg` to server `to`, wait at most `timeout_ms` for its answer, and feed it back as
    /// [`Input::Answer`].
    Send {
        /// The request it is for.
        ticket: Ticket,
        /// The server.
        to: ServerId,
        /// The request (`Append` or `Read`).
        msg: Msg,
        /// The bound on the wait, ms.
        timeout_ms: u64,
        /// Which attempt it is, for the history ([`crate::event::Event::Routed`]).
        note: Attempt,
    },
    /// Read the map from the authority, wait at most `timeout_ms`, and feed the answer back as
    /// [`Input::MapRead`].
    ReadMap {
        /// Who asks.
        ticket: Ticket,
        /// The bound on the wait, ms.
        timeout_ms: u64,
    },
    /// Wait `ms`, then feed back [`Input::Woke`].
    Wait {
        /// Who waits.
        ticket: Ticket,
        /// How long, ms.
        ms: u64,
    },
    /// Back off: wait a uniform draw from `[base_ms / 2, base_ms]` ms (the seeded RNG's, at the
    /// moment of the output), then feed back [`Input::Woke`].
    Backoff {
        /// Who waits.
        ticket: Ticket,
        /// The base ([`backoff_base_ms`]).
        base_ms: u64,
    },
    /// Answer the client with `msg` (a `ClientResult`); the request is done.
    Reply {
        /// The request answered.
        ticket: Ticket,
        /// The answer.
        msg: Msg,
    },
    /// A coverage goal was reached (for [`crate::goal::reach`]).
    Goal(Goal),
}

/// What the history records of one attempt ([`crate::event::Event::Routed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The attempt, from 0.
    pub attempt: u32,
    /// The version of the cached map when it was sent.
    pub version: u64,
    /// What ended the attempt before it.
    pub after: Retry,
}

/// A client operation as the frontend forwards it.
#[derive(Clone, Debug)]
enum Op {
    Append { key: Key, id: OpId, bytes: Bytes, bulk: u64 },
    Read { key: Key, level: ReadLevel },
}

/// What a request waits for.
#[derive(Clone, Copy, Debug)]
enum Waiting {
    /// The answer of the attempt sent along this route.
    Server(Route),
    /// A map read; then `Then`.
    Map(Then),
    /// A backoff; then `Then`.
    Backoff(Then),
}

/// What a request does next, once a read of the map or a backoff ended (or was not needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    /// Make the current attempt.
    Attempt,
    /// Make the next attempt.
    NextAttempt,
    /// Back off unless this is the first attempt, then make the next one (no owner was found).
    BackoffIfRetry,
    /// Read the map again (if due), then make the next attempt (a paused range may have moved).
    RefreshThenNext,
}

/// One client request in flight.
#[derive(Clone, Debug)]
struct Request {
    op: Op,
    /// The attempt being made, from 0.
    attempt: u32,
    /// Some attempt may have taken effect.
    maybe_applied: bool,
    /// The last attempt's fate, for the reason of a failure.
    last: String,
    /// A newer owner a refusal named, for the next attempt.
    hint: Option<Route>,
    /// What ended the last attempt (`First` before any).
    after: Retry,
    waiting: Waiting,
}

/// Why an operation failed without succeeding.
struct Failure {
    reason: String,
    /// Some attempt may have taken effect.
    maybe_applied: bool,
    /// The map was too stale to route on (`MapUnavailable`).
    unavailable: bool,
}

/// The frontend's state: the cached map, when it was last read, and the requests in flight.
#[derive(Clone, Debug)]
pub struct FrontendCore {
    knobs: Knobs,
    map: SharedMap,
    /// When a read of the map was last started (µs, local clock; 0: never).
    last_refresh_us: u64,
    /// When a read of the map last succeeded (µs, local clock; boot time until the first).
    last_map_us: u64,
    /// The last request's ticket number.
    last_ticket: u64,
    requests: BTreeMap<u64, Request>,
}

impl FrontendCore {
    /// A frontend booted at `now_us` with an empty cache. Staleness counts from boot until the
    /// first read of the map: a frontend that never read it fails fast too.
    pub fn new(knobs: Knobs, now_us: u64) -> Self {
        FrontendCore { knobs, map: SharedMap::default(), last_refresh_us: 0, last_map_us: now_us, last_ticket: 0, requests: BTreeMap::new() }
    }

    /// The cached map.
    pub fn map(&self) -> &SharedMap {
        &self.map
    }

    /// How many client requests are in flight.
    pub fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Take `input` at `now_us` (local clock) and return what to do, in order.
    ///
    /// Panics on an input for a request that is not waiting for it (a driver's bug).
    pub fn handle(&mut self, input: Input, now_us: u64) -> Vec<Output> {
        let mut out = Vec::new();
        match input {
            Input::Boot | Input::Woke { ticket: Ticket::Refresher } => self.read_map(Ticket::Refresher, now_us, &mut out),
            Input::Append { key, id, bytes, bulk } => self.start(Op::Append { key, id, bytes, bulk }, now_us, &mut out),
            Input::Read { key, level } => self.start(Op::Read { key, level }, now_us, &mut out),
            Input::MapRead { ticket, map } => {
                self.keep(map, now_us, &mut out);
                match ticket {
                    Ticket::Refresher => out.push(Output::Wait { ticket, ms: self.knobs.renew_interval_ms }),
                    Ticket::Request(n) => match self.request(n).waiting {
                        Waiting::Map(then) => self.proceed(n, then, now_us, &mut out),
                        other => panic!("frontend: request {n} got a map while waiting for {other:?}"),
                    },
                }
            }
            Input::Woke { ticket: Ticket::Request(n) } => match self.request(n).waiting {
                Waiting::Backoff(then) => self.proceed(n, then, now_us, &mut out),
                other => panic!("frontend: request {n} woke while waiting for {other:?}"),
            },
            Input::Answer { ticket: Ticket::Request(n), answer } => {
                let Waiting::Server(route) = self.request(n).waiting else { panic!("frontend: request {n} got an answer it did not wait for") };
                if let Some(then) = self.answered(n, route, answer, now_us, &mut out) {
                    self.proceed(n, then, now_us, &mut out);
                }
            }
            Input::Answer { ticket: Ticket::Refresher, .. } => panic!("frontend: the refresher sends no request"),
        }
        out
    }

    fn request(&mut self, n: u64) -> &mut Request {
        self.requests.get_mut(&n).unwrap_or_else(|| panic!("frontend: no request {n} in flight"))
    }

    fn start(&mut self, op: Op, now_us: u64, out: &mut Vec<Output>) {
        self.last_ticket += 1;
        let n = self.last_ticket;
        self.requests.insert(n, Request { op, attempt: 0, maybe_applied: false, last: String::from("no attempt"), hint: None, after: Retry::First, waiting: Waiting::Map(Then::Attempt) });
        self.proceed(n, Then::Attempt, now_us, out);
    }

    /// Start a read of the map for `ticket`.
    fn read_map(&mut self, ticket: Ticket, now_us: u64, out: &mut Vec<Output>) {
        self.last_refresh_us = now_us;
        out.push(Output::ReadMap { ticket, timeout_ms: self.knobs.rpc_timeout_ms });
    }

    /// A read of the map ended at `now_us`: keep the map if it is not older than the cached one.
    fn keep(&mut self, map: Option<SharedMap>, now_us: u64, out: &mut Vec<Output>) {
        let Some(map) = map else { return };
        self.last_map_us = now_us;
        if map.version >= self.map.version + 2 && self.map.version > 0 {
            out.push(Output::Goal(Goal::RoutedOnStaleMap));
        }
        if map.version >= self.map.version {
            self.map = map;
        }
    }

    /// Do `then` for request `n`, and what follows it at once, until the request waits or is
    /// answered.
    fn proceed(&mut self, n: u64, mut then: Then, now_us: u64, out: &mut Vec<Output>) {
        loop {
            let next = match then {
                Then::Attempt => self.attempt(n, now_us, out),
                Then::NextAttempt => {
                    self.request(n).attempt += 1;
                    self.attempt(n, now_us, out)
                }
                Then::BackoffIfRetry if self.request(n).attempt > 0 => self.backoff(n, Then::NextAttempt, out),
                Then::BackoffIfRetry => Some(Then::NextAttempt),
                Then::RefreshThenNext => self.refresh(n, Then::NextAttempt, now_us, out),
            };
            match next {
                Some(t) => then = t,
                None => return,
            }
        }
    }

    /// Read the map again for request `n` unless a read started in the last 10 ms; then `then`
    /// (returned when no read is due, to do at once).
    fn refresh(&mut self, n: u64, then: Then, now_us: u64, out: &mut Vec<Output>) -> Option<Then> {
        if !refresh_due(self.last_refresh_us, now_us) {
            return Some(then);
        }
        self.request(n).waiting = Waiting::Map(then);
        self.read_map(Ticket::Request(n), now_us, out);
        None
    }

    fn backoff(&mut self, n: u64, then: Then, out: &mut Vec<Output>) -> Option<Then> {
        let r = self.request(n);
        r.waiting = Waiting::Backoff(then);
        let base_ms = backoff_base_ms(&self.knobs, self.requests[&n].attempt);
        out.push(Output::Backoff { ticket: Ticket::Request(n), base_ms });
        None
    }

    /// Make request `n`'s current attempt: fail it if the attempts ran out or the map is too
    /// stale, read the map again if no owner is known, else send it along its route.
    fn attempt(&mut self, n: u64, now_us: u64, out: &mut Vec<Output>) -> Option<Then> {
        let (attempts, staleness) = (self.knobs.frontend_attempts, self.knobs.map_staleness_ms);
        let age_ms = now_us.saturating_sub(self.last_map_us) / 1000;
        let r = &self.requests[&n];
        if r.attempt >= attempts {
            let reason = format!("{attempts} attempts; last: {}", r.last);
            let maybe_applied = r.maybe_applied;
            return self.finish(n, Err(Failure { reason, maybe_applied, unavailable: false }), out);
        }
        if too_stale(age_ms, staleness) {
            let reason = format!("MapUnavailable: the map was last read {age_ms} ms ago, beyond map_staleness_ms={staleness}");
            let maybe_applied = r.maybe_applied;
            return self.finish(n, Err(Failure { reason, maybe_applied, unavailable: true }), out);
        }
        let key = match &r.op {
            Op::Append { key, .. } | Op::Read { key, .. } => key,
        };
        let cached = route(&self.map, key);
        let r = self.requests.get_mut(&n).expect("in flight");
        // A refusal's hint wins over a cache that does not know the move yet.
        let route = match (r.hint.take(), cached) {
            (Some(h), Some(c)) if c.range == h.range && c.epoch >= h.epoch => Some(c),
            (Some(h), _) => Some(h),
            (None, c) => c,
        };
        let Some(route) = route else {
            r.last = "no active owner in the map".into();
            r.after = Retry::NoOwner;
            return self.refresh(n, Then::BackoffIfRetry, now_us, out);
        };
        r.waiting = Waiting::Server(route);
        let (msg, timeout_ms) = match &r.op {
            Op::Append { key, id, bytes, bulk } => {
                // Mutation `fresh-id-on-retry`: every retry a new id (the attempt number in the
                // top bits).
                let id = if self.knobs.mutated(Mutation::FreshIdOnRetry) { OpId { seq: id.seq | (r.attempt as u64) << 48, ..*id } } else { *id };
                let msg = Msg::Append { range: route.range, epoch: route.epoch, key: key.clone(), id, bytes: bytes.clone(), bulk: *bulk };
                (msg, self.knobs.rpc_timeout_ms + self.knobs.store_timeout_ms)
            }
            Op::Read { key, level } => (Msg::Read { range: route.range, epoch: route.epoch, key: key.clone(), level: *level }, self.knobs.rpc_timeout_ms),
        };
        let note = Attempt { attempt: r.attempt, version: self.map.version, after: r.after.clone() };
        out.push(Output::Send { ticket: Ticket::Request(n), to: route.owner, msg, timeout_ms, note });
        None
    }

    /// Request `n`'s attempt along `route` got `answer`: answer the client, or say what next.
    fn answered(&mut self, n: u64, route: Route, answer: Option<Msg>, now_us: u64, out: &mut Vec<Output>) -> Option<Then> {
        let r = self.request(n);
        match answer {
            Some(Msg::Served { result: Ok(value) }) => self.finish(n, Ok(value), out),
            Some(Msg::Served { result: Err(refusal) }) => {
                r.last = format!("{} refused: {refusal:?}", route.owner);
                r.after = Retry::Refused(refusal.clone());
                // The same id is admitted there already (a duplicate of this request got in
                // first): it may take effect.
                r.maybe_applied |= refusal == Refusal::InFlight;
                if settled_by_bar(route, &refusal) {
                    let reason = format!("{} refused: {refusal:?}: the id is barred from r{}'s stream at epoch {} (no attempt took effect, none can)", route.owner, route.range.0, route.epoch.0);
                    return self.finish(n, Err(Failure { reason, maybe_applied: false, unavailable: false }), out);
                }
                match next_step(route, &refusal) {
                    Step::Refresh => self.refresh(n, Then::NextAttempt, now_us, out),
                    // A range paused for a move that is committed by now: the map says where it
                    // went even if the old owner never heard.
                    Step::Backoff if refusal == Refusal::NotReady => self.backoff(n, Then::RefreshThenNext, out),
                    Step::Backoff => self.backoff(n, Then::NextAttempt, out),
                    Step::Follow(to) => {
                        r.hint = Some(to);
                        // So later requests go there directly.
                        self.refresh(n, Then::NextAttempt, now_us, out)
                    }
                }
            }
            Some(Msg::ServedUnknown) => {
                r.maybe_applied = true;
                r.last = format!("{}: store outcome unknown", route.owner);
                r.after = Retry::Unknown;
                self.backoff(n, Then::NextAttempt, out)
            }
            _ => {
                r.maybe_applied = true;
                r.last = format!("{}: no answer", route.owner);
                r.after = Retry::NoAnswer;
                self.refresh(n, Then::NextAttempt, now_us, out)
            }
        }
    }

    /// Answer request `n` with the server's value or the failure, and forget it. An append that
    /// may have taken effect is unknown; a read has no effect, so it simply failed.
    fn finish(&mut self, n: u64, result: Result<Bytes, Failure>, out: &mut Vec<Output>) -> Option<Then> {
        let r = self.requests.remove(&n).expect("in flight");
        let append = matches!(r.op, Op::Append { .. });
        let (outcome, value) = match result {
            Ok(_) if append => (Outcome::Ok, Bytes::new()),
            Ok(value) => (Outcome::Ok, value),
            Err(Failure { reason, maybe_applied: true, .. }) if append => (Outcome::Unknown(reason), Bytes::new()),
            Err(Failure { reason, unavailable: true, .. }) => (Outcome::MapUnavailable(reason), Bytes::new()),
            Err(Failure { reason, .. }) => (Outcome::Failed(reason), Bytes::new()),
        };
        out.push(Output::Reply { ticket: Ticket::Request(n), msg: Msg::ClientResult { outcome, value } });
        None
    }
}

#[cfg(test)]
mod tests {
    //! [`route`], [`next_step`] and the retry rules as tables, then the core as transcripts: a
    //! list of inputs (each at a time, µs) and every output it returned, one line each, without
    //! a runtime.
    use super::*;
    use crate::map::MapOp;

    use crate::testkit::frontend_map as map;

    /// `map(false)` after r1 moved to server-`owner` at `epoch` (one version per epoch from 2
    /// on), with `bumps` more versions (drains switched on and off) after it.
    fn moved(owner: u32, epoch: u64, bumps: u32) -> SharedMap {
        let mut m = map(false);
        for e in 2..=epoch {
            m.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(owner), owner_session: owner as u64 }, MapOp::Activate { range: RangeId(1), epoch: Epoch(e) }]).unwrap();
        }
        for i in 0..bumps {
            m.apply_batch(&[MapOp::Drain { server: ServerId(9), on: i % 2 == 0 }]).unwrap();
        }
        m.into()
    }

    const ID: OpId = OpId { client: 1, seq: 7 };

    fn append() -> Input {
        Input::Append { key: b"k".to_vec(), id: ID, bytes: Bytes::from_static(b"x"), bulk: 0 }
    }

    fn served(value: &'static [u8]) -> Option<Msg> {
        Some(Msg::Served { result: Ok(Bytes::from_static(value)) })
    }

    fn refused(r: Refusal) -> Option<Msg> {
        Some(Msg::Served { result: Err(r) })
    }

    fn ticket(t: &Ticket) -> String {
        match t {
            Ticket::Refresher => "refresher".into(),
            Ticket::Request(n) => format!("#{n}"),
        }
    }

    /// One output, readable: `#1 > send server-1 append r1 e1 id 1/7 (1500 ms)`.
    fn line(o: &Output) -> String {
        match o {
            Output::Send { ticket: t, to, msg, timeout_ms, .. } => {
                let what = match msg {
                    Msg::Append { range, epoch, id, .. } => format!("append r{} e{} id {}/{:x}", range.0, epoch.0, id.client, id.seq),
                    Msg::Read { range, epoch, .. } => format!("read r{} e{}", range.0, epoch.0),
                    other => format!("{other:?}"),
                };
                format!("{} > send {to} {what} ({timeout_ms} ms)", ticket(t))
            }
            Output::ReadMap { ticket: t, timeout_ms } => format!("{} > read map ({timeout_ms} ms)", ticket(t)),
            Output::Wait { ticket: t, ms } => format!("{} > wait {ms} ms", ticket(t)),
            Output::Backoff { ticket: t, base_ms } => format!("{} > back off {}..{base_ms} ms", ticket(t), base_ms / 2),
            Output::Reply { ticket: t, msg: Msg::ClientResult { outcome, value } } => format!("{} > reply {outcome:?} {:?}", ticket(t), String::from_utf8_lossy(value)),
            Output::Reply { ticket: t, msg } => format!("{} > reply {msg:?}", ticket(t)),
            Output::Goal(g) => format!("goal {}", g.name()),
        }
    }

    /// Feed `inputs` (each with its time, ms) to `core`; every output, one line each.
    fn transcript(core: &mut FrontendCore, inputs: Vec<(u64, Input)>) -> Vec<String> {
        inputs.into_iter().flat_map(|(ms, input)| core.handle(input, ms * 1000).iter().map(line).collect::<Vec<_>>()).collect()
    }

    /// A core booted at 1 ms whose refresher read `m` at 2 ms.
    fn booted(knobs: Knobs, m: SharedMap) -> FrontendCore {
        let mut core = FrontendCore::new(knobs, 1_000);
        let boot = transcript(&mut core, vec![(1, Input::Boot), (2, Input::MapRead { ticket: Ticket::Refresher, map: Some(m) })]);
        assert_eq!(boot, ["refresher > read map (500 ms)", "refresher > wait 400 ms"]);
        core
    }

    fn answer(n: u64, answer: Option<Msg>) -> Input {
        Input::Answer { ticket: Ticket::Request(n), answer }
    }

    fn map_read(n: u64, map: Option<SharedMap>) -> Input {
        Input::MapRead { ticket: Ticket::Request(n), map }
    }

    fn woke(n: u64) -> Input {
        Input::Woke { ticket: Ticket::Request(n) }
    }

    /// An append refused `NotReady` backs off, then reads the map (the range may have moved) and
    /// retries with the same id; an unknown store outcome backs off by the doubled base and
    /// retries without a read; the third attempt's `Ok` answers the client.
    #[test]
    fn frontend_core_append_backs_off_refreshes_and_retries_with_the_same_id() {
        let mut core = booted(Knobs::default(), map(false).into());
        let t = transcript(&mut core, vec![
            (100, append()),
            (101, answer(1, refused(Refusal::NotReady))),
            (120, woke(1)),
            (121, map_read(1, Some(map(false).into()))),
            (122, answer(1, Some(Msg::ServedUnknown))),
            (150, woke(1)),
            (151, answer(1, served(b""))),
        ]);
        assert_eq!(t, [
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > back off 10..20 ms",
            "#1 > read map (500 ms)",
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > back off 20..40 ms",
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > reply Ok \"\"",
        ]);
        assert_eq!(core.in_flight(), 0);
        // Mutation fresh-id-on-retry: each retry a new id (the attempt in the top bits).
        let mut core = booted(Knobs { mutation: Some(Mutation::FreshIdOnRetry), ..Knobs::default() }, map(false).into());
        let t = transcript(&mut core, vec![(100, append()), (101, answer(1, Some(Msg::ServedUnknown))), (130, woke(1))]);
        assert_eq!(t[2], "#1 > send server-1 append r1 e1 id 1/1000000000007 (1500 ms)");
    }

    /// A stale route reads the map before the retry, at once; a read started less than 10 ms
    /// ago is not repeated (the retry goes by the cache), and a map two versions ahead of the
    /// cache is the goal `routed_on_stale_map`, reached before the retry is sent.
    #[test]
    fn frontend_core_reads_the_map_again_before_retrying_a_stale_route() {
        let mut core = booted(Knobs::default(), map(false).into());
        let t = transcript(&mut core, vec![
            (100, append()),
            (101, answer(1, refused(Refusal::NotOwner))),
            (102, map_read(1, Some(moved(2, 2, 1)))),
            (103, answer(1, refused(Refusal::StaleEpoch { current: Epoch(3) }))),
            (104, answer(1, served(b""))),
        ]);
        assert_eq!(t, [
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > read map (500 ms)",
            "goal routed_on_stale_map",
            "#1 > send server-2 append r1 e2 id 1/7 (1500 ms)",
            "#1 > send server-2 append r1 e2 id 1/7 (1500 ms)",
            "#1 > reply Ok \"\"",
        ]);
        assert_eq!(core.map().version, 5);
    }

    /// A `Moved` refusal naming a newer epoch is followed at once, even before the map knows
    /// it (the read meanwhile answered an older map); one no newer than the route is ignored
    /// and the retry goes by the map.
    #[test]
    fn frontend_core_follows_a_newer_owner_named_by_a_refusal() {
        let mut core = booted(Knobs::default(), map(false).into());
        let t = transcript(&mut core, vec![
            (100, append()),
            (101, answer(1, refused(Refusal::Moved { owner: ServerId(2), epoch: Epoch(5) }))),
            (102, map_read(1, Some(map(false).into()))),
            (103, answer(1, refused(Refusal::Moved { owner: ServerId(3), epoch: Epoch(5) }))),
            (150, answer(1, served(b""))),
        ]);
        assert_eq!(t, [
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > read map (500 ms)",
            "#1 > send server-2 append r1 e5 id 1/7 (1500 ms)",
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > reply Ok \"\"",
        ], "the second hint (epoch 5, not newer than the route it refused) is no hint; no read within 10 ms");
    }

    /// The attempts are bounded: the client is told the append definitely failed when every
    /// attempt was refused before admission, and unknown once one had no answer; the reason
    /// names the last attempt's fate. A read has no effect: after no answer it simply failed.
    #[test]
    fn frontend_core_fails_definitely_only_when_no_attempt_can_have_taken_effect() {
        let knobs = Knobs { frontend_attempts: 2, ..Knobs::default() };
        let stale = || refused(Refusal::StaleEpoch { current: Epoch(9) });
        let mut core = booted(knobs.clone(), map(false).into());
        let t = transcript(&mut core, vec![(100, append()), (101, answer(1, stale())), (102, map_read(1, None)), (103, answer(1, stale()))]);
        assert_eq!(t.last().unwrap(), "#1 > reply Failed(\"2 attempts; last: server-1 refused: StaleEpoch { current: Epoch(9) }\") \"\"");
        let mut core = booted(knobs.clone(), map(false).into());
        let t = transcript(&mut core, vec![(100, append()), (101, answer(1, None)), (102, map_read(1, None)), (103, answer(1, stale()))]);
        assert_eq!(t.last().unwrap(), "#1 > reply Unknown(\"2 attempts; last: server-1 refused: StaleEpoch { current: Epoch(9) }\") \"\"");
        let mut core = booted(knobs, map(false).into());
        let read = Input::Read { key: b"k".to_vec(), level: ReadLevel::Strong };
        let t = transcript(&mut core, vec![(100, read.clone()), (101, answer(1, None)), (102, map_read(1, None)), (103, answer(1, None))]);
        assert_eq!(t, ["#1 > send server-1 read r1 e1 (500 ms)", "#1 > read map (500 ms)", "#1 > send server-1 read r1 e1 (500 ms)", "#1 > reply Failed(\"2 attempts; last: server-1: no answer\") \"\""]);
        let t = transcript(&mut core, vec![(200, read), (201, answer(2, served(b"v")))]);
        assert_eq!(t, ["#2 > send server-1 read r1 e1 (500 ms)", "#2 > reply Ok \"v\""], "a read answers the value");
    }

    /// The store's bar (a `Fenced` refusal at the route's own epoch) settles an append whose
    /// earlier attempt ended unknown as definitely failed, at once; a newer fence is a deposed
    /// owner's and the append is retried.
    #[test]
    fn frontend_core_append_settled_by_the_store_s_bar_fails_definitely() {
        let mut core = booted(Knobs::default(), map(false).into());
        let t = transcript(&mut core, vec![
            (100, append()),
            (101, answer(1, Some(Msg::ServedUnknown))),
            (130, woke(1)),
            (131, answer(1, refused(Refusal::Fenced { fence: Epoch(2) }))),
            (132, map_read(1, None)),
            (133, answer(1, refused(Refusal::Fenced { fence: Epoch(1) }))),
        ]);
        assert_eq!(t[3..], [
            "#1 > read map (500 ms)",
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#1 > reply Failed(\"server-1 refused: Fenced { fence: Epoch(1) }: the id is barred from r1's stream at epoch 1 (no attempt took effect, none can)\") \"\"",
        ]);
    }

    /// Without an active owner for the key the request reads the map and retries at once; only
    /// later attempts back off. A map too stale to route on fails the request at once, without
    /// a send (staleness counts from boot, and from the last read that succeeded).
    #[test]
    fn frontend_core_waits_for_an_owner_and_fails_fast_on_a_stale_map() {
        let knobs = Knobs { map_staleness_ms: 1_000, ..Knobs::default() };
        let mut core = booted(knobs.clone(), map(true).into());
        let t = transcript(&mut core, vec![
            (100, append()),
            (101, map_read(1, Some(map(true).into()))),
            (102, woke(1)),
        ]);
        assert_eq!(t, ["#1 > read map (500 ms)", "#1 > back off 20..40 ms", "#1 > back off 40..80 ms"], "attempts 1 and 2, within 10 ms of the read: no second read, a backoff by the attempt's base");
        let t = transcript(&mut core, vec![(160, woke(1)), (161, map_read(1, Some(map(false).into()))), (250, woke(1)), (251, answer(1, served(b"")))]);
        assert_eq!(t, ["#1 > read map (500 ms)", "#1 > back off 80..160 ms", "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)", "#1 > reply Ok \"\""], "attempt 3 reads the map, backs off, then attempt 4 sends");
        // The last good read was at 161 ms: at 1161 ms the map is still fresh enough, at 1163 ms not.
        let t = transcript(&mut core, vec![(1_161, append()), (1_162, answer(2, refused(Refusal::NotOwner))), (1_163, map_read(2, None))]);
        assert_eq!(t, [
            "#2 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#2 > read map (500 ms)",
            "#2 > reply MapUnavailable(\"MapUnavailable: the map was last read 1002 ms ago, beyond map_staleness_ms=1000\") \"\"",
        ]);
        let mut never = FrontendCore::new(knobs, 0);
        assert_eq!(transcript(&mut never, vec![(1_500, append())]), ["#1 > reply MapUnavailable(\"MapUnavailable: the map was last read 1500 ms ago, beyond map_staleness_ms=1000\") \"\""]);
    }

    /// Two requests in flight share the cache and its read budget: the second's refusal within
    /// 10 ms of the first's read retries on the cache the first's read filled; the refresher's
    /// read fills it for both and waits `renew_interval_ms` again.
    #[test]
    fn frontend_core_requests_share_the_cache_and_the_refresher_keeps_it() {
        let mut core = booted(Knobs::default(), map(false).into());
        let t = transcript(&mut core, vec![
            (100, append()),
            (100, Input::Read { key: b"k".to_vec(), level: ReadLevel::Strong }),
            (101, answer(1, refused(Refusal::NotOwner))),
            (102, map_read(1, Some(moved(2, 2, 0)))),
            (103, answer(2, refused(Refusal::NotOwner))),
            (402, Input::Woke { ticket: Ticket::Refresher }),
            (403, Input::MapRead { ticket: Ticket::Refresher, map: Some(moved(3, 3, 0)) }),
            (404, answer(1, refused(Refusal::LeaseExpired))),
        ]);
        assert_eq!(t, [
            "#1 > send server-1 append r1 e1 id 1/7 (1500 ms)",
            "#2 > send server-1 read r1 e1 (500 ms)",
            "#1 > read map (500 ms)",
            "#1 > send server-2 append r1 e2 id 1/7 (1500 ms)",
            "#2 > send server-2 read r1 e2 (500 ms)",
            "refresher > read map (500 ms)",
            "refresher > wait 400 ms",
            "#1 > send server-3 append r1 e3 id 1/7 (1500 ms)",
        ]);
        assert_eq!(core.in_flight(), 2);
    }

    /// Each send carries, for the history, its attempt, the cached map's version and what
    /// ended the attempt before it.
    #[test]
    fn frontend_core_sends_note_the_attempt_the_map_version_and_the_reason() {
        let notes = |outs: Vec<Output>| outs.into_iter().filter_map(|o| if let Output::Send { note, .. } = o { Some(note) } else { None }).collect::<Vec<_>>();
        let mut core = booted(Knobs::default(), map(false).into());
        let v1 = core.map().version;
        assert_eq!(notes(core.handle(append(), 100_000)), [Attempt { attempt: 0, version: v1, after: Retry::First }]);
        assert!(notes(core.handle(answer(1, refused(Refusal::NotOwner)), 101_000)).is_empty(), "a map read first");
        let sent = notes(core.handle(map_read(1, Some(moved(2, 2, 0))), 102_000));
        let v2 = core.map().version;
        assert!(v2 > v1);
        assert_eq!(sent, [Attempt { attempt: 1, version: v2, after: Retry::Refused(Refusal::NotOwner) }]);
        assert!(notes(core.handle(answer(1, Some(Msg::ServedUnknown)), 103_000)).is_empty(), "a backoff first");
        assert_eq!(notes(core.handle(woke(1), 140_000)), [Attempt { attempt: 2, version: v2, after: Retry::Unknown }]);
        assert!(notes(core.handle(answer(1, None), 150_000)).is_empty(), "a map read first");
        assert_eq!(notes(core.handle(map_read(1, None), 151_000)), [Attempt { attempt: 3, version: v2, after: Retry::NoAnswer }]);
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

    /// The rules of the retry loop as tables: a map read on demand at most once per 10 ms
    /// (always when the map was never read); a map too stale to route on only when older than
    /// `map_staleness_ms` (at most that old is fine; 0 is no bound); a backoff whose base
    /// doubles per attempt up to the cap.
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
        for (attempt, base) in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 800), (40, 800)] {
            assert_eq!(backoff_base_ms(&knobs, attempt), base, "attempt {attempt}");
        }
    }
}
