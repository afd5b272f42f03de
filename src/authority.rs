//! The coordination authority's rules as a pure state machine: leader lease, server session
//! leases, and the partition map table with compare-and-set. No runtime, network or disk inside:
//! [`AuthorityCore::handle`] takes a request and `now` and returns an [`Action`]: a reply, or
//! records to make durable first and what to do once they are ([`AuthorityCore::apply`]). The node
//! task in [`crate::lock`] performs the actions. Idea: raft-rs and quinn-proto keep the protocol a
//! state machine that takes time and inputs and returns outputs, so it is tested without a
//! runtime.
//!
//! Rules:
//! - Linearizable: one process applies one request at a time for anything durable; a request that
//!   writes needs the writers' lock ([`Action::NeedLock`]), and nothing it changes is visible
//!   before its records are durable, so a reply never reveals undurable state.
//! - Leases are not written to disk (renewals would cost an fsync each). After a restart the
//!   authority knows which sessions and which leader existed but not when they last renewed, so
//!   it treats every one of them as renewed at recovery time: nobody's lease can expire earlier
//!   than its holder believes. Idea: Chubby's grace period after master fail-over (Burrows,
//!   OSDI 2006).
//! - Expiry is sticky and durable before anyone learns of it, the manager (the state request)
//!   or the server itself (a refused renewal): a restarted authority does not bring an expired
//!   session back after its ranges went to other servers, nor after its server dropped them.
//! - A map write carries the leader epoch of the term current at the write, and the version it
//!   expects (compare-and-set); each durable map record carries that term.

use crate::config::{Knobs, Mutation};
use crate::event::{reshape_outcomes, Event, Restored};
use crate::ids::ServerId;
use crate::map::{MapOp, PartitionMap, SharedMap};
use crate::msg::{CasRefusal, Msg, SessionView};
use std::collections::BTreeMap;

/// A durable record of the authority.
#[derive(Clone, Debug, Hash)]
pub enum LockRecord {
    /// The whole map after a committed mutation (the last one wins on recovery), with the
    /// leader term that committed it (0: an operator's request).
    Map {
        /// The map (shared with the authority's current map and the commit's event).
        map: SharedMap,
        /// The committing term.
        leader_epoch: u64,
    },
    /// A leader term was granted.
    LeaderTerm {
        /// The manager candidate.
        candidate: u32,
        /// The term.
        epoch: u64,
    },
    /// A server session was started.
    Session {
        /// The server.
        server: ServerId,
        /// The session.
        session: u64,
        /// The registering incarnation ([`Msg::RegisterServer`]).
        incarnation: u64,
    },
    /// A server session expired. Durable before anyone learns of it, so that a restarted
    /// authority does not bring the session back after its ranges went to other servers.
    SessionExpired {
        /// The server.
        server: ServerId,
        /// The session.
        session: u64,
    },
}

#[derive(Clone, Copy, Debug, Hash)]
struct Lease {
    holder: u32,
    epoch: u64,
    expires_us: u64,
}

#[derive(Clone, Copy, Debug, Hash)]
struct Session {
    session: u64,
    /// The server incarnation that registered it.
    incarnation: u64,
    expires_us: u64,
    live: bool,
}

/// What the driver does next for one request.
#[derive(Debug)]
pub enum Action {
    /// Take the writers' lock, then call [`AuthorityCore::handle`] again with `locked`.
    NeedLock,
    /// Emit `events`, then answer `msg`.
    Reply {
        /// The answer.
        msg: Msg,
        /// Events to emit first.
        events: Vec<Event>,
    },
    /// Emit `events`, append `records` to the disk and sync it, then call
    /// [`AuthorityCore::apply`] with `after`.
    Persist {
        /// Records to make durable.
        records: Vec<LockRecord>,
        /// What becomes true once they are.
        after: Pending,
        /// Events to emit first.
        events: Vec<Event>,
    },
}

/// A change that takes effect once its records are durable.
#[derive(Debug)]
pub enum Pending {
    /// A server's new session.
    Registered {
        /// The server.
        server: ServerId,
        /// Its new session.
        session: u64,
        /// The registering incarnation.
        incarnation: u64,
    },
    /// A new leader term.
    Granted {
        /// The candidate.
        candidate: u32,
        /// The term.
        epoch: u64,
    },
    /// Session expiries; then `answer` is sent (a renewal's refusal), or, without one, the
    /// state request is answered (or more expiries persisted).
    Expired {
        /// The expiries made durable.
        records: Vec<LockRecord>,
        /// The answer that waited for them; `None`: the state request's.
        answer: Option<Msg>,
    },
    /// A map version becomes current; `then` is a second one to persist after it (mutation
    /// `retire-parents-first` only).
    Commit {
        /// The new map.
        next: SharedMap,
        /// The ops it applied (for the split and merge outcome events).
        ops: Vec<MapOp>,
        /// The committing term (0: operator).
        leader_epoch: u64,
        /// The committing manager (0: operator).
        manager: u32,
        /// A further version and its ops.
        then: Option<Box<(SharedMap, Vec<MapOp>)>>,
    },
    /// Nothing changes; answer `msg` (mutation `authority-logs-refused-cas`: a refused write
    /// was logged anyway).
    Answer(Msg),
}

/// The authority's state in memory; rebuilt from the disk on start.
#[derive(Clone, Debug, Hash)]
pub struct AuthorityCore {
    lease_us: u64,
    mutation: Option<Mutation>,
    /// The second mutation on at once (`Knobs::also_mutation`).
    also_mutation: Option<Mutation>,
    map: SharedMap,
    /// The leader term that committed `map` (0: operator, or none yet).
    map_leader_epoch: u64,
    leader: Option<Lease>,
    /// The term a leader transfer was asked of ([`Msg::TransferLeader`]): its holder is told
    /// to step down at each renewal until it releases the lease. Memory only: after a restart
    /// nobody is asked.
    transfer: Option<u64>,
    last_leader_epoch: u64,
    sessions: BTreeMap<ServerId, Session>,
    last_session: u64,
    /// Session expiries not yet on disk.
    unpersisted: Vec<LockRecord>,
}

impl AuthorityCore {
    /// Rebuild from the durable `records` at `now` (µs): every lease restarts from now. Returns
    /// the events of the recovery: `recovered`, one `restored` per record, the recovered leader
    /// term, and the map made current (`map_restored`).
    pub fn recover(knobs: &Knobs, records: &[LockRecord], now_us: u64) -> (Self, Vec<Event>) {
        let grace = now_us + knobs.lease_ms * 1000;
        let mut a = AuthorityCore {
            lease_us: knobs.lease_ms * 1000,
            mutation: knobs.mutation,
            also_mutation: knobs.also_mutation,
            map: SharedMap::default(),
            map_leader_epoch: 0,
            leader: None,
            transfer: None,
            last_leader_epoch: 0,
            sessions: BTreeMap::new(),
            last_session: 0,
            unpersisted: Vec::new(),
        };
        let mut events = vec![Event::Recovered { node: "lock-1", records: records.len() }];
        for (index, rec) in records.iter().enumerate() {
            events.push(Event::Restored { node: "lock-1", index, record: restored(rec) });
            match rec {
                LockRecord::Map { map, leader_epoch } => {
                    a.map = map.clone();
                    a.map_leader_epoch = *leader_epoch;
                }
                LockRecord::LeaderTerm { candidate, epoch } => {
                    a.last_leader_epoch = *epoch;
                    a.leader = Some(Lease { holder: *candidate, epoch: *epoch, expires_us: grace });
                }
                LockRecord::Session { server, session, incarnation } => {
                    a.last_session = a.last_session.max(*session);
                    a.sessions.insert(*server, Session { session: *session, incarnation: *incarnation, expires_us: grace, live: true });
                }
                LockRecord::SessionExpired { server, session } => {
                    if let Some(s) = a.sessions.get_mut(server).filter(|s| s.session == *session) {
                        s.live = false;
                    }
                }
            }
        }
        // A leader term, or a map version, can be durable without ever having been announced
        // (torn writes: the record reached the disk, the answer never left): a term, or a split's
        // commit.
        if let Some(l) = a.leader {
            events.push(Event::LeaderRecovered { manager: l.holder, leader_epoch: l.epoch });
        }
        events.push(Event::MapRestored { leader_epoch: a.map_leader_epoch, map: a.map.clone() });
        (a, events)
    }

    /// The current map.
    pub fn map(&self) -> &PartitionMap {
        &self.map
    }

    /// The instants (µs) from which a lease held now counts as expired: each live session's and
    /// the leader's `expires_us + 1` (a lease expires once `now` is past it). For a model
    /// checker that moves time from one deadline to the next.
    pub fn lease_deadlines_us(&self) -> Vec<u64> {
        let sessions = self.sessions.values().filter(|s| s.live).map(|s| s.expires_us + 1);
        sessions.chain(self.leader.map(|l| l.expires_us + 1)).collect()
    }

    /// When `server`'s live session expires (µs of this authority's clock: it counts as
    /// expired once `now` is past it); `None` for no live session. For a model checker whose
    /// setup plays time up to a lease's end.
    pub fn session_expires_us(&self, server: ServerId) -> Option<u64> {
        self.sessions.get(&server).filter(|s| s.live).map(|s| s.expires_us)
    }

    fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m) || self.also_mutation == Some(m)
    }

    /// Expire every lease whose time has passed. Expiry is sticky: a session never comes back.
    /// The expiries go to `unpersisted`, to be made durable before the manager learns of them.
    fn expire(&mut self, now_us: u64) {
        for (server, s) in self.sessions.iter_mut() {
            if s.live && now_us > s.expires_us {
                s.live = false;
                self.unpersisted.push(LockRecord::SessionExpired { server: *server, session: s.session });
            }
        }
        if self.leader.is_some_and(|l| now_us > l.expires_us) {
            self.leader = None;
        }
    }

    fn session_views(&self) -> Vec<SessionView> {
        self.sessions.iter().map(|(server, s)| SessionView { server: *server, session: s.session, live: s.live }).collect()
    }

    /// Answer `msg` at `now_us`; `locked` says whether the driver holds the writers' lock.
    ///
    /// Panics on a message the authority does not serve (a protocol bug of the sender).
    pub fn handle(&mut self, msg: &Msg, now_us: u64, locked: bool) -> Action {
        let reply = |msg| Action::Reply { msg, events: Vec::new() };
        match msg {
            Msg::RenewSession { server, session } => {
                self.expire(now_us);
                let lease_us = self.lease_us;
                match self.sessions.get_mut(server) {
                    Some(s) if s.session == *session && s.live => {
                        s.expires_us = now_us + lease_us;
                        reply(Msg::SessionRenewed { ok: true })
                    }
                    // The refusal tells the server its session ended, and the server drops every
                    // range it holds: the expiry must be durable first, like the one the manager
                    // learns of. Told before it was, a server dropped its ranges, the authority
                    // crashed, recovered the session live, and handed it back to the server's next
                    // registration; the map kept ranges on an owner that no longer held them, and
                    // nothing reassigns the ranges of a live session (its ranges refuse every append
                    // for the rest of the run).
                    _ if self.unpersisted.iter().any(|r| matches!(r, LockRecord::SessionExpired { server: s, session: n } if s == server && n == session)) => {
                        if !locked {
                            return Action::NeedLock;
                        }
                        let expired = std::mem::take(&mut self.unpersisted);
                        Action::Persist { records: expired.clone(), after: Pending::Expired { records: expired, answer: Some(Msg::SessionRenewed { ok: false }) }, events: Vec::new() }
                    }
                    _ => reply(Msg::SessionRenewed { ok: false }),
                }
            }
            Msg::GetMap => reply(Msg::Map { map: self.map.clone() }),
            Msg::AcquireLeader { candidate } if !locked => {
                self.expire(now_us);
                // Mutation `authority-shares-leader-term`: the holder check is gone, so any
                // candidate is told it leads, at the incumbent's term.
                match self.leader {
                    Some(l) if l.holder == *candidate || self.mutated(Mutation::AuthoritySharesLeaderTerm) => {
                        self.leader = Some(Lease { expires_us: now_us + self.lease_us, ..l });
                        if self.transfer == Some(l.epoch) && l.holder == *candidate {
                            return reply(Msg::StepDown { leader_epoch: l.epoch });
                        }
                        reply(Msg::LeaderLease { epoch: Some(l.epoch), holder: Some(*candidate) })
                    }
                    Some(l) => reply(Msg::LeaderLease { epoch: None, holder: Some(l.holder) }),
                    None => Action::NeedLock,
                }
            }
            Msg::TransferLeader => {
                self.expire(now_us);
                self.transfer = self.leader.map(|l| l.epoch);
                reply(Msg::TransferAsked { holder: self.leader.map(|l| l.holder) })
            }
            Msg::ReleaseLeader { candidate, leader_epoch } => self.release_leader(*candidate, *leader_epoch),
            _ if !locked => Action::NeedLock,
            Msg::AcquireLeader { candidate } => {
                self.expire(now_us);
                if let Some(l) = self.leader {
                    // Someone else won while we waited for the disk.
                    return reply(Msg::LeaderLease { epoch: None, holder: Some(l.holder) });
                }
                self.last_leader_epoch += 1;
                let epoch = self.last_leader_epoch;
                Action::Persist { records: vec![LockRecord::LeaderTerm { candidate: *candidate, epoch }], after: Pending::Granted { candidate: *candidate, epoch }, events: Vec::new() }
            }
            Msg::RegisterServer { server, incarnation } => {
                // A registration from the incarnation holding the live session, or an older
                // one (a retry whose answer was lost, or one held in the network past the
                // server's next registration), must not end that session: the manager would
                // reassign ranges its holder still serves. Only a newer incarnation (a restart)
                // replaces it.
                let lease_us = self.lease_us;
                let live = self.sessions.get_mut(server).filter(|s| s.live && now_us <= s.expires_us && *incarnation <= s.incarnation);
                if let Some(live) = live {
                    // The holder's own retry grants the lease anew, like a renewal: the server
                    // counts its lease from this request's sending, so the session must last
                    // from its handling (else: the first registration's answer held by a slow disk,
                    // the retry gets the same session, and the server admits appends after the
                    // authority expired it).
                    if *incarnation == live.incarnation {
                        live.expires_us = now_us + lease_us;
                    }
                    return Action::Reply { msg: Msg::Registered { session: live.session }, events: Vec::new() };
                }
                self.last_session += 1;
                let session = self.last_session;
                let (server, incarnation) = (*server, *incarnation);
                Action::Persist { records: vec![LockRecord::Session { server, session, incarnation }], after: Pending::Registered { server, session, incarnation }, events: Vec::new() }
            }
            Msg::GetState => self.state(now_us, Vec::new()),
            Msg::CasMap { expected_version, leader_epoch, candidate, ops } => {
                self.expire(now_us);
                let current = self.leader.map(|l| l.epoch);
                let refusal = if current != Some(*leader_epoch) && !self.mutated(Mutation::AuthoritySkipsLeaderEpoch) {
                    Some(CasRefusal::StaleLeaderEpoch { asked: *leader_epoch, current })
                } else if self.map.version != *expected_version {
                    Some(CasRefusal::VersionMismatch { expected: *expected_version, actual: self.map.version })
                } else {
                    None
                };
                let mut next = PartitionMap::clone(&self.map);
                let refusal = refusal.or_else(|| next.apply_batch(ops).err().map(CasRefusal::Map));
                if let Some(error) = refusal {
                    let events = vec![Event::CasRefused { leader_epoch: *leader_epoch, expected_version: *expected_version, version: self.map.version, reason: error.to_string() }];
                    let answer = Msg::CasResult { map: self.map.clone(), error: Some(error) };
                    if self.mutated(Mutation::AuthorityLogsRefusedCas) {
                        // The mutation: the refused batch is written ahead of its validation and
                        // never taken back (nothing in memory changes, nothing announces it).
                        let mut logged = PartitionMap::clone(&self.map);
                        let _ = logged.apply_batch(ops);
                        return Action::Persist { records: vec![LockRecord::Map { map: SharedMap::new(logged), leader_epoch: *leader_epoch }], after: Pending::Answer(answer), events };
                    }
                    return Action::Reply { msg: answer, events };
                }
                if let Some(half) = self.retire_parents_first(ops) {
                    next.version += 1;
                    let record = LockRecord::Map { map: half.clone(), leader_epoch: *leader_epoch };
                    let after = Pending::Commit { next: half, ops: Vec::new(), leader_epoch: *leader_epoch, manager: *candidate, then: Some(Box::new((SharedMap::new(next), ops.clone()))) };
                    return Action::Persist { records: vec![record], after, events: Vec::new() };
                }
                self.commit(SharedMap::new(next), ops.clone(), (*leader_epoch, *candidate), Vec::new())
            }
            Msg::Admin { ops } => {
                let mut next = PartitionMap::clone(&self.map);
                let refusal = match ops.iter().find(|op| !op.is_operator_request()) {
                    Some(op) => Some(CasRefusal::NotOperatorRequest(Box::new(op.clone()))),
                    None => next.apply_batch(ops).err().map(CasRefusal::Map),
                };
                if let Some(error) = refusal {
                    let events = vec![Event::CasRefused { leader_epoch: 0, expected_version: self.map.version, version: self.map.version, reason: error.to_string() }];
                    return Action::Reply { msg: Msg::CasResult { map: self.map.clone(), error: Some(error) }, events };
                }
                self.commit(SharedMap::new(next), ops.clone(), (0, 0), Vec::new())
            }
            other => panic!("lock-1: unexpected message {other:?}"),
        }
    }

    /// Persist `next` (the map after `ops`, committed by manager `by.1` at term `by.0`; both 0
    /// for an operator's request).
    fn commit(&self, next: SharedMap, ops: Vec<MapOp>, by: (u64, u32), events: Vec<Event>) -> Action {
        let (leader_epoch, manager) = by;
        Action::Persist { records: vec![LockRecord::Map { map: next.clone(), leader_epoch }], after: Pending::Commit { next, ops, leader_epoch, manager, then: None }, events }
    }

    /// The state request: expire what is due; any expiry not yet durable is persisted first
    /// (the manager acts on expiries it sees here, so they must survive a restart), and the
    /// answer is built only when nothing is left unsaved.
    fn state(&mut self, now_us: u64, events: Vec<Event>) -> Action {
        self.expire(now_us);
        let expired = std::mem::take(&mut self.unpersisted);
        if expired.is_empty() {
            return Action::Reply { msg: Msg::State { map: self.map.clone(), sessions: self.session_views() }, events };
        }
        Action::Persist { records: expired.clone(), after: Pending::Expired { records: expired, answer: None }, events }
    }

    /// [`Msg::ReleaseLeader`]: the holder of term `leader_epoch` gives its lease up, so the
    /// next candidate to ask is granted a new term at once; from anyone else, or for an older
    /// term, nothing changes. Answered with a lease held by whoever holds it now.
    fn release_leader(&mut self, candidate: u32, leader_epoch: u64) -> Action {
        let mut events = Vec::new();
        if self.leader.is_some_and(|l| l.holder == candidate && l.epoch == leader_epoch) {
            self.leader = None;
            self.transfer = None;
            events.push(Event::LeaderReleased { manager: candidate, leader_epoch });
        }
        Action::Reply { msg: Msg::LeaderLease { epoch: None, holder: self.leader.map(|l| l.holder) }, events }
    }

    /// `after`'s records are durable: make its change current (at `now_us`) and say what next.
    pub fn apply(&mut self, after: Pending, now_us: u64) -> Action {
        match after {
            Pending::Registered { server, session, incarnation } => {
                let old = self.sessions.insert(server, Session { session, incarnation, expires_us: now_us + self.lease_us, live: true });
                // The server restarted: its previous incarnation's memory, and authority, are gone.
                let events = old.filter(|o| o.live).map(|o| Event::SessionExpired { server, session: o.session }).into_iter().collect();
                Action::Reply { msg: Msg::Registered { session }, events }
            }
            Pending::Granted { candidate, epoch } => {
                self.leader = Some(Lease { holder: candidate, epoch, expires_us: now_us + self.lease_us });
                Action::Reply { msg: Msg::LeaderLease { epoch: Some(epoch), holder: Some(candidate) }, events: vec![Event::Leader { manager: candidate, leader_epoch: epoch }] }
            }
            Pending::Expired { records, answer } => {
                let events = records
                    .into_iter()
                    .filter_map(|r| match r {
                        LockRecord::SessionExpired { server, session } => Some(Event::LeaseExpired { server, session }),
                        _ => None,
                    })
                    .collect();
                match answer {
                    Some(msg) => Action::Reply { msg, events },
                    None => self.state(now_us, events),
                }
            }
            Pending::Commit { next, ops, leader_epoch, manager, then } => {
                self.map_leader_epoch = leader_epoch;
                let before = std::mem::replace(&mut self.map, next.clone());
                let mut events = reshape_outcomes(&before, &ops);
                events.push(Event::MapCommit { leader_epoch, manager, map: next.clone() });
                match then {
                    Some(more) => {
                        let (more, more_ops) = *more;
                        self.commit(more, more_ops, (leader_epoch, manager), events)
                    }
                    None => Action::Reply { msg: Msg::CasResult { map: next, error: None }, events },
                }
            }
            Pending::Answer(msg) => Action::Reply { msg, events: Vec::new() },
        }
    }

    /// Mutation `retire-parents-first`: for a split or merge commit, the map with only its
    /// parents retired (and the version bumped), committed before the children are published.
    fn retire_parents_first(&self, ops: &[MapOp]) -> Option<SharedMap> {
        let [MapOp::CommitReshape { first, .. }] = ops else { return None };
        let r = self.map.reshapes.get(first).filter(|_| self.mutated(Mutation::RetireParentsFirst))?;
        let mut half = PartitionMap::clone(&self.map);
        for (p, _) in &r.parents {
            half.rows.retire(p, 0)?;
        }
        half.version += 1;
        Some(SharedMap::new(half))
    }
}

/// What a durable record restores, for its recovery event.
fn restored(rec: &LockRecord) -> Restored {
    match rec {
        LockRecord::Map { map, leader_epoch } => Restored::Map { version: map.version, leader_epoch: *leader_epoch, rows: map.rows.len() },
        LockRecord::LeaderTerm { candidate, epoch } => Restored::LeaderTerm { candidate: *candidate, epoch: *epoch },
        LockRecord::Session { server, session, .. } => Restored::Session { server: *server, session: *session },
        LockRecord::SessionExpired { server, session } => Restored::SessionExpired { server: *server, session: *session },
    }
}

#[cfg(test)]
mod tests {
    //! Transcripts without a runtime: each step is a request at a time, and the records the
    //! core asks to persist are "synced" by appending them to a vector that stands for the disk.
    use super::*;
    use crate::ids::{Epoch, RangeId};
    use crate::map::MapError;

    const LEASE_MS: u64 = 1000;

    fn knobs() -> Knobs {
        Knobs { lease_ms: LEASE_MS, ..Knobs::default() }
    }

    /// Drive one request to its reply as the node task does, appending every persisted record
    /// to `disk`. Returns the reply and the events in emission order.
    fn run(core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, msg: Msg, now_us: u64) -> (Msg, Vec<Event>) {
        let mut all = Vec::new();
        let mut action = core.handle(&msg, now_us, false);
        if matches!(action, Action::NeedLock) {
            action = core.handle(&msg, now_us, true);
        }
        loop {
            match action {
                Action::NeedLock => panic!("asked for the lock twice"),
                Action::Reply { msg, events } => {
                    all.extend(events);
                    return (msg, all);
                }
                Action::Persist { records, after, events } => {
                    all.extend(events);
                    disk.extend(records);
                    action = core.apply(after, now_us);
                }
            }
        }
    }

    fn fresh() -> (AuthorityCore, Vec<LockRecord>) {
        (AuthorityCore::recover(&knobs(), &[], 0).0, Vec::new())
    }

    /// A registration held in the network arrived after the server had registered
    /// again, replaced its live session, and the manager reassigned ranges that incarnation
    /// still served. The incarnation that holds the live session (or an older one) gets it
    /// back; only a newer incarnation (a restart) replaces it.
    #[test]
    fn authority_late_registration_of_the_live_incarnation_keeps_its_session() {
        let (mut core, mut disk) = fresh();
        let register_as = |core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, incarnation: u64, now_us: u64| {
            let (Msg::Registered { session }, events) = run(core, disk, Msg::RegisterServer { server: ServerId(1), incarnation }, now_us) else { panic!() };
            (session, events)
        };
        let (first, _) = register_as(&mut core, &mut disk, 100, 1_000);
        let records = disk.len();
        let (again, events) = register_as(&mut core, &mut disk, 100, 2_000);
        assert_eq!(again, first, "a duplicate registration of the live incarnation gets its session");
        assert!(events.is_empty(), "and ends nothing: {events:?}");
        assert_eq!(disk.len(), records, "and writes nothing");
        let (stale, events) = register_as(&mut core, &mut disk, 50, 3_000);
        assert_eq!((stale, events.len()), (first, 0), "an older incarnation's late registration ends nothing");
        let (restarted, events) = register_as(&mut core, &mut disk, 5_000, 5_000);
        assert!(restarted > first);
        assert!(matches!(events[..], [Event::SessionExpired { session, .. }] if session == first), "a restart replaces the live session: {events:?}");
        // Once the session expired, the same incarnation registers anew.
        let later = 5_000 + LEASE_MS * 1000 + 1;
        let (after_expiry, _) = register_as(&mut core, &mut disk, 5_000, later);
        assert!(after_expiry > restarted);
    }

    /// The server counts its lease from the sending of the registration it got an answer to; a retry of
    /// the live incarnation gets the same session, so it must grant the lease from its own
    /// handling, or the authority expires the session while the server still trusts it.
    #[test]
    fn authority_registration_retry_of_the_live_incarnation_grants_the_lease_anew() {
        let (mut core, mut disk) = fresh();
        let register_at = |core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, now_us: u64| {
            let (Msg::Registered { session }, _) = run(core, disk, Msg::RegisterServer { server: ServerId(1), incarnation: 100 }, now_us) else { panic!() };
            session
        };
        let first = register_at(&mut core, &mut disk, 0);
        let half = LEASE_MS * 1000 / 2;
        assert_eq!(register_at(&mut core, &mut disk, half), first, "the retry gets the live session");
        let (Msg::State { sessions, .. }, events) = run(&mut core, &mut disk, Msg::GetState, LEASE_MS * 1000 + half / 2) else { panic!() };
        assert!(sessions[0].live && events.is_empty(), "live past the first registration's lease: the retry extended it ({events:?})");
        let (Msg::State { sessions, .. }, _) = run(&mut core, &mut disk, Msg::GetState, LEASE_MS * 1000 + half + 1) else { panic!() };
        assert!(!sessions[0].live, "and it ends a lease after the retry");
    }

    /// A renewal after a partition was refused from an expiry still only in memory; the servers dropped
    /// their ranges, lock-1 crashed before anything wrote the expiry, recovered the sessions
    /// live, and gave each server's next registration (same incarnation) its old session back.
    /// The map kept seven ranges on owners that no longer held them, for good. A refusal that
    /// ends a session now waits until its expiry is durable, so a restart cannot revive it.
    #[test]
    fn authority_refuses_a_renewal_only_once_its_expiry_is_durable() {
        let (mut core, mut disk) = fresh();
        let incarnation = 100;
        let (Msg::Registered { session }, _) = run(&mut core, &mut disk, Msg::RegisterServer { server: ServerId(1), incarnation }, 0) else { panic!() };
        let past = LEASE_MS * 1000 + 1;
        let renew = Msg::RenewSession { server: ServerId(1), session };
        assert!(matches!(core.handle(&renew, past, false), Action::NeedLock), "the refusal writes the expiry: it takes the writers' lock");
        let (reply, events) = run(&mut core, &mut disk, renew.clone(), past);
        assert!(matches!(reply, Msg::SessionRenewed { ok: false }), "{reply:?}");
        assert!(matches!(disk.last(), Some(LockRecord::SessionExpired { session: s, .. }) if *s == session), "durable before the server is told: {disk:?}");
        assert!(matches!(events[..], [Event::LeaseExpired { session: s, .. }] if s == session), "announced as the state request does: {events:?}");
        let records = disk.len();
        let (reply, events) = run(&mut core, &mut disk, renew, past + 10);
        assert!(matches!(reply, Msg::SessionRenewed { ok: false }) && events.is_empty());
        assert_eq!(disk.len(), records, "an expiry already durable is not written again");
        // The server dropped its ranges on the refusal; lock-1 crashes and recovers before the
        // server registers again from the same process.
        let (mut revived, _) = AuthorityCore::recover(&knobs(), &disk, past + 1_000);
        let (Msg::Registered { session: next }, _) = run(&mut revived, &mut disk, Msg::RegisterServer { server: ServerId(1), incarnation }, past + 2_000) else { panic!() };
        assert!(next > session, "the session whose ranges the server dropped does not come back");
        let (Msg::State { sessions, .. }, _) = run(&mut revived, &mut disk, Msg::GetState, past + 3_000) else { panic!() };
        let live: Vec<(u64, bool)> = sessions.iter().map(|s| (s.session, s.live)).collect();
        assert_eq!(live, vec![(next, true)], "the manager sees the old session gone and fails its ranges over");
    }

    fn register(core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, server: u32, now_us: u64) -> u64 {
        let (Msg::Registered { session }, _) = run(core, disk, Msg::RegisterServer { server: ServerId(server), incarnation: now_us }, now_us) else { panic!() };
        session
    }

    fn leader(core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, candidate: u32, now_us: u64) -> Option<u64> {
        let (Msg::LeaderLease { epoch, .. }, _) = run(core, disk, Msg::AcquireLeader { candidate }, now_us) else { panic!() };
        epoch
    }

    /// The authority expired server-1's session (the
    /// manager gave its ranges away), then crashed; on restart it must not give the session a
    /// fresh lease.
    #[test]
    fn authority_restart_does_not_revive_an_expired_session() {
        let (mut core, mut disk) = fresh();
        let session = register(&mut core, &mut disk, 1, 0);
        let (Msg::State { sessions, .. }, events) = run(&mut core, &mut disk, Msg::GetState, 1_500_000) else { panic!() };
        assert!(!sessions[0].live, "expired at the authority");
        assert!(matches!(disk.last(), Some(LockRecord::SessionExpired { .. })), "the expiry is durable before the answer");
        assert!(matches!(events[..], [Event::LeaseExpired { .. }]));
        let (mut revived, _) = AuthorityCore::recover(&knobs(), &disk, 2_000_000);
        let (reply, _) = run(&mut revived, &mut disk, Msg::RenewSession { server: ServerId(1), session }, 2_000_000);
        assert!(matches!(reply, Msg::SessionRenewed { ok: false }), "a restarted authority must not bring an expired session back");
    }

    #[test]
    fn authority_renewal_extends_a_live_session_and_a_restart_restarts_every_lease() {
        let (mut core, mut disk) = fresh();
        let session = register(&mut core, &mut disk, 1, 0);
        let renew = |core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, now| run(core, disk, Msg::RenewSession { server: ServerId(1), session }, now).0;
        assert!(matches!(renew(&mut core, &mut disk, 900_000), Msg::SessionRenewed { ok: true }));
        assert!(matches!(renew(&mut core, &mut disk, 1_800_000), Msg::SessionRenewed { ok: true }), "renewed at 0.9 s, good until 1.9 s");
        assert!(matches!(renew(&mut core, &mut disk, 2_900_000), Msg::SessionRenewed { ok: false }), "past its lease");
        // A restart: the session comes back with a lease from the recovery on (never shorter
        // than its holder believes).
        let (mut core, mut disk) = fresh();
        let session = register(&mut core, &mut disk, 1, 0);
        let (mut revived, _) = AuthorityCore::recover(&knobs(), &disk, 5_000_000);
        assert!(matches!(run(&mut revived, &mut disk, Msg::RenewSession { server: ServerId(1), session }, 5_900_000).0, Msg::SessionRenewed { ok: true }));
    }

    #[test]
    fn authority_grants_one_leader_term_at_a_time_and_renews_its_holder() {
        let (mut core, mut disk) = fresh();
        assert_eq!(leader(&mut core, &mut disk, 1, 0), Some(1));
        assert!(matches!(disk[..], [LockRecord::LeaderTerm { candidate: 1, epoch: 1 }]), "the term is durable before it is granted");
        assert_eq!(leader(&mut core, &mut disk, 2, 500_000), None, "held by manager-1");
        assert_eq!(leader(&mut core, &mut disk, 1, 900_000), Some(1), "the holder renews without a new term");
        assert_eq!(disk.len(), 1, "a renewal writes nothing");
        assert_eq!(leader(&mut core, &mut disk, 2, 1_950_000), Some(2), "expired at 1.9 s: a new term");
    }

    #[test]
    fn authority_cas_refuses_a_stale_leader_epoch_and_a_stale_version() {
        let (mut core, mut disk) = fresh();
        let first = leader(&mut core, &mut disk, 1, 0).unwrap();
        let second = leader(&mut core, &mut disk, 2, 1_500_000).unwrap();
        let ops = vec![MapOp::Bootstrap { split_points: vec![] }];
        let (Msg::CasResult { error: Some(e), map }, events) = run(&mut core, &mut disk, Msg::CasMap { expected_version: 0, leader_epoch: first, candidate: 1, ops: ops.clone() }, 1_600_000) else { panic!() };
        assert_eq!(e, CasRefusal::StaleLeaderEpoch { asked: first, current: Some(second) });
        assert_eq!(e.to_string(), format!("stale leader epoch {first} (current Some({second}))"), "the traced reason's text");
        assert_eq!(map.version, 0);
        assert!(matches!(&events[..], [Event::CasRefused { reason, .. }] if reason.contains("stale leader")), "the refusal is traced with its reason");
        let (Msg::CasResult { error: Some(e), .. }, _) = run(&mut core, &mut disk, Msg::CasMap { expected_version: 3, leader_epoch: second, candidate: 1, ops: ops.clone() }, 1_600_000) else { panic!() };
        assert_eq!(e, CasRefusal::VersionMismatch { expected: 3, actual: 0 });
        assert_eq!(e.to_string(), "version 3 expected, map is at 0");
        assert!(!disk.iter().any(|r| matches!(r, LockRecord::Map { .. })), "nothing refused is written");
        let (Msg::CasResult { error: None, map }, events) = run(&mut core, &mut disk, Msg::CasMap { expected_version: 0, leader_epoch: second, candidate: 1, ops }, 1_600_000) else { panic!() };
        assert_eq!(map.version, 1);
        assert!(matches!(disk.last(), Some(LockRecord::Map { leader_epoch, .. }) if *leader_epoch == second), "the record carries the term");
        assert!(matches!(events.last(), Some(Event::MapCommit { .. })));
    }

    #[test]
    fn authority_recovery_restores_the_last_map_and_traces_every_record() {
        let (mut core, mut disk) = fresh();
        let term = leader(&mut core, &mut disk, 1, 0).unwrap();
        let ops = vec![MapOp::Bootstrap { split_points: vec![b"m".to_vec()] }];
        run(&mut core, &mut disk, Msg::CasMap { expected_version: 0, leader_epoch: term, candidate: 1, ops }, 10);
        let (revived, events) = AuthorityCore::recover(&knobs(), &disk, 20);
        assert_eq!(revived.map().version, 1);
        let restored = events.iter().filter(|e| matches!(e, Event::Restored { .. })).count();
        assert_eq!(restored, disk.len(), "one event per record");
        assert!(matches!(events.last(), Some(Event::MapRestored { leader_epoch, map }) if *leader_epoch == term && map.version == 1));
    }

    #[test]
    fn authority_operator_requests_only_take_operator_ops() {
        let (mut core, mut disk) = fresh();
        let (Msg::CasResult { error: Some(e), .. }, _) = run(&mut core, &mut disk, Msg::Admin { ops: vec![MapOp::Bootstrap { split_points: vec![] }] }, 0) else { panic!() };
        assert!(matches!(&e, CasRefusal::NotOperatorRequest(op) if matches!(**op, MapOp::Bootstrap { .. })), "{e}");
        assert_eq!(e.to_string(), "not an operator request: Bootstrap { split_points: [] }");
    }

    /// Leases and sessions expire strictly after their end (µs), and not a microsecond later.
    #[test]
    fn authority_expiry_is_exact_at_the_lease_end() {
        let (mut core, mut disk) = fresh();
        let session = register(&mut core, &mut disk, 1, 0);
        let renew = |core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, now| run(core, disk, Msg::RenewSession { server: ServerId(1), session }, now).0;
        assert!(matches!(renew(&mut core, &mut disk, 1_000_000), Msg::SessionRenewed { ok: true }), "at its end the lease still holds");
        assert!(matches!(renew(&mut core, &mut disk, 2_000_001), Msg::SessionRenewed { ok: false }), "a microsecond past it, expired");
        assert!(matches!(renew(&mut core, &mut disk, 2_000_002), Msg::SessionRenewed { ok: false }), "and it stays expired");
        assert!(matches!(run(&mut core, &mut disk, Msg::RenewSession { server: ServerId(2), session }, 0).0, Msg::SessionRenewed { ok: false }), "an unknown server");
        // The leader lease likewise.
        assert_eq!(leader(&mut core, &mut disk, 1, 0), Some(1));
        assert_eq!(leader(&mut core, &mut disk, 2, 1_000_000), None, "held until its end");
        assert_eq!(leader(&mut core, &mut disk, 2, 1_000_001), Some(2), "a new term right after");
    }

    #[test]
    fn authority_renewal_needs_the_current_session() {
        let (mut core, mut disk) = fresh();
        let old = register(&mut core, &mut disk, 1, 0);
        let (Msg::Registered { session: new }, events) = run(&mut core, &mut disk, Msg::RegisterServer { server: ServerId(1), incarnation: 10 }, 10) else { panic!() };
        assert!(new > old, "sessions only grow");
        assert!(matches!(&events[..], [Event::SessionExpired { server: ServerId(1), session }] if *session == old), "the restart ends the old session: {events:?}");
        assert!(matches!(disk[..], [LockRecord::Session { session: a, .. }, LockRecord::Session { session: b, .. }] if a == old && b == new), "each session is durable first");
        let renew = |core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, session| run(core, disk, Msg::RenewSession { server: ServerId(1), session }, 20).0;
        assert!(matches!(renew(&mut core, &mut disk, old), Msg::SessionRenewed { ok: false }), "the previous incarnation's session");
        assert!(matches!(renew(&mut core, &mut disk, new), Msg::SessionRenewed { ok: true }));
        let (Msg::State { sessions, .. }, _) = run(&mut core, &mut disk, Msg::GetState, 30) else { panic!() };
        assert_eq!(sessions.len(), 1);
        assert!(sessions[0].live && sessions[0].session == new);
        // A registration after an expiry: nothing to announce.
        let (_, events) = run(&mut core, &mut disk, Msg::GetState, 5_000_000);
        assert_eq!(events.len(), 1, "one expiry announced: {events:?}");
        let (_, events) = run(&mut core, &mut disk, Msg::RegisterServer { server: ServerId(1), incarnation: 5_000_001 }, 5_000_001);
        assert!(events.is_empty(), "{events:?}");
    }

    /// The issue-19 mutant: the holder check of the leader lease is what keeps a second
    /// candidate from being told it leads at the incumbent's term.
    #[test]
    fn authority_tells_a_second_candidate_who_holds_the_lease() {
        let (mut core, mut disk) = fresh();
        assert_eq!(leader(&mut core, &mut disk, 1, 0), Some(1));
        let (reply, _) = run(&mut core, &mut disk, Msg::AcquireLeader { candidate: 2 }, 10);
        assert!(matches!(reply, Msg::LeaderLease { epoch: None, holder: Some(1) }), "{reply:?}");
        let (reply, _) = run(&mut core, &mut disk, Msg::AcquireLeader { candidate: 1 }, 900_000);
        assert!(matches!(reply, Msg::LeaderLease { epoch: Some(1), holder: Some(1) }), "{reply:?}");
        // The renewal at 0.9 s holds the lease to 1.9 s.
        assert_eq!(leader(&mut core, &mut disk, 2, 1_500_000), None);
        // A request that waited for the writers' lock while someone else won gets the holder.
        let Action::Reply { msg, .. } = core.handle(&Msg::AcquireLeader { candidate: 3 }, 1_600_000, true) else { panic!() };
        assert!(matches!(msg, Msg::LeaderLease { epoch: None, holder: Some(1) }), "{msg:?}");
        assert_eq!(disk.len(), 1, "one term written");
    }

    /// A leader transfer, as a transcript: the operator asks; the holder's renewals are still
    /// granted but answered `StepDown`; its release ends the lease at once (announced as
    /// `leader_released`), so the standby's next try gets the next term; a release from a
    /// manager that does not hold the term changes nothing.
    #[test]
    fn authority_leader_transfer_renews_asks_to_step_down_then_releases() {
        let (mut core, mut disk) = fresh();
        let (reply, _) = run(&mut core, &mut disk, Msg::TransferLeader, 0);
        assert!(matches!(reply, Msg::TransferAsked { holder: None }), "nobody leads yet: {reply:?}");
        assert_eq!(leader(&mut core, &mut disk, 1, 10), Some(1));
        let (reply, _) = run(&mut core, &mut disk, Msg::TransferLeader, 20);
        assert!(matches!(reply, Msg::TransferAsked { holder: Some(1) }), "{reply:?}");
        let (reply, _) = run(&mut core, &mut disk, Msg::AcquireLeader { candidate: 1 }, 900_000);
        assert!(matches!(reply, Msg::StepDown { leader_epoch: 1 }), "{reply:?}");
        assert_eq!(leader(&mut core, &mut disk, 2, 1_500_000), None, "the renewal still held the lease");
        let (reply, events) = run(&mut core, &mut disk, Msg::ReleaseLeader { candidate: 2, leader_epoch: 1 }, 1_600_000);
        assert!(matches!(reply, Msg::LeaderLease { epoch: None, holder: Some(1) }) && events.is_empty(), "not the holder: {reply:?} {events:?}");
        let (reply, events) = run(&mut core, &mut disk, Msg::ReleaseLeader { candidate: 1, leader_epoch: 1 }, 1_700_000);
        assert!(matches!(reply, Msg::LeaderLease { epoch: None, holder: None }), "{reply:?}");
        assert!(matches!(&events[..], [Event::LeaderReleased { manager: 1, leader_epoch: 1 }]), "{events:?}");
        assert_eq!(leader(&mut core, &mut disk, 2, 1_700_001), Some(2), "the standby leads at once, long before the old lease's end at 2.9 s");
        let (reply, _) = run(&mut core, &mut disk, Msg::AcquireLeader { candidate: 2 }, 1_800_000);
        assert!(matches!(reply, Msg::LeaderLease { epoch: Some(2), .. }), "the new term is not asked to step down: {reply:?}");
    }

    #[test]
    fn authority_recovery_restores_terms_sessions_and_expiries() {
        let (mut core, mut disk) = fresh();
        assert_eq!(leader(&mut core, &mut disk, 1, 0), Some(1));
        assert_eq!(leader(&mut core, &mut disk, 2, 2_000_000), Some(2));
        let s1 = register(&mut core, &mut disk, 1, 2_000_000);
        let s2 = register(&mut core, &mut disk, 2, 2_000_000);
        run(&mut core, &mut disk, Msg::RenewSession { server: ServerId(2), session: s2 }, 2_900_000);
        run(&mut core, &mut disk, Msg::GetState, 3_500_000); // server-1 expires, durably
        let (mut revived, events) = AuthorityCore::recover(&knobs(), &disk, 10_000_000);
        assert!(matches!(events[0], Event::Recovered { records, .. } if records == disk.len()));
        assert!(events.iter().any(|e| matches!(e, Event::LeaderRecovered { manager: 2, leader_epoch: 2 })), "{events:?}");
        // The recovered term is held by its holder for a whole lease from the recovery.
        assert_eq!(leader(&mut revived, &mut disk, 1, 10_500_000), None);
        assert_eq!(leader(&mut revived, &mut disk, 2, 10_500_000), Some(2));
        let (Msg::State { sessions, .. }, _) = run(&mut revived, &mut disk, Msg::GetState, 10_500_000) else { panic!() };
        let live: Vec<(u64, bool)> = sessions.iter().map(|s| (s.session, s.live)).collect();
        assert_eq!(live, vec![(s1, false), (s2, true)]);
        assert_eq!(leader(&mut revived, &mut disk, 1, 12_000_000), Some(3), "terms continue from the last durable one");
        let next = register(&mut revived, &mut disk, 3, 10_600_000);
        assert!(next > s2, "session numbers continue");
        // An expiry record of an older session does not end the newer one.
        let records = vec![LockRecord::Session { server: ServerId(1), session: 4, incarnation: 0 }, LockRecord::SessionExpired { server: ServerId(1), session: 3 }];
        let (mut c, _) = AuthorityCore::recover(&knobs(), &records, 0);
        let (reply, _) = run(&mut c, &mut Vec::new(), Msg::RenewSession { server: ServerId(1), session: 4 }, 10);
        assert!(matches!(reply, Msg::SessionRenewed { ok: true }));
    }

    #[test]
    fn authority_refuses_an_invalid_batch_and_commits_operator_requests_at_term_zero() {
        let (mut core, mut disk) = fresh();
        let term = leader(&mut core, &mut disk, 1, 0).unwrap();
        let bad = vec![MapOp::Bootstrap { split_points: vec![b"b".to_vec(), b"a".to_vec()] }];
        let (Msg::CasResult { error: Some(e), .. }, events) = run(&mut core, &mut disk, Msg::CasMap { expected_version: 0, leader_epoch: term, candidate: 1, ops: bad }, 1) else { panic!() };
        assert_eq!(e, CasRefusal::Map(MapError::BadSplitPoints));
        assert_eq!(e.to_string(), "BadSplitPoints");
        assert!(matches!(&events[..], [Event::CasRefused { .. }]));
        assert_eq!(disk.len(), 1);
        let boot = vec![MapOp::Bootstrap { split_points: vec![b"m".to_vec()] }];
        run(&mut core, &mut disk, Msg::CasMap { expected_version: 0, leader_epoch: term, candidate: 1, ops: boot }, 2);
        let drain = vec![MapOp::Drain { server: ServerId(2), on: true }];
        let (Msg::CasResult { error: None, map }, events) = run(&mut core, &mut disk, Msg::Admin { ops: drain }, 3) else { panic!() };
        assert_eq!(map.version, 2);
        assert!(map.draining.contains(&ServerId(2)));
        assert!(matches!(events.last(), Some(Event::MapCommit { leader_epoch: 0, .. })));
        assert!(matches!(disk.last(), Some(LockRecord::Map { leader_epoch: 0, map }) if map.version == 2));
        let (Msg::Map { map }, _) = run(&mut core, &mut disk, Msg::GetMap, 4) else { panic!() };
        assert_eq!(map.version, 2);
        // An operator request the map refuses.
        let (Msg::CasResult { error: Some(e), .. }, events) = run(&mut core, &mut disk, Msg::Admin { ops: vec![MapOp::RequestMove { range: RangeId(9), to: ServerId(1) }] }, 5) else { panic!() };
        assert_eq!(e, CasRefusal::Map(MapError::UnknownRange(RangeId(9))));
        assert!(matches!(&events[..], [Event::CasRefused { leader_epoch: 0, .. }]));
        assert_eq!(core.map().version, 2);
    }

    /// A split's commit announces the split's outcome, then the map; mutation
    /// `retire-parents-first` commits two versions, the first with a hole.
    #[test]
    fn authority_split_commit_is_one_version_unless_mutated() {
        for mutation in [None, Some(Mutation::RetireParentsFirst)] {
            let mut core = AuthorityCore::recover(&Knobs { mutation, ..knobs() }, &[], 0).0;
            let mut disk = Vec::new();
            let term = leader(&mut core, &mut disk, 1, 0).unwrap();
            let cas = |core: &mut AuthorityCore, disk: &mut Vec<LockRecord>, ops: Vec<MapOp>| {
                let version = core.map().version;
                let (Msg::CasResult { error, map }, events) = run(core, disk, Msg::CasMap { expected_version: version, leader_epoch: term, candidate: 1, ops }, 10) else { panic!() };
                assert_eq!(error, None);
                (map, events)
            };
            cas(&mut core, &mut disk, vec![MapOp::Bootstrap { split_points: vec![b"x".to_vec()] }]);
            cas(&mut core, &mut disk, vec![MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]);
            cas(&mut core, &mut disk, vec![MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]);
            cas(&mut core, &mut disk, vec![MapOp::BeginSplit { range: RangeId(1), at: b"m".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] }]);
            cas(&mut core, &mut disk, vec![MapOp::PauseReshape { first: RangeId(1) }]);
            let before = disk.len();
            let (map, events) = cas(&mut core, &mut disk, vec![MapOp::CommitReshape { first: RangeId(1), sealed: vec![0], born_ms: 1 }]);
            let commits: Vec<u64> = events.iter().filter_map(|e| if let Event::MapCommit { map, .. } = e { Some(map.version) } else { None }).collect();
            match mutation {
                None => {
                    assert_eq!(commits, vec![6]);
                    assert_eq!(disk.len(), before + 1);
                    assert!(map.check_tiling().is_ok());
                }
                Some(_) => {
                    assert_eq!(commits, vec![6, 7], "two versions");
                    assert_eq!(disk.len(), before + 2);
                    let LockRecord::Map { map: half, .. } = &disk[before] else { panic!() };
                    assert!(half.check_tiling().unwrap_err().starts_with("gap"), "the first has a hole");
                    assert_eq!(map.version, 7);
                }
            }
            assert!(matches!(events.iter().find(|e| !matches!(e, Event::MapCommit { .. })), Some(Event::Reshaped { committed: true, .. })), "{events:?}");
        }
    }

    /// Every request that may write asks for the writers' lock first (two compare-and-sets
    /// interleaved around one's sync would both pass against the same version); reads and
    /// renewals do not.
    #[test]
    fn authority_asks_for_the_writers_lock_before_anything_durable() {
        let (mut core, mut disk) = fresh();
        let writes = [
            Msg::AcquireLeader { candidate: 1 },
            Msg::RegisterServer { server: ServerId(1), incarnation: 1 },
            Msg::GetState,
            Msg::CasMap { expected_version: 0, leader_epoch: 1, candidate: 1, ops: vec![] },
            Msg::Admin { ops: vec![] },
        ];
        for msg in &writes {
            assert!(matches!(core.handle(msg, 0, false), Action::NeedLock), "{msg:?}");
        }
        assert!(matches!(core.handle(&Msg::GetMap, 0, false), Action::Reply { .. }));
        assert!(matches!(core.handle(&Msg::RenewSession { server: ServerId(1), session: 1 }, 0, false), Action::Reply { .. }));
        // A held lease is renewed, or refused, without the lock.
        leader(&mut core, &mut disk, 1, 0);
        assert!(matches!(core.handle(&Msg::AcquireLeader { candidate: 1 }, 10, false), Action::Reply { .. }));
        assert!(matches!(core.handle(&Msg::AcquireLeader { candidate: 2 }, 10, false), Action::Reply { .. }));
    }

    /// Mutation `authority-logs-refused-cas`: the refused version reaches the disk, not the map.
    #[test]
    fn authority_mutation_logs_a_refused_write() {
        let mut core = AuthorityCore::recover(&Knobs { mutation: Some(Mutation::AuthorityLogsRefusedCas), ..knobs() }, &[], 0).0;
        let mut disk = Vec::new();
        let term = leader(&mut core, &mut disk, 1, 0).unwrap();
        let ops = vec![MapOp::Bootstrap { split_points: vec![] }];
        let (Msg::CasResult { error: Some(_), map }, _) = run(&mut core, &mut disk, Msg::CasMap { expected_version: 7, leader_epoch: term, candidate: 1, ops }, 10) else { panic!() };
        assert_eq!(map.version, 0, "nothing changes in memory");
        assert!(matches!(disk.last(), Some(LockRecord::Map { map, .. }) if map.version == 1), "but the refused version is durable");
    }
}
