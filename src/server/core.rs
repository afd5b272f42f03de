//! Partition servers (`server-N`): serve their ranges, and enforce the epoch where it matters.
//!
//! [`ServerCore`] is the protocol state (no I/O, time passed in): which ranges this server holds,
//! at which epoch and state, their content, and the session lease. The node task around it
//! renews the session, opens ranges on the manager's command (fence at the store, load, serve)
//! and answers appends and reads.
//!
//! The authority check (epoch, lease, state, key in range) and the admission of an append's
//! effect happen in one synchronous step ([`ServerCore::admit`]), with no await between them;
//! the effect then goes to the store, whose fence rejects it if a newer owner took over in the
//! meantime. Idea: the "check then act" race of MongoDB SERVER-26885 is closed by admitting in
//! the same step as the check and fencing where the write takes effect.

use crate::config::{server_addr, store_addr, Knobs, Mutation};
use crate::event::{emit, ClientOp, Event};
use crate::ids::{Epoch, Key, OpId, RangeId, ServerId};
use crate::map::{RangeRow, Strategy};
use crate::msg::{CopyProgress, FinishError, Msg, RangeLoad, ReadLevel, Record, Refusal, Source, StreamDigest};
use crate::seam::{now_us, sleep_ms, Rpc};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// Whether a held range is being loaded or serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldState {
    /// Fencing and loading from the store; refuses requests with `NotReady`.
    Loading,
    /// Serving at its epoch.
    Active,
}

/// A range this server holds.
#[derive(Clone, Debug)]
pub struct Held {
    /// The map row it was opened from (bounds and epoch).
    pub row: RangeRow,
    /// Loading or active.
    pub state: HeldState,
    /// Object content by key (derived from the stream). A read answers with the object shared,
    /// not copied; an append copies it only while an answer still holds it (copy on write).
    pub objects: BTreeMap<Key, Object>,
    /// Idempotency ids already in the stream (a hash set: asked whether it holds an id, never
    /// iterated).
    pub applied: rustc_hash::FxHashSet<OpId>,
    /// Idempotency ids admitted and not yet answered by the store.
    pub inflight: BTreeSet<OpId>,
    /// The stream offset the content reflects up to (exclusive).
    pub next_offset: u64,
    /// Records the store acknowledged beyond a gap (acks can overtake each other on the
    /// network); applied as soon as the gap fills, so the content keeps the stream's order.
    pub acked: BTreeMap<u64, Record>,
    /// Woken whenever records are applied or an admitted effect finishes, for appends waiting
    /// to be visible before answering and for a pause waiting for the drain.
    pub progress: Rc<tokio::sync::Notify>,
    /// Paused for a planned move: admits nothing and answers no reads (the range may be
    /// serving elsewhere soon), until released or reopened at a newer epoch.
    pub paused: bool,
    /// When it was paused (µs, local clock; 0 when not paused).
    pub paused_at_us: u64,
    /// Digest of the stream up to `next_offset`, as applied here.
    pub digest: StreamDigest,
    /// The records inherited from sealed ancestors (split and merge lineage), filtered to this
    /// range, in order; loaded once when the range opens.
    pub base: Rc<Vec<Record>>,
    /// Payload bytes of `base` ([`Record::payload_bytes`]), summed once when it is set: every
    /// load report counts them.
    pub base_bytes: u64,
    /// Times (µs, local clock) of recent appends and reads, for load reports.
    pub recent_ops: std::collections::VecDeque<u64>,
    /// Recently used keys, the most recent last, for choosing split points.
    pub recent_keys: std::collections::VecDeque<Key>,
    /// While loading: the offset the load starts from (0: a full load; above 0: the content up
    /// to it is kept, from an older epoch (see [`ServerCore::begin_open`]) or from before an
    /// unknown outcome (see [`ServerCore::suspect`]), once the store's digest of that prefix
    /// matched ours, see [`ServerCore::keep_prefix`]).
    pub load_from: u64,
    /// Appends admitted at this epoch whose outcome at the store is unknown here (its answer
    /// never came): the next reload's fence bars those not in the stream, so a copy still held
    /// in the network cannot land behind the reload unseen (seed 5954). Emptied by that fence.
    pub doubtful: BTreeSet<OpId>,
}

/// An object's content, shared with the read answers that carry it.
pub type Object = std::sync::Arc<Vec<u8>>;

/// Append `bytes` to the object of `key`: in place, or on a copy while a read answer holds it.
fn extend_object(objects: &mut BTreeMap<Key, Object>, key: &[u8], bytes: &[u8]) {
    // One search of the map for a key it holds (most appends), two for a new key.
    if let Some(object) = objects.get_mut(key) {
        std::sync::Arc::make_mut(object).extend_from_slice(bytes);
        return;
    }
    objects.insert(key.to_vec(), Object::new(bytes.to_vec()));
}

/// A range's content from its records in stream order (`base`, then the stream): the ids
/// applied and every object, counting the records in `row` and, of several with the same id,
/// the first. The same as applying the records one by one (an id set insert and an object
/// extend per record), but each object is built once at its final size and the objects' map is
/// bulk-built from sorted entries (issue 13: the one-by-one build was the server's costliest
/// step in a sweep).
///
/// Only integers are sorted: each first copy of an id (a hash set insert per record) gives a
/// (key number, stream position) pair, a number per distinct key from a hash lookup; the pairs
/// sorted group each object's records in stream order, and only the distinct keys are sorted,
/// by the map's collect. Sorting record indices by their keys instead compared keys through two
/// pointers per comparison, most of the build's time (issue 13).
fn build_content<'a>(row: &RangeRow, records: impl Iterator<Item = &'a Record>) -> (rustc_hash::FxHashSet<OpId>, BTreeMap<Key, Object>) {
    let records: Vec<&Record> = records.filter(|r| row.contains(&r.key)).collect();
    let mut applied = rustc_hash::FxHashSet::with_capacity_and_hasher(records.len(), Default::default());
    // FxHash over the short keys (the map is never iterated, so its order cannot leak). Positions
    // are u32 (a load's scratch stays small next to its records).
    let mut number: rustc_hash::FxHashMap<&[u8], u32> = rustc_hash::FxHashMap::default();
    let mut grouped: Vec<(u32, u32)> = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        if applied.insert(r.id) {
            let next = number.len() as u32;
            grouped.push((*number.entry(&r.key).or_insert(next), i as u32));
        }
    }
    grouped.sort_unstable();
    let mut objects = Vec::with_capacity(number.len());
    for group in grouped.chunk_by(|a, b| a.0 == b.0) {
        let mut object = Vec::with_capacity(group.iter().map(|&(_, i)| records[i as usize].bytes.len()).sum());
        for &(_, i) in group {
            object.extend_from_slice(&records[i as usize].bytes);
        }
        objects.push((records[group[0].1 as usize].key.clone(), Object::new(object)));
    }
    (applied, objects.into_iter().collect())
}

/// An object as a read answer's payload, without copying it.
fn object_bytes(object: &Object) -> bytes::Bytes {
    /// The owner [`bytes::Bytes::from_owner`] needs (`Arc<Vec<u8>>` is not `AsRef<[u8]>`).
    struct Shared(Object);
    impl AsRef<[u8]> for Shared {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }
    if object.is_empty() {
        return bytes::Bytes::new();
    }
    bytes::Bytes::from_owner(Shared(object.clone()))
}

/// How many recent operations and keys a range remembers for its load report.
const LOAD_SAMPLE: usize = 256;
/// The window a load report's rate is measured over, µs.
const LOAD_WINDOW_US: u64 = 2_000_000;

impl Held {
    fn note_op(&mut self, key: &[u8], now_us: u64) {
        if self.recent_ops.len() == LOAD_SAMPLE {
            self.recent_ops.pop_front();
        }
        self.recent_ops.push_back(now_us);
        if self.recent_keys.len() == LOAD_SAMPLE / 4 {
            self.recent_keys.pop_front();
        }
        self.recent_keys.push_back(key.to_vec());
    }

    /// This range's load report at `now_us`.
    pub fn load(&self, now_us: u64) -> RangeLoad {
        let since = now_us.saturating_sub(LOAD_WINDOW_US);
        let ops = self.recent_ops.iter().filter(|t| **t >= since).count();
        let bytes = self.base_bytes + self.digest.bytes;
        RangeLoad { range: self.row.id, epoch: self.row.epoch, ops_per_s: ops as f64 * 1e6 / LOAD_WINDOW_US as f64, bytes, records: self.next_offset, keys: self.recent_keys.iter().cloned().collect() }
    }

    /// Apply acknowledged records from `next_offset` on, as far as they are contiguous, and wake
    /// the appends waiting to become visible.
    fn apply_acked(&mut self) {
        while let Some(rec) = self.acked.remove(&self.next_offset) {
            self.digest.add(&rec);
            if self.applied.insert(rec.id) {
                extend_object(&mut self.objects, &rec.key, &rec.bytes);
            }
            self.next_offset += 1;
        }
        self.progress.notify_waiters();
    }
}

/// A move target's copy of a range's stream, built by pre-copy rounds before the source pauses.
#[derive(Clone, Debug)]
pub struct CopyState {
    /// The target row (the transfer's epoch and this server's session).
    pub row: RangeRow,
    /// The records copied so far, from offset 0.
    pub records: Vec<Record>,
    /// Rounds done.
    pub rounds: u32,
    /// Payload bytes copied by the last round.
    pub last_round_bytes: u64,
    /// A round is waiting for the store.
    pub busy: bool,
}

impl CopyState {
    fn bytes(&self) -> u64 {
        self.records.iter().map(Record::payload_bytes).sum()
    }
}

/// The protocol state of one server incarnation. Lost on crash.
#[derive(Debug)]
pub struct ServerCore {
    /// This server.
    pub id: ServerId,
    /// Current session at the authority, if registered.
    pub session: Option<u64>,
    /// The lease is trusted until this time (µs, local clock): the send time of the last
    /// successful renewal + lease − margin.
    pub lease_valid_until_us: u64,
    /// Held ranges.
    pub ranges: BTreeMap<RangeId, Held>,
    /// A deliberately broken safety mechanism (`knobs.mutation`), `None` in normal runs. The
    /// server's own: `server-skips-authority-check`, `server-skips-epoch-check`,
    /// `server-ignores-lease-expiry`, `check-then-await-then-admit` (admission does not repeat
    /// the check the handler made before an await), `pause-skips-drain`, `source-ignores-pause`.
    pub mutation: Option<Mutation>,
    /// Copies in progress, as the target of planned moves.
    pub copies: BTreeMap<RangeId, CopyState>,
    /// Ranges moved away from here: the new owner and epoch, for the hint in refusals.
    pub moved: BTreeMap<RangeId, (ServerId, Epoch)>,
    /// The newest leader epoch a manager's command carried: older ones are refused (a deposed
    /// leader's late command does nothing).
    pub leader_epoch_seen: u64,
    /// The drift between two clocks the lease margin is sized for, in parts per 10^6
    /// (`lease_margin_ms / (2 * lease_ms)`): the allowance of bounded reads.
    pub drift_ppm: u64,
}

impl ServerCore {
    /// A fresh incarnation holding nothing.
    pub fn new(id: ServerId) -> Self {
        ServerCore { id, session: None, lease_valid_until_us: 0, ranges: BTreeMap::new(), mutation: None, copies: BTreeMap::new(), moved: BTreeMap::new(), leader_epoch_seen: 0, drift_ppm: 50_000 }
    }

    fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m)
    }

    fn lease_valid(&self, now_us: u64) -> bool {
        self.session.is_some() && now_us < self.lease_valid_until_us
    }

    /// The authority check shared by appends and reads. Returns the held range.
    fn authorize(&self, range: RangeId, epoch: Epoch, key: &[u8], now_us: u64) -> Result<&Held, Refusal> {
        let Some(held) = self.ranges.get(&range) else {
            let Some(&(owner, moved_to)) = self.moved.get(&range) else { return Err(Refusal::NotOwner) };
            emit(Event::Redirected { server: self.id, range, epoch, key: key.to_vec(), to: owner, new_epoch: moved_to });
            return Err(Refusal::Moved { owner, epoch: moved_to });
        };
        if self.mutated(Mutation::ServerSkipsAuthorityCheck) {
            return Ok(held);
        }
        let skip_epoch = self.mutated(Mutation::ServerSkipsEpochCheck);
        if epoch < held.row.epoch && !skip_epoch {
            return Err(Refusal::StaleEpoch { current: held.row.epoch });
        }
        if epoch > held.row.epoch && !skip_epoch && !self.mutated(Mutation::ServerAdmitsNewerEpoch) {
            return Err(Refusal::NotOwner); // the map knows a newer owner than we do
        }
        if held.state != HeldState::Active || (held.paused && !self.mutated(Mutation::SourceIgnoresPause)) {
            return Err(Refusal::NotReady);
        }
        let ignores_expiry = self.mutated(Mutation::ServerIgnoresLeaseExpiry) && self.session.is_some();
        if !(self.lease_valid(now_us) || ignores_expiry) {
            return Err(Refusal::LeaseExpired);
        }
        if !held.row.contains(key) {
            return Err(Refusal::KeyOutOfRange);
        }
        Ok(held)
    }

    /// The guarded section of an append: authority check and admission in one step.
    ///
    /// Returns `Ok(Some(epoch))` when admitted, with the epoch the effect carries (the caller
    /// must send the effect to the store and then call [`ServerCore::finish_append`]),
    /// `Ok(None)` when `id` is already applied (answer ok without a new effect), or the refusal.
    pub fn admit(&mut self, range: RangeId, epoch: Epoch, key: &[u8], id: OpId, now_us: u64) -> Result<Option<Epoch>, Refusal> {
        let checked = if self.mutated(Mutation::CheckThenAwaitThenAdmit) { self.ranges.get(&range).ok_or(Refusal::NotOwner) } else { self.authorize(range, epoch, key, now_us) };
        let held = checked.inspect_err(|r| emit(Event::Refused { server: self.id, range, epoch, key: key.to_vec(), op: ClientOp::Append, reason: r.clone() }))?;
        let write_at = if self.mutated(Mutation::ServerSkipsEpochCheck) { held.row.epoch } else { epoch };
        if held.applied.contains(&id) {
            return Ok(None);
        }
        if self.lease_valid_until_us.saturating_sub(now_us) < 100_000 {
            crate::goal::reach(crate::goal::Goal::AdmitNearLeaseEnd);
        }
        if held.inflight.contains(&id) {
            return Err(Refusal::InFlight);
        }
        let held = self.ranges.get_mut(&range).expect("authorized");
        held.inflight.insert(id);
        held.note_op(key, now_us);
        let (server, session, epoch) = (self.id, self.session.unwrap_or(0), held.row.epoch);
        emit(Event::Admit { server, session, range, epoch, key: key.to_vec(), id });
        Ok(Some(write_at))
    }

    /// The authority check alone, for the handler of mutation `check-then-await-then-admit`.
    pub fn check(&self, range: RangeId, epoch: Epoch, key: &[u8], now_us: u64) -> Result<(), Refusal> {
        self.authorize(range, epoch, key, now_us).map(|_| ())
    }

    /// The store answered an admitted append (`Some(result)`) or did not (`None`).
    ///
    /// A stored record is applied to the content if the range is still held at that epoch (if
    /// not, the record is in the stream and the next owner loads it). A fence above our epoch
    /// means a newer owner exists: the range is dropped.
    ///
    /// No answer (`None`) means the record may or may not be in the stream: the content here can
    /// no longer be trusted to match it. Returns the row to resync in that case: the range
    /// refuses requests (`NotReady`) until [`ServerCore::finish_open`] reloads it.
    pub fn finish_append(&mut self, range: RangeId, record: &Record, result: Option<Result<u64, Epoch>>) -> Option<RangeRow> {
        let me = self.id;
        let keeps_fenced = self.mutated(Mutation::ServerKeepsFencedRange);
        let held = self.ranges.get_mut(&range)?;
        if held.row.epoch != record.epoch {
            return None;
        }
        held.inflight.remove(&record.id);
        held.progress.notify_waiters();
        match result {
            Some(Ok(offset)) => {
                if offset >= held.next_offset {
                    held.acked.insert(offset, record.clone());
                }
                // While reloading, the reload decides where the content starts.
                if held.state == HeldState::Active {
                    held.apply_acked();
                }
                None
            }
            Some(Err(fence)) if fence > held.row.epoch && !keeps_fenced => {
                emit(Event::Dropped { server: me, range, epoch: held.row.epoch, reason: "fenced".into() });
                self.ranges.remove(&range);
                None
            }
            Some(Err(_)) => None,
            None => {
                held.doubtful.insert(record.id);
                self.suspect(range, record.epoch)
            }
        }
    }

    /// The appends whose outcome is unknown here that a reload of `row` (at its epoch) must
    /// bar from the stream (see [`Held::doubtful`]); empty when `row` is not loading here.
    pub fn doubtful(&self, row: &RangeRow) -> Vec<OpId> {
        self.ranges.get(&row.id).filter(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading).map_or(Vec::new(), |h| h.doubtful.iter().copied().collect())
    }

    /// The store fenced `row`'s stream with `barred` barred: each is now in the stream (and
    /// loaded with it) or can never land there, so it is no longer in doubt.
    pub fn settled(&mut self, row: &RangeRow, barred: &[OpId]) {
        if let Some(held) = self.ranges.get_mut(&row.id).filter(|h| h.row.epoch == row.epoch) {
            for id in barred {
                held.doubtful.remove(id);
            }
        }
    }

    /// The content of `range` at `epoch` may no longer match its stream (an append's outcome
    /// is unknown, or an acknowledged offset stays behind a gap that never fills, because a
    /// message held in the network landed at the store after our last load). Returns the row to
    /// reload; the range refuses requests (`NotReady`) until [`ServerCore::finish_open`].
    /// `None` when it is not active at that epoch (already reloading, or gone).
    ///
    /// The reload asks the store only for what follows the records applied here (`next_offset`
    /// on), if the store's digest of those records matches ours ([`ServerCore::keep_prefix`]).
    pub fn suspect(&mut self, range: RangeId, epoch: Epoch) -> Option<RangeRow> {
        let held = self.ranges.get_mut(&range).filter(|h| h.row.epoch == epoch && h.state == HeldState::Active)?;
        held.state = HeldState::Loading;
        held.load_from = held.next_offset;
        Some(held.row.clone())
    }

    /// The offset a load of `row` asks the store from: the length of the prefix kept (see
    /// [`Held::load_from`]); 0 when `row` is not loading here at its epoch.
    pub fn load_from(&self, row: &RangeRow) -> u64 {
        self.ranges.get(&row.id).filter(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading).map_or(0, |h| h.load_from)
    }

    /// Whether `row` is still loading here at its epoch: a load (an open, a move's finish, a
    /// reload) that finds it no longer is stops reading the stream (`read_chunks`).
    pub fn loading(&self, row: &RangeRow) -> bool {
        self.ranges.get(&row.id).is_some_and(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading)
    }

    /// Whether the pre-copy of `row` (this server the move's target) is still wanted: its copy
    /// is kept here at the transfer's epoch (a lost session, or a newer transfer of the range,
    /// drops it).
    pub fn copying(&self, row: &RangeRow) -> bool {
        self.copies.get(&row.id).is_some_and(|c| c.row.epoch == row.epoch)
    }

    /// The store fenced `row`'s stream and answered `store`, its digest of the first `from`
    /// records (`from` = [`ServerCore::load_from`] when the fence was sent). The content kept
    /// here is kept only if it is exactly that prefix: same length, same payload bytes, same
    /// checksum as the digest of the records applied here. Otherwise (the store lost records we
    /// applied, or holds others at their offsets) the load starts over from offset 0 and
    /// `prefix_diverged` is traced. Returns the offset to load from: `from` or 0 (`from` as
    /// given when `row` is no longer loading here; [`ServerCore::finish_open`] refuses it then).
    pub fn keep_prefix(&mut self, row: &RangeRow, from: u64, store: StreamDigest) -> u64 {
        let me = self.id;
        let Some(held) = self.ranges.get_mut(&row.id).filter(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading && h.load_from == from) else { return from };
        if from == 0 || (store.records == from && store == held.digest) {
            return from;
        }
        emit(Event::PrefixDiverged { server: me, range: row.id, epoch: row.epoch, held: held.digest, store });
        held.load_from = 0;
        0
    }

    /// Accept a command from a manager whose leader epoch is `leader_epoch`. Errors: an
    /// epoch older than the newest seen (a deposed leader's command, late or replayed).
    pub fn command(&mut self, leader_epoch: u64, kind: &'static str) -> Result<(), String> {
        let obeys_all = self.mutated(Mutation::ServerSkipsEpochCheck) || self.mutated(Mutation::ServerObeysDeposedLeader);
        if leader_epoch < self.leader_epoch_seen && !obeys_all {
            emit(Event::StaleCommand { server: self.id, command: kind, leader_epoch, seen: self.leader_epoch_seen });
            return Err(format!("{}: stale leader epoch {leader_epoch} (seen {})", self.id, self.leader_epoch_seen));
        }
        self.leader_epoch_seen = self.leader_epoch_seen.max(leader_epoch);
        Ok(())
    }

    /// The check of a bounded-staleness read (`bound_ms`): the range is held and loaded, the
    /// key is in it, and this server knew itself the owner (valid lease, not paused) at most
    /// `bound_ms` ago. The age is measured on this server's clock and inflated by the drift the
    /// lease margin is sized for (`lease_margin / (2 * lease)`, 5% at the defaults), so a slow
    /// clock cannot stretch the bound. The epoch the request names is not checked: an owner the
    /// map has since replaced may answer, within the bound.
    fn authorize_bounded(&self, range: RangeId, key: &[u8], bound_ms: u64, now_us: u64) -> Result<&Held, Refusal> {
        let held = self.ranges.get(&range).ok_or(Refusal::NotOwner)?;
        if held.state != HeldState::Active {
            return Err(Refusal::NotReady);
        }
        if !held.row.contains(key) {
            return Err(Refusal::KeyOutOfRange);
        }
        let lease_end = if self.session.is_some() { self.lease_valid_until_us } else { 0 };
        let knew_until = if held.paused { held.paused_at_us.min(lease_end) } else { lease_end };
        let local_age_us = now_us.saturating_sub(knew_until);
        let age_ms = (local_age_us + local_age_us * self.drift_ppm / 1_000_000) / 1000;
        if age_ms > bound_ms {
            return Err(Refusal::TooStale { age_ms });
        }
        Ok(held)
    }

    /// A read at `level`: its check, then the object's bytes (empty if absent).
    pub fn read(&mut self, range: RangeId, epoch: Epoch, key: &[u8], level: ReadLevel, now_us: u64) -> Result<bytes::Bytes, Refusal> {
        let checked = match level {
            ReadLevel::Strong => self.authorize(range, epoch, key, now_us),
            ReadLevel::Bounded { ms } => self.authorize_bounded(range, key, ms, now_us),
        };
        let held = checked.inspect_err(|r| emit(Event::Refused { server: self.id, range, epoch, key: key.to_vec(), op: ClientOp::Read, reason: r.clone() }))?;
        emit(Event::ReadServed { server: self.id, range, epoch: held.row.epoch, key: key.to_vec(), bounded: level != ReadLevel::Strong });
        let value = held.objects.get(key).map_or_else(bytes::Bytes::new, object_bytes);
        self.ranges.get_mut(&range).expect("authorized").note_op(key, now_us);
        Ok(value)
    }

    /// Load reports of every active range held.
    pub fn load(&self, now_us: u64) -> Vec<RangeLoad> {
        self.ranges.values().filter(|h| h.state == HeldState::Active && !h.paused).map(|h| h.load(now_us)).collect()
    }

    /// Start opening `row`. Returns `Ok(Some(from))` when the caller must fence the stream and
    /// load it from offset `from` on, `Ok(None)` when already active at that epoch.
    ///
    /// A range this server still holds at an older epoch, drained (active, nothing in flight,
    /// no acknowledgement waiting for a gap), keeps its content and loads only what the stream
    /// holds past it (`from` > 0): a move rolled back to its paused source reopens in the time
    /// of a fence and the records a target may have added, not of the whole range (issue 15).
    ///
    /// Errors: the row was assigned to another session of this server (an earlier incarnation,
    /// or a registration whose answer never arrived); a newer epoch is already held or loading.
    pub fn begin_open(&mut self, row: &RangeRow) -> Result<Option<u64>, String> {
        self.open_at(row, true)
    }

    fn open_at(&mut self, row: &RangeRow, reuse: bool) -> Result<Option<u64>, String> {
        if self.session != Some(row.owner_session) {
            return Err(format!("{} was assigned to session {}, this server has {:?}", row.id, row.owner_session, self.session));
        }
        if let Some(held) = self.ranges.get_mut(&row.id) {
            if held.row.epoch > row.epoch {
                return Err(format!("{} held at newer {}", row.id, held.row.epoch));
            }
            if held.row.epoch == row.epoch {
                return match held.state {
                    HeldState::Active => Ok(None),
                    HeldState::Loading => Err(format!("{} already loading", row.id)),
                };
            }
            let drained = held.state == HeldState::Active && held.inflight.is_empty() && held.acked.is_empty();
            if reuse && drained && held.row.owner_session == row.owner_session {
                emit(Event::Dropped { server: self.id, range: row.id, epoch: held.row.epoch, reason: format!("reopened at {} from offset {}", row.epoch, held.next_offset) });
                held.row = row.clone();
                held.state = HeldState::Loading;
                held.paused = false;
                held.paused_at_us = 0;
                held.load_from = held.next_offset;
                // The new epoch's fence refuses the old epoch's appends still in flight.
                held.doubtful.clear();
                self.moved.remove(&row.id);
                return Ok(Some(held.next_offset));
            }
        }
        let held = Held {
            row: row.clone(),
            state: HeldState::Loading,
            objects: BTreeMap::new(),
            applied: Default::default(),
            inflight: BTreeSet::new(),
            next_offset: 0,
            acked: BTreeMap::new(),
            progress: Rc::new(tokio::sync::Notify::new()),
            paused: false,
            paused_at_us: 0,
            digest: StreamDigest::default(),
            base: Rc::new(Vec::new()),
            base_bytes: 0,
            recent_ops: Default::default(),
            recent_keys: Default::default(),
            load_from: 0,
            doubtful: BTreeSet::new(),
        };
        if let Some(old) = self.ranges.insert(row.id, held) {
            emit(Event::Dropped { server: self.id, range: row.id, epoch: old.row.epoch, reason: format!("reopened at {}", row.epoch) });
        }
        self.moved.remove(&row.id);
        Ok(Some(0))
    }

    /// The store fenced the stream at `row.epoch` and returned its content from the offset
    /// [`ServerCore::begin_open`] named (`Ok`), or refused (`Err(reason)`); `base`, when given,
    /// is the content inherited from the range's sealed ancestors (kept across reloads). On
    /// success the range serves from now on.
    pub fn finish_open(&mut self, row: &RangeRow, base: Option<Rc<Vec<Record>>>, loaded: Result<Vec<Record>, String>) -> Result<(), String> {
        self.finish_load(row, base, loaded, None)
    }

    /// [`ServerCore::finish_open`], given `digest`, the digest of the loaded records when the
    /// caller computed it already (a move's target, which checked it against the source's), so
    /// a full load does not hash them a second time.
    fn finish_load(&mut self, row: &RangeRow, base: Option<Rc<Vec<Record>>>, loaded: Result<Vec<Record>, String>, digest: Option<StreamDigest>) -> Result<(), String> {
        let still_ours = self.ranges.get(&row.id).is_some_and(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading);
        if !still_ours {
            return Err(format!("{} changed while loading", row.id));
        }
        let records = match loaded {
            Ok(records) => records,
            Err(e) => {
                if let Some(held) = self.ranges.remove(&row.id) {
                    // Wake a repeated finish waiting for this attempt (`await_running_finish`).
                    held.progress.notify_waiters();
                }
                emit(Event::Dropped { server: self.id, range: row.id, epoch: row.epoch, reason: format!("load_refused: {e}") });
                return Err(e);
            }
        };
        let held = self.ranges.get_mut(&row.id).expect("checked");
        if let Some(base) = base {
            held.base_bytes = base.iter().map(Record::payload_bytes).sum();
            held.base = base;
        }
        if held.load_from > 0 {
            // A prefix kept (an older epoch's, or from before an unknown outcome; checked
            // against the store's digest of it): only the records past it.
            assert_eq!(held.next_offset, held.load_from, "a kept prefix is exactly what was applied");
            for rec in &records {
                held.digest.add(rec);
                if held.row.contains(&rec.key) && held.applied.insert(rec.id) {
                    extend_object(&mut held.objects, &rec.key, &rec.bytes);
                }
            }
            held.next_offset = held.load_from + records.len() as u64;
        } else {
            held.digest = digest.unwrap_or_else(|| StreamDigest::of(&records));
            let (applied, objects) = build_content(&held.row, held.base.iter().chain(&records));
            held.applied = applied;
            held.objects = objects;
            held.next_offset = records.len() as u64;
        }
        held.load_from = 0;
        let next = held.next_offset;
        held.acked.retain(|offset, _| *offset >= next);
        held.state = HeldState::Active;
        held.apply_acked();
        emit(Event::Activated { server: self.id, range: row.id, epoch: row.epoch, records: held.base.len() + next as usize, stream: next as usize });
        Ok(())
    }

    /// A move target's cutover, once the stream is fenced at `row.epoch`: check the whole copy
    /// (`precopied` records, then the `tail` read past them) against the source's drained
    /// `digest` (length, bytes, checksum), and serve it on a match, with `base` the content
    /// inherited from the range's sealed ancestors. Emits `handoff` (bytes copied before and
    /// during the pause) or `diverged`.
    ///
    /// Errors: `Diverged` when the copy does not match (the range is dropped; the move must
    /// abort), `NotNow` when the range is no longer loading at that epoch.
    pub fn complete_move(&mut self, row: &RangeRow, base: Rc<Vec<Record>>, precopied: Vec<Record>, tail: Vec<Record>, digest: StreamDigest, strategy: Strategy) -> Result<(), FinishError> {
        let precopy_bytes: u64 = precopied.iter().map(Record::payload_bytes).sum();
        let tail_bytes: u64 = tail.iter().map(Record::payload_bytes).sum();
        self.copies.remove(&row.id);
        let mut records = precopied;
        records.extend(tail);
        let copied = StreamDigest::of(&records);
        if copied != digest {
            crate::goal::reach(crate::goal::Goal::FinishWithDivergedCopy);
        }
        if copied != digest && !self.mutated(Mutation::TargetSkipsVerify) {
            let why = format!(
                "copy of {} does not match the source: {} records, {} bytes, checksum {:016x} here; {} records, {} bytes, checksum {:016x} at the source",
                row.id, copied.records, copied.bytes, copied.checksum, digest.records, digest.bytes, digest.checksum
            );
            let _ = self.finish_open(row, None, Err(why.clone()));
            emit(Event::Diverged { server: self.id, range: row.id, epoch: row.epoch, error: why.clone() });
            return Err(FinishError::Diverged(why));
        }
        self.finish_load(row, Some(base), Ok(records), Some(copied)).map_err(FinishError::NotNow)?;
        emit(Event::Handoff { server: self.id, range: row.id, epoch: row.epoch, strategy, precopy_bytes, tail_bytes, bytes: digest.bytes });
        Ok(())
    }

    /// Pause `range` at `epoch` for a planned move: from now on it admits nothing and answers
    /// no reads, from `now_us` (the server's clock) on. Idempotent. Errors: the range is not held
    /// at that epoch.
    pub fn pause(&mut self, range: RangeId, epoch: Epoch, now_us: u64) -> Result<(), String> {
        let me = self.id;
        let skip = self.mutated(Mutation::ServerSkipsEpochCheck);
        let held = self.ranges.get_mut(&range).filter(|h| h.row.epoch == epoch || skip).ok_or_else(|| format!("{me} does not hold {range} at {epoch}"))?;
        if !held.paused {
            held.paused = true;
            held.paused_at_us = now_us;
            emit(Event::Paused { server: me, range, epoch: held.row.epoch });
        }
        Ok(())
    }

    /// The digest of a paused range once every admitted effect finished and the content
    /// matches the stream (`None`: not drained yet). Errors: no longer held paused at `epoch`.
    pub fn drained(&self, range: RangeId, epoch: Epoch) -> Result<Option<StreamDigest>, String> {
        let skip = self.mutated(Mutation::ServerSkipsEpochCheck);
        let held = self.ranges.get(&range).filter(|h| (h.row.epoch == epoch || skip) && h.paused).ok_or_else(|| format!("{} no longer holds {range} paused at {epoch}", self.id))?;
        let done = self.mutated(Mutation::PauseSkipsDrain) || (held.inflight.is_empty() && held.acked.is_empty() && held.state == HeldState::Active);
        Ok(done.then_some(held.digest))
    }

    /// The move (or split or merge) committed: drop the paused `range` at `epoch` and remember
    /// where it went (`to` at `new_epoch`; nothing for an epoch of 0).
    pub fn release(&mut self, range: RangeId, epoch: Epoch, to: ServerId, new_epoch: Epoch) {
        if let Some(held) = self.ranges.get(&range).filter(|h| h.row.epoch == epoch || self.mutated(Mutation::ServerSkipsEpochCheck)) {
            emit(Event::Dropped { server: self.id, range, epoch: held.row.epoch, reason: "moved".into() });
            self.ranges.remove(&range);
        }
        // `new_epoch` 0: the range was split or merged away; no single new owner to name.
        if new_epoch > Epoch(0) && self.ranges.get(&range).is_none_or(|h| h.row.epoch < new_epoch) {
            self.moved.insert(range, (to, new_epoch));
        }
    }

    /// Start a pre-copy round of `row` (this server is the move's target). Returns the
    /// progress when no round is due (pre-copy done, or a round already running), or the
    /// offset to read the stream from.
    ///
    /// Errors: `row` was assigned to another session of this server.
    pub fn begin_copy_round(&mut self, row: &RangeRow, threshold_bytes: u64, max_rounds: u32) -> Result<Result<u64, CopyProgress>, String> {
        if self.session != Some(row.owner_session) {
            return Err(format!("{} move target session {}, this server has {:?}", row.id, row.owner_session, self.session));
        }
        let copy = self.copies.entry(row.id).or_insert_with(|| CopyState { row: row.clone(), records: Vec::new(), rounds: 0, last_round_bytes: 0, busy: false });
        if copy.row.epoch != row.epoch {
            *copy = CopyState { row: row.clone(), records: Vec::new(), rounds: 0, last_round_bytes: 0, busy: false };
        }
        let ready = copy.rounds >= 1 && (copy.last_round_bytes <= threshold_bytes || copy.rounds >= max_rounds.max(1));
        if ready || copy.busy {
            return Ok(Err(CopyProgress { rounds: copy.rounds, bytes: copy.bytes(), last_round_bytes: copy.last_round_bytes, ready }));
        }
        copy.busy = true;
        Ok(Ok(copy.records.len() as u64))
    }

    /// A pre-copy round read `records` from offset `from` (`None`: the store did not answer).
    pub fn finish_copy_round(&mut self, row: &RangeRow, from: u64, records: Option<Vec<Record>>) -> CopyProgress {
        let me = self.id;
        let Some(copy) = self.copies.get_mut(&row.id).filter(|c| c.row.epoch == row.epoch) else {
            return CopyProgress { rounds: 0, bytes: 0, last_round_bytes: 0, ready: false };
        };
        copy.busy = false;
        if let Some(records) = records.filter(|_| copy.records.len() as u64 == from) {
            let round: u64 = records.iter().map(Record::payload_bytes).sum();
            copy.records.extend(records);
            copy.rounds += 1;
            copy.last_round_bytes = round;
            emit(Event::Precopied { server: me, range: row.id, epoch: row.epoch, round: copy.rounds, bytes: round });
        }
        CopyProgress { rounds: copy.rounds, bytes: copy.bytes(), last_round_bytes: copy.last_round_bytes, ready: false }
    }

    /// Start finishing a move to this server: `Ok(None)` when already serving `row` (a
    /// repeated request), else the records pre-copied so far (the range is now held, loading).
    /// The pre-copy stays registered as finishing: [`ServerCore::abandon_finish`] gives the
    /// records back if this attempt fails short of a verdict on the copy.
    ///
    /// Errors: `InProgress` when the finish is already running; `NotNow` when `row` was
    /// assigned to another session or a newer epoch is held.
    pub fn begin_finish(&mut self, row: &RangeRow) -> Result<Option<Vec<Record>>, FinishError> {
        let loading = self.ranges.get(&row.id).is_some_and(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading);
        if loading {
            return Err(FinishError::InProgress);
        }
        if self.open_at(row, false).map_err(FinishError::NotNow)?.is_none() {
            return Ok(None);
        }
        let copy = self.copies.get_mut(&row.id).filter(|c| c.row.epoch == row.epoch && !c.busy);
        Ok(Some(copy.map_or(Vec::new(), |c| {
            c.busy = true;
            std::mem::take(&mut c.records)
        })))
    }

    /// A finish attempt failed short of a verdict on the copy (the store did not answer the
    /// fence or a chunk of the tail): the range is no longer held, and the pre-copied
    /// `records` go back to the copy, so the next attempt copies only the tail again, not the
    /// whole range (issue 15: a lagging target lost three rounds of pre-copy to one timeout).
    pub fn abandon_finish(&mut self, row: &RangeRow, records: Vec<Record>, reason: &str) {
        let _ = self.finish_open(row, None, Err(reason.to_string()));
        if let Some(copy) = self.copies.get_mut(&row.id).filter(|c| c.row.epoch == row.epoch) {
            copy.records = records;
            copy.busy = false;
        }
    }

    /// The session is gone (expired at the authority): drop every range.
    pub fn lose_session(&mut self, reason: &str) {
        self.copies.clear();
        for (id, held) in std::mem::take(&mut self.ranges) {
            emit(Event::Dropped { server: self.id, range: id, epoch: held.row.epoch, reason: reason.to_string() });
        }
        self.session = None;
        self.lease_valid_until_us = 0;
    }
}

/// Run server `id` forever: session upkeep plus request handling.
pub async fn run(id: ServerId, knobs: Knobs, net: crate::seam::Net) {
    let rpc = Rpc::bind(server_addr(id), &net).await;
    let mut core = ServerCore::new(id);
    core.drift_ppm = knobs.lease_margin_ms * 1_000_000 / (2 * knobs.lease_ms.max(1));
    core.mutation = knobs.mutation;
    let core = Rc::new(RefCell::new(core));
    let knobs = Rc::new(knobs);
    {
        let (core, knobs, rpc2) = (core.clone(), knobs.clone(), rpc.clone());
        rpc.serve(move |msg, _from| {
            let (core, knobs, rpc) = (core.clone(), knobs.clone(), rpc2.clone());
            async move { handle(&core, &knobs, &rpc, msg).await }
        });
    }
    // This process's incarnation: its start time, so a restart has a larger one.
    let incarnation = now_us();
    session_loop(&core, &knobs, &rpc, incarnation).await;
}

/// Register, then renew every `renew_interval_ms`; on expiry drop everything and register anew.
async fn session_loop(core: &RefCell<ServerCore>, knobs: &Knobs, rpc: &Rpc, incarnation: u64) {
    let id = core.borrow().id;
    loop {
        let session = core.borrow().session;
        match session {
            None => {
                let sent = now_us();
                if let Ok(Msg::Registered { session }) = rpc.call(crate::config::lock_addr(), Msg::RegisterServer { server: id, incarnation }, knobs.rpc_timeout_ms).await {
                    let mut c = core.borrow_mut();
                    c.session = Some(session);
                    c.lease_valid_until_us = sent + (knobs.lease_ms - knobs.lease_margin()) * 1000;
                    emit(Event::Renewed { server: id, session, ok: true, valid_until_ms: c.lease_valid_until_us / 1000 });
                    continue;
                }
            }
            Some(session) => {
                let sent = now_us();
                let renew = Msg::RenewSession { server: id, session };
                match rpc.call(crate::config::lock_addr(), renew, knobs.rpc_timeout_ms).await {
                    Ok(Msg::SessionRenewed { ok: true }) => {
                        let mut c = core.borrow_mut();
                        if c.session == Some(session) {
                            c.lease_valid_until_us = sent + (knobs.lease_ms - knobs.lease_margin()) * 1000;
                            emit(Event::Renewed { server: id, session, ok: true, valid_until_ms: c.lease_valid_until_us / 1000 });
                        }
                    }
                    Ok(Msg::SessionRenewed { ok: false }) => {
                        emit(Event::SessionExpired { server: id, session });
                        core.borrow_mut().lose_session("session_expired");
                        continue;
                    }
                    _ => {} // no answer: the lease runs out by itself
                }
            }
        }
        sleep_ms(knobs.renew_interval_ms).await;
    }
}

async fn handle(core: &Rc<RefCell<ServerCore>>, knobs: &Rc<Knobs>, rpc: &Rc<Rpc>, msg: Msg) -> Option<Msg> {
    let id = core.borrow().id;
    match msg {
        Msg::Append { range, epoch, key, id: op, bytes, bulk } => {
            if knobs.mutated(Mutation::CheckThenAwaitThenAdmit) {
                let checked = core.borrow().check(range, epoch, &key, now_us());
                if let Err(refusal) = checked {
                    return Some(Msg::Served { result: Err(refusal) });
                }
                sleep_ms(10).await;
            }
            let admitted = core.borrow_mut().admit(range, epoch, &key, op, now_us());
            match admitted {
                Err(refusal) => Some(Msg::Served { result: Err(refusal) }),
                Ok(None) => Some(Msg::Served { result: Ok(bytes::Bytes::new()) }),
                Ok(Some(epoch)) => {
                    let record = Record { epoch, id: op, key, bytes, bulk };
                    let req = Msg::StoreAppend { stream: range, server: id, record: record.clone() };
                    let result = match rpc.call(store_addr(), req, knobs.store_timeout_ms).await {
                        Ok(Msg::StoreAppended { result }) => Some(result),
                        _ => None,
                    };
                    let resync = core.borrow_mut().finish_append(range, &record, result);
                    spawn_resync(core, knobs, rpc, resync);
                    match result {
                        Some(Ok(_)) => {
                            // Answer only once the append is visible to reads here (earlier
                            // offsets may still be on their way back from the store).
                            if wait_applied(core, knobs, range, epoch, op).await {
                                Some(Msg::Served { result: Ok(bytes::Bytes::new()) })
                            } else {
                                let resync = core.borrow_mut().suspect(range, epoch);
                                spawn_resync(core, knobs, rpc, resync);
                                Some(Msg::ServedUnknown)
                            }
                        }
                        Some(Err(fence)) => Some(Msg::Served { result: Err(Refusal::Fenced { fence }) }),
                        None => Some(Msg::ServedUnknown),
                    }
                }
            }
        }
        Msg::Read { range, epoch, key, level } => Some(Msg::Served { result: core.borrow_mut().read(range, epoch, &key, level, now_us()) }),
        Msg::GetLoad { leader_epoch } => {
            let mut c = core.borrow_mut();
            let ranges = if c.command(leader_epoch, "get_load").is_ok() { c.load(now_us()) } else { Vec::new() };
            Some(Msg::Load { ranges })
        }
        // The manager's commands are rare and their futures large: each runs boxed, so the
        // future of every request (this one) stays about the size of the append path (issue 13).
        Msg::Open { row, leader_epoch, lineage } => Some(Box::pin(open(core, knobs, rpc, &row, leader_epoch, &lineage)).await),
        Msg::PreCopy { row, threshold_bytes, max_rounds, leader_epoch } => Some(Box::pin(pre_copy(core, knobs, rpc, &row, threshold_bytes, max_rounds, leader_epoch)).await),
        Msg::Pause { range, epoch, leader_epoch } => Some(Box::pin(pause(core, knobs, rpc, range, epoch, leader_epoch)).await),
        Msg::FinishMove { row, digest, strategy, lineage, leader_epoch } => {
            if let Err(e) = core.borrow_mut().command(leader_epoch, "finish_move") {
                return Some(Msg::MoveFinished { result: Err(FinishError::NotNow(e)) });
            }
            // The cutover runs in a task of its own (its future is not part of this one).
            let (c, k, r) = (core.clone(), knobs.clone(), rpc.clone());
            let finish = crate::seam::spawn(async move { finish_move(&c, &k, &r, &row, digest, strategy, &lineage).await });
            let result = match crate::seam::timeout_ms(crate::msg::finish_patience_ms(knobs.rpc_timeout_ms), finish).await {
                Some(Ok(result)) => result,
                _ => Err(FinishError::InProgress),
            };
            Some(Msg::MoveFinished { result })
        }
        Msg::Release { range, epoch, to, new_epoch, leader_epoch } => {
            let mut c = core.borrow_mut();
            if c.command(leader_epoch, "release").is_ok() {
                c.release(range, epoch, to, new_epoch);
            }
            Some(Msg::Released)
        }
        other => panic!("{id}: unexpected message {other:?}"),
    }
}

/// `Open`: fence the row's stream, load its lineage and content, and serve.
async fn open(core: &RefCell<ServerCore>, knobs: &Rc<Knobs>, rpc: &Rc<Rpc>, row: &RangeRow, leader_epoch: u64, lineage: &[Source]) -> Msg {
    let begin = {
        let mut c = core.borrow_mut();
        c.command(leader_epoch, "open").and_then(|_| c.begin_open(row))
    };
    match begin {
        Err(e) => Msg::Opened { result: Err(e) },
        Ok(None) => Msg::Opened { result: Ok(()) },
        Ok(Some(from)) => {
            // Content kept from an older epoch (from > 0) keeps its lineage too.
            let wanted = || core.borrow().loading(row);
            let base = if from > 0 { Ok(None) } else { load_lineage(rpc, knobs, lineage, &wanted).await.map(Some) };
            let load = async {
                if knobs.mutated(Mutation::PublishBeforeFence) {
                    load_then_fence(rpc, knobs, row, from, &wanted).await
                } else {
                    fence_and_reload(core, rpc, knobs, row).await
                }
            };
            let loaded = match base {
                Ok(_) => load.await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            let result = core.borrow_mut().finish_open(row, base.ok().flatten().map(Rc::new), loaded);
            Msg::Opened { result }
        }
    }
}

/// `PreCopy`: run one pre-copy round of a move's target unless pre-copy is done.
async fn pre_copy(core: &RefCell<ServerCore>, knobs: &Knobs, rpc: &Rpc, row: &RangeRow, threshold_bytes: u64, max_rounds: u32, leader_epoch: u64) -> Msg {
    let begin = {
        let mut c = core.borrow_mut();
        c.command(leader_epoch, "pre_copy").and_then(|_| c.begin_copy_round(row, threshold_bytes, max_rounds))
    };
    let result = match begin {
        Err(e) => Err(e),
        Ok(Err(progress)) => Ok(progress),
        Ok(Ok(from)) => {
            let wanted = || core.borrow().copying(row);
            let records = read_chunks(rpc, knobs, row.id, from, None, &wanted, true).await.ok();
            Ok(core.borrow_mut().finish_copy_round(row, from, records))
        }
    };
    Msg::PreCopied { result }
}

/// `Pause`: stop admitting to a move's source and answer its digest once drained.
async fn pause(core: &RefCell<ServerCore>, knobs: &Knobs, rpc: &Rpc, range: RangeId, epoch: Epoch, leader_epoch: u64) -> Msg {
    let paused = {
        let mut c = core.borrow_mut();
        c.command(leader_epoch, "pause").and_then(|_| c.pause(range, epoch, now_us()))
    };
    if let Err(e) = paused {
        return Msg::PausedAt { result: Err(e) };
    }
    Msg::PausedAt { result: drain(core, knobs, rpc, range, epoch).await }
}

/// Wait until the paused `range` at `epoch` has no admitted effect left and its content
/// matches the stream (reloading first if an outcome was unknown), for at most twice the store
/// timeout plus the transfers queued on this server's link when the drain begins (the admitted
/// appends still to leave it: a bound that grows with the write rate, issue 15). Returns its
/// digest: the final length and checksum of the source of a move.
///
/// Errors: the range was dropped or reopened meanwhile, or the drain did not finish in time.
async fn drain(core: &RefCell<ServerCore>, knobs: &Knobs, rpc: &Rpc, range: RangeId, epoch: Epoch) -> Result<StreamDigest, String> {
    let id = core.borrow().id;
    let queued_ms = rpc.link_backlog_us().div_ceil(1000);
    let wait = async {
        loop {
            let progress = {
                let c = core.borrow();
                if let Some(digest) = c.drained(range, epoch)? {
                    return Ok(digest);
                }
                c.ranges[&range].progress.clone()
            };
            progress.notified().await;
        }
    };
    let digest = crate::seam::timeout_ms(2 * knobs.store_timeout_ms + queued_ms, wait).await.unwrap_or_else(|| Err(format!("{id}: {range} did not drain in time")))?;
    emit(Event::Drained { server: id, range, epoch, digest });
    Ok(digest)
}

/// The target's side of a move's cutover: fence the stream at the transfer's epoch (so nothing
/// more from the source can land), copy the tail past what pre-copy brought, check the whole
/// copy against the source's digest, and serve.
///
/// A repeated request while an earlier one is still fencing and copying waits for that attempt
/// (up to the caller's patience) instead of answering `InProgress` at once: `Ok` if the range
/// now serves here, `NotNow` if that attempt failed. Found by the 10,000-seed sweep (issue 13,
/// seed 4189): the leader's repeated asks ([`crate::handoff::FINISH_POLLS_PER_ROUND`]) were all
/// answered at once within a few ms, the round left the move 5 ms before the copy was done,
/// and the paused range waited 1.5 s for the leader's next round.
async fn finish_move(core: &RefCell<ServerCore>, knobs: &Knobs, rpc: &Rpc, row: &RangeRow, digest: StreamDigest, strategy: Strategy, lineage: &[Source]) -> Result<(), FinishError> {
    let begun = core.borrow_mut().begin_finish(row);
    let records = match begun {
        Err(FinishError::InProgress) => return await_running_finish(core, row).await,
        begun => begun?,
    };
    let Some(records) = records else { return Ok(()) };
    let wanted = || core.borrow().loading(row);
    let base = match load_lineage(rpc, knobs, lineage, &wanted).await {
        Ok(base) => Rc::new(base),
        Err(e) => {
            core.borrow_mut().abandon_finish(row, records, &e.to_string());
            return Err(FinishError::NotNow(e.to_string()));
        }
    };
    let tail = match fence_and_load(rpc, knobs, row, records.len() as u64, &wanted).await {
        Ok(tail) => tail,
        Err(e) => {
            core.borrow_mut().abandon_finish(row, records, &e.to_string());
            return Err(FinishError::NotNow(e.to_string()));
        }
    };
    core.borrow_mut().complete_move(row, base, records, tail, digest, strategy)
}

/// Wait until the finish already running for `row` ends (the range leaves `Loading` at
/// `row.epoch`): `Ok` if the range serves here at that epoch, `NotNow` if the attempt failed
/// (the copy did not match, or the store did not answer: the leader asks again).
async fn await_running_finish(core: &RefCell<ServerCore>, row: &RangeRow) -> Result<(), FinishError> {
    loop {
        let progress = {
            let c = core.borrow();
            match c.ranges.get(&row.id).filter(|h| h.row.epoch == row.epoch) {
                Some(held) if held.state == HeldState::Loading => held.progress.clone(),
                Some(held) if held.state == HeldState::Active => return Ok(()),
                _ => return Err(FinishError::NotNow(format!("{}: the finish of {} at {} failed", c.id, row.id, row.epoch))),
            }
        };
        let notified = progress.notified();
        notified.await;
    }
}

/// Wait until `op` is applied to the content of `range` at `epoch`, for at most the store
/// timeout. Returns false if that did not happen (range dropped, reloading, or timed out).
async fn wait_applied(core: &RefCell<ServerCore>, knobs: &Knobs, range: RangeId, epoch: Epoch, op: OpId) -> bool {
    let wait = async {
        loop {
            let progress = {
                let c = core.borrow();
                let Some(held) = c.ranges.get(&range).filter(|h| h.row.epoch == epoch) else { return false };
                if held.applied.contains(&op) {
                    return true;
                }
                held.progress.clone()
            };
            let notified = progress.notified();
            notified.await;
        }
    };
    crate::seam::timeout_ms(knobs.store_timeout_ms, wait).await.unwrap_or(false)
}

/// Why a stream could not be fenced and loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoadError {
    /// The fence is already above our epoch: a newer owner exists.
    Fenced(Epoch),
    /// The store did not answer in time.
    NoAnswer,
    /// The transfer is no longer wanted here (the range was dropped or reopened at a newer
    /// epoch, the session was lost, the pre-copy was dropped): it stopped reading.
    Abandoned,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Fenced(e) => write!(f, "fence already at {e}"),
            LoadError::NoAnswer => write!(f, "store did not answer the fence"),
            LoadError::Abandoned => write!(f, "no longer loading here"),
        }
    }
}

/// A fence's answer: the first chunk of records from the offset asked, the sealed length, and
/// the store's digest of the stream's records before that offset.
struct FenceAnswer {
    records: Vec<Record>,
    length: u64,
    prefix: StreamDigest,
}

/// Raise the stream's fence to the row's epoch (or find it there), asking for its content from
/// offset `from`.
async fn fence(rpc: &Rpc, knobs: &Knobs, row: &RangeRow, from: u64, bar: Vec<OpId>) -> Result<FenceAnswer, LoadError> {
    let fence = Msg::Fence { stream: row.id, epoch: row.epoch, from, bar };
    match rpc.call(store_addr(), fence, knobs.store_timeout_ms).await {
        Ok(Msg::FenceResult { result: Ok(records), length, prefix }) => Ok(FenceAnswer { records, length, prefix }),
        Ok(Msg::FenceResult { result: Err(fence), .. }) => Err(LoadError::Fenced(fence)),
        _ => Err(LoadError::NoAnswer),
    }
}

/// `records` were read from offset `from` on; read the rest up to the sealed `length`, a chunk
/// at a time (see [`read_chunks`]).
async fn read_rest(rpc: &Rpc, knobs: &Knobs, stream: RangeId, from: u64, mut records: Vec<Record>, length: u64, wanted: &dyn Fn() -> bool) -> Result<Vec<Record>, LoadError> {
    let got = from + records.len() as u64;
    if got < length {
        records.extend(read_chunks(rpc, knobs, stream, got, Some(length), wanted, false).await?);
    }
    Ok(records)
}

/// Raise the stream's fence to the row's epoch (or find it there) and fetch its content from
/// offset `from` up to the sealed length, a chunk at a time while `wanted` (see [`read_chunks`]).
async fn fence_and_load(rpc: &Rpc, knobs: &Knobs, row: &RangeRow, from: u64, wanted: &dyn Fn() -> bool) -> Result<Vec<Record>, LoadError> {
    let answer = fence(rpc, knobs, row, from, Vec::new()).await?;
    read_rest(rpc, knobs, row.id, from, answer.records, answer.length, wanted).await
}

/// Fence `row`'s stream and load what this server does not hold yet: from the prefix it keeps
/// ([`ServerCore::load_from`]) when the store's digest of that prefix matches the content
/// applied here ([`ServerCore::keep_prefix`]), else the whole stream from offset 0. The fence
/// comes first either way: only records below its sealed length (durable, and final for every
/// writer at an older epoch) are compared or loaded. Stops reading once `row` is no longer
/// loading here ([`ServerCore::loading`]).
async fn fence_and_reload(core: &RefCell<ServerCore>, rpc: &Rpc, knobs: &Knobs, row: &RangeRow) -> Result<Vec<Record>, LoadError> {
    let (from, bar) = {
        let c = core.borrow();
        (c.load_from(row), c.doubtful(row))
    };
    let answer = fence(rpc, knobs, row, from, bar.clone()).await?;
    core.borrow_mut().settled(row, &bar);
    let kept = core.borrow_mut().keep_prefix(row, from, answer.prefix);
    let records = if kept == from { answer.records } else { Vec::new() };
    read_rest(rpc, knobs, row.id, kept, records, answer.length, &|| core.borrow().loading(row)).await
}

/// Consecutive unanswered chunk reads after which a transfer gives up.
const CHUNK_ATTEMPTS: u32 = 3;

/// Read `stream` from offset `from` up to `upto` (`None`: the durable end when the first chunk
/// is answered), one chunk per call. Each call waits the store timeout: the store sizes every
/// answer to leave its link within half of it, so the bound holds for a range of any size and
/// the transfer as a whole takes as long as its bytes need (issue 15). A chunk left unanswered
/// is asked again, up to [`CHUNK_ATTEMPTS`] times in a row.
///
/// `wanted` is asked before each chunk: a transfer whose purpose is gone (the range dropped or
/// reopened at a newer epoch, the session lost, the pre-copy dropped) stops at once instead of
/// reading the rest of the stream. Found by the pause review (stop-and-copy of 16 GiB at
/// r = 0.25 of 100 MiB/s with faults, seed 0): loads of epochs the server had already dropped
/// went on reading 17 GiB each, up to four at a time on the store's link, and the one load that
/// mattered took over 550 s instead of about 180 s; the range was still preparing 540 s after
/// the heal.
///
/// Errors: `NoAnswer` when a chunk went unanswered that many times, or the stream ended short
/// of `upto`; `Abandoned` when `wanted` says no.
async fn read_chunks(rpc: &Rpc, knobs: &Knobs, stream: RangeId, from: u64, upto: Option<u64>, wanted: &dyn Fn() -> bool, precopy: bool) -> Result<Vec<Record>, LoadError> {
    let mut out: Vec<Record> = Vec::new();
    let mut end = upto;
    let mut misses = 0;
    loop {
        let at = from + out.len() as u64;
        if end.is_some_and(|e| at >= e) {
            return Ok(out);
        }
        if !wanted() {
            return Err(LoadError::Abandoned);
        }
        let read = Msg::ReadStream { stream, from: at, upto: end, precopy };
        match rpc.call(store_addr(), read, knobs.store_timeout_ms).await {
            Ok(Msg::StreamRead { records, length, .. }) => {
                misses = 0;
                let end = *end.get_or_insert(length);
                if records.is_empty() {
                    return if at >= end { Ok(out) } else { Err(LoadError::NoAnswer) };
                }
                out.extend(records);
            }
            _ => {
                misses += 1;
                if misses >= CHUNK_ATTEMPTS {
                    return Err(LoadError::NoAnswer);
                }
            }
        }
    }
}

/// Mutation `publish-before-fence`: read the stream without fencing it, and send the fence
/// without waiting for it, so the range serves (and the manager publishes it) before its fence
/// is raised.
async fn load_then_fence(rpc: &Rc<Rpc>, knobs: &Rc<Knobs>, row: &RangeRow, from: u64, wanted: &dyn Fn() -> bool) -> Result<Vec<Record>, LoadError> {
    let records = read_chunks(rpc, knobs, row.id, from, None, wanted, false).await?;
    let (rpc, knobs, row) = (rpc.clone(), knobs.clone(), row.clone());
    crate::seam::spawn(async move {
        let _ = fence(&rpc, &knobs, &row, 0, Vec::new()).await;
    });
    Ok(records)
}

/// Read the sealed ancestors of a range (`lineage`, oldest first) and keep the records that
/// fall in each source's key range, in order.
///
/// Errors: the store did not answer, or returned fewer records than a source's sealed length;
/// the load is no longer `wanted` ([`read_chunks`]).
async fn load_lineage(rpc: &Rpc, knobs: &Knobs, lineage: &[Source], wanted: &dyn Fn() -> bool) -> Result<Vec<Record>, LoadError> {
    let mut out = Vec::new();
    for src in lineage {
        let records = read_chunks(rpc, knobs, src.stream, 0, Some(src.upto), wanted, false).await?;
        if records.len() as u64 != src.upto {
            return Err(LoadError::NoAnswer);
        }
        out.extend(records.into_iter().filter(|r| src.contains(&r.key)));
    }
    Ok(out)
}

/// Start reloading `row` in the background, if there is one to reload.
fn spawn_resync(core: &Rc<RefCell<ServerCore>>, knobs: &Rc<Knobs>, rpc: &Rc<Rpc>, row: Option<RangeRow>) {
    if let Some(row) = row {
        let (core, knobs, rpc) = (core.clone(), knobs.clone(), rpc.clone());
        crate::seam::spawn(async move { resync_loop(&core, &knobs, &rpc, row).await });
    }
}

/// Reload a range whose content may have diverged from its stream (an append's outcome at the
/// store is unknown), retrying while the store does not answer, for as long as the range is
/// still ours at that epoch.
async fn resync_loop(core: &RefCell<ServerCore>, knobs: &Knobs, rpc: &Rpc, row: RangeRow) {
    loop {
        let loaded = fence_and_reload(core, rpc, knobs, &row).await;
        let still_loading = core.borrow().ranges.get(&row.id).is_some_and(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading);
        if !still_loading {
            return;
        }
        if loaded == Err(LoadError::NoAnswer) {
            sleep_ms(knobs.renew_interval_ms).await;
            continue;
        }
        let _ = core.borrow_mut().finish_open(&row, None, loaded.map_err(|e| e.to_string()));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::RangeState;
    use proptest::prelude::{any, prop_assert_eq, proptest};
    use proptest::strategy::Strategy as _;

    /// [`build_content`] against the one-by-one application it replaced: records in range, the
    /// first copy of each id, each object its records' bytes in stream order (keys of one or two
    /// letters from a small alphabet so objects get several records and keys share prefixes,
    /// ids from a small set so duplicates occur, and some keys out of `[b, e)`).
    #[test]
    fn build_content_matches_applying_records_one_by_one() {
        let row = RangeRow { id: RangeId(1), start: b"b".to_vec(), end: Some(b"e".to_vec()), owner: None, owner_session: 0, epoch: Epoch(1), state: RangeState::Preparing, sources: vec![], sealed: 0, born_ms: 0 };
        let key = proptest::collection::vec(b'a'..b'g', 1..3);
        let record = (1u32..3, 0u64..8, key, proptest::collection::vec(any::<u8>(), 0..4)).prop_map(|(client, seq, key, bytes)| Record { epoch: Epoch(1), id: OpId { client, seq }, key, bytes: bytes.into(), bulk: 0 });
        proptest!(|(records in proptest::collection::vec(record, 0..40))| {
            let mut applied = rustc_hash::FxHashSet::default();
            let mut objects = BTreeMap::new();
            for rec in &records {
                if row.contains(&rec.key) && applied.insert(rec.id) {
                    extend_object(&mut objects, &rec.key, &rec.bytes);
                }
            }
            let (built_applied, built_objects) = build_content(&row, records.iter());
            prop_assert_eq!(built_applied, applied);
            prop_assert_eq!(built_objects, objects);
        });
    }

    /// A move target asked to finish again while its first finish still fences and copies:
    /// the repeated ask waits for that attempt (within the patience the handler gives it) and
    /// answers with its outcome, `Ok` once the range serves, `NotNow` once it failed, instead
    /// of `InProgress` at once (seed 4189 of the default scenario: the leader's repeated asks
    /// were all spent within a few ms and the round left the move just before the copy was
    /// done). Returns, per case, the repeated ask's answer and when it came (ms after the ask).
    fn repeated_finish(first_succeeds: bool) -> (Result<(), FinishError>, u64) {
        let out = std::sync::Arc::new(std::sync::Mutex::new(None));
        let (o, waiting) = (out.clone(), out.clone());
        crate::testkit::block_on(async move {
            let h = madsim::runtime::Handle::current();
            h.create_node().name("server-1").ip(server_addr(ServerId(1)).ip()).init(move || {
                let o = o.clone();
                async move {
                    let net = crate::seam::Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() };
                    let rpc = Rpc::bind(server_addr(ServerId(1)), &net).await;
                    let knobs = Knobs::default();
                    let row = RangeRow { id: RangeId(1), start: vec![], end: None, owner: Some(ServerId(1)), owner_session: 7, epoch: Epoch(3), state: RangeState::Preparing, sources: vec![], sealed: 0, born_ms: 0 };
                    let core = Rc::new(RefCell::new(ServerCore::new(ServerId(1))));
                    core.borrow_mut().session = Some(7);
                    // The first finish is running: the range is held, loading.
                    assert_eq!(core.borrow_mut().begin_finish(&row).map_err(|e| format!("{e:?}")), Ok(Some(vec![])));
                    let (c, r) = (core.clone(), row.clone());
                    crate::seam::spawn(async move {
                        sleep_ms(100).await;
                        let loaded = if first_succeeds { Ok(vec![]) } else { Err("the store did not answer".to_string()) };
                        let _ = c.borrow_mut().finish_open(&r, None, loaded);
                    });
                    let start = now_us();
                    let digest = StreamDigest::of(&[]);
                    let repeated = finish_move(&core, &knobs, &rpc, &row, digest, Strategy::StopAndCopy, &[]);
                    let answer = crate::seam::timeout_ms(crate::msg::finish_patience_ms(knobs.rpc_timeout_ms), repeated).await.unwrap_or(Err(FinishError::InProgress));
                    *o.lock().unwrap() = Some((answer, (now_us() - start) / 1000));
                }
            }).build();
            while waiting.lock().unwrap().is_none() {
                sleep_ms(10).await;
            }
        });
        let answer = out.lock().unwrap().take().expect("answered");
        answer
    }

    #[test]
    fn server_repeated_finish_waits_for_the_running_one() {
        let (answer, after_ms) = repeated_finish(true);
        assert_eq!(answer, Ok(()), "the copy finished within the patience: the repeated ask says so");
        assert!((100..150).contains(&after_ms), "answered when the first attempt ended, not at once: {after_ms} ms");
        let (answer, after_ms) = repeated_finish(false);
        assert!(matches!(answer, Err(FinishError::NotNow(_))), "the first attempt failed: {answer:?}");
        assert!((100..150).contains(&after_ms), "woken by the failure, not by the patience: {after_ms} ms");
    }
}
