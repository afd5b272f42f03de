//! `map_tiles` (always): after every committed map mutation the non-retired rows tile the key
//! space (no gap, no overlap, first starts at the empty key, last unbounded), the version grows,
//! and no range's epoch goes down. Read from the authority's `map_row` / `map_commit` events, so a
//! mutation that retires a parent before its children exist (HBASE-5986) shows up as a gap.

use super::secs;
use crate::events::Event;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
struct Row {
    start: String,
    end: String,
    epoch: u64,
    state: String,
}

/// Keys render as printable text (`show_key`); `""` is the empty key and `~` unbounded.
fn key_lt(a: &str, b: &str) -> bool {
    let norm = |s: &str| if s == "\"\"" { String::new() } else { s.to_string() };
    norm(a) < norm(b)
}

/// Check the map after every commit. Errors: the first bad commit, with the offending rows.
pub fn check(events: &[Event]) -> Result<(), String> {
    let mut pending: BTreeMap<u64, Row> = BTreeMap::new();
    let mut last_version = 0;
    let mut last_epochs: BTreeMap<u64, u64> = BTreeMap::new();
    for (_, ev) in events.iter().enumerate().filter(|(_, e)| e.kind == "map_row" || e.kind == "map_commit") {
        if ev.kind == "map_row" {
            let row = Row { start: ev.s("start").into(), end: ev.s("end").into(), epoch: ev.u("epoch"), state: ev.s("state").into() };
            pending.insert(ev.u("range"), row);
            continue;
        }
        let version = ev.u("version");
        let at = secs(ev.t_us);
        if version <= last_version {
            return Err(format!("map version went from {last_version} to {version} at {at}"));
        }
        last_version = version;
        for (range, row) in &pending {
            if let Some(&old) = last_epochs.get(range) {
                if row.epoch < old {
                    return Err(format!("epoch of r{range} went down from {old} to {} at version {version} ({at})", row.epoch));
                }
            }
            last_epochs.insert(*range, row.epoch);
        }
        let mut live: Vec<(&u64, &Row)> = pending.iter().filter(|(_, r)| r.state != "retired").collect();
        live.sort_by(|a, b| if key_lt(&a.1.start, &b.1.start) { std::cmp::Ordering::Less } else if key_lt(&b.1.start, &a.1.start) { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Equal });
        let describe = |(id, r): &(&u64, &Row)| format!("r{id}[{}, {})", r.start, r.end);
        let mut expect_start = "\"\"".to_string();
        for (i, item) in live.iter().enumerate() {
            let row = item.1;
            if row.start != expect_start {
                let prev = if i == 0 { "the start of the key space".to_string() } else { describe(&live[i - 1]) };
                let what = if key_lt(&expect_start, &row.start) { "gap" } else { "overlap" };
                return Err(format!("{what} at version {version} ({at}): {} follows {prev}", describe(item)));
            }
            expect_start = row.end.clone();
        }
        if !live.is_empty() && expect_start != "~" {
            return Err(format!("gap at version {version} ({at}): nothing covers [{expect_start}, unbounded)"));
        }
        pending.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Val;

    fn row(range: u64, start: &str, end: &str, epoch: u64, state: &str) -> Event {
        Event {
            t_us: 1,
            kind: "map_row".into(),
            fields: vec![("range", Val::U(range)), ("start", Val::S(start.into())), ("end", Val::S(end.into())), ("epoch", Val::U(epoch)), ("state", Val::S(state.into()))],
        }
    }

    fn commit(version: u64) -> Event {
        Event { t_us: 2, kind: "map_commit".into(), fields: vec![("version", Val::U(version))] }
    }

    #[test]
    fn map_tiles_accepts_a_tiling() {
        let evs = vec![row(1, "\"\"", "k5", 1, "active"), row(2, "k5", "~", 2, "active"), commit(1)];
        check(&evs).unwrap();
    }

    #[test]
    fn map_tiles_flags_a_gap_from_an_early_retire() {
        let evs = vec![row(1, "\"\"", "k5", 1, "active"), row(2, "k5", "~", 2, "retired"), commit(1)];
        assert!(check(&evs).unwrap_err().starts_with("gap"));
    }

    #[test]
    fn map_tiles_flags_an_overlap_and_a_falling_epoch() {
        let evs = vec![row(1, "\"\"", "k5", 1, "active"), row(2, "k3", "~", 2, "active"), commit(1)];
        assert!(check(&evs).unwrap_err().starts_with("overlap"));
        let evs = vec![row(1, "\"\"", "~", 3, "active"), commit(1), row(1, "\"\"", "~", 2, "active"), commit(2)];
        assert!(check(&evs).unwrap_err().contains("went down"));
    }
}
