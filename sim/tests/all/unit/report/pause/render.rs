//! The unit tests of `partmap_sim::report::pause::render` (formerly in `sim/src/report/pause/render.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::pause::*;

    /// A grid.csv read back gives the same cells, seeds and figures, the seeds without a
    /// committed move included; the first version's columns read too.
    #[test]
    fn grid_csv_round_trips_and_reads_the_first_version() {
        let cell = Cell { strategy: Strategy::PreCopy, size: MIB, ratio: 0.05, bandwidth: GIB, faults: false };
        let m = Measured { seed: 3, server_ms: 29.5, client_ms: Some(50.25), before: 10, during: 20, rounds: 2, converged: true, start_bytes: 5, pause_bytes: 30, rate_since_start: 1.5, first_round_us: Some(7), paused_at_us: 9, after_window: false, appends_failed: 4, shed: 1, move_lost: Some([3, 1]), aborted: 1, aborted_pause_ms: 12.5, move_latency_ms: Some([20.5, 310.25]), base_latency_ms: Some([18.0, 40.125]), latency_n: [70, 2500] };
        let missing = Measured { seed: 4, appends_failed: 2, aborted: 1, aborted_pause_ms: 1260.0, ..Default::default() };
        let r = CellResult { runs: vec![m.clone()], no_handoff: 1, missing: vec![missing.clone()], ..CellResult::empty(&cell) };
        let back = read_csv(&csv(&[r]), std::slice::from_ref(&cell)).unwrap();
        assert_eq!(back.len(), 1);
        let b = &back[0];
        assert_eq!((b.runs.len(), b.no_handoff, b.missing.len()), (1, 1, 1));
        let (x, y) = (&b.runs[0], &b.missing[0]);
        assert_eq!((x.seed, x.server_ms, x.client_ms, x.before, x.during, x.rounds, x.converged), (3, 29.5, Some(50.25), 10, 20, 2, true));
        assert_eq!((x.start_bytes, x.pause_bytes, x.first_round_us, x.paused_at_us, x.appends_failed, x.shed, x.aborted, x.aborted_pause_ms), (5, 30, Some(7), 9, 4, 1, 1, 12.5));
        assert_eq!((x.move_latency_ms, x.base_latency_ms, x.latency_n, x.move_lost), (Some([20.5, 310.25]), Some([18.0, 40.125]), [70, 2500], Some([3, 1])));
        assert_eq!((y.seed, y.appends_failed, y.aborted, y.aborted_pause_ms, y.move_latency_ms, y.move_lost), (4, 2, 1, 1260.0, None, None));
        let old = "strategy,size_bytes,ratio,bandwidth_bytes_per_s,faults,seed,server_pause_ms,client_pause_ms,before_bytes,during_bytes,rounds,converged\npre-copy,1048576,0.05,1073741824,false,12,29.916,,0,2044696,1,true\n";
        let back = read_csv(old, std::slice::from_ref(&cell)).unwrap();
        assert_eq!((back[0].runs.len(), back[0].runs[0].seed, back[0].runs[0].client_ms, back[0].runs[0].paused_at_us), (1, 12, None, 0));
        let e = read_csv("strategy,seed\n", &[]).unwrap_err();
        assert!(e.contains("no `size_bytes` column"), "{e}");
        let e = read_csv(&old.replace("29.916", "fast"), &[]).unwrap_err();
        assert!(e.contains("line 2: server_pause_ms `fast` is not a number"), "{e}");
    }

    /// The headline names each run of sizes with its winner: stop-and-copy where its mean is
    /// lower, pre-copy elsewhere.
    #[test]
    fn wins_names_the_sizes_where_each_strategy_pauses_less() {
        let cell = |st: Strategy, size: u64| CellResult::empty(&Cell { strategy: st, size, ratio: 0.5, bandwidth: GIB, faults: false });
        let mut results = Vec::new();
        for (size, stop, pre) in [(MIB, 100.0, 130.0), (16 * MIB, 200.0, 240.0), (GIB, 1300.0, 330.0)] {
            for (st, v) in [(Strategy::StopAndCopy, stop), (Strategy::PreCopy, pre)] {
                let mut r = cell(st, size);
                r.runs = (0..3).map(|seed| Measured { seed, server_ms: v, ..Default::default() }).collect();
                results.push(r);
            }
        }
        let rows: Vec<Row> = results.iter().filter_map(|r| row(r, &[])).collect();
        let text = wins(&rows, GIB, 0.5).unwrap();
        assert_eq!(text, "**stop-and-copy wins at 1 MiB to 16 MiB** (pre-copy 1.20 to 1.30 times longer); pre-copy wins at 1 GiB (stop-and-copy 3.94 times longer)");
        assert_eq!(wins(&rows, GIB, 0.25), None);
    }
}
