//! The unit tests of `partmap_sim::report::questions::managers` (formerly in `sim/src/report/questions/managers.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::questions::managers::*;
    use partmap_sim::events::{Event, Sys};
    use partmap_sim::events::What;
    use partmap::ids::ServerId;
    use partmap::map::PartitionMap;

    fn at(ms: u64, e: Sys) -> Event {
        Event { t_us: ms * 1000, what: What::Sys(e) }
    }

    fn commit(ms: u64, term: u64, manager: u32) -> Event {
        at(ms, Sys::MapCommit { leader_epoch: term, manager, map: PartitionMap::default().into() })
    }

    #[test]
    fn questions_managers_measures_what_a_deposed_term_did_after_the_next_grant() {
        let h = vec![
            at(0, Sys::Leader { manager: 1, leader_epoch: 1 }),
            commit(10, 1, 1),
            commit(900, 1, 1),
            at(1000, Sys::Leader { manager: 2, leader_epoch: 2 }),
            commit(1010, 2, 2),
            at(1200, Sys::CasRefused { leader_epoch: 1, expected_version: 3, version: 4, reason: "stale leader epoch".into() }),
            at(1450, Sys::StaleCommand { server: ServerId(2), command: "pause", leader_epoch: 1, seen: 2 }),
            at(3000, Sys::Leader { manager: 1, leader_epoch: 3 }),
        ];
        let m = measure(&h);
        assert_eq!(m.handovers, vec![
            Handover { term: 1, next_granted_us: 1_000_000, commit_overlap_ms: None, in_flight_ms: Some(450.0), refused: 2 },
            Handover { term: 2, next_granted_us: 3_000_000, commit_overlap_ms: None, in_flight_ms: None, refused: 0 },
        ]);
        assert_eq!(m.shared_term_ms, 0.0);
    }

    #[test]
    fn questions_managers_sees_two_managers_committing_under_one_term() {
        let h = vec![
            at(0, Sys::Leader { manager: 1, leader_epoch: 1 }),
            commit(10, 1, 1),
            commit(200, 1, 2),
            commit(500, 1, 1),
            commit(800, 1, 2),
            at(1000, Sys::Leader { manager: 2, leader_epoch: 2 }),
            commit(1100, 1, 1),
        ];
        let m = measure(&h);
        assert_eq!(m.shared_term_ms, 600.0, "manager 1 committed under term 1 from 10 to 1100 ms, manager 2 from 200 to 800");
        assert_eq!(m.handovers[0].commit_overlap_ms, Some(100.0), "term 1 wrote 100 ms into term 2");
    }
}
