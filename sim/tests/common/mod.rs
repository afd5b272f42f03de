//! Helpers shared by the scenario tests.
#![allow(dead_code)] // each test file uses its own subset

use partmap::map::PartitionMap;
use partmap_sim::events::{Sys, What};
use partmap_sim::run::{RunOptions, RunReport};
use partmap_sim::scenario::Scenario;
use std::path::Path;

/// Run options for `scenarios/<name>` at seed 1, no mutation, quiet.
pub fn scenario(name: &str) -> RunOptions {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name);
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    RunOptions { seed: 1, scenario, scenario_label: format!("scenarios/{name}"), mutation: None, also_mutation: None, trace: false, echo_header: false }
}

/// The run's control-plane events, each with its simulated time (µs), in history order.
pub fn sys(report: &RunReport) -> impl Iterator<Item = (u64, &Sys)> + '_ {
    report.events.iter().filter_map(|e| e.sys().map(|s| (e.t_us, s)))
}

/// The run's harness events (invocations, completions, faults, ...), each with its simulated
/// time (µs), in history order.
pub fn harness(report: &RunReport) -> impl Iterator<Item = (u64, &What)> + '_ {
    report.events.iter().filter(|e| e.sys().is_none()).map(|e| (e.t_us, &e.what))
}

/// Every map the authority made current (committed, or restored from its disk at a (re)start),
/// with its time (µs), in history order: where the rows (`map.rows`), the transfer journal
/// (`map.transfers`) and the split/merge journal (`map.reshapes`) are read from.
pub fn maps(report: &RunReport) -> impl Iterator<Item = (u64, &PartitionMap)> + '_ {
    sys(report).filter_map(|(t, s)| match s {
        Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. } => Some((t, &**map)),
        _ => None,
    })
}
