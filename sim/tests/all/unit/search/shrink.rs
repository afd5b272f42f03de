//! The unit tests of `partmap_sim::search::shrink` (formerly in `sim/src/search/shrink.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::search::shrink::counted;
    use partmap_sim::scenario::TimedFault;

    #[test]
    fn a_step_counts_faults_and_operator_requests_apart() {
        let entry = |json: &str| -> TimedFault { serde_json::from_str(json).expect("a schedule entry") };
        let crash = entry(r#"{ "at_ms": 5, "duration_ms": 3000, "fault": { "kind": "crash", "node": "server-1" } }"#);
        let mv = entry(r#"{ "at_ms": 2000, "fault": { "kind": "move", "key": "k000000", "to": "server-2" } }"#);
        assert_eq!(counted(&[crash.clone(), crash.clone()], std::slice::from_ref(&crash)), "faults 2 -> 1");
        assert_eq!(counted(&[crash.clone(), mv.clone(), mv.clone()], std::slice::from_ref(&mv)), "faults 1 -> 0, operator requests 2 -> 1");
        assert_eq!(counted(&[crash, mv], &[]), "faults 1 -> 0, operator requests 1 -> 0");
    }
}
