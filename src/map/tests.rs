//! The map's tests: tables of each op's rules, transcripts of moves and reshapes, and a
//! property test over random op sequences.

use super::{Epoch, MapError, MapOp, PartitionMap, RangeId, RangeRow, RangeState, Rows, ServerId, TransferPhase};
use std::collections::BTreeMap;
use proptest::prelude::*;

fn boot(points: &[&str]) -> PartitionMap {
    let mut map = PartitionMap::default();
    let split_points = points.iter().map(|p| p.as_bytes().to_vec()).collect();
    map.apply_batch(&[MapOp::Bootstrap { split_points }]).unwrap();
    map
}

/// Which refusals are of a state that passes (the operator sends those again): no map yet,
/// busy, wrong state or phase; a bad key, a pair not adjacent or an unknown range do not.
#[test]
fn map_error_may_pass_only_for_states_that_pass() {
    let r = RangeId(1);
    for e in [MapError::NotBootstrapped, MapError::Busy(r), MapError::WrongState(r, RangeState::Preparing), MapError::WrongPhase(r)] {
        assert!(e.may_pass(), "{e}");
    }
    let stale = MapError::StaleEpoch { range: r, row: Epoch(2), asked: Epoch(1) };
    for e in [MapError::NotEmpty, MapError::BadSplitPoints, MapError::UnknownRange(r), stale, MapError::BadSplitKey(r), MapError::NotAdjacent(r, RangeId(2)), MapError::NoTransfer(r)] {
        assert!(!e.may_pass(), "{e}");
    }
}

#[test]
fn map_bootstrap_tiles_and_lookup_finds_owner() {
    let map = boot(&["g", "p"]);
    assert_eq!(map.live_rows().len(), 3);
    map.check_tiling().unwrap();
    assert_eq!(map.lookup(b"").unwrap().id, RangeId(1));
    assert_eq!(map.lookup(b"g").unwrap().id, RangeId(2));
    assert_eq!(map.lookup(b"zzz").unwrap().id, RangeId(3));
    assert_eq!(map.version, 1);
}

/// An operator's drain that reaches the authority before the leader's bootstrap would commit
/// version 1 with no rows. It must be refused instead.
#[test]
fn map_refuses_an_operator_request_before_the_bootstrap() {
    let mut map = PartitionMap::default();
    assert_eq!(map.apply_batch(&[MapOp::Drain { server: ServerId(3), on: true }]), Err(MapError::NotBootstrapped));
    assert_eq!(map, PartitionMap::default(), "nothing changes");
    assert!(map.apply_batch(&[MapOp::RequestMove { range: RangeId(1), to: ServerId(2) }]).is_err());
    let mut map = boot(&["m"]);
    map.apply_batch(&[MapOp::Drain { server: ServerId(3), on: true }]).unwrap();
    assert!(map.draining.contains(&ServerId(3)));
}

#[test]
fn map_failed_batch_changes_nothing() {
    let mut map = boot(&["m"]);
    let before = map.clone();
    let ops = [
        MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 },
        MapOp::Activate { range: RangeId(1), epoch: Epoch(99) },
    ];
    assert!(matches!(map.apply_batch(&ops), Err(MapError::StaleEpoch { .. })));
    assert_eq!(map, before);
}

#[test]
fn map_tiling_flags_a_hole_left_by_retiring_parent_early() {
    // HBASE-5986: the parent was retired before the children were visible.
    let mut map = boot(&["m"]);
    map.rows.retire(&RangeId(1), 0);
    let err = map.check_tiling().unwrap_err();
    assert!(err.starts_with("gap"), "{err}");
}

/// The worked move: journal, pause, commit; the row changes owner and epoch only at the
/// commit, and an abort while paused leaves it paused until an assignment rolls it back.
#[test]
fn map_move_commits_at_the_new_epoch_and_abort_keeps_the_range_paused() {
    let mut map = boot(&[]);
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
    map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
    let begin = MapOp::BeginMove { range: RangeId(1), to: (ServerId(2), 2), strategy: super::Strategy::PreCopy };
    map.apply_batch(std::slice::from_ref(&begin)).unwrap();
    assert_eq!(map.transfers[&RangeId(1)].epoch, Epoch(2));
    assert_eq!(map.rows[&RangeId(1)].epoch, Epoch(1), "the source serves until the commit");
    assert_eq!(map.apply_batch(&[begin]), Err(MapError::WrongPhase(RangeId(1))));
    assert_eq!(map.apply_batch(&[MapOp::CommitMove { range: RangeId(1) }]), Err(MapError::WrongPhase(RangeId(1))), "commit before the pause");
    let mut aborted = map.clone();
    map.apply_batch(&[MapOp::PauseMove { range: RangeId(1) }]).unwrap();
    map.apply_batch(&[MapOp::CommitMove { range: RangeId(1) }]).unwrap();
    let row = &map.rows[&RangeId(1)];
    assert_eq!((row.owner, row.epoch, row.state), (Some(ServerId(2)), Epoch(2), RangeState::Active));
    assert!(map.transfers.is_empty());

    aborted.apply_batch(&[MapOp::PauseMove { range: RangeId(1) }]).unwrap();
    aborted.apply_batch(&[MapOp::AbortMove { range: RangeId(1), error: "checksum".into() }]).unwrap();
    assert_eq!(aborted.rows[&RangeId(1)].state, RangeState::Paused);
    assert_eq!(aborted.transfers[&RangeId(1)].phase, TransferPhase::Aborted("checksum".into()));
    aborted.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
    assert_eq!(aborted.rows[&RangeId(1)].epoch, Epoch(3), "the rollback outranks the aborted transfer's epoch");
    assert!(aborted.transfers.is_empty());
}

fn two_active() -> PartitionMap {
    let mut map = boot(&["m"]);
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }, MapOp::Assign { range: RangeId(2), owner: ServerId(2), owner_session: 2 }]).unwrap();
    map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }, MapOp::Activate { range: RangeId(2), epoch: Epoch(2) }]).unwrap();
    map
}

/// A split journals its children, pauses the parent, and one commit retires the parent
/// (with its sealed length) and activates the children at epochs above the parent's.
#[test]
fn map_split_commits_children_in_one_step() {
    let mut map = two_active();
    map.apply_batch(&[MapOp::BeginSplit { range: RangeId(1), at: b"f".to_vec(), owners: [(ServerId(1), 1), (ServerId(3), 3)] }]).unwrap();
    assert_eq!(map.live_rows().len(), 2, "children appear only at the commit");
    map.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
    map.apply_batch(&[MapOp::CommitReshape { first: RangeId(1), sealed: vec![42], born_ms: 9 }]).unwrap();
    let live: Vec<(Vec<u8>, Option<ServerId>, RangeState)> = map.live_rows().iter().map(|r| (r.start.clone(), r.owner, r.state)).collect();
    assert_eq!(live, vec![(b"".to_vec(), Some(ServerId(1)), RangeState::Active), (b"f".to_vec(), Some(ServerId(3)), RangeState::Active), (b"m".to_vec(), Some(ServerId(2)), RangeState::Active)]);
    assert_eq!(map.rows[&RangeId(1)].sealed, 42);
    assert!(map.live_rows().iter().filter(|r| r.sources == vec![RangeId(1)]).all(|r| r.epoch > Epoch(2) && r.born_ms == 9));
    map.check_tiling().unwrap();
}

/// A table's hash, as the trace hash takes it (through `Hash`).
fn hash_of(rows: &Rows) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut s = std::collections::hash_map::DefaultHasher::new();
    rows.hash(&mut s);
    s.finish()
}

/// The retired rows are kept apart from the live ones and shared by every version
/// that retired nothing; the table still reads as one, in id order.
#[test]
fn map_keeps_retired_rows_apart_and_shares_them_between_versions() {
    let mut map = two_active();
    map.apply_batch(&[MapOp::BeginSplit { range: RangeId(1), at: b"f".to_vec(), owners: [(ServerId(1), 1), (ServerId(3), 3)] }]).unwrap();
    map.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
    let before = map.clone();
    map.apply_batch(&[MapOp::CommitReshape { first: RangeId(1), sealed: vec![42], born_ms: 9 }]).unwrap();
    assert!(!map.rows.same_lineage(&before.rows), "a commit that retires copies the lineage");
    let ids = |m: &BTreeMap<RangeId, super::SharedRow>| m.keys().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!((ids(map.rows.live()), ids(map.rows.retired())), (vec![2, 3, 4], vec![1]));
    assert_eq!(map.rows.values().map(|r| r.id.0).collect::<Vec<_>>(), vec![1, 2, 3, 4], "one table, in id order");
    assert_eq!((map.rows.len(), map.rows[&RangeId(1)].state, map.rows.retired_key_bytes()), (4, RangeState::Retired, 1));
    assert!(map.rows.get_mut(&RangeId(1)).is_none(), "a retired row never changes");
    // A version that retires nothing shares the lineage; an equal table hashes alike
    // however it is kept.
    let mut next = map.clone();
    next.apply_batch(&[MapOp::RequestMove { range: RangeId(3), to: ServerId(2) }]).unwrap();
    assert!(next.rows.same_lineage(&map.rows));
    // ... and every live row it did not change: a version copies only the rows it changes.
    let shared = |a: &PartitionMap, b: &PartitionMap| a.rows.live().iter().map(|(id, r)| std::sync::Arc::ptr_eq(r, &b.rows.live()[id])).collect::<Vec<_>>();
    assert_eq!(shared(&next, &map), vec![true, true, true]);
    let mut moved = next.clone();
    moved.apply_batch(&[MapOp::Assign { range: RangeId(3), owner: ServerId(2), owner_session: 2 }]).unwrap();
    assert_eq!(shared(&moved, &next), vec![true, false, true], "r3 copied, r2 and r4 shared");
    assert_eq!(next.rows[&RangeId(3)].owner, Some(ServerId(1)), "the older version keeps its row");
    let mut flat = Rows::default();
    for row in next.rows.values() {
        flat.insert(row.id, row.clone());
    }
    assert_eq!(flat, next.rows);
    assert_eq!(hash_of(&flat), hash_of(&next.rows), "equal tables hash alike, however built");
    // A retired row that differs changes the hash (it is not walked, its digest counts).
    let mut other = Rows::default();
    for row in next.rows.values() {
        let mut row = row.clone();
        if row.id == RangeId(1) {
            row.sealed = 41;
        }
        other.insert(row.id, row);
    }
    assert_ne!(hash_of(&other), hash_of(&flat), "a retired row's sealed length counts");
    // Re-inserting a retired row as live moves it back (and its key bytes out).
    let mut back = map.rows[&RangeId(1)].clone();
    back.state = RangeState::Active;
    flat.insert(RangeId(1), back);
    assert_eq!((flat.retired().len(), flat.retired_key_bytes(), flat.live().len()), (0, 0, 4));
}

/// Review of the retired rows' digest: a merge committed with its parents' sealed lengths
/// swapped, or their epochs swapped, or one up and the other down by the same amount, makes
/// unequal maps that must hash apart (a plain sum of FxHashes collided on 75 of the 190
/// swaps of `[a, b]`, a < b < 20).
#[test]
fn map_digest_tells_swapped_values_of_two_retired_rows_apart() {
    let h = hash_of;
    let mut base = two_active();
    base.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(3), 3) }]).unwrap();
    base.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
    let commit = |sealed: Vec<u64>| {
        let mut m = base.clone();
        m.apply_batch(&[MapOp::CommitReshape { first: RangeId(1), sealed, born_ms: 9 }]).unwrap();
        m.rows
    };
    for a in 0..20u64 {
        for b in a + 1..20 {
            assert_ne!(h(&commit(vec![a, b])), h(&commit(vec![b, a])), "sealed [{a}, {b}] swapped");
        }
    }
    // Compensating changes: one row's sealed length up, the other's down.
    for d in 1..20u64 {
        assert_ne!(h(&commit(vec![20 + d, 20 - d])), h(&commit(vec![20, 20])), "sealed +{d} / -{d}");
    }
    // Two retired rows whose epochs are swapped (each row otherwise equal).
    let retired = |epochs: [u64; 2]| {
        let mut rows = Rows::default();
        for (i, e) in epochs.into_iter().enumerate() {
            let id = RangeId(i as u64 + 1);
            rows.insert(id, RangeRow { id, start: vec![], end: None, owner: None, owner_session: 0, epoch: Epoch(e), state: RangeState::Retired, sources: vec![], sealed: 0, born_ms: 0 });
        }
        rows
    };
    for a in 1..20u64 {
        for b in a + 1..20 {
            assert_ne!(h(&retired([a, b])), h(&retired([b, a])), "epochs [{a}, {b}] swapped");
        }
    }
}

/// A merge rolled back (its parents reassigned), after which one parent splits: the old
/// merge can never commit, whatever its journal said.
#[test]
fn map_rolled_back_merge_never_commits_from_its_stale_view() {
    let mut map = two_active();
    map.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]).unwrap();
    map.apply_batch(&[MapOp::PauseReshape { first: RangeId(1) }]).unwrap();
    let stale = map.clone();
    map.apply_batch(&[MapOp::AbortReshape { first: RangeId(1), error: "lost".into() }]).unwrap();
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }, MapOp::Assign { range: RangeId(2), owner: ServerId(2), owner_session: 2 }]).unwrap();
    assert!(map.reshapes.is_empty(), "the rollback drops the merge");
    let commit = MapOp::CommitReshape { first: RangeId(1), sealed: vec![1, 1], born_ms: 0 };
    assert_eq!(map.apply_batch(std::slice::from_ref(&commit)), Err(MapError::NoTransfer(RangeId(1))));
    // Even a journal entry that looks the same cannot commit once a parent moved on.
    let mut racing = stale.clone();
    racing.rows.get_mut(&RangeId(2)).unwrap().epoch = Epoch(9);
    assert_eq!(racing.apply_batch(std::slice::from_ref(&commit)), Err(MapError::WrongState(RangeId(2), RangeState::Paused)));
    stale.clone().apply_batch(&[commit]).unwrap();
}

fn row_at(map: &mut PartitionMap, id: u64, start: &str, end: Option<&str>) {
    let row = RangeRow {
        id: RangeId(id),
        start: start.as_bytes().to_vec(),
        end: end.map(|e| e.as_bytes().to_vec()),
        owner: None,
        owner_session: 0,
        epoch: Epoch(0),
        state: RangeState::Active,
        sources: vec![],
        sealed: 0,
        born_ms: 0,
    };
    map.rows.insert(RangeId(id), row);
}

fn tiling(rows: &[(&str, Option<&str>)]) -> Result<(), String> {
    let mut map = PartitionMap::default();
    for (i, (start, end)) in rows.iter().enumerate() {
        row_at(&mut map, i as u64 + 1, start, *end);
    }
    map.check_tiling()
}

/// The tiling check itself (the proptest's and `map_tiles`' judge): each kind of gap and
/// overlap is reported, and a proper tiling passes.
#[test]
fn map_tiling_check_reports_every_gap_and_overlap() {
    tiling(&[]).unwrap();
    tiling(&[("", None)]).unwrap();
    tiling(&[("", Some("g")), ("g", Some("p")), ("p", None)]).unwrap();
    let err = |rows: &[(&str, Option<&str>)]| tiling(rows).unwrap_err();
    assert!(err(&[("a", None)]).starts_with("gap: nothing covers [\"\", "), "first row must start at the empty key");
    assert!(err(&[("", Some("g"))]).starts_with("gap: nothing covers [g, unbounded)"), "{}", err(&[("", Some("g"))]));
    assert!(err(&[("", Some("g")), ("h", None)]).starts_with("gap: nothing covers [g, h)"));
    assert!(err(&[("", Some("h")), ("g", None)]).starts_with("overlap: r1 ends at h"), "{}", err(&[("", Some("h")), ("g", None)]));
    assert!(err(&[("", None), ("g", None)]).starts_with("overlap: r1 is unbounded"), "{}", err(&[("", None), ("g", None)]));
    assert!(err(&[("", Some("g")), ("g", Some("g")), ("g", None)]).contains("empty or backwards"));
    assert!(err(&[("", Some("g")), ("g", Some("c")), ("c", None)]).contains("empty or backwards"));
    // Retired rows do not count.
    let mut map = PartitionMap::default();
    row_at(&mut map, 1, "", None);
    row_at(&mut map, 2, "a", Some("b"));
    map.rows.retire(&RangeId(2), 0);
    map.check_tiling().unwrap();
    assert_eq!(map.lookup(b"a").unwrap().id, RangeId(1), "lookup skips retired rows");
    assert_eq!(map.live_rows().len(), 1);
}

#[test]
fn map_bootstrap_refuses_a_second_bootstrap_and_bad_split_points() {
    let mut map = PartitionMap::default();
    let boot = |points: &[&str]| MapOp::Bootstrap { split_points: points.iter().map(|p| p.as_bytes().to_vec()).collect() };
    assert_eq!(map.apply_batch(&[boot(&["b", "a"])]), Err(MapError::BadSplitPoints));
    assert_eq!(map.apply_batch(&[boot(&["a", "a"])]), Err(MapError::BadSplitPoints));
    assert_eq!(map.apply_batch(&[boot(&["", "a"])]), Err(MapError::BadSplitPoints));
    map.apply_batch(&[boot(&["a", "b"])]).unwrap();
    let bounds: Vec<(Vec<u8>, Option<Vec<u8>>)> = map.live_rows().iter().map(|r| (r.start.clone(), r.end.clone())).collect();
    assert_eq!(bounds, vec![(b"".to_vec(), Some(b"a".to_vec())), (b"a".to_vec(), Some(b"b".to_vec())), (b"b".to_vec(), None)]);
    assert!(map.rows.values().all(|r| r.state == RangeState::Preparing && r.owner.is_none() && r.epoch == Epoch(0)));
    assert_eq!(map.apply_batch(&[boot(&[])]), Err(MapError::NotEmpty));
    assert_eq!(map.last_range_id, 3);
}

#[test]
fn map_assign_and_activate_rules() {
    let mut map = boot(&["m"]);
    assert_eq!(map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(0) }]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)), "never assigned: no owner");
    assert_eq!(map.apply_batch(&[MapOp::Assign { range: RangeId(9), owner: ServerId(1), owner_session: 1 }]), Err(MapError::UnknownRange(RangeId(9))));
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 4 }]).unwrap();
    let row = &map.rows[&RangeId(1)];
    assert_eq!((row.owner, row.owner_session, row.epoch, row.state), (Some(ServerId(1)), 4, Epoch(1), RangeState::Preparing));
    assert_eq!(map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(2) }]), Err(MapError::StaleEpoch { range: RangeId(1), row: Epoch(1), asked: Epoch(2) }));
    map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
    assert_eq!(map.rows[&RangeId(1)].state, RangeState::Active);
    assert_eq!(map.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]), Err(MapError::WrongState(RangeId(1), RangeState::Active)), "twice");
    // A reassignment: new epoch, preparing again, and the operator's request for it goes.
    map.apply_batch(&[MapOp::RequestMove { range: RangeId(1), to: ServerId(3) }]).unwrap();
    assert_eq!(map.move_requests.get(&RangeId(1)), Some(&ServerId(3)));
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(2), owner_session: 5 }]).unwrap();
    let row = &map.rows[&RangeId(1)];
    assert_eq!((row.owner, row.epoch, row.state), (Some(ServerId(2)), Epoch(2), RangeState::Preparing));
    assert!(map.move_requests.is_empty());
    assert_eq!(map.last_epoch, 2);
}

/// A range in a split, a merge or a move cannot be picked for another (the issue-19 mutant
/// `reshape_of` returning nothing let it be).
#[test]
fn map_a_range_in_flight_is_not_picked_again() {
    let mut map = two_active();
    map.apply_batch(&[MapOp::BeginSplit { range: RangeId(1), at: b"f".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] }]).unwrap();
    assert_eq!(map.reshape_of(RangeId(1)).map(|r| r.kind), Some(super::ReshapeKind::Split));
    assert!(map.reshape_of(RangeId(2)).is_none());
    assert!(map.in_flight(RangeId(1)) && !map.in_flight(RangeId(2)));
    let again = [
        MapOp::BeginSplit { range: RangeId(1), at: b"c".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] },
        MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) },
        MapOp::BeginMove { range: RangeId(1), to: (ServerId(2), 2), strategy: super::Strategy::StopAndCopy },
    ];
    for op in &again {
        assert_eq!(map.apply_batch(std::slice::from_ref(op)), Err(MapError::WrongPhase(RangeId(1))), "{op:?}");
    }
    // The merge's right parent is in flight too.
    let mut merging = two_active();
    merging.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]).unwrap();
    assert_eq!(merging.reshape_of(RangeId(2)).map(|r| r.parents.len()), Some(2));
    assert!(merging.in_flight(RangeId(2)));
    assert_eq!(merging.apply_batch(&[MapOp::BeginMove { range: RangeId(2), to: (ServerId(1), 1), strategy: super::Strategy::PreCopy }]), Err(MapError::WrongPhase(RangeId(2))));
    assert_eq!(merging.apply_batch(&[MapOp::BeginSplit { range: RangeId(2), at: b"t".to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] }]), Err(MapError::WrongPhase(RangeId(2))));
    // A move is in flight as well.
    let mut moving = two_active();
    moving.apply_batch(&[MapOp::BeginMove { range: RangeId(2), to: (ServerId(1), 1), strategy: super::Strategy::PreCopy }]).unwrap();
    assert!(moving.in_flight(RangeId(2)));
    assert_eq!(moving.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]), Err(MapError::WrongPhase(RangeId(2))));
    // A failover of the parent drops the split from the journal.
    map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(3), owner_session: 3 }]).unwrap();
    assert!(map.reshapes.is_empty() && !map.in_flight(RangeId(1)));
}

#[test]
fn map_split_and_merge_refuse_bad_keys_and_non_neighbours() {
    let mut map = two_active(); // r1 ["", m), r2 [m, unbounded)
    let split = |range: u64, at: &str| MapOp::BeginSplit { range: RangeId(range), at: at.as_bytes().to_vec(), owners: [(ServerId(1), 1), (ServerId(2), 2)] };
    assert_eq!(map.apply_batch(&[split(1, "")]), Err(MapError::BadSplitKey(RangeId(1))), "at the start");
    assert_eq!(map.apply_batch(&[split(1, "m")]), Err(MapError::BadSplitKey(RangeId(1))), "at the end");
    assert_eq!(map.apply_batch(&[split(1, "x")]), Err(MapError::BadSplitKey(RangeId(1))), "past the end");
    assert_eq!(map.apply_batch(&[split(2, "m")]), Err(MapError::BadSplitKey(RangeId(2))));
    map.clone().apply_batch(&[split(2, "zz")]).unwrap();
    assert_eq!(map.apply_batch(&[MapOp::BeginMerge { left: RangeId(2), right: RangeId(1), owner: (ServerId(1), 1) }]), Err(MapError::NotAdjacent(RangeId(2), RangeId(1))));
    map.apply_batch(&[split(1, "f")]).unwrap();
    let r = &map.reshapes[&RangeId(1)];
    let cuts: Vec<String> = r.children.iter().map(|c| format!("{} [{:?}, {:?}) at {}", c.id, c.start, c.end, c.epoch)).collect();
    assert_eq!(cuts, vec!["r3 [[], Some([102])) at e3", "r4 [[102], Some([109])) at e4"]);
    assert_eq!(r.parents, vec![(RangeId(1), Epoch(1))]);
    assert_eq!(r.phase, TransferPhase::Copying);
    // A split of a range not active.
    let mut fresh = boot(&[]);
    assert_eq!(fresh.apply_batch(&[split(1, "a")]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)));
    fresh.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
    assert_eq!(fresh.apply_batch(&[split(1, "a")]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)), "owned but not active yet");
    // A merge's child spans both parents.
    let mut m = two_active();
    m.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(3), 3) }]).unwrap();
    let c = &m.reshapes[&RangeId(1)].children[0];
    assert_eq!((c.start.clone(), c.end.clone(), c.owner), (b"".to_vec(), None, (ServerId(3), 3)));
}

#[test]
fn map_reshape_phases_pause_commit_and_abort() {
    let mut map = two_active();
    let first = RangeId(1);
    assert_eq!(map.apply_batch(&[MapOp::PauseReshape { first }]), Err(MapError::NoTransfer(first)));
    map.apply_batch(&[MapOp::BeginMerge { left: RangeId(1), right: RangeId(2), owner: (ServerId(1), 1) }]).unwrap();
    // Abort before the pause: the entry goes, the parents serve on.
    let mut early = map.clone();
    early.apply_batch(&[MapOp::AbortReshape { first, error: "x".into() }]).unwrap();
    assert!(early.reshapes.is_empty());
    assert!(early.live_rows().iter().all(|r| r.state == RangeState::Active));
    assert_eq!(map.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![1, 1], born_ms: 0 }]), Err(MapError::WrongPhase(first)), "commit before the pause");
    // A parent that moved on since the journal cannot be paused.
    let mut moved = map.clone();
    moved.rows.get_mut(&RangeId(2)).unwrap().epoch = Epoch(7);
    assert_eq!(moved.apply_batch(&[MapOp::PauseReshape { first }]), Err(MapError::WrongState(RangeId(2), RangeState::Active)));
    map.apply_batch(&[MapOp::PauseReshape { first }]).unwrap();
    assert!(map.live_rows().iter().all(|r| r.state == RangeState::Paused));
    assert_eq!(map.apply_batch(&[MapOp::PauseReshape { first }]), Err(MapError::WrongPhase(first)), "paused twice");
    assert_eq!(map.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![1], born_ms: 0 }]), Err(MapError::WrongPhase(first)), "one sealed length per parent");
    let mut aborted = map.clone();
    aborted.apply_batch(&[MapOp::AbortReshape { first, error: "lost".into() }]).unwrap();
    assert_eq!(aborted.reshapes[&first].phase, TransferPhase::Aborted("lost".into()));
    assert!(aborted.live_rows().iter().all(|r| r.state == RangeState::Paused), "aborted after the pause: parents stay paused");
    assert_eq!(aborted.apply_batch(&[MapOp::AbortReshape { first, error: "again".into() }]), Err(MapError::WrongPhase(first)));
    assert_eq!(aborted.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![1, 1], born_ms: 0 }]), Err(MapError::WrongPhase(first)));
    map.apply_batch(&[MapOp::CommitReshape { first, sealed: vec![4, 5], born_ms: 3 }]).unwrap();
    assert_eq!((map.rows[&RangeId(1)].sealed, map.rows[&RangeId(2)].sealed), (4, 5));
    assert!(map.rows[&RangeId(1)].state == RangeState::Retired && map.rows[&RangeId(2)].state == RangeState::Retired);
    let child = map.lookup(b"z").unwrap();
    assert_eq!((child.id, child.sources.clone(), child.state, child.born_ms), (RangeId(3), vec![RangeId(1), RangeId(2)], RangeState::Active, 3));
    assert!(map.reshapes.is_empty());
    assert_eq!(map.apply_batch(&[MapOp::AbortReshape { first, error: "late".into() }]), Err(MapError::NoTransfer(first)));
    assert_eq!(map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]), Err(MapError::WrongState(RangeId(1), RangeState::Retired)), "a retired row never serves again");
    assert_eq!(map.apply_batch(&[MapOp::RequestMove { range: RangeId(1), to: ServerId(1) }]), Err(MapError::WrongState(RangeId(1), RangeState::Retired)));
}

#[test]
fn map_move_phases_and_their_refusals() {
    let mut map = two_active();
    let r = RangeId(2);
    assert_eq!(map.apply_batch(&[MapOp::PauseMove { range: r }]), Err(MapError::NoTransfer(r)));
    assert_eq!(map.apply_batch(&[MapOp::CommitMove { range: r }]), Err(MapError::NoTransfer(r)));
    assert_eq!(map.apply_batch(&[MapOp::AbortMove { range: r, error: "x".into() }]), Err(MapError::NoTransfer(r)));
    map.apply_batch(&[MapOp::RequestMove { range: r, to: ServerId(3) }]).unwrap();
    map.apply_batch(&[MapOp::BeginMove { range: r, to: (ServerId(3), 3), strategy: super::Strategy::StopAndCopy }]).unwrap();
    assert!(map.move_requests.is_empty(), "the request is consumed");
    let t = &map.transfers[&r];
    assert_eq!((t.from, t.from_epoch, t.to, t.epoch), ((ServerId(2), 2), Epoch(2), (ServerId(3), 3), Epoch(3)));
    // Abort while copying: the entry goes, the source never stopped.
    let mut early = map.clone();
    early.apply_batch(&[MapOp::AbortMove { range: r, error: "x".into() }]).unwrap();
    assert!(early.transfers.is_empty());
    assert_eq!(early.rows[&r].state, RangeState::Active);
    // A source reassigned meanwhile cannot be paused for the old transfer.
    let mut stale = map.clone();
    stale.rows.get_mut(&r).unwrap().epoch = Epoch(9);
    assert_eq!(stale.apply_batch(&[MapOp::PauseMove { range: r }]), Err(MapError::WrongState(r, RangeState::Active)));
    map.apply_batch(&[MapOp::PauseMove { range: r }]).unwrap();
    assert_eq!(map.apply_batch(&[MapOp::PauseMove { range: r }]), Err(MapError::WrongPhase(r)));
    let mut stale = map.clone();
    stale.rows.get_mut(&r).unwrap().epoch = Epoch(9);
    assert_eq!(stale.apply_batch(&[MapOp::CommitMove { range: r }]), Err(MapError::WrongState(r, RangeState::Paused)));
    let mut aborted = map.clone();
    aborted.apply_batch(&[MapOp::AbortMove { range: r, error: "x".into() }]).unwrap();
    assert_eq!(aborted.apply_batch(&[MapOp::AbortMove { range: r, error: "y".into() }]), Err(MapError::WrongPhase(r)));
    assert_eq!(aborted.apply_batch(&[MapOp::CommitMove { range: r }]), Err(MapError::WrongPhase(r)));
    // A move of a range that is not active.
    let mut fresh = boot(&[]);
    assert_eq!(fresh.apply_batch(&[MapOp::BeginMove { range: RangeId(1), to: (ServerId(3), 3), strategy: super::Strategy::PreCopy }]), Err(MapError::WrongState(RangeId(1), RangeState::Preparing)));
    map.apply_batch(&[MapOp::CommitMove { range: r }]).unwrap();
    let row = &map.rows[&r];
    assert_eq!((row.owner, row.owner_session, row.epoch, row.state), (Some(ServerId(3)), 3, Epoch(3), RangeState::Active));
}

#[test]
fn map_operator_requests_and_names() {
    let mut map = boot(&[]);
    map.apply_batch(&[MapOp::Drain { server: ServerId(2), on: true }]).unwrap();
    map.apply_batch(&[MapOp::Drain { server: ServerId(3), on: true }]).unwrap();
    map.apply_batch(&[MapOp::Drain { server: ServerId(2), on: false }]).unwrap();
    assert_eq!(map.draining.iter().copied().collect::<Vec<_>>(), vec![ServerId(3)]);
    assert_eq!(map.apply_batch(&[MapOp::RequestMove { range: RangeId(5), to: ServerId(1) }]), Err(MapError::UnknownRange(RangeId(5))));
    assert!(MapOp::Drain { server: ServerId(1), on: true }.is_operator_request());
    assert!(MapOp::RequestMove { range: RangeId(1), to: ServerId(1) }.is_operator_request());
    assert!(!MapOp::Bootstrap { split_points: vec![] }.is_operator_request());
    assert!(!MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }.is_operator_request());
    for (s, name) in super::Strategy::ALL {
        assert_eq!(s.name(), name);
        assert_eq!(super::Strategy::parse(name), Ok(s));
    }
    assert!(super::Strategy::parse("live").unwrap_err().contains("accepted: stop-and-copy, pre-copy"));
    assert_eq!((super::ReshapeKind::Split.name(), super::ReshapeKind::Merge.name()), ("split", "merge"));
    assert_eq!(MapError::NoTransfer(RangeId(4)).to_string(), "NoTransfer(RangeId(4))");
}

#[derive(Clone, Debug)]
enum Step {
    Assign(usize, u32),
    Activate(usize),
    Split(usize, u8),
    Merge(usize),
    PauseReshape(usize),
    EndReshape(usize, bool),
    BeginMove(usize, u32),
    PauseMove(usize),
    CommitMove(usize),
    AbortMove(usize),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    prop_oneof![
        (0..16usize, 1..5u32).prop_map(|(r, s)| Step::Assign(r, s)),
        (0..16usize).prop_map(Step::Activate),
        (0..16usize, any::<u8>()).prop_map(|(r, b)| Step::Split(r, b)),
        (0..16usize).prop_map(Step::Merge),
        (0..16usize).prop_map(Step::PauseReshape),
        (0..16usize, any::<bool>()).prop_map(|(r, b)| Step::EndReshape(r, b)),
        (0..16usize, 1..5u32).prop_map(|(r, s)| Step::BeginMove(r, s)),
        (0..16usize).prop_map(Step::PauseMove),
        (0..16usize).prop_map(Step::CommitMove),
        (0..16usize).prop_map(Step::AbortMove),
    ]
}

proptest! {
    #[test]
    fn map_any_sequence_keeps_tiling_and_monotone_epochs(steps in proptest::collection::vec(step(), 1..60)) {
        let mut map = boot(&["d", "k", "s"]);
        for s in steps {
            let live: Vec<RangeRow> = map.live_rows().into_iter().cloned().collect();
            let pick = |i: usize| &live[i % live.len()];
            let op = match s {
                Step::Assign(i, srv) => MapOp::Assign { range: pick(i).id, owner: ServerId(srv), owner_session: 1 },
                Step::Activate(i) => MapOp::Activate { range: pick(i).id, epoch: pick(i).epoch },
                Step::Split(i, b) => {
                    let row = pick(i);
                    let mut at = row.start.clone();
                    at.push(b);
                    MapOp::BeginSplit { range: row.id, at, owners: [(ServerId(1), 1), (ServerId(2), 1)] }
                }
                Step::Merge(i) => {
                    let j = i % live.len();
                    let k = (j + 1) % live.len();
                    MapOp::BeginMerge { left: live[j].id, right: live[k].id, owner: (ServerId(3), 1) }
                }
                Step::PauseReshape(i) => MapOp::PauseReshape { first: pick(i).id },
                Step::EndReshape(i, commit) => {
                    let first = pick(i).id;
                    let parents = map.reshapes.get(&first).map_or(1, |r| r.parents.len());
                    if commit { MapOp::CommitReshape { first, sealed: vec![3; parents], born_ms: 7 } } else { MapOp::AbortReshape { first, error: "test".into() } }
                }
                Step::BeginMove(i, srv) => MapOp::BeginMove { range: pick(i).id, to: (ServerId(srv), 1), strategy: super::Strategy::PreCopy },
                Step::PauseMove(i) => MapOp::PauseMove { range: pick(i).id },
                Step::CommitMove(i) => MapOp::CommitMove { range: pick(i).id },
                Step::AbortMove(i) => MapOp::AbortMove { range: pick(i).id, error: "test".into() },
            };
            let before = map.clone();
            match map.apply_batch(&[op]) {
                Ok(()) => {
                    prop_assert_eq!(map.version, before.version + 1);
                    prop_assert!(map.last_epoch >= before.last_epoch);
                    for old in before.rows.values() {
                        let (id, new) = (old.id, &map.rows[&old.id]);
                        prop_assert!(new.epoch >= old.epoch, "epoch of {} went down", id);
                        if old.state == RangeState::Retired {
                            prop_assert_eq!(new, old);
                        }
                    }
                    for r in map.reshapes.values() {
                        for c in &r.children {
                            prop_assert!(r.parents.iter().all(|(p, _)| c.epoch > map.rows[p].epoch), "child {} does not outrank its parents", c.id);
                        }
                    }
                    for t in map.transfers.values() {
                        let row = &map.rows[&t.range];
                        prop_assert!(t.epoch > row.epoch, "transfer epoch {} not above the row's {}", t.epoch, row.epoch);
                        prop_assert_ne!(row.state, RangeState::Retired);
                    }
                    for row in map.rows.values() {
                        for src in &row.sources {
                            prop_assert!(row.epoch > map.rows[src].epoch, "child {} does not outrank parent {}", row.id, src);
                        }
                    }
                }
                Err(_) => prop_assert_eq!(&map, &before),
            }
            prop_assert!(map.check_tiling().is_ok(), "{:?}", map.check_tiling());
        }
    }
}

/// Operator split and merge requests are checked when the map takes them: a live range,
/// idle, a key strictly inside it, adjacent ranges; a split or merge that retires a range
/// drops the requests naming it, and keeps the others. Mutation `map-forgets-reshapes`
/// hides the split in flight.
#[test]
fn map_operator_split_and_merge_requests_are_checked() {
    let mut map = boot(&["g", "p", "t"]);
    let k = |s: &str| s.as_bytes().to_vec();
    let ops: Vec<MapOp> = (1..=4).map(|r| MapOp::Assign { range: RangeId(r), owner: ServerId(1), owner_session: 1 }).collect();
    map.apply_batch(&ops).unwrap();
    let rows: Vec<(RangeId, Epoch)> = map.rows.values().map(|r| (r.id, r.epoch)).collect();
    map.apply_batch(&rows.iter().map(|(range, epoch)| MapOp::Activate { range: *range, epoch: *epoch }).collect::<Vec<_>>()).unwrap();
    let refused = |map: &mut PartitionMap, op: MapOp| map.clone().apply_batch(&[op]).unwrap_err();
    assert_eq!(refused(&mut map, MapOp::RequestSplit { range: RangeId(2), at: k("g") }), MapError::BadSplitKey(RangeId(2)), "at its start");
    assert_eq!(refused(&mut map, MapOp::RequestSplit { range: RangeId(2), at: k("p") }), MapError::BadSplitKey(RangeId(2)), "at its end");
    assert_eq!(refused(&mut map, MapOp::RequestSplit { range: RangeId(9), at: k("h") }), MapError::UnknownRange(RangeId(9)));
    assert_eq!(refused(&mut map, MapOp::RequestMerge { left: RangeId(1), right: RangeId(3) }), MapError::NotAdjacent(RangeId(1), RangeId(3)));
    assert_eq!(refused(&mut map, MapOp::RequestMerge { left: RangeId(2), right: RangeId(1) }), MapError::NotAdjacent(RangeId(2), RangeId(1)));
    map.apply_batch(&[MapOp::BeginMove { range: RangeId(3), to: (ServerId(2), 2), strategy: super::Strategy::PreCopy }]).unwrap();
    assert_eq!(refused(&mut map, MapOp::RequestMerge { left: RangeId(2), right: RangeId(3) }), MapError::Busy(RangeId(3)), "in a move");
    assert!(MapOp::RequestSplit { range: RangeId(2), at: k("h") }.is_operator_request());
    assert!(MapOp::RequestMerge { left: RangeId(1), right: RangeId(2) }.is_operator_request());
    map.apply_batch(&[MapOp::RequestSplit { range: RangeId(2), at: k("h") }, MapOp::RequestMerge { left: RangeId(1), right: RangeId(2) }, MapOp::RequestSplit { range: RangeId(4), at: k("u") }]).unwrap();
    assert_eq!(map.reshape_requests.len(), 3);
    // The split starts (consuming its request), commits and retires range 2: the merge
    // request naming it goes too; range 4's request stays.
    map.apply_batch(&[MapOp::BeginSplit { range: RangeId(2), at: k("h"), owners: [(ServerId(1), 1), (ServerId(1), 1)] }]).unwrap();
    assert_eq!(map.reshape_requests.len(), 2, "the split's request is consumed");
    assert!(map.reshape_of(RangeId(2)).is_some());
    super::forget_reshapes(true);
    let forgotten = map.reshape_of(RangeId(2)).is_none();
    super::forget_reshapes(false);
    assert!(forgotten, "map-forgets-reshapes hides the split");
    map.apply_batch(&[MapOp::PauseReshape { first: RangeId(2) }, MapOp::CommitReshape { first: RangeId(2), sealed: vec![0], born_ms: 1 }]).unwrap();
    assert_eq!(map.reshape_requests, std::collections::BTreeMap::from([(RangeId(4), super::ReshapeRequest::Split(k("u")))]));
}
