//! The command line: its arguments (clap) and one function per subcommand, grouped by job.

pub mod bench;
pub mod model;
pub mod report;
pub mod run;
pub mod search;
pub mod sweeps;

use clap::{Args, Parser, Subcommand};
use partmap::config::Mutation;
use partmap_sim::scenario::Scenario;
use partmap_sim::sweep::seeds::Shard;
use std::path::PathBuf;
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
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one seed: prints seed=N and every knob first, a verdict per property and the trace
    /// hash last.
    Run(RunArgs),
    /// Shrink a failing seed to a smallest schedule that still violates the same property:
    /// delta debugging over its faults, then shorter faults, later starts, a shorter and
    /// lighter workload and fewer nodes. Prints each step; writes the result to
    /// REPORT_DIR/shrunk/<scenario>[-<mutation>]-seed-N.json. Exits 1 if the seed passes, 3 if
    /// the harness panics, its schedule does not reproduce it, or the file cannot be written.
    Shrink(ShrinkArgs),
    /// Draw one run as a self-contained HTML page (inline SVG and a little script): a lane per
    /// node (up, crashed, paused, cut off), per range its owner and epoch over time with moves,
    /// splits and merges, faults as spans, client operations, handoff pauses, and the
    /// violation's evidence with the events around it. Writes OUT (default
    /// REPORT_DIR/timelines/<scenario>[-<mutation>]-seed-N.html; a scenario whose name already
    /// ends with -<mutation>-seed-N, as the shrunk ones do, keeps it).
    Timeline(TimelineArgs),
    /// Run many seeds in parallel and summarize: a range (`--seeds A..B`) or a seeds file,
    /// optionally one shard of it, optionally within a time budget. Writes a JSON summary with a
    /// record per seed (REPORT_DIR/sweep-<scenario>[-shard-K-of-N].json), the failing seeds' logs
    /// and, with `--junit`, a JUnit report. A first SIGINT or SIGTERM stops starting seeds and
    /// summarizes what completed (exit 130 or 143 if nothing failed); a second abandons the
    /// running seeds.
    Sweep(SweepArgs),
    /// Merge the JSON summaries of several sweeps (the shards of one, run on several machines)
    /// into the summary and table one sweep of all their seeds prints. Refuses summaries of
    /// different builds (version, commit), scenarios or mutations, a seed present twice, and
    /// a set of shards with one missing or given twice ("missing shards: 3/3"), unless
    /// --allow-partial. The exit code is the merged sweep's.
    Merge(MergeArgs),
    /// Measure what a seed costs against madsim alone, in one process: raw madsim's CPU per
    /// message (the patched madsim we run on, and, in a child process when built, madsim
    /// 0.2.34 as published: `bench/raw-madsim`), the same exchange through partmap's seam (its
    /// overhead per message), the scenario's CPU per seed and per message (seeds run one after
    /// the other, as a `--jobs 1` sweep runs them), the checkers' share, the same with a 4
    /// times longer workload, and the ratio of CPU per message (scenario / raw madsim) against
    /// each floor. CPU time of the measuring thread, not wall time. Exits 1 if one of the seeds (not the longer runs) did
    /// not end as its scenario expects.
    Bench(BenchArgs),
    /// Run every named mutation on the scenario where it applies (with `--rate`, also on the
    /// default scenario), seed after seed up to its budget, and the unmutated system on the same
    /// seeds. Prints a line on stderr as each mutation's hunt ends, then a table (mutation,
    /// caught, seeds to the first violation, property, repro); `--write-table` also writes it
    /// to REPORT_DIR/mutants.md. Exits 1 if any mutation is not caught (it survived, the
    /// unmutated system failed a seed too, or the harness panicked).
    Mutants(MutantsArgs),
    /// Check the cores exhaustively within bounds: a breadth-first search over every
    /// interleaving of the real authority, store, server cores and the leader's move flow
    /// (in `depose` two managers: the leader deposed mid-move, a standby at a newer term),
    /// wired by a model network (deliver or drop any message, crash a server, jump to the next
    /// deadline), each state judged by the simulator's `single_writer` checker (and `map_tiles`,
    /// `no_lost_append` and `manager_exclusive` where the configuration says), and, from each
    /// state where the search stops, bounded liveness (once the faults heal, every range
    /// becomes active and accepts an append; `--no-liveness` switches it off). Prints states
    /// explored, unique states, depth, CPU seconds and whether the space was exhausted. On a
    /// violation prints the shortest counterexample as a numbered transcript and exits 1; exits
    /// 0 when exhausted with no violation (or 5 when a bound cut the search short), 64 on a bad
    /// configuration, bound or mutation.
    Model(ModelArgs),
    /// Search the scenario (default: the built-in swarm.json) with feedback: keep a corpus of
    /// runs that reached a new goal, coverage situation or fault x flow cell, and make new runs
    /// by branching an entry before a rare goal (its schedule kept, a new future drawn), by
    /// mutating its schedule (shift, lengthen, retarget to a role, add an aimed fault, drop),
    /// by reseeding it, or as swarm runs, each with a fault mix of its own (kinds left out,
    /// aimed and message faults denser, clocks at the drift bound's worst case). Deterministic
    /// for a given --seed and --runs.
    /// Stops at the first violation (exit 1) and writes it as a scenario file under
    /// REPORT_DIR/explore/, with its timeline and a repro line; exit 0 when nothing failed.
    Explore(ExploreArgs),
    /// The search's benchmark: for each named mutation (or --only) on the default scenario, a
    /// random sweep of seeds 0..RUNS and RUNS runs of explore, in one process; prints runs that
    /// caught it, CPU seconds to the first catch, catches per 1,000 runs and the ratio.
    /// `--write-table` writes REPORT_DIR/hunt.md.
    Hunt(HuntArgs),
    /// List the goals registry: every named situation a run can reach, with what it means.
    Goals,
    /// Design reviews. `report questions`: measured answers to the senior questions (so far
    /// the rolling upgrade) in reports/questions/README.md. `report pause`: the handoff pause
    /// review: a grid over
    /// strategy × range size × write rate × bandwidth, with and without the random fault mix,
    /// N seeds per cell on worker threads; writes README.md (tables, model against measured,
    /// crossover and convergence), grid.csv and two SVG plots to OUT (default reports/pause).
    /// Exits 3 if the report cannot be written, 1 if any seed failed its checkers.
    Report(ReportArgs),
}

/// The arguments of `run`.
#[derive(Args)]
pub struct RunArgs {
    /// The seed (a non-negative integer).
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: u64,
    /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Stream every event with its simulated time.
    #[arg(long)]
    pub trace: bool,
    /// Switch off one safety mechanism (to prove a checker catches it); `A,B` switches off
    /// two at once (a defence-in-depth mutation with the layer that masks it). An unknown
    /// name, more than two, a name twice, or two of the store's: exit 64.
    #[arg(long, value_parser = MutationNames(parse_mutations))]
    pub mutation: Option<Mutations>,
    /// Also write the run as a scenario file whose explicit `faults.schedule` holds every
    /// fault and operator request the seed injected, with the topology and knobs it drew;
    /// run with the same seed it replays this run exactly.
    #[arg(long, value_name = "FILE")]
    pub emit_schedule: Option<PathBuf>,
    /// Also write the run's client operations to FILE as a Jepsen history in EDN, one
    /// operation map per line (`:type` `:invoke` `:ok` `:fail` `:info`, list-append `:value`s),
    /// for an external checker such as Elle's list-append.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
}

/// The arguments of `shrink`.
#[derive(Args)]
pub struct ShrinkArgs {
    /// The failing seed.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: u64,
    /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// The mutation the seed fails under, if any.
    #[arg(long, value_parser = MutationNames(Mutation::parse))]
    pub mutation: Option<Mutation>,
    /// Worker threads (each runs whole candidates).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// At most this many runs in all; then the smallest schedule found so far is written.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub max_runs: u64,
    /// Only remove faults (delta debugging); leave durations, starts, workload and
    /// topology alone.
    #[arg(long)]
    pub faults_only: bool,
    /// Where shrunk/ goes.
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
}

/// The arguments of `timeline`.
#[derive(Args)]
pub struct TimelineArgs {
    /// The seed.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: u64,
    /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Switch off one safety mechanism.
    #[arg(long, value_parser = MutationNames(Mutation::parse))]
    pub mutation: Option<Mutation>,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where timelines/ goes when --out is not given.
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
}

/// The arguments of `sweep`.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("selection").required(true).args(["seeds", "seeds_file"])))]
pub struct SweepArgs {
    /// Seed range `A..B` (B excluded).
    #[arg(long, value_parser = parse_seeds, allow_negative_numbers = true)]
    pub seeds: Option<(u64, u64)>,
    /// A file of seeds, one per line (`#` starts a comment), run in the file's order; e.g.
    /// the `.failing-seeds.txt` a sweep writes beside its summary.
    #[arg(long)]
    pub seeds_file: Option<PathBuf>,
    /// Run shard K of N only (K from 1): the K-th, (K+N)-th, (K+2N)-th ... seed of the
    /// selection. Shards 1/N to N/N together run every seed once; `merge` joins their
    /// summaries into the summary of one sweep.
    #[arg(long, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Start no seed once this much wall-clock time has passed (e.g. 90s, 10m, 1h30m); the
    /// seeds run are then the first ones of the selection.
    #[arg(long, value_parser = parse_budget)]
    pub time_budget: Option<Duration>,
    /// Also write a JUnit XML report (one test case per seed) to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Worker threads (each runs whole seeds).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Switch off one safety mechanism (to prove a checker catches it); `A,B` two at once,
    /// as `run --mutation`.
    #[arg(long, value_parser = MutationNames(parse_mutations))]
    pub mutation: Option<Mutations>,
    /// Where the JSON summary and failing seeds' logs go (checked writable before any
    /// seed runs).
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
    /// A goal the sweep must reach on at least one seed (repeatable; names as in the
    /// goals table, `partmap-sim goals` lists them): the sweep fails (exit 1) when one is
    /// never reached, so a goal that silently stops being reached fails CI.
    #[arg(long = "require-goal", value_name = "GOAL")]
    pub require_goal: Vec<String>,
}

/// The arguments of `merge`.
#[derive(Args)]
pub struct MergeArgs {
    /// The summaries (`sweep-*.json` files written by `sweep`).
    #[arg(required = true)]
    pub summaries: Vec<PathBuf>,
    /// Where the merged summary goes (checked writable before anything is read); default:
    /// reports/sweep-<scenario>[-<mutation>]-merged.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write a JUnit XML report (one test case per seed) to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Merge a shard set with shards missing (a shard whose upload failed); the table's
    /// header and last line and the summary's `stopped.missing_shards` then say it is
    /// partial. Shards given twice are refused all the same.
    #[arg(long)]
    pub allow_partial: bool,
}

/// The arguments of `bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Seeds of the scenario to run (A..B).
    #[arg(long, default_value = "0..40", value_parser = parse_seeds)]
    pub seeds: (u64, u64),
    /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Round trips per client of the raw madsim loop (4 pairs, 5 runtimes).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub round_trips: u64,
    /// Also run the first N of the seeds with the workload 4 times as long, and again at the
    /// normal length for the comparison, after one uncounted warm-up seed (0: skip).
    #[arg(long, default_value_t = 10)]
    pub scaled_seeds: u64,
    /// The `bench/raw-madsim` binary (the raw loop on madsim 0.2.34 as published), run as a
    /// child for the second floor. Default: target/raw-madsim/release/raw-madsim beside this
    /// binary, measured when built (`just bench` builds it); given here, it must run.
    #[arg(long)]
    pub published_madsim: Option<PathBuf>,
}

/// The arguments of `model`.
#[derive(Args)]
pub struct ModelArgs {
    /// The configuration (built: move, move-precopy, failover, split, merge, depose,
    /// stale-owner, store-crash, move-corrupt, move-abort, merge-move; depose: a standby manager
    /// takes a newer leader term while the leader's move is in flight; stale-owner: a failover
    /// whose cut-off owner's write to the store is delayed, with drifting clocks; store-crash:
    /// the store crashes with unsynced or torn writes; move-abort: a move aborted with its first
    /// pause still in flight, then rolled back; merge-move: an operator's move of a merge parent
    /// requested while the merge is journaled). Required unless --all.
    #[arg(long)]
    pub config: Option<String>,
    /// Run every configuration unmutated and under every core mutation on its default bounds,
    /// and print the table (configuration, mutation, caught or masked, steps, states, CPU).
    #[arg(long, conflicts_with_all = ["config", "mutation"])]
    pub all: bool,
    /// On a violation, where the replay scenario goes: REPORT_DIR/model/.
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
    /// On a violation, run the replay scenario on seeds 0..N until one fails the same
    /// property (0: write it, do not run it).
    #[arg(long, default_value_t = 4)]
    pub replay_seeds: u64,
    /// Run a named mutation that lives in the configuration's cores; `A,B` runs two at once
    /// (a defence-in-depth mutation with the layer that masks it). An unknown name, more than
    /// two, or a name twice: exit 64.
    #[arg(long)]
    pub mutation: Option<String>,
    /// BFS depth bound, actions after the setup (default: the configuration's).
    #[arg(long)]
    pub max_depth: Option<u32>,
    /// Unique states bound (default: the configuration's).
    #[arg(long)]
    pub max_states: Option<u64>,
    /// Messages in flight bound (default: the configuration's).
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Time horizon after the setup, ms (default: the configuration's).
    #[arg(long)]
    pub horizon_ms: Option<u64>,
    /// Leader rounds after the setup (default: the configuration's).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Message drops bound (default: the configuration's; 0 allowed: no drops).
    #[arg(long)]
    pub max_drops: Option<u32>,
    /// Server crashes bound (default: the configuration's; 0 allowed: no crash).
    #[arg(long)]
    pub max_crashes: Option<u32>,
    /// Cuts bound: a server loses its link to the authority for the rest of the run
    /// (default: the configuration's; 0 allowed: no cut).
    #[arg(long)]
    pub max_cuts: Option<u32>,
    /// Store crashes bound: the store loses its memory and its pending syncs, its unsynced
    /// writes are lost (or torn, with --torn-writes on), and it restarts from its durable
    /// records; with at least 1 the store's disk sync is a step of its own (default: the
    /// configuration's, 1 in store-crash and 0 elsewhere; 0 allowed: no store crash).
    #[arg(long)]
    pub max_store_crashes: Option<u32>,
    /// Whether a store crash may keep a prefix (0 to 8 records) of the unsynced writes and
    /// tear the next, as the simulator's `torn_writes` knob: on or off (default: the
    /// configuration's, on in store-crash; needs a store crash in the bounds).
    #[arg(long, value_parser = ["on", "off"])]
    pub torn_writes: Option<String>,
    /// Corruptions bound: a pre-copy chunk in flight from the store to a server has one bit
    /// flipped, as the simulator's `corrupt` fault does (default: the configuration's, 1 for
    /// `move-corrupt` and 0 elsewhere; 0 allowed: none). Only the configurations with a
    /// pre-copy move (`move-precopy`, `move-corrupt`) take more than 0; elsewhere: exit 64.
    #[arg(long)]
    pub max_corrupts: Option<u32>,
    /// Duplications bound: a request in flight copied, the copy delivered later as well
    /// (default: the configuration's; 0 allowed: no duplication).
    #[arg(long)]
    pub max_dups: Option<u32>,
    /// Delays bound: a message in flight marked slow, so time may move while it is in flight
    /// (with urgent time, where no other message does); delivered or dropped later (default:
    /// the configuration's, 0 in every one but `stale-owner`, 1 there; 0 allowed).
    #[arg(long)]
    pub max_delays: Option<u32>,
    /// Clock drift bound, parts per million: the authority's clock runs fast by it and every
    /// server's slow by it, the corner of the bound for leases (default: the configuration's,
    /// 0 in every one but `stale-owner`, 50000 there; at most 500000, as the simulator's
    /// `knobs.clock_drift_ppm`).
    #[arg(long)]
    pub drift_ppm: Option<u64>,
    /// Rounds of the standby manager, `manager-2` (default: the configuration's). Only
    /// `depose` has one, and needs at least 1; elsewhere only 0 is accepted.
    #[arg(long)]
    pub standby_rounds: Option<u32>,
    /// The client's appends (default: the configuration's; 0 allowed: no client).
    #[arg(long)]
    pub appends: Option<u64>,
    /// Switch off the persistent-set partial-order reduction of urgent configurations
    /// (every enabled action expanded), to measure what it saves.
    #[arg(long)]
    pub no_por: bool,
    /// Switch off the history's folds: the state's key holds the whole history, every event
    /// with its time, in order.
    #[arg(long)]
    pub no_fold: bool,
    /// Switch off the network as a multiset and the tasks as a set: in the key, messages and
    /// tasks in the order sent and made.
    #[arg(long)]
    pub no_multiset: bool,
    /// Switch off the bounded liveness check (from each state where the search stops, once
    /// the faults heal, every range must become active and accept an append).
    #[arg(long, conflicts_with = "liveness_every_state")]
    pub no_liveness: bool,
    /// Judge liveness from every state the search keeps, not only where it stops.
    #[arg(long)]
    pub liveness_every_state: bool,
}

/// The arguments of `mutants`.
#[derive(Args)]
pub struct MutantsArgs {
    /// Seed budget per mutation (default: each mutation's own, 5 to 30).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: Option<u64>,
    /// Run every seed of the budget instead of stopping at the first catch, and report on
    /// how many seeds each mutation was caught.
    #[arg(long)]
    pub rate: bool,
    /// Only these mutations (repeatable; default: all that a checker must catch, not the
    /// three defence-in-depth ones, which are refused here).
    #[arg(long = "only", value_parser = MutationNames(Mutation::parse))]
    pub only: Vec<Mutation>,
    /// Worker threads (each takes whole mutations).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Write the table to REPORT_DIR/mutants.md (the copy kept in the repository is
    /// `mutants --seeds 20 --rate --write-table`); needs every mutation, so not with `--only`.
    #[arg(long, conflicts_with = "only")]
    pub write_table: bool,
    /// Where mutants.md goes.
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
}

/// The arguments of `explore`.
#[derive(Args)]
pub struct ExploreArgs {
    /// Scenario file (JSON); default: the built-in copy of scenarios/swarm.json.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// The explorer's own seed (not a run's): the same --seed and --runs give the same
    /// corpus and findings.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub seed: u64,
    /// At most this many runs (0: only merge the --corpus directories into the first).
    #[arg(long, default_value_t = 1000)]
    pub runs: u64,
    /// Stop between batches after this much wall time (`90s`, `10m`).
    #[arg(long, value_parser = parse_budget)]
    pub time_budget: Option<std::time::Duration>,
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Switch off one safety mechanism (the search never looks at which); `A,B` two at once
    /// (a defence-in-depth mutation with the layer that masks it). With two, `--shrink` is
    /// refused (the shrinker runs one). Errors as `run --mutation`.
    #[arg(long, value_parser = MutationNames(parse_mutations))]
    pub mutation: Option<Mutations>,
    /// Collect every violation instead of stopping at the first.
    #[arg(long)]
    pub keep_going: bool,
    /// Shrink each violation's schedule too.
    #[arg(long)]
    pub shrink: bool,
    /// Corpus directory (repeatable): every one is read, new entries are written to the
    /// first, so `--corpus mine --corpus theirs` merges corpora.
    #[arg(long)]
    pub corpus: Vec<PathBuf>,
    /// Where findings go (REPORT_DIR/explore/<scenario>[-<mutation>]/).
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
}

/// The arguments of `hunt`.
#[derive(Args)]
pub struct HuntArgs {
    /// Run budget of each search, per mutation.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: u64,
    /// Only these mutations (repeatable; default: all).
    #[arg(long = "only", value_parser = Mutation::parse)]
    pub only: Vec<Mutation>,
    /// The first round's explorer seed (round k explores with SEED+k).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Independent rounds: round k sweeps seeds k*RUNS..(k+1)*RUNS and explores with seed
    /// SEED+k; the table gives medians over rounds (one round's first catch is mostly luck).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rounds: u64,
    /// More rounds for each mutation random catches on 5% of runs or more, each stopping at
    /// its first catch: they resolve first catches that come within a few runs on both sides,
    /// and count in the time to first catch only.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub first_rounds: u64,
    /// Worker threads (each takes one mutation's round at a time).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Write the table to REPORT_DIR/hunt.md.
    #[arg(long)]
    pub write_table: bool,
    /// Where hunt.md goes.
    #[arg(long, default_value = "reports")]
    pub report_dir: PathBuf,
}

/// The arguments of `report`.
#[derive(Args)]
pub struct ReportArgs {
    /// Which review: `pause` or `questions`.
    #[arg(value_parser = ["pause", "questions"])]
    pub which: String,
    /// Seeds per cell (`pause`, at most 1000, default 3; a cell dearer than 0.5 s of CPU a
    /// seed runs fewer in proportion) or per scenario (`questions`, default 200).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub seeds: Option<u64>,
    /// Worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// A small grid (three sizes, two write rates), for a quick look.
    #[arg(long)]
    pub quick: bool,
    /// Where the report goes.
    #[arg(long, default_value = "reports/pause")]
    pub out: PathBuf,
    /// Print one cell's scenario as JSON instead of running the grid, to run, trace or
    /// shrink one of its seeds: `STRATEGY,SIZE,RATIO,BANDWIDTH[,faults]`, e.g.
    /// `pre-copy,64MiB,0.05,100MiB`.
    #[arg(long)]
    pub cell: Option<String>,
    /// The model only, no simulation: predict the pause of a range of SIZE bytes taking
    /// WRITE_RATE of appends over BANDWIDTH links, per strategy, with the rounds, bytes
    /// copied, convergence, pre-copy's convergence limit and a recommendation, e.g.
    /// `1GiB,600MiB/s,1GiB/s` (units B, KiB, MiB, GiB; rates with an optional /s).
    #[arg(long, conflicts_with_all = ["cell", "quick"])]
    pub predict: Option<String>,
    /// With --predict: also run N seeds of each strategy on that cell (on --jobs threads)
    /// and print measured against predicted.
    #[arg(long, requires = "predict", value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub verify: Option<u64>,
    /// With --predict: pre-copy's stop threshold (bytes; units as in --predict), default
    /// the grid's 16 MiB.
    #[arg(long, requires = "predict")]
    pub threshold: Option<String>,
    /// With --predict: pre-copy's round limit, default the grid's 8.
    #[arg(long, requires = "predict", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_rounds: Option<u32>,
    /// With --predict: the leader's tick, ms, default 200.
    #[arg(long, requires = "predict", value_parser = clap::value_parser!(u64).range(1..=60000))]
    pub tick_ms: Option<u64>,
    /// With --predict (model only, not with --verify): one control message's one-way time,
    /// ms, default 3 (the mean of the simulation's 1..5 ms draw).
    #[arg(long, requires = "predict")]
    pub latency_ms: Option<f64>,
    /// With --predict: the cutover rule's pause budget, ms (default: the rule off, as in
    /// the grid); with --verify the cells run with it.
    #[arg(long, requires = "predict", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub budget_ms: Option<u64>,
    /// Regenerate README.md and the plots in OUT from a committed grid.csv (every seed's
    /// figures) without running the grid; calibrates the model's constants (about 16 s of
    /// CPU) and states the source in the header.
    #[arg(long, conflicts_with_all = ["cell", "predict", "quick"])]
    pub from_csv: Option<PathBuf>,
}

pub fn parse_seeds(s: &str) -> Result<(u64, u64), String> {
    partmap_sim::sweep::seeds::parse_range(s)
}

pub fn parse_budget(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. 90s, 10m or 1h30m"))?;
    if d.is_zero() {
        return Err(format!("`{s}`: the time budget must be more than zero"));
    }
    Ok(d)
}

/// Bad usage: print `error: {e}` and exit 64.
pub fn usage(e: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("error: {e}");
    std::process::ExitCode::from(64)
}

pub fn load(path: Option<PathBuf>) -> Result<(Scenario, String), String> {
    match path {
        None => Ok((Scenario::default_swarm(), "scenarios/swarm.json (built-in)".into())),
        Some(p) => Ok((Scenario::load(&p)?, p.display().to_string())),
    }
}

/// `--seed`: a non-negative integer, with a message that says so for `-1` or `x`.
pub fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim().parse().map_err(|_| {
        let what = if s.trim().starts_with('-') { "is negative" } else { "is not a number" };
        format!("`{s}` {what}: a seed is an integer from 0 to {}", u64::MAX)
    })
}

/// The `--mutation` of `run` and `explore`: one mutation, or two at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mutations {
    /// The first.
    pub first: Mutation,
    /// The second (`A,B`), if any: a defence-in-depth mutation's masking layer also broken.
    pub also: Option<Mutation>,
}

/// One mutation name, or two joined by a comma (`A,B`). Errors: an unknown name (the accepted
/// names listed), more than two, a name twice, or two that live in the store's core (which
/// takes one).
pub fn parse_mutations(text: &str) -> Result<Mutations, String> {
    let ms = text.split(',').map(|n| Mutation::parse(n.trim())).collect::<Result<Vec<_>, _>>()?;
    match ms.as_slice() {
        [a] => Ok(Mutations { first: *a, also: None }),
        [a, b] if a == b => Err(format!("`{}` named twice", a.name())),
        [a, b] if a.lives_in_store() && b.lives_in_store() => Err(format!("`{}` and `{}` both live in the store's core, which takes one", a.name(), b.name())),
        [a, b] => Ok(Mutations { first: *a, also: Some(*b) }),
        _ => Err(format!("at most two mutations at once, got {}", ms.len())),
    }
}

/// A `--mutation` or `--only` value parser: `parse` turns the text into the value (one name,
/// [`Mutation::parse`], whose error lists the accepted names; or `A[,B]`, [`parse_mutations`]),
/// and the names are the argument's possible values, so `--help` lists them. Its error names
/// the flag.
#[derive(Clone)]
pub struct MutationNames<T>(pub fn(&str) -> Result<T, String>);

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for MutationNames<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<T, clap::Error> {
        let flag = arg.and_then(|a| a.get_long()).map_or(String::from("the mutation"), |l| format!("--{l}"));
        let text = value.to_string_lossy();
        (self.0)(&text).map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("invalid value '{text}' for {flag}: {e}\n")).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Mutation::ALL.iter().map(|(_, name)| clap::builder::PossibleValue::new(*name))))
    }
}

