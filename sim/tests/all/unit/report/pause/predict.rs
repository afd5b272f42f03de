//! The unit tests of `partmap_sim::report::pause::predict` (formerly in `sim/src/report/pause/predict.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::pause::predict::*;
    use partmap_sim::report::pause::{GIB, KIB, MIB};

    #[test]
    fn amounts_parse_with_units_and_name_the_part_in_errors() {
        assert_eq!(parse_amount("size", "1GiB", false), Ok(GIB));
        assert_eq!(parse_amount("size", "256 KiB", false), Ok(256 * KIB));
        assert_eq!(parse_amount("size", "1.5MiB", false), Ok(3 * MIB / 2));
        assert_eq!(parse_amount("size", "4096", false), Ok(4096));
        assert_eq!(parse_amount("write rate", "600MiB/s", true), Ok(600 * MIB));
        assert_eq!(parse_amount("bandwidth", "1GiB", true), Ok(GIB));
        let err = |part: &str, t: &str, rate: bool| parse_amount(part, t, rate).unwrap_err();
        assert!(err("size", "1GB", false).contains("size `1GB`: unit `GB` is not B, KiB, MiB or GiB"), "{}", err("size", "1GB", false));
        assert!(err("size", "1GiB/s", false).contains("size `1GiB/s` is a rate"));
        assert!(err("write rate", "-5MiB/s", true).contains("write rate `-5MiB/s` must be above 0"));
        assert!(err("write rate", "0/s", true).contains("must be above 0"));
        assert!(err("bandwidth", "fastMiB/s", true).contains("bandwidth `fastMiB/s`: unit `fastMiB` is not"));
        assert!(err("bandwidth", "x/s", true).contains("bandwidth `x/s`: unit `x`"));
        assert!(err("size", "abcB", false).contains("size `abcB`: unit `abcB`"));
        assert!(err("size", "99999999999GiB", false).contains("too large"));
        assert!(err("size", " ", false).contains("size is missing"));
    }

    #[test]
    fn queries_name_the_part_that_is_missing_or_wrong() {
        assert_eq!(parse_query("1GiB,600MiB/s,1GiB/s"), Ok(Query { size: GIB, write_rate: 600 * MIB, bandwidth: GIB }));
        let e = parse_query("1GiB,600MiB/s").unwrap_err();
        assert!(e.contains("bandwidth is missing"), "{e}");
        let e = parse_query("1GiB").unwrap_err();
        assert!(e.contains("write rate is missing"), "{e}");
        let e = parse_query("1GiB,,1GiB/s").unwrap_err();
        assert!(e.contains("write rate is missing"), "{e}");
        let e = parse_query("1GiB,1GiB/s,1GiB/s").unwrap_err();
        assert!(e.contains("write rate `1GiB/s` is at or above the bandwidth `1GiB/s`"), "{e}");
        let e = parse_query("1GiB,2GiB/s,1GiB/s").unwrap_err();
        assert!(e.contains("at or above the bandwidth"), "{e}");
        let e = parse_query("0B,1MiB/s,1GiB/s").unwrap_err();
        assert!(e.starts_with("size `0B` must be above 0"), "{e}");
        let e = parse_query("1GiB,1MiB/s,10B/s").unwrap_err();
        assert!(e.contains("bandwidth `10B/s` is below 1000 B/s"), "{e}");
    }

    /// The convergence limit is the model's own: just below it the model's rounds converge
    /// (given rounds enough), a little above it they do not, at both of the grid's bandwidths
    /// and at a threshold whose round outlasts the leader's wait.
    #[test]
    fn the_convergence_limit_is_where_the_models_rounds_stop_converging() {
        for (bw, threshold) in [(100 * MIB, 16 * MIB), (GIB, 16 * MIB), (100 * MIB, 256 * MIB)] {
            let q = Query { size: 64 * GIB, write_rate: MIB, bandwidth: bw };
            let o = Overrides { threshold: Some(threshold), max_rounds: Some(200), ..Default::default() };
            let w_max = predict_query(&q, &o).w_max;
            let at = |w: f64| predict_query(&Query { write_rate: w as u64, ..q }, &o).pre;
            let below = at(w_max * 0.98);
            let above = at(w_max * 1.03);
            assert!(below.converged, "{bw} B/s, θ {threshold}: {below:?} at 0.98 W_max = {w_max}");
            assert!(!above.converged, "{bw} B/s, θ {threshold}: {above:?} at 1.03 W_max = {w_max}");
        }
        // The figures the review quotes: about 39 MiB/s on 100 MiB/s and 66 MiB/s on 1 GiB/s.
        let w = |bw: u64| predict_query(&Query { size: GIB, write_rate: MIB, bandwidth: bw }, &Overrides::default()).w_max / MIB as f64;
        assert!((w(100 * MIB) - 39.4).abs() < 0.5, "{}", w(100 * MIB));
        assert!((w(GIB) - 66.0).abs() < 1.0, "{}", w(GIB));
    }

    /// The calculator's example: 1 GiB taking 600 MiB/s on 1 GiB/s is far above pre-copy's
    /// convergence limit; both strategies are printed with a recommendation.
    #[test]
    fn predict_prints_both_strategies_and_a_recommendation() {
        let q = parse_query("1GiB,600MiB/s,1GiB/s").unwrap();
        let p = predict_query(&q, &Overrides::default());
        assert!(!p.pre.converged && p.pre.rounds == 8, "{:?}", p.pre);
        // Stop-and-copy copies the whole range at the pause: at least 1 GiB over 1 GiB/s.
        assert!(p.stop.pause_ms > 1000.0 && p.stop.tail_bytes > GIB as f64, "{:?}", p.stop);
        let text = render(&p);
        for want in ["stop-and-copy: pause ", "pre-copy:      pause ", "did not converge", "convergence limit: W_max = θB / (B(τ + 8L) + θ(1 + c/Δ)) = ", "is above it", "recommendation: "] {
            assert!(text.contains(want), "missing `{want}` in:\n{text}");
        }
        let winner = if p.pre.pause_ms < p.stop.pause_ms { "recommendation: pre-copy" } else { "recommendation: stop-and-copy" };
        assert!(text.contains(winner), "{text}");
    }

    /// With a cutover budget the calculator says what the rule does: above the convergence
    /// limit with a round that never fits, the move is aborted unpaused; with a budget the
    /// rounds fit, it pauses.
    #[test]
    fn predict_with_a_budget_says_whether_the_rule_aborts_or_pauses() {
        let q = parse_query("16MiB,50MiB/s,100MiB/s").unwrap();
        let tight = render(&predict_query(&q, &Overrides { budget_ms: Some(200), ..Default::default() }));
        assert!(tight.contains("cutover budget 200 ms: pre-copy's rounds stay over the budget's 20.0 MiB to the round limit, so the move is aborted without a pause"), "{tight}");
        let loose = render(&predict_query(&q, &Overrides { budget_ms: Some(5000), ..Default::default() }));
        assert!(loose.contains("cutover budget 5000 ms: pre-copy pauses about"), "{loose}");
        assert!(!render(&predict_query(&q, &Overrides::default())).contains("cutover budget"));
    }

    /// The prediction stands on its inputs alone and agrees with the grid where it is easy:
    /// 16 MiB at r = 0.05 of 100 MiB/s, stop-and-copy measured 213.2 ms in the committed
    /// grid (10 seeds) and pre-copy 30.0 ms (30 seeds).
    #[test]
    fn predict_is_near_the_committed_grid_in_small_converged_cells() {
        let q = Query { size: 16 * MIB, write_rate: 5 * MIB, bandwidth: 100 * MIB };
        let p = predict_query(&q, &Overrides::default());
        assert!((p.stop.pause_ms - 213.2).abs() / 213.2 < 0.05, "{:?}", p.stop);
        assert!((p.pre.pause_ms - 30.0).abs() / 30.0 < 0.10, "{:?}", p.pre);
        assert!(p.pre.converged);
        let text = render(&p);
        assert!(text.contains("recommendation: pre-copy"), "{text}");
    }
}
