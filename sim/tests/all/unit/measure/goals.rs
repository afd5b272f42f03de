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

    /// A pause that missed its range at server-3, which activated the range at a newer epoch
    /// 400 ms later: a near miss of 400 ms whose lever is the leader's next pause to server-3;
    /// the `command_missed` goal is reached. A reopen at the same or an older epoch is none.
    #[test]
    fn near_miss_missed_command_before_reopen_names_its_lever() {
        use partmap::event::Event as Sys;
        use partmap::ids::{Epoch, RangeId, ServerId};
        let ev = |t_us: u64, what: Sys| Event { t_us, what: What::Sys(what) };
        let missed = ev(1_000_000, Sys::CommandMissed { server: ServerId(3), range: RangeId(6), epoch: Epoch(18), command: "pause" });
        let reopen = |epoch| ev(1_400_000, Sys::Activated { server: ServerId(3), range: RangeId(6), epoch: Epoch(epoch), records: 4, stream: 4 });
        let got = near_misses(&[missed.clone(), reopen(24)]);
        let m = got.get("missed_command_before_reopen").expect("a near miss");
        assert_eq!((m.gap_us, m.first_us, m.second_us), (400_000, 1_000_000, 1_400_000));
        assert_eq!(m.lever, Some(Lever { from: "@leader".into(), to: "server-3".into(), kind: "pause".into() }));
        assert!(!near_misses(&[missed.clone(), reopen(18)]).contains_key("missed_command_before_reopen"), "same epoch: not stale");
        assert_eq!(reached(&[missed], &[], 1000).get("command_missed").map(|r| r.count), Some(1));
    }

    /// A corrupt window on store-1 -> server-2 from 2 s to 2.5 s and pre-copy rounds at 1.9 s
    /// (server-2) and 2.45 s (server-1): the nearest round at the window's node is 100 ms before
    /// it, so the near miss is 100 ms with a cover naming server-2; another node's round does
    /// not count.
    #[test]
    fn near_miss_corrupt_missed_copy_covers_the_nodes_round() {
        use partmap::event::Event as Sys;
        use partmap::ids::{Epoch, RangeId, ServerId};
        let round = |t_us: u64, server: u32| Event { t_us, what: What::Sys(Sys::Precopied { server: ServerId(server), range: RangeId(4), epoch: Epoch(7), round: 1, bytes: 64 }) };
        let corrupt = Event { t_us: 2_000_000, what: What::Fault { fault: Box::new(Fault::Corrupt("store-1".into(), "server-2".into())), duration_ms: 500, crash: None } };
        let got = near_misses(&[round(1_900_000, 2), corrupt.clone(), round(2_450_000, 1)]);
        let m = got.get("corrupt_missed_copy").expect("a near miss");
        assert_eq!(m.gap_us, 100_000);
        assert_eq!(m.cover, Some(Cover { fault_at_ms: 2000, step_ms: 1900, node: "server-2".into() }));
        assert!(!near_misses(&[corrupt, round(2_450_000, 1)]).contains_key("corrupt_missed_copy"), "no round at server-2");
    }

    /// An admission at server-3 300 ms before the authority expired its session: a lease race
    /// whose clocks are server-3's (to run slow) and lock-1's (to run fast); no message lever.
    #[test]
    fn near_miss_admit_before_expiry_names_the_two_clocks() {
        use partmap::event::Event as Sys;
        use partmap::ids::{Epoch, RangeId, ServerId};
        let admit = Event { t_us: 5_000_000, what: What::Sys(Sys::Admit { server: ServerId(3), session: 7, range: RangeId(2), epoch: Epoch(30), key: b"k000114".to_vec(), id: partmap::ids::OpId { client: 4, seq: 603 } }) };
        let expired = Event { t_us: 5_300_000, what: What::Sys(Sys::LeaseExpired { server: ServerId(3), session: 7 }) };
        let got = near_misses(&[admit, expired]);
        let m = got.get("admit_before_expiry").expect("a near miss");
        assert_eq!(m.gap_us, 300_000);
        assert_eq!(m.clocks, Some(Clocks { slow: "server-3".into(), fast: "lock-1".into() }));
        assert_eq!(m.lever, None);
    }
}
