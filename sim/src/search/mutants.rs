//! `partmap-sim mutants`: prove the checkers. Each named [`Mutation`] switches off one safety
//! mechanism; it is run on the scenario where that mechanism matters, seed after seed, until a
//! property is violated or the seed budget is spent. A mutation nothing catches means a checker,
//! the workload or the nemesis is too weak. The unmutated system must pass the same seeds, so a
//! catch is the mutation's doing. Idea: FoundationDB's negative tests (a deliberately broken
//! resolver the simulator must catch) and TigerBeetle's VOPR, which must fail on a broken build.

use crate::run::{run_seed, RunOptions, RunOutcome};
use crate::scenario::Scenario;
use partmap::config::Mutation;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where a mutation is run: a scenario file (under `scenarios/`, built into the binary) and the
/// number of seeds it gets by default.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The mutation.
    pub mutation: Mutation,
    /// The scenario's file name under `scenarios/`.
    pub scenario: &'static str,
    /// Seeds 0..budget are tried, stopping at the first violation.
    pub budget: u64,
}

/// Every mutation a checker must catch, with its scenario and budget, in [`Mutation::ALL`]
/// order (the first 20 of it; the rest are [`DEFENCE_IN_DEPTH`]).
pub const TARGETS: [Target; 20] = [
    Target { mutation: Mutation::StoreIgnoresFence, scenario: "stale-write-after-failover.json", budget: 5 },
    Target { mutation: Mutation::ServerSkipsEpochCheck, scenario: "stale-pause.json", budget: 5 },
    Target { mutation: Mutation::ServerSkipsAuthorityCheck, scenario: "paused-owner.json", budget: 5 },
    Target { mutation: Mutation::ServerIgnoresLeaseExpiry, scenario: "cut-off-owner.json", budget: 5 },
    Target { mutation: Mutation::CheckThenAwaitThenAdmit, scenario: "paused-owner.json", budget: 20 },
    Target { mutation: Mutation::PauseSkipsDrain, scenario: "moves.json", budget: 5 },
    Target { mutation: Mutation::SourceIgnoresPause, scenario: "moves.json", budget: 10 },
    Target { mutation: Mutation::TargetSkipsVerify, scenario: "transfer-divergence.json", budget: 5 },
    Target { mutation: Mutation::PublishBeforeFence, scenario: "unfenced-new-owner.json", budget: 5 },
    Target { mutation: Mutation::RetireParentsFirst, scenario: "split-merge.json", budget: 5 },
    Target { mutation: Mutation::FreshIdOnRetry, scenario: "failover.json", budget: 20 },
    Target { mutation: Mutation::ZeroLeaseMargin, scenario: "clock-drift-long-lease.json", budget: 20 },
    Target { mutation: Mutation::AuthoritySkipsLeaderEpoch, scenario: "dueling-managers.json", budget: 10 },
    Target { mutation: Mutation::NewLeaderIgnoresJournal, scenario: "merge-manager-crash.json", budget: 10 },
    Target { mutation: Mutation::StoreAcksBeforeSync, scenario: "failover.json", budget: 30 },
    Target { mutation: Mutation::MergeFromStaleView, scenario: "split-merge.json", budget: 10 },
    Target { mutation: Mutation::SplitSealsOneShort, scenario: "split-merge.json", budget: 5 },
    Target { mutation: Mutation::AuthorityLogsRefusedCas, scenario: "dueling-managers.json", budget: 10 },
    Target { mutation: Mutation::AuthoritySharesLeaderTerm, scenario: "dueling-managers.json", budget: 10 },
    Target { mutation: Mutation::MapForgetsReshapes, scenario: "move-during-merge.json", budget: 5 },
];

/// A mutation of issue 19 that no checker can catch because another mechanism covers it
/// (defence in depth; the argument is on the mutation and in `reports/mutation-testing.md`),
/// with the scenario where its mechanism matters most. `cargo test` checks the measurement:
/// on seeds 0..seeds the mutated system passes every property, and its traces differ from the
/// unmutated ones on some seed exactly when `reached` (the mutated path changes what the run
/// does). A mutation measured unreached whose traces start to differ fails the test: some
/// change made the path reachable, so it needs a scenario that catches it, or the argument
/// again.
#[derive(Clone, Copy, Debug)]
pub struct Shadowed {
    /// The mutation.
    pub mutation: Mutation,
    /// The scenario's file name under `scenarios/` (built in, see [`builtin_scenario`]).
    pub scenario: &'static str,
    /// Seeds 0..seeds are run, mutated and not.
    pub seeds: u64,
    /// Whether the mutated path changes some run's trace on those seeds.
    pub reached: bool,
}

/// The defence-in-depth mutations, in [`Mutation::ALL`] order after [`TARGETS`].
pub const DEFENCE_IN_DEPTH: [Shadowed; 3] = [
    Shadowed { mutation: Mutation::ServerObeysDeposedLeader, scenario: "dueling-managers.json", seeds: 5, reached: true },
    Shadowed { mutation: Mutation::ServerAdmitsNewerEpoch, scenario: "moves.json", seeds: 5, reached: false },
    Shadowed { mutation: Mutation::ServerKeepsFencedRange, scenario: "stale-write-after-failover.json", seeds: 5, reached: false },
];

/// The default scenario every mutation also runs on in rate mode (issue 12: each mutation on
/// its own scenario and on the default one, with the rate per scenario).
pub const DEFAULT_SCENARIO: &str = "swarm.json";

/// `targets` followed by each of them on [`DEFAULT_SCENARIO`] (same budget), for rate mode.
pub fn with_default_scenario(targets: &[Target]) -> Vec<Target> {
    let on_default = targets.iter().filter(|t| t.scenario != DEFAULT_SCENARIO).map(|t| Target { scenario: DEFAULT_SCENARIO, ..*t });
    targets.iter().copied().chain(on_default).collect()
}

/// The built-in copy of `scenarios/<name>` (so `mutants` runs from any directory).
///
/// Errors: a name no target uses.
pub fn builtin_scenario(name: &str) -> Result<Scenario, String> {
    let text = match name {
        "stale-write-after-failover.json" => include_str!("../../../scenarios/stale-write-after-failover.json"),
        "stale-pause.json" => include_str!("../../../scenarios/stale-pause.json"),
        "paused-owner.json" => include_str!("../../../scenarios/paused-owner.json"),
        "moves.json" => include_str!("../../../scenarios/moves.json"),
        "transfer-divergence.json" => include_str!("../../../scenarios/transfer-divergence.json"),
        "unfenced-new-owner.json" => include_str!("../../../scenarios/unfenced-new-owner.json"),
        "split-merge.json" => include_str!("../../../scenarios/split-merge.json"),
        "failover.json" => include_str!("../../../scenarios/failover.json"),
        "clock-drift-long-lease.json" => include_str!("../../../scenarios/clock-drift-long-lease.json"),
        "merge-manager-crash.json" => include_str!("../../../scenarios/merge-manager-crash.json"),
        "cut-off-owner.json" => include_str!("../../../scenarios/cut-off-owner.json"),
        "dueling-managers.json" => include_str!("../../../scenarios/dueling-managers.json"),
        "move-during-merge.json" => include_str!("../../../scenarios/move-during-merge.json"),
        "swarm.json" => include_str!("../../../scenarios/swarm.json"),
        other => return Err(format!("no built-in scenario `{other}`")),
    };
    Scenario::parse(text, &format!("scenarios/{name}"))
}

/// What hunting one mutation found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Hunt {
    /// The mutation's CLI name.
    pub mutation: &'static str,
    /// The scenario file name.
    pub scenario: &'static str,
    /// Seeds tried (from 0): up to and including the catching seed, or the whole budget (in
    /// rate mode, always the whole budget).
    pub seeds_run: u64,
    /// Seeds among those on which a property failed.
    pub catches: u64,
    /// Per property, the seeds on which it failed.
    pub by_property: BTreeMap<String, u64>,
    /// Seeds on which the checkers without the durable log and the served final reads
    /// ([`crate::check::legacy_violation`]) or liveness caught it.
    pub legacy_catches: u64,
    /// The first seed on which a property failed, if any.
    pub caught_at: Option<u64>,
    /// The first property that failed there.
    pub property: Option<String>,
    /// Its evidence.
    pub evidence: Option<String>,
    /// Whether the unmutated system passed every seed tried (`None`: not checked).
    pub unmutated_pass: Option<bool>,
    /// The command that reproduces the catch (or runs the last seed tried).
    pub repro: String,
}

impl Hunt {
    /// Whether this hunt ran on the mutation's own scenario (not the default one of rate mode).
    pub fn own(&self) -> bool {
        TARGETS.iter().any(|t| t.mutation.name() == self.mutation && t.scenario == self.scenario)
    }

    /// Caught by a property, and the unmutated system passed the same seeds.
    pub fn caught(&self) -> bool {
        self.caught_at.is_some() && self.property.as_deref() != Some(HARNESS_PANIC) && self.unmutated_pass != Some(false)
    }

    /// `yes`, `no` (survived), `baseline failed` (the unmutated system failed a seed too: a
    /// checker or the system is wrong), or `harness panic`.
    pub fn status(&self) -> &'static str {
        if self.unmutated_pass == Some(false) {
            "**baseline failed**"
        } else if self.property.as_deref() == Some(HARNESS_PANIC) {
            "**harness panic**"
        } else if self.caught_at.is_some() {
            "yes"
        } else {
            "**no**"
        }
    }
}

/// The options of one run of `target` at `seed`, with or without its mutation.
fn options(target: &Target, seed: u64, mutated: bool) -> Result<RunOptions, String> {
    let scenario = builtin_scenario(target.scenario)?;
    let mutation = mutated.then_some(target.mutation);
    Ok(RunOptions { seed, scenario, scenario_label: format!("scenarios/{}", target.scenario), mutation, also_mutation: None, trace: false, echo_header: false })
}

/// The property name a run whose harness panicked is given. Not a catch: a panic is
/// a bug of the harness or an assertion of the system, and says nothing about the checkers.
pub const HARNESS_PANIC: &str = "harness panic";

/// What one seed's run found.
struct Found {
    /// The first violated property (in the checkers' order) and its evidence.
    first: (String, String),
    /// Every violated property.
    properties: Vec<String>,
    /// Whether a view of the checkers without the durable log and the served final reads, or
    /// liveness, was violated.
    legacy: bool,
}

/// Run one seed: `None` if every property held.
fn failure(opts: &RunOptions) -> Option<Found> {
    match catch_unwind(AssertUnwindSafe(|| run_seed(opts))) {
        Ok(report) if report.outcome() == RunOutcome::Pass => None,
        Ok(report) => {
            let first = report.verdicts.iter().find_map(|v| v.violation.clone().map(|e| (v.property.to_string(), e)))?;
            let properties = report.verdicts.iter().filter(|v| v.violation.is_some()).map(|v| v.property.to_string()).collect();
            let legacy = report.legacy_violation.is_some() || report.verdicts.iter().any(|v| v.property == "liveness" && v.violation.is_some());
            Some(Found { first, properties, legacy })
        }
        Err(_) => Some(Found { first: (HARNESS_PANIC.into(), "the harness panicked (its message is on stderr)".into()), properties: vec![HARNESS_PANIC.into()], legacy: true }),
    }
}

/// Hunt `target` over seeds `0..budget`, stopping at the first catch unless `rate` (then
/// every seed runs and `catches` counts them); then, if `check_unmutated`, run the same seeds
/// without the mutation (through `baseline`, a cache of unmutated results by scenario and seed).
///
/// Errors: the target's scenario is not built in.
pub fn hunt(target: &Target, budget: u64, rate: bool, check_unmutated: bool, baseline: &Mutex<BTreeMap<(&'static str, u64), bool>>) -> Result<Hunt, String> {
    let mut h = Hunt {
        mutation: target.mutation.name(),
        scenario: target.scenario,
        seeds_run: 0,
        catches: 0,
        by_property: BTreeMap::new(),
        legacy_catches: 0,
        caught_at: None,
        property: None,
        evidence: None,
        unmutated_pass: None,
        repro: String::new(),
    };
    for seed in 0..budget {
        let opts = options(target, seed, true)?;
        h.seeds_run = seed + 1;
        let Some(found) = failure(&opts) else { continue };
        h.catches += 1;
        h.legacy_catches += u64::from(found.legacy);
        for p in found.properties {
            *h.by_property.entry(p).or_default() += 1;
        }
        let (property, evidence) = found.first;
        if h.caught_at.is_none() {
            h.repro = crate::run::repro_command(&opts, seed);
            h.caught_at = Some(seed);
            h.property = Some(property);
            h.evidence = Some(evidence);
        }
        if !rate {
            break;
        }
    }
    if h.caught_at.is_none() {
        h.repro = crate::run::repro_command(&options(target, budget.saturating_sub(1), true)?, budget.saturating_sub(1));
    }
    if check_unmutated {
        let mut all = true;
        for seed in 0..h.seeds_run {
            let cached = baseline.lock().expect("baseline").get(&(target.scenario, seed)).copied();
            let pass = match cached {
                Some(p) => p,
                None => {
                    let p = failure(&options(target, seed, false)?).is_none();
                    baseline.lock().expect("baseline").insert((target.scenario, seed), p);
                    p
                }
            };
            all &= pass;
        }
        h.unmutated_pass = Some(all);
    }
    Ok(h)
}

/// Called as each hunt ends, with how many have ended, of how many, and the hunt.
pub type HuntEnded = dyn Fn(usize, usize, &Result<Hunt, String>) + Sync;

/// Hunt every target with `jobs` worker threads (each takes whole mutations). `budget`
/// overrides every target's own; `rate` runs every seed of it (see [`hunt`]). `on_done` is
/// called as each hunt ends, with how many have ended, of how many, and the hunt (for
/// progress). Results come back in `targets` order.
///
/// Errors: a target's scenario is not built in.
pub fn hunt_all(
    targets: &[Target],
    budget: Option<u64>,
    rate: bool,
    check_unmutated: bool,
    jobs: usize,
    on_done: &HuntEnded,
) -> Result<Vec<Hunt>, String> {
    let ended = AtomicUsize::new(0);
    let baseline = Mutex::new(BTreeMap::new());
    let hunts = crate::search::workers::in_order(targets, jobs, |_, t| {
        let h = hunt(t, budget.unwrap_or(t.budget), rate, check_unmutated, &baseline);
        on_done(ended.fetch_add(1, Ordering::SeqCst) + 1, targets.len(), &h);
        h
    });
    hunts.into_iter().collect()
}

/// One line of progress for a hunt that ended: `[3/18] store-ignores-fence on
/// stale-write-after-failover.json: caught at seed 0 (1 of 1 seeds), unmutated passes`.
pub fn progress_line(ended: usize, of: usize, h: &Result<Hunt, String>) -> String {
    match h {
        Err(e) => format!("[{ended}/{of}] error: {e}"),
        Ok(h) => {
            let caught = match h.caught_at {
                Some(seed) => format!("caught at seed {seed} ({} of {} seeds)", h.catches, h.seeds_run),
                None => format!("NOT caught in {} seeds", h.seeds_run),
            };
            let unmutated = match h.unmutated_pass {
                None => "",
                Some(true) => ", unmutated passes",
                Some(false) => ", UNMUTATED FAILS",
            };
            format!("[{ended}/{of}] {} on {}: {caught}{unmutated}", h.mutation, h.scenario)
        }
    }
}

/// The table: mutation, caught, seeds to the first violation, the seeds caught of those run,
/// the property, whether the unmutated system passed, the repro command; then each catch's
/// evidence.
pub fn render(hunts: &[Hunt]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| mutation | scenario | caught | seeds to first violation | caught on (seeds) | property | by property (seeds) | old checkers caught on | unmutated passes the same seeds | repro |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for h in hunts {
        let caught = h.status();
        let seeds = h.caught_at.map_or(format!("none in {}", h.seeds_run), |s| (s + 1).to_string());
        let rate = format!("{} of {}", h.catches, h.seeds_run);
        let unmutated = match h.unmutated_pass {
            None => "not checked",
            Some(true) => "yes",
            Some(false) => "**no**",
        };
        let by: Vec<String> = h.by_property.iter().map(|(p, n)| format!("{p} {n}")).collect();
        let legacy = format!("{} of {}", h.legacy_catches, h.seeds_run);
        let _ = writeln!(out, "| {} | {} | {caught} | {seeds} | {rate} | {} | {} | {legacy} | {unmutated} | `{}` |", h.mutation, h.scenario, h.property.as_deref().unwrap_or("-"), by.join(", "), h.repro);
    }
    let _ = writeln!(out, "\nEvidence of each catch:\n");
    for h in hunts {
        if let (Some(seed), Some(p), Some(e)) = (h.caught_at, &h.property, &h.evidence) {
            let _ = writeln!(out, "- `{}` (seed {seed}), {p}: {e}", h.mutation);
        }
    }
    let own: Vec<&Hunt> = hunts.iter().filter(|h| h.own()).collect();
    let not_caught: Vec<String> = own.iter().filter(|h| !h.caught()).map(|h| format!("{} ({})", h.mutation, h.status().trim_matches('*'))).collect();
    if own.len() < hunts.len() {
        let _ = writeln!(out, "\nRows on {DEFAULT_SCENARIO} show how often the default sweep catches each mutation on its own; a mutation must be caught on its own scenario.");
    }
    if not_caught.is_empty() {
        let _ = writeln!(out, "\ncaught: all {} of {} on their own scenarios", own.len(), own.len());
    } else {
        let _ = writeln!(out, "\nNOT CAUGHT: {}", not_caught.join(", "));
    }
    out
}
