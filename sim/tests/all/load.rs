//! Bounded load (issue 13): a random client has at most `workload.in_flight_per_client`
//! operations in flight, sheds what it cannot start within `workload.shed_after_ms` of its
//! arrival, and starts nothing after the window.

use crate::common;

use partmap_sim::events::What;
use partmap_sim::run::{run_seed, RunReport, RunOutcome};
use std::collections::BTreeMap;

/// The most operations any random client had in flight at once, from its invocations and
/// completions (clients `1..=clients`; the probe and the script are not random clients).
fn most_in_flight(report: &RunReport, clients: u32) -> u32 {
    let mut open: BTreeMap<u32, u32> = BTreeMap::new();
    let mut most = 0;
    for (_, what) in common::harness(report) {
        match what {
            What::Invoke { id, .. } if (1..=clients).contains(&id.client) => {
                let n = open.entry(id.client).or_default();
                *n += 1;
                most = most.max(*n);
            }
            What::Complete { id, .. } if (1..=clients).contains(&id.client) => *open.get_mut(&id.client).expect("completed after invoked") -= 1,
            _ => {}
        }
    }
    most
}

/// Check one run: the in-flight bound, no start after the window, shed arrivals inside it and
/// counted; returns (most in flight, shed).
fn check(report: &RunReport, clients: u32, bound: u32, end_us: u64) -> (u32, u64) {
    assert_eq!(report.outcome(), RunOutcome::Pass, "seed {}", report.seed);
    let most = most_in_flight(report, clients);
    assert!(most <= bound, "seed {}: a client had {most} operations in flight, bound {bound}", report.seed);
    let late: Vec<u64> = common::harness(report).filter(|(t, w)| matches!(w, What::Invoke { id, .. } if (1..=clients).contains(&id.client) && *t >= end_us)).map(|(t, _)| t).collect();
    assert!(late.is_empty(), "seed {}: operations started after the window: {late:?}", report.seed);
    let shed: Vec<(u64, u64)> = common::harness(report).filter_map(|(t, w)| if let What::Shed { arrived_us, .. } = w { Some((t, *arrived_us)) } else { None }).collect();
    for (t, arrived) in &shed {
        assert!(*arrived < end_us && arrived <= t, "seed {}: shed at {t} µs of an arrival at {arrived} µs", report.seed);
    }
    assert_eq!(report.ops.shed, shed.len() as u64);
    (most, report.ops.shed)
}

/// One operation at a time per client (the default): the bound holds on every seed, the
/// window ends the workload, and a crash's stall sheds arrivals instead of queueing them.
#[test]
fn load_failover_one_in_flight_sheds_during_stalls_and_stops_at_the_window() {
    let base = common::scenario("failover.json");
    let w = &base.scenario.workload;
    assert_eq!((w.in_flight_per_client, w.shed_after_ms), (1, 1000), "the defaults");
    let end_us = w.duration_s * 1_000_000;
    let clients = base.scenario.topology.clients;
    let mut shed = 0;
    for seed in 0..4 {
        let report = run_seed(&partmap_sim::run::RunOptions { seed, ..base.clone() });
        let (most, n) = check(&report, clients, 1, end_us);
        assert_eq!(most, 1);
        shed += n;
    }
    assert!(shed > 0, "no seed shed an operation: the stalls of 4 seeds of failovers were all shorter than shed_after_ms");
}

/// Four operations in flight per client at a rate one at a time cannot carry: clients do run
/// operations concurrently, never more than the bound.
#[test]
fn load_failover_four_in_flight_runs_operations_concurrently_within_the_bound() {
    let mut base = common::scenario("failover.json");
    base.scenario.workload.in_flight_per_client = 4;
    base.scenario.workload.ops_per_s = 400.0;
    base.scenario.workload.duration_s = 20;
    base.scenario.validate().unwrap();
    let end_us = 20_000_000;
    let clients = base.scenario.topology.clients;
    let mut most_any = 0;
    for seed in 0..2 {
        let report = run_seed(&partmap_sim::run::RunOptions { seed, ..base.clone() });
        let (most, _) = check(&report, clients, 4, end_us);
        most_any = most_any.max(most);
    }
    assert!(most_any > 1, "no client ever had two operations in flight");
}
