//! `manager_exclusive` (always): every map mutation carries the epoch of the leader term current
//! when it was committed, and leader terms only grow. Read from the authority's `leader` and
//! `map_commit` events. A deposed leader's write would commit with an older epoch.

use super::secs;
use crate::events::Event;

/// Check every commit against the latest leader term. Errors: the first stale commit.
pub fn check(events: &[Event]) -> Result<(), String> {
    let mut current: Option<(u64, u64, u64)> = None; // (epoch, manager, time)
    for ev in events {
        match ev.kind.as_str() {
            "leader" => {
                let epoch = ev.u("leader_epoch");
                if let Some((prev, m, t)) = current {
                    if epoch <= prev {
                        return Err(format!("leader term {epoch} (manager-{}) at {} after term {prev} (manager-{m}) at {}", ev.u("manager"), secs(ev.t_us), secs(t)));
                    }
                }
                current = Some((epoch, ev.u("manager"), ev.t_us));
            }
            "leader_recovered" => {
                // The authority restarted: its durable latest term may be one that was granted
                // but never announced (the answer was lost); it must not go backwards.
                let epoch = ev.u("leader_epoch");
                match current {
                    Some((prev, m, t)) if epoch < prev => {
                        return Err(format!("the authority recovered leader term {epoch} at {} after term {prev} (manager-{m}) at {}", secs(ev.t_us), secs(t)));
                    }
                    Some((prev, _, _)) if epoch == prev => {}
                    _ => current = Some((epoch, ev.u("manager"), ev.t_us)),
                }
            }
            "map_commit" if ev.s("by") == "operator" => {} // requests only; the authority refuses anything else
            "map_commit" => {
                let epoch = ev.u("leader_epoch");
                match current {
                    Some((e, _, _)) if e == epoch => {}
                    Some((e, m, t)) => {
                        return Err(format!("map version {} committed at {} with leader epoch {epoch}, but the current term is {e} (manager-{m}, since {})", ev.u("version"), secs(ev.t_us), secs(t)));
                    }
                    None => return Err(format!("map version {} committed at {} before any leader was elected", ev.u("version"), secs(ev.t_us))),
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Val;

    fn ev(kind: &str, epoch: u64) -> Event {
        Event { t_us: 0, kind: kind.into(), fields: vec![("leader_epoch", Val::U(epoch)), ("manager", Val::U(1)), ("version", Val::U(1))] }
    }

    /// Found by seed 741 of swarm.json: with torn writes a term can be durable at the authority
    /// without its `leader` event; after recovery its holder commits legitimately.
    #[test]
    fn manager_exclusive_accepts_a_term_recovered_by_the_authority() {
        let recovered = Event { t_us: 0, kind: "leader_recovered".into(), fields: vec![("leader_epoch", Val::U(6)), ("manager", Val::U(1))] };
        check(&[ev("leader", 5), recovered.clone(), ev("map_commit", 6)]).unwrap();
        let backwards = Event { fields: vec![("leader_epoch", Val::U(4)), ("manager", Val::U(1))], ..recovered };
        assert!(check(&[ev("leader", 5), backwards]).unwrap_err().contains("recovered leader term 4"));
    }

    #[test]
    fn manager_exclusive_flags_a_commit_from_a_deposed_leader() {
        check(&[ev("leader", 1), ev("map_commit", 1), ev("leader", 2), ev("map_commit", 2)]).unwrap();
        assert!(check(&[ev("leader", 1), ev("leader", 2), ev("map_commit", 1)]).unwrap_err().contains("current term is 2"));
    }
}
