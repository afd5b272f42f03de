//! The history of one run: every event of the control plane ([`Sys`], emitted through
//! `partmap::event::emit`) and of the harness (client invocations and completions, faults, the
//! heal), in one ordered list of typed values stamped with simulated time. The checkers match
//! on it, the readable trace is rendered from it, and the trace hash is folded from it.
//!
//! Collection is per thread: [`start`] installs the sink for the run about to execute on this
//! thread (madsim runs a whole simulation on the calling thread), [`finish`] takes the list.

use crate::fault::Fault;
use partmap::event::ClientOp;
use partmap::ids::{show_key, Key, OpId};
use partmap::seam::CrashReport;
use std::cell::RefCell;
use std::fmt;
use std::hash::{Hash, Hasher};

pub use partmap::event::Event as Sys;

/// How a client operation ended, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Acknowledged (an append took effect; a read returned content).
    Ok,
    /// Definitely failed: an append had no effect.
    Fail,
    /// An append's effect is unknown (it may have landed).
    Unknown,
    /// The frontend failed it at once: its map was older than `map_staleness_ms` (definitely
    /// failed).
    Unavailable,
}

impl Outcome {
    /// `ok`, `fail`, `unknown`, `unavailable`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
            Outcome::Unavailable => "unavailable",
        }
    }
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum What {
    /// An event of the control plane.
    Sys(Sys),
    /// A client invoked an operation (client 0 is the harness's probe).
    Invoke {
        /// Append or read.
        op: ClientOp,
        /// The operation's id: `client` and `seq` (an append's idempotency id).
        id: OpId,
        /// The key.
        key: Key,
        /// For a bounded-staleness read, its bound in ms; `None` for appends and strong reads.
        bound_ms: Option<u64>,
    },
    /// The operation completed.
    Complete {
        /// Append or read.
        op: ClientOp,
        /// Its id.
        id: OpId,
        /// The key.
        key: Key,
        /// How it ended.
        outcome: Outcome,
        /// The frontend's reason, for a failure.
        reason: String,
        /// For a read, the length of the returned content, bytes.
        value_len: u64,
        /// For a read, the content's hash ([`crate::workload::content_hash`]).
        value_hash: u64,
    },
    /// The nemesis injected `fault` for `duration_ms`; a crash of a node with a disk says what
    /// happened to its unsynced writes.
    Fault {
        /// The fault (boxed, as in every rare event that carries one: a history event is as
        /// large as its largest kind, and the checkers walk the history several times).
        fault: Box<Fault>,
        /// For how long, ms (0 for instant operator requests).
        duration_ms: u64,
        /// For a crash of `lock-1` or `store-1`: unsynced records lost, survived, torn.
        crash: Option<CrashReport>,
    },
    /// A schedule entry's trigger fired: `node` emitted its `count`-th `event` since the
    /// trigger was armed; the fault follows after `delay_ms`.
    Triggered {
        /// The event's name.
        event: &'static str,
        /// The node that emitted it.
        node: String,
        /// Which occurrence.
        count: u32,
        /// The delay before the fault, ms.
        delay_ms: u64,
    },
    /// The operator's request reached its verdict at the authority: accepted into the map
    /// table (the leader acts on it), or refused on every attempt (`refused` has the last
    /// reason: no such range, not adjacent, a range busy in another flow, a split key at a
    /// boundary, ...).
    OperatorVerdict {
        /// The request as the schedule or the random mix named it.
        request: Box<Fault>,
        /// The map op it was sent as (ranges resolved from its keys); empty when refused.
        op: String,
        /// Attempts made.
        attempts: u32,
        /// `None`: accepted; otherwise why it was refused.
        refused: Option<String>,
    },
    /// The fault was undone.
    FaultEnd {
        /// The fault.
        fault: Box<Fault>,
    },
    /// Every link restored, paused nodes resumed, crashed nodes restarted.
    Heal,
    /// A random client shed an operation it could not start in time: its arrival found the
    /// client at `workload.in_flight_per_client` operations until `workload.shed_after_ms` had
    /// passed or the window ended (issue 13: bounded load). It was never sent.
    Shed {
        /// The client.
        client: u32,
        /// Append or read.
        op: ClientOp,
        /// When it arrived, µs of simulated time.
        arrived_us: u64,
    },
    /// A node's clock was drawn to run `drift_ppm` parts per million off.
    Clock {
        /// The node.
        node: String,
        /// Its drift.
        drift_ppm: i64,
    },
    // Last, so that the trace hash of every other variant stays as it was.
    /// A fault aimed at a role was not injected: the role was empty when the fault was due
    /// (no move in flight, no leader yet, ...), or its two ends were one node.
    FaultSkipped {
        /// The planned fault, with its roles.
        fault: Box<Fault>,
        /// Why.
        reason: String,
    },
}

/// One event of the history.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// Simulated time since the run started, microseconds.
    pub t_us: u64,
    /// What happened.
    pub what: What,
}

impl Event {
    /// The control-plane event, if this is one.
    pub fn sys(&self) -> Option<&Sys> {
        match &self.what {
            What::Sys(s) => Some(s),
            _ => None,
        }
    }

    /// `[   12.345678s] effect stream=3 ...`: the readable trace line(s).
    pub fn render(&self) -> String {
        format!("[{:>5}.{:06}s] {}", self.t_us / 1_000_000, self.t_us % 1_000_000, self.what)
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Sys(s) => write!(f, "{s}"),
            What::Invoke { op, id, key, bound_ms } => {
                write!(f, "invoke op={} client={} seq={} key={}", op.name(), id.client, id.seq, show_key(key))?;
                match (op, bound_ms) {
                    (ClientOp::Read, Some(ms)) => write!(f, " level=bounded bound_ms={ms}"),
                    (ClientOp::Read, None) => write!(f, " level=strong"),
                    _ => Ok(()),
                }
            }
            What::Complete { op, id, key, outcome, reason, value_len, value_hash } => {
                write!(f, "complete op={} client={} seq={} key={} outcome={} reason={reason}", op.name(), id.client, id.seq, show_key(key), outcome.name())?;
                if *op == ClientOp::Read {
                    write!(f, " value_len={value_len} value_hash={value_hash:016x}")?;
                }
                Ok(())
            }
            What::Fault { fault, duration_ms, crash } => {
                write!(f, "fault fault={fault} duration_ms={duration_ms}")?;
                if let Some(c) = crash {
                    write!(f, " unsynced_lost={} survived={} torn={}", c.lost, c.survived, c.torn)?;
                }
                Ok(())
            }
            What::FaultEnd { fault } => write!(f, "fault_end fault={fault}"),
            What::FaultSkipped { fault, reason } => write!(f, "fault_skipped fault={fault} reason={reason}"),
            What::OperatorVerdict { request, op, attempts, refused: None } => write!(f, "operator_request request={request} accepted op={op} attempts={attempts}"),
            What::OperatorVerdict { request, attempts, refused: Some(reason), .. } => write!(f, "operator_request request={request} REFUSED attempts={attempts} reason={reason}"),
            What::Triggered { event, node, count, delay_ms } => write!(f, "triggered event={event} node={node} count={count} delay_ms={delay_ms}"),
            What::Shed { client, op, arrived_us } => write!(f, "shed client=c{client} op={op:?} arrived={}.{:06}s (not started in time)", arrived_us / 1_000_000, arrived_us % 1_000_000),
            What::Heal => write!(f, "heal all links restored, paused nodes resumed, crashed nodes restarted"),
            What::Clock { node, drift_ppm } => write!(f, "clock node={node} drift_ppm={drift_ppm}"),
        }
    }
}

/// Simulated microseconds since the run started (0 outside a runtime).
pub fn sim_now_us() -> u64 {
    madsim::time::TimeHandle::try_current().map_or(0, |h| h.elapsed().as_micros() as u64)
}

struct Log {
    events: Vec<Event>,
    print: bool,
    /// The run's clock, taken at the first event recorded inside its runtime (the log is
    /// installed before the runtime exists): looking the handle up costs a thread-local access
    /// and two reference counts per event.
    time: Option<madsim::time::TimeHandle>,
}

thread_local! {
    static LOG: RefCell<Option<Log>> = const { RefCell::new(None) };
    /// The emptied history buffer of a run this thread finished ([`recycle`]), for its next
    /// run: a history grows to tens of thousands of events, and a fresh buffer per run costs
    /// the copies of its growth and the kernel's zeroing of the new pages.
    static SPARE: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

/// Add `what` to this thread's history at the current simulated time (dropped when no run is
/// collecting). The one way the harness's own events enter the history.
pub fn record(what: What) {
    LOG.with(|l| {
        if let Some(log) = l.borrow_mut().as_mut() {
            if log.time.is_none() {
                log.time = madsim::time::TimeHandle::try_current();
            }
            // `sim_now_us`, read from the kept handle.
            let t_us = log.time.as_ref().map_or(0, |h| h.elapsed().as_micros() as u64);
            let ev = Event { t_us, what };
            if log.print {
                println!("{}", ev.render());
            }
            log.events.push(ev);
        }
    });
}

thread_local! {
    /// Whether this thread's runs keep the frontends' routing detail ([`record_routing`]).
    static ROUTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keep (`true`) or leave out (`false`, the default) the frontends' routing detail in the
/// histories of this thread's next runs: `routed` (one event per attempt a frontend sends) and
/// `map_cached`. They are the bulk of a history when kept (about half again a sweep's CPU), and
/// only `report questions` reads them, so sweeps, explore and the tests run without them, with
/// the trace hashes they had before the events existed. Left out, they are still shown to the
/// observers (the role tracker and the event triggers), so a trigger on `routed` fires either way.
pub fn record_routing(on: bool) {
    ROUTING.with(|r| r.set(on));
}

fn routing_detail(e: &Sys) -> bool {
    matches!(e, Sys::Routed { .. } | Sys::MapCached { .. })
}

/// Start collecting this thread's history (control-plane events included, the routing detail
/// only under [`record_routing`]); with `print`, also print every event as it happens (the
/// `--trace` output). `observe` sees every control-plane event before it is recorded (the run
/// passes the role tracker's and the triggers' observers).
pub fn start(print: bool, observe: fn(&Sys)) {
    let spare = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let events = if spare.capacity() > 0 { spare } else { Vec::with_capacity(16 * 1024) };
    LOG.with(|l| *l.borrow_mut() = Some(Log { events, print, time: None }));
    let routing = ROUTING.with(|r| r.get());
    partmap::event::set_sink(Some(Box::new(move |e| {
        observe(&e);
        if routing || !routing_detail(&e) {
            record(What::Sys(e));
        }
    })));
}

/// Stop collecting and return the history.
pub fn finish() -> Vec<Event> {
    partmap::event::set_sink(None);
    LOG.with(|l| l.borrow_mut().take()).map_or_else(Vec::new, |l| l.events)
}

/// Hand a finished run's history back once nothing reads it any more: emptied, its buffer
/// serves this thread's next run ([`start`]), the larger of two kept.
pub fn recycle(mut events: Vec<Event>) {
    events.clear();
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if events.capacity() > s.capacity() {
            *s = events;
        }
    });
}

/// The hash of an empty trace.
pub const HASH_START: u64 = 0xcbf2_9ce4_8422_2325;

/// A word-at-a-time multiply-rotate hasher (FxHash's step): stable across runs and platforms
/// for a given build, and cheap enough for every event.
pub struct StableHasher(pub u64);

impl StableHasher {
    fn word(&mut self, w: u64) {
        self.0 = partmap::ids::mix_word(self.0, w);
    }
}

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = partmap::ids::mix_words(self.0, bytes);
    }
    fn write_u8(&mut self, i: u8) {
        self.word(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.word(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.word(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.word(i as u64);
    }
    fn write_isize(&mut self, i: isize) {
        self.word(i as u64);
    }
}

/// Fold one event (time and value) into a running hash.
pub fn hash_event(h: u64, ev: &Event) -> u64 {
    let mut s = StableHasher(h);
    ev.hash(&mut s);
    s.0
}

/// The trace hash of a whole history: equal for equal runs, and different as soon as one event,
/// value or timestamp differs.
pub fn trace_hash(events: &[Event]) -> u64 {
    events.iter().fold(HASH_START, hash_event)
}

/// Every key a client (the probe excluded) has invoked an append on so far in this thread's
/// history, in key order.
pub fn appended_keys() -> Vec<Key> {
    LOG.with(|l| {
        let l = l.borrow();
        // Distinct keys by a hash lookup (never iterated: no order leaks), then sorted once.
        let mut seen: rustc_hash::FxHashSet<&[u8]> = Default::default();
        let mut keys: Vec<&Key> = Vec::new();
        for ev in l.iter().flat_map(|l| l.events.iter()) {
            if let What::Invoke { op: ClientOp::Append, id, key, .. } = &ev.what {
                if id.client > 0 && seen.insert(key.as_slice()) {
                    keys.push(key);
                }
            }
        }
        keys.sort_unstable();
        keys.into_iter().cloned().collect()
    })
}
