//! `map_tiles` (always): every map version that was ever durable at the authority, or current
//! at it, tiles the key space: its live (non-retired) rows leave no gap and no overlap, the first
//! starts at the empty key, the last is unbounded, and there is at least one (only version 0,
//! before the bootstrap, is empty). Its journal names only live rows (issue 19). Versions only
//! grow, and no range's epoch goes down.
//!
//! Two views, both judged (issue 12):
//! - **durable**: the authority's log, replayed after the run. Every `Map` record in it is a
//!   version the system may restore, whether or not any event announced it (a torn write can
//!   keep the record of a commit whose answer never left). Each announced commit must be in it.
//! - **announced**: the maps of `map_commit` and `map_restored` events, in time order.
//!
//! A mutation that retires a parent before its children exist (HBASE-5986) shows up as a gap, or
//! as an empty map when it retires the only range.

use super::{secs, Violation};
use super::index::{MapDiff, Maps};
use crate::events::{Event, Sys, What};
use partmap::lock::LockRecord;
use partmap::map::{PartitionMap, SharedMap};
use std::collections::BTreeMap;

/// Whether `map`'s live rows tile the key space, with at least one live row in every version
/// past 0 (the authority refuses any op before the bootstrap: an operator's drain committed to
/// the empty map was a bug, seeds 622 and 1415 of swarm.json, `drain-before-bootstrap.json`),
/// and its journal names only live rows (see [`journal_live`]).
///
/// Errors: the gap, overlap, backwards row, emptiness or journal entry, in words.
pub fn tiles(map: &PartitionMap) -> Result<(), String> {
    if map.version > 0 && map.live_rows().is_empty() {
        return Err("no live rows: nothing covers the key space".to_string());
    }
    map.check_tiling()?;
    journal_live(map)
}

/// Whether every entry of `map`'s journal names live rows: a move's range, and each parent of
/// a split or merge, is a row of the map and not retired. A split or merge retires its parents
/// in the commit that ends it, and a range in flight is never picked for another move, split or
/// merge, so a move of a retired range is one that began on a parent of a split or merge in
/// flight (issue 19, mutation `map-forgets-reshapes`): it can never finish, and it holds one of
/// `moves.max_concurrent` places forever.
///
/// Errors: the first entry naming a retired or unknown row.
pub fn journal_live(map: &PartitionMap) -> Result<(), String> {
    let live = |r: &partmap::ids::RangeId| map.rows.get(r).is_some_and(|row| row.state != partmap::map::RangeState::Retired);
    if let Some(t) = map.transfers.values().find(|t| !live(&t.range)) {
        return Err(format!("the journal holds a move of {} to {}, which is retired", t.range, t.to.0));
    }
    for r in map.reshapes.values() {
        if let Some((p, _)) = r.parents.iter().find(|(p, _)| !live(p)) {
            let kind = if r.kind == partmap::map::ReshapeKind::Split { "split" } else { "merge" };
            return Err(format!("the journal holds a {kind} of {p}, which is retired"));
        }
    }
    Ok(())
}

/// Versions and epochs only grow across a sequence of maps. `last` holds the previous version
/// and every range's last epoch; only the rows `diff` says changed are read (an unchanged row
/// has the epoch `last` took from the previous map). `at` says where, for messages.
fn grows(map: &PartitionMap, diff: &MapDiff<'_>, last: &mut (u64, BTreeMap<u64, u64>), allow_equal: bool, at: &dyn Fn() -> String) -> Result<(), String> {
    let v = map.version;
    if v < last.0 || (v == last.0 && !allow_equal && v > 0) {
        return Err(format!("map version went from {} to {v} ({})", last.0, at()));
    }
    last.0 = v;
    for row in &diff.rows {
        if let Some(&old) = last.1.get(&row.id.0) {
            if row.epoch.0 < old {
                return Err(format!("epoch of {} went down from {old} to {} at version {v} ({})", row.id, row.epoch.0, at()));
            }
        }
        last.1.insert(row.id.0, row.epoch.0);
    }
    Ok(())
}

/// [`tiles`] of a map whose previous one in its sequence tiled: the full check only when
/// `diff` says the live rows' bounds may have changed, else only the journal.
fn still_tiles(map: &PartitionMap, diff: &MapDiff<'_>) -> Result<(), String> {
    if diff.tiling_changed {
        tiles(map)
    } else {
        journal_live(map)
    }
}

/// The announced view: every `map_commit` and `map_restored` map, in order. A restored map may
/// repeat the last version (it is the same one), never go below it.
///
/// Errors: the first bad version, with its time and the offending rows.
pub fn check_announced(events: &[Event]) -> Result<(), Violation> {
    check_announced_indexed(&Maps::of(events))
}

/// [`check_announced`] over the history's maps diffed once for every checker.
pub fn check_announced_indexed(maps: &Maps<'_>) -> Result<(), Violation> {
    let mut last = (0, BTreeMap::new());
    for step in &maps.steps {
        let (map, restored) = (step.map, step.restored);
        let at = || format!("{} at {}", if restored { "restored" } else { "committed" }, secs(step.t_us));
        let cite = |e: String| Violation::new(e).at(step.t_us).version(map.version);
        grows(map, &step.diff, &mut last, restored, &at).map_err(cite)?;
        still_tiles(map, &step.diff).map_err(|e| cite(format!("version {} ({}): {e}", map.version, at())))?;
    }
    Ok(())
}

/// The durable view: every `Map` record of the authority's log `durable` (replayed after the
/// run), in log order, against the history `events`:
/// - each record tiles, and versions and epochs grow along the log;
/// - every announced commit is a record of the log, equal;
/// - a record no commit announced is explained only by a crash of lock-1 that cut off its
///   announcement: it must be the last map record before the log length a recovery found;
/// - every map a recovery restored equals the last map record before that length.
///
/// Errors: the first bad record (by its index in the log), announced commit or restore.
pub fn check_durable(durable: &[LockRecord], events: &[Event]) -> Result<(), Violation> {
    check_durable_indexed(durable, events, &Maps::of(events))
}

/// [`check_durable`] with the history's maps diffed once (`maps`, of `events`): a log record
/// that is the very copy a commit announced, after the copy announced before it, takes that
/// diff instead of diffing again.
pub fn check_durable_indexed(durable: &[LockRecord], events: &[Event], maps: &Maps<'_>) -> Result<(), Violation> {
    let by_version = durable_log_grows(durable, maps)?;
    let (announced, recoveries) = announced_and_restored_in_log(durable, events, &by_version)?;
    let cut_off: std::collections::BTreeSet<usize> = recoveries.iter().filter_map(|n| last_map_before(durable, *n)).collect();
    for (i, rec) in durable.iter().enumerate() {
        let LockRecord::Map { map, .. } = rec else { continue };
        let was_announced = announced.get(&map.version).is_some_and(|a| a.contains(&map));
        if !was_announced && !cut_off.contains(&i) {
            return Err(Violation::new(format!(
                "durable record {i} of lock-1 holds map version {} that no commit announced, and no crash of lock-1 cut off its announcement (a write the authority refused or never finished)",
                map.version
            ))
            .version(map.version));
        }
    }
    Ok(())
}

/// Every `Map` record of `durable` tiles and versions and epochs grow along the log. Returns
/// the records by version. A record that is the very copy a commit announced, after the copy
/// announced before it, takes that diff from `maps` instead of diffing again.
fn durable_log_grows<'d>(durable: &'d [LockRecord], maps: &Maps<'_>) -> Result<BTreeMap<u64, &'d SharedMap>, Violation> {
    let mut last = (0, BTreeMap::new());
    let mut by_version: BTreeMap<u64, &SharedMap> = BTreeMap::new();
    let mut prev: Option<&PartitionMap> = None;
    for (i, rec) in durable.iter().enumerate() {
        let LockRecord::Map { map, .. } = rec else { continue };
        let at = || format!("durable record {i} of lock-1");
        let own;
        let diff = match maps.diff_of(prev, map) {
            Some(d) => d,
            None => {
                own = MapDiff::between(prev, map);
                &own
            }
        };
        grows(map, diff, &mut last, false, &at).map_err(|e| Violation::new(e).version(map.version))?;
        still_tiles(map, diff).map_err(|e| Violation::new(format!("version {} ({}): {e}", map.version, at())).version(map.version))?;
        by_version.insert(map.version, map);
        prev = Some(map);
    }
    Ok(by_version)
}

/// The index of the last map record before log length `n` (what a recovery that found `n`
/// records restores).
fn last_map_before(durable: &[LockRecord], n: usize) -> Option<usize> {
    durable[..n.min(durable.len())].iter().rposition(|r| matches!(r, LockRecord::Map { .. }))
}

/// The announced maps by version (a version announced twice keeps both), and the log lengths
/// lock-1's recoveries found, in history order.
type Announced<'e> = (BTreeMap<u64, Vec<&'e SharedMap>>, Vec<usize>);

/// Every commit `events` announce is the durable record of its version (`by_version`), and
/// every map a recovery restored is the last map record before the length it found. Maps
/// compare as shared copies: the same copy is equal at once, another one row by row.
fn announced_and_restored_in_log<'e>(durable: &[LockRecord], events: &'e [Event], by_version: &BTreeMap<u64, &SharedMap>) -> Result<Announced<'e>, Violation> {
    let mut announced: BTreeMap<u64, Vec<&SharedMap>> = BTreeMap::new();
    let mut recoveries: Vec<usize> = Vec::new();
    let mut found: Option<usize> = None;
    let none = SharedMap::default();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::MapCommit { map, .. }) => {
                match by_version.get(&map.version) {
                    Some(d) if *d == map => {}
                    Some(_) => return Err(Violation::new(format!("version {} announced at {} differs from the durable record of that version", map.version, secs(ev.t_us))).at(ev.t_us).version(map.version)),
                    None => return Err(Violation::new(format!("version {} announced at {} is not in the authority's durable log", map.version, secs(ev.t_us))).at(ev.t_us).version(map.version)),
                }
                announced.entry(map.version).or_default().push(map);
            }
            What::Sys(Sys::Recovered { node: "lock-1", records }) => {
                recoveries.push(*records);
                found = Some(*records);
            }
            What::Sys(Sys::MapRestored { map, .. }) => {
                let n = found.take().unwrap_or(0);
                let expected = match last_map_before(durable, n) {
                    Some(i) => match &durable[i] {
                        LockRecord::Map { map, .. } => map,
                        _ => unreachable!("a map record"),
                    },
                    None => &none,
                };
                if map != expected {
                    return Err(Violation::new(format!("the map restored at {} (version {}) is not the last map record of the {n} records lock-1 recovered (version {})", secs(ev.t_us), map.version, expected.version)).at(ev.t_us).version(map.version));
                }
            }
            _ => {}
        }
    }
    Ok((announced, recoveries))
}

/// How many durable map versions no `map_commit` announced (each was judged all the same).
pub fn unannounced(durable: &[LockRecord], events: &[Event]) -> u64 {
    let announced: std::collections::BTreeSet<u64> = events
        .iter()
        .filter_map(|e| match &e.what {
            What::Sys(Sys::MapCommit { map, .. }) => Some(map.version),
            _ => None,
        })
        .collect();
    durable.iter().filter(|r| matches!(r, LockRecord::Map { map, .. } if !announced.contains(&map.version))).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::{at, commit, map_of, restored};

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
