//! The coordination authority (`lock-1`): the manager leader lease, server session leases, and
//! the partition map table with compare-and-set. Linearizable because it is one process that
//! applies one request at a time for anything durable; durable on its [`Disk`].
//!
//! Leases are not written to disk (renewals would cost an fsync each). After a restart the
//! authority knows which sessions and which leader existed but not when they last renewed, so it
//! treats every one of them as renewed at recovery time: nobody's lease can expire earlier than
//! its holder believes. Idea: Chubby's grace period after master fail-over (Burrows, OSDI 2006).

use crate::config::{Knobs, Mutation};
use crate::event::{emit, Event, Restored};
use crate::ids::ServerId;
use crate::map::PartitionMap;
use crate::msg::{Msg, SessionView};
use crate::seam::{now_us, Disk, Rpc};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// A durable record of the authority.
#[derive(Clone, Debug)]
pub enum LockRecord {
    /// The whole map after a committed mutation (the last one wins on recovery), with the
    /// leader term that committed it (0: an operator's request).
    Map { map: PartitionMap, leader_epoch: u64 },
    /// A leader term was granted.
    LeaderTerm { candidate: u32, epoch: u64 },
    /// A server session was started.
    Session { server: ServerId, session: u64 },
    /// A server session expired. Durable before anyone learns of it, so that a restarted
    /// authority does not bring the session back after its ranges went to other servers.
    SessionExpired { server: ServerId, session: u64 },
}

#[derive(Clone, Copy, Debug)]
struct Lease {
    holder: u32,
    epoch: u64,
    expires_us: u64,
}

#[derive(Clone, Copy, Debug)]
struct Session {
    session: u64,
    expires_us: u64,
    live: bool,
}

/// The authority's state in memory; rebuilt from the disk on start.
struct Authority {
    knobs: Knobs,
    map: PartitionMap,
    /// The leader term that committed `map` (0: operator, or none yet).
    map_leader_epoch: u64,
    leader: Option<Lease>,
    last_leader_epoch: u64,
    sessions: BTreeMap<ServerId, Session>,
    last_session: u64,
    /// Session expiries not yet on disk.
    unpersisted: Vec<LockRecord>,
}

impl Authority {
    fn recover(knobs: Knobs, records: &[LockRecord], now: u64) -> Self {
        let grace = now + knobs.lease_ms * 1000;
        let mut a = Authority {
            knobs,
            map: PartitionMap::default(),
            map_leader_epoch: 0,
            leader: None,
            last_leader_epoch: 0,
            sessions: BTreeMap::new(),
            last_session: 0,
            unpersisted: Vec::new(),
        };
        for rec in records {
            match rec {
                LockRecord::Map { map, leader_epoch } => {
                    a.map = map.clone();
                    a.map_leader_epoch = *leader_epoch;
                }
                LockRecord::LeaderTerm { candidate, epoch } => {
                    a.last_leader_epoch = *epoch;
                    a.leader = Some(Lease { holder: *candidate, epoch: *epoch, expires_us: grace });
                }
                LockRecord::Session { server, session } => {
                    a.last_session = a.last_session.max(*session);
                    a.sessions.insert(*server, Session { session: *session, expires_us: grace, live: true });
                }
                LockRecord::SessionExpired { server, session } => {
                    if let Some(s) = a.sessions.get_mut(server).filter(|s| s.session == *session) {
                        s.live = false;
                    }
                }
            }
        }
        a
    }

    /// Expire every lease whose time has passed. Expiry is sticky: a session never comes back.
    /// The expiries go to `unpersisted`, to be made durable before the manager learns of them.
    fn expire(&mut self, now: u64) {
        for (server, s) in self.sessions.iter_mut() {
            if s.live && now > s.expires_us {
                s.live = false;
                self.unpersisted.push(LockRecord::SessionExpired { server: *server, session: s.session });
            }
        }
        if self.leader.is_some_and(|l| now > l.expires_us) {
            self.leader = None;
        }
    }

    fn session_views(&self) -> Vec<SessionView> {
        self.sessions.iter().map(|(server, s)| SessionView { server: *server, session: s.session, live: s.live }).collect()
    }
}

/// Run the authority node forever. `disk` survives restarts of the node (the harness owns it).
pub async fn run(knobs: Knobs, disk: Disk<LockRecord>) {
    let records = disk.read_all();
    emit(Event::Recovered { node: "lock-1", records: records.len() });
    for (index, rec) in records.iter().enumerate() {
        emit(Event::Restored { node: "lock-1", index, record: restored(rec) });
    }
    let state = Rc::new(RefCell::new(Authority::recover(knobs.clone(), &records, now_us())));
    // A leader term, or a map version, can be durable without ever having been announced
    // (torn writes: the record reached the disk, the answer never left). Found by seed 741 of
    // swarm.json (a term) and issue 12 (a split's commit).
    if let Some(l) = state.borrow().leader {
        emit(Event::LeaderRecovered { manager: l.holder, leader_epoch: l.epoch });
    }
    {
        let a = state.borrow();
        emit(Event::MapRestored { leader_epoch: a.map_leader_epoch, map: a.map.clone() });
    }
    // Serializes everything that writes the disk, so a reply never reveals undurable state.
    let durable = Rc::new(tokio::sync::Mutex::new(()));
    let rpc = Rpc::bind(crate::config::lock_addr(), &knobs).await;
    rpc.serve(move |msg, _from| {
        let (state, disk, durable) = (state.clone(), disk.clone(), durable.clone());
        async move { handle(&state, &disk, &durable, msg).await }
    });
    std::future::pending::<()>().await;
}

async fn handle(
    state: &RefCell<Authority>,
    disk: &Disk<LockRecord>,
    durable: &tokio::sync::Mutex<()>,
    msg: Msg,
) -> Option<Msg> {
    let lease_us = state.borrow().knobs.lease_ms * 1000;
    match msg {
        Msg::RegisterServer { server } => {
            let _g = durable.lock().await;
            let session = {
                let mut a = state.borrow_mut();
                a.last_session += 1;
                a.last_session
            };
            disk.append(LockRecord::Session { server, session });
            disk.sync().await;
            let mut a = state.borrow_mut();
            let old = a.sessions.insert(server, Session { session, expires_us: now_us() + lease_us, live: true });
            if let Some(old) = old.filter(|o| o.live) {
                // The server restarted: its previous incarnation's memory, and authority, are gone.
                emit(Event::SessionExpired { server, session: old.session });
            }
            Some(Msg::Registered { session })
        }
        Msg::RenewSession { server, session } => {
            let now = now_us();
            let mut a = state.borrow_mut();
            a.expire(now);
            let ok = match a.sessions.get_mut(&server) {
                Some(s) if s.session == session && s.live => {
                    s.expires_us = now + lease_us;
                    true
                }
                _ => false,
            };
            Some(Msg::SessionRenewed { ok })
        }
        Msg::AcquireLeader { candidate } => {
            {
                let now = now_us();
                let mut a = state.borrow_mut();
                a.expire(now);
                match a.leader {
                    Some(l) if l.holder == candidate => {
                        a.leader = Some(Lease { expires_us: now + lease_us, ..l });
                        return Some(Msg::LeaderLease { epoch: Some(l.epoch), holder: Some(candidate) });
                    }
                    Some(l) => return Some(Msg::LeaderLease { epoch: None, holder: Some(l.holder) }),
                    None => {}
                }
            }
            let _g = durable.lock().await;
            let epoch = {
                let mut a = state.borrow_mut();
                a.expire(now_us());
                if let Some(l) = a.leader {
                    // Someone else won while we waited for the disk.
                    return Some(Msg::LeaderLease { epoch: None, holder: Some(l.holder) });
                }
                a.last_leader_epoch += 1;
                a.last_leader_epoch
            };
            disk.append(LockRecord::LeaderTerm { candidate, epoch });
            disk.sync().await;
            state.borrow_mut().leader = Some(Lease { holder: candidate, epoch, expires_us: now_us() + lease_us });
            emit(Event::Leader { manager: candidate, leader_epoch: epoch });
            Some(Msg::LeaderLease { epoch: Some(epoch), holder: Some(candidate) })
        }
        Msg::GetMap => Some(Msg::Map { map: state.borrow().map.clone() }),
        Msg::GetState => {
            // The manager acts on expiries it sees here (it gives the ranges away), so they
            // must survive a restart of the authority first. Other requests may expire more
            // sessions while we wait for the disk: repeat until the reply can be built with
            // nothing unsaved, and build it with no await in between.
            let _g = durable.lock().await;
            loop {
                let expired = {
                    let mut a = state.borrow_mut();
                    a.expire(now_us());
                    std::mem::take(&mut a.unpersisted)
                };
                if expired.is_empty() {
                    let a = state.borrow();
                    return Some(Msg::State { map: a.map.clone(), sessions: a.session_views() });
                }
                for rec in &expired {
                    disk.append(rec.clone());
                }
                disk.sync().await;
                for rec in expired {
                    if let LockRecord::SessionExpired { server, session } = rec {
                        emit(Event::LeaseExpired { server, session });
                    }
                }
            }
        }
        Msg::CasMap { expected_version, leader_epoch, ops } => {
            let _g = durable.lock().await;
            let next = {
                let mut a = state.borrow_mut();
                a.expire(now_us());
                let current = a.leader.map(|l| l.epoch);
                let refusal = if current != Some(leader_epoch) && !a.knobs.mutated(Mutation::AuthoritySkipsLeaderEpoch) {
                    Some(format!("stale leader epoch {leader_epoch} (current {current:?})"))
                } else if a.map.version != expected_version {
                    Some(format!("version {} expected, map is at {}", expected_version, a.map.version))
                } else {
                    None
                };
                let mut next = a.map.clone();
                let refusal = refusal.or_else(|| next.apply_batch(&ops).err().map(|e| e.to_string()));
                if let Some(error) = refusal {
                    emit(Event::CasRefused { leader_epoch, expected_version, version: a.map.version, reason: error.clone() });
                    let map = a.map.clone();
                    drop(a);
                    if state.borrow().knobs.mutated(Mutation::AuthorityLogsRefusedCas) {
                        // The mutation: the refused batch is written ahead of its validation
                        // and never taken back (nothing in memory changes, nothing announces it).
                        let mut logged = map.clone();
                        let _ = logged.apply_batch(&ops);
                        disk.append(LockRecord::Map { map: logged, leader_epoch });
                        disk.sync().await;
                    }
                    return Some(Msg::CasResult { map, error: Some(error) });
                }
                next
            };
            if let Some(half) = retire_parents_first(state, &ops) {
                commit_map(state, disk, half, &[], leader_epoch).await;
                let mut next = next;
                next.version += 1;
                return Some(commit_map(state, disk, next, &ops, leader_epoch).await);
            }
            Some(commit_map(state, disk, next, &ops, leader_epoch).await)
        }
        Msg::Admin { ops } => {
            let _g = durable.lock().await;
            let next = {
                let a = state.borrow();
                let mut next = a.map.clone();
                let refusal = match ops.iter().find(|op| !op.is_operator_request()) {
                    Some(op) => Some(format!("not an operator request: {op:?}")),
                    None => next.apply_batch(&ops).err().map(|e| e.to_string()),
                };
                if let Some(error) = refusal {
                    emit(Event::CasRefused { leader_epoch: 0, expected_version: a.map.version, version: a.map.version, reason: error.clone() });
                    return Some(Msg::CasResult { map: a.map.clone(), error: Some(error) });
                }
                next
            };
            Some(commit_map(state, disk, next, &ops, 0).await)
        }
        other => panic!("lock-1: unexpected message {other:?}"),
    }
}

/// Mutation `retire-parents-first`: for a split or merge commit, the map with only its parents
/// retired (and the version bumped), committed before the children are published.
fn retire_parents_first(state: &RefCell<Authority>, ops: &[crate::map::MapOp]) -> Option<PartitionMap> {
    let a = state.borrow();
    let [crate::map::MapOp::CommitReshape { first, .. }] = ops else { return None };
    let r = a.map.reshapes.get(first).filter(|_| a.knobs.mutated(Mutation::RetireParentsFirst))?;
    let mut half = a.map.clone();
    for (p, _) in &r.parents {
        half.rows.get_mut(p)?.state = crate::map::RangeState::Retired;
    }
    half.version += 1;
    Some(half)
}

/// Make `next` (the map after `ops`) durable, then current, then report it: the answer to a
/// successful compare-and-set (`leader_epoch` 0 for an operator's request).
async fn commit_map(state: &RefCell<Authority>, disk: &Disk<LockRecord>, next: PartitionMap, ops: &[crate::map::MapOp], leader_epoch: u64) -> Msg {
    disk.append(LockRecord::Map { map: next.clone(), leader_epoch });
    disk.sync().await;
    let before = {
        let mut a = state.borrow_mut();
        a.map_leader_epoch = leader_epoch;
        std::mem::replace(&mut a.map, next.clone())
    };
    for ev in crate::event::reshape_outcomes(&before, ops) {
        emit(ev);
    }
    emit(Event::MapCommit { leader_epoch, map: next.clone() });
    Msg::CasResult { map: next, error: None }
}

/// What a durable record restores, for its recovery event.
fn restored(rec: &LockRecord) -> Restored {
    match rec {
        LockRecord::Map { map, leader_epoch } => Restored::Map { version: map.version, leader_epoch: *leader_epoch, rows: map.rows.len() },
        LockRecord::LeaderTerm { candidate, epoch } => Restored::LeaderTerm { candidate: *candidate, epoch: *epoch },
        LockRecord::Session { server, session } => Restored::Session { server: *server, session: *session },
        LockRecord::SessionExpired { server, session } => Restored::SessionExpired { server: *server, session: *session },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::sleep_ms;

    fn knobs() -> Knobs {
        Knobs { lease_ms: 1000, disk_sync_ms: 1, ..Knobs::default() }
    }

    /// Found by seed 41 of the default scenario: the authority expired server-1's session (the
    /// manager gave its ranges away), then crashed before the expiry was on disk; on restart it
    /// gave the session a fresh lease, server-1 renewed, and served its old ranges again.
    #[test]
    fn lock_restart_does_not_revive_an_expired_session() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
        rt.block_on(async {
            let disk: Disk<LockRecord> = Disk::new(1);
            let state = RefCell::new(Authority::recover(knobs(), &[], now_us()));
            let durable = tokio::sync::Mutex::new(());
            let Some(Msg::Registered { session }) = handle(&state, &disk, &durable, Msg::RegisterServer { server: ServerId(1) }).await else { panic!() };
            sleep_ms(1500).await; // past the lease: the session expires
            let Some(Msg::State { sessions, .. }) = handle(&state, &disk, &durable, Msg::GetState).await else { panic!() };
            assert!(!sessions[0].live, "expired at the authority");
            disk.crash();
            let revived = RefCell::new(Authority::recover(knobs(), &disk.read_all(), now_us()));
            let renew = Msg::RenewSession { server: ServerId(1), session };
            let Some(Msg::SessionRenewed { ok }) = handle(&revived, &disk, &durable, renew).await else { panic!() };
            assert!(!ok, "a restarted authority must not bring an expired session back");
        });
    }

    #[test]
    fn lock_cas_refuses_a_stale_leader_epoch() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
        rt.block_on(async {
            let disk: Disk<LockRecord> = Disk::new(1);
            let state = RefCell::new(Authority::recover(knobs(), &[], now_us()));
            let durable = tokio::sync::Mutex::new(());
            let Some(Msg::LeaderLease { epoch: Some(first), .. }) = handle(&state, &disk, &durable, Msg::AcquireLeader { candidate: 1 }).await else { panic!() };
            sleep_ms(1500).await;
            let Some(Msg::LeaderLease { epoch: Some(second), .. }) = handle(&state, &disk, &durable, Msg::AcquireLeader { candidate: 2 }).await else { panic!() };
            assert!(second > first);
            let ops = vec![crate::map::MapOp::Bootstrap { split_points: vec![] }];
            let stale = Msg::CasMap { expected_version: 0, leader_epoch: first, ops: ops.clone() };
            let Some(Msg::CasResult { error: Some(e), map }) = handle(&state, &disk, &durable, stale).await else { panic!() };
            assert!(e.contains("stale leader"), "{e}");
            assert_eq!(map.version, 0);
            let current = Msg::CasMap { expected_version: 0, leader_epoch: second, ops };
            let Some(Msg::CasResult { error: None, map }) = handle(&state, &disk, &durable, current).await else { panic!() };
            assert_eq!(map.version, 1);
        });
    }
}
