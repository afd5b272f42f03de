//! The unit tests of `partmap_sim::check::availability` (formerly in `sim/src/check/availability.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::availability::*;
    use crate::unit::check::testkit::map_of;

    /// The binary search finds what `PartitionMap::lookup` finds: on a tiling with retired
    /// rows and a gap, and on overlapping live rows (where it walks the map instead).
    #[test]
    fn live_rows_find_what_lookup_finds() {
        let tiling = map_of(3, &[(1, "", None, 1, 1, "retired"), (2, "", Some("k3"), 1, 2, "active"), (3, "k3", Some("k6"), 2, 3, "paused"), (4, "k7", None, 3, 4, "active")]);
        let overlap = map_of(4, &[(1, "", Some("k5"), 1, 1, "active"), (2, "k2", None, 2, 2, "active"), (3, "k4", Some("k4"), 3, 3, "active")]);
        let empty = map_of(0, &[]);
        for (map, disjoint) in [(&tiling, true), (&overlap, false), (&empty, true)] {
            let mut live = LiveRows::default();
            live.index(map);
            assert_eq!(live.disjoint, disjoint);
            for key in ["", "a", "k1", "k3", "k35", "k6", "k65", "k7", "k9", "z"] {
                let (found, walked) = (live.lookup(map, key.as_bytes()).map(|r| r.id), map.lookup(key.as_bytes()).map(|r| r.id));
                assert_eq!(found, walked, "key {key}");
            }
        }
        // The gap [k6, k7) has no row.
        let mut live = LiveRows::default();
        live.index(&tiling);
        assert!(live.lookup(&tiling, b"k65").is_none());
        assert_eq!(live.lookup(&tiling, b"k9").map(|r| r.id.0), Some(4));
    }
}
