//! The partition map table as plain data and pure transitions.
//!
//! A row per range: `[start, end)` in byte order, owner, epoch, state. The non-retired rows tile
//! the key space (the first starts at the empty key, the last is unbounded, no gap, no overlap)
//! after every mutation, and epochs and the version only grow. The coordination authority
//! (`lock`) holds the one copy that counts and applies [`MapOp`]s under compare-and-set; frontends
//! and the manager hold snapshots, which are routing hints only.
//!
//! Idea: Bigtable's METADATA table and Azure Storage's partition map (Calder et al., SOSP 2011).

use crate::ids::{show_key, Epoch, Key, RangeId, ServerId};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Lifecycle of a range row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RangeState {
    /// An owner and epoch are chosen; the owner has not confirmed that it fenced and serves.
    Preparing,
    /// The owner serves the range at the row's epoch.
    Active,
    /// The owner stopped admitting writes (planned handoff in progress).
    Paused,
    /// Replaced by other rows (after a split or merge); never serves again.
    Retired,
}

/// One row of the partition map.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RangeRow {
    /// Stable id; also names the range's stream at the store.
    pub id: RangeId,
    /// Inclusive start key.
    pub start: Key,
    /// Exclusive end key; `None` = unbounded.
    pub end: Option<Key>,
    /// The write owner, if one was ever chosen.
    pub owner: Option<ServerId>,
    /// The owner's session at the authority when it was chosen: a later incarnation of the same
    /// server (a restart) has another session and does not inherit the range.
    pub owner_session: u64,
    /// The epoch the owner serves at.
    pub epoch: Epoch,
    /// Lifecycle state.
    pub state: RangeState,
    /// Ranges whose sealed streams this one was made from (split/merge lineage); empty for
    /// initial ranges.
    pub sources: Vec<RangeId>,
    /// For a retired row: the length (records) its stream was sealed at; its children read it
    /// up to there. 0 otherwise.
    pub sealed: u64,
    /// When the row was made by a split or merge, ms by the committing leader's clock (0 for
    /// initial ranges): merges wait out `merge_hysteresis_ms` after it.
    pub born_ms: u64,
}

impl RangeRow {
    /// Its start and end keys, bytes in all (what a message carrying the row charges for them,
    /// beside a fixed size per row).
    pub fn key_bytes(&self) -> u64 {
        (self.start.len() + self.end.as_ref().map_or(0, Vec::len)) as u64
    }

    /// Whether `key` falls in `[start, end)`.
    pub fn contains(&self, key: &[u8]) -> bool {
        crate::ids::in_range(key, &self.start, self.end.as_ref())
    }
}

/// How a planned move copies a range's stream to the new owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Strategy {
    /// Pause the old owner first, then copy everything: the pause grows with the range's size.
    StopAndCopy,
    /// Copy in rounds while the old owner serves, until the tail is small; then pause and copy
    /// only the tail. Idea: pre-copy live migration of VMs (Clark et al., NSDI 2005).
    PreCopy,
}

impl Strategy {
    /// Every strategy with its scenario name.
    pub const ALL: [(Strategy, &'static str); 2] = [(Strategy::StopAndCopy, "stop-and-copy"), (Strategy::PreCopy, "pre-copy")];

    /// The scenario name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(s, _)| *s == self).map(|(_, n)| *n).expect("listed")
    }

    /// Parse a scenario name. Errors: a message listing the accepted names.
    pub fn parse(name: &str) -> Result<Strategy, String> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(s, _)| *s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
            format!("unknown strategy `{name}`; accepted: {}", names.join(", "))
        })
    }
}

/// Where a planned move stands, as journaled at the authority.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TransferPhase {
    /// The intent is journaled and the new epoch allocated; the source still serves while the
    /// target copies (pre-copy) or waits (stop-and-copy).
    Copying,
    /// The source was told to stop admitting appends; the next step is its final length and
    /// checksum, then the target's verified copy and fence.
    Paused,
    /// The copy did not verify (or a party was lost while paused): the range stays paused at
    /// the source until the leader rolls it back by reopening it there at a new epoch.
    Aborted(String),
}

/// One planned move A→B in the transfer journal (a row per range in flight).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// The range being moved.
    pub range: RangeId,
    /// The source A and its session.
    pub from: (ServerId, u64),
    /// The epoch A serves at.
    pub from_epoch: Epoch,
    /// The target B and its session.
    pub to: (ServerId, u64),
    /// The new epoch B fences the stream at, allocated when the move was journaled.
    pub epoch: Epoch,
    /// How the stream is copied.
    pub strategy: Strategy,
    /// Where it stands.
    pub phase: TransferPhase,
}

/// Whether a reshape splits one range or merges two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReshapeKind {
    /// One parent, two children cut at a key.
    Split,
    /// Two adjacent parents, one child.
    Merge,
}

impl ReshapeKind {
    /// `split` or `merge`.
    pub fn name(self) -> &'static str {
        match self {
            ReshapeKind::Split => "split",
            ReshapeKind::Merge => "merge",
        }
    }
}

/// A child range a reshape will create: its id and epoch are allocated when the reshape is
/// journaled; its row appears only at the commit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChildPlan {
    /// The id the child's row will have (also its stream).
    pub id: RangeId,
    /// Inclusive start key.
    pub start: Key,
    /// Exclusive end key; `None` = unbounded.
    pub end: Option<Key>,
    /// Its owner and the owner's session.
    pub owner: (ServerId, u64),
    /// The epoch the owner opens it at.
    pub epoch: Epoch,
}

impl ChildPlan {
    /// The row this child has (or will have): `sources` are its parents.
    pub fn row(&self, sources: Vec<RangeId>, state: RangeState, born_ms: u64) -> RangeRow {
        RangeRow {
            id: self.id,
            start: self.start.clone(),
            end: self.end.clone(),
            owner: Some(self.owner.0),
            owner_session: self.owner.1,
            epoch: self.epoch,
            state,
            sources,
            sealed: 0,
            born_ms,
        }
    }
}

/// A split or merge in the journal, keyed by its first parent.
///
/// Flow (DESIGN.md, "Split" and "Merge"): journal (ids and epochs allocated) → pause every
/// parent (rows `Paused`, owners drain) → seal every parent's stream at the children's epoch →
/// the children's owners fence their own streams and load the parents' sealed prefixes filtered
/// to their key range → one compare-and-set retires the parents and activates the children.
/// The commit checks that every parent is still the paused row at the epoch journaled here, so
/// a reshape whose view went stale can never commit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reshape {
    /// Split or merge.
    pub kind: ReshapeKind,
    /// The parents in key order, with the epoch each was at when journaled.
    pub parents: Vec<(RangeId, Epoch)>,
    /// The children in key order.
    pub children: Vec<ChildPlan>,
    /// Where it stands (`Copying` = journaled, parents still serving).
    pub phase: TransferPhase,
}

/// A map mutation. The authority applies a batch of them atomically under compare-and-set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MapOp {
    /// Create the initial ranges on an empty map: `split_points` (strictly increasing, none
    /// empty) cut the key space into `split_points.len() + 1` unowned `Preparing` rows.
    Bootstrap {
        /// The keys the initial ranges are cut at, strictly increasing, none empty.
        split_points: Vec<Key>,
    },
    /// Give `range` to `owner` at a new epoch (failover, initial assignment or a move); the row
    /// becomes `Preparing` until the owner confirms with [`MapOp::Activate`].
    Assign {
        /// The range to give.
        range: RangeId,
        /// The new owner.
        owner: ServerId,
        /// The owner's current session at the authority (a later incarnation of the server
        /// will not inherit the range).
        owner_session: u64,
    },
    /// The owner of `range` at `epoch` fenced the stream and serves: `Preparing` → `Active`.
    Activate {
        /// The range the owner now serves.
        range: RangeId,
        /// The epoch it opened the range at; must be the row's current epoch.
        epoch: Epoch,
    },
    /// Journal a split of the `Active` `range` at `at` (strictly inside it): two children,
    /// left owned by `owners[0]`, right by `owners[1]`, get ids and new epochs now; the parent
    /// keeps serving until [`MapOp::PauseReshape`].
    BeginSplit {
        /// The parent: the `Active` range to split.
        range: RangeId,
        /// The split key: the right child's first key, strictly inside the parent.
        at: Key,
        /// The owners of the left and the right child, each with its session.
        owners: [(ServerId, u64); 2],
    },
    /// Journal a merge of the adjacent `Active` `left` and `right` into one child owned by
    /// `owner`.
    BeginMerge {
        /// The left parent (the reshape's first, its journal key).
        left: RangeId,
        /// The right parent, starting where `left` ends.
        right: RangeId,
        /// The child's owner and its session.
        owner: (ServerId, u64),
    },
    /// The reshape keyed by `first` (its first parent) enters its pause: every parent row
    /// becomes `Paused`.
    PauseReshape {
        /// The reshape's first parent (its journal key).
        first: RangeId,
    },
    /// Retire the parents of the reshape keyed by `first`, recording the lengths their
    /// streams were sealed at (`sealed`, one per parent), and make the children `Active`
    /// (`born_ms` by the leader's clock), in one step. Refused unless every parent is still the
    /// paused row at its journaled epoch.
    CommitReshape {
        /// The reshape's first parent (its journal key).
        first: RangeId,
        /// The sealed length (records) of each parent's stream, in parent order.
        sealed: Vec<u64>,
        /// The commit time, ms by the leader's clock: the children's `born_ms`.
        born_ms: u64,
    },
    /// The reshape keyed by `first` failed with `error`: before the pause the entry simply
    /// goes; after it, it stays as `Aborted` (the parents stay `Paused`) until assignments roll
    /// the parents back.
    AbortReshape {
        /// The reshape's first parent (its journal key).
        first: RangeId,
        /// Why it failed (kept in the `Aborted` phase after the pause).
        error: String,
    },
    /// Journal a planned move of the `Active` `range` to `to` (a server and its session) with
    /// `strategy`: a new epoch is allocated for the target; the row is unchanged (its owner
    /// still serves). Consumes an operator's move request for the range.
    BeginMove {
        /// The `Active` range to move.
        range: RangeId,
        /// The target server and its session.
        to: (ServerId, u64),
        /// How the stream is copied to the target.
        strategy: Strategy,
    },
    /// The move of `range` enters its pause: the row becomes `Paused`.
    PauseMove {
        /// The range being moved (its transfer's journal key).
        range: RangeId,
    },
    /// The target verified its copy and fenced the stream: the row gets the target and the
    /// transfer's epoch, `Active`, and the journal entry goes.
    CommitMove {
        /// The range being moved (its transfer's journal key).
        range: RangeId,
    },
    /// The move of `range` failed with `error`. While copying, the entry simply goes (the
    /// source never stopped serving); while paused, it stays as `Aborted` and the row stays
    /// `Paused` until an [`MapOp::Assign`] rolls it back.
    AbortMove {
        /// The range being moved (its transfer's journal key).
        range: RangeId,
        /// Why it failed (kept in the `Aborted` phase when paused).
        error: String,
    },
    /// Operator request: move `range` to `to` when possible (replaces an earlier request).
    RequestMove {
        /// The range to move.
        range: RangeId,
        /// The server to move it to.
        to: ServerId,
    },
    /// Operator request: split `range` at `at` when the leader can (one split or merge at a
    /// time). Refused unless the range is `Active`, in no move, split or merge, and `at` is
    /// strictly inside it.
    RequestSplit {
        /// The range to split.
        range: RangeId,
        /// The split key: the right child's first key.
        at: Key,
    },
    /// Operator request: merge the adjacent `left` and `right` when the leader can. Refused
    /// unless both are `Active`, in no move, split or merge, and `left` ends where `right`
    /// starts.
    RequestMerge {
        /// The left range.
        left: RangeId,
        /// The right range, starting where `left` ends.
        right: RangeId,
    },
    /// Operator request: move every range off `server` and assign it nothing new (`on`), or
    /// stop doing so.
    Drain {
        /// The server to drain.
        server: ServerId,
        /// `true`: start draining it; `false`: stop.
        on: bool,
    },
}

impl MapOp {
    /// Whether an operator may issue this op directly (no leader lease needed): requests only,
    /// which the leader acts on.
    pub fn is_operator_request(&self) -> bool {
        matches!(self, MapOp::RequestMove { .. } | MapOp::RequestSplit { .. } | MapOp::RequestMerge { .. } | MapOp::Drain { .. })
    }
}

/// Why a [`MapOp`] was refused. The map is unchanged after an error.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MapError {
    /// Bootstrap on a map that already has rows.
    NotEmpty,
    /// Split points not strictly increasing, or one is the empty key.
    BadSplitPoints,
    /// No such range.
    UnknownRange(RangeId),
    /// The range is retired (or otherwise in the wrong state for the op).
    WrongState(RangeId, RangeState),
    /// Activate named an epoch that is not the row's current one.
    StaleEpoch {
        /// The range the op named.
        range: RangeId,
        /// The row's current epoch.
        row: Epoch,
        /// The epoch the op named.
        asked: Epoch,
    },
    /// Split point outside `(start, end)`.
    BadSplitKey(RangeId),
    /// Merge of ranges that are not neighbours (`left.end != right.start`).
    NotAdjacent(RangeId, RangeId),
    /// A move op on a range with no transfer in the journal.
    NoTransfer(RangeId),
    /// A move op that does not fit the transfer's phase (or a second move of one range).
    WrongPhase(RangeId),
    /// An operator's split or merge request names a range already in a move, split or merge.
    Busy(RangeId),
    /// An operator request before the leader bootstrapped the map: committing it would make a
    /// map version with no rows, which tiles nothing (a drain sent 10 ms after the start).
    NotBootstrapped,
}

impl MapError {
    /// Whether the refusal is of a state that passes, so the same op is worth sending again
    /// later: no map yet, a range busy in a move, split or merge, or not yet active or idle. A
    /// bad key, a pair that is not adjacent or an unknown range stays so.
    pub fn may_pass(&self) -> bool {
        matches!(self, MapError::NotBootstrapped | MapError::Busy(_) | MapError::WrongState(..) | MapError::WrongPhase(_))
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// The rows of a map, by range id: the live rows (any state but [`RangeState::Retired`]) and the
/// retired ones (the lineage of splits and merges), kept apart.
///
/// A retired row never changes again, and retired rows pile up as a run splits and merges, while
/// the live rows stay about as many as the ranges. So the retired rows are one copy shared by
/// every version that has the same ones (a new version copies the live rows and shares the
/// lineage; a commit that retires rows copies the lineage once), and whatever walks the live
/// rows (the lookup, the manager's plan, the tiling check, a diff of two versions) costs the
/// number of ranges, not the length of the run. Each row is shared too ([`SharedRow`]): a new
/// version copies pointers to the live rows and copies only the rows it changes, and two
/// versions' rows compare by address first. [`Rows::get`] and [`Rows::values`] still see every
/// row, in id order, as one table; the hash stands for the retired rows by a digest kept as they
/// retire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    live: BTreeMap<RangeId, SharedRow>,
    retired: std::sync::Arc<BTreeMap<RangeId, SharedRow>>,
    /// The retired rows' start and end keys, bytes in all (kept as they retire: they never
    /// change again).
    retired_key_bytes: u64,
    /// The wrapping sum of the retired rows' [`row_digest`]s (kept as they retire), which
    /// stands for them in the table's hash.
    retired_digest: u64,
}

/// One row as the versions of a map share it: a version that changes the row gets its own copy
/// (copy on write, [`Rows::get_mut`]); equal pointers mean the same row.
pub type SharedRow = std::sync::Arc<RangeRow>;

impl Rows {
    /// The row of `id`, live or retired.
    pub fn get(&self, id: &RangeId) -> Option<&RangeRow> {
        self.live.get(id).or_else(|| self.retired.get(id)).map(|r| &**r)
    }

    /// The live row of `id`, to change: this version's own copy of it (a retired row never
    /// changes: see [`Rows::retire`]).
    pub fn get_mut(&mut self, id: &RangeId) -> Option<&mut RangeRow> {
        self.live.get_mut(id).map(std::sync::Arc::make_mut)
    }

    /// Put `row` under `id`, among the retired rows if its state is `Retired`, else among the
    /// live ones (replacing a row of that id in either).
    pub fn insert(&mut self, id: RangeId, row: RangeRow) {
        if let Some(old) = self.retired.get(&id).cloned() {
            std::sync::Arc::make_mut(&mut self.retired).remove(&id);
            self.retired_key_bytes -= old.key_bytes();
            self.retired_digest = self.retired_digest.wrapping_sub(row_digest(&old));
        }
        if row.state == RangeState::Retired {
            self.live.remove(&id);
            self.keep_retired(id, SharedRow::new(row));
        } else {
            self.live.insert(id, SharedRow::new(row));
        }
    }

    /// Retire the live row of `id`: its state becomes `Retired`, its stream sealed at `sealed`
    /// records, and it moves to the lineage. Returns it, or `None` if `id` has no live row.
    pub fn retire(&mut self, id: &RangeId, sealed: u64) -> Option<&RangeRow> {
        let mut shared = self.live.remove(id)?;
        let row = std::sync::Arc::make_mut(&mut shared);
        row.state = RangeState::Retired;
        row.sealed = sealed;
        Some(self.keep_retired(*id, shared))
    }

    /// Add `row` (retired) to the lineage, counting its key bytes and digest.
    fn keep_retired(&mut self, id: RangeId, row: SharedRow) -> &RangeRow {
        self.retired_key_bytes += row.key_bytes();
        self.retired_digest = self.retired_digest.wrapping_add(row_digest(&row));
        let retired = std::sync::Arc::make_mut(&mut self.retired);
        retired.insert(id, row);
        &retired[&id]
    }

    /// How many rows, live and retired.
    pub fn len(&self) -> usize {
        self.live.len() + self.retired.len()
    }

    /// Whether there is no row at all (the map was never bootstrapped).
    pub fn is_empty(&self) -> bool {
        self.live.is_empty() && self.retired.is_empty()
    }

    /// Every row, live and retired, in id order.
    pub fn values(&self) -> impl Iterator<Item = &RangeRow> + '_ {
        let (mut a, mut b) = (self.live.values().peekable(), self.retired.values().peekable());
        std::iter::from_fn(move || match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if y.id < x.id => b.next(),
            (Some(_), _) => a.next(),
            (None, _) => b.next(),
        })
        .map(|r| &**r)
    }

    /// The live rows, by id.
    pub fn live(&self) -> &BTreeMap<RangeId, SharedRow> {
        &self.live
    }

    /// The retired rows, by id.
    pub fn retired(&self) -> &BTreeMap<RangeId, SharedRow> {
        &self.retired
    }

    /// The start and end keys of the retired rows, bytes in all (what a message carrying the
    /// map charges for them, without walking them).
    pub fn retired_key_bytes(&self) -> u64 {
        self.retired_key_bytes
    }

    /// Whether `self` and `other` share one copy of the retired rows (so they have the same
    /// ones): a version that retired nothing shares its predecessor's.
    pub fn same_lineage(&self, other: &Rows) -> bool {
        std::sync::Arc::ptr_eq(&self.retired, &other.retired)
    }
}

/// Hashes the live rows (as their `BTreeMap`), then the retired rows' count and the sum of their
/// digests: a trace hash (which hashes every map version) costs the live rows per version, not
/// the whole lineage again, and still changes when a retired row differs.
impl std::hash::Hash for Rows {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.live.hash(state);
        state.write_usize(self.retired.len());
        state.write_u64(self.retired_digest);
    }
}

/// A retired row's digest: its FxHash (deterministic: no random seed) through MurmurHash3's
/// 64-bit finalizer. FxHash alone is nearly linear (wrapping add and multiply, a rotate), so in
/// a sum of them changes to two rows that cancel (two parents' sealed lengths swapped) often
/// gave the same total; mixed, they do not (a review found the collisions; test
/// `map_digest_tells_swapped_values_of_two_retired_rows_apart`).
fn row_digest(row: &RangeRow) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let mut h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(row);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl std::ops::Index<&RangeId> for Rows {
    type Output = RangeRow;

    /// The row of `id`, live or retired. Panics if there is none.
    fn index(&self, id: &RangeId) -> &RangeRow {
        self.get(id).unwrap_or_else(|| panic!("no row {id}"))
    }
}

/// The partition map: rows plus the version and the global epoch and range-id counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PartitionMap {
    /// Bumped by every committed batch of ops.
    pub version: u64,
    /// The last epoch handed out (global across ranges, so children outrank parents).
    pub last_epoch: u64,
    /// The last range id handed out.
    pub last_range_id: u64,
    /// All rows: the live ones (any state but `Retired`) and, kept apart and shared between
    /// versions, the retired ones (the lineage).
    pub rows: Rows,
    /// The transfer journal: planned moves in flight (or aborted, awaiting rollback), by range.
    pub transfers: BTreeMap<RangeId, Transfer>,
    /// Splits and merges in flight (or aborted, awaiting rollback), by first parent.
    pub reshapes: BTreeMap<RangeId, Reshape>,
    /// Operator move requests not yet started: range → target.
    pub move_requests: BTreeMap<RangeId, ServerId>,
    /// Servers being drained by operator request.
    pub draining: BTreeSet<ServerId>,
    /// Operator split and merge requests not yet started, by the range to split or the left
    /// range of the merge (a later request for it replaces an earlier one).
    pub reshape_requests: BTreeMap<RangeId, ReshapeRequest>,
}

/// One map version shared by everything that holds it: the authority's current map,
/// its durable record, the commit event and every `Map`, `State` and `CasResult` answer of that
/// version point at one copy. A new version is a copy of the current one with a batch applied
/// (copy on write).
pub type SharedMap = std::sync::Arc<PartitionMap>;

/// An operator's split or merge request (see [`MapOp::RequestSplit`], [`MapOp::RequestMerge`]),
/// kept in [`PartitionMap::reshape_requests`] under its first range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReshapeRequest {
    /// Split the range at this key.
    Split(Key),
    /// Merge the range with this right neighbour.
    Merge(RangeId),
}

thread_local! {
    /// Mutation `map-forgets-reshapes` is on for the maps of the run on this thread.
    static FORGETS_RESHAPES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Switch mutation `map-forgets-reshapes` ([`crate::config::Mutation::MapForgetsReshapes`]) on
/// or off for every map used on this thread: [`PartitionMap::reshape_of`] then returns nothing,
/// for the authority, the managers and the map's own phase checks alike (a simulation runs
/// every node on one thread). The harness sets it for a run's nodes and clears it before the
/// checkers judge; nothing else calls it.
pub fn forget_reshapes(on: bool) {
    FORGETS_RESHAPES.with(|f| f.set(on));
}

impl PartitionMap {
    /// Apply `ops` atomically and bump the version once. On error nothing changes.
    pub fn apply_batch(&mut self, ops: &[MapOp]) -> Result<(), MapError> {
        let mut next = self.clone();
        for op in ops {
            next.apply_one(op)?;
        }
        next.version += 1;
        debug_assert!(next.check_tiling().is_ok(), "{:?}", next.check_tiling());
        *self = next;
        Ok(())
    }

    fn new_epoch(&mut self) -> Epoch {
        self.last_epoch += 1;
        Epoch(self.last_epoch)
    }

    fn new_row(&mut self, start: Key, end: Option<Key>, sources: Vec<RangeId>) -> RangeId {
        self.last_range_id += 1;
        let id = RangeId(self.last_range_id);
        let row = RangeRow {
            id,
            start,
            end,
            owner: None,
            owner_session: 0,
            epoch: Epoch(0),
            state: RangeState::Preparing,
            sources,
            sealed: 0,
            born_ms: 0,
        };
        self.rows.insert(id, row);
        id
    }

    /// The reshape in the journal that involves `range` as a parent, keyed by its first parent.
    /// Always `None` under mutation `map-forgets-reshapes` (see [`forget_reshapes`]).
    pub fn reshape_of(&self, range: RangeId) -> Option<&Reshape> {
        if FORGETS_RESHAPES.with(std::cell::Cell::get) {
            return None;
        }
        self.reshapes.values().find(|r| r.parents.iter().any(|(p, _)| *p == range))
    }

    /// Whether `range` is in any journal entry (move, split or merge).
    pub fn in_flight(&self, range: RangeId) -> bool {
        self.transfers.contains_key(&range) || self.reshape_of(range).is_some()
    }

    fn child_plan(&mut self, start: Key, end: Option<Key>, owner: (ServerId, u64)) -> ChildPlan {
        self.last_range_id += 1;
        let id = RangeId(self.last_range_id);
        ChildPlan { id, start, end, owner, epoch: self.new_epoch() }
    }

    /// A copy of the `Active` row of `range`, which no journal entry involves.
    fn idle_row(&mut self, range: RangeId) -> Result<RangeRow, MapError> {
        if self.in_flight(range) {
            return Err(MapError::WrongPhase(range));
        }
        let row = self.live_ref(range)?;
        if row.state != RangeState::Active || row.owner.is_none() {
            return Err(MapError::WrongState(range, row.state));
        }
        Ok(row.clone())
    }

    /// The live row of `range`, to read. Errors: `WrongState` for a retired range,
    /// `UnknownRange` for one the map never had.
    fn live_ref(&self, range: RangeId) -> Result<&RangeRow, MapError> {
        if self.rows.retired().contains_key(&range) {
            return Err(MapError::WrongState(range, RangeState::Retired));
        }
        self.rows.live().get(&range).map(|r| &**r).ok_or(MapError::UnknownRange(range))
    }

    /// The live row of `range`, to change: this version's own copy (see [`Rows::get_mut`]).
    /// Errors: as [`PartitionMap::live_ref`].
    fn live_row(&mut self, range: RangeId) -> Result<&mut RangeRow, MapError> {
        self.live_ref(range)?;
        Ok(self.rows.get_mut(&range).expect("live"))
    }

    fn apply_one(&mut self, op: &MapOp) -> Result<(), MapError> {
        match op {
            MapOp::Bootstrap { split_points } => {
                if !self.rows.is_empty() {
                    return Err(MapError::NotEmpty);
                }
                let increasing = split_points.windows(2).all(|w| w[0] < w[1]);
                if !increasing || split_points.iter().any(|k| k.is_empty()) {
                    return Err(MapError::BadSplitPoints);
                }
                let mut start = Vec::new();
                for point in split_points {
                    self.new_row(start, Some(point.clone()), Vec::new());
                    start = point.clone();
                }
                self.new_row(start, None, Vec::new());
            }
            MapOp::Assign { range, owner, owner_session } => {
                // A new owner supersedes any move in flight (failover, or the rollback of an
                // aborted move): its fence outranks the transfer's epoch.
                self.transfers.remove(range);
                self.reshapes.retain(|_, r| r.parents.iter().all(|(p, _)| p != range));
                self.move_requests.remove(range);
                let epoch = self.new_epoch();
                let row = self.live_row(*range)?;
                assert!(epoch > row.epoch, "epochs only grow");
                row.owner = Some(*owner);
                row.owner_session = *owner_session;
                row.epoch = epoch;
                row.state = RangeState::Preparing;
            }
            MapOp::Activate { range, epoch } => {
                let row = self.live_row(*range)?;
                if row.epoch != *epoch {
                    return Err(MapError::StaleEpoch { range: *range, row: row.epoch, asked: *epoch });
                }
                // Found by the move proptest: activating a never-assigned row made an ownerless
                // active row.
                if row.state != RangeState::Preparing || row.owner.is_none() {
                    return Err(MapError::WrongState(*range, row.state));
                }
                row.state = RangeState::Active;
            }
            MapOp::BeginSplit { range, at, owners } => {
                let parent = self.idle_row(*range)?;
                let inside = at > &parent.start && parent.end.as_ref().is_none_or(|e| at < e);
                if !inside {
                    return Err(MapError::BadSplitKey(*range));
                }
                let left = self.child_plan(parent.start.clone(), Some(at.clone()), owners[0]);
                let right = self.child_plan(at.clone(), parent.end.clone(), owners[1]);
                let r = Reshape { kind: ReshapeKind::Split, parents: vec![(*range, parent.epoch)], children: vec![left, right], phase: TransferPhase::Copying };
                self.reshapes.insert(*range, r);
                self.reshape_requests.remove(range);
            }
            MapOp::BeginMerge { left, right, owner } => {
                let l = self.idle_row(*left)?;
                let r = self.idle_row(*right)?;
                if l.end.as_ref() != Some(&r.start) {
                    return Err(MapError::NotAdjacent(*left, *right));
                }
                let child = self.child_plan(l.start.clone(), r.end.clone(), *owner);
                let m = Reshape { kind: ReshapeKind::Merge, parents: vec![(*left, l.epoch), (*right, r.epoch)], children: vec![child], phase: TransferPhase::Copying };
                self.reshapes.insert(*left, m);
                self.reshape_requests.remove(left);
            }
            MapOp::PauseReshape { first } => {
                let r = self.reshapes.get(first).ok_or(MapError::NoTransfer(*first))?.clone();
                if r.phase != TransferPhase::Copying {
                    return Err(MapError::WrongPhase(*first));
                }
                for (p, epoch) in &r.parents {
                    let row = self.live_row(*p)?;
                    if row.state != RangeState::Active || row.epoch != *epoch {
                        return Err(MapError::WrongState(*p, row.state));
                    }
                    row.state = RangeState::Paused;
                }
                self.reshapes.get_mut(first).expect("checked").phase = TransferPhase::Paused;
            }
            MapOp::CommitReshape { first, sealed, born_ms } => {
                let r = self.reshapes.get(first).ok_or(MapError::NoTransfer(*first))?.clone();
                if r.phase != TransferPhase::Paused || sealed.len() != r.parents.len() {
                    return Err(MapError::WrongPhase(*first));
                }
                let sources: Vec<RangeId> = r.parents.iter().map(|(p, _)| *p).collect();
                for ((p, epoch), len) in r.parents.iter().zip(sealed) {
                    let row = self.live_ref(*p)?;
                    if row.state != RangeState::Paused || row.epoch != *epoch {
                        return Err(MapError::WrongState(*p, row.state));
                    }
                    self.rows.retire(p, *len);
                }
                // A request naming a retired range can no longer be carried out.
                self.reshape_requests.retain(|first, req| !sources.contains(first) && !matches!(req, ReshapeRequest::Merge(right) if sources.contains(right)));
                for c in &r.children {
                    assert!(r.parents.iter().all(|(_, e)| c.epoch > *e), "children outrank parents");
                    self.rows.insert(c.id, c.row(sources.clone(), RangeState::Active, *born_ms));
                }
                self.reshapes.remove(first);
            }
            MapOp::AbortReshape { first, error } => {
                let r = self.reshapes.get_mut(first).ok_or(MapError::NoTransfer(*first))?;
                match r.phase {
                    TransferPhase::Copying => {
                        self.reshapes.remove(first);
                    }
                    TransferPhase::Paused => r.phase = TransferPhase::Aborted(error.clone()),
                    TransferPhase::Aborted(_) => return Err(MapError::WrongPhase(*first)),
                }
            }
            MapOp::BeginMove { range, to, strategy } => {
                let row = self.live_ref(*range)?.clone();
                if row.state != RangeState::Active {
                    return Err(MapError::WrongState(*range, row.state));
                }
                if self.in_flight(*range) {
                    return Err(MapError::WrongPhase(*range));
                }
                let epoch = self.new_epoch();
                let Some(owner) = row.owner else { return Err(MapError::WrongState(*range, row.state)) };
                let from = (owner, row.owner_session);
                let t = Transfer { range: *range, from, from_epoch: row.epoch, to: *to, epoch, strategy: *strategy, phase: TransferPhase::Copying };
                self.transfers.insert(*range, t);
                self.move_requests.remove(range);
            }
            MapOp::PauseMove { range } => {
                let t = self.transfers.get_mut(range).ok_or(MapError::NoTransfer(*range))?;
                if t.phase != TransferPhase::Copying {
                    return Err(MapError::WrongPhase(*range));
                }
                t.phase = TransferPhase::Paused;
                let from_epoch = t.from_epoch;
                let row = self.live_row(*range)?;
                if row.state != RangeState::Active || row.epoch != from_epoch {
                    return Err(MapError::WrongState(*range, row.state));
                }
                row.state = RangeState::Paused;
            }
            MapOp::CommitMove { range } => {
                let t = self.transfers.remove(range).ok_or(MapError::NoTransfer(*range))?;
                if t.phase != TransferPhase::Paused {
                    return Err(MapError::WrongPhase(*range));
                }
                let row = self.live_row(*range)?;
                if row.state != RangeState::Paused || row.epoch != t.from_epoch {
                    return Err(MapError::WrongState(*range, row.state));
                }
                assert!(t.epoch > row.epoch, "epochs only grow");
                row.owner = Some(t.to.0);
                row.owner_session = t.to.1;
                row.epoch = t.epoch;
                row.state = RangeState::Active;
            }
            MapOp::AbortMove { range, error } => {
                let t = self.transfers.get_mut(range).ok_or(MapError::NoTransfer(*range))?;
                match t.phase {
                    TransferPhase::Copying => {
                        self.transfers.remove(range);
                    }
                    TransferPhase::Paused => t.phase = TransferPhase::Aborted(error.clone()),
                    TransferPhase::Aborted(_) => return Err(MapError::WrongPhase(*range)),
                }
            }
            MapOp::RequestMove { range, to } => {
                self.live_ref(*range)?;
                self.move_requests.insert(*range, *to);
            }
            MapOp::RequestSplit { range, at } => {
                if self.in_flight(*range) {
                    return Err(MapError::Busy(*range));
                }
                let row = self.idle_row(*range)?;
                if at <= &row.start || row.end.as_ref().is_some_and(|e| at >= e) {
                    return Err(MapError::BadSplitKey(*range));
                }
                self.reshape_requests.insert(*range, ReshapeRequest::Split(at.clone()));
            }
            MapOp::RequestMerge { left, right } => {
                if let Some(busy) = [*left, *right].into_iter().find(|r| self.in_flight(*r)) {
                    return Err(MapError::Busy(busy));
                }
                let (l, r) = (self.idle_row(*left)?, self.idle_row(*right)?);
                if l.end.as_ref() != Some(&r.start) {
                    return Err(MapError::NotAdjacent(*left, *right));
                }
                self.reshape_requests.insert(*left, ReshapeRequest::Merge(*right));
            }
            MapOp::Drain { server, on } => {
                if self.rows.is_empty() {
                    return Err(MapError::NotBootstrapped);
                }
                if *on {
                    self.draining.insert(*server);
                } else {
                    self.draining.remove(server);
                }
            }
        }
        Ok(())
    }

    /// The non-retired rows in key order.
    pub fn live_rows(&self) -> Vec<&RangeRow> {
        // (The filter holds only if a caller set `Retired` through `Rows::get_mut`.)
        let mut rows: Vec<&RangeRow> = self.rows.live().values().map(|r| &**r).filter(|r| r.state != RangeState::Retired).collect();
        rows.sort_by(|a, b| a.start.cmp(&b.start));
        rows
    }

    /// The non-retired row whose `[start, end)` holds `key`.
    pub fn lookup(&self, key: &[u8]) -> Option<&RangeRow> {
        self.rows.live().values().map(|r| &**r).find(|r| r.state != RangeState::Retired && r.contains(key))
    }

    /// Check that the non-retired rows tile the key space. An empty map tiles trivially.
    ///
    /// Errors: the first gap or overlap found, in key order, as a readable message.
    pub fn check_tiling(&self) -> Result<(), String> {
        let rows = self.live_rows();
        if let Some(r) = rows.iter().find(|r| r.end.as_ref().is_some_and(|e| *e <= r.start)) {
            return Err(format!("{} is empty or backwards: [{}, {})", r.id, show_key(&r.start), show_key(r.end.as_ref().expect("bounded"))));
        }
        let Some(first) = rows.first() else { return Ok(()) };
        if !first.start.is_empty() {
            return Err(format!("gap: nothing covers [\"\", {})", show_key(&first.start)));
        }
        for pair in rows.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            match &a.end {
                None => return Err(format!("overlap: {} is unbounded but {} starts at {}", a.id, b.id, show_key(&b.start))),
                Some(end) if end < &b.start => {
                    return Err(format!("gap: nothing covers [{}, {}) between {} and {}", show_key(end), show_key(&b.start), a.id, b.id))
                }
                Some(end) if end > &b.start => {
                    return Err(format!("overlap: {} ends at {} after {} starts at {}", a.id, show_key(end), b.id, show_key(&b.start)))
                }
                Some(_) => {}
            }
        }
        let last = rows.last().expect("non-empty");
        if let Some(end) = &last.end {
            return Err(format!("gap: nothing covers [{}, unbounded) after {}", show_key(end), last.id));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Epoch, MapError, MapOp, PartitionMap, RangeId, RangeRow, RangeState, Rows, ServerId, TransferPhase};
    use std::collections::BTreeMap;
    use proptest::prelude::*;

    fn boot(points: &[&str]) -> PartitionMap {
        let mut map = PartitionMap::default();
        let split_points = points.iter().map(|p| p.as_bytes().to_vec()).collect();
        map.apply_batch(&[MapOp::Bootstrap { split_points }]).unwrap();
        map
    }

    /// Which refusals are of a state that passes (the operator sends those again): no map yet,
    /// busy, wrong state or phase; a bad key, a pair not adjacent or an unknown range do not.
    #[test]
    fn map_error_may_pass_only_for_states_that_pass() {
        let r = RangeId(1);
        for e in [MapError::NotBootstrapped, MapError::Busy(r), MapError::WrongState(r, RangeState::Preparing), MapError::WrongPhase(r)] {
            assert!(e.may_pass(), "{e}");
        }
        let stale = MapError::StaleEpoch { range: r, row: Epoch(2), asked: Epoch(1) };
        for e in [MapError::NotEmpty, MapError::BadSplitPoints, MapError::UnknownRange(r), stale, MapError::BadSplitKey(r), MapError::NotAdjacent(r, RangeId(2)), MapError::NoTransfer(r)] {
            assert!(!e.may_pass(), "{e}");
        }
    }

    #[test]
    fn map_bootstrap_tiles_and_lookup_finds_owner() {
        let map = boot(&["g", "p"]);
        assert_eq!(map.live_rows().len(), 3);
        map.check_tiling().unwrap();
        assert_eq!(map.lookup(b"").unwrap().id, RangeId(1));
        assert_eq!(map.lookup(b"g").unwrap().id, RangeId(2));
        assert_eq!(map.lookup(b"zzz").unwrap().id, RangeId(3));
        assert_eq!(map.version, 1);
    }

    /// An operator's drain that reaches the authority before the leader's bootstrap would commit
    /// version 1 with no rows. It must be refused instead.
    #[test]
    fn map_refuses_an_operator_request_before_the_bootstrap() {
        let mut map = PartitionMap::default();
        assert_eq!(map.apply_batch(&[MapOp::Drain { server: ServerId(3), on: true }]), Err(MapError::NotBootstrapped));
        assert_eq!(map, PartitionMap::default(), "nothing changes");
        assert!(map.apply_batch(&[MapOp::RequestMove { range: RangeId(1), to: ServerId(2) }]).is_err());
        let mut map = boot(&["m"]);
        map.apply_batch(&[MapOp::Drain { server: ServerId(3), on: true }]).unwrap();
        assert!(map.draining.contains(&ServerId(3)));
    }

    #[test]
    fn map_failed_batch_changes_nothing() {
        let mut map = boot(&["m"]);
        let before = map.clone();
        let ops = [
            MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 },
            MapOp::Activate { range: RangeId(1), epoch: Epoch(99) },
        ];
        assert!(matches!(map.apply_batch(&ops), Err(MapError::StaleEpoch { .. })));
        assert_eq!(map, before);
    }

    #[test]
    fn map_tiling_flags_a_hole_left_by_retiring_parent_early() {
        // HBASE-5986: the parent was retired before the children were visible.
        let mut map = boot(&["m"]);
        map.rows.retire(&RangeId(1), 0);
        let err = map.check_tiling().unwrap_err();
        assert!(err.starts_with("gap"), "{err}");
    }

    /// The worked move: journal, pause, commit; the row changes owner and epoch only at the
    /// commit, and an abort while paused leaves it paused until an assignment rolls it back.
    #[test]
    fn map_move_commits_at_the_new_epoch_and_abort_keeps_the_range_paused() {
        let mut map = boot(&[]);
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
        map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
        let begin = MapOp::BeginMove { range: RangeId(1), to: (ServerId(2), 2), strategy: super::Strategy::PreCopy };
        map.apply_batch(std::slice::from_ref(&begin)).unwrap();
        assert_eq!(map.transfers[&RangeId(1)].epoch, Epoch(2));
        assert_eq!(map.rows[&RangeId(1)].epoch, Epoch(1), "the source serves until the commit");
        assert_eq!(map.apply_batch(&[begin]), Err(MapError::WrongPhase(RangeId(1))));
        assert_eq!(map.apply_batch(&[MapOp::CommitMove { range: RangeId(1) }]), Err(MapError::WrongPhase(RangeId(1))), "commit before the pause");
        let mut aborted = map.clone();
        map.apply_batch(&[MapOp::PauseMove { range: RangeId(1) }]).unwrap();
        map.apply_batch(&[MapOp::CommitMove { range: RangeId(1) }]).unwrap();
        let row = &map.rows[&RangeId(1)];
        assert_eq!((row.owner, row.epoch, row.state), (Some(ServerId(2)), Epoch(2), RangeState::Active));
        assert!(map.transfers.is_empty());

        aborted.apply_batch(&[MapOp::PauseMove { range: RangeId(1) }]).unwrap();
        aborted.apply_batch(&[MapOp::AbortMove { range: RangeId(1), error: "checksum".into() }]).unwrap();
        assert_eq!(aborted.rows[&RangeId(1)].state, RangeState::Paused);
        assert_eq!(aborted.transfers[&RangeId(1)].phase, TransferPhase::Aborted("checksum".into()));
        aborted.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
        assert_eq!(aborted.rows[&RangeId(1)].epoch, Epoch(3), "the rollback outranks the aborted transfer's epoch");
        assert!(aborted.transfers.is_empty());
    }

    fn two_active() -> PartitionMap {
        let mut map = boot(&["m"]);
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }, MapOp::Assign { range: RangeId(2), owner: ServerId(2), owner_session: 2 }]).unwrap();
        map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }, MapOp::Activate { range: RangeId(2), epoch: Epoch(2) }]).unwrap();
        map
    }

    /// A split journals its children, pauses the parent, and one commit retires the parent
    /// (with its sealed length) and activates the children at epochs above the parent's.
    #[test]
    fn map_split_commits_children_in_one_step() {
        let mut map = two_active();
        map.apply_batch(&[MapOp::BeginSplit { range: RangeId(1), at: b"f".to_vec(), owners: [(ServerId(1), 1), (ServerId(3), 3)] }]).unwrap();
        assert_eq!(map.live_rows().len(), 2, "children appear only at the commit");
        map.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
        map.apply_batch(&[MapOp::CommitReshape { first: RangeId(1), sealed: vec![42], born_ms: 9 }]).unwrap();
        let live: Vec<(Vec<u8>, Option<ServerId>, RangeState)> = map.live_rows().iter().map(|r| (r.start.clone(), r.owner, r.state)).collect();
        assert_eq!(live, vec![(b"".to_vec(), Some(ServerId(1)), RangeState::Active), (b"f".to_vec(), Some(ServerId(3)), RangeState::Active), (b"m".to_vec(), Some(ServerId(2)), RangeState::Active)]);
        assert_eq!(map.rows[&RangeId(1)].sealed, 42);
        assert!(map.live_rows().iter().filter(|r| r.sources == vec![RangeId(1)]).all(|r| r.epoch > Epoch(2) && r.born_ms == 9));
        map.check_tiling().unwrap();
    }

    /// A table's hash, as the trace hash takes it (through `Hash`).
    fn hash_of(rows: &Rows) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut s = std::collections::hash_map::DefaultHasher::new();
        rows.hash(&mut s);
        s.finish()
    }

    /// The retired rows are kept apart from the live ones and shared by every version
    /// that retired nothing; the table still reads as one, in id order.
    #[test]
    fn map_keeps_retired_rows_apart_and_shares_them_between_versions() {
        let mut map = two_active();
        map.apply_batch(&[MapOp::BeginSplit { range: RangeId(1), at: b"f".to_vec(), owners: [(ServerId(1), 1), (ServerId(3), 3)] }]).unwrap();
        map.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
        let before = map.clone();
        map.apply_batch(&[MapOp::CommitReshape { first: RangeId(1), sealed: vec![42], born_ms: 9 }]).unwrap();
        assert!(!map.rows.same_lineage(&before.rows), "a commit that retires copies the lineage");
        let ids = |m: &BTreeMap<RangeId, super::SharedRow>| m.keys().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!((ids(map.rows.live()), ids(map.rows.retired())), (vec![2, 3, 4], vec![1]));
        assert_eq!(map.rows.values().map(|r| r.id.0).collect::<Vec<_>>(), vec![1, 2, 3, 4], "one table, in id order");
        assert_eq!((map.rows.len(), map.rows[&RangeId(1)].state, map.rows.retired_key_bytes()), (4, RangeState::Retired, 1));
        assert!(map.rows.get_mut(&RangeId(1)).is_none(), "a retired row never changes");
        // A version that retires nothing shares the lineage; an equal table hashes alike
        // however it is kept.
        let mut next = map.clone();
        next.apply_batch(&[MapOp::RequestMove { range: RangeId(3), to: ServerId(2) }]).unwrap();
        assert!(next.rows.same_lineage(&map.rows));
        // ... and every live row it did not change: a version copies only the rows it changes.
        let shared = |a: &PartitionMap, b: &PartitionMap| a.rows.live().iter().map(|(id, r)| std::sync::Arc::ptr_eq(r, &b.rows.live()[id])).collect::<Vec<_>>();
        assert_eq!(shared(&next, &map), vec![true, true, true]);
        let mut moved = next.clone();
        moved.apply_batch(&[MapOp::Assign { range: RangeId(3), owner: ServerId(2), owner_session: 2 }]).unwrap();
        assert_eq!(shared(&moved, &next), vec![true, false, true], "r3 copied, r2 and r4 shared");
        assert_eq!(next.rows[&RangeId(3)].owner, Some(ServerId(1)), "the older version keeps its row");
        let mut flat = Rows::default();
        for row in next.rows.values() {
            flat.insert(row.id, row.clone());
        }
        assert_eq!(flat, next.rows);
        assert_eq!(hash_of(&flat), hash_of(&next.rows), "equal tables hash alike, however built");
        // A retired row that differs changes the hash (it is not walked, its digest counts).
        let mut other = Rows::default();
        for row in next.rows.values() {
            let mut row = row.clone();
            if row.id == RangeId(1) {
                row.sealed = 41;
            }
            other.insert(row.id, row);
        }
        assert_ne!(hash_of(&other), hash_of(&flat), "a retired row's sealed length counts");
        // Re-inserting a retired row as live moves it back (and its key bytes out).
        let mut back = map.rows[&RangeId(1)].clone();
        back.state = RangeState::Active;
        flat.insert(RangeId(1), back);
        assert_eq!((flat.retired().len(), flat.retired_key_bytes(), flat.live().len()), (0, 0, 4));
    }

    /// Review of the retired rows' digest: a merge committed with its parents' sealed lengths
    /// swapped, or their epochs swapped, or one up and the other down by the same amount, makes
    /// unequal maps that must hash apart (a plain sum of FxHashes collided on 75 of the 190
    /// swaps of `[a, b]`, a < b < 20).
    #[test]
    fn map_digest_tells_swapped_values_of_two_retired_rows_apart() {
        let h = hash_of;
        let mut base = two_active();
        base.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(3), 3) }]).unwrap();
        base.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
        let commit = |sealed: Vec<u64>| {
            let mut m = base.clone();
            m.apply_batch(&[MapOp::CommitReshape { first: RangeId(1), sealed, born_ms: 9 }]).unwrap();
            m.rows
        };
        for a in 0..20u64 {
            for b in a + 1..20 {
                assert_ne!(h(&commit(vec![a, b])), h(&commit(vec![b, a])), "sealed [{a}, {b}] swapped");
            }
        }
        // Compensating changes: one row's sealed length up, the other's down.
        for d in 1..20u64 {
            assert_ne!(h(&commit(vec![20 + d, 20 - d])), h(&commit(vec![20, 20])), "sealed +{d} / -{d}");
        }
        // Two retired rows whose epochs are swapped (each row otherwise equal).
        let retired = |epochs: [u64; 2]| {
            let mut rows = Rows::default();
            for (i, e) in epochs.into_iter().enumerate() {
                let id = RangeId(i as u64 + 1);
                rows.insert(id, RangeRow { id, start: vec![], end: None, owner: None, owner_session: 0, epoch: Epoch(e), state: RangeState::Retired, sources: vec![], sealed: 0, born_ms: 0 });
            }
            rows
        };
        for a in 1..20u64 {
            for b in a + 1..20 {
                assert_ne!(h(&retired([a, b])), h(&retired([b, a])), "epochs [{a}, {b}] swapped");
            }
        }
    }

    /// A merge rolled back (its parents reassigned), after which one parent splits: the old
    /// merge can never commit, whatever its journal said.
    #[test]
    fn map_rolled_back_merge_never_commits_from_its_stale_view() {
        let mut map = two_active();
        map.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]).unwrap();
        map.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
        let stale = map.clone();
        map.apply_batch(&[MapOp::AbortReshape { first: RangeId(1), error: "lost".into() }]).unwrap();
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }, MapOp::Assign { range: RangeId(2), owner: ServerId(2), owner_session: 2 }]).unwrap();
        assert!(map.reshapes.is_empty(), "the rollback drops the merge");
        let commit = MapOp::CommitReshape { first: RangeId(1), sealed: vec![1, 1], born_ms: 0 };
        assert_eq!(map.apply_batch(std::slice::from_ref(&commit)), Err(MapError::NoTransfer(RangeId(1))));
        // Even a journal entry that looks the same cannot commit once a parent moved on.
        let mut racing = stale.clone();
        racing.rows.get_mut(&RangeId(2)).unwrap().epoch = Epoch(9);
        assert_eq!(racing.apply_batch(std::slice::from_ref(&commit)), Err(MapError::WrongState(RangeId(2), RangeState::Paused)));
        stale.clone().apply_batch(&[commit]).unwrap();
    }

    fn row_at(map: &mut PartitionMap, id: u64, start: &str, end: Option<&str>) {
        let row = RangeRow {
            id: RangeId(id),
            start: start.as_bytes().to_vec(),
            end: end.map(|e| e.as_bytes().to_vec()),
            owner: None,
            owner_session: 0,
            epoch: Epoch(0),
            state: RangeState::Active,
            sources: vec![],
            sealed: 0,
            born_ms: 0,
        };
        map.rows.insert(RangeId(id), row);
    }

    fn tiling(rows: &[(&str, Option<&str>)]) -> Result<(), String> {
        let mut map = PartitionMap::default();
        for (i, (start, end)) in rows.iter().enumerate() {
            row_at(&mut map, i as u64 + 1, start, *end);
        }
        map.check_tiling()
    }

    /// The tiling check itself (the proptest's and `map_tiles`' judge): each kind of gap and
    /// overlap is reported, and a proper tiling passes.
    #[test]
    fn map_tiling_check_reports_every_gap_and_overlap() {
        tiling(&[]).unwrap();
        tiling(&[("", None)]).unwrap();
        tiling(&[("", Some("g")), ("g", Some("p")), ("p", None)]).unwrap();
        let err = |rows: &[(&str, Option<&str>)]| tiling(rows).unwrap_err();
        assert!(err(&[("a", None)]).starts_with("gap: nothing covers [\"\", "), "first row must start at the empty key");
        assert!(err(&[("", Some("g"))]).starts_with("gap: nothing covers [g, unbounded)"), "{}", err(&[("", Some("g"))]));
        assert!(err(&[("", Some("g")), ("h", None)]).starts_with("gap: nothing covers [g, h)"));
        assert!(err(&[("", Some("h")), ("g", None)]).starts_with("overlap: r1 ends at h"), "{}", err(&[("", Some("h")), ("g", None)]));
        assert!(err(&[("", None), ("g", None)]).starts_with("overlap: r1 is unbounded"), "{}", err(&[("", None), ("g", None)]));
        assert!(err(&[("", Some("g")), ("g", Some("g")), ("g", None)]).contains("empty or backwards"));
        assert!(err(&[("", Some("g")), ("g", Some("c")), ("c", None)]).contains("empty or backwards"));
        // Retired rows do not count.
        let mut map = PartitionMap::default();
        row_at(&mut map, 1, "", None);
        row_at(&mut map, 2, "a", Some("b"));
        map.rows.retire(&RangeId(2), 0);
        map.check_tiling().unwrap();
        assert_eq!(map.lookup(b"a").unwrap().id, RangeId(1), "lookup skips retired rows");
        assert_eq!(map.live_rows().len(), 1);
    }

    #[test]
    fn map_bootstrap_refuses_a_second_bootstrap_and_bad_split_points() {
        let mut map = PartitionMap::default();
        let boot = |points: &[&str]| MapOp::Bootstrap { split_points: points.iter().map(|p| p.as_bytes().to_vec()).collect() };
        assert_eq!(map.apply_batch(&[boot(&["b", "a"])]), Err(MapError::BadSplitPoints));
        assert_eq!(map.apply_batch(&[boot(&["a", "a"])]), Err(MapError::BadSplitPoints));
        assert_eq!(map.apply_batch(&[boot(&["", "a"])]), Err(MapError::BadSplitPoints));
        map.apply_batch(&[boot(&["a", "b"])]).unwrap();
        let bounds: Vec<(Vec<u8>, Option<Vec<u8>>)> = map.live_rows().iter().map(|r| (r.start.clone(), r.end.clone())).collect();
        assert_eq!(bounds, vec![(b"".to_vec(), Some(b"a".to_vec())), (b"a".to_vec(), Some(b"b".to_vec())), (b"b".to_vec(), None)]);
        assert!(map.rows.values().all(|r| r.state == RangeState::Preparing && r.owner.is_none() && r.epoch == Epoch(0)));
        assert_eq!(map.apply_batch(&[boot(&[])]), Err(MapError::NotEmpty));
        assert_eq!(map.last_range_id, 3);
    }

    #[test]
    fn map_assign_and_activate_rules() {
        let mut map = boot(&["m"]);
        assert_eq!(map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(0) }]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)), "never assigned: no owner");
        assert_eq!(map.apply_batch(&[MapOp::Assign { range: RangeId(9), owner: ServerId(1), owner_session: 1 }]), Err(MapError::UnknownRange(RangeId(9))));
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 4 }]).unwrap();
        let row = &map.rows[&RangeId(1)];
        assert_eq!((row.owner, row.owner_session, row.epoch, row.state), (Some(ServerId(1)), 4, Epoch(1), RangeState::Preparing));
        assert_eq!(map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(2) }]), Err(MapError::StaleEpoch { range: RangeId(1), row: Epoch(1), asked: Epoch(2) }));
        map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
        assert_eq!(map.rows[&RangeId(1)].state, RangeState::Active);
        assert_eq!(map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]), Err(MapError::WrongState(RangeId(1), RangeState::Active)), "twice");
        // A reassignment: new epoch, preparing again, and the operator's request for it goes.
        map.apply_batch(&[MapOp::RequestMove { range: RangeId(1), to: ServerId(3) }]).unwrap();
        assert_eq!(map.move_requests.get(&RangeId(1)), Some(&ServerId(3)));
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(2), owner_session: 5 }]).unwrap();
        let row = &map.rows[&RangeId(1)];
        assert_eq!((row.owner, row.epoch, row.state), (Some(ServerId(2)), Epoch(2), RangeState::Preparing));
        assert!(map.move_requests.is_empty());
        assert_eq!(map.last_epoch, 2);
    }

    /// A range in a split, a merge or a move cannot be picked for another (the issue-19 mutant
    /// `reshape_of` returning nothing let it be).
    #[test]
    fn map_a_range_in_flight_is_not_picked_again() {
        let mut map = two_active();
        map.apply_batch(&[MapOp::BeginSplit { range: RangeId(1), at: b"f".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] }]).unwrap();
        assert_eq!(map.reshape_of(RangeId(1)).map(|r| r.kind), Some(super::ReshapeKind::Split));
        assert!(map.reshape_of(RangeId(2)).is_none());
        assert!(map.in_flight(RangeId(1)) && !map.in_flight(RangeId(2)));
        let again = [
            MapOp::BeginSplit { range: RangeId(1), at: b"c".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] },
            MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) },
            MapOp::BeginMove { range: RangeId(1), to: (ServerId(2), 2), strategy: super::Strategy::StopAndCopy },
        ];
        for op in &again {
            assert_eq!(map.apply_batch(std::slice::from_ref(op)), Err(MapError::WrongPhase(RangeId(1))), "{op:?}");
        }
        // The merge's right parent is in flight too.
        let mut merging = two_active();
        merging.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]).unwrap();
        assert_eq!(merging.reshape_of(RangeId(2)).map(|r| r.parents.len()), Some(2));
        assert!(merging.in_flight(RangeId(2)));
        assert_eq!(merging.apply_batch(&[MapOp::BeginMove { range: RangeId(2), to: (ServerId(1), 1), strategy: super::Strategy::PreCopy }]), Err(MapError::WrongPhase(RangeId(2))));
        assert_eq!(merging.apply_batch(&[MapOp::BeginSplit { range: RangeId(2), at: b"t".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] }]), Err(MapError::WrongPhase(RangeId(2))));
        // A move is in flight as well.
        let mut moving = two_active();
        moving.apply_batch(&[MapOp::BeginMove { range: RangeId(2), to: (ServerId(1), 1), strategy: super::Strategy::PreCopy }]).unwrap();
        assert!(moving.in_flight(RangeId(2)));
        assert_eq!(moving.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]), Err(MapError::WrongPhase(RangeId(2))));
        // A failover of the parent drops the split from the journal.
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(3), owner_session: 3 }]).unwrap();
        assert!(map.reshapes.is_empty() && !map.in_flight(RangeId(1)));
    }

    #[test]
    fn map_split_and_merge_refuse_bad_keys_and_non_neighbours() {
        let mut map = two_active(); // r1 ["", m), r2 [m, unbounded)
        let split = |range: u64, at: &str| MapOp::BeginSplit { range: RangeId(range), at: at.as_bytes().to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] };
        assert_eq!(map.apply_batch(&[split(1, "")]), Err(MapError::BadSplitKey(RangeId(1))), "at the start");
        assert_eq!(map.apply_batch(&[split(1, "m")]), Err(MapError::BadSplitKey(RangeId(1))), "at the end");
        assert_eq!(map.apply_batch(&[split(1, "x")]), Err(MapError::BadSplitKey(RangeId(1))), "past the end");
        assert_eq!(map.apply_batch(&[split(2, "m")]), Err(MapError::BadSplitKey(RangeId(2))));
        map.clone().apply_batch(&[split(2, "zz")]).unwrap();
        assert_eq!(map.apply_batch(&[MapOp::BeginMerge { left: RangeId(2), right: RangeId(1), owner: (ServerId(1), 1) }]), Err(MapError::NotAdjacent(RangeId(2), RangeId(1))));
        map.apply_batch(&[split(1, "f")]).unwrap();
        let r = &map.reshapes[&RangeId(1)];
        let cuts: Vec<String> = r.children.iter().map(|c| format!("{} [{:?}, {:?}) at {}", c.id, c.start, c.end, c.epoch)).collect();
        assert_eq!(cuts, vec!["r3 [[], Some([102])) at e3", "r4 [[102], Some([109])) at e4"]);
        assert_eq!(r.parents, vec![(RangeId(1), Epoch(1))]);
        assert_eq!(r.phase, TransferPhase::Copying);
        // A split of a range not active.
        let mut fresh = boot(&[]);
        assert_eq!(fresh.apply_batch(&[split(1, "a")]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)));
        fresh.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
        assert_eq!(fresh.apply_batch(&[split(1, "a")]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)), "owned but not active yet");
        // A merge's child spans both parents.
        let mut m = two_active();
        m.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(3), 3) }]).unwrap();
        let c = &m.reshapes[&RangeId(1)].children[0];
        assert_eq!((c.start.clone(), c.end.clone(), c.owner), (b"".to_vec(), None, (ServerId(3), 3)));
    }

    #[test]
    fn map_reshape_phases_pause_commit_and_abort() {
        let mut map = two_active();
        let first = RangeId(1);
        assert_eq!(map.apply_batch(&[MapOp::PauseReshape { first }]), Err(MapError::NoTransfer(first)));
        map.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]).unwrap();
        // Abort before the pause: the entry goes, the parents serve on.
        let mut early = map.clone();
        early.apply_batch(&[MapOp::AbortReshape { first, error: "x".into() }]).unwrap();
        assert!(early.reshapes.is_empty());
        assert!(early.live_rows().iter().all(|r| r.state == RangeState::Active));
        assert_eq!(map.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![1, 1], born_ms: 0 }]), Err(MapError::WrongPhase(first)), "commit before the pause");
        // A parent that moved on since the journal cannot be paused.
        let mut moved = map.clone();
        moved.rows.get_mut(&RangeId(2)).unwrap().epoch = Epoch(7);
        assert_eq!(moved.apply_batch(&[MapOp::PauseReshape { first }]), Err(MapError::WrongState(RangeId(2), RangeState::Active)));
        map.apply_batch(&[MapOp::PauseReshape { first }]).unwrap();
        assert!(map.live_rows().iter().all(|r| r.state == RangeState::Paused));
        assert_eq!(map.apply_batch(&[MapOp::PauseReshape { first }]), Err(MapError::WrongPhase(first)), "paused twice");
        assert_eq!(map.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![1], born_ms: 0 }]), Err(MapError::WrongPhase(first)), "one sealed length per parent");
        let mut aborted = map.clone();
        aborted.apply_batch(&[MapOp::AbortReshape { first, error: "lost".into() }]).unwrap();
        assert_eq!(aborted.reshapes[&first].phase, TransferPhase::Aborted("lost".into()));
        assert!(aborted.live_rows().iter().all(|r| r.state == RangeState::Paused), "aborted after the pause: parents stay paused");
        assert_eq!(aborted.apply_batch(&[MapOp::AbortReshape { first, error: "again".into() }]), Err(MapError::WrongPhase(first)));
        assert_eq!(aborted.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![1, 1], born_ms: 0 }]), Err(MapError::WrongPhase(first)));
        map.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![4, 5], born_ms: 3 }]).unwrap();
        assert_eq!((map.rows[&RangeId(1)].sealed, map.rows[&RangeId(2)].sealed), (4, 5));
        assert!(map.rows[&RangeId(1)].state == RangeState::Retired && map.rows[&RangeId(2)].state == RangeState::Retired);
        let child = map.lookup(b"z").unwrap();
        assert_eq!((child.id, child.sources.clone(), child.state, child.born_ms), (RangeId(3), vec![RangeId(1), RangeId(2)], RangeState::Active, 3));
        assert!(map.reshapes.is_empty());
        assert_eq!(map.apply_batch(&[MapOp::AbortReshape { first, error: "late".into() }]), Err(MapError::NoTransfer(first)));
        assert_eq!(map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]), Err(MapError::WrongState(RangeId(1), RangeState::Retired)), "a retired row never serves again");
        assert_eq!(map.apply_batch(&[MapOp::RequestMove { range: RangeId(1), to: ServerId(1) }]), Err(MapError::WrongState(RangeId(1), RangeState::Retired)));
    }

    #[test]
    fn map_move_phases_and_their_refusals() {
        let mut map = two_active();
        let r = RangeId(2);
        assert_eq!(map.apply_batch(&[MapOp::PauseMove { range: r }]), Err(MapError::NoTransfer(r)));
        assert_eq!(map.apply_batch(&[MapOp::CommitMove { range: r }]), Err(MapError::NoTransfer(r)));
        assert_eq!(map.apply_batch(&[MapOp::AbortMove { range: r, error: "x".into() }]), Err(MapError::NoTransfer(r)));
        map.apply_batch(&[MapOp::RequestMove { range: r, to: ServerId(3) }]).unwrap();
        map.apply_batch(&[MapOp::BeginMove { range: r, to: (ServerId(3), 3), strategy: super::Strategy::StopAndCopy }]).unwrap();
        assert!(map.move_requests.is_empty(), "the request is consumed");
        let t = &map.transfers[&r];
        assert_eq!((t.from, t.from_epoch, t.to, t.epoch), ((ServerId(2), 2), Epoch(2), (ServerId(3), 3), Epoch(3)));
        // Abort while copying: the entry goes, the source never stopped.
        let mut early = map.clone();
        early.apply_batch(&[MapOp::AbortMove { range: r, error: "x".into() }]).unwrap();
        assert!(early.transfers.is_empty());
        assert_eq!(early.rows[&r].state, RangeState::Active);
        // A source reassigned meanwhile cannot be paused for the old transfer.
        let mut stale = map.clone();
        stale.rows.get_mut(&r).unwrap().epoch = Epoch(9);
        assert_eq!(stale.apply_batch(&[MapOp::PauseMove { range: r }]), Err(MapError::WrongState(r, RangeState::Active)));
        map.apply_batch(&[MapOp::PauseMove { range: r }]).unwrap();
        assert_eq!(map.apply_batch(&[MapOp::PauseMove { range: r }]), Err(MapError::WrongPhase(r)));
        let mut stale = map.clone();
        stale.rows.get_mut(&r).unwrap().epoch = Epoch(9);
        assert_eq!(stale.apply_batch(&[MapOp::CommitMove { range: r }]), Err(MapError::WrongState(r, RangeState::Paused)));
        let mut aborted = map.clone();
        aborted.apply_batch(&[MapOp::AbortMove { range: r, error: "x".into() }]).unwrap();
        assert_eq!(aborted.apply_batch(&[MapOp::AbortMove { range: r, error: "y".into() }]), Err(MapError::WrongPhase(r)));
        assert_eq!(aborted.apply_batch(&[MapOp::CommitMove { range: r }]), Err(MapError::WrongPhase(r)));
        // A move of a range that is not active.
        let mut fresh = boot(&[]);
        assert_eq!(fresh.apply_batch(&[MapOp::BeginMove { range: RangeId(1), to: (ServerId(3), 3), strategy: super::Strategy::PreCopy }]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)));
        map.apply_batch(&[MapOp::CommitMove { range: r }]).unwrap();
        let row = &map.rows[&r];
        assert_eq!((row.owner, row.owner_session, row.epoch, row.state), (Some(ServerId(3)), 3, Epoch(3), RangeState::Active));
    }

    #[test]
    fn map_operator_requests_and_names() {
        let mut map = boot(&[]);
        map.apply_batch(&[MapOp::Drain { server: ServerId(2), on: true }]).unwrap();
        map.apply_batch(&[MapOp::Drain { server: ServerId(3), on: true }]).unwrap();
        map.apply_batch(&[MapOp::Drain { server: ServerId(2), on: false }]).unwrap();
        assert_eq!(map.draining.iter().copied().collect::<Vec<_>>(), vec![ServerId(3)]);
        assert_eq!(map.apply_batch(&[MapOp::RequestMove { range: RangeId(5), to: ServerId(1) }]), Err(MapError::UnknownRange(RangeId(5))));
        assert!(MapOp::Drain { server: ServerId(1), on: true }.is_operator_request());
        assert!(MapOp::RequestMove { range: RangeId(1), to: ServerId(1) }.is_operator_request());
        assert!(!MapOp::Bootstrap { split_points: vec![] }.is_operator_request());
        assert!(!MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }.is_operator_request());
        for (s, name) in super::Strategy::ALL {
            assert_eq!(s.name(), name);
            assert_eq!(super::Strategy::parse(name), Ok(s));
        }
        assert!(super::Strategy::parse("live").unwrap_err().contains("accepted: stop-and-copy, pre-copy"));
        assert_eq!((super::ReshapeKind::Split.name(), super::ReshapeKind::Merge.name()), ("split", "merge"));
        assert_eq!(MapError::NoTransfer(RangeId(4)).to_string(), "NoTransfer(RangeId(4))");
    }

    #[derive(Clone, Debug)]
    enum Step {
        Assign(usize, u32),
        Activate(usize),
        Split(usize, u8),
        Merge(usize),
        PauseReshape(usize),
        EndReshape(usize, bool),
        BeginMove(usize, u32),
        PauseMove(usize),
        CommitMove(usize),
        AbortMove(usize),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        prop_oneof![
            (0..16usize, 1..5u32).prop_map(|(r, s)| Step::Assign(r, s)),
            (0..16usize).prop_map(Step::Activate),
            (0..16usize, any::<u8>()).prop_map(|(r, b)| Step::Split(r, b)),
            (0..16usize).prop_map(Step::Merge),
            (0..16usize).prop_map(Step::PauseReshape),
            (0..16usize, any::<bool>()).prop_map(|(r, b)| Step::EndReshape(r, b)),
            (0..16usize, 1..5u32).prop_map(|(r, s)| Step::BeginMove(r, s)),
            (0..16usize).prop_map(Step::PauseMove),
            (0..16usize).prop_map(Step::CommitMove),
            (0..16usize).prop_map(Step::AbortMove),
        ]
    }

    proptest! {
        #[test]
        fn map_any_sequence_keeps_tiling_and_monotone_epochs(steps in proptest::collection::vec(step(), 1..60)) {
            let mut map = boot(&["d", "k", "s"]);
            for s in steps {
                let live: Vec<RangeRow> = map.live_rows().into_iter().cloned().collect();
                let pick = |i: usize| &live[i % live.len()];
                let op = match s {
                    Step::Assign(i, srv) => MapOp::Assign { range: pick(i).id, owner: ServerId(srv), owner_session: 1 },
                    Step::Activate(i) => MapOp::Activate { range: pick(i).id, epoch: pick(i).epoch },
                    Step::Split(i, b) => {
                        let row = pick(i);
                        let mut at = row.start.clone();
                        at.push(b);
                        MapOp::BeginSplit { range: row.id, at, owners: [(ServerId(1), 1), (ServerId(2), 1)] }
                    }
                    Step::Merge(i) => {
                        let j = i % live.len();
                        let k = (j + 1) % live.len();
                        MapOp::BeginMerge { left: live[j].id, right: live[k].id, owner: (ServerId(3), 1) }
                    }
                    Step::PauseReshape(i) => MapOp::PauseReshape { first: pick(i).id },
                    Step::EndReshape(i, commit) => {
                        let first = pick(i).id;
                        let parents = map.reshapes.get(&first).map_or(1, |r| r.parents.len());
                        if commit { MapOp::CommitReshape { first, sealed: vec![3; parents], born_ms: 7 } } else { MapOp::AbortReshape { first, error: "test".into() } }
                    }
                    Step::BeginMove(i, srv) => MapOp::BeginMove { range: pick(i).id, to: (ServerId(srv), 1), strategy: super::Strategy::PreCopy },
                    Step::PauseMove(i) => MapOp::PauseMove { range: pick(i).id },
                    Step::CommitMove(i) => MapOp::CommitMove { range: pick(i).id },
                    Step::AbortMove(i) => MapOp::AbortMove { range: pick(i).id, error: "test".into() },
                };
                let before = map.clone();
                match map.apply_batch(&[op]) {
                    Ok(()) => {
                        prop_assert_eq!(map.version, before.version + 1);
                        prop_assert!(map.last_epoch >= before.last_epoch);
                        for old in before.rows.values() {
                            let (id, new) = (old.id, &map.rows[&old.id]);
                            prop_assert!(new.epoch >= old.epoch, "epoch of {} went down", id);
                            if old.state == RangeState::Retired {
                                prop_assert_eq!(new, old);
                            }
                        }
                        for r in map.reshapes.values() {
                            for c in &r.children {
                                prop_assert!(r.parents.iter().all(|(p, _)| c.epoch > map.rows[p].epoch), "child {} does not outrank its parents", c.id);
                            }
                        }
                        for t in map.transfers.values() {
                            let row = &map.rows[&t.range];
                            prop_assert!(t.epoch > row.epoch, "transfer epoch {} not above the row's {}", t.epoch, row.epoch);
                            prop_assert_ne!(row.state, RangeState::Retired);
                        }
                        for row in map.rows.values() {
                            for src in &row.sources {
                                prop_assert!(row.epoch > map.rows[src].epoch, "child {} does not outrank parent {}", row.id, src);
                            }
                        }
                    }
                    Err(_) => prop_assert_eq!(&map, &before),
                }
                prop_assert!(map.check_tiling().is_ok(), "{:?}", map.check_tiling());
            }
        }
    }

    /// Operator split and merge requests are checked when the map takes them: a live range,
    /// idle, a key strictly inside it, adjacent ranges; a split or merge that retires a range
    /// drops the requests naming it, and keeps the others. Mutation `map-forgets-reshapes`
    /// hides the split in flight.
    #[test]
    fn map_operator_split_and_merge_requests_are_checked() {
        let mut map = boot(&["g", "p", "t"]);
        let k = |s: &str| s.as_bytes().to_vec();
        let ops: Vec<MapOp> = (1..=4).map(|r| MapOp::Assign { range: RangeId(r), owner: ServerId(1), owner_session: 1 }).collect();
        map.apply_batch(&ops).unwrap();
        let rows: Vec<(RangeId, Epoch)> = map.rows.values().map(|r| (r.id, r.epoch)).collect();
        map.apply_batch(&rows.iter().map(|(range, epoch)| MapOp::Activate { range: *range, epoch: *epoch }).collect::<Vec<_>>()).unwrap();
        let refused = |map: &mut PartitionMap, op: MapOp| map.clone().apply_batch(&[op]).unwrap_err();
        assert_eq!(refused(&mut map, MapOp::RequestSplit { range: RangeId(2), at: k("g") }), MapError::BadSplitKey(RangeId(2)), "at its start");
        assert_eq!(refused(&mut map, MapOp::RequestSplit { range: RangeId(2), at: k("p") }), MapError::BadSplitKey(RangeId(2)), "at its end");
        assert_eq!(refused(&mut map, MapOp::RequestSplit { range: RangeId(9), at: k("h") }), MapError::UnknownRange(RangeId(9)));
        assert_eq!(refused(&mut map, MapOp::RequestMerge { left: RangeId(1), right: RangeId(3) }), MapError::NotAdjacent(RangeId(1), RangeId(3)));
        assert_eq!(refused(&mut map, MapOp::RequestMerge { left: RangeId(2), right: RangeId(1) }), MapError::NotAdjacent(RangeId(2), RangeId(1)));
        map.apply_batch(&[MapOp::BeginMove { range: RangeId(3), to: (ServerId(2), 2), strategy: super::Strategy::PreCopy }]).unwrap();
        assert_eq!(refused(&mut map, MapOp::RequestMerge { left: RangeId(2), right: RangeId(3) }), MapError::Busy(RangeId(3)), "in a move");
        assert!(MapOp::RequestSplit { range: RangeId(2), at: k("h") }.is_operator_request());
        assert!(MapOp::RequestMerge { left: RangeId(1), right: RangeId(2) }.is_operator_request());
        map.apply_batch(&[MapOp::RequestSplit { range: RangeId(2), at: k("h") }, MapOp::RequestMerge { left: RangeId(1), right: RangeId(2) }, MapOp::RequestSplit { range: RangeId(4), at: k("u") }]).unwrap();
        assert_eq!(map.reshape_requests.len(), 3);
        // The split starts (consuming its request), commits and retires range 2: the merge
        // request naming it goes too; range 4's request stays.
        map.apply_batch(&[MapOp::BeginSplit { range: RangeId(2), at: k("h"), owners: [(ServerId(1), 1), (ServerId(1), 1)] }]).unwrap();
        assert_eq!(map.reshape_requests.len(), 2, "the split's request is consumed");
        assert!(map.reshape_of(RangeId(2)).is_some());
        super::forget_reshapes(true);
        let forgotten = map.reshape_of(RangeId(2)).is_none();
        super::forget_reshapes(false);
        assert!(forgotten, "map-forgets-reshapes hides the split");
        map.apply_batch(&[MapOp::PauseReshape { first: RangeId(2) }, MapOp::CommitReshape { first: RangeId(2), sealed: vec![0], born_ms: 1 }]).unwrap();
        assert_eq!(map.reshape_requests, std::collections::BTreeMap::from([(RangeId(4), super::ReshapeRequest::Split(k("u")))]));
    }
}
