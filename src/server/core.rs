//! Core (pure: no runtime, no I/O, no await; time passed in): a partition server's protocol
//! state and the steps that change it. [`ServerCore`] holds which ranges this server holds, at
//! which epoch and state, their content, and the session lease; each step method changes that
//! state and queues its outputs ([`Effect`]: events, goals, progress of a range for the waits
//! on it) in the core, in order. The request flows that string the steps together with the
//! store's and the authority's answers are in [`super::flow`] ([`ServerCore::handle`]); the
//! driver that performs them is `node` ([`super::run`]).
//!
//! The authority check (epoch, lease, state, key in range) and the admission of an append's
//! effect happen in one synchronous step ([`ServerCore::admit`]), with no await between them;
//! the effect then goes to the store, whose fence rejects it if a newer owner took over in the
//! meantime. Idea: the "check then act" race of MongoDB SERVER-26885 is closed by admitting in
//! the same step as the check and fencing where the write takes effect.

use super::content::{build_content, extend_object, object_bytes, Object};
pub use super::step::{Effect, Notifier};
use crate::config::{Knobs, Mutation};
use crate::event::{ClientOp, Event};
use crate::goal::Goal;
use crate::ids::{Epoch, Key, OpId, RangeId, ServerId};
use crate::map::{RangeRow, Strategy};
use crate::msg::{CopyProgress, FinishError, RangeLoad, ReadLevel, Record, Refusal, StreamDigest};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;


/// The outputs a core's steps queued, in order, until the caller takes them.
#[derive(Clone, Debug, Default, Hash)]
pub struct Out(Vec<Effect>);

impl Out {
    /// Queue `event`.
    pub fn event(&mut self, event: Event) {
        self.0.push(Effect::Event(event));
    }
    /// Queue `goal`.
    pub fn goal(&mut self, goal: Goal) {
        self.0.push(Effect::Goal(goal));
    }
    /// Queue any effect.
    pub fn push(&mut self, effect: Effect) {
        self.0.push(effect);
    }
    /// Take what was queued.
    pub fn take(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.0)
    }
}

/// Whether a held range is being loaded or serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeldState {
    /// Fencing and loading from the store; refuses requests with `NotReady`.
    Loading,
    /// Serving at its epoch.
    Active,
}

/// A range this server holds. Its `Hash` (the model checker's state key) hashes `applied` in
/// sorted order: a hash set's iteration order depends on how it was filled.
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
    /// Whom to wake ([`Effect::Progress`]) whenever records are applied or an admitted effect
    /// finishes: appends waiting to be visible before answering, a pause waiting for the drain,
    /// a repeated finish waiting for the running one.
    pub progress: Notifier,
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
    /// in the network cannot land behind the reload unseen. Emptied by that fence.
    pub doubtful: BTreeSet<OpId>,
}

/// How many recent operations and keys a range remembers for its load report.
const LOAD_SAMPLE: usize = 256;
/// The window a load report's rate is measured over, µs.
const LOAD_WINDOW_US: u64 = 2_000_000;

impl std::hash::Hash for Held {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let Held { row, state, objects, applied, inflight, next_offset, acked, progress, paused, paused_at_us, digest, base, base_bytes, recent_ops, recent_keys, load_from, doubtful } = self;
        let mut applied: Vec<&OpId> = applied.iter().collect();
        applied.sort_unstable();
        (row, state, objects, applied, inflight, next_offset, acked, progress).hash(h);
        (paused, paused_at_us, digest, base, base_bytes, recent_ops, recent_keys, load_from, doubtful).hash(h);
    }
}

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

    /// Apply acknowledged records from `next_offset` on, as far as they are contiguous; the
    /// caller wakes the appends waiting to become visible ([`Effect::Progress`]).
    fn apply_acked(&mut self) {
        while let Some(rec) = self.acked.remove(&self.next_offset) {
            self.digest.add(&rec);
            if self.applied.insert(rec.id) {
                extend_object(&mut self.objects, &rec.key, &rec.bytes);
            }
            self.next_offset += 1;
        }
    }
}

/// A move target's copy of a range's stream, built by pre-copy rounds before the source pauses.
#[derive(Clone, Debug, Hash)]
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
#[derive(Clone, Debug)]
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
    /// The timing knobs the flows use (timeouts, lease, renew interval).
    pub knobs: Knobs,
    /// This incarnation's start time (µs, local clock), set by [`super::step::Input::Start`]: a
    /// restart registers with a larger one.
    pub incarnation: u64,
    /// The serial of the last [`Held`] made ([`Notifier::serial`]).
    pub held_serial: u64,
    /// Outputs queued by the steps, taken by [`ServerCore::take_effects`].
    pub out: Out,
}

impl ServerCore {
    /// A fresh incarnation holding nothing.
    pub fn new(id: ServerId) -> Self {
        ServerCore::with_knobs(id, Knobs::default())
    }

    /// A fresh incarnation holding nothing, run by `knobs` (its mutation and the drift its lease
    /// margin is sized for come from them).
    pub fn with_knobs(id: ServerId, knobs: Knobs) -> Self {
        let drift_ppm = knobs.lease_margin_ms * 1_000_000 / (2 * knobs.lease_ms.max(1));
        let mutation = knobs.mutation;
        let (ranges, copies, moved) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        ServerCore { id, session: None, lease_valid_until_us: 0, ranges, mutation, copies, moved, leader_epoch_seen: 0, drift_ppm, knobs, incarnation: 0, held_serial: 0, out: Out::default() }
    }

    /// Take the outputs the steps queued since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        self.out.take()
    }

    pub(super) fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m) || self.knobs.also_mutation == Some(m)
    }

    fn lease_valid(&self, now_us: u64) -> bool {
        self.session.is_some() && now_us < self.lease_valid_until_us
    }

    /// The authority check shared by appends and reads. Returns the held range. A refusal
    /// `Moved` is traced by the caller ([`ServerCore::redirected`]).
    fn authorize(&self, range: RangeId, epoch: Epoch, key: &[u8], now_us: u64) -> Result<&Held, Refusal> {
        let Some(held) = self.ranges.get(&range) else {
            let Some(&(owner, moved_to)) = self.moved.get(&range) else { return Err(Refusal::NotOwner) };
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
        let checked = if self.mutated(Mutation::CheckThenAwaitThenAdmit) { self.ranges.get(&range).map(|_| ()).ok_or(Refusal::NotOwner) } else { self.authorize(range, epoch, key, now_us).map(|_| ()) };
        if let Err(reason) = checked {
            self.redirected(range, epoch, key, &reason);
            self.out.event(Event::Refused { server: self.id, range, epoch, key: key.to_vec(), op: ClientOp::Append, reason: reason.clone() });
            return Err(reason);
        }
        let held = &self.ranges[&range];
        let write_at = if self.mutated(Mutation::ServerSkipsEpochCheck) { held.row.epoch } else { epoch };
        if held.applied.contains(&id) {
            return Ok(None);
        }
        if self.lease_valid_until_us.saturating_sub(now_us) < 100_000 {
            self.out.goal(Goal::AdmitNearLeaseEnd);
        }
        if held.inflight.contains(&id) {
            return Err(Refusal::InFlight);
        }
        let held = self.ranges.get_mut(&range).expect("authorized");
        held.inflight.insert(id);
        held.note_op(key, now_us);
        let (server, session, epoch) = (self.id, self.session.unwrap_or(0), held.row.epoch);
        self.out.event(Event::Admit { server, session, range, epoch, key: key.to_vec(), id });
        Ok(Some(write_at))
    }

    /// The authority check alone, for the handler of mutation `check-then-await-then-admit`.
    pub fn check(&mut self, range: RangeId, epoch: Epoch, key: &[u8], now_us: u64) -> Result<(), Refusal> {
        let checked = self.authorize(range, epoch, key, now_us).map(|_| ());
        if let Err(reason) = &checked {
            self.redirected(range, epoch, key, reason);
        }
        checked
    }

    /// Trace a request for `range` refused with `Moved` (the range went to another server).
    fn redirected(&mut self, range: RangeId, epoch: Epoch, key: &[u8], reason: &Refusal) {
        if let Refusal::Moved { owner, epoch: new_epoch } = *reason {
            self.out.event(Event::Redirected { server: self.id, range, epoch, key: key.to_vec(), to: owner, new_epoch });
        }
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
        self.out.push(Effect::Progress(held.progress));
        match result {
            Some(Ok(offset)) => {
                if offset >= held.next_offset {
                    held.acked.insert(offset, record.clone());
                }
                // While reloading, the reload decides where the content starts.
                if held.state == HeldState::Active {
                    held.apply_acked();
                    self.out.push(Effect::Progress(held.progress));
                }
                None
            }
            Some(Err(fence)) if fence > held.row.epoch && !keeps_fenced => {
                self.out.event(Event::Dropped { server: me, range, epoch: held.row.epoch, reason: "fenced".into() });
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
    /// reload) that finds it no longer is stops reading the stream ([`super::step::Want`]).
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
        self.out.event(Event::PrefixDiverged { server: me, range: row.id, epoch: row.epoch, held: held.digest, store });
        held.load_from = 0;
        0
    }

    /// Accept a command from a manager whose leader epoch is `leader_epoch`. Errors: an
    /// epoch older than the newest seen (a deposed leader's command, late or replayed).
    pub fn command(&mut self, leader_epoch: u64, kind: &'static str) -> Result<(), String> {
        let obeys_all = self.mutated(Mutation::ServerSkipsEpochCheck) || self.mutated(Mutation::ServerObeysDeposedLeader);
        if leader_epoch < self.leader_epoch_seen && !obeys_all {
            self.out.event(Event::StaleCommand { server: self.id, command: kind, leader_epoch, seen: self.leader_epoch_seen });
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
        if let Err(reason) = checked.map(|_| ()) {
            self.redirected(range, epoch, key, &reason);
            self.out.event(Event::Refused { server: self.id, range, epoch, key: key.to_vec(), op: ClientOp::Read, reason: reason.clone() });
            return Err(reason);
        }
        let held = self.ranges.get_mut(&range).expect("authorized");
        self.out.event(Event::ReadServed { server: self.id, range, epoch: held.row.epoch, key: key.to_vec(), bounded: level != ReadLevel::Strong });
        let value = held.objects.get(key).map_or_else(bytes::Bytes::new, object_bytes);
        held.note_op(key, now_us);
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
    /// of a fence and the records a target may have added, not of the whole range.
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
                self.out.goal(Goal::StaleRangeCommand);
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
                self.out.event(Event::Dropped { server: self.id, range: row.id, epoch: held.row.epoch, reason: format!("reopened at {} from offset {}", row.epoch, held.next_offset) });
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
        self.held_serial += 1;
        let held = Held {
            row: row.clone(),
            state: HeldState::Loading,
            objects: BTreeMap::new(),
            applied: Default::default(),
            inflight: BTreeSet::new(),
            next_offset: 0,
            acked: BTreeMap::new(),
            progress: Notifier { range: row.id, serial: self.held_serial },
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
            self.out.event(Event::Dropped { server: self.id, range: row.id, epoch: old.row.epoch, reason: format!("reopened at {}", row.epoch) });
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
                    // Wake a repeated finish waiting for this attempt ([`super::step::Wait::Finish`]).
                    self.out.push(Effect::Progress(held.progress));
                }
                self.out.event(Event::Dropped { server: self.id, range: row.id, epoch: row.epoch, reason: format!("load_refused: {e}") });
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
        self.out.push(Effect::Progress(held.progress));
        self.out.event(Event::Activated { server: self.id, range: row.id, epoch: row.epoch, records: held.base.len() + next as usize, stream: next as usize });
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
            self.out.goal(Goal::FinishWithDivergedCopy);
        }
        if copied != digest && !self.mutated(Mutation::TargetSkipsVerify) {
            let why = format!(
                "copy of {} does not match the source: {} records, {} bytes, checksum {:016x} here; {} records, {} bytes, checksum {:016x} at the source",
                row.id, copied.records, copied.bytes, copied.checksum, digest.records, digest.bytes, digest.checksum
            );
            let _ = self.finish_open(row, None, Err(why.clone()));
            self.out.event(Event::Diverged { server: self.id, range: row.id, epoch: row.epoch, error: why.clone() });
            return Err(FinishError::Diverged(why));
        }
        self.finish_load(row, Some(base), Ok(records), Some(copied)).map_err(FinishError::NotNow)?;
        self.out.event(Event::Handoff { server: self.id, range: row.id, epoch: row.epoch, strategy, precopy_bytes, tail_bytes, bytes: digest.bytes });
        Ok(())
    }

    /// Goal `stale_range_command` when this server holds `range` at a newer epoch than
    /// `epoch`, the one a manager's `command` names (whatever the command then does); the
    /// `command_missed` event when it holds the range at neither that epoch nor a newer one.
    fn note_command(&mut self, range: RangeId, epoch: Epoch, command: &'static str) {
        match self.ranges.get(&range).map(|h| h.row.epoch) {
            Some(held) if held > epoch => self.out.goal(Goal::StaleRangeCommand),
            Some(held) if held == epoch => {}
            _ => self.out.event(Event::CommandMissed { server: self.id, range, epoch, command }),
        }
    }

    /// Pause `range` at `epoch` for a planned move: from now on it admits nothing and answers
    /// no reads, from `now_us` (the server's clock) on. Idempotent. Errors: the range is not held
    /// at that epoch.
    pub fn pause(&mut self, range: RangeId, epoch: Epoch, now_us: u64) -> Result<(), String> {
        let me = self.id;
        self.note_command(range, epoch, "pause");
        let skip = self.mutated(Mutation::ServerSkipsEpochCheck);
        let held = self.ranges.get_mut(&range).filter(|h| h.row.epoch == epoch || skip).ok_or_else(|| format!("{me} does not hold {range} at {epoch}"))?;
        if !held.paused {
            held.paused = true;
            held.paused_at_us = now_us;
            self.out.event(Event::Paused { server: me, range, epoch: held.row.epoch });
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
        self.note_command(range, epoch, "release");
        if let Some(held) = self.ranges.get(&range).filter(|h| h.row.epoch == epoch || self.mutated(Mutation::ServerSkipsEpochCheck)) {
            self.out.event(Event::Dropped { server: self.id, range, epoch: held.row.epoch, reason: "moved".into() });
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
            self.out.event(Event::Precopied { server: me, range: row.id, epoch: row.epoch, round: copy.rounds, bytes: round });
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
    /// whole range (a lagging target would lose every round of pre-copy to one timeout).
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
            self.out.event(Event::Dropped { server: self.id, range: id, epoch: held.row.epoch, reason: reason.to_string() });
        }
        self.session = None;
        self.lease_valid_until_us = 0;
    }
}

