//! `run`, `shrink` and `timeline`: one seed, its smallest failing schedule, its timeline.

use partmap_sim::run::{run_seed, RunOptions};
use partmap_sim::sweep;
use partmap_sim::search::shrink::{self, ShrinkOptions};
use std::process::ExitCode;
use super::*;

/// `run`: one seed with its verdicts, figures and trace hash; optionally the trace, the schedule it drew and its history as EDN.
pub fn run(args: RunArgs) -> ExitCode {
    let RunArgs { seed, scenario, trace, mutation, emit_schedule, history } = args;
    let (scenario, scenario_label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let opts = RunOptions { seed, scenario, scenario_label, mutation: mutation.map(|m| m.first), also_mutation: mutation.and_then(|m| m.also), trace, echo_header: true };
    let report = match std::panic::catch_unwind(|| run_seed(&opts)) {
        Ok(report) => report,
        Err(_) => {
            eprintln!("HARNESS CRASH on seed {seed} (the panic message is above)");
            return ExitCode::from(3);
        }
    };
    print_what_happened(&report);
    print_handoffs(&report);
    print_verdicts(&report, opts.mutation.is_some());
    if let Err(code) = write_outputs(&report, &opts, history.as_deref(), emit_schedule.as_deref()) {
        return code;
    }
    print_availability(&report);
    let outcome = report.outcome();
    println!("outcome={outcome:?} expected={:?}", opts.scenario.expect.outcome);
    println!("trace_hash={:016x}", report.trace_hash);
    if outcome.matches(opts.scenario.expect.outcome) {
        ExitCode::SUCCESS
    } else if outcome == partmap_sim::run::RunOutcome::Pass {
        ExitCode::from(1)
    } else {
        ExitCode::from(outcome.exit_code() as u8)
    }
}

/// The faults and requests of the run, what was skipped or never fired, the operations and the coverage.
fn print_what_happened(report: &partmap_sim::run::RunReport) {
    let o = &report.ops;
    println!("faults injected: {}", if report.faults.is_empty() { "none".to_string() } else { report.faults.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ") });
    let verdicts = report.operator_verdicts();
    if !verdicts.is_empty() {
        let refused: Vec<_> = verdicts.iter().filter(|v| v.2.is_some()).collect();
        println!("operator requests: {} accepted, {} refused", verdicts.len() - refused.len(), refused.len());
        for (t_us, request, reason) in refused {
            println!("OPERATOR REQUEST REFUSED at {}.{:06}s: {request}: {}", t_us / 1_000_000, t_us % 1_000_000, reason.unwrap_or_default());
        }
    }
    for t in &report.unfired_triggers {
        println!("TRIGGER NEVER FIRED: {t}");
    }
    let skipped: Vec<String> = report.events.iter().filter_map(|e| match &e.what {
        partmap_sim::events::What::FaultSkipped { fault, reason } => Some(format!("{fault} ({reason})")),
        _ => None,
    }).collect();
    if !skipped.is_empty() {
        println!("aimed faults skipped (role empty when due): {}", skipped.join("; "));
    }
    println!("operations: appends ok={} failed={} unknown={}; reads ok={} failed={}; MapUnavailable={}; shed={}", o.appends_ok, o.appends_failed, o.appends_unknown, o.reads_ok, o.reads_failed, o.unavailable, o.shed);
    println!("sim_ms={} recovery_after_heal_ms={} unavailable_ms={} events={}", report.sim_ms, report.recovery_ms, report.unavailable_ms, report.events.len());
    let hit: Vec<String> = report.coverage.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("coverage: {}", if hit.is_empty() { "none".to_string() } else { hit.join(" ") });
    if !report.reshapes.is_empty() {
        let parts: Vec<String> = report.reshapes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("splits and merges: {}", parts.join(" "));
    }
}

/// Every planned move's write pause and bytes copied, and the handoffs no map published.
fn print_handoffs(report: &partmap_sim::run::RunReport) {
    for h in &report.handoffs {
        let client = h.client_gap_ms.map_or("no client tried".to_string(), |g| format!("{g:.1} ms"));
        let baseline = h.client_baseline_ms.map_or("none".to_string(), |g| format!("{g:.1} ms"));
        println!(
            "handoff r{} server-{}@e{} -> server-{}@e{} {}: write pause {:.1} ms at the servers, {client} at the clients ({baseline} away from moves); copied {} B before the pause, {} B during, {} B in all",
            h.range, h.from, h.from_epoch, h.to, h.epoch, h.strategy, h.server_pause_ms, h.precopy_bytes, h.tail_bytes, h.bytes
        );
    }
    for h in &report.superseded_handoffs {
        println!(
            "superseded handoff r{} server-{}@e{} -> server-{}@e{} {}: the target served, but no map version published it (failover or rollback); not counted",
            h.range, h.from, h.from_epoch, h.to, h.epoch, h.strategy
        );
    }
    if report.unannounced_versions > 0 {
        println!("map versions durable at lock-1 but never announced by a map_commit: {} (judged from the durable log)", report.unannounced_versions);
    }
}

/// Each property's verdict and its views; with a mutation on, what the checkers without the durable log and the served final reads say.
fn print_verdicts(report: &partmap_sim::run::RunReport, mutated: bool) {
    for v in &report.verdicts {
        match &v.violation {
            None => println!("property {}: pass", v.property),
            Some(e) => println!("property {}: VIOLATED: {e}", v.property),
        }
        let views: Vec<String> = report.views.iter().filter(|w| w.property == v.property).map(|w| format!("{}={}", w.view, if w.violation.is_some() { "violated" } else { "pass" })).collect();
        if views.len() > 1 {
            println!("  views: {}", views.join(" "));
        }
    }
    if mutated {
        println!("checkers without the durable log and the served final reads: {}", report.legacy_violation.as_deref().map_or("pass".to_string(), |e| format!("violated: {e}")));
    }
}

/// `--history` and `--emit-schedule`: write the history as EDN and the drawn schedule. `Err`: exit 3, the file could not be written.
fn write_outputs(report: &partmap_sim::run::RunReport, opts: &RunOptions, history: Option<&std::path::Path>, emit_schedule: Option<&std::path::Path>) -> Result<(), ExitCode> {
    let seed = opts.seed;
    if let Some(path) = history {
        match partmap_sim::report::history_edn::write(path, &report.events, &report.served) {
            Ok(n) => println!("history: {} ({n} operation lines, Jepsen EDN)", path.display()),
            Err(e) => {
                eprintln!("error: --history: cannot write {e}");
                return Err(ExitCode::from(3));
            }
        }
    }
    if let Some(path) = emit_schedule {
        let s = partmap_sim::search::schedule::from_run(report, opts);
        let (faults, requests) = partmap_sim::search::schedule::counts(&s);
        if let Err(e) = partmap_sim::search::schedule::write(path, &s) {
            eprintln!("error: --emit-schedule: cannot write {e}");
            return Err(ExitCode::from(3));
        }
        println!("schedule: {} ({faults} faults, {requests} operator requests; replay with --seed {seed})", path.display());
    }
    Ok(())
}

/// The availability figures and the bounds they exceeded.
fn print_availability(report: &partmap_sim::run::RunReport) {
    let a = &report.availability;
    println!(
        "availability: write_pause_ms={:.1} unavailable_ms={} range_unavailable_ms={}{} recovery_after_fault_ms={} leader_terms={} leader_terms_without_manager_fault={}",
        a.write_pause_ms, a.unavailable_ms, a.range_unavailable_ms, a.range_unavailable_range.map_or(String::new(), |r| format!(" (r{r})")), a.recovery_after_fault_ms, a.leader_terms, a.leader_terms_without_manager_fault
    );
    for line in &report.bounds_exceeded {
        println!("BOUND EXCEEDED: {line}");
    }
    for line in &report.bounds_exceeded {
        println!("BOUND EXCEEDED: {line}");
    }
}

/// `shrink`: from a failing seed to a smallest explicit schedule that still fails the same way.
pub fn shrink(args: ShrinkArgs) -> ExitCode {
    let ShrinkArgs { seed, scenario, mutation, jobs, max_runs, faults_only, report_dir } = args;
    if let Err(e) = sweep::check_report_dir(&report_dir) {
        return usage(e);
    }
    let (scenario, scenario_label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let opts = ShrinkOptions { seed, scenario, scenario_label, mutation, jobs: jobs as usize, max_runs: max_runs as usize, faults_only, echo: true };
    let shrunk = match shrink::shrink(&opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(match e {
                shrink::ShrinkError::Passes(_) => 1,
                shrink::ShrinkError::HarnessPanic(_) | shrink::ShrinkError::NotReproduced(_) => 3,
            });
        }
    };
    let path = shrink::output_path(&report_dir, &opts.scenario_label, mutation, seed);
    let described = shrink::describe_result(&shrunk, &opts, &path);
    if let Err(e) = partmap_sim::search::schedule::write(&path, &described) {
        eprintln!("error: cannot write the shrunk scenario: {e}");
        return ExitCode::from(3);
    }
    let flag = mutation.map_or(String::new(), |m| format!(" --mutation {}", m.name()));
    println!(
        "shrunk: faults {} -> {}, operator requests {} -> {}, in {} runs, {:.1} s; {} still violated: {}",
        shrunk.before.0, shrunk.after.0, shrunk.before.1, shrunk.after.1, shrunk.runs, shrunk.wall_s, shrunk.property, shrunk.evidence
    );
    for f in &described.faults.schedule {
        println!("  {}", shrink::describe(f));
    }
    println!("written: {}", path.display());
    println!("repro: cargo run --release -p partmap-sim -- run --seed {seed} --scenario {}{flag}", path.display());
    ExitCode::SUCCESS
}

/// `timeline`: one seed drawn as a self-contained HTML page.
pub fn timeline(args: TimelineArgs) -> ExitCode {
    let TimelineArgs { seed, scenario, mutation, out, report_dir } = args;
    if let Err(e) = if out.is_none() { sweep::check_report_dir(&report_dir) } else { Ok(()) } {
        return usage(e);
    }
    let (scenario, scenario_label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let opts = RunOptions { seed, scenario, scenario_label, mutation, also_mutation: None, trace: false, echo_header: false };
    let report = match std::panic::catch_unwind(|| run_seed(&opts)) {
        Ok(report) => report,
        Err(_) => {
            eprintln!("HARNESS CRASH on seed {seed} (the panic message is above)");
            return ExitCode::from(3);
        }
    };
    let path = out.unwrap_or_else(|| report_dir.join("timelines").join(format!("{}.html", sweep::seed_stem(&opts, seed))));
    let html = partmap_sim::report::timeline::render(&report, &opts);
    if let Err(e) = path.parent().filter(|d| !d.as_os_str().is_empty()).map_or(Ok(()), std::fs::create_dir_all).and_then(|_| std::fs::write(&path, html)) {
        eprintln!("error: cannot write {}: {e}", path.display());
        return ExitCode::from(3);
    }
    for v in report.verdicts.iter().filter(|v| v.violation.is_some()) {
        println!("property {}: VIOLATED: {}", v.property, v.violation.as_deref().unwrap_or(""));
    }
    println!("outcome={:?} trace_hash={:016x}", report.outcome(), report.trace_hash);
    println!("timeline: {}", path.display());
    ExitCode::SUCCESS
}
