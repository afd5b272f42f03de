//! The unit tests of `partmap_sim::search::explore` (formerly in `sim/src/search/explore.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::search::explore::*;
    use partmap_sim::run::RunOptions;
    use partmap_sim::scenario::Scenario;
    use std::collections::BTreeMap;

    fn base() -> RunOptions {
        RunOptions { seed: 0, scenario: Scenario::default_failover(), scenario_label: "scenarios/failover.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false }
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

mod emphasis {
    use madsim::rand::SeedableRng;
    use partmap_sim::scenario::Scenario;
    use partmap_sim::search::explore::emphasize;

    /// Over 400 draws on the default scenario: every emphasized scenario is valid; each of the
    /// four left-out kinds is left out about one time in four, the aimed rate is the
    /// scenario's times 1, 4 or 8, the message rate times 1 or 3, and about half of the draws
    /// put the clocks at the corner (and say so).
    #[test]
    fn emphasis_scales_and_leaves_out_only_what_the_scenario_enables() {
        let base = Scenario::default_swarm();
        let r0 = base.faults.random.clone().expect("the default has random faults");
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        let (mut crash_off, mut corners, mut by_aimed) = (0, 0, std::collections::BTreeMap::<u64, u32>::new());
        for _ in 0..400 {
            let mut s = base.clone();
            let corner = emphasize(&mut rng, &mut s);
            s.validate().expect("an emphasized scenario is valid");
            let r = s.faults.random.as_ref().expect("kept");
            crash_off += u32::from(r.crash_per_min == [0.0, 0.0]);
            assert!(r.partition_per_min == r0.partition_per_min || r.partition_per_min == [0.0, 0.0]);
            let k = r.aimed_per_min[1] / r0.aimed_per_min[1];
            assert!([1.0, 4.0, 8.0].contains(&k) && r.aimed_per_min[0] == r0.aimed_per_min[0] * k, "{:?}", r.aimed_per_min);
            *by_aimed.entry(k as u64).or_default() += 1;
            let m = r.message_faults_per_min[1] / r0.message_faults_per_min[1];
            assert!(m == 1.0 || m == 3.0, "{m}");
            assert_eq!(corner, s.knobs.clock_drift_worst_case);
            corners += u32::from(corner);
        }
        assert!((60..140).contains(&crash_off), "crashes left out {crash_off} times in 400");
        assert!((150..250).contains(&corners), "corners {corners} in 400");
        assert_eq!(by_aimed.keys().copied().collect::<Vec<_>>(), vec![1, 4, 8]);
    }

    /// A fault kind the scenario switched off stays off, and clocks that do not drift are
    /// never put at a corner.
    #[test]
    fn emphasis_never_switches_a_kind_on() {
        let mut base = Scenario::default_swarm();
        base.knobs.clock_drift_ppm = 0;
        let r = base.faults.random.as_mut().expect("random faults");
        r.aimed_per_min = [0.0, 0.0];
        r.message_faults_per_min = [0.0, 0.0];
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(12);
        for _ in 0..100 {
            let mut s = base.clone();
            assert!(!emphasize(&mut rng, &mut s));
            let r = s.faults.random.as_ref().expect("kept");
            assert_eq!((r.aimed_per_min, r.message_faults_per_min), ([0.0, 0.0], [0.0, 0.0]));
            assert!(!s.knobs.clock_drift_worst_case);
        }
    }
}
