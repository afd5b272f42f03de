//! The sweep oracle of mutation testing: a bounded sweep of the scenarios that
//! exercise one file of the control plane, failing on the first seed whose run violates a
//! property (safety or liveness) or panics. cargo-mutants runs it on each mutant the library's
//! tests did not catch (`just mutation-sweep FILE`, README "Mutation testing"); it is ignored
//! in the ordinary test run.
//!
//! `PARTMAP_ORACLE_FILE` names the file (`src/server/core.rs`; a file of a folder, `src/server/` or
//! `src/store/`, picks the folder's scenarios; unset: every scenario below once);
//! `PARTMAP_ORACLE_SEEDS` the seeds per scenario (default 20, seeds 0..N); the runs use two
//! worker threads.

use partmap_sim::run::{repro_command, run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The scenarios that exercise each file: the named mutations' scenarios for the mechanisms in
/// it, plus the default one.
fn scenarios_for(file: &str) -> Vec<&'static str> {
    let mut s = match file {
        f if f.starts_with("src/store") => vec!["stale-write-after-failover.json", "held-store-append.json", "failover.json"],
        "src/authority.rs" | "src/lock.rs" => vec!["dueling-managers.json", "authority-outage.json", "failover.json"],
        "src/map.rs" => vec!["split-merge.json", "moves.json", "merge-manager-crash.json"],
        f if f.starts_with("src/server") => vec!["paused-owner.json", "cut-off-owner.json", "stale-pause.json", "unfenced-new-owner.json", "transfer-divergence.json", "clock-drift-long-lease.json", "moves.json"],
        "src/frontend.rs" => vec!["failover.json", "authority-outage.json", "moves.json"],
        "src/handoff.rs" => vec!["moves.json", "split-merge.json", "merge-manager-crash.json", "move-source-crash.json", "transfer-divergence.json"],
        _ => vec!["failover.json", "moves.json", "split-merge.json", "dueling-managers.json"],
    };
    s.push("swarm.json");
    s
}

#[test]
#[ignore = "the sweep oracle of mutation testing; `just mutation-sweep FILE` runs it"]
fn mutation_oracle_sweep_finds_no_violation() {
    let file = std::env::var("PARTMAP_ORACLE_FILE").unwrap_or_default();
    let seeds: u64 = std::env::var("PARTMAP_ORACLE_SEEDS").ok().map(|s| s.parse().expect("PARTMAP_ORACLE_SEEDS: a number of seeds")).unwrap_or(20);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/");
    let mut runs = Vec::new();
    for name in scenarios_for(&file) {
        let text = std::fs::read_to_string(format!("{dir}{name}")).unwrap_or_else(|e| panic!("scenarios/{name}: {e}"));
        let scenario = Scenario::parse(&text, &format!("scenarios/{name}")).expect("a valid scenario");
        for seed in 0..seeds {
            runs.push(RunOptions { seed, scenario: scenario.clone(), scenario_label: format!("scenarios/{name}"), mutation: None, also_mutation: None, trace: false, echo_header: false });
        }
    }
    let next = AtomicU64::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                if i >= runs.len() || failed.lock().unwrap().is_some() {
                    return;
                }
                let opts = &runs[i];
                let verdict = match catch_unwind(AssertUnwindSafe(|| run_seed(opts))) {
                    Ok(report) if report.outcome() == RunOutcome::Pass => continue,
                    Ok(report) => {
                        let v = report.verdicts.iter().find(|v| v.violation.is_some()).map(|v| format!("{}: {}", v.property, v.violation.as_deref().unwrap_or(""))).unwrap_or_default();
                        format!("{:?}, {v}", report.outcome())
                    }
                    Err(_) => "the run panicked".to_string(),
                };
                *failed.lock().unwrap() = Some(format!("{} seed {}: {verdict}\nrepro: {}", opts.scenario_label, opts.seed, repro_command(opts, opts.seed)));
            });
        }
    });
    if let Some(f) = failed.into_inner().unwrap() {
        panic!("{f}");
    }
}
