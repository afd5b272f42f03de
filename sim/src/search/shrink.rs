//! `partmap-sim shrink`: from a failing seed to a smallest schedule that still fails the same
//! way.
//!
//! The seed's run is written out as an explicit schedule ([`crate::search::schedule::from_run`]), which
//! replays it exactly; then the schedule and the scenario around it are made smaller, one
//! candidate at a time, keeping a candidate only if a full deterministic run of it (same seed,
//! same mutation) still violates the same property first:
//!
//! 1. **faults**: delta debugging over the schedule's entries (faults and operator requests),
//!    Zeller & Hildebrandt's *ddmin* ("Simplifying and Isolating Failure-Inducing Input",
//!    IEEE TSE 28(2), 2002): try halves, then quarters, ..., and each chunk's complement;
//! 2. **workload**: a shorter workload (down to just past the last fault's start), a lower rate,
//!    fewer clients;
//! 3. **each fault**: a shorter duration, then a later start with its end kept (so the fault
//!    covers only the window the failure needs);
//! 4. **topology**: fewer frontends, servers, managers and initial ranges, where no fault names
//!    a node that would go.
//!
//! Numbers shrink as in Hypothesis and proptest: try the smallest value first, then values a
//! quarter, a half and three quarters of the way back, and repeat from the best one that still
//! fails. Rounds repeat until one changes nothing (at most [`MAX_ROUNDS`]). Candidates run on `jobs` threads; the first
//! failing candidate *in order* is taken, so the result does not depend on which thread ends
//! first.

use crate::run::{run_seed, RunOptions, RunOutcome};
use crate::scenario::Scenario;
use crate::search::schedule::count;
use partmap::config::Mutation;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Rounds of every pass at most: a round that changes nothing ends the search sooner.
pub const MAX_ROUNDS: usize = 8;

/// What to shrink and how.
#[derive(Clone, Debug)]
pub struct ShrinkOptions {
    /// The failing seed.
    pub seed: u64,
    /// Its scenario.
    pub scenario: Scenario,
    /// Where the scenario came from (for the description and the file name).
    pub scenario_label: String,
    /// The mutation the seed fails under, if any.
    pub mutation: Option<Mutation>,
    /// Worker threads; each runs whole candidates.
    pub jobs: usize,
    /// At most this many runs in all (the seed's own and the replay included); once spent, the
    /// best schedule so far is the result.
    pub max_runs: usize,
    /// Only delta debugging over the faults (no workload, duration, start or topology passes).
    pub faults_only: bool,
    /// Print each step as it is taken.
    pub echo: bool,
}

/// What shrinking found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing scenario found (run it with the same seed and mutation).
    pub scenario: Scenario,
    /// The property it violates (the one the seed violated first).
    pub property: String,
    /// Its evidence in the smallest scenario.
    pub evidence: String,
    /// (faults, operator requests) the seed injected.
    pub before: (usize, usize),
    /// (faults, operator requests) in the smallest scenario.
    pub after: (usize, usize),
    /// Full runs made.
    pub runs: usize,
    /// Wall-clock seconds the shrink took.
    pub wall_s: f64,
    /// Every step taken, one line each.
    pub steps: Vec<String>,
}

/// Runs candidates and says whether each still fails the same way.
struct Oracle {
    seed: u64,
    mutation: Option<Mutation>,
    label: String,
    property: String,
    jobs: usize,
    max_runs: usize,
    runs: AtomicUsize,
}

/// The first violated property of a run and its evidence (`None`: it passed), or the panic.
fn first_violation(opts: &RunOptions) -> Result<Option<(String, String)>, String> {
    match catch_unwind(AssertUnwindSafe(|| run_seed(opts))) {
        Ok(report) if report.outcome() == RunOutcome::Pass => Ok(None),
        Ok(report) => Ok(report.verdicts.iter().find_map(|v| v.violation.clone().map(|e| (v.property.to_string(), e)))),
        Err(_) => Err("the harness panicked (its message is on stderr)".into()),
    }
}

impl Oracle {
    fn options(&self, scenario: &Scenario) -> RunOptions {
        RunOptions { seed: self.seed, scenario: scenario.clone(), scenario_label: self.label.clone(), mutation: self.mutation, also_mutation: None, trace: false, echo_header: false }
    }

    fn spent(&self) -> bool {
        self.runs.load(Ordering::SeqCst) >= self.max_runs
    }

    /// The evidence if `s` violates the target property first; `None` if it passes, fails
    /// otherwise, panics, or the run budget is spent.
    fn fails(&self, s: &Scenario) -> Option<String> {
        if self.runs.fetch_add(1, Ordering::SeqCst) >= self.max_runs {
            return None;
        }
        match first_violation(&self.options(s)) {
            Ok(Some((p, e))) if p == self.property => Some(e),
            _ => None,
        }
    }

    /// The first candidate (in order) that still fails, with its evidence. Candidates run on
    /// `jobs` threads taking them in order; none is started past a known failure, and every
    /// one before the first failure runs, so the answer is the sequential one.
    fn first_failing(&self, candidates: &[Scenario]) -> Option<(usize, String)> {
        let next = AtomicUsize::new(0);
        let found: Mutex<Option<(usize, String)>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.clamp(1, candidates.len().max(1)) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= candidates.len() || found.lock().expect("found").as_ref().is_some_and(|(j, _)| *j < i) || self.spent() {
                        return;
                    }
                    if let Some(e) = self.fails(&candidates[i]) {
                        let mut f = found.lock().expect("found");
                        if f.as_ref().is_none_or(|(j, _)| i < *j) {
                            *f = Some((i, e));
                        }
                    }
                });
            }
        });
        found.into_inner().expect("found")
    }
}

/// The state of a shrink: the best scenario so far and the log of steps.
struct Search<'a> {
    oracle: &'a Oracle,
    best: Scenario,
    evidence: String,
    steps: Vec<String>,
    started: Instant,
    echo: bool,
}

impl Search<'_> {
    fn step(&mut self, line: String) {
        let line = format!("[run {:>4}, {:>6.1}s] {line}", self.oracle.runs.load(Ordering::SeqCst), self.started.elapsed().as_secs_f64());
        if self.echo {
            println!("{line}");
        }
        self.steps.push(line);
    }

    /// Take the first valid candidate that still fails, if any, and log its description.
    /// Returns its index in `candidates`. Invalid candidates (a schedule naming a node the
    /// topology no longer has, a fault past the workload's end) and unchanged ones are not run.
    fn take_first(&mut self, candidates: Vec<(Scenario, String)>) -> Option<usize> {
        let valid: Vec<(usize, Scenario, String)> = candidates.into_iter().enumerate().filter(|(_, (s, _))| s.validate().is_ok() && *s != self.best).map(|(i, (s, d))| (i, s, d)).collect();
        let scenarios: Vec<Scenario> = valid.iter().map(|(_, s, _)| s.clone()).collect();
        let (k, evidence) = self.oracle.first_failing(&scenarios)?;
        let (i, s, what) = valid.into_iter().nth(k).expect("index of a candidate");
        self.best = s;
        self.evidence = evidence;
        self.step(what);
        Some(i)
    }

    fn try_candidates(&mut self, candidates: Vec<(Scenario, String)>) -> bool {
        self.take_first(candidates).is_some()
    }

    /// Delta debugging over the schedule (ddmin, Zeller & Hildebrandt 2002), preceded by a try
    /// of the empty schedule. Returns whether anything was removed.
    fn ddmin(&mut self) -> bool {
        let before = self.best.faults.schedule.len();
        if before == 0 {
            return false;
        }
        let with = |s: &Scenario, keep: Vec<crate::scenario::TimedFault>| {
            let mut c = s.clone();
            c.faults.schedule = keep;
            c
        };
        if self.try_candidates(vec![(with(&self.best, Vec::new()), format!("{}: the failure needs no fault", counted(&self.best.faults.schedule, &[])))]) {
            return true;
        }
        let mut n = 2usize;
        while self.best.faults.schedule.len() >= 2 && !self.oracle.spent() {
            let cur = self.best.faults.schedule.clone();
            let len = cur.len();
            let n_now = n.min(len);
            let chunks: Vec<Vec<usize>> = (0..n_now).map(|i| (len * i / n_now..len * (i + 1) / n_now).collect()).collect();
            let mut candidates = Vec::new();
            for (i, chunk) in chunks.iter().enumerate() {
                let keep: Vec<_> = chunk.iter().map(|&j| cur[j].clone()).collect();
                let step = counted(&cur, &keep);
                candidates.push((with(&self.best, keep), format!("{step}: kept chunk {} of {n_now} ({})", i + 1, describe_entries(&cur, chunk))));
            }
            if n_now > 2 {
                for (i, chunk) in chunks.iter().enumerate() {
                    let keep: Vec<_> = (0..len).filter(|j| !chunk.contains(j)).map(|j| cur[j].clone()).collect();
                    let step = counted(&cur, &keep);
                    candidates.push((with(&self.best, keep), format!("{step}: removed chunk {} of {n_now} ({})", i + 1, describe_entries(&cur, chunk))));
                }
            }
            if let Some(i) = self.take_first(candidates) {
                // A chunk: start again at two chunks; a complement: one chunk fewer.
                n = if i < chunks.len() { 2 } else { (n_now - 1).max(2) };
                continue;
            }
            if n_now >= len {
                break;
            }
            n = (n_now * 2).min(len);
        }
        self.best.faults.schedule.len() < before
    }

    /// Shrink one number of the scenario toward `target` (its smallest, or for a start time its
    /// latest, value): try `target`, then a quarter, a half and three quarters of the way back;
    /// repeat from the best failing one until steps get below `grain`. Returns whether it moved.
    fn number(&mut self, name: &str, unit: &str, grain: u64, target: u64, get: impl Fn(&Scenario) -> u64, set: impl Fn(&mut Scenario, u64)) -> bool {
        let mut moved = false;
        while !self.oracle.spent() {
            let cur = get(&self.best);
            let gap = cur.abs_diff(target);
            if gap == 0 || (moved && gap < grain) {
                break;
            }
            let toward = |q: u64| if target < cur { target + gap * q / 4 } else { target - gap * q / 4 };
            let mut values: Vec<u64> = vec![toward(0)];
            if gap >= grain {
                values.extend([toward(1), toward(2), toward(3)]);
            }
            values.dedup();
            let candidates = values
                .into_iter()
                .filter(|v| *v != cur)
                .map(|v| {
                    let mut c = self.best.clone();
                    set(&mut c, v);
                    (c, format!("{name} {cur} -> {v}{unit}"))
                })
                .collect();
            if !self.try_candidates(candidates) {
                break;
            }
            moved = true;
        }
        moved
    }

    /// The workload: shorter (down to just past the last fault's start), lighter, fewer
    /// clients.
    fn workload(&mut self) -> bool {
        let last_start_ms = self.best.faults.schedule.iter().map(|f| f.at_ms).chain(self.best.workload.script.iter().map(|a| a.at_ms)).max().unwrap_or(0);
        let shortest_s = last_start_ms / 1000 + 1;
        let mut moved = self.number("workload.duration_s", " s", 1, shortest_s, |s| s.workload.duration_s, |s, v| s.workload.duration_s = v);
        if self.best.workload.ops_per_s >= 1.0 {
            let lowest = u64::from(self.best.workload.script.is_empty());
            moved |= self.number("workload.ops_per_s", " ops/s", 1, lowest, |s| s.workload.ops_per_s.floor() as u64, |s, v| s.workload.ops_per_s = v as f64);
        }
        moved |= self.number("topology.clients", "", 1, 1, |s| u64::from(s.topology.clients), |s, v| s.topology.clients = v as u32);
        moved
    }

    /// Each fault: a shorter duration, then a later start with its end kept.
    fn each_fault(&mut self) -> bool {
        let mut moved = false;
        for i in 0..self.best.faults.schedule.len() {
            // The fault without its timing: the steps below change the timing, and each step's
            // line gives the value before and after it.
            let what = crate::fault::Fault::from_spec(&self.best.faults.schedule[i].fault).to_string();
            if self.best.faults.schedule[i].fault.instant_request().is_none() {
                moved |= self.number(&format!("fault {} ({what}) duration", i + 1), " ms", 100, 1, |s| s.faults.schedule[i].lasts_ms(), |s, v| s.faults.schedule[i].duration_ms = Some(v));
            }
            let f = &self.best.faults.schedule[i];
            let end_ms = self.best.workload.duration_s * 1000;
            let latest = if f.fault.instant_request().is_some() { end_ms - 1 } else { (f.at_ms + f.lasts_ms() - 1).min(end_ms - 1) };
            moved |= self.number(
                &format!("fault {} ({what}) start", i + 1),
                " ms",
                100,
                latest.max(f.at_ms),
                |s| s.faults.schedule[i].at_ms,
                |s, v| {
                    let f = &mut s.faults.schedule[i];
                    if f.fault.instant_request().is_none() {
                        f.duration_ms = Some((f.at_ms + f.lasts_ms()).saturating_sub(v).max(1));
                    }
                    f.at_ms = v;
                },
            );
        }
        moved
    }

    /// Fewer frontends, servers, managers and initial ranges (a candidate whose schedule or
    /// script names a node that would go is invalid and not run).
    fn topology(&mut self) -> bool {
        let mut moved = self.number("topology.frontends", "", 1, 1, |s| u64::from(s.topology.frontends), |s, v| s.topology.frontends = v as u32);
        moved |= self.number("topology.servers", "", 1, 1, |s| u64::from(s.topology.servers), |s, v| s.topology.servers = v as u32);
        moved |= self.number("topology.managers", "", 1, 1, |s| u64::from(s.topology.managers), |s, v| s.topology.managers = v as u32);
        moved |= self.number("topology.initial_ranges", "", 1, 1, |s| u64::from(s.topology.initial_ranges), |s, v| s.topology.initial_ranges = v as u32);
        moved
    }
}

/// `crash server-2 at 20500 ms for 5000 ms`.
pub fn describe(f: &crate::scenario::TimedFault) -> String {
    let fault = crate::fault::Fault::from_spec(&f.fault);
    match f.duration_ms {
        None => format!("{fault} at {} ms", f.at_ms),
        Some(ms) => format!("{fault} at {} ms for {ms} ms", f.at_ms),
    }
}

/// A delta-debugging step's counts, the schedule's faults and its operator requests apart:
/// `faults 14 -> 7`, or when either schedule holds requests `faults 8 -> 4, operator requests
/// 13 -> 6`.
pub fn counted(before: &[crate::scenario::TimedFault], after: &[crate::scenario::TimedFault]) -> String {
    let split = |list: &[crate::scenario::TimedFault]| {
        let requests = list.iter().filter(|f| f.fault.is_operator_request()).count();
        (list.len() - requests, requests)
    };
    let ((f0, r0), (f1, r1)) = (split(before), split(after));
    if r0 == 0 && r1 == 0 {
        format!("faults {f0} -> {f1}")
    } else {
        format!("faults {f0} -> {f1}, operator requests {r0} -> {r1}")
    }
}

fn describe_entries(all: &[crate::scenario::TimedFault], idx: &[usize]) -> String {
    const SHOWN: usize = 3;
    let mut parts: Vec<String> = idx.iter().take(SHOWN).map(|&j| describe(&all[j])).collect();
    if idx.len() > SHOWN {
        parts.push(format!("and {} more", idx.len() - SHOWN));
    }
    parts.join("; ")
}

/// Why a seed could not be shrunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShrinkError {
    /// The seed passes every property: nothing to shrink.
    Passes(String),
    /// The harness panicked on the seed.
    HarnessPanic(String),
    /// The seed's schedule does not fail as the seed did (a harness bug: something the nemesis
    /// draws came from the run's generator).
    NotReproduced(String),
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::Passes(m) | ShrinkError::HarnessPanic(m) | ShrinkError::NotReproduced(m) => f.write_str(m),
        }
    }
}

/// Shrink `opts.seed`'s failure (see the module doc). Prints each step with `opts.echo`.
///
/// Errors: [`ShrinkError`]: the seed passes (nothing to shrink), the harness panics on it, or
/// its schedule does not reproduce the failure.
pub fn shrink(opts: &ShrinkOptions) -> Result<Shrunk, ShrinkError> {
    let started = Instant::now();
    let mutation = opts.mutation.map_or(String::new(), |m| format!(" with --mutation {}", m.name()));
    let run_opts = RunOptions { seed: opts.seed, scenario: opts.scenario.clone(), scenario_label: opts.scenario_label.clone(), mutation: opts.mutation, also_mutation: None, trace: false, echo_header: false };
    let report = catch_unwind(AssertUnwindSafe(|| run_seed(&run_opts))).map_err(|_| ShrinkError::HarnessPanic(format!("seed {} of {}{mutation}: the harness panicked (its message is above); nothing to shrink", opts.seed, opts.scenario_label)))?;
    let Some((property, evidence)) = report.verdicts.iter().find_map(|v| v.violation.clone().map(|e| (v.property.to_string(), e))) else {
        return Err(ShrinkError::Passes(format!("seed {} of {}{mutation} passes every property: nothing to shrink", opts.seed, opts.scenario_label)));
    };
    let emitted = crate::search::schedule::from_run(&report, &run_opts);
    let before = crate::search::schedule::counts(&emitted);
    let oracle = Oracle { seed: opts.seed, mutation: opts.mutation, label: opts.scenario_label.clone(), property: property.clone(), jobs: opts.jobs, max_runs: opts.max_runs, runs: AtomicUsize::new(1) };
    let mut search = Search { oracle: &oracle, best: emitted.clone(), evidence: evidence.clone(), steps: Vec::new(), started, echo: opts.echo };
    search.step(format!("seed {} of {}{mutation} violates {property}: {evidence}", opts.seed, opts.scenario_label));
    let Some(replayed) = oracle.fails(&emitted) else {
        return Err(ShrinkError::NotReproduced(format!("the schedule of seed {} does not violate {property} as the seed did; the nemesis must draw from its own stream (nemesis::plan_rng)", opts.seed)));
    };
    search.evidence = replayed;
    let t = &emitted.topology;
    search.step(format!(
        "schedule: {} and {}, workload {} s at {} ops/s, {}, {}, {}, {}, {}; the replay fails the same way",
        count(before.0, "fault"),
        count(before.1, "operator request"),
        emitted.workload.duration_s,
        emitted.workload.ops_per_s,
        count(t.clients as usize, "client"),
        count(t.frontends as usize, "frontend"),
        count(t.servers as usize, "server"),
        count(t.managers as usize, "manager"),
        count(t.initial_ranges as usize, "initial range"),
    ));
    for round in 1..=MAX_ROUNDS {
        let mut moved = search.ddmin();
        if !opts.faults_only {
            moved |= search.workload();
            moved |= search.each_fault();
            moved |= search.topology();
        }
        if !moved || oracle.spent() {
            break;
        }
        if round < MAX_ROUNDS {
            search.step(format!("round {round} changed the scenario; another round"));
        }
    }
    if oracle.spent() {
        search.step(format!("run budget of {} spent; keeping the smallest schedule found", opts.max_runs));
    }
    let after = crate::search::schedule::counts(&search.best);
    Ok(Shrunk {
        scenario: search.best,
        property,
        evidence: search.evidence,
        before,
        after,
        runs: oracle.runs.load(Ordering::SeqCst).min(opts.max_runs),
        wall_s: started.elapsed().as_secs_f64(),
        steps: search.steps,
    })
}

/// `<report_dir>/shrunk/<scenario stem>[-<mutation>]-seed-<N>.json`.
pub fn output_path(report_dir: &std::path::Path, label: &str, mutation: Option<Mutation>, seed: u64) -> PathBuf {
    let stem = crate::run::scenario_stem(label);
    let stem = match mutation {
        Some(m) => format!("{stem}-{}", m.name()),
        None => stem,
    };
    report_dir.join("shrunk").join(format!("{stem}-seed-{seed}.json"))
}

/// `shrunk` with a description saying what it came from and how to run it, ready to write to
/// `path`.
pub fn describe_result(shrunk: &Shrunk, opts: &ShrinkOptions, path: &std::path::Path) -> Scenario {
    let mut s = shrunk.scenario.clone();
    let flag = opts.mutation.map_or(String::new(), |m| format!(" --mutation {}", m.name()));
    let scenario_flag = format!(" --scenario {}", opts.scenario_label.split_whitespace().next().unwrap_or(&opts.scenario_label));
    let w = &s.workload;
    let t = &s.topology;
    let entries: Vec<String> = s.faults.schedule.iter().map(describe).collect();
    s.description = format!(
        "Shrunk from seed {seed} of {label}{flag_text} by `partmap-sim shrink --seed {seed}{scenario_flag}{flag}` ({runs} runs): of the {bf} and {br} that seed injected, {af} and {ar} are left ({list}), in a {dur} s workload at {ops} ops/s with {clients}, {frontends}, {servers}, {managers} and {ranges}. Run with seed {seed}{flag_text}, it violates {property}: {evidence}. Reproduce: `partmap-sim run --seed {seed} --scenario {path}{flag}`. The source scenario: {source}",
        seed = opts.seed,
        label = opts.scenario_label,
        flag_text = opts.mutation.map_or(String::new(), |m| format!(" with --mutation {}", m.name())),
        runs = shrunk.runs,
        bf = count(shrunk.before.0, "fault"),
        br = count(shrunk.before.1, "operator request"),
        af = count(shrunk.after.0, "fault"),
        ar = count(shrunk.after.1, "request"),
        list = if entries.is_empty() { "none".to_string() } else { entries.join("; ") },
        dur = w.duration_s,
        ops = w.ops_per_s,
        clients = count(t.clients as usize, "client"),
        frontends = count(t.frontends as usize, "frontend"),
        servers = count(t.servers as usize, "server"),
        managers = count(t.managers as usize, "manager"),
        ranges = count(t.initial_ranges as usize, "initial range"),
        property = shrunk.property,
        evidence = shrunk.evidence,
        path = path.display(),
        source = opts.scenario.description,
    );
    s
}
