//! The unit tests of `partmap_sim::measure::goals` (formerly in `sim/src/measure/goals.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::measure::goals::*;
    use partmap_sim::events::{Event, What};
    use partmap_sim::fault::Fault;

    #[test]
    fn goals_registry_names_are_unique_and_cover_every_source() {
        let names: Vec<&str> = registry().iter().map(|(n, _)| *n).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a goal name is listed twice");
        assert!(is_goal("admit_near_lease_end") && is_goal("copy_diverged") && is_goal("crash_owner"));
        assert!(!is_goal("no_such_goal"));
    }

    #[test]
    fn goals_leader_restart_within_lease_is_read_off_the_history() {
        let ev = |t_us: u64, what: What| Event { t_us, what };
        let crash = || Box::new(Fault::Crash("manager-2".into()));
        let events = vec![
            ev(1, What::Sys(partmap::event::Event::Leader { manager: 2, leader_epoch: 3 })),
            ev(10, What::Fault { fault: crash(), duration_ms: 100, crash: None }),
            ev(110_010, What::FaultEnd { fault: crash() }),
        ];
        let got = reached(&events, &[], 1000);
        assert_eq!(got.get("leader_restarted_within_lease").map(|r| r.count), Some(1));
        let late = reached(&events, &[], 100);
        assert_eq!(late.get("leader_restarted_within_lease"), None, "restarted after the lease ran out");
    }
}
