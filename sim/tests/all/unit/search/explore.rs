//! The unit tests of `partmap_sim::search::explore` (formerly in `sim/src/search/explore.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::search::explore::*;
    use partmap_sim::run::RunOptions;
    use partmap_sim::scenario::Scenario;
    use std::collections::BTreeMap;

    fn base() -> RunOptions {
        RunOptions { seed: 0, scenario: Scenario::default_failover(), scenario_label: "scenarios/failover.json".into(), mutation: None, trace: false, echo_header: false }
    }

    fn entry(format: u32, hash: &str) -> Entry {
        Entry { format, scenario_hash: hash.into(), seed: 3, origin: "swarm".into(), features: vec!["goal:crash_owner".into()], goal_first_us: BTreeMap::new(), near: BTreeMap::new(), steps: Vec::new(), scenario: Scenario::default_failover() }
    }

    /// A corpus of another format or scenario, or a file that is no entry, is refused with the
    /// file named; a missing directory is an empty corpus.
    #[test]
    fn explore_corpus_of_another_build_or_scenario_is_refused() {
        let dir = std::env::temp_dir().join(format!("partmap-corpus-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let hash = partmap_sim::sweep::summary::Build::of(&base()).scenario_hash;
        assert!(load_corpus(&dir, &hash).expect("missing is empty").is_empty());
        save_entry(&dir, &entry(CORPUS_FORMAT, &hash)).expect("writes");
        assert_eq!(load_corpus(&dir, &hash).expect("reads").len(), 1);
        let e = load_corpus(&dir, "0000000000000000").expect_err("another scenario");
        assert!(e.contains("made for scenario hash") && e.contains("entry-"), "{e}");
        save_entry(&dir, &Entry { seed: 4, ..entry(CORPUS_FORMAT + 1, &hash) }).expect("writes");
        let e = load_corpus(&dir, &hash).expect_err("another format");
        assert!(e.contains("corpus format 2") && e.contains("another build"), "{e}");
        std::fs::write(dir.join("zz.json"), "{}").expect("writes");
        std::fs::remove_file(dir.join(entry_name(&Entry { seed: 4, ..entry(CORPUS_FORMAT + 1, &hash) }))).expect("removes");
        let e = load_corpus(&dir, &hash).expect_err("not an entry");
        assert!(e.contains("zz.json: not a corpus entry"), "{e}");
        std::fs::remove_dir_all(&dir).expect("cleans up");
    }

    /// The same explorer seed and run budget give the same corpus and runs, whatever the
    /// number of worker threads.
    #[test]
    fn explore_is_deterministic_across_jobs() {
        let cfg = |jobs| ExploreConfig { seed: 7, runs: 10, time_budget: None, jobs, keep_going: true, shrink: false, corpus: Vec::new(), report_dir: None, progress_every: 0 };
        let a = explore(&base(), &cfg(1), &mut |_| {}).expect("explores");
        let b = explore(&base(), &cfg(2), &mut |_| {}).expect("explores");
        assert_eq!((a.runs, a.corpus, a.features, &a.goals, &a.by_origin), (b.runs, b.corpus, b.features, &b.goals, &b.by_origin));
        assert!(a.corpus >= 1 && a.by_origin.values().sum::<u64>() == 10);
    }
}
