//! The unit tests of `partmap_sim::report::timeline` (formerly in `sim/src/report/timeline.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::timeline::*;

    /// A line's label near the plot's right edge is drawn left of the line, anchored at its end,
    /// so the plot's clip does not cut it ("workload en"); elsewhere it is right of the line.
    #[test]
    fn a_line_label_at_the_right_edge_turns_left() {
        let mut out = String::new();
        let right_edge = LABEL_W + PLOT_W - 2.0;
        vline(&mut out, 100.0, 7, "phase", "workload ends", right_edge, 0.0);
        assert!(out.contains("text-anchor=\"end\""), "{out}");
        assert!(out.contains(&format!("x=\"{:.1}\"", right_edge - 3.0)), "{out}");
        let mut out = String::new();
        vline(&mut out, 100.0, 7, "phase", "workload ends", LABEL_W + 10.0, 0.0);
        assert!(!out.contains("text-anchor"), "{out}");
        assert!(out.contains(&format!("x=\"{:.1}\"", LABEL_W + 13.0)), "{out}");
        assert!(out.contains("data-len=\"13\""), "{out}");
    }
}
