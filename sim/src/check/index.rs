//! What the checkers share, built once per run (issue 13): the clients' appends and reads from
//! one pass over the history ([`Clients`]), each key's final content parsed once ([`Finals`]: a
//! key whose served and stored contents are the same bytes is parsed once for both views), and
//! the announced maps each diffed once against the one before ([`Maps`]), so that the checkers
//! that follow the maps (`single_writer`, `map_tiles`) judge only what each version changed.

use crate::events::{Event, Outcome, Sys, What};
use partmap::map::{PartitionMap, RangeRow, RangeState, Reshape, Transfer};
use crate::workload::{content_hash, parse_content, ContentHasher};
use partmap::event::ClientOp;
use partmap::ids::{Key, OpId};
use std::collections::{BTreeMap, HashMap};

/// One client append: its key, when it was invoked and completed, and how.
#[derive(Clone, Copy, Debug)]
pub struct Append<'a> {
    /// The key appended to.
    pub key: &'a Key,
    /// Invocation time, µs of simulated time.
    pub invoke_us: u64,
    /// Completion time, if it completed.
    pub complete_us: Option<u64>,
    /// Its outcome, if it completed.
    pub outcome: Option<Outcome>,
}

/// One successful client read.
#[derive(Clone, Copy, Debug)]
pub struct Read<'a> {
    /// The read's id.
    pub id: OpId,
    /// The key read.
    pub key: &'a Key,
    /// Invocation time, µs (0 if the history has no invocation for it).
    pub invoke_us: u64,
    /// The staleness bound, µs (0: a strong read).
    pub bound_us: u64,
    /// When it was answered, µs.
    pub answered_us: u64,
    /// Length of the content it returned, bytes.
    pub len: u64,
    /// [`content_hash`] of the content it returned.
    pub hash: u64,
}

/// The clients' operations of one history, indexed once.
#[derive(Default)]
pub struct Clients<'a> {
    /// Every append, by id.
    pub appends: BTreeMap<OpId, Append<'a>>,
    /// Append ids per key, in id order.
    pub appends_by_key: BTreeMap<&'a [u8], Vec<OpId>>,
    /// Acknowledged appends per key: (completion time, id), in completion (history) order.
    pub acked: BTreeMap<&'a [u8], Vec<(u64, OpId)>>,
    /// Completions of appends with no invocation before them, in history order, with their key.
    pub orphans: Vec<(OpId, &'a Key)>,
    /// Successful reads, in history order.
    pub reads: Vec<Read<'a>>,
}

impl<'a> Clients<'a> {
    /// One pass over `events`.
    pub fn of(events: &'a [Event]) -> Clients<'a> {
        let mut c = Clients::default();
        let mut read_invoked: HashMap<OpId, (u64, u64)> = HashMap::new();
        for ev in events {
            match &ev.what {
                What::Invoke { op: ClientOp::Append, id, key, .. } => {
                    c.appends.insert(*id, Append { key, invoke_us: ev.t_us, complete_us: None, outcome: None });
                }
                What::Invoke { op: ClientOp::Read, id, bound_ms, .. } => {
                    read_invoked.insert(*id, (ev.t_us, bound_ms.unwrap_or(0) * 1000));
                }
                What::Complete { op: ClientOp::Append, id, outcome, key, .. } => {
                    match c.appends.get_mut(id) {
                        Some(op) => {
                            op.complete_us = Some(ev.t_us);
                            op.outcome = Some(*outcome);
                        }
                        None => c.orphans.push((*id, key)),
                    }
                    if *outcome == Outcome::Ok {
                        c.acked.entry(key.as_slice()).or_default().push((ev.t_us, *id));
                    }
                }
                What::Complete { op: ClientOp::Read, id, key, outcome: Outcome::Ok, value_len, value_hash, .. } => {
                    let (invoke_us, bound_us) = read_invoked.get(id).copied().unwrap_or((0, 0));
                    c.reads.push(Read { id: *id, key, invoke_us, bound_us, answered_us: ev.t_us, len: *value_len, hash: *value_hash });
                }
                _ => {}
            }
        }
        for (id, op) in &c.appends {
            c.appends_by_key.entry(op.key.as_slice()).or_default().push(*id);
        }
        c
    }
}

/// One key's final content, parsed.
#[derive(Debug)]
pub struct KeyContent {
    /// The records' ids, in content order.
    pub ids: Vec<OpId>,
    /// (end, hash) of every record-boundary prefix, the empty one first: ends strictly grow.
    pub prefixes: Vec<(u64, u64)>,
    /// Where each append's record ends (its last occurrence).
    pub end_of: HashMap<OpId, u64>,
}

impl KeyContent {
    /// Parse `content`. Errors: a malformed record, in words.
    pub fn parse(content: &[u8]) -> Result<KeyContent, String> {
        let ids = parse_content(content)?;
        let mut prefixes = Vec::with_capacity(ids.len() + 1);
        prefixes.push((0, content_hash(&[])));
        let mut end_of = HashMap::with_capacity(ids.len());
        let (mut end, mut hash) = (0usize, ContentHasher::new());
        for (id, piece) in ids.iter().zip(content.split_inclusive(|b| *b == b';')) {
            end += piece.len();
            hash.extend(piece);
            prefixes.push((end as u64, hash.finish()));
            end_of.insert(*id, end as u64);
        }
        Ok(KeyContent { ids, prefixes, end_of })
    }

    /// Whether `(len, hash)` is a record-boundary prefix of the content.
    pub fn has_prefix(&self, len: u64, hash: u64) -> bool {
        self.prefixes.binary_search_by_key(&len, |p| p.0).is_ok_and(|i| self.prefixes[i].1 == hash)
    }

    /// The content of a key with none.
    pub fn empty() -> KeyContent {
        KeyContent { ids: Vec::new(), prefixes: vec![(0, content_hash(&[]))], end_of: HashMap::new() }
    }
}

/// The final contents of one run's views, each key parsed once: [`Finals::view`] gives a view's
/// key → parsed content.
pub struct Finals<'a> {
    parsed: Vec<Result<KeyContent, String>>,
    views: Vec<BTreeMap<&'a [u8], usize>>,
}

/// One view of [`Finals`]: key → parsed content (or the parse error).
pub struct View<'f, 'a> {
    finals: &'f Finals<'a>,
    keys: &'f BTreeMap<&'a [u8], usize>,
}

impl<'f, 'a> View<'f, 'a> {
    /// The keys of this view with their parsed contents, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'f Result<KeyContent, String>)> + '_ {
        self.keys.iter().map(|(k, i)| (*k, &self.finals.parsed[*i]))
    }

    /// The parsed content of `key`, if the view has it.
    pub fn get(&self, key: &[u8]) -> Option<&'f Result<KeyContent, String>> {
        self.keys.get(key).map(|i| &self.finals.parsed[*i])
    }
}

impl<'a> Finals<'a> {
    /// Parse every key of `contents` (the views, in order); a key whose bytes equal the same
    /// key's in an earlier view reuses that parse.
    pub fn of(contents: &[&'a BTreeMap<Key, Vec<u8>>]) -> Finals<'a> {
        let mut f = Finals { parsed: Vec::new(), views: Vec::new() };
        for (v, content) in contents.iter().enumerate() {
            let mut keys = BTreeMap::new();
            for (key, bytes) in content.iter() {
                let same = contents[..v].iter().zip(&f.views).find_map(|(earlier, idx)| (earlier.get(key) == Some(bytes)).then(|| idx[key.as_slice()]));
                let i = same.unwrap_or_else(|| {
                    f.parsed.push(KeyContent::parse(bytes));
                    f.parsed.len() - 1
                });
                keys.insert(key.as_slice(), i);
            }
            f.views.push(keys);
        }
        f
    }

    /// Whether views `a` and `b` hold `key` with the same bytes (parsed once for both): a
    /// checker that judged the key in one view finds the same in the other.
    pub fn same_in(&self, a: usize, b: usize, key: &[u8]) -> bool {
        match (self.views[a].get(key), self.views[b].get(key)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// View number `n` (in the order given to [`Finals::of`]).
    pub fn view(&self, n: usize) -> View<'_, 'a> {
        View { finals: self, keys: &self.views[n] }
    }
}

/// What one map version changed against the map before it in the same sequence (the history's
/// announced maps, or the authority's durable log): the checkers that follow a sequence of maps
/// judge only these (issue 13), since everything else is as the previous map had it.
#[derive(Debug, Default)]
pub struct MapDiff<'a> {
    /// Rows that are new or differ from the previous map's row of the same id, in id order
    /// (every row, for the first map).
    pub rows: Vec<&'a RangeRow>,
    /// Whether some row of the previous map is missing from this one (a restored older map).
    pub rows_removed: bool,
    /// Split and merge journal entries that are new or changed, in key order.
    pub reshapes: Vec<&'a Reshape>,
    /// Move journal entries that are new or changed, in key order.
    pub transfers: Vec<&'a Transfer>,
    /// Whether the live rows' bounds may differ from the previous map's: some row was added or
    /// removed, or changed its bounds or went to or from `Retired`; always true for the first
    /// map and after version 0. A map whose live bounds are the previous map's tiles exactly
    /// when that one did.
    pub tiling_changed: bool,
}

/// Calls `on` with every entry of `next` that is new or differs from `prev`'s under the same
/// key (with `prev`'s entry, if any), in key order; returns whether some key of `prev` is
/// missing from `next`. One merge walk over both.
fn changed<'p, 'a, K: Ord, V: PartialEq>(prev: &'p BTreeMap<K, V>, next: &'a BTreeMap<K, V>, mut on: impl FnMut(Option<&'p V>, &'a V)) -> bool {
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

impl<'a> MapDiff<'a> {
    /// What `next` changed against `prev` (`None`: `next` is the first map of its sequence).
    pub fn between(prev: Option<&PartitionMap>, next: &'a PartitionMap) -> MapDiff<'a> {
        let empty = PartitionMap::default();
        let old = prev.unwrap_or(&empty);
        let mut d = MapDiff { tiling_changed: prev.is_none_or(|p| p.version == 0), ..MapDiff::default() };
        let retired = |r: &RangeRow| r.state == RangeState::Retired;
        let mut tiling_changed = false;
        d.rows_removed = changed(&old.rows, &next.rows, |before, row| {
            d.rows.push(row);
            tiling_changed |= before.is_none_or(|b| b.start != row.start || b.end != row.end || retired(b) != retired(row));
        });
        d.tiling_changed |= tiling_changed || d.rows_removed;
        changed(&old.reshapes, &next.reshapes, |_, r| d.reshapes.push(r));
        changed(&old.transfers, &next.transfers, |_, t| d.transfers.push(t));
        d
    }
}

/// One map the history announces (a `map_commit` or `map_restored` event), with what it
/// changed against the announced map before it.
#[derive(Debug)]
pub struct MapStep<'a> {
    /// When, µs of simulated time.
    pub t_us: u64,
    /// The map.
    pub map: &'a PartitionMap,
    /// `true` for `map_restored`, `false` for `map_commit`.
    pub restored: bool,
    /// What it changed.
    pub diff: MapDiff<'a>,
}

/// The announced maps of one history, in history order, each diffed against the one before
/// it once, for every checker that follows them.
#[derive(Debug, Default)]
pub struct Maps<'a> {
    /// One step per `map_commit` and `map_restored` event, in history order.
    pub steps: Vec<MapStep<'a>>,
    /// The first step of each map copy (by address: versions are shared copies).
    by_copy: HashMap<*const PartitionMap, usize>,
}

impl<'a> Maps<'a> {
    /// One pass over `events`.
    pub fn of(events: &'a [Event]) -> Maps<'a> {
        let mut steps: Vec<MapStep<'a>> = Vec::new();
        for ev in events {
            let (map, restored) = match &ev.what {
                What::Sys(Sys::MapCommit { map, .. }) => (map, false),
                What::Sys(Sys::MapRestored { map, .. }) => (map, true),
                _ => continue,
            };
            let diff = MapDiff::between(steps.last().map(|s| s.map), map);
            steps.push(MapStep { t_us: ev.t_us, map, restored, diff });
        }
        let mut by_copy = HashMap::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            by_copy.entry(s.map as *const PartitionMap).or_insert(i);
        }
        Maps { steps, by_copy }
    }

    /// The diff already made of the very copy `next` against the very copy `prev` (the
    /// authority's durable log holds the copies its commits announced), if the history has
    /// them one after the other.
    pub fn diff_of(&self, prev: Option<&PartitionMap>, next: &PartitionMap) -> Option<&MapDiff<'a>> {
        let &i = self.by_copy.get(&(next as *const PartitionMap))?;
        let before = i.checked_sub(1).map(|j| self.steps[j].map);
        let same = match (before, prev) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        };
        same.then(|| &self.steps[i].diff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::{commit, map_of, restored};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::{Strategy, TransferPhase};

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
        // An older map restored: rows 3 and 4 are gone.
        let d = MapDiff::between(Some(&s), &b);
        assert_eq!(ids(&d), vec![2]);
        assert!(d.rows_removed && d.tiling_changed);
        // After version 0 (the empty map before the bootstrap) the tiling is judged again.
        let empty = PartitionMap::default();
        let v1 = PartitionMap { version: 1, ..PartitionMap::default() };
        assert!(MapDiff::between(Some(&empty), &v1).tiling_changed);
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
