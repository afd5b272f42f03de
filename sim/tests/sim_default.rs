//! Simulation tests of the failover scenario (`scenarios/failover.json`): a sweep of seeds that
//! must all pass, determinism of the trace hash, and the mutation the sweep must catch; and a
//! short sweep of the built-in default, `scenarios/swarm.json`.

use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;
use partmap_sim::sweep::{render, sweep};

fn opts(seed: u64) -> RunOptions {
    RunOptions {
        seed,
        scenario: Scenario::default_failover(),
        scenario_label: "scenarios/failover.json (built-in)".into(),
        mutation: None,
        trace: false,
        echo_header: false,
    }
}

fn report_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("partmap-test-reports-{}", std::process::id()))
}

#[test]
fn sweep_default_200_seeds_all_properties_hold() {
    let base = opts(0);
    let summary = sweep(&base, 0, 200, 2, &report_dir(), false);
    assert!(summary.totals.crashed == 0, "{}", render(&summary));
    assert!(summary.totals.failing == 0, "{}", render(&summary));
    // The nemesis really did something: most seeds crash a server and cut the network.
    let with = |k: &str| summary.totals.seeds_with_fault.get(k).copied().unwrap_or(0);
    assert!(with("crash_server") > 100, "{}", render(&summary));
    assert!(with("isolate") + with("split") + with("one_way") > 150, "{}", render(&summary));
    assert!(summary.totals.ops.appends_ok > 200 * 3000, "{}", render(&summary));
}

#[test]
fn determinism_same_seed_same_trace_hash() {
    let a = run_seed(&opts(7));
    let b = run_seed(&opts(7));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.events.len(), b.events.len());
    let c = run_seed(&opts(8));
    assert_ne!(a.trace_hash, c.trace_hash, "different seeds should not give the same trace");
}

#[test]
fn mutation_server_skips_authority_check_is_caught_by_single_writer() {
    let base = RunOptions { mutation: Some(Mutation::ServerSkipsAuthorityCheck), ..opts(0) };
    let summary = sweep(&base, 0, 60, 2, &report_dir(), false);
    let caught: Vec<_> = summary.failing().filter(|f| f.outcome == RunOutcome::SafetyViolation).collect();
    assert!(!caught.is_empty(), "mutation survived 60 seeds:\n{}", render(&summary));
    assert!(caught.iter().any(|f| f.violations().any(|(p, _)| p == "single_writer")));
    assert_eq!(summary.exit_code(), 1);
}

/// The built-in default, `scenarios/swarm.json`: every flow (failover, moves, splits, merges)
/// under every fault kind, topology drawn per seed. A short sweep holds every property, and
/// faults meet the failover and move flows.
#[test]
fn sweep_swarm_default_holds_and_faults_meet_every_flow() {
    let base = RunOptions { scenario: Scenario::default_swarm(), scenario_label: "scenarios/swarm.json (built-in)".into(), ..opts(0) };
    let summary = sweep(&base, 0, 40, 2, &report_dir(), false);
    assert!(summary.totals.crashed == 0 && summary.totals.failing == 0, "{}", render(&summary));
    // Found by the 5000-seed sweep (seed 741 before the nemesis drew from its own stream): a
    // leader term the authority recovered from a torn write was never announced, and
    // manager_exclusive took its holder's commits for a deposed leader's. Seed 151 has that
    // situation now: lock-1 crashes with the term's record surviving unsynced.
    let recovered = run_seed(&RunOptions { seed: 151, ..base.clone() });
    use partmap_sim::events::{Sys, What};
    let announced: Vec<(u32, u64)> = recovered.events.iter().filter_map(|e| match &e.what {
        What::Sys(Sys::Leader { manager, leader_epoch }) => Some((*manager, *leader_epoch)),
        _ => None,
    }).collect();
    let unannounced = recovered.events.iter().any(|e| matches!(&e.what, What::Sys(Sys::LeaderRecovered { manager, leader_epoch }) if *leader_epoch > 0 && !announced.contains(&(*manager, *leader_epoch))));
    assert!(unannounced, "seed 151 no longer recovers an unannounced leader term; pick another seed");
    assert_eq!(recovered.outcome(), RunOutcome::Pass, "{:?}", recovered.verdicts);
    for flow in ["failover", "move", "split", "merge"] {
        let kinds = summary.totals.fault_flow_seeds.values().filter(|m| m.contains_key(flow)).count();
        assert!(kinds >= 5, "only {kinds} fault kinds met the {flow} flow:\n{}", render(&summary));
    }
}
