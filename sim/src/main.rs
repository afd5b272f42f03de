//! `partmap-sim`: run one seed, or sweep many.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions};
use partmap_sim::scenario::Scenario;
use partmap_sim::shrink::{self, ShrinkOptions};
use partmap_sim::{mutants, sweep};
use std::path::PathBuf;
use std::process::ExitCode;

/// Deterministic simulation of a range-partitioned storage control plane.
///
/// Exit codes: 0 every seed ended as its scenario expects (by default: every property held),
/// 1 a safety property was violated (or an expected violation did not happen), 2 a liveness
/// property failed, 3 the harness crashed or could not write its reports, 64 bad usage.
#[derive(Parser)]
#[command(name = "partmap-sim", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed: prints seed=N and every knob first, a verdict per property and the trace
    /// hash last.
    Run {
        /// The seed (a non-negative integer).
        #[arg(long, allow_negative_numbers = true)]
        seed: u64,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Stream every event with its simulated time.
        #[arg(long)]
        trace: bool,
        /// Switch off one safety mechanism (to prove a checker catches it).
        #[arg(long, value_parser = Mutation::parse)]
        mutation: Option<Mutation>,
        /// Also write the run as a scenario file whose explicit `faults.schedule` holds every
        /// fault and operator request the seed injected, with the topology and knobs it drew;
        /// run with the same seed it replays this run exactly.
        #[arg(long, value_name = "FILE")]
        emit_schedule: Option<PathBuf>,
    },
    /// Shrink a failing seed to a smallest schedule that still violates the same property:
    /// delta debugging over its faults, then shorter faults, later starts, a shorter and
    /// lighter workload and fewer nodes. Prints each step; writes the result to
    /// REPORT_DIR/shrunk/<scenario>[-<mutation>]-seed-N.json. Exits 1 if the seed passes, 3 if
    /// the harness panics, its schedule does not reproduce it, or the file cannot be written.
    Shrink {
        /// The failing seed.
        #[arg(long, allow_negative_numbers = true)]
        seed: u64,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The mutation the seed fails under, if any.
        #[arg(long, value_parser = Mutation::parse)]
        mutation: Option<Mutation>,
        /// Worker threads (each runs whole candidates).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// At most this many runs in all; then the smallest schedule found so far is written.
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
        max_runs: u64,
        /// Only remove faults (delta debugging); leave durations, starts, workload and
        /// topology alone.
        #[arg(long)]
        faults_only: bool,
        /// Where shrunk/ goes.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// Draw one run as a self-contained HTML page (inline SVG and a little script): a lane per
    /// node (up, crashed, paused, cut off), per range its owner and epoch over time with moves,
    /// splits and merges, faults as spans, client operations, handoff pauses, and the
    /// violation's evidence with the events around it. Writes OUT (default
    /// REPORT_DIR/timelines/<scenario>[-<mutation>]-seed-N.html).
    Timeline {
        /// The seed.
        #[arg(long, allow_negative_numbers = true)]
        seed: u64,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Switch off one safety mechanism.
        #[arg(long, value_parser = Mutation::parse)]
        mutation: Option<Mutation>,
        /// The HTML file to write.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Where timelines/ goes when --out is not given.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// Run seeds A..B (B excluded) in parallel and summarize.
    Sweep {
        /// Seed range `A..B`.
        #[arg(long, value_parser = parse_seeds, allow_negative_numbers = true)]
        seeds: (u64, u64),
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Worker threads (each runs whole seeds).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Switch off one safety mechanism (to prove a checker catches it).
        #[arg(long, value_parser = Mutation::parse)]
        mutation: Option<Mutation>,
        /// Where the JSON summary and failing seeds' logs go.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// Run every named mutation on the scenario where it applies (with `--rate`, also on the
    /// default scenario), seed after seed up to its budget, and the unmutated system on the same
    /// seeds. Prints a table (mutation, caught,
    /// seeds to the first violation, property, repro) and, when every mutation ran (no
    /// `--only`), writes it to REPORT_DIR/mutants.md.
    /// Exits 1 if any mutation is not caught (it survived, the unmutated system failed a seed
    /// too, or the harness panicked).
    Mutants {
        /// Seed budget per mutation (default: each mutation's own, 5 to 30).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        seeds: Option<u64>,
        /// Run every seed of the budget instead of stopping at the first catch, and report on
        /// how many seeds each mutation was caught.
        #[arg(long)]
        rate: bool,
        /// Only these mutations (repeatable; default: all).
        #[arg(long = "only", value_parser = Mutation::parse)]
        only: Vec<Mutation>,
        /// Worker threads (each takes whole mutations).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Where mutants.md goes.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
}

fn parse_seeds(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("`{s}` is not a seed range; write A..B, e.g. 0..2000"))?;
    let a: u64 = a.trim().parse().map_err(|_| format!("`{a}` is not a seed (a non-negative integer)"))?;
    let b: u64 = b.trim().parse().map_err(|_| format!("`{b}` is not a seed (a non-negative integer)"))?;
    if b <= a {
        return Err(format!("empty seed range {a}..{b}: the end is excluded, so it must be greater than the start"));
    }
    Ok((a, b))
}

fn load(path: Option<PathBuf>) -> Result<(Scenario, String), String> {
    match path {
        None => Ok((Scenario::default_swarm(), "scenarios/swarm.json (built-in)".into())),
        Some(p) => Ok((Scenario::load(&p)?, p.display().to_string())),
    }
}

fn main() -> ExitCode {
    // Die quietly when the reader of our output goes away (`partmap-sim run ... | head`), as
    // command-line tools do, instead of panicking on the broken pipe.
    // SAFETY: restoring the default disposition of one signal at startup, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            // --help and --version are not errors; everything else is bad usage.
            return if usage { ExitCode::from(64) } else { ExitCode::SUCCESS };
        }
    };
    match cli.command {
        Command::Run { seed, scenario, trace, mutation, emit_schedule } => {
            let (scenario, scenario_label) = match load(scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
            };
            let opts = RunOptions { seed, scenario, scenario_label, mutation, trace, echo_header: true };
            let report = match std::panic::catch_unwind(|| run_seed(&opts)) {
                Ok(report) => report,
                Err(_) => {
                    eprintln!("HARNESS CRASH on seed {seed} (the panic message is above)");
                    return ExitCode::from(3);
                }
            };
            let o = &report.ops;
            println!("faults injected: {}", if report.faults.is_empty() { "none".to_string() } else { report.faults.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ") });
            println!("operations: appends ok={} failed={} unknown={}; reads ok={} failed={}; MapUnavailable={}", o.appends_ok, o.appends_failed, o.appends_unknown, o.reads_ok, o.reads_failed, o.unavailable);
            println!("sim_ms={} recovery_after_heal_ms={} unavailable_ms={} events={}", report.sim_ms, report.recovery_ms, report.unavailable_ms, report.events.len());
            let hit: Vec<String> = report.coverage.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("coverage: {}", if hit.is_empty() { "none".to_string() } else { hit.join(" ") });
            if !report.reshapes.is_empty() {
                let parts: Vec<String> = report.reshapes.iter().map(|(k, v)| format!("{k}={v}")).collect();
                println!("splits and merges: {}", parts.join(" "));
            }
            for h in &report.handoffs {
                let client = h.client_gap_ms.map_or("no client tried".to_string(), |g| format!("{g:.1} ms"));
                println!(
                    "handoff r{} server-{}@e{} -> server-{}@e{} {}: write pause {:.1} ms at the servers, {client} at the clients; copied {} B before the pause, {} B during, {} B in all",
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
            if let Some(path) = &emit_schedule {
                let s = partmap_sim::schedule::from_run(&report, &opts);
                let (faults, requests) = partmap_sim::schedule::counts(&s);
                if let Err(e) = partmap_sim::schedule::write(path, &s) {
                    eprintln!("error: --emit-schedule: cannot write {e}");
                    return ExitCode::from(3);
                }
                println!("schedule: {} ({faults} faults, {requests} operator requests; replay with --seed {seed})", path.display());
            }
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
        Command::Shrink { seed, scenario, mutation, jobs, max_runs, faults_only, report_dir } => {
            let (scenario, scenario_label) = match load(scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
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
            if let Err(e) = partmap_sim::schedule::write(&path, &described) {
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
        Command::Timeline { seed, scenario, mutation, out, report_dir } => {
            let (scenario, scenario_label) = match load(scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
            };
            let opts = RunOptions { seed, scenario, scenario_label, mutation, trace: false, echo_header: false };
            let report = match std::panic::catch_unwind(|| run_seed(&opts)) {
                Ok(report) => report,
                Err(_) => {
                    eprintln!("HARNESS CRASH on seed {seed} (the panic message is above)");
                    return ExitCode::from(3);
                }
            };
            let path = out.unwrap_or_else(|| report_dir.join("timelines").join(format!("{}-seed-{seed}.html", sweep::report_stem(&opts))));
            let html = partmap_sim::timeline::render(&report, &opts);
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
        Command::Sweep { seeds, scenario, jobs, mutation, report_dir } => {
            let (scenario, scenario_label) = match load(scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
            };
            let base = RunOptions { seed: seeds.0, scenario, scenario_label, mutation, trace: false, echo_header: false };
            let summary = sweep::sweep(&base, seeds.0, seeds.1, jobs as usize, &report_dir, true);
            print!("{}", sweep::render(&summary, &base));
            ExitCode::from(summary.exit_code() as u8)
        }
        Command::Mutants { seeds, rate, only, jobs, report_dir } => {
            let mut targets: Vec<mutants::Target> = mutants::TARGETS.iter().filter(|t| only.is_empty() || only.contains(&t.mutation)).copied().collect();
            if rate {
                targets = mutants::with_default_scenario(&targets);
            }
            let hunts = match mutants::hunt_all(&targets, seeds, rate, true, jobs as usize) {
                Ok(h) => h,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(3);
                }
            };
            let table = mutants::render(&hunts);
            print!("{table}");
            // Only a run of every mutation replaces the kept table.
            if !only.is_empty() {
                println!("(reports not written: --only runs part of the table)");
                return if hunts.iter().filter(|h| h.own()).all(|h| h.caught()) { ExitCode::SUCCESS } else { ExitCode::from(1) };
            }
            let path = report_dir.join("mutants.md");
            let args = seeds.map_or(String::new(), |n| format!(" --seeds {n}")) + if rate { " --rate" } else { "" };
            let doc = format!("# Mutations and the checkers that catch them\n\nWritten by `partmap-sim mutants{args}`.\n\n{table}");
            if let Err(e) = std::fs::create_dir_all(&report_dir).and_then(|_| std::fs::write(&path, doc)) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(3);
            }
            println!("table: {}", path.display());
            if hunts.iter().all(|h| h.caught()) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}
