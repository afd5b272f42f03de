//! The model's parts: its nodes, the packets in flight, the tasks of a server's flows, the
//! leader's state, the client's appends, the search's bounds and its actions. Types only; the
//! [`super::world::World`] that owns them applies the actions.

use partmap::handoff::{Flow, MoveFlow, ReshapeFlow, Reply, Step};
use partmap::ids::OpId;
use std::hash::{Hash, Hasher};
use partmap::ids::RangeId;
use partmap::map::{PartitionMap, RangeRow, Reshape, Transfer};
use partmap::msg::{Msg, RangeLoad, SessionView};
use partmap::server::{ServerCore, Then, Wait};
use crate::events::{Outcome, Sys, What};
use std::collections::{BTreeMap, VecDeque};

/// A node of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Node {
    /// `lock-1`.
    Authority,
    /// `store-1`.
    Store,
    /// `server-N`.
    Server(u32),
    /// Manager candidate `manager-N` (`Manager(1)` leads after the setup; `Manager(2)`, in
    /// configurations with a standby, is the standby).
    Manager(u32),
    /// The client (`client-1`).
    Client,
    /// The operator (the setup's move request).
    Operator,
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Authority => write!(f, "lock-1"),
            Node::Store => write!(f, "store-1"),
            Node::Server(n) => write!(f, "server-{n}"),
            Node::Manager(n) => write!(f, "manager-{n}"),
            Node::Client => write!(f, "client-1"),
            Node::Operator => write!(f, "operator"),
        }
    }
}

/// A message in flight: a request (`answer` false) from `from`, answered to `from` with the same
/// `token`, or that answer (`answer` true).
#[derive(Clone, Debug, Hash)]
pub struct Packet {
    /// The receiver.
    pub to: Node,
    /// The sender.
    pub from: Node,
    /// The call it belongs to.
    pub token: u64,
    /// Whether this is the answer.
    pub answer: bool,
    /// The message.
    pub msg: Msg,
    /// 0: the message as sent; `k` > 0: the copy made by the run's `k`-th
    /// [`Action::Duplicate`] (it names the task a server runs for it, apart from the
    /// original's).
    pub copy: u32,
    /// Marked slow by [`Action::Delay`]: exempt from [`Bounds::urgent`] (time may move while
    /// it is in flight), delivered or dropped later like any other.
    pub slow: bool,
}

/// What a server flow waits for, as the server driver (`server/node.rs`) would await it.
#[derive(Clone, Debug, Hash)]
pub enum Task {
    /// An answer to call `token`, or its timeout at `deadline_us`.
    Call {
        /// The call.
        token: u64,
        /// The flow's continuation.
        then: Then,
        /// When the call times out (µs).
        deadline_us: u64,
    },
    /// A sleep until `until_us`.
    Sleep {
        /// The continuation.
        then: Then,
        /// When it ends (µs).
        until_us: u64,
    },
    /// A wait on a held range, until [`ServerCore::poll`] says go on or `deadline_us`.
    Wait {
        /// The wait.
        wait: Wait,
        /// Its bound (µs; `None`: none).
        deadline_us: Option<u64>,
    },
    /// A spawned flow not started yet.
    Ready(Then),
    /// A request waiting for its detached flow `child` until `until_us`, then answered
    /// `otherwise`.
    Detached {
        /// The detached task.
        child: u64,
        /// The patience's end (µs).
        until_us: u64,
        /// The answer at the end of patience.
        otherwise: Msg,
    },
}

/// Whom a server flow answers when it ends.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum ReplyTo {
    /// Nobody (session upkeep, spawned flows).
    Nobody,
    /// A request from the network.
    Net {
        /// The caller.
        to: Node,
        /// The call.
        token: u64,
    },
    /// The request task that detached it.
    Parent(u64),
}

/// One task of a server.
#[derive(Clone, Debug, Hash)]
pub struct TaskSlot {
    /// Its id (per server).
    pub id: u64,
    /// What it waits for.
    pub task: Task,
    /// Whom it answers.
    pub reply_to: ReplyTo,
    /// Steps the task took so far: with the task's id, it names the calls and spawns of its
    /// next step, the same in every interleaving.
    pub steps: u32,
}

/// A name made of `parts`, the same in every interleaving that makes the same thing: tokens
/// and task ids are named by who made them and at which of their own steps, not by a global
/// counter, so two interleavings that differ only in the order of independent steps reach one
/// state.
pub(super) fn name(parts: &[u64]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// Whether `single_writer` reads this kind of event: only those are folded into the state's
/// history hash (the others stay in the history for the transcript). The list is the kinds
/// `check::single_writer` and the indexes it builds (`check::index`: `Maps::of`, the keys of
/// `Clients::of`) match on; an event of another kind changes no verdict, so two histories
/// that differ only in those are judged alike.
pub(super) fn judged(what: &What) -> bool {
    matches!(
        what,
        What::Sys(
            Sys::Activated { .. }
                | Sys::Admit { .. }
                | Sys::Deduplicated { .. }
                | Sys::Drained { .. }
                | Sys::Dropped { .. }
                | Sys::Effect { .. }
                | Sys::Fence { .. }
                | Sys::Fenced { .. }
                | Sys::LeaseExpired { .. }
                | Sys::MapCommit { .. }
                | Sys::MapRestored { .. }
                | Sys::ReadServed { .. }
                | Sys::Recovered { .. }
                | Sys::Renewed { .. }
        )
    )
}

/// One partition server: its core and its tasks, or down until a restart.
#[derive(Clone, Debug)]
pub struct ServerSlot {
    /// The core (memory: lost on crash).
    pub core: ServerCore,
    /// Its flows.
    pub tasks: Vec<TaskSlot>,
    /// Crashed: restarts at this time (µs).
    pub down_until: Option<u64>,
    /// Incarnations started.
    pub starts: u32,
}

/// What the leader waits for.
#[derive(Clone, Debug, Hash)]
pub enum Awaiting {
    /// Its lease (the round's start).
    Lease,
    /// The state (map and sessions).
    State,
    /// The planner's ops' compare-and-set.
    PlanCas,
    /// An open of this row.
    Open(Box<RangeRow>),
    /// The activation's compare-and-set.
    Activate,
    /// A flow's call.
    FlowCall,
    /// A flow's commit.
    FlowCommit,
    /// A server's load report (`GetLoad`), asked when the knobs reshape by load, as
    /// `manager::lead_once`'s `collect_loads` asks each live server (here one at a time).
    Load,
}

/// The flow the leader is driving: a planned move or a split (or merge), each the real pure
/// core of `partmap::handoff`, as `manager::lead_once` drives them one after the other.
#[derive(Clone, Debug, Hash)]
pub enum LeaderFlow {
    /// A planned move.
    Move(MoveFlow),
    /// A split or merge.
    Reshape(ReshapeFlow),
}

impl Flow for LeaderFlow {
    fn next(&mut self, reply: Option<Reply>, now_ms: u64) -> Step {
        match self {
            LeaderFlow::Move(f) => f.next(reply, now_ms),
            LeaderFlow::Reshape(f) => f.next(reply, now_ms),
        }
    }
}

/// A route the client may send an append on: `server` holds (or will hold) `range` at
/// `epoch`, for the keys in `[start, end)` (`end` `None`: unbounded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The server.
    pub server: u32,
    /// The range.
    pub range: u64,
    /// The range epoch the append names.
    pub epoch: u64,
    /// The first key of the range.
    pub start: Vec<u8>,
    /// The key past its last (`None`: unbounded).
    pub end: Option<Vec<u8>>,
}

impl Route {
    /// Whether `key` is in the route's range.
    pub fn holds(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_ref().is_none_or(|e| key < e.as_slice())
    }
}

/// A manager candidate as the model drives it (`manager::run`'s loop): rounds of the leader
/// lease, [`manager::plan`], [`MoveFlow`] and [`ReshapeFlow`].
#[derive(Clone, Debug, Hash)]
pub struct Leader {
    /// Its candidate number (`manager-N`; its requests and commits name it).
    pub candidate: u32,
    /// Its leader term (the one the round acts on).
    pub epoch: u64,
    /// The last term it was granted (0: none), as `manager::run`'s `last_term`: under mutation
    /// `authority-skips-leader-epoch` a round refused the lease leads on at this term.
    pub last_term: u64,
    /// Until when (µs) the round trusts its lease, as `lead_once`'s `valid_until`: the
    /// `AcquireLeader` request's sending time plus `lease_ms - lease_margin` (`u64::MAX`: the
    /// mutated deposed leader, which trusts its old term without end). Checked before every
    /// commit only when [`Bounds::standby_rounds`] > 0 (see `World::trusts_lease`).
    pub valid_until_us: u64,
    /// When the round's `AcquireLeader` was sent (µs).
    pub lease_sent_us: u64,
    /// The map version the next commit expects.
    pub version: u64,
    /// Rounds it may still start.
    pub rounds_left: u32,
    /// A round is running.
    pub busy: bool,
    /// The call it waits for: token, deadline (µs), what.
    pub pending: Option<(u64, u64, Awaiting)>,
    /// The round's map.
    pub map: Option<PartitionMap>,
    /// Opens still to do this round.
    pub opens: VecDeque<RangeRow>,
    /// Moves still to drive this round.
    pub moves: VecDeque<Transfer>,
    /// Splits and merges still to drive this round (after the moves, as `lead_once` does).
    pub reshapes: VecDeque<Reshape>,
    /// The move, split or merge being driven.
    pub flow: Option<LeaderFlow>,
    /// Calls made so far (they name its tokens).
    pub calls: u32,
    /// With [`Bounds::ticked`]: the next round starts at this time (µs), a tick after the last
    /// one ended, as `manager::run` sleeps `manager_tick_ms` between rounds.
    pub next_round_us: u64,
    /// The round's state (map and sessions) while its load reports are collected.
    pub planning: Option<(PartitionMap, Vec<SessionView>)>,
    /// Servers still to ask for a load report this round.
    pub load_asks: VecDeque<u32>,
    /// The round's load reports, by range (only the owner's at the map's epoch), which the
    /// planner and the round's splits and merges read.
    pub loads: BTreeMap<RangeId, RangeLoad>,
}

/// One of the client's appends.
#[derive(Clone, Debug, Hash)]
pub struct ClientAppend {
    /// Its id.
    pub id: OpId,
    /// Its key.
    pub key: Vec<u8>,
    /// `None`: not sent; `Some(token, None)`: sent; `Some(token, Some(outcome))`: answered.
    pub sent: Option<(u64, Option<Outcome>)>,
}

/// The bounds of one exploration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// BFS depth (actions after the setup).
    pub max_depth: u32,
    /// Unique states kept.
    pub max_states: u64,
    /// Messages in flight (a state with more is outside the model and not expanded).
    pub max_in_flight: usize,
    /// Messages dropped per run.
    pub max_drops: u32,
    /// Requests duplicated per run ([`Action::Duplicate`]).
    pub max_dups: u32,
    /// Messages delayed per run ([`Action::Delay`], offered only with [`Bounds::urgent`]): a
    /// message marked slow stays in flight while time moves, where no other message does.
    /// Without urgent time every message may already do so, and a delay would add nothing.
    pub max_delays: u32,
    /// Clock drift bound, parts per million (0: one exact clock). With `d` > 0 the
    /// authority's clock runs fast by `d` and every server's slow by `d` (the managers' stay
    /// exact): the corner of the bound where a lease holder trusts its lease longest after the
    /// authority expired it (the simulator's `clock_drift_worst_case` for the lease's two
    /// ends; DESIGN.md, "The model checker", says why the corner covers the bound).
    pub drift_ppm: u64,
    /// Server crashes per run.
    pub max_crashes: u32,
    /// Store crashes per run ([`Action::StoreCrash`]): the store's memory is lost, its
    /// unsynced writes lost (or with [`Bounds::torn_writes`] a prefix of them kept, the next
    /// one torn), and the core recovered from what is durable, as the simulator's harness
    /// crashes `store-1` (`run/world.rs`, `Disk::crash`, `Disk::crash_torn`). With at least 1
    /// the store's sync is a step of its own ([`Action::StoreSync`]); with 0 it is taken in the
    /// request's step, as before store crashes were built (no crash can come between).
    pub max_store_crashes: u32,
    /// A store crash may keep a prefix (0 to 8 records, as the simulator's `torn_writes` knob
    /// draws it) of the unsynced writes and tear the record after it (recovery drops it);
    /// off, a store crash loses every unsynced write (the simulator's default disk).
    pub torn_writes: bool,
    /// Pre-copy chunks corrupted per run ([`Action::Corrupt`]: the simulator's `corrupt`
    /// fault on the store's link to a move target; 0: none).
    pub max_corrupts: u32,
    /// Cuts per run: a server loses its link to the authority, both ways, for the rest of the
    /// run (every message on it lost, those in flight included).
    pub max_cuts: u32,
    /// Time horizon after the setup, ms: time does not advance past it.
    pub horizon_ms: u64,
    /// Leader rounds after the setup (of `manager-1`, the leader after the setup; in `depose`
    /// counting the round its setup starts and leaves in flight).
    pub rounds: u32,
    /// Rounds of the standby manager (`manager-2`) after the setup; 0: no standby (one
    /// manager, as every configuration but `depose`). With a standby each round checks its own
    /// lease before it writes, as `lead_once` does.
    pub standby_rounds: u32,
    /// The client's appends (`k1`, `k2`, ...), sent in order.
    pub appends: u64,
    /// Time advances only once no message is in flight and no server task can go on without
    /// it: every message is faster than every timer (a slower one is a drop or a cut).
    pub urgent: bool,
    /// The leader starts a round only on its tick: `manager_tick_ms` after its last round
    /// ended (as `manager::run` loops: a round, a sleep of a tick, the next round), and with
    /// `urgent` before time moves past that tick. Off: a round may start at any instant the
    /// leader is idle.
    pub ticked: bool,
    /// The client sends its next append only once the previous one was answered (one
    /// outstanding append, a closed loop). Off: it may send the next as soon as the previous
    /// was sent.
    pub closed_loop: bool,
    /// The reductions the search applies (all on by default; each can be switched off to
    /// measure what it saves).
    pub reduce: Reductions,
    /// Which states the bounded liveness check heals ([`Liveness`]; `--no-liveness`: none).
    pub liveness: Liveness,
}

/// Which states of the search the bounded liveness check (`super::live`) judges: from each,
/// once the faults heal, a state where every live range is active and accepts an append must
/// be reachable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// None (`--no-liveness`).
    Off,
    /// Every state where the search stops expanding: no action enabled (the rounds spent,
    /// the horizon reached, everything delivered), or the depth bound. The default.
    Ends,
    /// Every state the search keeps (`--liveness-every-state`).
    Every,
}

/// The search's reductions: each changes which states are told apart or which actions are
/// expanded, never a verdict within the bounds (DESIGN.md, "The model checker",
/// Reductions, says why for each). Off, the search is the plain one it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reductions {
    /// The persistent set of urgent mode: while an answer to the leader or the client is in
    /// flight, only its delivery and its drop are expanded (applies only with
    /// [`Bounds::urgent`]). Off (`--no-por`): every enabled action is expanded.
    pub por: bool,
    /// The history's folds: only the kinds `single_writer` reads, without their times, a
    /// server's session events in a fold of their own. Off (`--no-fold`): the state's key
    /// holds the whole history, every event with its time, in order.
    pub fold: bool,
    /// The network as a multiset and each server's tasks as a set (sorted in the key). Off
    /// (`--no-multiset`): in the order they were sent and made, so two interleavings that
    /// send the same messages in another order are two states.
    pub multiset: bool,
}

impl Reductions {
    /// Every reduction on: the search's default.
    pub const ALL: Reductions = Reductions { por: true, fold: true, multiset: true };
}

/// One step the search can take.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Deliver the message at this index of the network.
    Deliver(usize),
    /// Drop it.
    Drop(usize),
    /// Copy the request at this index of the network: the copy stays in flight, delivered
    /// (or dropped) later as well, like the original. Only requests: a copy of an answer
    /// changes nothing (its caller takes the first answer to its token, and the other is then
    /// no one's; `World::collect_stale_answers` removes it).
    Duplicate(usize),
    /// Mark the message at this index slow ([`Packet::slow`]): time may move while it is in
    /// flight, as a real network holds a message across timers (at most
    /// [`Bounds::max_delays`] per run).
    Delay(usize),
    /// Flip one bit of the pre-copy chunk at this index of the network (an answer of the
    /// store to a server, `stream_read` flagged `precopy`, whose last record has a payload), as
    /// the simulator's `corrupt` fault does to every such chunk on the store's link to a move
    /// target ([`partmap::seam::net::corrupt_precopy`], the same function). At most
    /// [`Bounds::max_corrupts`] per run; a chunk already flipped is not flipped back.
    Corrupt(usize),
    /// Run a server task that can go on (`timed_out`: its deadline passed, for a wait).
    Task {
        /// The server.
        server: u32,
        /// The task.
        task: u64,
        /// Whether the wait's bound passed (only for waits).
        timed_out: bool,
    },
    /// Manager `manager-N` starts a round (asks the authority for the leader lease).
    StartRound(u32),
    /// Manager `manager-N`'s pending call times out.
    LeaderTimeout(u32),
    /// The client sends its next append to `server` for `range` at `epoch`.
    SendAppend {
        /// The server.
        server: u32,
        /// The range named.
        range: u64,
        /// The epoch named.
        epoch: u64,
    },
    /// A server crashes (memory lost).
    Crash(u32),
    /// A crashed server restarts.
    Restart(u32),
    /// A server that owns a range in the authority's map loses its link to the authority, both
    /// ways, for the rest of the run.
    Cut(u32),
    /// The store's oldest pending disk sync ends: every record written before it began is
    /// durable, and the request that waited for it goes on (its event, its answer). Only with
    /// [`Bounds::max_store_crashes`] > 0; the syncs end in the order they began, as the
    /// simulator's do (each takes `disk_sync_ms`).
    StoreSync,
    /// The store crashes: memory and pending syncs lost (their requests are never answered),
    /// of the unsynced writes the first `keep` survive (a torn write: only with
    /// [`Bounds::torn_writes`]; 0: all lost), and requests delivered to it until
    /// [`Action::StoreRestart`] are lost.
    StoreCrash {
        /// Unsynced records that reached the disk anyway.
        keep: usize,
    },
    /// The crashed store restarts: its core recovered (`StoreCore::recover`) from the durable
    /// records.
    StoreRestart,
    /// Time jumps to the next deadline.
    Advance,
}

/// A store request waiting for its disk sync ([`Action::StoreSync`]).
#[derive(Clone, Debug)]
pub struct PendingSync {
    /// The caller, answered once the sync is done.
    pub to: Node,
    /// The call.
    pub token: u64,
    /// What the core does once synced.
    pub then: partmap::store::core::Then,
    /// Records written to the store's disk before it began (a count over the disk's life, as
    /// `Disk::sync` marks it): the sync makes them durable.
    pub mark: u64,
}

/// The store's disk as the simulator's `Disk` keeps it: the durable records, and those
/// written but not synced (lost or torn by a crash).
#[derive(Clone, Debug, Default)]
pub struct StoreDisk {
    /// Durable records, in write order: what a restart recovers from.
    pub durable: Vec<partmap::store::core::StoreRecord>,
    /// Written, not yet synced, in write order.
    pub unsynced: Vec<partmap::store::core::StoreRecord>,
    /// Records ever written (durable, unsynced and lost), for the syncs' marks.
    pub written: u64,
    /// Records ever made durable or lost: `written - unsynced.len()`.
    pub settled: u64,
    /// The requests waiting for a sync, oldest first.
    pub syncs: VecDeque<PendingSync>,
    /// Crashed, until [`Action::StoreRestart`].
    pub down: bool,
    /// Store crashes so far.
    pub crashes: u32,
}

impl StoreDisk {
    /// The pending syncs as the state's key holds them: requester, token, what follows, and
    /// the mark as the records it still covers (counted from what is settled, not the disk's
    /// lifetime count, so two histories that settled alike share a key).
    pub fn pending_syncs(&self) -> Vec<(Node, u64, &partmap::store::core::Then, u64)> {
        self.syncs.iter().map(|s| (s.to, s.token, &s.then, s.mark.saturating_sub(self.settled))).collect()
    }
}
