//! Golden scenarios: explicit fault schedules whose outcome is known, with and without the
//! mutation that removes the mechanism they exercise.

use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;
use std::path::Path;

fn scenario(name: &str) -> RunOptions {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name);
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    RunOptions { seed: 1, scenario, scenario_label: format!("scenarios/{name}"), mutation: None, trace: false, echo_header: false }
}

#[test]
fn golden_stale_write_after_failover_is_fenced_at_the_store() {
    for seed in 1..=3 {
        let opts = RunOptions { seed, ..scenario("stale-write-after-failover.json") };
        let report = run_seed(&opts);
        assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?}", report.verdicts);
        // The held appends did arrive, with server-1's old epoch, and the fence refused them.
        let refused = report.events.iter().filter(|e| e.kind == "fenced" && e.u("server") == 1).count();
        assert!(refused > 0, "seed {seed}: no stale write reached the store");
        assert!(report.faults.get("delay") == Some(&1) && report.faults.get("crash_manager") == Some(&2));
    }
}

#[test]
fn golden_stale_write_lands_when_the_store_ignores_the_fence() {
    for seed in 1..=3 {
        let opts = RunOptions { seed, mutation: Some(Mutation::StoreIgnoresFence), ..scenario("stale-write-after-failover.json") };
        let report = run_seed(&opts);
        assert_eq!(report.outcome(), RunOutcome::SafetyViolation, "seed {seed}");
        let sw = report.verdicts.iter().find(|v| v.property == "single_writer").expect("checked");
        let evidence = sw.violation.as_deref().expect("single_writer must catch it");
        let stale = evidence.contains("past the fence") || evidence.contains("epochs go down");
        assert!(stale && evidence.contains("server-1 at epoch 1"), "{evidence}");
    }
}
