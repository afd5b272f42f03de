//! The rows of a map version (pure data): live rows and the shared lineage of retired ones.

use super::RangeRow;
use crate::ids::RangeId;
use super::RangeState;
use std::collections::BTreeMap;

/// The rows of a map, by range id: the live rows (any state but [`RangeState::Retired`]) and the
/// retired ones (the lineage of splits and merges), kept apart.
///
/// A retired row never changes again, and retired rows pile up as a run splits and merges, while
/// the live rows stay about as many as the ranges. So the retired rows are one copy shared by
/// every version that has the same ones (a new version copies the live rows and shares the
/// lineage; a commit that retires rows copies the lineage once), and whatever walks the live
/// rows (the lookup, the manager's plan, the tiling check, a diff of two versions) costs the
/// number of ranges, not the length of the run. Each row is shared too ([`SharedRow`]): a new
/// version copies pointers to the live rows and copies only the rows it changes, and two
/// versions' rows compare by address first. [`Rows::get`] and [`Rows::values`] still see every
/// row, in id order, as one table; the hash stands for the retired rows by a digest kept as they
/// retire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    live: BTreeMap<RangeId, SharedRow>,
    retired: std::sync::Arc<BTreeMap<RangeId, SharedRow>>,
    /// The retired rows' start and end keys, bytes in all (kept as they retire: they never
    /// change again).
    retired_key_bytes: u64,
    /// The wrapping sum of the retired rows' [`row_digest`]s (kept as they retire), which
    /// stands for them in the table's hash.
    retired_digest: u64,
}

/// One row as the versions of a map share it: a version that changes the row gets its own copy
/// (copy on write, [`Rows::get_mut`]); equal pointers mean the same row.
pub type SharedRow = std::sync::Arc<RangeRow>;

impl Rows {
    /// The row of `id`, live or retired.
    pub fn get(&self, id: &RangeId) -> Option<&RangeRow> {
        self.live.get(id).or_else(|| self.retired.get(id)).map(|r| &**r)
    }

    /// The live row of `id`, to change: this version's own copy of it (a retired row never
    /// changes: see [`Rows::retire`]).
    pub fn get_mut(&mut self, id: &RangeId) -> Option<&mut RangeRow> {
        self.live.get_mut(id).map(std::sync::Arc::make_mut)
    }

    /// Put `row` under `id`, among the retired rows if its state is `Retired`, else among the
    /// live ones (replacing a row of that id in either).
    pub fn insert(&mut self, id: RangeId, row: RangeRow) {
        if let Some(old) = self.retired.get(&id).cloned() {
            std::sync::Arc::make_mut(&mut self.retired).remove(&id);
            self.retired_key_bytes -= old.key_bytes();
            self.retired_digest = self.retired_digest.wrapping_sub(row_digest(&old));
        }
        if row.state == RangeState::Retired {
            self.live.remove(&id);
            self.keep_retired(id, SharedRow::new(row));
        } else {
            self.live.insert(id, SharedRow::new(row));
        }
    }

    /// Retire the live row of `id`: its state becomes `Retired`, its stream sealed at `sealed`
    /// records, and it moves to the lineage. Returns it, or `None` if `id` has no live row.
    pub fn retire(&mut self, id: &RangeId, sealed: u64) -> Option<&RangeRow> {
        let mut shared = self.live.remove(id)?;
        let row = std::sync::Arc::make_mut(&mut shared);
        row.state = RangeState::Retired;
        row.sealed = sealed;
        Some(self.keep_retired(*id, shared))
    }

    /// Add `row` (retired) to the lineage, counting its key bytes and digest.
    fn keep_retired(&mut self, id: RangeId, row: SharedRow) -> &RangeRow {
        self.retired_key_bytes += row.key_bytes();
        self.retired_digest = self.retired_digest.wrapping_add(row_digest(&row));
        let retired = std::sync::Arc::make_mut(&mut self.retired);
        retired.insert(id, row);
        &retired[&id]
    }

    /// How many rows, live and retired.
    pub fn len(&self) -> usize {
        self.live.len() + self.retired.len()
    }

    /// Whether there is no row at all (the map was never bootstrapped).
    pub fn is_empty(&self) -> bool {
        self.live.is_empty() && self.retired.is_empty()
    }

    /// Every row, live and retired, in id order.
    pub fn values(&self) -> impl Iterator<Item = &RangeRow> + '_ {
        let (mut a, mut b) = (self.live.values().peekable(), self.retired.values().peekable());
        std::iter::from_fn(move || match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if y.id < x.id => b.next(),
            (Some(_), _) => a.next(),
            (None, _) => b.next(),
        })
        .map(|r| &**r)
    }

    /// The live rows, by id.
    pub fn live(&self) -> &BTreeMap<RangeId, SharedRow> {
        &self.live
    }

    /// The retired rows, by id.
    pub fn retired(&self) -> &BTreeMap<RangeId, SharedRow> {
        &self.retired
    }

    /// The start and end keys of the retired rows, bytes in all (what a message carrying the
    /// map charges for them, without walking them).
    pub fn retired_key_bytes(&self) -> u64 {
        self.retired_key_bytes
    }

    /// Whether `self` and `other` share one copy of the retired rows (so they have the same
    /// ones): a version that retired nothing shares its predecessor's.
    pub fn same_lineage(&self, other: &Rows) -> bool {
        std::sync::Arc::ptr_eq(&self.retired, &other.retired)
    }
}

/// Hashes the live rows (as their `BTreeMap`), then the retired rows' count and the sum of their
/// digests: a trace hash (which hashes every map version) costs the live rows per version, not
/// the whole lineage again, and still changes when a retired row differs.
impl std::hash::Hash for Rows {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.live.hash(state);
        state.write_usize(self.retired.len());
        state.write_u64(self.retired_digest);
    }
}

/// A retired row's digest: its FxHash (deterministic: no random seed) through MurmurHash3's
/// 64-bit finalizer. FxHash alone is nearly linear (wrapping add and multiply, a rotate), so in
/// a sum of them changes to two rows that cancel (two parents' sealed lengths swapped) often
/// would give the same total; mixed, they do not (test
/// `map_digest_tells_swapped_values_of_two_retired_rows_apart`).
fn row_digest(row: &RangeRow) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let mut h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(row);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl std::ops::Index<&RangeId> for Rows {
    type Output = RangeRow;

    /// The row of `id`, live or retired. Panics if there is none.
    fn index(&self, id: &RangeId) -> &RangeRow {
        self.get(id).unwrap_or_else(|| panic!("no row {id}"))
    }
}
