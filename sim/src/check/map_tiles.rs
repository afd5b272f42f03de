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
