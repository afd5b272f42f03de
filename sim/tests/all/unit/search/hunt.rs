//! `partmap_sim::search::hunt`: the median over rounds with rounds that never caught, and the
//! ratio's bounds.

use partmap_sim::search::hunt::{median, ratio_of, Bound};

fn caught(s: f64) -> Bound {
    Bound { s, censored: false }
}

fn never(s: f64) -> Bound {
    Bound { s, censored: true }
}

#[test]
fn the_median_ranks_a_round_that_never_caught_after_every_catch() {
    // 9.0 never caught: it is more than 9 s, so it ranks last, not between 2 and 20.
    assert_eq!(median(&[caught(20.0), never(9.0), caught(2.0)]), Some(caught(20.0)));
    assert_eq!(median(&[caught(3.0), caught(1.0), caught(2.0)]), Some(caught(2.0)));
    // Most rounds never caught: the median is only a lower bound, the least budget.
    assert_eq!(median(&[never(12.0), caught(1.0), never(10.0)]), Some(never(10.0)));
    assert_eq!(median(&[]), None);
}

#[test]
fn a_ratio_with_a_bound_on_one_side_says_which_way_it_leans() {
    assert_eq!(ratio_of(caught(10.0), caught(2.0)).map(|r| r.0), Some("5.00".to_string()));
    // Random never caught in 10 s: explore is at least 5 times faster.
    assert_eq!(ratio_of(never(10.0), caught(2.0)).map(|r| r.0), Some(">5.00".to_string()));
    // Explore never caught in 20 s: the ratio is at most 0.5.
    assert_eq!(ratio_of(caught(10.0), never(20.0)).map(|r| r.0), Some("<0.50".to_string()));
    assert_eq!(ratio_of(never(10.0), never(20.0)), None);
}

#[test]
fn first_catch_rounds_count_in_the_time_to_first_catch_and_never_in_the_catches() {
    use partmap::config::Mutation;
    use partmap_sim::search::hunt::{row, Hunted, Search};
    let round = |catches: u64, first: f64, runs: u64| Search { runs, catches, cpu_to_first_s: Some(first), first_run: Some(1), cpu_s: runs as f64 };
    // Full rounds first catch at 5 s on random's side; ten first-catch rounds at 1 s outvote them.
    let h = Hunted {
        mutation: Mutation::SourceIgnoresPause,
        random: vec![round(10, 5.0, 20), round(10, 5.0, 20), round(10, 5.0, 20)],
        explore: vec![round(10, 2.0, 20); 3],
        random_first: vec![round(1, 1.0, 1); 10],
        explore_first: vec![round(1, 2.0, 1); 10],
    };
    let r = row(&h);
    assert!(r.contains("| 30/60 | 500.0 | 1.00 |"), "random: catches from the full rounds only, median over all 13: {r}");
    assert!(r.contains("| 13 | 0.50 |"), "13 rounds, random 1.00 over explore 2.00: {r}");
    assert_eq!(h.ratio().map(|x| x.0), Some("0.50".to_string()));
}
