//! A run's faults as a schedule: the scenario a seed ran (its drawn topology, knobs and move
//! strategy) with every fault and operator request the nemesis injected written out as an
//! explicit `faults.schedule`, and random faults off. Run with the same seed, the file replays
//! the run bit for bit (same trace hash): the nemesis draws from its own stream
//! ([`crate::run::nemesis::plan_rng`]), so writing its draws out leaves the run's generator, which
//! the workload, the network and the nodes draw from, exactly as it was. `shrink` starts from
//! this file and removes what the failure does not need.

use crate::run::{RunOptions, RunReport};
use crate::scenario::{Scenario, TimedFault};

/// The scenario that replays `report` (a run of `opts`) from an explicit schedule: the
/// scenario as run, random faults and random operator requests off, every planned fault and
/// request in `faults.schedule` in the order the nemesis planned them, and a description
/// saying where it came from. Run it with the same seed (and the same `--mutation`).
pub fn from_run(report: &RunReport, opts: &RunOptions) -> Scenario {
    let mut s = report.scenario_run.clone();
    s.swarm = None;
    s.faults.random = None;
    s.moves.requests_per_min = [0.0, 0.0];
    s.moves.drains_per_min = [0.0, 0.0];
    s.faults.schedule = report.plan.iter().map(|p| TimedFault { at_ms: p.at_ms, on: p.on.clone(), until: p.until.clone(), duration_ms: (p.duration_ms != 0).then_some(p.duration_ms), fault: p.fault.spec() }).collect();
    let mutation = opts.mutation.map_or(String::new(), |m| format!(" --mutation {}", crate::run::mutation_names(m, opts.also_mutation)));
    let (faults, requests) = counts(&s);
    let scenario_flag = if opts.scenario_label.ends_with("(built-in)") { String::new() } else { format!(" --scenario {}", opts.scenario_label) };
    s.description = format!(
        "Seed {seed} of {label}{mutation} as an explicit schedule: the topology, knobs and move strategy that seed drew, and the {faults} and {requests} its nemesis injected (random faults and requests off). Run it with the same seed (`partmap-sim run --seed {seed} --scenario FILE{mutation}`) to replay that run exactly. Written by `partmap-sim run --seed {seed}{scenario_flag}{mutation} --emit-schedule FILE`. The source scenario: {source}",
        seed = opts.seed,
        label = opts.scenario_label,
        faults = count(faults, "fault"),
        requests = count(requests, "operator request"),
        source = opts.scenario.description,
    );
    s
}

/// `1 fault`, `2 faults`: a count in words.
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Faults and operator requests (`move`, `drain`, `split_range`, `merge_ranges`) in
/// `s.faults.schedule`.
pub fn counts(s: &Scenario) -> (usize, usize) {
    let requests = s.faults.schedule.iter().filter(|f| f.fault.is_operator_request()).count();
    (s.faults.schedule.len() - requests, requests)
}

/// `s` as a scenario file: pretty JSON, which [`Scenario::parse`] reads back to `s`.
pub fn to_json(s: &Scenario) -> String {
    let mut text = serde_json::to_string_pretty(s).expect("a scenario serializes");
    text.push('\n');
    text
}

/// Write `s` to `path` (creating its directory).
///
/// Errors: `<path>: <io error>` when the directory or file cannot be written.
pub fn write(path: &std::path::Path, s: &Scenario) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, to_json(s)).map_err(|e| format!("{}: {e}", path.display()))
}
