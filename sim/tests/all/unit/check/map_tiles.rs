//! The unit tests of `partmap_sim::check::map_tiles` (formerly in `sim/src/check/map_tiles.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::map_tiles::*;
    use partmap_sim::check::index::Maps;
    use partmap_sim::events::Sys;
    use partmap::lock::LockRecord;
    use partmap::map::PartitionMap;
    use crate::unit::check::testkit::{at, commit, map_of, restored};

    #[test]
    fn map_tiles_accepts_a_tiling() {
        let m = map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "active")]);
        check_announced(&[commit(1, 1, m.clone())]).unwrap();
        check_durable(&[LockRecord::Map { map: m.clone().into(), leader_epoch: 1 }], &[commit(1, 1, m)]).unwrap();
    }

    #[test]
    fn map_tiles_flags_a_gap_from_an_early_retire() {
        let m = map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "retired")]);
        assert!(check_announced(&[commit(1, 1, m)]).unwrap_err().contains("gap"));
    }

    #[test]
    fn map_tiles_flags_an_empty_map_and_the_last_ranges_retired() {
        let only_retired = map_of(2, &[(1, "", None, 1, 1, "retired")]);
        assert!(check_announced(&[commit(1, 2, only_retired.clone())]).unwrap_err().contains("no live rows"));
        assert!(check_durable(&[LockRecord::Map { map: only_retired.into(), leader_epoch: 1 }], &[]).unwrap_err().contains("no live rows"));
        // Version 0, before the bootstrap, is the one empty map; a version committed to it
        // before the bootstrap (an operator's drain: seeds 622 and 1415 of swarm.json) fails.
        check_announced(&[restored(0, PartitionMap::default())]).unwrap();
        let drained = PartitionMap { version: 1, ..PartitionMap::default() };
        assert!(check_announced(&[commit(0, 1, drained)]).unwrap_err().message.contains("no live rows"));
        // A backwards row covers nothing, and its neighbours then overlap.
        let backwards = map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", Some("k3"), 1, 2, "active"), (3, "k3", None, 1, 3, "active")]);
        assert!(check_announced(&[commit(1, 1, backwards)]).unwrap_err().contains("backwards"));
        // A single range, and the last two merging into one.
        let single = map_of(1, &[(1, "", None, 1, 1, "active")]);
        let merged = map_of(2, &[(1, "", Some("k5"), 1, 1, "retired"), (2, "k5", None, 2, 2, "retired"), (3, "", None, 1, 3, "active")]);
        check_announced(&[commit(1, 1, single), commit(1, 2, merged)]).unwrap();
    }

    /// Issue 19: a move journaled on a parent of a merge that then committed (mutation
    /// `map-forgets-reshapes`) names a retired row; the same move of a live row is fine.
    #[test]
    fn map_tiles_flags_a_journal_entry_of_a_retired_range() {
        use partmap::ids::{Epoch, RangeId, ServerId};
        use partmap::map::{Strategy, Transfer, TransferPhase};
        let mut m = map_of(3, &[(1, "", Some("k5"), 1, 1, "retired"), (2, "k5", None, 2, 2, "retired"), (3, "", None, 1, 3, "active")]);
        let mv = |range: u64| Transfer { range: RangeId(range), from: (ServerId(1), 1), from_epoch: Epoch(1), to: (ServerId(3), 3), epoch: Epoch(6), strategy: Strategy::PreCopy, phase: TransferPhase::Copying };
        m.transfers.insert(RangeId(3), mv(3));
        check_announced(&[commit(1, 3, m.clone())]).unwrap();
        m.transfers.insert(RangeId(1), mv(1));
        let err = check_announced(&[commit(1, 3, m.clone())]).unwrap_err();
        assert!(err.contains("move of r1 to server-3, which is retired"), "{err}");
        assert!(check_durable(&[LockRecord::Map { map: m.into(), leader_epoch: 1 }], &[]).unwrap_err().contains("retired"));
    }

    #[test]
    fn map_tiles_flags_an_overlap_and_a_falling_epoch() {
        let m = map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k3", None, 2, 2, "active")]);
        assert!(check_announced(&[commit(1, 1, m)]).unwrap_err().contains("overlap"));
        let a = map_of(1, &[(1, "", None, 1, 3, "active")]);
        let b = map_of(2, &[(1, "", None, 1, 2, "active")]);
        assert!(check_announced(&[commit(1, 1, a), commit(1, 2, b)]).unwrap_err().contains("went down"));
    }

    /// Issue 13: only what a version changed is read, so a violation a later version brings in
    /// (a gap from a bounds change, a falling epoch on a changed row, a journal entry of a row
    /// retired earlier) is found in either view, after versions that were fine.
    #[test]
    fn map_tiles_judges_what_each_later_version_changed() {
        let a = map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "active")]);
        // Version 2: r2 shrinks and nothing covers [k7, unbounded).
        let gap = map_of(2, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", Some("k7"), 2, 2, "active")]);
        let err = check_announced(&[commit(1, 1, a.clone()), commit(1, 2, gap.clone())]).unwrap_err();
        assert!(err.contains("version 2") && err.contains("gap"), "{err}");
        let log = |m: &PartitionMap| LockRecord::Map { map: m.clone().into(), leader_epoch: 1 };
        let err = check_durable(&[log(&a), log(&gap)], &[]).unwrap_err();
        assert!(err.contains("durable record 1") && err.contains("gap"), "{err}");
        // Version 3 keeps the bounds but r1's epoch falls.
        let fell = map_of(3, &[(1, "", Some("k5"), 3, 0, "active"), (2, "k5", None, 2, 2, "active")]);
        assert!(check_announced(&[commit(1, 1, a.clone()), commit(1, 3, fell.clone())]).unwrap_err().contains("epoch of r1 went down"));
        assert!(check_durable(&[log(&a), log(&fell)], &[]).unwrap_err().contains("epoch of r1 went down"));
        // Version 2 retires r2 into a child r3 (fine); version 3 journals a move of r2 with the
        // rows as they were: the journal is judged even when the bounds did not change.
        let merged = map_of(2, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "retired"), (3, "k5", None, 2, 3, "active")]);
        let mut stale = merged.clone();
        stale.version = 3;
        stale.transfers.insert(partmap::ids::RangeId(2), partmap::map::Transfer { range: partmap::ids::RangeId(2), from: (partmap::ids::ServerId(2), 1), from_epoch: partmap::ids::Epoch(2), to: (partmap::ids::ServerId(1), 1), epoch: partmap::ids::Epoch(4), strategy: partmap::map::Strategy::PreCopy, phase: partmap::map::TransferPhase::Copying });
        check_announced(&[commit(1, 1, a.clone()), commit(1, 2, merged.clone())]).unwrap();
        assert!(check_announced(&[commit(1, 1, a.clone()), commit(1, 2, merged.clone()), commit(1, 3, stale.clone())]).unwrap_err().contains("move of r2"));
        assert!(check_durable(&[log(&a), log(&merged), log(&stale)], &[]).unwrap_err().contains("move of r2"));
        // An older map restored after a newer one: its rows are judged again.
        let err = check_announced(&[commit(1, 1, a.clone()), commit(1, 2, merged), restored(1, gap)]).unwrap_err();
        assert!(err.contains("restored") && err.contains("gap"), "{err}");
    }

    /// The durable log holds the very copies the commits announced (shared maps): the log
    /// takes the history's diffs, and still judges each version.
    #[test]
    fn map_tiles_durable_judges_the_copies_the_commits_announced() {
        use partmap::map::SharedMap;
        let a = SharedMap::new(map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "active")]));
        let gap = SharedMap::new(map_of(2, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", Some("k7"), 2, 2, "active")]));
        let announce = |t_us: u64, m: &SharedMap| at(t_us, Sys::MapCommit { leader_epoch: 1, manager: 1, map: m.clone() });
        let events = [announce(1, &a), announce(2, &gap)];
        let maps = Maps::of(&events);
        assert!(maps.diff_of(None, &a).is_some() && maps.diff_of(Some(&a), &gap).is_some());
        assert!(maps.diff_of(Some(&gap), &a).is_none(), "not one after the other");
        let fresh = map_of(2, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", Some("k7"), 2, 2, "active")]);
        assert!(maps.diff_of(Some(&a), &fresh).is_none(), "an equal map, another copy");
        let log = [LockRecord::Map { map: a.clone(), leader_epoch: 1 }, LockRecord::Map { map: gap.clone(), leader_epoch: 1 }];
        let err = check_durable_indexed(&log, &events, &maps).unwrap_err();
        assert!(err.contains("durable record 1") && err.contains("gap"), "{err}");
        check_durable_indexed(&log[..1], &events[..1], &Maps::of(&events[..1])).unwrap();
    }

    /// Issue 12: a version that only the durable log holds (never announced) is judged.
    #[test]
    fn map_tiles_judges_a_durable_version_nobody_announced() {
        let good = map_of(1, &[(1, "", None, 1, 1, "active")]);
        let overlapping = map_of(2, &[(1, "", None, 1, 1, "active"), (2, "k5", None, 2, 2, "active")]);
        let log = [LockRecord::Map { map: good.clone().into(), leader_epoch: 1 }, LockRecord::Map { map: overlapping.into(), leader_epoch: 1 }];
        let events = [commit(1, 1, good.clone())];
        check_announced(&events).unwrap();
        assert!(check_durable(&log, &events).unwrap_err().contains("durable record 1"));
        assert_eq!(unannounced(&log, &events), 1);
        // A tiling version no commit announced: explained by a crash that cut off its
        // announcement (the recovery found it as the last map record and restored it) ...
        let next = map_of(2, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "active")]);
        let log = [LockRecord::Map { map: good.clone().into(), leader_epoch: 1 }, LockRecord::Map { map: next.clone().into(), leader_epoch: 1 }];
        let recovered = at(5, Sys::Recovered { node: "lock-1", records: 2 });
        check_durable(&log, &[commit(1, 1, good.clone()), recovered.clone(), restored(1, next.clone())]).unwrap();
        // ... not without one (a refused write applied anyway) ...
        assert!(check_durable(&log, &[commit(1, 1, good.clone())]).unwrap_err().contains("no crash of lock-1 cut off"));
        // ... and a recovery must restore exactly the last map record it found.
        let err = check_durable(&log, &[commit(1, 1, good.clone()), recovered, restored(1, good.clone())]).unwrap_err();
        assert!(err.contains("is not the last map record"), "{err}");
        // A version repeated in the log (a refused compare-and-set written anyway).
        let log = [LockRecord::Map { map: good.clone().into(), leader_epoch: 1 }, LockRecord::Map { map: good.clone().into(), leader_epoch: 1 }];
        assert!(check_durable(&log, &events).unwrap_err().contains("went from 1 to 1"));
        // An announced commit the log does not hold.
        assert!(check_durable(&[], &events).unwrap_err().contains("not in the authority's durable log"));
    }
}
