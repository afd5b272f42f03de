//! The managers' rolling restart, end to end on scenarios/rolling-restart-managers.json: each
//! manager in turn stands aside by the operator's leader transfer and is then restarted (the
//! role `standby-manager`, resolved when the crash starts, is the manager that just stood
//! aside). Every property holds and the scenario's `expect` bounds hold (else the outcome is
//! `bound_exceeded`); both managers are restarted, neither while it leads; each turn's
//! standby leads within 500 ms of the release; the manager restarted first, memory gone, leads
//! the third term; and no turn leaves a range without an append for longer than the scenario's
//! bound.

use partmap::event::Event;
use partmap_sim::events::What;
use partmap_sim::report::questions::upgrade::restarts;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;

/// The longest the standby may take to lead after a release, ms (as in leader_transfer.rs).
const TAKEOVER_BOUND_MS: f64 = 500.0;

#[test]
fn rolling_restart_managers_restarts_each_standing_aside_and_keeps_the_bounds() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/rolling-restart-managers.json");
    let scenario = Scenario::load(std::path::Path::new(path)).expect("the scenario parses");
    let bound = scenario.expect.max_range_unavailable_ms.expect("the scenario bounds one range's unavailability") as f64;
    for seed in 0..6 {
        let opts = RunOptions { seed, scenario: scenario.clone(), scenario_label: path.into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
        let report = run_seed(&opts);
        assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?} {:?}", report.verdicts, report.availability);
        let turns = restarts(&report.events, &report.handoffs, scenario.workload.duration_s * 1_000_000);
        let mut names: Vec<&str> = turns.iter().map(|t| t.manager.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["manager-1", "manager-2"], "seed {seed}: each manager restarted once: {turns:?}");
        for t in &turns {
            assert!(!t.was_leader, "seed {seed}: {} restarted while it led", t.manager);
            let gap = t.takeover_ms.unwrap_or_else(|| panic!("seed {seed}: no handover in {}'s turn", t.manager));
            assert!(gap <= TAKEOVER_BOUND_MS, "seed {seed}: the standby led {gap} ms after {}'s release", t.manager);
            assert!(t.range_unavailable_ms <= bound, "seed {seed}: a range waited {} ms in {}'s turn", t.range_unavailable_ms, t.manager);
        }
        let leaders: Vec<u32> = report.events.iter().filter_map(|e| match &e.what { What::Sys(Event::Leader { manager, .. }) => Some(*manager), _ => None }).collect();
        assert_eq!(leaders.len(), 3, "seed {seed}: three terms, one per handover: {leaders:?}");
        assert_eq!(format!("manager-{}", leaders[2]), turns[0].manager, "seed {seed}: the manager restarted first leads the third term");
        assert_eq!(report.availability.leader_terms_without_manager_fault, 0, "seed {seed}");
    }
}
