//! The unit tests of `partmap_sim::search::workers` (formerly in `sim/src/search/workers.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    /// Results come back in item order whatever the number of threads.
    #[test]
    fn workers_results_are_in_item_order() {
        let items: Vec<u64> = (0..50).collect();
        for jobs in [1, 3, 64] {
            let out = partmap_sim::search::workers::in_order(&items, jobs, |i, x| (i as u64, x * x));
            assert_eq!(out, items.iter().map(|x| (*x, x * x)).collect::<Vec<_>>(), "jobs {jobs}");
        }
        assert!(partmap_sim::search::workers::in_order(&[] as &[u64], 2, |_, x| *x).is_empty());
    }
}
