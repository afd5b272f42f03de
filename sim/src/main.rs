//! `partmap-sim`: run one seed, or sweep many.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions};
use partmap_sim::scenario::Scenario;
use partmap_sim::sweep::seeds::{read_seeds_file, SeedSelection, Shard, Source};
use partmap_sim::sweep::summary::{self, Summary};
use partmap_sim::sweep::{self, Stop, SweepConfig};
use partmap_sim::search::mutants;
use partmap_sim::search::shrink::{self, ShrinkOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Deterministic simulation of a range-partitioned storage control plane.
///
/// Exit codes: 0 every seed ended as its scenario expects (by default: every property held),
/// 1 a safety property was violated (or an expected violation did not happen), 2 a liveness
/// property failed, 3 the harness crashed or could not write its reports, 4 an availability
/// bound of the scenario's `expect` was exceeded, 64 bad usage (or, for
/// merge, summaries that cannot be merged), 130 / 143 a sweep stopped by SIGINT / SIGTERM
/// before any seed failed.
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
        #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
        seed: u64,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Stream every event with its simulated time.
        #[arg(long)]
        trace: bool,
        /// Switch off one safety mechanism (to prove a checker catches it).
        #[arg(long, value_parser = MutationParser)]
        mutation: Option<Mutation>,
        /// Also write the run as a scenario file whose explicit `faults.schedule` holds every
        /// fault and operator request the seed injected, with the topology and knobs it drew;
        /// run with the same seed it replays this run exactly.
        #[arg(long, value_name = "FILE")]
        emit_schedule: Option<PathBuf>,
        /// Also write the run's client operations to FILE as a Jepsen history in EDN, one
        /// operation map per line (`:type` `:invoke` `:ok` `:fail` `:info`, list-append `:value`s),
        /// for an external checker such as Elle's list-append.
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
    },
    /// Shrink a failing seed to a smallest schedule that still violates the same property:
    /// delta debugging over its faults, then shorter faults, later starts, a shorter and
    /// lighter workload and fewer nodes. Prints each step; writes the result to
    /// REPORT_DIR/shrunk/<scenario>[-<mutation>]-seed-N.json. Exits 1 if the seed passes, 3 if
    /// the harness panics, its schedule does not reproduce it, or the file cannot be written.
    Shrink {
        /// The failing seed.
        #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
        seed: u64,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The mutation the seed fails under, if any.
        #[arg(long, value_parser = MutationParser)]
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
    /// REPORT_DIR/timelines/<scenario>[-<mutation>]-seed-N.html; a scenario whose name already
    /// ends with -<mutation>-seed-N, as the shrunk ones do, keeps it).
    Timeline {
        /// The seed.
        #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
        seed: u64,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Switch off one safety mechanism.
        #[arg(long, value_parser = MutationParser)]
        mutation: Option<Mutation>,
        /// The HTML file to write.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Where timelines/ goes when --out is not given.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// Run many seeds in parallel and summarize: a range (`--seeds A..B`) or a seeds file,
    /// optionally one shard of it, optionally within a time budget. Writes a JSON summary with a
    /// record per seed (REPORT_DIR/sweep-<scenario>[-shard-K-of-N].json), the failing seeds' logs
    /// and, with `--junit`, a JUnit report. A first SIGINT or SIGTERM stops starting seeds and
    /// summarizes what completed (exit 130 or 143 if nothing failed); a second abandons the
    /// running seeds.
    #[command(group(clap::ArgGroup::new("selection").required(true).args(["seeds", "seeds_file"])))]
    Sweep {
        /// Seed range `A..B` (B excluded).
        #[arg(long, value_parser = parse_seeds, allow_negative_numbers = true)]
        seeds: Option<(u64, u64)>,
        /// A file of seeds, one per line (`#` starts a comment), run in the file's order; e.g.
        /// the `.failing-seeds.txt` a sweep writes beside its summary.
        #[arg(long)]
        seeds_file: Option<PathBuf>,
        /// Run shard K of N only (K from 1): the K-th, (K+N)-th, (K+2N)-th ... seed of the
        /// selection. Shards 1/N to N/N together run every seed once; `merge` joins their
        /// summaries into the summary of one sweep.
        #[arg(long, value_parser = Shard::parse)]
        shard: Option<Shard>,
        /// Start no seed once this much wall-clock time has passed (e.g. 90s, 10m, 1h30m); the
        /// seeds run are then the first ones of the selection.
        #[arg(long, value_parser = parse_budget)]
        time_budget: Option<Duration>,
        /// Also write a JUnit XML report (one test case per seed) to this file.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Worker threads (each runs whole seeds).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Switch off one safety mechanism (to prove a checker catches it).
        #[arg(long, value_parser = MutationParser)]
        mutation: Option<Mutation>,
        /// Where the JSON summary and failing seeds' logs go (checked writable before any
        /// seed runs).
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
        /// A goal the sweep must reach on at least one seed (repeatable; names as in the
        /// goals table, `partmap-sim goals` lists them): the sweep fails (exit 1) when one is
        /// never reached, so a goal that silently stops being reached fails CI.
        #[arg(long = "require-goal", value_name = "GOAL")]
        require_goal: Vec<String>,
    },
    /// Merge the JSON summaries of several sweeps (the shards of one, run on several machines)
    /// into the summary and table one sweep of all their seeds prints. Refuses summaries of
    /// different builds (version, commit), scenarios or mutations, a seed present twice, and
    /// a set of shards with one missing or given twice ("missing shards: 3/3"), unless
    /// --allow-partial. The exit code is the merged sweep's.
    Merge {
        /// The summaries (`sweep-*.json` files written by `sweep`).
        #[arg(required = true)]
        summaries: Vec<PathBuf>,
        /// Where the merged summary goes (checked writable before anything is read); default:
        /// reports/sweep-<scenario>[-<mutation>]-merged.json.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also write a JUnit XML report (one test case per seed) to this file.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Merge a shard set with shards missing (a shard whose upload failed); the table's
        /// header and last line and the summary's `stopped.missing_shards` then say it is
        /// partial. Shards given twice are refused all the same.
        #[arg(long)]
        allow_partial: bool,
    },
    /// Measure what a seed costs against madsim alone, in one process: raw madsim's CPU per
    /// message (the patched madsim we run on, and, in a child process when built, madsim
    /// 0.2.34 as published: `bench/raw-madsim`), the same exchange through partmap's seam (its
    /// overhead per message), the scenario's CPU per seed and per message (seeds run one after
    /// the other, as a `--jobs 1` sweep runs them), the checkers' share, the same with a 4
    /// times longer workload, and the ratio of CPU per message (scenario / raw madsim) against
    /// each floor. CPU time of the measuring thread, not wall time. Exits 1 if one of the seeds (not the longer runs) did
    /// not end as its scenario expects.
    Bench {
        /// Seeds of the scenario to run (A..B).
        #[arg(long, default_value = "0..40", value_parser = parse_seeds)]
        seeds: (u64, u64),
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Round trips per client of the raw madsim loop (4 pairs, 5 runtimes).
        #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
        round_trips: u64,
        /// Also run the first N of the seeds with the workload 4 times as long, and again at the
        /// normal length for the comparison, after one uncounted warm-up seed (0: skip).
        #[arg(long, default_value_t = 10)]
        scaled_seeds: u64,
        /// The `bench/raw-madsim` binary (the raw loop on madsim 0.2.34 as published), run as a
        /// child for the second floor. Default: target/raw-madsim/release/raw-madsim beside this
        /// binary, measured when built (`just bench` builds it); given here, it must run.
        #[arg(long)]
        published_madsim: Option<PathBuf>,
    },
    /// Run every named mutation on the scenario where it applies (with `--rate`, also on the
    /// default scenario), seed after seed up to its budget, and the unmutated system on the same
    /// seeds. Prints a line on stderr as each mutation's hunt ends, then a table (mutation,
    /// caught, seeds to the first violation, property, repro); `--write-table` also writes it
    /// to REPORT_DIR/mutants.md. Exits 1 if any mutation is not caught (it survived, the
    /// unmutated system failed a seed too, or the harness panicked).
    Mutants {
        /// Seed budget per mutation (default: each mutation's own, 5 to 30).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        seeds: Option<u64>,
        /// Run every seed of the budget instead of stopping at the first catch, and report on
        /// how many seeds each mutation was caught.
        #[arg(long)]
        rate: bool,
        /// Only these mutations (repeatable; default: all that a checker must catch, not the
        /// three defence-in-depth ones, which are refused here).
        #[arg(long = "only", value_parser = MutationParser)]
        only: Vec<Mutation>,
        /// Worker threads (each takes whole mutations).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Write the table to REPORT_DIR/mutants.md (the copy kept in the repository is
        /// `mutants --seeds 20 --rate --write-table`); needs every mutation, so not with `--only`.
        #[arg(long, conflicts_with = "only")]
        write_table: bool,
        /// Where mutants.md goes.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// Search the scenario (default: the built-in swarm.json) with feedback: keep a corpus of
    /// runs that reached a new goal, coverage situation or fault x flow cell, and make new runs
    /// by branching an entry before a rare goal (its schedule kept, a new future drawn), by
    /// mutating its schedule (shift, lengthen, retarget to a role, add an aimed fault, drop),
    /// by reseeding it, or as plain swarm runs. Deterministic for a given --seed and --runs.
    /// Stops at the first violation (exit 1) and writes it as a scenario file under
    /// REPORT_DIR/explore/, with its timeline and a repro line; exit 0 when nothing failed.
    Explore {
        /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The explorer's own seed (not a run's): the same --seed and --runs give the same
        /// corpus and findings.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        seed: u64,
        /// At most this many runs (0: only merge the --corpus directories into the first).
        #[arg(long, default_value_t = 1000)]
        runs: u64,
        /// Stop between batches after this much wall time (`90s`, `10m`).
        #[arg(long, value_parser = parse_budget)]
        time_budget: Option<std::time::Duration>,
        /// Worker threads.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Switch off one safety mechanism (the search never looks at which).
        #[arg(long, value_parser = Mutation::parse)]
        mutation: Option<Mutation>,
        /// Collect every violation instead of stopping at the first.
        #[arg(long)]
        keep_going: bool,
        /// Shrink each violation's schedule too.
        #[arg(long)]
        shrink: bool,
        /// Corpus directory (repeatable): every one is read, new entries are written to the
        /// first, so `--corpus mine --corpus theirs` merges corpora.
        #[arg(long)]
        corpus: Vec<PathBuf>,
        /// Where findings go (REPORT_DIR/explore/<scenario>[-<mutation>]/).
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// The search's benchmark: for each named mutation (or --only) on the default scenario, a
    /// random sweep of seeds 0..RUNS and RUNS runs of explore, in one process; prints runs that
    /// caught it, CPU seconds to the first catch, catches per 1,000 runs and the ratio.
    /// `--write-table` writes REPORT_DIR/hunt.md.
    Hunt {
        /// Run budget of each search, per mutation.
        #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
        runs: u64,
        /// Only these mutations (repeatable; default: all).
        #[arg(long = "only", value_parser = Mutation::parse)]
        only: Vec<Mutation>,
        /// The explorer's seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Worker threads (each takes whole mutations).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Write the table to REPORT_DIR/hunt.md.
        #[arg(long)]
        write_table: bool,
        /// Where hunt.md goes.
        #[arg(long, default_value = "reports")]
        report_dir: PathBuf,
    },
    /// List the goals registry: every named situation a run can reach, with what it means.
    Goals,
    /// Design reviews. `report questions`: measured answers to the senior questions (so far
    /// the rolling upgrade) in reports/questions/README.md. `report pause`: the handoff pause
    /// review: a grid over
    /// strategy × range size × write rate × bandwidth, with and without the random fault mix,
    /// N seeds per cell on worker threads; writes README.md (tables, model against measured,
    /// crossover and convergence), grid.csv and two SVG plots to OUT (default reports/pause).
    /// Exits 3 if the report cannot be written, 1 if any seed failed its checkers.
    Report {
        /// Which review: `pause` or `questions`.
        #[arg(value_parser = ["pause", "questions"])]
        which: String,
        /// Seeds per cell (`pause`, at most 100) or per scenario (`questions`).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=10000))]
        seeds: u64,
        /// Worker threads.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// A small grid (three sizes, two write rates), for a quick look.
        #[arg(long)]
        quick: bool,
        /// Where the report goes.
        #[arg(long, default_value = "reports/pause")]
        out: PathBuf,
        /// Print one cell's scenario as JSON instead of running the grid, to run, trace or
        /// shrink one of its seeds: `STRATEGY,SIZE,RATIO,BANDWIDTH[,faults]`, e.g.
        /// `pre-copy,64MiB,0.05,100MiB`.
        #[arg(long)]
        cell: Option<String>,
        /// The model only, no simulation: predict the pause of a range of SIZE bytes taking
        /// WRITE_RATE of appends over BANDWIDTH links, per strategy, with the rounds, bytes
        /// copied, convergence, pre-copy's convergence limit and a recommendation, e.g.
        /// `1GiB,600MiB/s,1GiB/s` (units B, KiB, MiB, GiB; rates with an optional /s).
        #[arg(long, conflicts_with_all = ["cell", "quick"])]
        predict: Option<String>,
        /// With --predict: also run N seeds of each strategy on that cell (on --jobs threads)
        /// and print measured against predicted.
        #[arg(long, requires = "predict", value_parser = clap::value_parser!(u64).range(1..=10000))]
        verify: Option<u64>,
        /// With --predict: pre-copy's stop threshold (bytes; units as in --predict), default
        /// the grid's 16 MiB.
        #[arg(long, requires = "predict")]
        threshold: Option<String>,
        /// With --predict: pre-copy's round limit, default the grid's 8.
        #[arg(long, requires = "predict", value_parser = clap::value_parser!(u32).range(1..=1000))]
        max_rounds: Option<u32>,
        /// With --predict: the leader's tick, ms, default 200.
        #[arg(long, requires = "predict", value_parser = clap::value_parser!(u64).range(1..=60000))]
        tick_ms: Option<u64>,
        /// With --predict (model only, not with --verify): one control message's one-way time,
        /// ms, default 3 (the mean of the simulation's 1..5 ms draw).
        #[arg(long, requires = "predict")]
        latency_ms: Option<f64>,
        /// With --predict: the cutover rule's pause budget, ms (default: the rule off, as in
        /// the grid); with --verify the cells run with it.
        #[arg(long, requires = "predict", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
        budget_ms: Option<u64>,
        /// Regenerate README.md and the plots in OUT from a committed grid.csv (every seed's
        /// figures) without running the grid; calibrates the model's constants (about 16 s of
        /// CPU) and states the source in the header.
        #[arg(long, conflicts_with_all = ["cell", "predict", "quick"])]
        from_csv: Option<PathBuf>,
    },
}

fn parse_seeds(s: &str) -> Result<(u64, u64), String> {
    partmap_sim::sweep::seeds::parse_range(s)
}

fn parse_budget(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. 90s, 10m or 1h30m"))?;
    if d.is_zero() {
        return Err(format!("`{s}`: the time budget must be more than zero"));
    }
    Ok(d)
}

fn load(path: Option<PathBuf>) -> Result<(Scenario, String), String> {
    match path {
        None => Ok((Scenario::default_swarm(), "scenarios/swarm.json (built-in)".into())),
        Some(p) => Ok((Scenario::load(&p)?, p.display().to_string())),
    }
}

/// `--seed`: a non-negative integer, with a message that says so for `-1` or `x`.
fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim().parse().map_err(|_| {
        let what = if s.trim().starts_with('-') { "is negative" } else { "is not a number" };
        format!("`{s}` {what}: a seed is an integer from 0 to {}", u64::MAX)
    })
}

/// `--mutation` and `--only`: [`Mutation::parse`] (whose error lists the accepted names), and
/// the names as the argument's possible values, so `--help` lists them.
#[derive(Clone)]
struct MutationParser;

impl clap::builder::TypedValueParser for MutationParser {
    type Value = Mutation;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<Mutation, clap::Error> {
        let flag = arg.and_then(|a| a.get_long()).map_or(String::from("the mutation"), |l| format!("--{l}"));
        let text = value.to_string_lossy();
        Mutation::parse(&text).map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("invalid value '{text}' for {flag}: {e}\n")).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Mutation::ALL.iter().map(|(_, name)| clap::builder::PossibleValue::new(*name))))
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
        Command::Run { seed, scenario, trace, mutation, emit_schedule, history } => {
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
            if opts.mutation.is_some() {
                println!("checkers without the durable log and the served final reads: {}", report.legacy_violation.as_deref().map_or("pass".to_string(), |e| format!("violated: {e}")));
            }
            if let Some(path) = &history {
                match partmap_sim::report::history_edn::write(path, &report.events, &report.served) {
                    Ok(n) => println!("history: {} ({n} operation lines, Jepsen EDN)", path.display()),
                    Err(e) => {
                        eprintln!("error: --history: cannot write {e}");
                        return ExitCode::from(3);
                    }
                }
            }
            if let Some(path) = &emit_schedule {
                let s = partmap_sim::search::schedule::from_run(&report, &opts);
                let (faults, requests) = partmap_sim::search::schedule::counts(&s);
                if let Err(e) = partmap_sim::search::schedule::write(path, &s) {
                    eprintln!("error: --emit-schedule: cannot write {e}");
                    return ExitCode::from(3);
                }
                println!("schedule: {} ({faults} faults, {requests} operator requests; replay with --seed {seed})", path.display());
            }
            let a = &report.availability;
            println!(
                "availability: write_pause_ms={:.1} unavailable_ms={} range_unavailable_ms={}{} recovery_after_fault_ms={} leader_terms={} leader_terms_without_manager_fault={}",
                a.write_pause_ms, a.unavailable_ms, a.range_unavailable_ms, a.range_unavailable_range.map_or(String::new(), |r| format!(" (r{r})")), a.recovery_after_fault_ms, a.leader_terms, a.leader_terms_without_manager_fault
            );
            for line in &report.bounds_exceeded {
                println!("BOUND EXCEEDED: {line}");
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
            if let Err(e) = sweep::check_report_dir(&report_dir) {
                eprintln!("error: {e}");
                return ExitCode::from(64);
            }
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
        Command::Timeline { seed, scenario, mutation, out, report_dir } => {
            if let Err(e) = if out.is_none() { sweep::check_report_dir(&report_dir) } else { Ok(()) } {
                eprintln!("error: {e}");
                return ExitCode::from(64);
            }
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
        Command::Sweep { seeds, seeds_file, shard, time_budget, junit, scenario, jobs, mutation, report_dir, require_goal } => {
            if let Err(e) = sweep::check_report_dir(&report_dir) {
                eprintln!("error: {e}");
                return ExitCode::from(64);
            }
            if let Some(bad) = require_goal.iter().find(|g| !partmap_sim::measure::goals::is_goal(g)) {
                eprintln!("error: --require-goal: unknown goal `{bad}`; `partmap-sim goals` lists them");
                return ExitCode::from(64);
            }
            let (scenario, scenario_label) = match load(scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
            };
            let source = match (seeds, seeds_file) {
                (Some((first, end)), _) => Source::Range { first, end },
                (None, Some(path)) => match read_seeds_file(&path) {
                    Ok(seeds) => Source::File { path: path.display().to_string(), seeds },
                    Err(e) => {
                        eprintln!("error: --seeds-file {e}");
                        return ExitCode::from(64);
                    }
                },
                (None, None) => unreachable!("clap requires --seeds or --seeds-file"),
            };
            let selection = SeedSelection { source, shard };
            let base = RunOptions { seed: 0, scenario, scenario_label, mutation, trace: false, echo_header: false };
            let cfg = SweepConfig { jobs: jobs as usize, report_dir, junit, time_budget, progress: true };
            let stop = Stop::new();
            let _signals = match stop.on_signals() {
                Ok(guard) => guard,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(3);
                }
            };
            match sweep::run_sweep(&base, &selection, &cfg, &stop) {
                Ok(summary) => {
                    print!("{}", sweep::render(&summary));
                    let missed: Vec<&String> = require_goal.iter().filter(|g| !summary.totals.goal_seeds.contains_key(g.as_str())).collect();
                    for g in &missed {
                        println!("REQUIRED GOAL NEVER REACHED: {g}");
                    }
                    if !missed.is_empty() && summary.exit_code() == 0 {
                        return ExitCode::from(1);
                    }
                    ExitCode::from(summary.exit_code() as u8)
                }
                Err(e) => {
                    eprintln!("error: {e}; no seed was run");
                    ExitCode::from(3)
                }
            }
        }
        Command::Merge { summaries, out, junit, allow_partial } => {
            // The report files first, before any summary is read (exit 64 for a folder, 3 for
            // a place that cannot be written, as sweep does for its --report-dir).
            let check = |path: &std::path::Path, flag: &str, example: &str| -> Result<(), ExitCode> {
                let fail = |code: u8| move |e: String| {
                    eprintln!("error: {e}; nothing was merged");
                    ExitCode::from(code)
                };
                sweep::check_not_folder(path, flag, example).map_err(fail(64))?;
                sweep::check_file_writable(path, flag).map_err(fail(3))
            };
            for (path, flag, example) in [(&out, "--out", "reports/merged.json"), (&junit, "--junit", "reports/junit.xml")] {
                if let Some(Err(code)) = path.as_deref().map(|p| check(p, flag, example)) {
                    return code;
                }
            }
            let mut inputs = Vec::new();
            for path in &summaries {
                match Summary::read(path) {
                    Ok(s) => inputs.push((path.display().to_string(), s)),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(64);
                    }
                }
            }
            let shards = summary::check_shards(&inputs);
            let refuse_shards = |shards: &summary::ShardCheck| {
                let hint = if shards.duplicate.is_empty() { "; give every shard's summary, or --allow-partial to merge these alone (the summary then says it is partial)" } else { "; give each shard's summary once" };
                eprintln!("error: {}{hint}", shards.problem());
                ExitCode::from(64)
            };
            let mut merged = match summary::merge(inputs) {
                Ok(m) => m,
                // A shard given twice shows as its seeds given twice: name the shard.
                Err(_) if !shards.duplicate.is_empty() => return refuse_shards(&shards),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
            };
            if !shards.duplicate.is_empty() || (!shards.missing.is_empty() && !allow_partial) {
                return refuse_shards(&shards);
            }
            let out = out.unwrap_or_else(|| {
                let b = &merged.build;
                let mutation = b.mutation.as_ref().map_or(String::new(), |m| format!("-{m}"));
                PathBuf::from("reports").join(format!("sweep-{}{mutation}-merged.json", sweep::scenario_stem(&b.scenario)))
            });
            if let Err(code) = check(&out, "--out", "reports/merged.json") {
                return code;
            }
            if let Err(e) = merged.write(&out) {
                merged.report_errors.push(e);
            }
            merged.json_path = Some(out);
            if let Some(junit) = junit {
                match partmap_sim::sweep::junit::write(&merged, &junit) {
                    Ok(()) => merged.junit_path = Some(junit),
                    Err(e) => merged.report_errors.push(e),
                }
            }
            print!("{}", summary::render(&merged));
            ExitCode::from(merged.exit_code() as u8)
        }
        Command::Report { which, seeds, jobs, quick, out, cell, predict, verify, threshold, max_rounds, tick_ms, latency_ms, budget_ms, from_csv } => {
            use partmap_sim::report::pause;
            if which == "pause" && seeds > 100 && predict.is_none() && from_csv.is_none() {
                eprintln!("error: --seeds {seeds}: report pause runs at most 100 seeds a cell");
                return ExitCode::from(64);
            }
            if which == "questions" {
                let commit = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).output().ok().filter(|o| o.status.success()).map_or("an unknown commit".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
                let provenance = format!("Generated by `partmap-sim report questions --seeds {seeds}` at commit {commit}.");
                let doc = match partmap_sim::report::questions::rolling_upgrade(std::path::Path::new("scenarios/rolling-upgrade.json"), seeds, &provenance) {
                    Ok(d) => d,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(64);
                    }
                };
                let dir = std::path::Path::new("reports/questions");
                if let Err(e) = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(dir.join("README.md"), &doc)) {
                    eprintln!("error: cannot write reports/questions/README.md: {e}");
                    return ExitCode::from(3);
                }
                print!("{doc}");
                return ExitCode::SUCCESS;
            }
            if let Some(text) = predict {
                use pause::predict as pr;
                let query = match pr::parse_query(&text) {
                    Ok(q) => q,
                    Err(e) => {
                        eprintln!("error: --predict: {e}");
                        return ExitCode::from(64);
                    }
                };
                let threshold = match threshold.map(|t| pr::parse_amount("--threshold", &t, false)).transpose() {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(64);
                    }
                };
                if let Some(l) = latency_ms.filter(|l| !(l.is_finite() && *l > 0.0 && *l <= 10_000.0)) {
                    eprintln!("error: --latency-ms {l}: must be above 0 and at most 10000");
                    return ExitCode::from(64);
                }
                let overrides = pr::Overrides { threshold, max_rounds, tick_ms, latency_ms, budget_ms };
                let p = pr::predict_query(&query, &overrides);
                print!("{}", pr::render(&p));
                if let Some(n) = verify {
                    match pr::verify(&p, &overrides, n, jobs as usize) {
                        Ok(text) => print!("{text}"),
                        Err(e) => {
                            eprintln!("error: --verify: {e}");
                            return ExitCode::from(64);
                        }
                    }
                }
                return ExitCode::SUCCESS;
            }
            if let Some(text) = cell {
                return match pause::Cell::parse(&text) {
                    Ok(c) => {
                        println!("{}", serde_json::to_string_pretty(&c.scenario_json()).expect("a JSON value prints"));
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("error: --cell: {e}");
                        ExitCode::from(64)
                    }
                };
            }
            let commit = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).output().ok().filter(|o| o.status.success()).map_or("an unknown commit".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
            let cells = pause::grid(quick);
            let data = match &from_csv {
                Some(path) => match std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display())).and_then(|t| pause::read_csv(&t, &cells)) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        eprintln!("error: --from-csv: {e}");
                        return ExitCode::from(64);
                    }
                },
                None => None,
            };
            let mut cal = Vec::new();
            for bw in pause::BANDWIDTHS {
                match pause::calibrate(bw) {
                    Ok(c) => cal.push(c),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(3);
                    }
                }
            }
            let (results, provenance) = match data {
                Some(results) => {
                    let path = from_csv.as_ref().expect("read above");
                    let data_commit = std::process::Command::new("git").args(["log", "-1", "--format=%h", "--"]).arg(path).output().ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).filter(|c| !c.is_empty()).unwrap_or_else(|| "an uncommitted file".into());
                    let first_version = std::fs::read_to_string(path).is_ok_and(|t| !t.lines().next().unwrap_or("").contains(",committed,"));
                    let caveat = if first_version {
                        " That grid.csv is the first version's: it holds only the seeds whose move committed while the clients wrote (seeds without one, and the seed whose pause began after the window, were left out of it), and it lacks the appends failed and shed, the aborted pauses and each seed's sizes; those columns read as 0 and the per-seed model as `-` here, and \"no seed dropped\" holds only once the grid is run again."
                    } else {
                        ""
                    };
                    let text = format!("Regenerated by `partmap-sim report pause --from-csv {}` at commit {commit}, no simulation run, from the seeds in that grid.csv as last committed at {data_commit} (the model calibrated anew).{caveat}", path.display());
                    (results, text)
                }
                None => {
                    eprintln!("report pause: {} cells x {seeds} seeds with {jobs} jobs (up to {} seeds for a fault-free cell whose mean pause is still noisy)", cells.len(), seeds * pause::MAX_SEED_FACTOR);
                    let progress = |done: usize, of: usize| {
                        if done.is_multiple_of(20) || done == of {
                            eprintln!("{done}/{of} runs");
                        }
                    };
                    let results = pause::run_grid(&cells, seeds, jobs as usize, &progress);
                    let command = format!("partmap-sim report pause --seeds {seeds} --jobs {jobs}{}{}", if quick { " --quick" } else { "" }, if out != std::path::Path::new("reports/pause") { format!(" --out {}", out.display()) } else { String::new() });
                    let text = format!("Generated by `{command}` at commit {commit} ({seeds} seeds per cell; a fault-free cell runs further batches of {seeds}, up to {} in all, until the standard error of its mean server pause is at most {:.1}% of the mean).", seeds * pause::MAX_SEED_FACTOR, pause::TARGET_REL_SE * 100.0);
                    (results, text)
                }
            };
            let doc = pause::markdown(&results, &cal, &provenance);
            let written = std::fs::create_dir_all(&out)
                .and_then(|_| std::fs::write(out.join("README.md"), &doc))
                .and_then(|_| if from_csv.is_none() { std::fs::write(out.join("grid.csv"), pause::csv(&results)) } else { Ok(()) })
                .map_err(|e| e.to_string())
                .and_then(|_| pause::plots(&results, &cal, &out));
            if let Err(e) = written {
                eprintln!("error: cannot write the report to {}: {e}", out.display());
                return ExitCode::from(3);
            }
            print!("{doc}");
            println!("report: {}", out.join("README.md").display());
            if results.iter().any(|r| !r.failed.is_empty()) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Command::Bench { seeds, scenario, round_trips, scaled_seeds, published_madsim } => {
            let (scenario, label) = match load(scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(64);
                }
            };
            let raw = partmap_sim::bench::raw_madsim(5, 4, round_trips);
            let published = match published_madsim {
                Some(path) => match partmap_sim::bench::published_madsim(&path, 5, 4, round_trips) {
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(64);
                    }
                    measured => measured,
                },
                None => match partmap_sim::bench::default_published_madsim().filter(|p| p.is_file()) {
                    Some(path) => partmap_sim::bench::published_madsim(&path, 5, 4, round_trips),
                    None => Err("not built; `just bench` builds it: cargo build --release --manifest-path bench/raw-madsim/Cargo.toml --target-dir target/raw-madsim".to_string()),
                },
            };
            let run = partmap_sim::bench::scenario(&scenario, &label, seeds.0..seeds.1);
            let scaled = (scaled_seeds > 0).then(|| {
                let mut longer = scenario.clone();
                longer.workload.duration_s *= 4;
                let first = seeds.0..seeds.1.min(seeds.0 + scaled_seeds);
                // Warm-up, not counted: the checkers' reused buffers grow to the longer
                // history's size once per process.
                partmap_sim::bench::scenario(&longer, &label, seeds.1..seeds.1 + 1);
                let longer_cost = partmap_sim::bench::scenario(&longer, &label, first.clone());
                (4, longer_cost, partmap_sim::bench::scenario(&scenario, &label, first))
            });
            // Read before the seam figure's runs: their 20,000 requests per runtime raise the
            // peak by about 14 MiB (madsim keeps every spawned task's info until the node dies).
            let peak_rss_mib = partmap_sim::bench::peak_rss_mib();
            let seam = partmap_sim::bench::seam_rpc(5, 4, round_trips);
            let b = partmap_sim::bench::Bench { raw, published, seam, run, scaled, peak_rss_mib };
            print!("{}", partmap_sim::bench::render(&b, &label));
            if b.run.unexpected > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Command::Explore { scenario, seed, runs, time_budget, jobs, mutation, keep_going, shrink, corpus, report_dir } => {
            let cfg = partmap_sim::search::explore::ExploreConfig { seed, runs, time_budget, jobs: jobs as usize, keep_going, shrink, corpus, report_dir: Some(report_dir), progress_every: 100 };
            cmd_explore(scenario, mutation, &cfg)
        }
        Command::Hunt { runs, only, seed, jobs, write_table, report_dir } => cmd_hunt(runs, only, seed, jobs as usize, write_table.then_some(report_dir)),
        Command::Goals => {
            for (name, what) in partmap_sim::measure::goals::registry() {
                println!("{name:<34} {what}");
            }
            ExitCode::SUCCESS
        }
        Command::Mutants { seeds, rate, only, jobs, write_table, report_dir } => {
            if let Err(e) = if write_table { sweep::check_report_dir(&report_dir) } else { Ok(()) } {
                eprintln!("error: {e}");
                return ExitCode::from(64);
            }
            if let Some(d) = mutants::DEFENCE_IN_DEPTH.iter().find(|d| only.contains(&d.mutation)) {
                eprintln!(
                    "error: --only {}: a defence-in-depth mutation, which no checker can catch (reports/mutation-testing.md); run it with `sweep --mutation {}`, or compare its traces with scripts/mutation-reach.py",
                    d.mutation.name(),
                    d.mutation.name()
                );
                return ExitCode::from(64);
            }
            let mut targets: Vec<mutants::Target> = mutants::TARGETS.iter().filter(|t| only.is_empty() || only.contains(&t.mutation)).copied().collect();
            if rate {
                targets = mutants::with_default_scenario(&targets);
            }
            eprintln!("hunting {} mutations with {jobs} jobs (a line as each ends)", targets.len());
            let progress = |ended: usize, of: usize, h: &Result<mutants::Hunt, String>| eprintln!("{}", mutants::progress_line(ended, of, h));
            let hunts = match mutants::hunt_all(&targets, seeds, rate, true, jobs as usize, &progress) {
                Ok(h) => h,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(3);
                }
            };
            let table = mutants::render(&hunts);
            print!("{table}");
            // The kept table is rewritten only when asked (clap refuses --write-table with --only).
            if !write_table {
                println!("(table not written; --write-table writes it to {})", report_dir.join("mutants.md").display());
                return if hunts.iter().filter(|h| h.own()).all(|h| h.caught()) { ExitCode::SUCCESS } else { ExitCode::from(1) };
            }
            let path = report_dir.join("mutants.md");
            let args = seeds.map_or(String::new(), |n| format!(" --seeds {n}")) + if rate { " --rate" } else { "" } + " --write-table";
            let commit = option_env!("PARTMAP_COMMIT").unwrap_or("unknown (not built from a git checkout)");
            let doc = format!("# Mutations and the checkers that catch them\n\nWritten by `partmap-sim mutants{args}`, built from commit {commit}.\n\n{table}");
            if let Err(e) = std::fs::create_dir_all(&report_dir).and_then(|_| std::fs::write(&path, doc)) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(3);
            }
            println!("table: {}", path.display());
            if hunts.iter().filter(|h| h.own()).all(|h| h.caught()) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// `explore`: load the scenario, search, print the findings and the goals never reached.
fn cmd_explore(scenario: Option<PathBuf>, mutation: Option<Mutation>, cfg: &partmap_sim::search::explore::ExploreConfig) -> ExitCode {
    if let Some(dir) = &cfg.report_dir {
        if let Err(e) = sweep::check_report_dir(dir) {
            eprintln!("error: {e}");
            return ExitCode::from(64);
        }
    }
    let (scenario, scenario_label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(64);
        }
    };
    let base = RunOptions { seed: 0, scenario, scenario_label, mutation, trace: false, echo_header: false };
    println!("explore: scenario={} mutation={} seed={} runs={} jobs={}", base.scenario_label, mutation.map_or("none", |m| m.name()), cfg.seed, cfg.runs, cfg.jobs);
    let out = match partmap_sim::search::explore::explore(&base, cfg, &mut |l| println!("{l}")) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(64);
        }
    };
    let origins: Vec<String> = out.by_origin.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("explore: {} runs ({}), corpus {} entries, {} features, {} goals reached, {:.1} s CPU, {} violation(s)", out.runs, origins.join(" "), out.corpus, out.features, out.goals.len(), out.cpu_s, out.findings.len());
    let never: Vec<&str> = partmap_sim::measure::goals::registry().into_iter().map(|(n, _)| n).filter(|n| !out.goals.contains(*n)).collect();
    if !never.is_empty() {
        println!("goals never reached: {}", never.join(", "));
    }
    if out.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `hunt`: random against explore for each mutation; print (and write) the table.
fn cmd_hunt(runs: u64, only: Vec<Mutation>, seed: u64, jobs: usize, write_to: Option<PathBuf>) -> ExitCode {
    if let Some(dir) = &write_to {
        if let Err(e) = sweep::check_report_dir(dir) {
            eprintln!("error: {e}");
            return ExitCode::from(64);
        }
    }
    let mutations: Vec<Mutation> = if only.is_empty() { Mutation::ALL.iter().map(|(m, _)| *m).collect() } else { only.clone() };
    let base = RunOptions { seed: 0, scenario: partmap_sim::scenario::Scenario::default_swarm(), scenario_label: format!("scenarios/swarm.json{}", partmap_sim::run::BUILTIN_SUFFIX), mutation: None, trace: false, echo_header: false };
    println!("hunt: {} mutation(s), {runs} runs each per search, explorer seed {seed}, jobs {jobs}", mutations.len());
    println!("| mutation | random caught | random CPU s to first | random per 1000 | explore caught | explore CPU s to first | explore per 1000 | ratio |");
    let hunts = match partmap_sim::search::hunt::hunt(&base, &mutations, runs, seed, jobs, &|l| println!("{l}")) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    let only_flags: String = only.iter().map(|m| format!(" --only {}", m.name())).collect();
    let command = format!("partmap-sim hunt --runs {runs} --seed {seed}{only_flags} --write-table");
    let table = partmap_sim::search::hunt::render(&hunts, &command);
    if let Some(dir) = write_to {
        let path = dir.join("hunt.md");
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, &table)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(3);
        }
        println!("written: {}", path.display());
    }
    print!("{}", table.lines().skip_while(|l| !l.starts_with("CPU per run")).map(|l| format!("{l}\n")).collect::<String>());
    ExitCode::SUCCESS
}
