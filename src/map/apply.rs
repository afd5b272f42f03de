//! Applying map ops (pure): [`PartitionMap::apply_batch`] applies a batch atomically, one
//! function per [`MapOp`], each checking the op against the rows and the journal before it
//! changes anything it keeps.

use super::{ChildPlan, MapError, MapOp, PartitionMap, RangeRow, RangeState, Reshape, ReshapeKind, ReshapeRequest, Strategy, Transfer, TransferPhase};
use crate::ids::{Epoch, Key, RangeId, ServerId};

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
            MapOp::Bootstrap { split_points } => self.bootstrap(split_points),
            MapOp::Assign { range, owner, owner_session } => self.assign(range, owner, owner_session),
            MapOp::Activate { range, epoch } => self.activate(range, epoch),
            MapOp::BeginSplit { range, at, owners } => self.begin_split(range, at, owners),
            MapOp::BeginMerge { left, right, owner } => self.begin_merge(left, right, owner),
            MapOp::PauseReshape { first } => self.pause_reshape(first),
            MapOp::CommitReshape { first, sealed, born_ms } => self.commit_reshape(first, sealed, born_ms),
            MapOp::AbortReshape { first, error } => self.abort_reshape(first, error),
            MapOp::BeginMove { range, to, strategy } => self.begin_move(range, to, strategy),
            MapOp::PauseMove { range } => self.pause_move(range),
            MapOp::CommitMove { range } => self.commit_move(range),
            MapOp::AbortMove { range, error } => self.abort_move(range, error),
            MapOp::RequestMove { range, to } => self.request_move(range, to),
            MapOp::RequestSplit { range, at } => self.request_split(range, at),
            MapOp::RequestMerge { left, right } => self.request_merge(left, right),
            MapOp::Drain { server, on } => self.drain(server, on),
        }
    }

    /// Cut the empty key space into unowned `Preparing` rows at `split_points`.
    fn bootstrap(&mut self, split_points: &[Key]) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Give `range` a new owner at a new epoch (`Preparing`); a move, split or merge in flight
    /// for it, and an operator's move request, are dropped.
    fn assign(&mut self, range: &RangeId, owner: &ServerId, owner_session: &u64) -> Result<(), MapError> {
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
        Ok(())
    }

    /// The owner of `range` opened it at `epoch`: the row serves.
    fn activate(&mut self, range: &RangeId, epoch: &Epoch) -> Result<(), MapError> {
        let row = self.live_row(*range)?;
        if row.epoch != *epoch {
            return Err(MapError::StaleEpoch { range: *range, row: row.epoch, asked: *epoch });
        }
        // A never-assigned row must not become an ownerless active row.
        if row.state != RangeState::Preparing || row.owner.is_none() {
            return Err(MapError::WrongState(*range, row.state));
        }
        row.state = RangeState::Active;
        Ok(())
    }

    /// Journal a split of `range` at `at`: child ids and epochs are allocated now.
    fn begin_split(&mut self, range: &RangeId, at: &Key, owners: &[(ServerId, u64); 2]) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Journal a merge of neighbours `left` and `right` into one child.
    fn begin_merge(&mut self, left: &RangeId, right: &RangeId, owner: &(ServerId, u64)) -> Result<(), MapError> {
        let l = self.idle_row(*left)?;
        let r = self.idle_row(*right)?;
        if l.end.as_ref() != Some(&r.start) {
            return Err(MapError::NotAdjacent(*left, *right));
        }
        let child = self.child_plan(l.start.clone(), r.end.clone(), *owner);
        let m = Reshape { kind: ReshapeKind::Merge, parents: vec![(*left, l.epoch), (*right, r.epoch)], children: vec![child], phase: TransferPhase::Copying };
        self.reshapes.insert(*left, m);
        self.reshape_requests.remove(left);
        Ok(())
    }

    /// Pause every parent of the reshape keyed by `first`.
    fn pause_reshape(&mut self, first: &RangeId) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Retire the parents (with their sealed lengths) and activate the children.
    fn commit_reshape(&mut self, first: &RangeId, sealed: &[u64], born_ms: &u64) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Abort the reshape keyed by `first`: dropped before its pause, else kept as aborted
    /// for the rollback.
    fn abort_reshape(&mut self, first: &RangeId, error: &str) -> Result<(), MapError> {
        let r = self.reshapes.get_mut(first).ok_or(MapError::NoTransfer(*first))?;
        match r.phase {
            TransferPhase::Copying => {
                self.reshapes.remove(first);
            }
            TransferPhase::Paused => r.phase = TransferPhase::Aborted(error.to_owned()),
            TransferPhase::Aborted(_) => return Err(MapError::WrongPhase(*first)),
        }
        Ok(())
    }

    /// Journal a move of `range` to `to` at a new epoch.
    fn begin_move(&mut self, range: &RangeId, to: &(ServerId, u64), strategy: &Strategy) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Pause the source of the move of `range`.
    fn pause_move(&mut self, range: &RangeId) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Hand `range` to the move's target at the move's epoch.
    fn commit_move(&mut self, range: &RangeId) -> Result<(), MapError> {
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
        Ok(())
    }

    /// Abort the move of `range`: dropped before its pause, else kept as aborted for the
    /// rollback.
    fn abort_move(&mut self, range: &RangeId, error: &str) -> Result<(), MapError> {
        let t = self.transfers.get_mut(range).ok_or(MapError::NoTransfer(*range))?;
        match t.phase {
            TransferPhase::Copying => {
                self.transfers.remove(range);
            }
            TransferPhase::Paused => t.phase = TransferPhase::Aborted(error.to_owned()),
            TransferPhase::Aborted(_) => return Err(MapError::WrongPhase(*range)),
        }
        Ok(())
    }

    /// An operator asks to move `range` to `to`.
    fn request_move(&mut self, range: &RangeId, to: &ServerId) -> Result<(), MapError> {
        self.live_ref(*range)?;
        self.move_requests.insert(*range, *to);
        Ok(())
    }

    /// An operator asks to split `range` at `at`.
    fn request_split(&mut self, range: &RangeId, at: &Key) -> Result<(), MapError> {
        if self.in_flight(*range) {
            return Err(MapError::Busy(*range));
        }
        let row = self.idle_row(*range)?;
        if at <= &row.start || row.end.as_ref().is_some_and(|e| at >= e) {
            return Err(MapError::BadSplitKey(*range));
        }
        self.reshape_requests.insert(*range, ReshapeRequest::Split(at.clone()));
        Ok(())
    }

    /// An operator asks to merge `left` with its right neighbour `right`.
    fn request_merge(&mut self, left: &RangeId, right: &RangeId) -> Result<(), MapError> {
        if let Some(busy) = [*left, *right].into_iter().find(|r| self.in_flight(*r)) {
            return Err(MapError::Busy(busy));
        }
        let (l, r) = (self.idle_row(*left)?, self.idle_row(*right)?);
        if l.end.as_ref() != Some(&r.start) {
            return Err(MapError::NotAdjacent(*left, *right));
        }
        self.reshape_requests.insert(*left, ReshapeRequest::Merge(*right));
        Ok(())
    }

    /// An operator switches the drain of `server` on or off.
    fn drain(&mut self, server: &ServerId, on: &bool) -> Result<(), MapError> {
        if self.rows.is_empty() {
            return Err(MapError::NotBootstrapped);
        }
        if *on {
            self.draining.insert(*server);
        } else {
            self.draining.remove(server);
        }
        Ok(())
    }
}
