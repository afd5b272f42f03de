//! The unit tests of `partmap_sim::sweep::seeds` (formerly in `sim/src/sweep/seeds.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::sweep::seeds::*;

    fn all(s: &SeedSelection) -> Vec<u64> {
        (0..).map_while(|i| s.get(i)).collect()
    }

    #[test]
    fn shards_of_a_range_cover_it_exactly_once() {
        for n in 1..6 {
            let mut union = Vec::new();
            for k in 1..=n {
                let s = SeedSelection { source: Source::Range { first: 10, end: 23 }, shard: Some(Shard { index: k, count: n }) };
                let seeds = all(&s);
                assert_eq!(seeds.len() as u64, s.len(), "{k}/{n}");
                assert!(seeds.iter().all(|x| s.contains(*x)), "{k}/{n}");
                union.extend(seeds);
            }
            union.sort();
            assert_eq!(union, (10..23).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn shards_of_a_file_follow_its_order() {
        let source = Source::File { path: "f".into(), seeds: vec![9, 4, 7, 1, 3] };
        let s = SeedSelection { source, shard: Some(Shard { index: 2, count: 2 }) };
        assert_eq!(all(&s), vec![4, 1]);
        assert!(s.contains(1) && !s.contains(9));
    }

    #[test]
    fn a_shard_larger_than_the_range_is_empty() {
        let s = SeedSelection { source: Source::Range { first: 0, end: 2 }, shard: Some(Shard { index: 3, count: 4 }) };
        assert!(s.is_empty());
        assert_eq!(s.get(0), None);
    }

    #[test]
    fn shard_parse_errors_name_the_problem() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert!(Shard::parse("0/4").unwrap_err().contains("count from 1"));
        assert!(Shard::parse("5/4").unwrap_err().contains("between 1 and 4"));
        assert!(Shard::parse("1/0").unwrap_err().contains("at least 1"));
        assert!(Shard::parse("two").unwrap_err().contains("write K/N"));
    }

    #[test]
    fn seeds_file_errors_name_the_line() {
        assert_eq!(parse_seeds_file("3\n\n# yesterday\n17 # flaky\n", "f"), Ok(vec![3, 17]));
        assert_eq!(parse_seeds_file("3\nx\n", "f").unwrap_err(), "f:2: `x` is not a seed (a non-negative integer, one per line)");
        assert!(parse_seeds_file("3\n4\n3\n", "f").unwrap_err().starts_with("f:3: seed 3 is already on line 1"));
        assert!(parse_seeds_file("# none\n", "f").unwrap_err().contains("no seeds"));
    }
}
