//! Core (pure): a range's content built from its stream's records, and objects shared with the
//! read answers that carry them.

use crate::ids::{Key, OpId};
use crate::map::RangeRow;
use crate::msg::Record;
use std::collections::BTreeMap;

/// An object's content, shared with the read answers that carry it.
pub type Object = std::sync::Arc<Vec<u8>>;

/// Append `bytes` to the object of `key`: in place, or on a copy while a read answer holds it.
pub(super) fn extend_object(objects: &mut BTreeMap<Key, Object>, key: &[u8], bytes: &[u8]) {
    // One search of the map for a key it holds (most appends), two for a new key.
    if let Some(object) = objects.get_mut(key) {
        std::sync::Arc::make_mut(object).extend_from_slice(bytes);
        return;
    }
    objects.insert(key.to_vec(), Object::new(bytes.to_vec()));
}

/// A range's content from its records in stream order (`base`, then the stream): the ids
/// applied and every object, counting the records in `row` and, of several with the same id,
/// the first. The same as applying the records one by one (an id set insert and an object
/// extend per record), but each object is built once at its final size and the objects' map is
/// bulk-built from sorted entries (the one-by-one build was the server's costliest step in a
/// sweep).
///
/// Only integers are sorted: each first copy of an id (a hash set insert per record) gives a
/// (key number, stream position) pair, a number per distinct key from a hash lookup; the pairs
/// sorted group each object's records in stream order, and only the distinct keys are sorted,
/// by the map's collect. Sorting record indices by their keys instead compared keys through two
/// pointers per comparison, most of the build's time.
pub(super) fn build_content<'a>(row: &RangeRow, records: impl Iterator<Item = &'a Record>) -> (rustc_hash::FxHashSet<OpId>, BTreeMap<Key, Object>) {
    let records: Vec<&Record> = records.filter(|r| row.contains(&r.key)).collect();
    let mut applied = rustc_hash::FxHashSet::with_capacity_and_hasher(records.len(), Default::default());
    // FxHash over the short keys (the map is never iterated, so its order cannot leak). Positions
    // are u32 (a load's scratch stays small next to its records).
    let mut number: rustc_hash::FxHashMap<&[u8], u32> = rustc_hash::FxHashMap::default();
    let mut grouped: Vec<(u32, u32)> = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        if applied.insert(r.id) {
            let next = number.len() as u32;
            grouped.push((*number.entry(&r.key).or_insert(next), i as u32));
        }
    }
    grouped.sort_unstable();
    let mut objects = Vec::with_capacity(number.len());
    for group in grouped.chunk_by(|a, b| a.0 == b.0) {
        let mut object = Vec::with_capacity(group.iter().map(|&(_, i)| records[i as usize].bytes.len()).sum());
        for &(_, i) in group {
            object.extend_from_slice(&records[i as usize].bytes);
        }
        objects.push((records[group[0].1 as usize].key.clone(), Object::new(object)));
    }
    (applied, objects.into_iter().collect())
}

/// An object as a read answer's payload, without copying it.
pub(super) fn object_bytes(object: &Object) -> bytes::Bytes {
    /// The owner [`bytes::Bytes::from_owner`] needs (`Arc<Vec<u8>>` is not `AsRef<[u8]>`).
    struct Shared(Object);
    impl AsRef<[u8]> for Shared {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }
    if object.is_empty() {
        return bytes::Bytes::new();
    }
    bytes::Bytes::from_owner(Shared(object.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Epoch, RangeId};
    use crate::map::RangeState;
    use proptest::prelude::{any, prop_assert_eq, proptest};
    use proptest::strategy::Strategy as _;

    /// [`build_content`] against the one-by-one application it replaced: records in range, the
    /// first copy of each id, each object its records' bytes in stream order (keys of one or two
    /// letters from a small alphabet so objects get several records and keys share prefixes,
    /// ids from a small set so duplicates occur, and some keys out of `[b, e)`).
    #[test]
    fn build_content_matches_applying_records_one_by_one() {
        let row = RangeRow { id: RangeId(1), start: b"b".to_vec(), end: Some(b"e".to_vec()), owner: None, owner_session: 0, epoch: Epoch(1), state: RangeState::Preparing, sources: vec![], sealed: 0, born_ms: 0 };
        let key = proptest::collection::vec(b'a'..b'g', 1..3);
        let record = (1u32..3, 0u64..8, key, proptest::collection::vec(any::<u8>(), 0..4)).prop_map(|(client, seq, key, bytes)| Record { epoch: Epoch(1), id: OpId { client, seq }, key, bytes: bytes.into(), bulk: 0 });
        proptest!(|(records in proptest::collection::vec(record, 0..40))| {
            let mut applied = rustc_hash::FxHashSet::default();
            let mut objects = BTreeMap::new();
            for rec in &records {
                if row.contains(&rec.key) && applied.insert(rec.id) {
                    extend_object(&mut objects, &rec.key, &rec.bytes);
                }
            }
            let (built_applied, built_objects) = build_content(&row, records.iter());
            prop_assert_eq!(built_applied, applied);
            prop_assert_eq!(built_objects, objects);
        });
    }
}
