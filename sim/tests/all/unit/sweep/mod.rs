//! The unit tests of `partmap_sim::sweep` (formerly in `sim/src/sweep/mod.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

pub mod seeds;
pub mod summary;

mod tests {
    use partmap_sim::sweep::*;
    use partmap_sim::run::RunOptions;
    use partmap_sim::sweep::summary::SeedRecord;

    /// `--report-dir` naming a file says so, naming the flag and the path (it was `File exists
    /// (os error 17)`); a folder, or a path not there yet, is accepted.
    #[test]
    fn check_report_dir_names_the_flag_when_the_path_is_a_file() {
        let dir = std::env::temp_dir().join(format!("partmap-report-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        std::fs::write(&file, "").unwrap();
        let err = check_report_dir(&file).unwrap_err();
        assert_eq!(err, format!("--report-dir {}: is a file, not a folder; give a folder (created if missing), e.g. reports", file.display()));
        let cfg = SweepConfig::new(1, &file);
        assert_eq!(check_writable(&cfg).unwrap_err(), err);
        check_report_dir(&dir).unwrap();
        check_report_dir(&dir.join("not-yet")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A kept shrunk scenario run with its own mutation and seed names its timeline once:
    /// `cut-off-owner-server-ignores-lease-expiry-seed-0.html`, not that stem repeated.
    #[test]
    fn seed_stem_does_not_repeat_a_shrunk_scenario_s_mutation_and_seed() {
        let m = partmap::mutation::Mutation::parse("server-ignores-lease-expiry").unwrap();
        let opts = |label: &str, mutation| RunOptions { seed: 0, scenario: partmap_sim::scenario::Scenario::default(), scenario_label: label.into(), mutation, also_mutation: None, trace: false, echo_header: false };
        let shrunk = opts("scenarios/shrunk/cut-off-owner-server-ignores-lease-expiry-seed-0.json", Some(m));
        assert_eq!(seed_stem(&shrunk, 0), "cut-off-owner-server-ignores-lease-expiry-seed-0");
        // Another seed, or no mutation: the usual name.
        assert_eq!(seed_stem(&shrunk, 1), "cut-off-owner-server-ignores-lease-expiry-seed-0-server-ignores-lease-expiry-seed-1");
        let plain = opts("scenarios/shrunk/cut-off-owner-server-ignores-lease-expiry-seed-0.json", None);
        assert_eq!(seed_stem(&plain, 0), "cut-off-owner-server-ignores-lease-expiry-seed-0-seed-0");
        assert_eq!(seed_stem(&opts("scenarios/swarm.json (built-in)", None), 7), "swarm-seed-7");
        assert_eq!(seed_stem(&opts("scenarios/cut-off-owner.json", Some(m)), 0), "cut-off-owner-server-ignores-lease-expiry-seed-0");
    }

    #[test]
    fn scenario_stem_is_safe_in_a_file_name() {
        assert_eq!(scenario_stem("scenarios/swarm.json (built-in)"), "swarm");
        assert_eq!(scenario_stem("scenarios/failover.json"), "failover");
        assert_eq!(scenario_stem("my runs/a b (copy).json"), "a_b__copy_");
    }

    /// The summary a sweep builds from its spool is the one built from every record in
    /// memory: the same JSON byte for byte, the same totals and JUnit report, while it holds only
    /// the failing records.
    #[test]
    fn spooled_summary_is_the_summary_of_every_record() {
        use crate::unit::sweep::summary::tests::{record, summary};
        let dir = std::env::temp_dir().join(format!("partmap-spool-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut records: Vec<SeedRecord> = [5, 1, 3, 8, 2].into_iter().map(record).collect();
        records[2].as_expected = false;
        records[2].outcome = partmap_sim::run::RunOutcome::LivenessFailure;
        records[4].as_expected = false;
        records[4].unavailable_ms = 1234;
        for (i, r) in records.iter_mut().enumerate() {
            r.sim_ms = 1000 + 7 * i as u64;
            r.unavailable_ms += 10 * i as u64;
        }
        let mut spool = Spool::create(dir.join(".spool.tmp")).unwrap();
        for r in records.clone() {
            spool.push(r);
        }
        let spool_path = spool.path.clone();
        let whole = {
            let mut all = records.clone();
            all.sort_by_key(|r| r.seed);
            summary(all)
        };
        let path = dir.join("sweep.json");
        let s = finish_spool(spool, whole.build.clone(), whole.selection.clone(), whole.stopped.clone(), whole.measured.clone(), &path);
        assert!(s.report_errors.is_empty(), "{:?}", s.report_errors);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole.to_json());
        assert_eq!(s.totals, whole.totals);
        assert_eq!(s.records.iter().map(|r| r.seed).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(s.held_out, vec![1, 5, 8]);
        assert_eq!(partmap_sim::sweep::junit::render(&s), partmap_sim::sweep::junit::render(&whole));
        assert_eq!(s.exit_code(), whole.exit_code());
        assert!(!spool_path.exists(), "the spool is removed");
        assert!(s.write(&path).is_err(), "a summary holding records out cannot write itself");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stop_counts_requests_and_keeps_the_first_signal() {
        let stop = Stop::new();
        assert!(!stop.stopping() && stop.signal_name().is_none());
        stop.request(libc::SIGTERM);
        assert!(stop.stopping() && !stop.abandoning());
        stop.request(libc::SIGINT);
        assert!(stop.abandoning());
        assert_eq!(stop.signal_name().as_deref(), Some("SIGTERM"));
    }
}
