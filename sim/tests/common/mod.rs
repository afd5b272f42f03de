//! Helpers shared by the scenario tests.
#![allow(dead_code)] // each test file uses its own subset

use partmap_sim::events::Event;
use partmap_sim::run::{RunOptions, RunReport};
use partmap_sim::scenario::Scenario;
use std::path::Path;

/// Run options for `scenarios/<name>` at seed 1, no mutation, quiet.
pub fn scenario(name: &str) -> RunOptions {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name);
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    RunOptions { seed: 1, scenario, scenario_label: format!("scenarios/{name}"), mutation: None, trace: false, echo_header: false }
}

/// The run's events of one kind.
pub fn of<'a>(report: &'a RunReport, kind: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
    report.events.iter().filter(move |e| e.kind == kind)
}
