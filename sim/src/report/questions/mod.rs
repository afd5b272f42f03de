//! `partmap-sim report questions`: measured answers to the design's five senior questions,
//! written to `reports/questions/README.md`. Every figure is computed here from the histories
//! of N seeds of the relevant scenarios (the checkers' verdicts and the handoff figures of
//! each run included):
//! 1. cache staleness ([`staleness`]): the cached map's age at each routed attempt, and the
//!    time from a commit until every frontend holds it, against the bound the design states;
//! 2. refresh errors ([`refresh`]): every reason a frontend retried, how often, and what it
//!    cost the appends that met it;
//! 3. two managers ([`managers`]): what a deposed term still did after the next was granted,
//!    and how soon the checkers catch the mutation that lets two managers share a term;
//! 4. atomicity ([`atomicity`]): the window between a move's target serving, the map commit
//!    and the last frontend caching it, and what clients saw in it;
//! 5. rolling upgrade: the servers' (the handoffs of `rolling-upgrade.json`) and the
//!    managers' (each transferred away from and restarted in `rolling-restart-managers.json`,
//!    and the leader transfers of `leader-transfer.json`, [`upgrade`]).

pub mod atomicity;
pub mod managers;
pub mod refresh;
pub mod render;
pub mod staleness;
pub mod upgrade;

use crate::run::{run_seed, RunOptions, RunOutcome};
use crate::scenario::Scenario;
use partmap::config::Mutation;
use std::collections::BTreeMap;

/// The scenarios measured, by role.
pub const SWARM: &str = "scenarios/swarm.json";
/// Question 5's servers, and 1, 2 and 4 without faults.
pub const ROLLING: &str = "scenarios/rolling-upgrade.json";
/// Question 3: a leader cut from the authority but not from the servers, twice.
pub const DUELING: &str = "scenarios/dueling-managers.json";
/// Question 3: the leader crashes mid-merge.
pub const MANAGER_CRASH: &str = "scenarios/merge-manager-crash.json";
/// Question 5's managers, and question 3's planned handovers.
pub const TRANSFER: &str = "scenarios/leader-transfer.json";
/// Question 5's managers: each stands aside by a leader transfer and is restarted.
pub const RESTART_MANAGERS: &str = "scenarios/rolling-restart-managers.json";
/// Every scenario run, in the document's order.
pub const SCENARIOS: [&str; 6] = [SWARM, ROLLING, DUELING, MANAGER_CRASH, TRANSFER, RESTART_MANAGERS];
/// The mutation question 3 runs on [`DUELING`].
pub const DUELING_MUTATION: Mutation = Mutation::AuthoritySharesLeaderTerm;

/// What one seed measured.
#[derive(Clone, Debug)]
pub struct Seed {
    /// Index into [`SCENARIOS`].
    pub scenario: usize,
    /// The seed.
    pub seed: u64,
    /// Run with [`DUELING_MUTATION`].
    pub mutated: bool,
    /// How it ended.
    pub outcome: RunOutcome,
    /// The first violated property and the earliest simulated time (ms) its evidence cites.
    pub caught: Option<(&'static str, Option<f64>)>,
    /// `map_staleness_ms + rpc_timeout_ms` of the run: the bound on the cache's age.
    pub age_bound_ms: u64,
    /// `renew_interval_ms + rpc_timeout_ms`: a refresher's period and one read.
    pub refresh_period_ms: u64,
    /// Question 1.
    pub staleness: staleness::Staleness,
    /// Question 2.
    pub refresh: refresh::Refresh,
    /// Question 3.
    pub managers: managers::Managers,
    /// Question 4: the switches, and every acknowledged append's latency, ms.
    pub switches: Vec<atomicity::Switch>,
    /// Every acknowledged append's latency, ms.
    pub append_latency_ms: Vec<f64>,
    /// Question 5: leader transfers.
    pub takeovers: Vec<upgrade::Takeover>,
    /// Question 5: the managers restarted, each with its turn.
    pub restarts: Vec<upgrade::Restart>,
    /// Question 5: the published handoffs.
    pub handoffs: Vec<crate::measure::handoff::Handoff>,
    /// The longest stretch with no append acknowledged anywhere, ms.
    pub unavailable_ms: u64,
    /// The longest time one range took no append while clients tried, ms.
    pub range_unavailable_ms: u64,
}

/// Run and measure one seed.
fn measure(scenario: usize, s: &Scenario, seed: u64, mutated: bool) -> Seed {
    let mutation = mutated.then_some(DUELING_MUTATION);
    let opts = RunOptions { seed, scenario: s.clone(), scenario_label: SCENARIOS[scenario].into(), mutation, also_mutation: None, trace: false, echo_header: false };
    crate::events::record_routing(true);
    let report = run_seed(&opts);
    crate::events::record_routing(false);
    let events = &report.events;
    let (_, caches) = staleness::timelines(events);
    let (switches, append_latency_ms) = atomicity::measure(events, &caches);
    let caught = report.verdicts.iter().find(|v| v.violation.is_some()).map(|v| (v.property, v.evidence.times_us.iter().min().map(|t| *t as f64 / 1000.0)));
    let k = &report.scenario_run.knobs;
    Seed {
        scenario,
        seed,
        mutated,
        outcome: report.outcome(),
        caught,
        age_bound_ms: k.map_staleness_ms + k.rpc_timeout_ms,
        refresh_period_ms: k.renew_interval_ms + k.rpc_timeout_ms,
        staleness: staleness::measure(events),
        refresh: refresh::measure(events),
        managers: managers::measure(events),
        switches,
        append_latency_ms,
        takeovers: upgrade::takeovers(events),
        restarts: upgrade::restarts(events, &report.handoffs, s.workload.duration_s * 1_000_000),
        handoffs: report.handoffs.clone(),
        unavailable_ms: report.availability.unavailable_ms,
        range_unavailable_ms: report.availability.range_unavailable_ms,
    }
}

/// Run seeds `0..seeds` of every scenario of [`SCENARIOS`] (loaded from `root`, the
/// repository), and of [`DUELING`] with [`DUELING_MUTATION`], on `jobs` threads; the results in
/// (scenario, seed) order, the mutated runs last. `progress(done, of)` after each run.
///
/// Errors: a scenario cannot be loaded.
pub fn run(root: &std::path::Path, seeds: u64, jobs: usize, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Vec<Seed>, String> {
    let scenarios: Vec<Scenario> = SCENARIOS.iter().map(|p| Scenario::load(&root.join(p))).collect::<Result<_, _>>()?;
    let dueling = SCENARIOS.iter().position(|p| *p == DUELING).expect("listed");
    let mut items: Vec<(usize, u64, bool)> = (0..SCENARIOS.len()).flat_map(|i| (0..seeds).map(move |s| (i, s, false))).collect();
    items.extend((0..seeds).map(|s| (dueling, s, true)));
    let done = std::sync::atomic::AtomicUsize::new(0);
    let of = items.len();
    Ok(crate::search::workers::in_order(&items, jobs, |_, (i, seed, mutated)| {
        let out = measure(*i, &scenarios[*i], *seed, *mutated);
        progress(done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1, of);
        out
    }))
}

/// The seeds of scenario `path` (unmutated).
pub fn of<'a>(seeds: &'a [Seed], path: &str) -> impl Iterator<Item = &'a Seed> + 'a {
    let i = SCENARIOS.iter().position(|p| *p == path).expect("a listed scenario");
    seeds.iter().filter(move |s| s.scenario == i && !s.mutated)
}

/// Seeds that did not pass, by scenario (unmutated runs).
pub fn failed(seeds: &[Seed]) -> BTreeMap<&'static str, Vec<u64>> {
    let mut out: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
    for s in seeds.iter().filter(|s| !s.mutated && s.outcome != RunOutcome::Pass) {
        out.entry(SCENARIOS[s.scenario]).or_default().push(s.seed);
    }
    out
}
