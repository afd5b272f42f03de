//! Reading the map (pure): the lookup of a key, the live rows in key order, the journal's
//! queries, and the tiling check every version must pass.

use super::{forget_reshapes_on, PartitionMap, RangeRow, RangeState, Reshape};
use crate::ids::{show_key, RangeId};

impl PartitionMap {
    /// The reshape in the journal that involves `range` as a parent, keyed by its first parent.
    /// Always `None` under mutation `map-forgets-reshapes` (see [`forget_reshapes`](super::forget_reshapes)).
    pub fn reshape_of(&self, range: RangeId) -> Option<&Reshape> {
        if forget_reshapes_on() {
            return None;
        }
        self.reshapes.values().find(|r| r.parents.iter().any(|(p, _)| *p == range))
    }

    /// Whether `range` is in any journal entry (move, split or merge).
    pub fn in_flight(&self, range: RangeId) -> bool {
        self.transfers.contains_key(&range) || self.reshape_of(range).is_some()
    }

    /// The non-retired rows in key order.
    pub fn live_rows(&self) -> Vec<&RangeRow> {
        // (The filter holds only if a caller set `Retired` through `Rows::get_mut`.)
        let mut rows: Vec<&RangeRow> = self.rows.live().values().map(|r| &**r).filter(|r| r.state != RangeState::Retired).collect();
        rows.sort_by(|a, b| a.start.cmp(&b.start));
        rows
    }

    /// The non-retired row whose `[start, end)` holds `key`.
    pub fn lookup(&self, key: &[u8]) -> Option<&RangeRow> {
        self.rows.live().values().map(|r| &**r).find(|r| r.state != RangeState::Retired && r.contains(key))
    }

    /// Check that the non-retired rows tile the key space. An empty map tiles trivially.
    ///
    /// Errors: the first gap or overlap found, in key order, as a readable message.
    pub fn check_tiling(&self) -> Result<(), String> {
        let rows = self.live_rows();
        if let Some(r) = rows.iter().find(|r| r.end.as_ref().is_some_and(|e| *e <= r.start)) {
            return Err(format!("{} is empty or backwards: [{}, {})", r.id, show_key(&r.start), show_key(r.end.as_ref().expect("bounded"))));
        }
        let Some(first) = rows.first() else { return Ok(()) };
        if !first.start.is_empty() {
            return Err(format!("gap: nothing covers [\"\", {})", show_key(&first.start)));
        }
        for pair in rows.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            match &a.end {
                None => return Err(format!("overlap: {} is unbounded but {} starts at {}", a.id, b.id, show_key(&b.start))),
                Some(end) if end < &b.start => {
                    return Err(format!("gap: nothing covers [{}, {}) between {} and {}", show_key(end), show_key(&b.start), a.id, b.id))
                }
                Some(end) if end > &b.start => {
                    return Err(format!("overlap: {} ends at {} after {} starts at {}", a.id, show_key(end), b.id, show_key(&b.start)))
                }
                Some(_) => {}
            }
        }
        let last = rows.last().expect("non-empty");
        if let Some(end) = &last.end {
            return Err(format!("gap: nothing covers [{}, unbounded) after {}", show_key(end), last.id));
        }
        Ok(())
    }
}
