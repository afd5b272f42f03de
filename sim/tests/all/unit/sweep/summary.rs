//! The unit tests of `partmap_sim::sweep::summary` (formerly in `sim/src/sweep/summary.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

pub mod tests {
    use partmap_sim::sweep::summary::*;
    use partmap_sim::run::{OpCounts, RunOutcome};
    use partmap_sim::scenario::ExpectedOutcome;
    use std::collections::BTreeMap;

    /// A record of seed `seed` that passed, with a fault count and a simulated time of its own.
    pub(crate) fn record(seed: u64) -> SeedRecord {
        SeedRecord {
            seed,
            outcome: RunOutcome::Pass,
            as_expected: true,
            properties: Vec::new(),
            trace_hash: format!("{seed:016x}"),
            faults: BTreeMap::from([("crash_server".to_string(), seed)]),
            coverage: BTreeMap::new(),
            goals: BTreeMap::new(),
            fault_flows: Vec::new(),
            handoffs: Vec::new(),
            superseded_handoffs: 0,
            reshapes: BTreeMap::new(),
            ops: OpCounts::default(),
            sim_ms: 1000 + seed,
            unavailable_ms: 0,
            availability: Default::default(),
            bounds_exceeded: Vec::new(),
            unannounced_versions: 0,
            views_disagreeing: Vec::new(),
            panic: None,
            repro: String::new(),
        }
    }

    /// The summary of `records` with a fixed build and selection.
    pub(crate) fn summary(records: Vec<SeedRecord>) -> Summary {
        let build = Build {
            version: "0.1.0".into(),
            commit: None,
            scenario: "s.json".into(),
            scenario_hash: "0".repeat(16),
            mutation: None,
            expected: ExpectedOutcome::Pass,
        };
        let selection = Selection { seeds: "0..3".into(), shard: None, time_budget: None, planned: 3 };
        Summary::new(build, selection, Stopped::default(), Measured::default(), records)
    }

    #[test]
    fn summary_json_has_a_record_per_line_and_reads_back_equal() {
        for records in [vec![], vec![record(0), record(2)]] {
            let s = summary(records);
            let json = s.to_json();
            let back: Summary = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
            assert_eq!(back, s);
            for r in &s.records {
                assert_eq!(json.lines().filter(|l| l.trim_start().starts_with(&format!("{{\"seed\":{},", r.seed))).count(), 1, "{json}");
            }
        }
    }

    #[test]
    fn merge_of_every_shard_is_the_range_and_of_some_lists_them() {
        let shard = |k: u64, seeds: &[u64]| {
            let mut s = summary(seeds.iter().map(|x| record(*x)).collect());
            s.selection = Selection { seeds: "0..3".into(), shard: Some(format!("{k}/3")), time_budget: None, planned: 1 };
            (format!("s{k}.json"), s)
        };
        let all = merge(vec![shard(2, &[1]), shard(1, &[0]), shard(3, &[2])]).unwrap();
        let whole = summary(vec![record(0), record(1), record(2)]);
        assert_eq!((&all.selection, &all.totals, &all.records), (&whole.selection, &whole.totals, &whole.records));
        let some = merge(vec![shard(1, &[0]), shard(3, &[2])]).unwrap();
        assert_eq!(some.selection.shard.as_deref(), Some("1/3, 3/3"));
        assert_eq!(some.selection.planned, 2);
        assert_eq!(some.stopped.missing_shards, vec!["2/3".to_string()]);
        assert!(render(&some).contains("PARTIAL, missing shards: 2/3") && render(&some).contains("(PARTIAL: the seeds of shards 2/3 did not run here)"), "{}", render(&some));
        assert!(all.stopped.missing_shards.is_empty() && !render(&all).contains("PARTIAL"));
        let mut other = shard(2, &[1]);
        other.1.build.mutation = Some("store-ignores-fence".into());
        assert!(merge(vec![shard(1, &[0]), other]).unwrap_err().contains("different mutations: none vs store-ignores-fence"));
    }

    #[test]
    fn pause_rows_count_seeds_and_split_at_1_mib_only_when_both_sizes_occur() {
        let s = |seed: u64, big: bool, base: f64| PauseSample { strategy: Some(0), big, server_pause_ms: 10.0, client_gap_ms: Some(20.0), client_baseline_ms: Some(base), seed, precopy_bytes: 0, tail_bytes: 0 };
        let small = pause_figures_of(&[s(1, false, 100.0), s(1, false, 100.0), s(4, false, 300.0)]);
        let rows: Vec<(&str, u64, u64)> = small.iter().map(|f| (f.size.as_str(), f.handoffs, f.seeds)).collect();
        assert_eq!(rows, [("all", 3, 2)], "one size class: its row would repeat `all`");
        assert_eq!(small[0].client_baseline_ms, [100.0, 300.0, 300.0]);
        let both = pause_figures_of(&[s(1, false, 100.0), s(2, true, 100.0), s(2, true, 100.0)]);
        let rows: Vec<(&str, u64, u64)> = both.iter().map(|f| (f.size.as_str(), f.handoffs, f.seeds)).collect();
        assert_eq!(rows, [("all", 3, 2), ("<= 1 MiB", 1, 1), ("> 1 MiB", 2, 1)]);
    }

    #[test]
    fn shard_check_names_missing_and_duplicate_shards_per_selection() {
        let shard = |path: &str, seeds: &str, k: &str| {
            let mut s = summary(Vec::new());
            s.selection = Selection { seeds: seeds.into(), shard: Some(k.into()), time_budget: None, planned: 1 };
            (path.to_string(), s)
        };
        let whole = (String::from("w.json"), summary(Vec::new()));
        assert_eq!(check_shards(std::slice::from_ref(&whole)), ShardCheck::default());
        assert!(check_shards(&[shard("a", "0..8", "1/2"), shard("b", "0..8", "2/2"), whole]).complete());
        let c = check_shards(&[shard("a", "0..8", "1/3"), shard("b", "0..8", "2/3")]);
        assert_eq!(c.problem(), "missing shards: 3/3 (2 of 3 shards given)");
        let c = check_shards(&[shard("a", "0..8", "2/4")]);
        assert_eq!(c.missing, ["1/4", "3/4", "4/4"]);
        let c = check_shards(&[shard("a", "0..8", "1/2"), shard("b", "0..8", "1/2"), shard("c", "0..8", "2/2")]);
        assert_eq!(c.problem(), "duplicate shards: 1/2 (a and b)");
        let c = check_shards(&[shard("a", "0..8", "1/2"), shard("b", "0..8", "2/2"), shard("c", "8..16", "1/2")]);
        assert_eq!(c.missing, ["2/2 of 8..16"]);
        assert_eq!(c.expected, 4);
    }
}
