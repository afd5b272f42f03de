//! The event contract: every observable step of the control plane is one [`Event`] value,
//! emitted through the one function [`emit`].
//!
//! The harness installs a sink ([`set_sink`]) on the thread that runs a simulation; it stamps
//! each event with the simulated time, keeps it in the run's history, renders the readable trace
//! from it (`Display`) and folds it into the trace hash (`Hash`). Checkers match on the variants:
//! keys are bytes ([`Key`]), ranges, epochs and servers their typed ids, maps whole
//! [`PartitionMap`] values. Nothing is parsed back from text. Without a sink (unit tests, a node
//! run outside the harness) events are dropped.
//!
//! Decision (issue 12): a typed enum replaces flat `tracing` fields so that a checker cannot
//! misread a key's rendering or a field that an event forgot to carry; the trace is a view of
//! the history, not its source.

use crate::ids::{show_key, Epoch, Key, OpId, RangeId, ServerId};
use crate::map::{PartitionMap, RangeState, SharedMap, ReshapeKind, Strategy, TransferPhase};
use crate::msg::{Refusal, StreamDigest};
use std::cell::RefCell;
use std::fmt;
use std::net::IpAddr;

/// A client operation, as servers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientOp {
    /// An append.
    Append,
    /// A read.
    Read,
}

impl ClientOp {
    /// `append` or `read`.
    pub fn name(self) -> &'static str {
        match self {
            ClientOp::Append => "append",
            ClientOp::Read => "read",
        }
    }
}

/// One durable record the authority restored from its disk when it (re)started.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Restored {
    /// A committed map version, by the leader term that wrote it (0: an operator's request).
    Map {
        /// The map's version.
        version: u64,
        /// The committing leader term.
        leader_epoch: u64,
        /// Its rows, retired ones included.
        rows: usize,
    },
    /// A granted leader term.
    LeaderTerm {
        /// The manager candidate.
        candidate: u32,
        /// The term.
        epoch: u64,
    },
    /// A started server session.
    Session {
        /// The server.
        server: ServerId,
        /// The session.
        session: u64,
    },
    /// An expired server session.
    SessionExpired {
        /// The server.
        server: ServerId,
        /// The session.
        session: u64,
    },
}

/// Every event of the control plane. Field units: offsets and lengths in records, `bytes` in
/// payload bytes, times in ms of the emitting node's clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A map version became durable at the authority and current (a compare-and-set by the
    /// leader of term `leader_epoch`, or 0 for an operator's request). `map` is the whole map.
    MapCommit {
        /// 0 for an operator's request.
        leader_epoch: u64,
        /// The manager whose compare-and-set it was (0 for an operator's request).
        manager: u32,
        /// The committed map (shared with the authority's copy of that version).
        map: SharedMap,
    },
    /// The authority (re)started and made `map` current, restored from its disk: the version a
    /// crash may have made durable without any `MapCommit` (a torn write, issue 12).
    MapRestored {
        /// The term that committed it (0: operator, or no map yet).
        leader_epoch: u64,
        /// The restored map.
        map: SharedMap,
    },
    /// The authority refused a compare-and-set of the map: nothing was written.
    CasRefused {
        /// The leader term the request carried.
        leader_epoch: u64,
        /// The version it expected.
        expected_version: u64,
        /// The map's version.
        version: u64,
        /// Why (stale leader epoch, version mismatch, an op that does not apply).
        reason: String,
    },
    /// A committed batch finished or aborted a split or merge.
    Reshaped {
        /// Split or merge.
        kind: ReshapeKind,
        /// Committed (children live) or aborted (parents roll back).
        committed: bool,
        /// Whether the parents had been paused.
        paused: bool,
        /// The parents, in key order.
        parents: Vec<RangeId>,
        /// The children, in key order.
        children: Vec<RangeId>,
        /// Why it aborted ("" when committed).
        error: String,
    },
    /// A manager candidate got the leader lease in a new term.
    Leader {
        /// The candidate.
        manager: u32,
        /// The term.
        leader_epoch: u64,
    },
    /// The authority recovered with `leader_epoch` as its latest term, held by `manager`.
    LeaderRecovered {
        /// The holder.
        manager: u32,
        /// The term.
        leader_epoch: u64,
    },
    /// `node` (the authority) restored durable record number `index` of its log.
    Restored {
        /// `lock-1`.
        node: &'static str,
        /// Position in the log, from 0.
        index: usize,
        /// What it restored.
        record: Restored,
    },
    /// A node with a disk read it back after a (re)start: `records` durable records.
    Recovered {
        /// `lock-1` or `store-1`.
        node: &'static str,
        /// Durable records found.
        records: usize,
    },
    /// An fsync of `node`'s disk completed and made `records` more records durable.
    Synced {
        /// `lock-1` or `store-1`.
        node: &'static str,
        /// Records made durable by this sync (0 syncs are not reported).
        records: usize,
    },
    /// A server fenced the stream, loaded it and serves `range` at `epoch`: `records` in all
    /// (lineage included), `stream` of them from the range's own stream.
    Activated {
        /// The server.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// Its epoch.
        epoch: Epoch,
        /// Records loaded in all.
        records: usize,
        /// Records loaded from the range's own stream.
        stream: usize,
    },
    /// A server stopped serving (or gave up loading) `range` for `reason`.
    Dropped {
        /// The server.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// The epoch it held.
        epoch: Epoch,
        /// `fenced`, `moved`, `session_expired`, `load_refused: ...`
        reason: String,
    },
    /// A server passed the authority check for an append and admitted its effect.
    Admit {
        /// The server.
        server: ServerId,
        /// Its session at the authority.
        session: u64,
        /// The range.
        range: RangeId,
        /// The epoch it serves at.
        epoch: Epoch,
        /// The key.
        key: Key,
        /// The append's idempotency id.
        id: OpId,
    },
    /// The store made an append durable at `offset` of `stream`.
    Effect {
        /// The stream (range id).
        stream: RangeId,
        /// The writing server.
        server: ServerId,
        /// The record's epoch.
        epoch: Epoch,
        /// The key.
        key: Key,
        /// The append's id.
        id: OpId,
        /// Offset in the stream, records.
        offset: u64,
        /// Payload bytes.
        bytes: usize,
    },
    /// A server pointed a request for `range` at `epoch` to `to` at `new_epoch` (a move).
    Redirected {
        /// The server.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// The request's epoch.
        epoch: Epoch,
        /// The key.
        key: Key,
        /// The new owner.
        to: ServerId,
        /// Its epoch.
        new_epoch: Epoch,
    },
    /// The source of a move stopped admitting appends to `range` (the pause starts).
    Paused {
        /// The source.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// Its epoch.
        epoch: Epoch,
    },
    /// The paused source drained every admitted effect; `digest` is its final stream.
    Drained {
        /// The source.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// Its epoch.
        epoch: Epoch,
        /// Records, bytes and checksum of the stream.
        digest: StreamDigest,
    },
    /// A move target finished pre-copy round `round`, copying `bytes` payload bytes.
    Precopied {
        /// The target.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// The target's epoch.
        epoch: Epoch,
        /// Round number, from 1.
        round: u32,
        /// Payload bytes copied in the round.
        bytes: u64,
    },
    /// A move target's copy did not match the source's digest (it will not serve).
    Diverged {
        /// The target.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// The target's epoch.
        epoch: Epoch,
        /// The mismatch.
        error: String,
    },
    /// A move target verified its copy, fenced the stream and serves `range` at `epoch`.
    Handoff {
        /// The target.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// The new epoch.
        epoch: Epoch,
        /// How it copied.
        strategy: Strategy,
        /// Payload bytes copied before the pause.
        precopy_bytes: u64,
        /// Payload bytes copied during the pause.
        tail_bytes: u64,
        /// Payload bytes in all at the cutover.
        bytes: u64,
    },
    /// A server refused a client's operation before admitting it.
    Refused {
        /// The server.
        server: ServerId,
        /// The range named.
        range: RangeId,
        /// The epoch named.
        epoch: Epoch,
        /// The key.
        key: Key,
        /// Append or read.
        op: ClientOp,
        /// Why.
        reason: Refusal,
    },
    /// A server refused a manager's command from leader term `leader_epoch`, older than `seen`.
    StaleCommand {
        /// The server.
        server: ServerId,
        /// The command (`open`, `pause`, ...).
        command: &'static str,
        /// Its term.
        leader_epoch: u64,
        /// The newest term the server has seen.
        seen: u64,
    },
    /// A manager's `command` (`pause` or `release`) of `range` at `epoch` reached a server that
    /// holds the range neither at that epoch nor at a newer one: the range was lost here (a
    /// crash, an expired session, a failover) or the command outlived its flow in the network.
    /// Nothing changes here. Had the range come back to this server at a newer epoch first, the
    /// command would have been stale (goal `stale_range_command`); the harness counts this one
    /// as goal `command_missed`.
    CommandMissed {
        /// The server.
        server: ServerId,
        /// The range the command names.
        range: RangeId,
        /// The epoch it names.
        epoch: Epoch,
        /// `pause` or `release`.
        command: &'static str,
    },
    /// The store answered an append whose id was already in `stream` with the earlier offset.
    Deduplicated {
        /// The stream.
        stream: RangeId,
        /// The writing server.
        server: ServerId,
        /// The retry's epoch.
        epoch: Epoch,
        /// The key.
        key: Key,
        /// The append's id.
        id: OpId,
        /// The earlier record's offset.
        offset: u64,
    },
    /// The store refused an append: the stream's fence is above the record's epoch.
    Fenced {
        /// The stream.
        stream: RangeId,
        /// The writing server.
        server: ServerId,
        /// The record's epoch.
        epoch: Epoch,
        /// The fence.
        fence: Epoch,
        /// The append's id.
        id: OpId,
    },
    /// The store raised the fence of `stream` to `epoch`; `length` records are sealed below it.
    Fence {
        /// The stream.
        stream: RangeId,
        /// The new fence.
        epoch: Epoch,
        /// Sealed length, records.
        length: usize,
    },
    /// A server learned its session is over (renewal refused), or the authority replaced a
    /// restarted server's live session.
    SessionExpired {
        /// The server.
        server: ServerId,
        /// The session that ended.
        session: u64,
    },
    /// A server's renewal was answered: `ok` = extended, trusted until `valid_until_ms`.
    Renewed {
        /// The server.
        server: ServerId,
        /// Its session.
        session: u64,
        /// Extended or not.
        ok: bool,
        /// Lease end by the server's clock, ms.
        valid_until_ms: u64,
    },
    /// A server answered a read (strong, or `bounded` staleness).
    ReadServed {
        /// The server.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// Its epoch.
        epoch: Epoch,
        /// The key.
        key: Key,
        /// A bounded-staleness read.
        bounded: bool,
    },
    /// The authority expired a server's session (durable; the manager may now move its ranges).
    LeaseExpired {
        /// The server.
        server: ServerId,
        /// The session.
        session: u64,
    },
    /// A message the network seam held (a targeted `delay_next` fault) left for its receiver.
    HeldDelivered {
        /// Sender's address.
        from: IpAddr,
        /// Receiver's address.
        to: IpAddr,
        /// The message kind (`store_append`, `pause`, ...).
        msg: &'static str,
    },
    /// A server reloading `range` at `epoch` found that the store's digest of the prefix it
    /// meant to keep differs from the content it applied (the store lost records it had
    /// acknowledged, or holds others at their offsets): it loads the whole stream instead.
    PrefixDiverged {
        /// The server.
        server: ServerId,
        /// The range.
        range: RangeId,
        /// The epoch it reloads at.
        epoch: Epoch,
        /// The digest of the records applied at the server.
        held: StreamDigest,
        /// The store's digest of as many records (fewer if its stream is shorter).
        store: StreamDigest,
    },
    /// The leader gave up its lease of term `leader_epoch` (a leader transfer): no manager
    /// leads until a candidate is granted the next term.
    LeaderReleased {
        /// The manager that led.
        manager: u32,
        /// The term it gave up.
        leader_epoch: u64,
    },
    /// A frontend's cached map became version `version` (a read of the map answered a newer
    /// one than it held). The frontend routes on it from now on.
    MapCached {
        /// The frontend (`frontend-N`).
        frontend: u32,
        /// The map version it now holds.
        version: u64,
    },
    /// A frontend sent attempt `attempt` (from 0) of a client's operation to `to`, along the
    /// route its cached map (version `version`) or a refusal's hint gave: `range` at `epoch`.
    /// `after` is why the attempt before it did not answer the client.
    Routed {
        /// The frontend (`frontend-N`).
        frontend: u32,
        /// Append or read.
        op: ClientOp,
        /// The append's idempotency id (`None` for a read: the frontend is not told its id).
        id: Option<OpId>,
        /// The range routed to.
        range: RangeId,
        /// The epoch named.
        epoch: Epoch,
        /// The server.
        to: ServerId,
        /// The version of the frontend's cached map when it sent.
        version: u64,
        /// The attempt, from 0 (attempts that found no owner in the map sent nothing).
        attempt: u32,
        /// What ended the attempt before it.
        after: Retry,
    },
}

/// Why a frontend made another attempt of a client's operation (the fate of the one before).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Retry {
    /// None: this is the first attempt.
    First,
    /// The server refused the attempt before admitting it.
    Refused(Refusal),
    /// No answer in time (or a failed call).
    NoAnswer,
    /// The server admitted the append but the store's outcome was unknown.
    Unknown,
    /// The cached map had no active owner for the key: nothing was sent.
    NoOwner,
}

impl Retry {
    /// `first`, `no_answer`, `unknown`, `no_owner`, or the refusal's kind (`moved`,
    /// `not_owner`, `stale_epoch`, `not_ready`, `lease_expired`, `key_out_of_range`,
    /// `in_flight`, `fenced`, `too_stale`).
    pub fn kind(&self) -> &'static str {
        match self {
            Retry::First => "first",
            Retry::NoAnswer => "no_answer",
            Retry::Unknown => "unknown",
            Retry::NoOwner => "no_owner",
            Retry::Refused(r) => match r {
                Refusal::NotOwner => "not_owner",
                Refusal::StaleEpoch { .. } => "stale_epoch",
                Refusal::NotReady => "not_ready",
                Refusal::LeaseExpired => "lease_expired",
                Refusal::KeyOutOfRange => "key_out_of_range",
                Refusal::InFlight => "in_flight",
                Refusal::Fenced { .. } => "fenced",
                Refusal::Moved { .. } => "moved",
                Refusal::TooStale { .. } => "too_stale",
            },
        }
    }
}

/// Where [`emit`] sends events: the harness's collector.
pub type Sink = Box<dyn FnMut(Event)>;

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Report `event` to the sink installed on this thread, if any. The one way events leave the
/// control plane.
pub fn emit(event: Event) {
    SINK.with(|s| {
        if let Some(f) = s.borrow_mut().as_mut() {
            f(event);
        }
    });
}

/// Install `sink` for this thread's events (`None` removes it); returns the previous one. The
/// sink must not emit events itself.
pub fn set_sink(sink: Option<Sink>) -> Option<Sink> {
    SINK.with(|s| std::mem::replace(&mut *s.borrow_mut(), sink))
}

fn state_name(s: RangeState) -> &'static str {
    match s {
        RangeState::Preparing => "preparing",
        RangeState::Active => "active",
        RangeState::Paused => "paused",
        RangeState::Retired => "retired",
    }
}

fn phase_name(p: &TransferPhase) -> &'static str {
    match p {
        TransferPhase::Copying => "copying",
        TransferPhase::Paused => "paused",
        TransferPhase::Aborted(_) => "aborted",
    }
}

fn end_name(end: &Option<Key>) -> String {
    end.as_ref().map_or("~".to_string(), |e| show_key(e))
}

/// The rows and journals of `map`, one indented line each (part of a map event's rendering).
fn render_map(f: &mut fmt::Formatter<'_>, map: &PartitionMap) -> fmt::Result {
    for t in map.transfers.values() {
        let error = if let TransferPhase::Aborted(e) = &t.phase { e.as_str() } else { "" };
        write!(f, "\n    map_transfer range={} from={} from_epoch={} to={} epoch={} strategy={} phase={} error={}",
            t.range.0, t.from.0 .0, t.from_epoch.0, t.to.0 .0, t.epoch.0, t.strategy.name(), phase_name(&t.phase), error)?;
    }
    for (first, r) in &map.reshapes {
        for c in &r.children {
            write!(f, "\n    map_child first={} reshape={} range={} start={} end={} owner={} epoch={} phase={}",
                first.0, r.kind.name(), c.id.0, show_key(&c.start), end_name(&c.end), c.owner.0 .0, c.epoch.0, phase_name(&r.phase))?;
        }
    }
    for row in map.rows.values() {
        write!(f, "\n    map_row range={} start={} end={} owner={} epoch={} state={}",
            row.id.0, show_key(&row.start), end_name(&row.end), row.owner.map_or(0, |s| s.0), row.epoch.0, state_name(row.state))?;
    }
    Ok(())
}

impl Event {
    /// Every name [`Event::name`] returns, in declaration order: what a scenario's event
    /// trigger may name (`faults.schedule[i].on.event`).
    pub const NAMES: &'static [&'static str] = &["map_commit", "map_restored", "cas_refused", "reshaped", "leader", "leader_recovered", "restored", "recovered", "synced", "activated", "dropped", "admit", "effect", "redirected", "paused", "drained", "precopied", "diverged", "handoff", "refused", "stale_command", "command_missed", "deduplicated", "fenced", "fence", "session_expired", "renewed", "read_served", "lease_expired", "held_delivered", "prefix_diverged", "leader_released", "map_cached", "routed"];

    /// The event's name in the trace (`effect`, `admit`, `map_commit`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Event::MapCommit { .. } => "map_commit",
            Event::MapRestored { .. } => "map_restored",
            Event::CasRefused { .. } => "cas_refused",
            Event::Reshaped { .. } => "reshaped",
            Event::Leader { .. } => "leader",
            Event::LeaderRecovered { .. } => "leader_recovered",
            Event::Restored { .. } => "restored",
            Event::Recovered { .. } => "recovered",
            Event::Synced { .. } => "synced",
            Event::Activated { .. } => "activated",
            Event::Dropped { .. } => "dropped",
            Event::Admit { .. } => "admit",
            Event::Effect { .. } => "effect",
            Event::Redirected { .. } => "redirected",
            Event::Paused { .. } => "paused",
            Event::Drained { .. } => "drained",
            Event::Precopied { .. } => "precopied",
            Event::Diverged { .. } => "diverged",
            Event::Handoff { .. } => "handoff",
            Event::Refused { .. } => "refused",
            Event::StaleCommand { .. } => "stale_command",
            Event::CommandMissed { .. } => "command_missed",
            Event::Deduplicated { .. } => "deduplicated",
            Event::Fenced { .. } => "fenced",
            Event::Fence { .. } => "fence",
            Event::SessionExpired { .. } => "session_expired",
            Event::Renewed { .. } => "renewed",
            Event::ReadServed { .. } => "read_served",
            Event::LeaseExpired { .. } => "lease_expired",
            Event::HeldDelivered { .. } => "held_delivered",
            Event::PrefixDiverged { .. } => "prefix_diverged",
            Event::LeaderReleased { .. } => "leader_released",
            Event::MapCached { .. } => "map_cached",
            Event::Routed { .. } => "routed",
        }
    }
}

impl fmt::Display for Event {
    /// `effect stream=3 server=2 epoch=7 key=k000012 client=1 seq=4 offset=9 bytes=16`; a map
    /// event adds one indented line per journal entry and row.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name())?;
        match self {
            Event::MapCommit { leader_epoch, manager, map } => {
                let by = if *leader_epoch == 0 { "operator".to_string() } else { format!("manager-{manager}") };
                write!(f, " version={} leader_epoch={leader_epoch} by={by} rows={} last_epoch={}", map.version, map.rows.len(), map.last_epoch)?;
                render_map(f, map)
            }
            Event::MapRestored { leader_epoch, map } => {
                write!(f, " version={} leader_epoch={leader_epoch} rows={} last_epoch={}", map.version, map.rows.len(), map.last_epoch)?;
                render_map(f, map)
            }
            Event::CasRefused { leader_epoch, expected_version, version, reason } => {
                write!(f, " leader_epoch={leader_epoch} expected_version={expected_version} version={version} reason={reason}")
            }
            Event::Reshaped { kind, committed, paused, parents, children, error } => {
                let ids = |v: &[RangeId]| v.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",");
                write!(f, " reshape={} outcome={} paused={paused} parents={} children={} error={error}", kind.name(),
                    if *committed { "committed" } else { "aborted" }, ids(parents), ids(children))
            }
            Event::Leader { manager, leader_epoch } | Event::LeaderRecovered { manager, leader_epoch } | Event::LeaderReleased { manager, leader_epoch } => write!(f, " manager={manager} leader_epoch={leader_epoch}"),
            Event::Restored { node, index, record } => {
                write!(f, " node={node} index={index} ")?;
                match record {
                    Restored::Map { version, leader_epoch, rows } => write!(f, "record=map version={version} leader_epoch={leader_epoch} rows={rows}"),
                    Restored::LeaderTerm { candidate, epoch } => write!(f, "record=leader_term manager={candidate} leader_epoch={epoch}"),
                    Restored::Session { server, session } => write!(f, "record=session server={} session={session}", server.0),
                    Restored::SessionExpired { server, session } => write!(f, "record=session_expired server={} session={session}", server.0),
                }
            }
            Event::Recovered { node, records } | Event::Synced { node, records } => write!(f, " node={node} records={records}"),
            Event::Activated { server, range, epoch, records, stream } => {
                write!(f, " server={} range={} epoch={} records={records} stream={stream}", server.0, range.0, epoch.0)
            }
            Event::Dropped { server, range, epoch, reason } => write!(f, " server={} range={} epoch={} reason={reason}", server.0, range.0, epoch.0),
            Event::Admit { server, session, range, epoch, key, id } => write!(
                f,
                " server={} session={session} range={} epoch={} key={} client={} seq={}",
                server.0, range.0, epoch.0, show_key(key), id.client, id.seq
            ),
            Event::Effect { stream, server, epoch, key, id, offset, bytes } => write!(
                f,
                " stream={} server={} epoch={} key={} client={} seq={} offset={offset} bytes={bytes}",
                stream.0, server.0, epoch.0, show_key(key), id.client, id.seq
            ),
            Event::Redirected { server, range, epoch, key, to, new_epoch } => write!(
                f,
                " server={} range={} epoch={} key={} to={} new_epoch={}",
                server.0, range.0, epoch.0, show_key(key), to.0, new_epoch.0
            ),
            Event::Paused { server, range, epoch } => write!(f, " server={} range={} epoch={}", server.0, range.0, epoch.0),
            Event::Drained { server, range, epoch, digest } => write!(
                f,
                " server={} range={} epoch={} records={} bytes={} checksum={}",
                server.0, range.0, epoch.0, digest.records, digest.bytes, digest.checksum
            ),
            Event::Precopied { server, range, epoch, round, bytes } => write!(f, " server={} range={} epoch={} round={round} bytes={bytes}", server.0, range.0, epoch.0),
            Event::Diverged { server, range, epoch, error } => write!(f, " server={} range={} epoch={} error={error}", server.0, range.0, epoch.0),
            Event::Handoff { server, range, epoch, strategy, precopy_bytes, tail_bytes, bytes } => write!(
                f,
                " server={} range={} epoch={} strategy={} precopy_bytes={precopy_bytes} tail_bytes={tail_bytes} bytes={bytes}",
                server.0, range.0, epoch.0, strategy.name()
            ),
            Event::Refused { server, range, epoch, key, op, reason } => write!(
                f,
                " server={} range={} epoch={} key={} op={} reason={reason:?}",
                server.0, range.0, epoch.0, show_key(key), op.name()
            ),
            Event::StaleCommand { server, command, leader_epoch, seen } => write!(f, " server={} command={command} leader_epoch={leader_epoch} seen={seen}", server.0),
            Event::CommandMissed { server, range, epoch, command } => write!(f, " server={} range={} epoch={} command={command}", server.0, range.0, epoch.0),
            Event::Deduplicated { stream, server, epoch, key, id, offset } => write!(
                f,
                " stream={} server={} epoch={} key={} client={} seq={} offset={offset}",
                stream.0, server.0, epoch.0, show_key(key), id.client, id.seq
            ),
            Event::Fenced { stream, server, epoch, fence, id } => write!(
                f,
                " stream={} server={} epoch={} fence={} client={} seq={}",
                stream.0, server.0, epoch.0, fence.0, id.client, id.seq
            ),
            Event::Fence { stream, epoch, length } => write!(f, " stream={} epoch={} length={length}", stream.0, epoch.0),
            Event::SessionExpired { server, session } | Event::LeaseExpired { server, session } => write!(f, " server={} session={session}", server.0),
            Event::Renewed { server, session, ok, valid_until_ms } => write!(f, " server={} session={session} ok={ok} valid_until_ms={valid_until_ms}", server.0),
            Event::ReadServed { server, range, epoch, key, bounded } => write!(
                f,
                " server={} range={} epoch={} key={} level={}",
                server.0, range.0, epoch.0, show_key(key), if *bounded { "bounded" } else { "strong" }
            ),
            Event::HeldDelivered { from, to, msg } => write!(f, " from={from} to={to} msg={msg}"),
            Event::PrefixDiverged { server, range, epoch, held, store } => write!(
                f,
                " server={} range={} epoch={} held_records={} held_checksum={} store_records={} store_checksum={}",
                server.0, range.0, epoch.0, held.records, held.checksum, store.records, store.checksum
            ),
            Event::MapCached { frontend, version } => write!(f, " frontend={frontend} version={version}"),
            Event::Routed { frontend, op, id, range, epoch, to, version, attempt, after } => {
                write!(f, " frontend={frontend} op={}", op.name())?;
                if let Some(id) = id {
                    write!(f, " client={} seq={}", id.client, id.seq)?;
                }
                write!(f, " range={} epoch={} to={} version={version} attempt={attempt} after={}", range.0, epoch.0, to.0, after.kind())
            }
        }
    }
}

/// The reshapes that a commit of `ops` on `before` ended (committed or aborted), as events:
/// one per split or merge, in the order the ops name them.
pub fn reshape_outcomes(before: &PartitionMap, ops: &[crate::map::MapOp]) -> Vec<Event> {
    use crate::map::MapOp;
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for op in ops {
        let (r, committed, error) = match op {
            MapOp::CommitReshape { first, .. } => (before.reshapes.get(first), true, String::new()),
            MapOp::AbortReshape { first, error } => (before.reshapes.get(first), false, error.clone()),
            MapOp::Assign { range, .. } => {
                // A failover or rollback of a parent drops its split or merge.
                let r = before.reshape_of(*range).filter(|r| !matches!(r.phase, TransferPhase::Aborted(_)));
                (r, false, format!("{range} reassigned"))
            }
            _ => continue,
        };
        let Some(r) = r.filter(|r| !seen.contains(&r.parents[0].0)) else { continue };
        seen.push(r.parents[0].0);
        out.push(Event::Reshaped {
            kind: r.kind,
            committed,
            paused: r.phase == TransferPhase::Paused,
            parents: r.parents.iter().map(|(p, _)| *p).collect(),
            children: r.children.iter().map(|c| c.id).collect(),
            error,
        });
    }
    out
}
