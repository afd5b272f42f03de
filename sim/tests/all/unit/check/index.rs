//! The unit tests of `partmap_sim::check::index` (formerly in `sim/src/check/index.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::index::*;
    use partmap_sim::events::Event;
    use partmap_sim::workload::{content_hash, parse_content};
    use partmap::ids::{Key, OpId};
    use partmap::map::{PartitionMap, Transfer};
    use crate::unit::check::testkit::{commit, map_of, restored};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::{Strategy, TransferPhase};

    /// `IdMap` answers as a hash map would, for ids in its vectors (small client numbers and
    /// sequence numbers) and for the rest (a large client number, a sequence number past the
    /// history's length), and an overwritten id keeps its last value.
    #[test]
    fn id_map_answers_as_a_map_for_dense_and_sparse_ids() {
        let mut m: IdMap<u32> = IdMap::new(10);
        let mut reference: std::collections::BTreeMap<OpId, u32> = std::collections::BTreeMap::new();
        let ids = [(1, 1), (1, 3), (0, 1), (3, 11), (3, 10), (IdMap::<u32>::CLIENTS, 1), (u32::MAX, u64::MAX), (2, 5), (1, 3)];
        for (v, (client, seq)) in ids.into_iter().enumerate() {
            let id = OpId { client, seq };
            assert_eq!(m.get(&id), reference.get(&id).copied(), "{id:?} before insert");
            m.insert(id, v as u32);
            reference.insert(id, v as u32);
        }
        for client in [0, 1, 2, 3, 4, IdMap::<u32>::CLIENTS, u32::MAX] {
            for seq in [0, 1, 2, 3, 5, 10, 11, 12, u64::MAX] {
                let id = OpId { client, seq };
                assert_eq!(m.get(&id), reference.get(&id).copied(), "{id:?}");
            }
        }
    }

    /// `Keys::sorted` orders keys as their bytes do, where the 8-byte prefix ties (a shared
    /// prefix, a shorter key, a key padded with zero bytes) and where it does not.
    #[test]
    fn keys_sorted_is_byte_order() {
        let raw: Vec<Key> = ["k0000001x", "k0000001", "k0000001\0", "", "\0", "a", "k0000001\0\0", "k0000002", "zz", "k000000", "\u{ff}"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let mut keys = Keys::default();
        for k in &raw {
            keys.intern(k);
        }
        let got: Vec<&[u8]> = keys.sorted().iter().map(|n| keys.bytes_of(*n)).collect();
        let mut want: Vec<&[u8]> = raw.iter().map(|k| k.as_slice()).collect();
        want.sort();
        assert_eq!(got, want);
    }

    fn ids(d: &MapDiff<'_>) -> Vec<u64> {
        d.rows.iter().map(|r| r.id.0).collect()
    }

    /// The diff names exactly the rows and journal entries that differ, and says when the live
    /// bounds may have changed.
    #[test]
    fn map_diff_names_what_changed() {
        let a = map_of(1, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 2, 2, "active")]);
        let first = MapDiff::between(None, &a);
        assert_eq!(ids(&first), vec![1, 2]);
        assert!(first.tiling_changed && !first.rows_removed);
        // Same map: nothing changed.
        let same = MapDiff::between(Some(&a), &a);
        assert!(same.rows.is_empty() && !same.tiling_changed && !same.rows_removed && same.transfers.is_empty());
        // An equal copy (walked row by row): nothing changed either.
        let copy = a.clone();
        let same = MapDiff::between(Some(&a), &copy);
        assert!(same.rows.is_empty() && !same.tiling_changed && !same.rows_removed && same.transfers.is_empty());
        // A new owner and epoch for r2 (a failover): r2 only, bounds as before.
        let b = map_of(2, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 3, 3, "preparing")]);
        let d = MapDiff::between(Some(&a), &b);
        assert_eq!(ids(&d), vec![2]);
        assert!(!d.tiling_changed);
        // A move journaled: the transfer, no row.
        let mut c = b.clone();
        c.transfers.insert(RangeId(1), Transfer { range: RangeId(1), from: (ServerId(1), 1), from_epoch: Epoch(1), to: (ServerId(2), 2), epoch: Epoch(4), strategy: Strategy::PreCopy, phase: TransferPhase::Copying });
        let d = MapDiff::between(Some(&b), &c);
        assert!(d.rows.is_empty() && d.transfers.len() == 1 && !d.tiling_changed);
        // A split: r2 retired, two children: the live bounds changed.
        let s = map_of(3, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k5", None, 3, 3, "retired"), (3, "k5", Some("k8"), 3, 5, "active"), (4, "k8", None, 2, 6, "active")]);
        let d = MapDiff::between(Some(&b), &s);
        assert_eq!(ids(&d), vec![2, 3, 4]);
        assert!(d.tiling_changed && !d.rows_removed);
        // A later version that retires nothing shares the retired rows' copy: the diff walks
        // the live rows only and names the one that changed.
        let mut t = s.clone();
        t.version = 4;
        t.rows.get_mut(&RangeId(4)).unwrap().epoch = Epoch(7);
        assert!(t.rows.same_lineage(&s.rows));
        let d = MapDiff::between(Some(&s), &t);
        assert_eq!(ids(&d), vec![4]);
        assert!(!d.tiling_changed && !d.rows_removed);
        // A map whose lineage lost the retired r2: a row removed.
        let u = map_of(4, &[(1, "", Some("k5"), 1, 1, "active"), (3, "k5", Some("k8"), 3, 5, "active"), (4, "k8", None, 2, 6, "active")]);
        let d = MapDiff::between(Some(&s), &u);
        assert!(d.rows.is_empty() && d.rows_removed && d.tiling_changed);
        // An older map restored: rows 3 and 4 are gone.
        let d = MapDiff::between(Some(&s), &b);
        assert_eq!(ids(&d), vec![2]);
        assert!(d.rows_removed && d.tiling_changed);
        // After version 0 (the empty map before the bootstrap) the tiling is judged again.
        let empty = PartitionMap::default();
        let v1 = PartitionMap { version: 1, ..PartitionMap::default() };
        assert!(MapDiff::between(Some(&empty), &v1).tiling_changed);
    }

    /// The one-pass parse of plain contents gives what the general parse gives (ids, prefixes),
    /// and a content of any other shape still gets the general parse's result or error.
    #[test]
    fn finals_parse_plain_and_other_contents_alike() {
        let events: [Event; 0] = [];
        let clients = Clients::of(&events);
        let contents: Vec<&[u8]> = vec![b"", b"c1.2;", b"c1.2;c3.40--;c01.7-", b"c+1.2;", b"c1.2;;", b"c1.2-3;", b"x;", b"c4294967296.1;", b"c1.18446744073709551616;", b"c1.2;c", b"c1.;"];
        for bytes in contents {
            let mut f = Finals::empty();
            let p = f.parse(bytes, &clients);
            let got = f.content(p).map(|c| (c.ids.to_vec(), c.prefixes.to_vec())).map_err(str::to_string);
            let want = parse_content(bytes).map(|ids| {
                let mut prefixes = vec![(0, content_hash(&[]))];
                let mut end = 0;
                for piece in bytes.split_inclusive(|b| *b == b';').take(ids.len()) {
                    end += piece.len();
                    prefixes.push((end as u64, content_hash(&bytes[..end])));
                }
                (ids, prefixes)
            });
            assert_eq!(got, want, "{}", String::from_utf8_lossy(bytes));
        }
    }

    /// One step per map event, in history order, each diffed against the step before.
    #[test]
    fn maps_diff_each_announced_map_against_the_one_before() {
        let a = map_of(1, &[(1, "", None, 1, 1, "active")]);
        let b = map_of(2, &[(1, "", None, 2, 2, "active")]);
        let events = [restored(0, PartitionMap::default()), commit(1, 5, a.clone()), commit(1, 9, a), commit(1, 12, b)];
        let maps = Maps::of(&events);
        assert_eq!(maps.steps.iter().map(|s| (s.t_us, s.restored, s.map.version)).collect::<Vec<_>>(), vec![(0, true, 0), (5, false, 1), (9, false, 1), (12, false, 2)]);
        assert_eq!(maps.steps.iter().map(|s| s.diff.rows.len()).collect::<Vec<_>>(), vec![0, 1, 0, 1]);
        assert!(maps.steps[1].diff.tiling_changed && !maps.steps[2].diff.tiling_changed);
    }
}

/// Issue 13 review: `MapDiff::between` over the split `Rows` (live rows + a retired lineage
/// shared between versions) agrees with the old single merge walk over the whole table
/// (`rows.values()` flattened into one `BTreeMap`), for maps built by random sequences of valid
/// map ops and of the irregular edits a restore, a torn log or a mutation can produce (a row
/// retired early, an older map's rows live again, rows dropped, equal tables built apart), over
/// any pair of versions (consecutive, older restored, same copy, first map). Also: the wire size
/// of a map equals its whole-table reading, and an equal table rebuilt apart hashes alike.
///
/// Written by an independent review of the split (issue 13); it caught each of three bugs
/// planted one at a time (the retired rows never walked, the merged rows left unsorted, a row
/// moving from live to retired counted as removed).
mod map_diff_reference {
    use partmap_sim::check::index::MapDiff;
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::{MapOp, PartitionMap, RangeRow, RangeState, Rows, Strategy as MoveStrategy};
    use partmap::msg::Msg;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// The old diff (before `map::Rows`): one merge walk over every row of both tables.
    fn old_changed<'p, 'a, K: Ord, V: PartialEq>(prev: &'p BTreeMap<K, V>, next: &'a BTreeMap<K, V>, mut on: impl FnMut(Option<&'p V>, &'a V)) -> bool {
        let mut removed = false;
        let mut old = prev.iter().peekable();
        for (k, v) in next {
            let mut before = None;
            while let Some(&(ok, ov)) = old.peek() {
                match ok.cmp(k) {
                    std::cmp::Ordering::Less => {
                        removed = true;
                        old.next();
                    }
                    std::cmp::Ordering::Equal => {
                        before = Some(ov);
                        old.next();
                        break;
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
            if before != Some(v) {
                on(before, v);
            }
        }
        removed || old.next().is_some()
    }

    #[derive(Debug, PartialEq)]
    struct Flat {
        rows: Vec<RangeRow>,
        rows_removed: bool,
        tiling_changed: bool,
        reshapes: Vec<RangeId>,
        transfers: Vec<RangeId>,
    }

    fn table(m: &PartitionMap) -> BTreeMap<RangeId, RangeRow> {
        m.rows.values().map(|r| (r.id, r.clone())).collect()
    }

    /// The old `MapDiff::between`, on the flattened tables.
    fn reference(prev: Option<&PartitionMap>, next: &PartitionMap) -> Flat {
        let mut f = Flat { rows: Vec::new(), rows_removed: false, tiling_changed: prev.is_none_or(|p| p.version == 0), reshapes: Vec::new(), transfers: Vec::new() };
        let empty = PartitionMap::default();
        let old = prev.unwrap_or(&empty);
        let (ot, nt) = (table(old), table(next));
        let retired = |r: &RangeRow| r.state == RangeState::Retired;
        let mut tiling = false;
        f.rows_removed = old_changed(&ot, &nt, |b, row| {
            f.rows.push(row.clone());
            tiling |= b.is_none_or(|b| b.start != row.start || b.end != row.end || retired(b) != retired(row));
        });
        f.tiling_changed |= tiling || f.rows_removed;
        old_changed(&old.reshapes, &next.reshapes, |_, r| f.reshapes.push(r.parents[0].0));
        old_changed(&old.transfers, &next.transfers, |_, t| f.transfers.push(t.range));
        f
    }

    fn check_pair(prev: Option<&PartitionMap>, next: &PartitionMap) -> Result<(), TestCaseError> {
        let d = MapDiff::between(prev, next);
        // Every row the diff names is `next`'s own copy of it.
        for r in &d.rows {
            prop_assert!(std::ptr::eq(*r, next.rows.get(&r.id).expect("a row of next")), "row {} is not next's", r.id);
        }
        let got = Flat {
            rows: d.rows.iter().map(|r| (*r).clone()).collect(),
            rows_removed: d.rows_removed,
            tiling_changed: d.tiling_changed,
            reshapes: d.reshapes.iter().map(|r| r.parents[0].0).collect(),
            transfers: d.transfers.iter().map(|t| t.range).collect(),
        };
        let want = if prev.is_some_and(|p| std::ptr::eq(p, next)) {
            // The very same copy: the shortcut (as before the change).
            Flat { rows: Vec::new(), rows_removed: false, tiling_changed: next.version == 0, reshapes: Vec::new(), transfers: Vec::new() }
        } else {
            reference(prev, next)
        };
        prop_assert_eq!(got, want, "prev v{:?} next v{} (same lineage: {})", prev.map(|p| p.version), next.version, prev.is_some_and(|p| p.rows.same_lineage(&next.rows)));
        Ok(())
    }

    /// `rows` rebuilt from scratch (a fresh lineage copy) from `rows`, keeping those `keep` says.
    fn rebuilt(rows: &Rows, keep: impl Fn(&RangeRow) -> bool) -> Rows {
        let mut out = Rows::default();
        for r in rows.values().filter(|r| keep(r)) {
            out.insert(r.id, r.clone());
        }
        out
    }

    /// The invariants the split relies on, and whole-table readings equal to the old ones.
    fn check_map(m: &PartitionMap) -> Result<(), TestCaseError> {
        prop_assert!(m.rows.live().values().all(|r| r.state != RangeState::Retired), "a retired row among the live ones");
        prop_assert!(m.rows.retired().values().all(|r| r.state == RangeState::Retired), "a live row in the lineage");
        prop_assert!(m.rows.live().keys().all(|k| !m.rows.retired().contains_key(k)), "a row in both halves");
        let t = table(m);
        prop_assert_eq!(t.keys().copied().collect::<Vec<_>>(), m.rows.values().map(|r| r.id).collect::<Vec<_>>(), "values() in id order");
        let wire = t.values().map(|r| 48 + r.start.len() + r.end.as_ref().map_or(0, Vec::len)).sum::<usize>() as u64;
        prop_assert_eq!(Msg::Map { map: Arc::new(m.clone()) }.wire_bytes(), wire, "wire size");
        // Equal tables, however built, are equal and hash alike.
        let flat = rebuilt(&m.rows, |_| true);
        prop_assert_eq!(&flat, &m.rows);
        let h = |r: &Rows| {
            use std::hash::{Hash, Hasher};
            let mut s = std::collections::hash_map::DefaultHasher::new();
            r.hash(&mut s);
            s.finish()
        };
        prop_assert_eq!(h(&flat), h(&m.rows));
        Ok(())
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
        /// Continue from an older version (a restore, or a second branch).
        From(usize),
        /// Retire a live row outside the ops (`retire-parents-first` does so with parents).
        RetireEarly(usize, u64),
        /// Every reshape's parents retired at once, as `retire-parents-first` builds its half map.
        HalfRetire,
        /// A retired row live again (an older map's row, inserted over it).
        Unretire(usize),
        /// A row dropped (a map whose lineage lost a row).
        Drop(usize),
        /// The same table rebuilt apart: another lineage copy, equal contents.
        Rebuild,
        /// A live row's epoch or bounds changed in place.
        Tweak(usize, u8),
        /// A whole split (owned, begun, paused, committed), one version per op.
        FullSplit(usize, u8),
        /// A whole merge of two neighbours, one version per op.
        FullMerge(usize),
    }

    /// The steps `s` stands for (a whole split or merge is several).
    fn expand(s: &Step) -> Vec<Step> {
        match *s {
            Step::FullSplit(i, b) => vec![Step::Assign(i, 1), Step::Activate(i), Step::Split(i, b), Step::PauseReshape(i), Step::EndReshape(i, true)],
            Step::FullMerge(i) => vec![Step::Assign(i, 1), Step::Activate(i), Step::Assign(i + 1, 2), Step::Activate(i + 1), Step::Merge(i), Step::PauseReshape(i), Step::EndReshape(i, true)],
            ref s => vec![s.clone()],
        }
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (0..16usize, 1..5u32).prop_map(|(r, s)| Step::Assign(r, s)),
            3 => (0..16usize).prop_map(Step::Activate),
            4 => (0..16usize, any::<u8>()).prop_map(|(r, b)| Step::Split(r, b)),
            3 => (0..16usize).prop_map(Step::Merge),
            4 => (0..16usize).prop_map(Step::PauseReshape),
            4 => (0..16usize, any::<bool>()).prop_map(|(r, b)| Step::EndReshape(r, b)),
            2 => (0..16usize, 1..5u32).prop_map(|(r, s)| Step::BeginMove(r, s)),
            2 => (0..16usize).prop_map(Step::PauseMove),
            2 => (0..16usize).prop_map(Step::CommitMove),
            1 => (0..16usize).prop_map(Step::AbortMove),
            2 => (0..64usize).prop_map(Step::From),
            1 => (0..16usize, 0..4u64).prop_map(|(r, s)| Step::RetireEarly(r, s)),
            1 => Just(Step::HalfRetire),
            1 => (0..16usize).prop_map(Step::Unretire),
            1 => (0..16usize).prop_map(Step::Drop),
            1 => Just(Step::Rebuild),
            1 => (0..16usize, 0..3u8).prop_map(|(r, f)| Step::Tweak(r, f)),
            4 => (0..16usize, any::<u8>()).prop_map(|(r, b)| Step::FullSplit(r, b)),
            3 => (0..16usize).prop_map(Step::FullMerge),
        ]
    }

    /// The next version from `map` by `s` (`None`: the step does not apply; `Some(Err(i))`:
    /// continue from version `i` instead of making one).
    fn next_of(map: &PartitionMap, s: &Step, versions: usize) -> Option<Result<PartitionMap, usize>> {
        let live: Vec<RangeRow> = map.live_rows().into_iter().cloned().collect();
        let retired: Vec<RangeId> = map.rows.retired().keys().copied().collect();
        let all: Vec<RangeId> = map.rows.values().map(|r| r.id).collect();
        let pick = |i: usize| live.get(i % live.len().max(1));
        let op = match *s {
            Step::FullSplit(..) | Step::FullMerge(_) => unreachable!("expanded"),
            Step::From(i) => return Some(Err(i % versions)),
            Step::RetireEarly(i, sealed) => {
                let mut m = map.clone();
                m.rows.retire(&pick(i)?.id, sealed)?;
                m.version += 1;
                return Some(Ok(m));
            }
            Step::HalfRetire => {
                let mut m = map.clone();
                let parents: Vec<RangeId> = m.reshapes.values().flat_map(|r| r.parents.iter().map(|(p, _)| *p)).collect();
                if parents.is_empty() {
                    return None;
                }
                for p in parents {
                    m.rows.retire(&p, 0);
                }
                m.version += 1;
                return Some(Ok(m));
            }
            Step::Unretire(i) => {
                let id = *retired.get(i % retired.len().max(1))?;
                let mut m = map.clone();
                let mut row = m.rows[&id].clone();
                row.state = RangeState::Active;
                row.sealed = 0;
                m.rows.insert(id, row);
                m.version += 1;
                return Some(Ok(m));
            }
            Step::Drop(i) => {
                let id = *all.get(i % all.len().max(1))?;
                let mut m = map.clone();
                m.rows = rebuilt(&map.rows, |r| r.id != id);
                m.version += 1;
                return Some(Ok(m));
            }
            Step::Rebuild => {
                let mut m = map.clone();
                m.rows = rebuilt(&map.rows, |_| true);
                return Some(Ok(m));
            }
            Step::Tweak(i, f) => {
                let id = pick(i)?.id;
                let mut m = map.clone();
                // (A new epoch from the counter: the ops assert that epochs only grow.)
                m.last_epoch += 1;
                let epoch = Epoch(m.last_epoch);
                let row = m.rows.get_mut(&id)?;
                match f {
                    0 => row.epoch = epoch,
                    1 => row.start.push(b'x'),
                    _ => row.end = None,
                }
                m.version += 1;
                return Some(Ok(m));
            }
            Step::Assign(i, srv) => MapOp::Assign { range: pick(i)?.id, owner: ServerId(srv), owner_session: 1 },
            Step::Activate(i) => MapOp::Activate { range: pick(i)?.id, epoch: pick(i)?.epoch },
            Step::Split(i, b) => {
                let row = pick(i)?;
                let mut at = row.start.clone();
                at.push(b);
                MapOp::BeginSplit { range: row.id, at, owners: [(ServerId(1), 1), (ServerId(2), 1)] }
            }
            Step::Merge(i) => {
                let (j, k) = (i % live.len().max(1), (i + 1) % live.len().max(1));
                MapOp::BeginMerge { left: live.get(j)?.id, right: live.get(k)?.id, owner: (ServerId(3), 1) }
            }
            Step::PauseReshape(i) => MapOp::PauseReshape { first: pick(i)?.id },
            Step::EndReshape(i, commit) => {
                let first = pick(i)?.id;
                let parents = map.reshapes.get(&first).map_or(1, |r| r.parents.len());
                if commit {
                    MapOp::CommitReshape { first, sealed: vec![3; parents], born_ms: 7 }
                } else {
                    MapOp::AbortReshape { first, error: "test".into() }
                }
            }
            Step::BeginMove(i, srv) => MapOp::BeginMove { range: pick(i)?.id, to: (ServerId(srv), 1), strategy: MoveStrategy::PreCopy },
            Step::PauseMove(i) => MapOp::PauseMove { range: pick(i)?.id },
            Step::CommitMove(i) => MapOp::CommitMove { range: pick(i)?.id },
            Step::AbortMove(i) => MapOp::AbortMove { range: pick(i)?.id, error: "test".into() },
        };
        let mut m = map.clone();
        // (`apply_batch` asserts the tiling in debug builds: a map made irregular above may
        // not tile, so its ops are skipped then.)
        if m.check_tiling().is_err() {
            return None;
        }
        m.apply_batch(&[op]).ok()?;
        Some(Ok(m))
    }

    fn boot() -> PartitionMap {
        let mut map = PartitionMap::default();
        map.apply_batch(&[MapOp::Bootstrap { split_points: vec![b"d".to_vec(), b"k".to_vec(), b"s".to_vec()] }]).unwrap();
        map
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn map_diff_agrees_with_the_whole_table_walk(steps in proptest::collection::vec(step(), 1..120), pairs in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..24)) {
            // Every version stays alive, so versions share lineage copies as in a history.
            let mut versions = vec![PartitionMap::default(), boot()];
            let mut cur = 1;
            for s in steps.iter().flat_map(expand) {
                match next_of(&versions[cur], &s, versions.len()) {
                    None => {}
                    Some(Err(i)) => cur = i,
                    Some(Ok(m)) => {
                        versions.push(m);
                        cur = versions.len() - 1;
                    }
                }
            }
            for (i, m) in versions.iter().enumerate() {
                check_map(m)?;
                check_pair(None, m)?;
                check_pair(Some(m), m)?;
                if i > 0 {
                    check_pair(Some(&versions[i - 1]), m)?;
                    check_pair(Some(m), &versions[i - 1])?;
                }
                let copy = m.clone();
                check_pair(Some(m), &copy)?;
            }
            for (a, b) in &pairs {
                let (a, b) = (&versions[a.index(versions.len())], &versions[b.index(versions.len())]);
                check_pair(Some(a), b)?;
            }
        }
    }
}
