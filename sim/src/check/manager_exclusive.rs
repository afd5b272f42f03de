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
