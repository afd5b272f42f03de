//! Every message exchanged between nodes, as one enum.
//!
//! Messages are passed as typed values; [`Msg::wire_bytes`] gives the size the network seam
//! charges against bandwidth (payload bytes; framing is added by the seam).

use crate::ids::{Epoch, Key, OpId, RangeId, ServerId};
use crate::map::{MapError, MapOp, PartitionMap, RangeRow, SharedMap, Strategy};
use bytes::Bytes;

/// One appended record in a stream at the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// Epoch of the owner that wrote it.
    pub epoch: Epoch,
    /// Idempotency id of the append.
    pub id: OpId,
    /// The object key.
    pub key: Key,
    /// The appended bytes: a shared buffer, so the copies a record makes on its way (the
    /// frontend's retries, the store's log and every read of the stream, a server's acked and
    /// pre-copied records) share one allocation instead of copying the payload at each hop.
    pub bytes: Bytes,
    /// Simulated bulk payload carried on top of `bytes`: a size, not a buffer. It costs
    /// transmission time on every link and counts in digests and load reports, so ranges of
    /// gigabytes can be moved and reopened without allocating them.
    /// 0 for ordinary records.
    pub bulk: u64,
}

impl Record {
    /// Size of the record on the wire, in bytes (bulk included).
    pub fn wire_bytes(&self) -> u64 {
        (24 + self.key.len() + self.bytes.len()) as u64 + self.bulk
    }

    /// Payload bytes: the real ones plus the simulated bulk.
    pub fn payload_bytes(&self) -> u64 {
        self.bytes.len() as u64 + self.bulk
    }
}

/// A summary of a stream prefix: how many records, how many payload bytes, and a checksum over
/// them in stream order. The source of a move reports it when paused; the target checks its copy
/// against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamDigest {
    /// Records.
    pub records: u64,
    /// Payload bytes (the appended bytes and their simulated bulk; keys and framing excluded).
    pub bytes: u64,
    /// [`crate::ids::mix_words`] over every record's id, key and bytes (and its bulk size when
    /// it has one), in order (each field folded whole, its length tagged).
    pub checksum: u64,
}

impl Default for StreamDigest {
    fn default() -> Self {
        StreamDigest { records: 0, bytes: 0, checksum: crate::ids::FNV_OFFSET }
    }
}

impl StreamDigest {
    /// The digest of `records`.
    pub fn of(records: &[Record]) -> Self {
        let mut d = StreamDigest::default();
        for r in records {
            d.add(r);
        }
        d
    }

    /// Extend the digest by the next record of the stream.
    pub fn add(&mut self, r: &Record) {
        let mix = crate::ids::mix_words;
        let mut h = mix(self.checksum, &r.id.client.to_le_bytes());
        h = mix(h, &r.id.seq.to_le_bytes());
        h = mix(h, &r.key);
        h = mix(h, &r.bytes);
        if r.bulk > 0 {
            h = mix(h, &r.bulk.to_le_bytes());
        }
        self.checksum = h;
        self.records += 1;
        self.bytes += r.payload_bytes();
    }
}

/// A sealed stream prefix that a range's content starts from (split and merge lineage): the
/// records of `stream` below offset `upto` whose keys fall in `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Source {
    /// The ancestor's stream.
    pub stream: RangeId,
    /// Its sealed length (records).
    pub upto: u64,
    /// Inclusive start of the keys taken from it.
    pub start: Key,
    /// Exclusive end; `None` = unbounded.
    pub end: Option<Key>,
}

impl Source {
    /// Whether `key` is taken from this source.
    pub fn contains(&self, key: &[u8]) -> bool {
        crate::ids::in_range(key, &self.start, self.end.as_ref())
    }
}

/// One range's load, as a server reports it to the leader. Its `Hash` takes the rate's bits
/// (`f64::to_bits`): equal reports hash alike, as the model checker's state key needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeLoad {
    /// The range.
    pub range: RangeId,
    /// The epoch the server holds it at.
    pub epoch: Epoch,
    /// Appends and reads per second over the last load window.
    pub ops_per_s: f64,
    /// Payload bytes in the range (lineage included).
    pub bytes: u64,
    /// Records in the range's own stream as applied here (lineage excluded).
    pub records: u64,
    /// A sample of recently used keys (the most recent last).
    pub keys: Vec<Key>,
}

impl std::hash::Hash for RangeLoad {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let RangeLoad { range, epoch, ops_per_s, bytes, records, keys } = self;
        (range, epoch, ops_per_s.to_bits(), bytes, records, keys).hash(h);
    }
}

/// How far a move's target has pre-copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CopyProgress {
    /// Copy rounds done.
    pub rounds: u32,
    /// Payload bytes copied so far.
    pub bytes: u64,
    /// Payload bytes the last round copied (what the cutover rule predicts the tail by).
    pub last_round_bytes: u64,
    /// Whether pre-copy is done (the last round was under the threshold, or the round limit
    /// was reached): the source may be paused.
    pub ready: bool,
}

/// Why a move target did not finish a move.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FinishError {
    /// The copy does not match the source's digest: the move must abort.
    Diverged(String),
    /// Not now (the store did not answer, wrong session...): the leader may try again.
    NotNow(String),
    /// The target is still fencing and copying (a large tail or lineage): the leader asks
    /// again on a later round. A live target always answers within a short, fixed time, so no
    /// answer at all means the target is gone.
    InProgress,
}

/// How long a target's answer to `FinishMove` waits for the finish (ms): half the request
/// timeout. A longer finish goes on in the background and the answer says `InProgress`, so a
/// live target always answers within `rpc_timeout_ms`-ish whatever the range's size, and the
/// leader reads silence as a target that is gone.
pub fn finish_patience_ms(rpc_timeout_ms: u64) -> u64 {
    rpc_timeout_ms / 2
}

/// A server's session as the authority sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionView {
    /// The server.
    pub server: ServerId,
    /// Session number (a new one per registration, i.e. per incarnation of the server).
    pub session: u64,
    /// Whether the lease is still valid at the authority.
    pub live: bool,
}

/// Why a server refused a request before admitting it: the request had no effect.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The server does not hold the range (never did, dropped it, or restarted).
    NotOwner,
    /// The request's epoch is older than the server's for this range: the map moved on.
    StaleEpoch {
        /// The epoch this server holds the range at (newer than the request's).
        current: Epoch,
    },
    /// The server holds the range but not yet active (still loading) or paused.
    NotReady,
    /// The server's session lease cannot be trusted by its own clock.
    LeaseExpired,
    /// The key is outside the range (the sender's map is stale).
    KeyOutOfRange,
    /// An append with this idempotency id is already in flight here; retry later.
    InFlight,
    /// The store refused the effect: a newer owner fenced the stream.
    Fenced {
        /// The stream's fence at the store: the epoch of the newer owner that fenced it, above
        /// the epoch this server wrote at.
        fence: Epoch,
    },
    /// The range moved away from this server: `owner` serves it at `epoch` (a hint; the map
    /// is the authority).
    Moved {
        /// The server the range moved to.
        owner: ServerId,
        /// The epoch `owner` serves the range at (the move's new epoch).
        epoch: Epoch,
    },
    /// A bounded-staleness read: this server last knew itself the owner `age_ms` ago, more
    /// than the read's bound.
    TooStale {
        /// How long ago this server last knew itself the owner, ms by its own clock (inflated by
        /// the drift the lease margin allows).
        age_ms: u64,
    },
}

/// Outcome of one client operation, as the frontend reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Applied (append) or answered (read).
    Ok,
    /// Definitely not applied: every attempt was refused before admission.
    Failed(String),
    /// Unknown: some attempt may have taken effect.
    Unknown(String),
    /// `MapUnavailable`: the frontend could not read the map for longer than
    /// `map_staleness_ms`, so it failed the operation at once without trying (definitely not
    /// applied). The reason says how stale the map was.
    MapUnavailable(String),
}

/// How current a read must be.
///
/// Idea: bounded staleness as in Azure Cosmos DB's consistency levels and Spanner's bounded
/// reads; here the bound is on how old the answering server's knowledge of the range may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadLevel {
    /// Only the current owner, holding a valid lease, active and not paused, may answer.
    Strong,
    /// Any server holding the range may answer if it knew itself the owner (valid lease, not
    /// paused) at most `ms` milliseconds ago, by its clock: a just-deposed or paused owner
    /// included. The answer holds every append acknowledged before (start − `ms`).
    Bounded {
        /// The bound, ms.
        ms: u64,
    },
}

/// Why the authority refused a `CasMap` or an `Admin` batch (the map is unchanged). Its
/// [`Display`](std::fmt::Display) is the reason the authority traces in its `CasRefused` event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CasRefusal {
    /// The sender's leader epoch is not the current, unexpired leader lease's.
    StaleLeaderEpoch {
        /// The leader epoch the batch carried.
        asked: u64,
        /// The current lease's epoch (`None`: no leader holds one).
        current: Option<u64>,
    },
    /// The map is no longer at the version the batch was planned against.
    VersionMismatch {
        /// The version the batch expected.
        expected: u64,
        /// The map's version.
        actual: u64,
    },
    /// An `Admin` batch holds an op that is not an operator request (boxed: rare and large).
    NotOperatorRequest(Box<MapOp>),
    /// The map refused an op of the batch.
    Map(MapError),
}

impl std::fmt::Display for CasRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CasRefusal::StaleLeaderEpoch { asked, current } => write!(f, "stale leader epoch {asked} (current {current:?})"),
            CasRefusal::VersionMismatch { expected, actual } => write!(f, "version {expected} expected, map is at {actual}"),
            CasRefusal::NotOperatorRequest(op) => write!(f, "not an operator request: {op:?}"),
            CasRefusal::Map(e) => write!(f, "{e}"),
        }
    }
}

/// The most bytes a [`Msg`] may take by value. Every hop moves messages, and every future that
/// holds one (a request's task, a call) grows with it, so the rare large variants box their
/// bulk (a [`RangeRow`]) and a test pins the bound.
pub const MSG_BYTES_MAX: usize = 104;

/// All messages. Requests and their responses are listed together per service.
#[derive(Clone, Debug, Hash)]
pub enum Msg {
    // ---- coordination authority (`lock-1`) ----
    /// Server → authority: start a session (a new one per incarnation).
    RegisterServer {
        /// The server registering.
        server: ServerId,
        /// The registering incarnation: the server process's start time, µs by its clock, so
        /// a restart has a larger one. A registration from the incarnation that holds the live
        /// session (a retry, or one held in the network) gets that session back instead of
        /// replacing it.
        incarnation: u64,
    },
    /// Authority → server: the new session.
    Registered {
        /// The new session number (from the authority's counter, unique across servers); the
        /// server names it in every renewal.
        session: u64,
    },
    /// Server → authority: extend the session lease.
    RenewSession {
        /// The server renewing.
        server: ServerId,
        /// The session to extend, as `Registered` gave it.
        session: u64,
    },
    /// Authority → server: renewed (`ok`) or expired (the server must drop all its ranges).
    SessionRenewed {
        /// Whether the lease was extended; `false`: the session is expired or superseded.
        ok: bool,
    },
    /// Manager candidate → authority: acquire or renew the leader lease.
    AcquireLeader {
        /// The candidate's number N (`manager-N`).
        candidate: u32,
    },
    /// Authority → candidate: `epoch` is `Some` when the candidate holds the lease.
    LeaderLease {
        /// The leader epoch (term) of the lease the candidate now holds; `None` when another
        /// candidate holds the lease.
        epoch: Option<u64>,
        /// The number of the candidate holding the lease: the asker when `epoch` is `Some`,
        /// else the current leader.
        holder: Option<u32>,
    },
    /// Frontend → authority: send the map.
    GetMap,
    /// Authority → frontend: the map.
    Map {
        /// The authority's current map.
        map: SharedMap,
    },
    /// Manager → authority: map plus session states.
    GetState,
    /// Authority → manager: the map and all sessions.
    State {
        /// The authority's current map.
        map: SharedMap,
        /// Each server's latest session and whether its lease is still live (expiries due
        /// are applied and made durable before the answer).
        sessions: Vec<SessionView>,
    },
    /// Manager → authority: apply `ops` atomically if the map is at `expected_version` and
    /// `leader_epoch` is the current, unexpired leader lease.
    CasMap {
        /// The map version the ops were planned against; refused unless the map is still at it.
        expected_version: u64,
        /// The sending manager's leader epoch (term), as `LeaderLease` granted it.
        leader_epoch: u64,
        /// The sending manager's number: named in the commit's event, so a checker can see two
        /// managers writing at one term.
        candidate: u32,
        /// The mutations, applied as one batch (all or none).
        ops: Vec<MapOp>,
    },
    /// Authority → manager: the map after the attempt, and the refusal reason if any.
    CasResult {
        /// The authority's map after the attempt (unchanged when refused).
        map: SharedMap,
        /// Why the batch was refused; `None`: committed.
        error: Option<CasRefusal>,
    },
    /// Operator → authority: apply operator requests (see [`MapOp::is_operator_request`]);
    /// answered with `CasResult`.
    Admin {
        /// The operator requests (`RequestMove`, `Drain` only), applied as one batch.
        ops: Vec<MapOp>,
    },

    // ---- store (`store-1`) ----
    /// New owner → store: raise the stream's fence to `epoch` and return its sealed content
    /// from offset `from` on (the records before it the caller already has).
    Fence {
        /// The stream to fence: the id of the range being opened.
        stream: RangeId,
        /// The new owner's epoch (its row's epoch): the fence is raised to it.
        epoch: Epoch,
        /// Offset (records) to return content from: how many records the caller already has
        /// (0 for a full load, the pre-copied count at a move's cutover).
        from: u64,
        /// Appends of the caller whose outcome at the store is unknown (a reload after a store
        /// timeout, at the same epoch): each one not in the stream yet is barred from it for
        /// good, so a copy still held in the network cannot land behind the reload.
        /// Empty for a new owner's fence (its epoch refuses older writes already).
        bar: Vec<OpId>,
    },
    /// Store → owner: the stream content from `from` up to the fence (`Err` = fence already
    /// above).
    FenceResult {
        /// `Ok`: the durable records from `from` on, up to the sealed length at the fence but
        /// at most one chunk (see `StreamRead`); `Err`: the stream's fence, already above the
        /// requested epoch.
        result: Result<Vec<Record>, Epoch>,
        /// The sealed length (records) at the fence: the caller reads the rest with
        /// `ReadStream` up to it (0 with `Err`).
        length: u64,
        /// The digest of the stream's first `from` records (all of them when the sealed length
        /// is shorter; its `records` then says so): a caller that keeps the `from` records it
        /// holds checks them against it, and reloads from 0 on a difference (default with
        /// `Err`).
        prefix: StreamDigest,
    },
    /// Move target or new owner → store: the durable records of `stream` from offset `from`
    /// on (below `upto` if given), without fencing (a pre-copy round, or a sealed ancestor).
    ReadStream {
        /// The stream to read: the range's own (pre-copy) or a sealed ancestor's.
        stream: RangeId,
        /// First offset to return (records).
        from: u64,
        /// Offset (records) to stop before: an ancestor's sealed length; `None`: up to the
        /// durable end.
        upto: Option<u64>,
        /// A move target's pre-copy round reads it (its copy is checked against the source's
        /// digest); the answer carries the flag back, so that a `corrupt` fault can aim at
        /// pre-copy chunks alone.
        precopy: bool,
    },
    /// Store → move target: the records read.
    StreamRead {
        /// The durable records from `from` on, below `upto` and below the durable end, but at
        /// most one chunk: the store sizes each answer so it leaves its link within half the
        /// store timeout (at least one record), so a caller's timeout per chunk holds whatever
        /// the stream's size.
        records: Vec<Record>,
        /// Where the read stops when every chunk is read: `upto` or the durable end, whichever
        /// is first (records).
        length: u64,
        /// The request's `precopy` flag.
        precopy: bool,
    },
    /// Leader → store: seal `stream` (a split or merge parent) by raising its fence to `epoch`.
    Seal {
        /// The parent's stream (its range id).
        stream: RangeId,
        /// The epoch to raise the fence to: the highest epoch of the reshape's children.
        epoch: Epoch,
    },
    /// Store → leader: the sealed length (records), or the fence already above `epoch`.
    Sealed {
        /// `Ok`: the sealed length (records), everything below it durable; `Err`: the
        /// stream's fence, already above `epoch`.
        result: Result<u64, Epoch>,
    },
    /// Owner → store: append a record to `stream` if the fence is not above its epoch.
    StoreAppend {
        /// The range's stream (its range id).
        stream: RangeId,
        /// The owner sending the append (named in the store's events).
        server: ServerId,
        /// The record; its epoch is the one checked against the fence.
        record: Record,
    },
    /// Store → owner: `Ok(offset)` after the record is synced, or `Err(fence)`.
    StoreAppended {
        /// `Ok`: the record's offset in the stream (its first offset when the id was already
        /// there); `Err`: the stream's fence, above the record's epoch.
        result: Result<u64, Epoch>,
    },

    // ---- partition servers (`server-N`) ----
    /// Manager → server: become the owner of `row` at `row.epoch` (fence, load `lineage` and
    /// the row's own stream, serve). Every command from a manager carries the sender's leader
    /// epoch; a server refuses one older than the newest it has seen.
    Open {
        /// The row to open: the range's id and keys, this server as owner with its session, and
        /// the epoch to fence the stream at.
        /// Boxed: a row is large and these commands are rare (see [`MSG_BYTES_MAX`]).
        row: Box<RangeRow>,
        /// The leader epoch (term) of the manager sending the command.
        leader_epoch: u64,
        /// The sealed ancestor prefixes the range's content starts from, oldest first (empty
        /// unless the range came from a split or merge).
        lineage: Vec<Source>,
    },
    /// Leader → server: report the load of every range held.
    GetLoad {
        /// The leader epoch (term) of the manager asking; a server that has seen a newer one
        /// reports nothing.
        leader_epoch: u64,
    },
    /// Server → leader: the load report.
    Load {
        /// One report per active, unpaused range held (none if the request was stale).
        ranges: Vec<RangeLoad>,
    },
    /// Server → manager: opened (`Ok`) or why not.
    Opened {
        /// `Ok(())`: the range serves at the row's epoch (or already did); `Err`: why not
        /// (stale leader epoch, wrong session, newer epoch held, fenced, store silent...).
        result: Result<(), String>,
    },
    /// Manager → move target: run a pre-copy round of `row` (the target's row: the new epoch
    /// and its session) unless pre-copy is done.
    PreCopy {
        /// The target's row: the range with this server as owner, its session, and the
        /// transfer's new epoch.
        /// Boxed: a row is large and these commands are rare (see [`MSG_BYTES_MAX`]).
        row: Box<RangeRow>,
        /// Pre-copy is done once a round copied at most this many payload bytes.
        threshold_bytes: u64,
        /// Pre-copy is done after this many rounds (at least 1) whatever the last round copied.
        max_rounds: u32,
        /// The leader epoch (term) of the manager sending the command.
        leader_epoch: u64,
    },
    /// Move target → manager: how far it got.
    PreCopied {
        /// `Ok`: rounds and bytes copied so far and whether pre-copy is done; `Err`: why not
        /// (stale leader epoch, or the row names another session).
        result: Result<CopyProgress, String>,
    },
    /// Manager → move source: stop admitting appends to `range` at `epoch`, wait for every
    /// admitted effect, and report the final digest.
    Pause {
        /// The range to pause: the range being moved, or a parent of a split or merge.
        range: RangeId,
        /// The epoch the source must hold the range at: the transfer's `from_epoch`, or the
        /// parent's journaled epoch.
        epoch: Epoch,
        /// The leader epoch (term) of the manager sending the command.
        leader_epoch: u64,
    },
    /// Move source → manager: the digest of everything in the range at the pause, or why not.
    PausedAt {
        /// `Ok`: the digest (records, payload bytes, checksum) of the range's own stream as
        /// applied at the source once drained; `Err`: why not (not held at that epoch, stale
        /// leader epoch, or the drain did not finish in time).
        result: Result<StreamDigest, String>,
    },
    /// Manager → move target: fence the stream at `row.epoch`, copy the tail, check the copy
    /// against `digest` (the source's), and serve.
    FinishMove {
        /// The target's row: this server as owner, its session, and the transfer's new epoch,
        /// which the stream is fenced at.
        /// Boxed: a row is large and these commands are rare (see [`MSG_BYTES_MAX`]).
        row: Box<RangeRow>,
        /// The source's digest at the pause (from `PausedAt`); the copy must match it.
        digest: StreamDigest,
        /// How the move copies the stream (named in the target's handoff event).
        strategy: Strategy,
        /// The range's sealed ancestor prefixes, oldest first, as for `Open`.
        lineage: Vec<Source>,
        /// The leader epoch (term) of the manager sending the command.
        leader_epoch: u64,
    },
    /// Move target → manager: serving (`Ok`), or why not.
    MoveFinished {
        /// `Ok(())`: the target serves at the new epoch (or already did); `Err`: diverged
        /// copy (abort) or not now (retry).
        result: Result<(), FinishError>,
    },
    /// Manager → move source: the move committed; drop `range` and point requests at `to`.
    Release {
        /// The range to drop.
        range: RangeId,
        /// The epoch the receiver must hold it at for the drop: the source's `from_epoch`, an
        /// aborted move's new epoch at its target, or a reshape parent's journaled epoch.
        epoch: Epoch,
        /// The server that now serves the range, for the `Moved` hint (only kept when
        /// `new_epoch` is above 0).
        to: ServerId,
        /// The epoch `to` serves the range at; `Epoch(0)` when there is no single new owner
        /// (an aborted move, a split or merge).
        new_epoch: Epoch,
        /// The leader epoch (term) of the manager sending the command.
        leader_epoch: u64,
    },
    /// Move source → manager: done.
    Released,
    /// Frontend → server: append to `key` in `range` at `epoch`.
    Append {
        /// The range holding `key`, by the frontend's map.
        range: RangeId,
        /// The owner's epoch by the frontend's map (or by a `Moved` refusal).
        epoch: Epoch,
        /// The object key.
        key: Key,
        /// The append's idempotency id (the same on every retry).
        id: OpId,
        /// The bytes to append to the object (shared with the record they become).
        bytes: Bytes,
        /// Simulated bulk bytes carried with them (see [`Record::bulk`]).
        bulk: u64,
    },
    /// Frontend → server: read `key` in `range` at `epoch`, at consistency `level`.
    Read {
        /// The range holding `key`, by the frontend's map.
        range: RangeId,
        /// The owner's epoch by the frontend's map (or by a `Moved` refusal); not checked by
        /// a bounded read.
        epoch: Epoch,
        /// The object key.
        key: Key,
        /// How current the answer must be.
        level: ReadLevel,
    },
    /// Server → frontend: answer to `Append` (empty bytes) or `Read` (the object's bytes).
    Served {
        /// `Ok`: empty for an append, the object's bytes (empty if absent) for a read, shared
        /// with the server's copy until either changes; `Err`: the refusal (the request had no
        /// effect).
        result: Result<Bytes, Refusal>,
    },
    /// Server → frontend: the append was admitted but its effect's outcome is unknown
    /// (the store did not answer in time).
    ServedUnknown,

    // ---- frontends (`frontend-N`) ----
    /// Client → frontend: append `bytes` to `key` with idempotency id `id`.
    ClientAppend {
        /// The object key.
        key: Key,
        /// The append's idempotency id, chosen by the client.
        id: OpId,
        /// The bytes to append to the object (shared with the record they become).
        bytes: Bytes,
        /// Simulated bulk bytes carried with them (see [`Record::bulk`]).
        bulk: u64,
    },
    /// Client → frontend: read `key` at consistency `level`.
    ClientRead {
        /// The object key.
        key: Key,
        /// How current the answer must be.
        level: ReadLevel,
    },
    /// Frontend → client: the outcome, and for a read the bytes.
    ClientResult {
        /// What became of the operation.
        outcome: Outcome,
        /// For a successful read, the object's bytes (shared, as the server answered them);
        /// empty otherwise.
        value: Bytes,
    },
    /// Operator → authority: ask the current leader to hand over (a leader transfer, as
    /// TiKV's leader eviction before a node's upgrade). Kept in the authority's memory only.
    TransferLeader,
    /// Authority → operator: the transfer was asked of manager `holder`; `None`: no manager
    /// holds the lease, so nothing was asked.
    TransferAsked {
        /// The manager that leads and will step down.
        holder: Option<u32>,
    },
    /// Authority → the leader, in place of [`Msg::LeaderLease`] while a transfer is asked:
    /// the lease of term `leader_epoch` is renewed as usual, and the leader should step down
    /// at its next clean point between rounds ([`Msg::ReleaseLeader`]).
    StepDown {
        /// The term renewed.
        leader_epoch: u64,
    },
    /// Leader → authority: give up the lease of term `leader_epoch` now, so that a standby
    /// gets it at its next try; answered with a [`Msg::LeaderLease`] held by nobody.
    ReleaseLeader {
        /// The releasing candidate's number N (`manager-N`).
        candidate: u32,
        /// The term it gives up.
        leader_epoch: u64,
    },
}

impl Msg {
    /// The message's kind in snake case (`store_append`, `fence`, `append`, ...), as scenarios
    /// name it in targeted faults.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Msg::RegisterServer { .. } => "register_server",
            Msg::Registered { .. } => "registered",
            Msg::RenewSession { .. } => "renew_session",
            Msg::SessionRenewed { .. } => "session_renewed",
            Msg::AcquireLeader { .. } => "acquire_leader",
            Msg::LeaderLease { .. } => "leader_lease",
            Msg::GetMap => "get_map",
            Msg::Map { .. } => "map",
            Msg::GetState => "get_state",
            Msg::State { .. } => "state",
            Msg::CasMap { .. } => "cas_map",
            Msg::CasResult { .. } => "cas_result",
            Msg::Admin { .. } => "admin",
            Msg::Fence { .. } => "fence",
            Msg::FenceResult { .. } => "fence_result",
            Msg::ReadStream { .. } => "read_stream",
            Msg::StreamRead { .. } => "stream_read",
            Msg::Seal { .. } => "seal",
            Msg::Sealed { .. } => "sealed",
            Msg::StoreAppend { .. } => "store_append",
            Msg::StoreAppended { .. } => "store_appended",
            Msg::Open { .. } => "open",
            Msg::GetLoad { .. } => "get_load",
            Msg::Load { .. } => "load",
            Msg::Opened { .. } => "opened",
            Msg::PreCopy { .. } => "pre_copy",
            Msg::PreCopied { .. } => "pre_copied",
            Msg::Pause { .. } => "pause",
            Msg::PausedAt { .. } => "paused_at",
            Msg::FinishMove { .. } => "finish_move",
            Msg::MoveFinished { .. } => "move_finished",
            Msg::Release { .. } => "release",
            Msg::Released => "released",
            Msg::Append { .. } => "append",
            Msg::Read { .. } => "read",
            Msg::Served { .. } => "served",
            Msg::ServedUnknown => "served_unknown",
            Msg::ClientAppend { .. } => "client_append",
            Msg::ClientRead { .. } => "client_read",
            Msg::ClientResult { .. } => "client_result",
            Msg::TransferLeader => "transfer_leader",
            Msg::TransferAsked { .. } => "transfer_asked",
            Msg::StepDown { .. } => "step_down",
            Msg::ReleaseLeader { .. } => "release_leader",
        }
    }

    /// Every kind name [`Msg::kind_name`] can return.
    pub const KIND_NAMES: [&'static str; 44] = ["register_server", "registered", "renew_session", "session_renewed", "acquire_leader", "leader_lease", "get_map", "map", "get_state", "state", "cas_map", "cas_result", "admin", "fence", "fence_result", "read_stream", "stream_read", "seal", "sealed", "store_append", "store_appended", "open", "get_load", "load", "opened", "pre_copy", "pre_copied", "pause", "paused_at", "finish_move", "move_finished", "release", "released", "append", "read", "served", "served_unknown", "client_append", "client_read", "client_result", "transfer_leader", "transfer_asked", "step_down", "release_leader"];

    /// Payload size in bytes, for the bandwidth charge.
    pub fn wire_bytes(&self) -> u64 {
        // 48 bytes and the keys a row, live or retired.
        let map_bytes = |m: &PartitionMap| {
            let live: u64 = m.rows.live().values().map(|r| 48 + r.key_bytes()).sum();
            live + 48 * m.rows.retired().len() as u64 + m.rows.retired_key_bytes()
        };
        match self {
            Msg::Map { map } | Msg::CasResult { map, .. } => map_bytes(map),
            Msg::State { map, sessions } => map_bytes(map) + 16 * sessions.len() as u64,
            Msg::CasMap { ops, .. } => 32 * ops.len() as u64,
            Msg::FenceResult { result: Ok(records), .. } | Msg::StreamRead { records, .. } => records.iter().map(Record::wire_bytes).sum(),
            Msg::Load { ranges } => ranges.iter().map(|r| 32 + r.keys.iter().map(|k| k.len() as u64 + 4).sum::<u64>()).sum(),
            Msg::StoreAppend { record, .. } => record.wire_bytes(),
            Msg::Append { key, bytes, bulk, .. } | Msg::ClientAppend { key, bytes, bulk, .. } => (24 + key.len() + bytes.len()) as u64 + bulk,
            Msg::Read { key, .. } | Msg::ClientRead { key, .. } => (16 + key.len()) as u64,
            Msg::Served { result: Ok(v) } | Msg::ClientResult { value: v, .. } => 8 + v.len() as u64,
            _ => 16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A larger variant would grow every message and every future holding one; box
    /// its bulk instead (as `Open`, `PreCopy` and `FinishMove` box their row).
    #[test]
    fn msg_stays_within_its_size_bound() {
        assert!(std::mem::size_of::<Msg>() <= MSG_BYTES_MAX, "Msg is {} bytes, bound {MSG_BYTES_MAX}", std::mem::size_of::<Msg>());
    }
}
