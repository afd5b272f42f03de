//! The unit tests of `partmap_sim::check::manager_exclusive` (formerly in `sim/src/check/manager_exclusive.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::manager_exclusive::*;
    use partmap_sim::events::{Event, Sys};
    use partmap::lock::LockRecord;
    use crate::unit::check::testkit::{at, commit, commit_by, map_of};

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
