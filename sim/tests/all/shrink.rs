//! From a failing seed to a minimal story (issue 14): a run's faults written out as a schedule
//! replay the run exactly; `shrink` takes a fence, a lease and a split/merge mutation's first
//! catching seed down to at most five faults that still fail the same way when the written
//! file is run; the timeline of a failing seed is one self-contained page that marks the
//! evidence.

use crate::common;

use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;
use partmap_sim::search::shrink::{describe_result, output_path, shrink, ShrinkOptions};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("partmap-shrink-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The first violated property of a run and its evidence.
fn first_violation(opts: &RunOptions) -> Option<(String, String)> {
    run_seed(opts).verdicts.iter().find_map(|v| v.violation.clone().map(|e| (v.property.to_string(), e)))
}

#[test]
fn schedule_of_a_swarm_seed_replays_it_bit_for_bit() {
    let opts = RunOptions { seed: 3, scenario: Scenario::default_swarm(), scenario_label: "scenarios/swarm.json (built-in)".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let emitted = partmap_sim::search::schedule::from_run(&report, &opts);
    assert!(emitted.swarm.is_none() && emitted.faults.random.is_none(), "the schedule is explicit");
    assert!(!emitted.faults.schedule.is_empty(), "seed 3 injects faults");
    assert_eq!(emitted.faults.schedule.len(), report.plan.len());
    assert!(emitted.description.contains("Seed 3 of scenarios/swarm.json"), "{}", emitted.description);
    let path = temp_dir("replay").join("swarm-seed-3.json");
    partmap_sim::search::schedule::write(&path, &emitted).expect("written");
    let loaded = Scenario::load(&path).expect("the written schedule parses and validates");
    assert_eq!(loaded, emitted, "the file reads back to the same scenario");
    let replay = run_seed(&RunOptions { scenario: loaded, scenario_label: path.display().to_string(), ..opts.clone() });
    assert_eq!(replay.trace_hash, report.trace_hash, "the schedule replays the seed event for event");
    assert_eq!(replay.faults, report.faults);
}

/// Checkpoint-and-branch by re-execution (the explorer's branch): a fault added at `t` to a
/// seed's explicit schedule leaves the run before `t` event for event the same, and the run
/// from `t` on differs. (One task per fault spawned at the start made madsim's random task
/// order differ from the first millisecond.)
#[test]
fn a_fault_added_at_t_leaves_the_run_before_t_unchanged() {
    let opts = RunOptions { seed: 3, scenario: Scenario::default_swarm(), scenario_label: "scenarios/swarm.json (built-in)".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let explicit = partmap_sim::search::schedule::from_run(&run_seed(&opts), &opts);
    let before = run_seed(&RunOptions { scenario: explicit.clone(), ..opts.clone() });
    let t_ms = 20_000;
    let mut branched = explicit;
    let fault = partmap_sim::scenario::FaultSpec::Crash { node: "server-2".into() };
    branched.faults.schedule.push(partmap_sim::scenario::TimedFault { at_ms: t_ms, on: None, until: None, duration_ms: Some(1500), fault });
    branched.faults.schedule.sort_by_key(|f| f.at_ms);
    let after = run_seed(&RunOptions { scenario: branched, ..opts.clone() });
    let prefix = |r: &partmap_sim::run::RunReport| r.events.iter().filter(|e| e.t_us < t_ms * 1000).map(|e| format!("{} {:?}", e.t_us, e.what)).collect::<Vec<_>>();
    let (a, b) = (prefix(&before), prefix(&after));
    assert!(a.len() > 1000, "the prefix holds the run's first 20 s ({} events)", a.len());
    assert_eq!(a, b, "the run before the added fault is unchanged");
    assert_ne!(before.trace_hash, after.trace_hash, "the added crash changes the run after it");
}

/// For a fence, a lease and a split/merge mutation: shrink the first catching seed (see
/// `reports/mutants.md`) to at most five faults, write the result, and run the written file as
/// `partmap-sim run --seed N --scenario FILE --mutation M` would: the same property fails.
#[test]
fn shrink_fence_lease_and_split_mutations_to_at_most_five_faults_that_fail_the_same_way() {
    let dir = temp_dir("cases");
    for (mutation, scenario, seed) in [
        (Mutation::StoreIgnoresFence, "stale-write-after-failover.json", 0),
        (Mutation::ServerIgnoresLeaseExpiry, "cut-off-owner.json", 0),
        (Mutation::RetireParentsFirst, "split-merge.json", 0),
    ] {
        let base = RunOptions { seed, mutation: Some(mutation), ..common::scenario(scenario) };
        let (property, _) = first_violation(&base).unwrap_or_else(|| panic!("{} is not caught on seed {seed} of {scenario}", mutation.name()));
        let opts = ShrinkOptions { seed, scenario: base.scenario.clone(), scenario_label: base.scenario_label.clone(), mutation: Some(mutation), jobs: 2, max_runs: 400, faults_only: false, echo: false };
        let shrunk = shrink(&opts).unwrap_or_else(|e| panic!("{}: {e}", mutation.name()));
        let steps = shrunk.steps.join("\n");
        assert_eq!(shrunk.property, property, "{}: shrinking keeps the property\n{steps}", mutation.name());
        assert!(shrunk.after.0 + shrunk.after.1 <= 5, "{}: {} faults and {} requests left\n{steps}", mutation.name(), shrunk.after.0, shrunk.after.1);
        assert!(shrunk.after.0 + shrunk.after.1 <= shrunk.before.0 + shrunk.before.1);
        let path = output_path(&dir, &base.scenario_label, Some(mutation), seed);
        let described = describe_result(&shrunk, &opts, &path);
        assert!(described.description.contains(&format!("seed {seed} of scenarios/{scenario}")), "{}", described.description);
        partmap_sim::search::schedule::write(&path, &described).expect("written");
        let loaded = Scenario::load(&path).expect("the shrunk file parses and validates");
        let rerun = RunOptions { seed, scenario: loaded, scenario_label: path.display().to_string(), mutation: Some(mutation), also_mutation: None, trace: false, echo_header: false };
        let (again, evidence) = first_violation(&rerun).unwrap_or_else(|| panic!("{}: the written file passes\n{steps}", mutation.name()));
        assert_eq!(again, property, "{}: {evidence}", mutation.name());
        // Without the mutation the shrunk schedule is harmless: the mutation is the cause.
        let unmutated = run_seed(&RunOptions { mutation: None, ..rerun });
        assert_eq!(unmutated.outcome(), RunOutcome::Pass, "{}: {:?}", mutation.name(), unmutated.verdicts);
    }
}

#[test]
fn shrink_of_a_passing_seed_is_an_error_that_says_so() {
    let base = common::scenario("paused-owner.json");
    let opts = ShrinkOptions { seed: 1, scenario: base.scenario, scenario_label: base.scenario_label, mutation: None, jobs: 1, max_runs: 10, faults_only: true, echo: false };
    let err = shrink(&opts).expect_err("nothing to shrink");
    assert!(matches!(err, partmap_sim::search::shrink::ShrinkError::Passes(_)), "{err}");
    assert!(err.to_string().contains("passes every property") && err.to_string().contains("seed 1"), "{err}");
}

#[test]
fn timeline_of_a_failing_seed_is_self_contained_and_marks_the_evidence() {
    let opts = RunOptions { seed: 0, mutation: Some(Mutation::StoreIgnoresFence), ..common::scenario("stale-write-after-failover.json") };
    let report = run_seed(&opts);
    let verdict = report.verdicts.iter().find(|v| v.violation.is_some()).expect("the mutation is caught");
    assert!(!verdict.evidence.times_us.is_empty() && !verdict.evidence.keys.is_empty(), "{:?}", verdict.evidence);
    let html = partmap_sim::report::timeline::render(&report, &opts);
    // Self-contained: no fetch of anything (the SVG namespace is a name, not a request).
    for bad in ["<script src", "<link", "@import", "url(http", "src=\"http"] {
        assert!(!html.contains(bad), "the page loads `{bad}`");
    }
    assert_eq!(html.matches("http").count(), html.matches("http://www.w3.org/2000/svg").count(), "only the SVG namespace names a URL");
    assert!(html.contains("single_writer VIOLATED"));
    // A red line per evidence time, and the events around each, the one at that instant marked.
    let mut times = verdict.evidence.times_us.clone();
    times.sort_unstable();
    times.dedup();
    assert_eq!(html.matches("class=\"evidence\"").count(), times.len());
    for i in 0..times.len() {
        assert!(html.contains(&format!("id=\"events-{i}\"")), "no events around evidence {i}");
    }
    assert!(html.contains("<li class=\"now\">"), "the evidence's own event is marked");
    // Every node and every range has a lane; the cited range's label is marked.
    for node in report.scenario_run.node_names() {
        assert!(html.contains(&format!(">{node}<title>")), "no lane for {node}");
    }
    let cited = verdict.evidence.ranges[0];
    assert!(html.contains(&format!("class=\"lane cited\">r{cited} ")), "the cited range r{cited} is not marked");
}
