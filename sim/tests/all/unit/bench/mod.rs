//! The unit tests of `partmap_sim::bench` (formerly in `sim/src/bench/mod.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).



mod tests {
    use partmap_sim::bench::*;
    use partmap_sim::scenario::Scenario;

    #[test]
    fn bench_raw_madsim_counts_two_messages_per_round_trip() {
        let c = raw_madsim(1, 2, 10);
        assert_eq!(c.messages, 40);
        assert!(c.cpu_ns > 0);
    }

    #[test]
    fn bench_seam_counts_two_messages_per_round_trip() {
        let c = seam_rpc(1, 2, 10);
        assert_eq!(c.messages, 40);
        assert!(c.cpu_ns > 0);
    }

    #[test]
    fn bench_scenario_counts_messages_and_checker_time() {
        let s = Scenario::default_swarm();
        let c = scenario(&s, "swarm", 0..1);
        assert_eq!(c.seeds, 1);
        assert!(c.total.messages > 1000, "{} messages", c.total.messages);
        assert!(c.checker_cpu_ns > 0 && c.checker_cpu_ns < c.total.cpu_ns);
        assert_eq!(c.per_seed.len(), 1);
        assert_eq!((c.per_seed[0].seed, c.per_seed[0].cpu_ns, c.per_seed[0].checker_cpu_ns), (0, c.total.cpu_ns, c.checker_cpu_ns));
        assert!(c.per_seed[0].events > 1000, "{:?}", c.per_seed[0]);
    }

    #[test]
    fn bench_scaling_compares_the_same_seeds_only() {
        let cost = |seeds: &[(u64, u64, u64, u64)]| ScenarioCost {
            per_seed: seeds.iter().map(|&(seed, cpu_ns, checker_cpu_ns, events)| SeedCost { seed, cpu_ns, checker_cpu_ns, events }).collect(),
            ..Default::default()
        };
        // Seed 1 is cheap at x1; seed 2 (dear) ran only at x1 and must not enter the ratio.
        let base = cost(&[(1, 100, 10, 1000), (2, 900, 90, 9000)]);
        let scaled = cost(&[(1, 450, 44, 4000), (3, 5, 5, 5)]);
        let (n, cpu, checkers, events) = scaling(&base, &scaled).expect("seed 1 in both");
        assert_eq!(n, 1);
        assert!((cpu - 4.5).abs() < 1e-9 && (checkers - 4.4).abs() < 1e-9 && (events - 4.0).abs() < 1e-9, "{cpu} {checkers} {events}");
        assert_eq!(scaling(&base, &cost(&[(7, 1, 1, 1)])), None);
    }

    #[test]
    fn bench_reads_the_published_floor_and_names_what_is_wrong() {
        let c = parse_published("messages=200000 cpu_ns=189091513 madsim=0.2.34-published\n").expect("well formed");
        assert_eq!((c.messages, c.cpu_ns), (200_000, 189_091_513));
        assert!(parse_published("cpu_ns=5").unwrap_err().contains("`messages=`"));
        assert!(parse_published("messages=10 cpu_ns=x").unwrap_err().contains("`cpu_ns` is not a whole number"));
        assert!(parse_published("messages=0 cpu_ns=5").unwrap_err().contains("`messages` is 0"));
        let missing = std::path::Path::new("/nonexistent/raw-madsim");
        assert!(published_madsim(missing, 1, 1, 1).unwrap_err().contains("/nonexistent/raw-madsim"));
    }

    #[test]
    fn bench_prints_the_ratio_against_each_floor() {
        let run = ScenarioCost { seeds: 1, total: Cost { messages: 1000, cpu_ns: 3_000_000 }, ..Default::default() };
        let raw = Cost { messages: 1000, cpu_ns: 1_000_000 };
        let mut b = Bench { raw, published: Ok(Cost { messages: 1000, cpu_ns: 2_000_000 }), seam: raw, run, scaled: None, peak_rss_mib: 1.0 };
        assert_eq!((b.ratio(), b.ratio_published()), (3.0, Some(1.5)));
        let text = render(&b, "x");
        assert!(text.contains("ratio (scenario CPU per message / raw madsim CPU per message): 3.00"), "{text}");
        assert!(text.contains("ratio against madsim 0.2.34 as published: 1.50"), "{text}");
        assert!(text.contains("as published (bench/raw-madsim, own process): 1000 messages, 0.002 s CPU, 2.000 us per message (2.00x the patched)"), "{text}");
        assert!(text.contains("seam (partmap Rpc, answer at once): 1000 messages, 0.001 s CPU, 1.000 us per message (1.00x raw madsim)"), "{text}");
        b.published = Err("not built".to_string());
        assert_eq!(b.ratio_published(), None);
        let text = render(&b, "x");
        assert!(text.contains("raw madsim 0.2.34 as published: not measured (not built)") && !text.contains("as published: 1."), "{text}");
    }
}
