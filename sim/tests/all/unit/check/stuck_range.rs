//! The unit tests of `partmap_sim::check::stuck_range` (formerly in `sim/src/check/stuck_range.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::stuck_range::*;
    use partmap_sim::events::{Event, Sys, What};
    use partmap_sim::fault::Fault;
    use partmap::map::PartitionMap;
    use crate::unit::check::testkit::{at, commit, map_of};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::{Strategy, Transfer, TransferPhase};

    fn paused(t_us: u64, server: u32, range: u64, epoch: u64) -> Event {
        at(t_us, Sys::Paused { server: ServerId(server), range: RangeId(range), epoch: Epoch(epoch) })
    }

    /// r1 at server-1, epoch 1, in a move to server-2 at epoch 2 (journaled, paused).
    fn moving() -> PartitionMap {
        let mut m = map_of(2, &[(1, "", None, 1, 1, "paused")]);
        let t = Transfer { range: RangeId(1), from: (ServerId(1), 1), from_epoch: Epoch(1), to: (ServerId(2), 1), epoch: Epoch(2), strategy: Strategy::StopAndCopy, phase: TransferPhase::Paused };
        m.transfers.insert(RangeId(1), t);
        m
    }

    /// A move's pause, its abort and rollback to the source at epoch 3, then a late pause that
    /// pauses r1 at epoch 3: the map names server-1 the owner at 3 with nothing in the journal,
    /// for 6 s with no fault. Violated; with the source's reopen before, or a fault on the
    /// owner covering the stretch, or within the bound, it holds.
    #[test]
    fn stuck_range_a_pause_that_outlives_its_flow_is_caught() {
        let rolled_back = map_of(4, &[(1, "", None, 1, 3, "active")]);
        let history = |late_pause_us: u64, end_us: u64| {
            vec![
                commit(1, 1_000_000, moving()),
                paused(1_100_000, 1, 1, 1),
                commit(1, 2_000_000, map_of(3, &[(1, "", None, 1, 3, "preparing")])),
                at(2_100_000, Sys::Dropped { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), reason: "reopened at 3 from offset 0".into() }),
                commit(1, 2_200_000, rolled_back.clone()),
                paused(late_pause_us, 1, 1, 3),
                at(end_us, Sys::Renewed { server: ServerId(1), session: 1, ok: true, valid_until_ms: 0 }),
            ]
        };
        let err = check(&history(3_000_000, 9_000_000), 4400, 2000).expect_err("stuck for 6 s");
        assert!(err.contains("server-1 paused r1 at epoch 3 at 3.000000s") && err.contains("6000 ms"), "{err}");
        assert_eq!((err.evidence.servers.clone(), err.evidence.ranges.clone()), (vec![1], vec![1]));
        // The same pause for 4 s only: within the bound.
        check(&history(3_000_000, 7_000_000), 4400, 2000).expect("within the bound");
        // The move's own pause, released by the reopen: never without its flow.
        let mut own = history(3_000_000, 9_000_000);
        own.remove(5);
        check(&own, 4400, 2000).expect("the pause ended with its flow");
        // A crash of the owner covering most of the stretch excuses it.
        let crash = || Box::new(Fault::Pause("server-1".into()));
        let mut excused = history(3_000_000, 9_000_000);
        excused.insert(6, Event { t_us: 3_500_000, what: What::Fault { fault: crash(), duration_ms: 5000, crash: None } });
        excused.insert(7, Event { t_us: 8_500_000, what: What::FaultEnd { fault: crash() } });
        check(&excused, 4400, 2000).expect("a fault on the owner excuses it");
        // A fault on another server does not.
        let other = || Box::new(Fault::Pause("server-2".into()));
        let mut not_excused = history(3_000_000, 9_000_000);
        not_excused.insert(6, Event { t_us: 3_500_000, what: What::Fault { fault: other(), duration_ms: 5000, crash: None } });
        not_excused.insert(7, Event { t_us: 8_500_000, what: What::FaultEnd { fault: other() } });
        check(&not_excused, 4400, 2000).expect_err("a fault elsewhere excuses nothing");
    }

    /// A paused parent of a split whose journal entry stays: never without its flow, however long.
    #[test]
    fn stuck_range_a_long_pause_in_the_journal_is_not_stuck() {
        let events = vec![commit(1, 1_000_000, moving()), paused(1_100_000, 1, 1, 1), at(60_000_000, Sys::Renewed { server: ServerId(1), session: 1, ok: true, valid_until_ms: 0 })];
        check(&events, 4400, 2000).expect("journaled");
    }

    #[test]
    fn stuck_range_longest_clear_part() {
        assert_eq!(longest_clear(0, 10, &[]), (0, 10));
        assert_eq!(longest_clear(0, 10, &[(2, 4), (3, 5), (9, 12)]), (5, 4));
        assert_eq!(longest_clear(0, 10, &[(0, 10)]), (0, 0));
        assert_eq!(bound_ms(2000, 200, 500), 4400);
    }

    /// The late pause lands while the rollback's reopen is loading (after its fence, before its
    /// activation at epoch 3): the server core keeps a loading row's pause through the
    /// activation, so the range activates paused and stays stuck. The `activated` at epoch 3
    /// does not end the pause (it did before `move-abort`'s replay showed the blind spot); a
    /// `dropped` (a reopen) still does.
    #[test]
    fn stuck_range_a_pause_during_the_open_survives_the_activation() {
        let history = |after_activation: Option<Event>| {
            let mut h = vec![
                commit(1, 1_000_000, moving()),
                paused(1_100_000, 1, 1, 1),
                commit(1, 2_000_000, map_of(3, &[(1, "", None, 1, 3, "preparing")])),
                at(2_100_000, Sys::Dropped { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), reason: "reopened at 3 from offset 0".into() }),
                paused(2_150_000, 1, 1, 3),
                at(2_160_000, Sys::Activated { server: ServerId(1), range: RangeId(1), epoch: Epoch(3), records: 0, stream: 0 }),
                commit(1, 2_200_000, map_of(4, &[(1, "", None, 1, 3, "active")])),
            ];
            h.extend(after_activation);
            h.push(at(9_000_000, Sys::Renewed { server: ServerId(1), session: 1, ok: true, valid_until_ms: 0 }));
            h
        };
        let err = check(&history(None), 4400, 2000).expect_err("activated paused, stuck");
        assert!(err.contains("server-1 paused r1 at epoch 3 at 2.150000s"), "{err}");
        let reopened = at(2_300_000, Sys::Dropped { server: ServerId(1), range: RangeId(1), epoch: Epoch(3), reason: "reopened at 5 from offset 0".into() });
        check(&history(Some(reopened)), 4400, 2000).expect("a reopen ends the pause");
    }
}
