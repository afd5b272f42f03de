//! `manager_exclusive` (always): every map mutation carries the epoch of the leader term current
//! when it was committed, is made by that term's holder, and leader terms only grow. A deposed
//! leader's write would commit with an older epoch; a second manager told it leads at the
//! incumbent's term (issue 19) commits at the right epoch but under its own name. Two views
//! (issue 12):
//! - **announced**: the authority's `leader`, `leader_recovered` and `map_commit` events;
//! - **durable**: the authority's log, replayed after the run: each `Map` record written by a
//!   leader carries the term of the latest `LeaderTerm` record before it (the authority writes
//!   both under one lock, so the log order is the commit order), whether or not it was announced.

use super::{secs, Violation};
use crate::events::{Event, Sys, What};
use partmap::lock::LockRecord;

/// The announced view. Errors: the first stale commit or backward term.
pub fn check(events: &[Event]) -> Result<(), Violation> {
    let mut current: Option<(u64, u32, u64)> = None; // (epoch, manager, time)
    for ev in events {
        let What::Sys(sys) = &ev.what else { continue };
        match sys {
            Sys::Leader { manager, leader_epoch } => {
                if let Some((prev, m, t)) = current {
                    if *leader_epoch <= prev {
                        return Err(Violation::new(format!("leader term {leader_epoch} (manager-{manager}) at {} after term {prev} (manager-{m}) at {}", secs(ev.t_us), secs(t))).at(ev.t_us).at(t));
                    }
                }
                current = Some((*leader_epoch, *manager, ev.t_us));
            }
            Sys::LeaderRecovered { manager, leader_epoch } => {
                // The authority restarted: its durable latest term may be one that was granted
                // but never announced (the answer was lost); it must not go backwards.
                match current {
                    Some((prev, m, t)) if *leader_epoch < prev => {
                        return Err(Violation::new(format!("the authority recovered leader term {leader_epoch} at {} after term {prev} (manager-{m}) at {}", secs(ev.t_us), secs(t))).at(ev.t_us).at(t));
                    }
                    Some((prev, _, _)) if *leader_epoch == prev => {}
                    _ => current = Some((*leader_epoch, *manager, ev.t_us)),
                }
            }
            Sys::MapCommit { leader_epoch: 0, .. } => {} // operator requests; the authority refuses anything else
            Sys::MapCommit { leader_epoch, manager, map } => match current {
                Some((e, m, t)) if e == *leader_epoch && m != *manager => {
                    return Err(Violation::new(format!("map version {} committed at {} by manager-{manager} at leader epoch {e}, but term {e} is manager-{m}'s (since {}): two leaders at one term", map.version, secs(ev.t_us), secs(t))).at(ev.t_us).at(t).version(map.version));
                }
                Some((e, _, _)) if e == *leader_epoch => {}
                Some((e, m, t)) => {
                    return Err(Violation::new(format!("map version {} committed at {} with leader epoch {leader_epoch}, but the current term is {e} (manager-{m}, since {})", map.version, secs(ev.t_us), secs(t))).at(ev.t_us).at(t).version(map.version));
                }
                None => return Err(Violation::new(format!("map version {} committed at {} before any leader was elected", map.version, secs(ev.t_us))).at(ev.t_us).version(map.version)),
            },
            _ => {}
        }
    }
    Ok(())
}

/// The durable view over the authority's log `durable`. Errors: the first map record whose
/// term is not the latest granted before it, or a term that does not grow.
pub fn check_durable(durable: &[LockRecord]) -> Result<(), Violation> {
    let mut current: Option<(u64, u32)> = None;
    for (i, rec) in durable.iter().enumerate() {
        match rec {
            LockRecord::LeaderTerm { candidate, epoch } => {
                if let Some((prev, m)) = current.filter(|(prev, _)| epoch <= prev) {
                    return Err(Violation::new(format!("durable record {i} of lock-1 grants leader term {epoch} (manager-{candidate}) after term {prev} (manager-{m})")));
                }
                current = Some((*epoch, *candidate));
            }
            LockRecord::Map { leader_epoch: 0, .. } => {}
            LockRecord::Map { map, leader_epoch } => match current {
                Some((e, _)) if e == *leader_epoch => {}
                Some((e, m)) => {
                    return Err(Violation::new(format!("durable record {i} of lock-1 holds map version {} written with leader epoch {leader_epoch}, but the latest term granted before it is {e} (manager-{m})", map.version)).version(map.version));
                }
                None => return Err(Violation::new(format!("durable record {i} of lock-1 holds map version {} written before any leader term", map.version)).version(map.version)),
            },
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::{at, commit, commit_by, map_of};

    fn leader(epoch: u64) -> Event {
        at(0, Sys::Leader { manager: 1, leader_epoch: epoch })
    }

    /// Found by seed 741 of swarm.json: with torn writes a term can be durable at the authority
    /// without its `leader` event; after recovery its holder commits legitimately.
    #[test]
    fn manager_exclusive_accepts_a_term_recovered_by_the_authority() {
        let m = map_of(1, &[(1, "", None, 1, 1, "active")]);
        let recovered = at(0, Sys::LeaderRecovered { manager: 1, leader_epoch: 6 });
        check(&[leader(5), recovered, commit(6, 1, m)]).unwrap();
        let backwards = at(0, Sys::LeaderRecovered { manager: 1, leader_epoch: 4 });
        assert!(check(&[leader(5), backwards]).unwrap_err().contains("recovered leader term 4"));
    }

    #[test]
    fn manager_exclusive_flags_a_commit_from_a_deposed_leader() {
        let m = map_of(1, &[(1, "", None, 1, 1, "active")]);
        check(&[leader(1), commit(1, 1, m.clone()), leader(2), commit(2, 1, m.clone())]).unwrap();
        assert!(check(&[leader(1), leader(2), commit(1, 1, m)]).unwrap_err().contains("current term is 2"));
    }

    /// Issue 19: a second manager told it leads at the incumbent's term commits at the right
    /// epoch, under its own name.
    #[test]
    fn manager_exclusive_flags_two_leaders_at_one_term() {
        let m = map_of(1, &[(1, "", None, 1, 1, "active")]);
        check(&[leader(1), commit_by(1, 1, 0, m.clone()), commit_by(0, 0, 0, m.clone())]).unwrap();
        let err = check(&[leader(1), commit_by(1, 1, 0, m.clone()), commit_by(1, 2, 0, m)]).unwrap_err();
        assert!(err.contains("by manager-2 at leader epoch 1, but term 1 is manager-1's"), "{err}");
    }

    /// Issue 12: a stale write that is durable but never announced.
    #[test]
    fn manager_exclusive_flags_a_durable_map_of_an_old_term() {
        let m = map_of(1, &[(1, "", None, 1, 1, "active")]);
        let term = |epoch| LockRecord::LeaderTerm { candidate: 1, epoch };
        check_durable(&[term(1), LockRecord::Map { map: m.clone().into(), leader_epoch: 1 }, term(2), LockRecord::Map { map: m.clone().into(), leader_epoch: 0 }]).unwrap();
        let err = check_durable(&[term(1), term(2), LockRecord::Map { map: m.into(), leader_epoch: 1 }]).unwrap_err();
        assert!(err.contains("durable record 2"), "{err}");
    }
}
