//! `partmap-sim explore`: a feedback-guided search of a scenario (the default one when none is
//! given) that keeps a corpus of runs that reached something new and breeds new runs from it.
//!
//! The idea is coverage-guided fuzzing (AFL's corpus and energy) applied to fault schedules, as
//! Antithesis and TigerBeetle's VOPR steer toward rare states: a run is a pure function of its
//! schedule and seed, so a run can be re-executed up to an interesting moment and given a new
//! future (checkpoint-and-branch by re-execution), or have its schedule changed a little.
//!
//! - **Features of a run**: every goal it reached ([`crate::measure::goals`]: the control plane's
//!   declared goals, the derived ones, the coverage situations), a goal's count in log2
//!   buckets, every fault × flow cell, every pair of rare goals reached in one run, and each
//!   near miss ([`crate::measure::goals::near_misses`]: how close a race the protocol must win came to
//!   flipping) in log2 ms buckets, so that a run that comes closer than any before is kept. A run
//!   that adds a feature no corpus entry has joins the corpus.
//! - **New runs** come, in a fixed mix, from: a swarm run (a fresh seed of the scenario, 35
//!   runs in 100, with a fault mix of its own: kinds left out, the aimed and message faults'
//!   rates raised, and half of them with the clocks at the worst case of the drift bound,
//!   `knobs.clock_drift_worst_case`, origin `corner`; [`Explorer::emphasize`]);
//!   a *close* of an entry's near miss (25 runs in 100; the
//!   rarer a call that close on the race, the likelier), by holding the race's lever message
//!   past the gap, by moving or stretching the fault that missed the step, by pinning a lease
//!   race's two clocks at the bound, or by placing a fault at a handoff
//!   step the entry's run took (a corrupt over a pre-copy round's reads, a crash or pause of a
//!   source just after it paused or drained), at the node that took it;
//!   a *branch* of an entry (15 in 100: its schedule kept up to a moment shortly before one of its rare
//!   goals was first reached, or one time in three shortly after it so that its cause is
//!   kept, a new future drawn after it by the scenario's own nemesis with an emphasis of its
//!   own, and an aimed fault near
//!   that moment); a *schedule mutation* (shift a fault, lengthen or shorten
//!   it around the protocol's margins, retarget a node to a role, add an aimed fault on a
//!   protocol event near a goal, drop a fault, nudge a start or a length by a few ms, or close
//!   a near miss: lengthen or shorten the fault that ends nearest one of the race's two steps by
//!   the gap, move a fault whose window missed the step it acts on over that step, or hold the
//!   message whose arrival was the race's first step past the gap, so the order may flip); or a
//!   *reseed* (the same schedule, another
//!   seed). Entries are picked with a weight that favours rare features.
//! - **Deterministic**: candidates are made in batches of [`BATCH`] from the explorer's own
//!   generator (`--seed`) and the corpus as it stood before the batch, run on `--jobs` threads,
//!   and folded in candidate order; the same `--seed` and `--runs` give the same corpus and the
//!   same findings whatever `--jobs` is. A `--time-budget` ends the search between batches.
//! - **Blind to the mutation**: the mutation under test is passed to the runs and to the repro
//!   line only; nothing here reads it.
//!
//! A failing run is written as an explicit scenario file under the report directory, checked to
//! fail again on a plain run of that file, drawn as a timeline, and optionally shrunk.

use crate::run::nemesis::{self, Planned};
use crate::run::{run_seed, RunOptions, RunOutcome, RunReport};
use crate::scenario::{Scenario, TimedFault};
use crate::run::world::Role;
use madsim::rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Candidates made and run together; fixed, so results do not depend on `--jobs`.
pub const BATCH: usize = 8;

/// The format of corpus entry files; a corpus of another format is refused.
pub const CORPUS_FORMAT: u32 = 1;

/// How to explore.
#[derive(Clone, Debug)]
pub struct ExploreConfig {
    /// The explorer's own seed (its generator, not a run's).
    pub seed: u64,
    /// At most this many runs.
    pub runs: u64,
    /// Stop between batches once this much wall time has passed.
    pub time_budget: Option<std::time::Duration>,
    /// Worker threads.
    pub jobs: usize,
    /// Collect every violation instead of stopping at the first.
    pub keep_going: bool,
    /// Shrink each finding's schedule.
    pub shrink: bool,
    /// Corpus directories: every one is read; new entries go to the first (which is created).
    pub corpus: Vec<PathBuf>,
    /// Where findings, timelines and shrunk schedules go (`<dir>/explore/...`); `None` writes
    /// nothing (the `hunt` benchmark).
    pub report_dir: Option<PathBuf>,
    /// Print a progress line every this many runs (0: never).
    pub progress_every: u64,
}

/// One corpus entry: an explicit schedule and the seed it ran with, and what it reached.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// [`CORPUS_FORMAT`].
    pub format: u32,
    /// The hash of the explored scenario ([`crate::sweep::summary::Build::scenario_hash`]).
    pub scenario_hash: String,
    /// The run's seed.
    pub seed: u64,
    /// How the entry was made (`swarm`, `branch`, `mutate`, `close`, `reseed`).
    pub origin: String,
    /// Its features, sorted.
    pub features: Vec<String>,
    /// First time each goal was reached, µs of simulated time.
    pub goal_first_us: BTreeMap<String, u64>,
    /// The run's closest call per race ([`crate::measure::goals::near_misses`]); empty in an
    /// entry written before it was kept.
    #[serde(default)]
    pub near: BTreeMap<String, crate::measure::goals::NearMiss>,
    /// Handoff steps the run took ([`steps_of`]): `(event, node, ms)`, for faults placed at a
    /// step the run showed happens; empty in an entry written before it was kept.
    #[serde(default)]
    pub steps: Vec<(String, String, u64)>,
    /// The explicit scenario that replays the run with `seed`.
    pub scenario: Scenario,
}

/// A violation found.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Which run of the search (from 1).
    pub run: u64,
    /// The run's seed.
    pub seed: u64,
    /// The violated property (`harness_crash` for a panic).
    pub property: String,
    /// Its evidence.
    pub evidence: String,
    /// The scenario file written, if any.
    pub path: Option<PathBuf>,
    /// The run's schedule (explicit).
    pub scenario: Scenario,
    /// CPU seconds the search had spent when this run ended (runs in candidate order).
    pub cpu_s: f64,
}

/// What a search did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Runs made.
    pub runs: u64,
    /// Corpus entries at the end (loaded ones included).
    pub corpus: usize,
    /// Distinct features seen.
    pub features: usize,
    /// Goals reached by some run (or loaded entry).
    pub goals: BTreeSet<String>,
    /// Violations, in the order found.
    pub findings: Vec<Finding>,
    /// CPU seconds of all runs (thread CPU, summed).
    pub cpu_s: f64,
    /// Runs by origin.
    pub by_origin: BTreeMap<&'static str, u64>,
}

/// The features of one run (see the module doc). `rare` lists goals a pair feature may use.
pub fn features(report: &RunReport, rare: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (g, r) in &report.goals {
        out.insert(format!("goal:{g}"));
        if r.count >= 2 {
            out.insert(format!("goal:{g}:x{}", 1u64 << (63 - r.count.leading_zeros()).min(5)));
        }
    }
    for (race, miss) in &report.near_misses {
        // Every power of two the gap is below, so that a closer miss is a new feature.
        let ms = (miss.gap_us / 1000).max(1);
        let bucket = 64 - ms.leading_zeros();
        for b in bucket..=12 {
            out.insert(format!("near:{race}:<2^{b}ms"));
        }
    }
    for (kind, flow) in &report.fault_flows {
        out.insert(format!("cell:{kind}x{flow}"));
    }
    let reached_rare: Vec<&&str> = report.goals.keys().filter(|g| rare.contains(**g)).collect();
    for (i, a) in reached_rare.iter().enumerate() {
        for b in &reached_rare[i + 1..] {
            out.insert(format!("pair:{a}+{b}"));
        }
    }
    out
}

/// A candidate run.
struct Candidate {
    seed: u64,
    scenario: Scenario,
    origin: &'static str,
}

impl Candidate {
    /// The options that run this candidate under `base`'s label and mutation.
    fn opts(&self, base: &RunOptions) -> RunOptions {
        RunOptions { seed: self.seed, scenario: self.scenario.clone(), scenario_label: base.scenario_label.clone(), mutation: base.mutation, also_mutation: base.also_mutation, trace: false, echo_header: false }
    }

    /// The explicit schedule that replays `report`, this candidate's run: a swarm candidate's
    /// drawn faults written out, any other candidate's own schedule.
    fn schedule(&self, base: &RunOptions, report: &RunReport) -> Scenario {
        if self.origin == "swarm" || self.origin == "corner" { crate::search::schedule::from_run(report, &self.opts(base)) } else { self.scenario.clone() }
    }
}

/// The faultable nodes of an explicit scenario by role, as the world names them.
pub(crate) fn names_by_role(s: &Scenario) -> BTreeMap<Role, Vec<String>> {
    let t = &s.topology;
    let mut m = BTreeMap::new();
    m.insert(Role::Server, (1..=t.servers).map(|n| format!("server-{n}")).collect());
    m.insert(Role::Manager, (1..=t.managers).map(|n| format!("manager-{n}")).collect());
    m.insert(Role::Store, vec!["store-1".to_string()]);
    m.insert(Role::Lock, vec!["lock-1".to_string()]);
    m
}

/// A planned fault as the schedule entry that replays it.
pub(crate) fn timed(p: &Planned) -> TimedFault {
    TimedFault { at_ms: p.at_ms, on: p.on.clone(), until: p.until.clone(), duration_ms: (p.duration_ms != 0).then_some(p.duration_ms), fault: p.fault.spec() }
}

/// The explorer: its generator, the corpus and the feature counts.
struct Explorer<'a> {
    base: &'a RunOptions,
    rng: Xoshiro256PlusPlus,
    corpus: Vec<Entry>,
    /// How many corpus entries have each feature.
    seen: BTreeMap<String, u64>,
    /// How many runs reached each goal.
    goal_runs: BTreeMap<String, u64>,
    runs: u64,
    scenario_hash: String,
}

impl<'a> Explorer<'a> {
    /// A search of `base` that starts from the corpora of `cfg.corpus` (their entries saved
    /// into the first, their features and goals counted as seen). `Err`: an unreadable corpus,
    /// or one of another build or scenario.
    fn resume(base: &'a RunOptions, cfg: &ExploreConfig, echo: &mut dyn FnMut(&str)) -> Result<Explorer<'a>, String> {
        let scenario_hash = crate::sweep::summary::Build::of(base).scenario_hash;
        let mut loaded = Vec::new();
        for dir in &cfg.corpus {
            loaded.extend(load_corpus(dir, &scenario_hash)?);
        }
        let mut x = Explorer { base, rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x6578_706c_6f72_6521), corpus: Vec::new(), seen: BTreeMap::new(), goal_runs: BTreeMap::new(), runs: 0, scenario_hash };
        for e in loaded {
            for f in &e.features {
                *x.seen.entry(f.clone()).or_default() += 1;
            }
            for g in e.goal_first_us.keys() {
                *x.goal_runs.entry(g.clone()).or_default() += 1;
            }
            if let Some(dir) = cfg.corpus.first() {
                save_entry(dir, &e)?;
            }
            x.corpus.push(e);
        }
        if !x.corpus.is_empty() {
            echo(&format!("explore: corpus of {} entries loaded", x.corpus.len()));
        }
        Ok(x)
    }
}

impl<'a> Explorer<'a> {
    fn rare_goals(&self) -> BTreeSet<String> {
        // Goals reached by fewer than one run in ten (and every goal early on).
        let limit = (self.runs / 10).max(1);
        self.goal_runs.iter().filter(|(_, n)| **n <= limit).map(|(g, _)| g.clone()).collect()
    }

    fn weight(&self, e: &Entry) -> f64 {
        1.0 + e.features.iter().map(|f| 1.0 / self.seen.get(f).copied().unwrap_or(1) as f64).sum::<f64>() * 4.0
    }

    fn pick(&mut self) -> usize {
        let weights: Vec<f64> = self.corpus.iter().map(|e| self.weight(e)).collect();
        weighted(&mut self.rng, &weights).expect("a corpus entry weighs at least 1")
    }

    /// How rare a near miss on `race` this close is: one over the number of corpus entries
    /// that came at least as close on it (its gap's log2 ms bucket, [`features`]). A race few
    /// runs come near weighs much, and so does an unusually close call on a common one.
    fn race_rarity(&self, race: &str, miss: &crate::measure::goals::NearMiss) -> f64 {
        let bucket = (64 - (miss.gap_us / 1000).max(1).leading_zeros()).min(12);
        1.0 / self.seen.get(&format!("near:{race}:<2^{bucket}ms")).copied().unwrap_or(1).max(1) as f64
    }

    /// A moment of `e` worth branching from: shortly before the first reach of one of its
    /// goals, the rarer the likelier, ms.
    fn moment_ms(&mut self, e: &Entry) -> u64 {
        let goals: Vec<(&String, &u64)> = e.goal_first_us.iter().filter(|(_, t)| **t > 0).collect();
        if goals.is_empty() {
            return self.rng.gen_range(0..self.end_ms(&e.scenario).max(1));
        }
        let weights: Vec<f64> = goals.iter().map(|(g, _)| 1.0 / self.goal_runs.get(*g).copied().unwrap_or(1) as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut x = self.rng.gen_range(0.0..total);
        let mut at = goals[0].1;
        for ((_, t), w) in goals.iter().zip(&weights) {
            if x < *w {
                at = t;
                break;
            }
            x -= w;
        }
        // Two times in three shortly before the goal (a new cause), otherwise shortly after it:
        // what caused it is kept (a message held across it, a node still down) and only what
        // follows is drawn anew.
        if self.rng.gen_range(0..3) == 0 {
            return (at / 1000 + self.rng.gen_range(1..500)).min(self.end_ms(&e.scenario).saturating_sub(1));
        }
        let before = self.rng.gen_range(0..2000);
        (at / 1000).saturating_sub(before)
    }

    /// The index of one of `races` (near-miss race names), drawn with a weight of one over the
    /// number of corpus entries that came within 4 s on it: the rarer race first.
    fn pick_race<'r>(&mut self, races: impl Iterator<Item = (&'r String, &'r crate::measure::goals::NearMiss)>) -> usize {
        let weights: Vec<f64> = races.map(|(r, m)| self.race_rarity(r, m)).collect();
        weighted(&mut self.rng, &weights).expect("called with at least one race")
    }

    /// Hold the message of one of `e`'s near misses that has a lever
    /// ([`crate::measure::goals::Lever`]) past the gap: a `delay_next` of that message kind on
    /// that link, started 5 to 100 ms before the message arrived and holding it for the gap
    /// and up to half as long again, plus up to two leases, two store timeouts and a request
    /// timeout. `false` when `e` has no such near miss.
    fn hold_lever(&mut self, e: &Entry, s: &mut Scenario) -> bool {
        let levered: Vec<(&String, &crate::measure::goals::NearMiss)> = e.near.iter().filter(|(_, m)| m.lever.is_some()).collect();
        if levered.is_empty() {
            return false;
        }
        let miss = levered[self.pick_race(levered.iter().copied())].1.clone();
        let lever = miss.lever.expect("filtered");
        let at_ms = (miss.first_us / 1000).saturating_sub(self.rng.gen_range(5..=100));
        // Past the gap, and up to what the flow the message belongs to may still do after it
        // gave up on the message (its retry, an abort, a failover: two leases and a drain):
        // the step that came second is often caused by the message's loss, so it moves later
        // as the message does.
        let knobs = s.node_knobs();
        let after_ms = 2 * knobs.lease_ms + 2 * knobs.store_timeout_ms + knobs.rpc_timeout_ms;
        let hold_ms = miss.gap_us / 1000 * self.rng.gen_range(100..=150) / 100 + self.rng.gen_range(1..=after_ms.max(2));
        let fault = crate::scenario::FaultSpec::DelayNext { from: lever.from, to: lever.to, message: lever.kind };
        s.faults.schedule.push(TimedFault { at_ms, on: None, until: None, duration_ms: Some(hold_ms), fault });
        true
    }

    /// Move the fault of race `race` (see [`crate::measure::goals::near_misses`]) over what led
    /// up to `cover.step_ms` (a step ends what the fault acts on: a round's reads were sent
    /// before it), so that its window ends at the step or up to half its length after it. The
    /// fault is the untriggered one that started at `cover.fault_at_ms` (within 5 ms), else one
    /// of its kind waiting on a trigger (whose start the schedule cannot tell), which becomes a
    /// fault at a time. It then names the node it acted on (`cover.node`), not a role. `false`
    /// when the schedule has neither.
    fn cover_step(&mut self, s: &mut Scenario, race: &str, cover: &crate::measure::goals::Cover) -> bool {
        let (fault_at_ms, step_ms) = (cover.fault_at_ms, cover.step_ms);
        use crate::scenario::FaultSpec;
        let kind_fits = |f: &FaultSpec| match race {
            "corrupt_missed_copy" => matches!(f, FaultSpec::Corrupt { .. }),
            _ => false,
        };
        let timed = s.faults.schedule.iter().position(|f| f.on.is_none() && f.duration_ms.is_some() && f.at_ms.abs_diff(fault_at_ms) <= 5 && kind_fits(&f.fault));
        let triggered: Vec<usize> = (0..s.faults.schedule.len()).filter(|i| s.faults.schedule[*i].on.is_some() && s.faults.schedule[*i].duration_ms.is_some() && kind_fits(&s.faults.schedule[*i].fault)).collect();
        let Some(i) = timed.or_else(|| (!triggered.is_empty()).then(|| triggered[self.rng.gen_range(0..triggered.len())])) else { return false };
        let f = &mut s.faults.schedule[i];
        let d = f.duration_ms.expect("filtered");
        f.on = None;
        f.at_ms = step_ms.saturating_sub(d - self.rng.gen_range(0..=d / 2));
        if let FaultSpec::Corrupt { to, .. } = &mut f.fault {
            *to = cover.node.clone();
        }
        true
    }

    /// Close one of `e`'s near misses, the rarer race first. A fault that missed its step is
    /// moved over it ([`Explorer::cover_step`]). Otherwise the fault (an untriggered one with a
    /// length) whose window ends nearest to one of the race's two steps, within 10 s, is
    /// lengthened past the gap when it ends near the first step (so that step may come second)
    /// and shortened by it when it ends near the second. `false` when `e` has no near miss or
    /// no such fault.
    fn close_gap(&mut self, e: &Entry, s: &mut Scenario) -> bool {
        if e.near.is_empty() {
            return false;
        }
        let misses: Vec<(&String, &crate::measure::goals::NearMiss)> = e.near.iter().collect();
        let (race, miss) = misses[self.pick_race(misses.iter().copied())];
        let miss = miss.clone();
        if let Some(cover) = &miss.cover {
            let ok = self.cover_step(s, race, cover);
            s.faults.schedule.sort_by_key(|f| f.at_ms);
            return ok;
        }
        let (first_ms, second_ms) = (miss.first_us / 1000, miss.second_us / 1000);
        let mut best: Option<(u64, usize, bool)> = None; // (distance ms, index, ends near the first step)
        for (i, f) in s.faults.schedule.iter().enumerate() {
            let (None, Some(d)) = (&f.on, f.duration_ms) else { continue };
            let end = f.at_ms + d;
            for (step, near_first) in [(first_ms, true), (second_ms, false)] {
                let dist = end.abs_diff(step);
                if dist <= 10_000 && best.is_none_or(|(b, ..)| dist < b) {
                    best = Some((dist, i, near_first));
                }
            }
        }
        let Some((dist, i, near_first)) = best else { return false };
        let by = dist + miss.gap_us / 1000 * self.rng.gen_range(100..=150) / 100 + 1;
        let d = s.faults.schedule[i].duration_ms.expect("chosen with a length");
        s.faults.schedule[i].duration_ms = Some(if near_first { d + by } else { d.saturating_sub(by).max(1) });
        true
    }

    /// [`emphasize`] with the explorer's generator.
    fn emphasize(&mut self, s: &mut Scenario) -> bool {
        emphasize(&mut self.rng, s)
    }

    fn end_ms(&self, s: &Scenario) -> u64 {
        s.workload.duration_s * 1000
    }

    fn candidate(&mut self) -> Candidate {
        let roll = self.rng.gen_range(0..100);
        if self.corpus.is_empty() || roll < 35 {
            let seed = self.rng.gen::<u64>() >> 1;
            let mut scenario = self.base.scenario.clone();
            let corner = self.emphasize(&mut scenario);
            return Candidate { seed, scenario, origin: if corner { "corner" } else { "swarm" } };
        }
        let close = if (65..90).contains(&roll) { self.close_candidate() } else { None };
        let i = self.pick();
        let entry = self.corpus[i].clone();
        let (entry, scenario, origin) = match (roll, close) {
            (_, Some((entry, scenario))) => (entry, scenario, "close"),
            (35..=49, _) => (entry.clone(), self.branch(&entry), "branch"),
            (50..=89, _) => (entry.clone(), self.mutate(&entry), "mutate"),
            _ => (entry.clone(), entry.scenario.clone(), "reseed"),
        };
        let seed = if origin == "reseed" { self.rng.gen::<u64>() >> 1 } else { entry.seed };
        match scenario.validate() {
            Ok(()) => Candidate { seed, scenario, origin },
            // A change that made the schedule invalid (a fault past the end): the same schedule
            // with another seed instead.
            Err(_) => Candidate { seed: self.rng.gen::<u64>() >> 1, scenario: entry.scenario, origin: "reseed" },
        }
    }

    /// A *close* candidate, one time in four each: an entry with a near miss (the rarer its
    /// rarest call, the likelier) with that gap closed by a lever's hold or a fault moved or
    /// stretched ([`Explorer::hold_lever`], [`Explorer::close_gap`], either first), or by a
    /// lease race's clocks pinned ([`Explorer::pin_clocks`]); or an entry with handoff steps
    /// (the rarer the consequence its steps lead to, [`Explorer::step_rarity`], the likelier)
    /// with a fault placed at one of them ([`Explorer::fault_at_step`]). `None` when no entry
    /// has what the drawn close needs, or the change found nothing to act on.
    fn close_candidate(&mut self) -> Option<(Entry, Scenario)> {
        let op = self.rng.gen_range(0..4);
        // A fault at a step goes to the entry whose steps lead to the rarest consequence; the
        // other closes to the entry with the rarest near miss.
        let weights: Vec<f64> = if op == 3 {
            self.corpus.iter().map(|e| e.steps.iter().map(|(event, ..)| self.step_rarity(event)).fold(0.0, f64::max)).collect()
        } else {
            self.corpus.iter().map(|e| e.near.iter().map(|(r, m)| self.race_rarity(r, m)).fold(0.0, f64::max)).collect()
        };
        let i = weighted(&mut self.rng, &weights)?;
        let entry = self.corpus[i].clone();
        let mut s = entry.scenario.clone();
        let closed = match op {
            0 => self.hold_lever(&entry, &mut s) || self.close_gap(&entry, &mut s),
            1 => self.close_gap(&entry, &mut s) || self.hold_lever(&entry, &mut s),
            2 => self.pin_clocks(&entry, &mut s) || self.close_gap(&entry, &mut s),
            _ => self.fault_at_step(&entry, &mut s),
        };
        s.faults.schedule.sort_by_key(|f| f.at_ms);
        closed.then_some((entry, s))
    }

    /// How rare the consequence of a fault at a handoff step `event` of [`steps_of`] is: one
    /// over one plus the runs that reached the goal it leads to (a corrupt over a pre-copy
    /// round to a diverged copy, a source lost or stalled after its pause or drain to an
    /// unanswered pause).
    fn step_rarity(&self, event: &str) -> f64 {
        let leads_to = if event == "precopied" { "finish_with_diverged_copy" } else { "move_pause_unanswered" };
        1.0 / (1 + self.goal_runs.get(leads_to).copied().unwrap_or(0)) as f64
    }

    /// Pin the clocks of one of `e`'s lease races ([`crate::measure::goals::NearMiss::clocks`])
    /// at the corners of the drift bound: the lease holder's slow by the whole bound, the
    /// authority's fast by it (`knobs.clock_drift_pinned_ppm`), so the holder trusts its
    /// lease up to twice the bound longer than the authority keeps it; a lease margin that
    /// covers drift still covers that, a margin that does not is exposed. The whole run
    /// changes (every clock rate acts from the start), the schedule stays. `false` when `e`
    /// has no lease race or the scenario's clocks do not drift.
    fn pin_clocks(&mut self, e: &Entry, s: &mut Scenario) -> bool {
        let races: Vec<(&String, &crate::measure::goals::NearMiss)> = e.near.iter().filter(|(_, m)| m.clocks.is_some()).collect();
        let ppm = s.knobs.clock_drift_ppm as i64;
        if races.is_empty() || ppm == 0 {
            return false;
        }
        let clocks = races[self.pick_race(races.iter().copied())].1.clocks.clone().expect("filtered");
        s.knobs.clock_drift_pinned_ppm.insert(clocks.slow, -ppm);
        s.knobs.clock_drift_pinned_ppm.insert(clocks.fast, ppm);
        true
    }

    /// A fault placed at one of `e`'s handoff steps ([`steps_of`]), at the node that took it
    /// (named, not a role): a `corrupt` of the store's answers over the time before a
    /// `precopied` (the round's reads), or a crash or pause of the server just after a
    /// `paused` or `drained` (a source lost, or stalled, mid-handoff), lasting around the
    /// protocol's margins. The step is drawn with a weight of one over the runs that reached
    /// the goal its fault leads to, so the rarer consequence comes first. The run up to the
    /// fault is the entry's, so the step is there. `false` when `e` kept no steps.
    fn fault_at_step(&mut self, e: &Entry, s: &mut Scenario) -> bool {
        use crate::scenario::FaultSpec;
        if e.steps.is_empty() {
            return false;
        }
        // The step whose fault leads to the rarer goal first.
        let weights: Vec<f64> = e.steps.iter().map(|(event, ..)| self.step_rarity(event)).collect();
        let pick = weighted(&mut self.rng, &weights).expect("steps weigh more than 0");
        let (event, node, t_ms) = e.steps[pick].clone();
        let knobs = s.node_knobs();
        let long = self.base.scenario.faults.random.as_ref().map_or([200, 6000], |r| r.partition_ms);
        let d = nemesis::margin_ms(&mut self.rng, &knobs, long).max(1);
        let (at_ms, fault) = if event == "precopied" {
            (t_ms.saturating_sub(d - self.rng.gen_range(0..=d / 2)), FaultSpec::Corrupt { from: "store-1".into(), to: node })
        } else {
            let after = t_ms + self.rng.gen_range(0..=20);
            (after, if self.rng.gen_bool(0.5) { FaultSpec::Crash { node } } else { FaultSpec::Pause { node } })
        };
        s.faults.schedule.push(TimedFault { at_ms: at_ms.min(self.end_ms(s).saturating_sub(1)), on: None, until: None, duration_ms: Some(d), fault });
        true
    }

    /// `e`'s schedule up to a moment before one of its goals, a new future drawn by the
    /// scenario's own nemesis after it, and half the time an aimed fault at that moment.
    fn branch(&mut self, e: &Entry) -> Scenario {
        let t_ms = self.moment_ms(e);
        let mut s = e.scenario.clone();
        s.faults.schedule.retain(|f| f.at_ms < t_ms);
        let mut future = e.scenario.clone();
        future.faults.schedule.clear();
        future.faults.random = self.base.scenario.faults.random.clone();
        self.emphasize(&mut future);
        future.moves.requests_per_min = self.base.scenario.moves.requests_per_min;
        future.moves.drains_per_min = self.base.scenario.moves.drains_per_min;
        let mut rng = nemesis::plan_rng(self.rng.gen());
        let plan = nemesis::draw(&future, &names_by_role(&future), &mut rng);
        s.faults.schedule.extend(plan.faults.iter().filter(|p| p.at_ms >= t_ms).map(timed));
        if self.rng.gen_bool(0.5) {
            self.add_aimed(&mut s, t_ms);
        }
        s
    }

    fn add_aimed(&mut self, s: &mut Scenario, at_ms: u64) {
        let knobs = s.node_knobs();
        let random = self.base.scenario.faults.random.clone().unwrap_or_default();
        let at_ms = at_ms.min(self.end_ms(s).saturating_sub(1));
        let drawn = nemesis::draw_aimed(&mut self.rng, at_ms, s, &knobs, &random);
        s.faults.schedule.extend(drawn.iter().map(timed));
    }

    /// One to three small changes to `e`'s schedule.
    fn mutate(&mut self, e: &Entry) -> Scenario {
        let mut s = e.scenario.clone();
        let end = self.end_ms(&s).max(1);
        let knobs = s.node_knobs();
        let long = self.base.scenario.faults.random.as_ref().map_or([200, 6000], |r| r.partition_ms);
        for _ in 0..self.rng.gen_range(1..=3) {
            let n = s.faults.schedule.len();
            let op = if n == 0 { 3 } else { self.rng.gen_range(0..12) };
            // With no near miss to close, a shift instead.
            let op = match op {
                8 | 9 if self.close_gap(e, &mut s) => continue,
                10 | 11 if self.hold_lever(e, &mut s) => continue,
                8..=11 => 0,
                _ => op,
            };
            match op {
                6 | 7 => {
                    // A nudge of a few ms either way: local search around a near miss.
                    let f = &mut s.faults.schedule[self.rng.gen_range(0..n)];
                    let nudge = self.rng.gen_range(1..=40);
                    let later = self.rng.gen_bool(0.5);
                    match (&mut f.duration_ms, self.rng.gen_bool(0.5)) {
                        (Some(d), true) => *d = if later { *d + nudge } else { d.saturating_sub(nudge).max(1) },
                        _ => f.at_ms = if later { (f.at_ms + nudge).min(end - 1) } else { f.at_ms.saturating_sub(nudge) },
                    }
                }
                0 => {
                    let f = &mut s.faults.schedule[self.rng.gen_range(0..n)];
                    let shift = self.rng.gen_range(0..3000);
                    f.at_ms = if self.rng.gen_bool(0.5) { f.at_ms.saturating_sub(shift) } else { (f.at_ms + shift).min(end - 1) };
                }
                1 => {
                    let i = self.rng.gen_range(0..n);
                    if s.faults.schedule[i].duration_ms.is_some() {
                        let d = nemesis::margin_ms(&mut self.rng, &knobs, long);
                        s.faults.schedule[i].duration_ms = Some(d.max(1));
                    }
                }
                2 => {
                    let i = self.rng.gen_range(0..n);
                    retarget(&mut s.faults.schedule[i], &mut self.rng, s.workload.keys);
                }
                3 | 4 => {
                    let t = self.moment_ms(e);
                    self.add_aimed(&mut s, t);
                }
                _ => {
                    let i = self.rng.gen_range(0..n);
                    s.faults.schedule.remove(i);
                }
            }
        }
        s.faults.schedule.sort_by_key(|f| f.at_ms);
        s
    }

    /// Fold one run into the corpus; `true` when it joined.
    fn fold(&mut self, c: &Candidate, report: &RunReport) -> Option<Entry> {
        self.runs += 1;
        for g in report.goals.keys() {
            *self.goal_runs.entry(g.to_string()).or_default() += 1;
        }
        let rare = self.rare_goals();
        let feats = features(report, &rare);
        let new = feats.iter().any(|f| !self.seen.contains_key(f));
        if !new {
            return None;
        }
        for f in &feats {
            *self.seen.entry(f.clone()).or_default() += 1;
        }
        let scenario = c.schedule(self.base, report);
        let entry = Entry {
            format: CORPUS_FORMAT,
            scenario_hash: self.scenario_hash.clone(),
            seed: c.seed,
            origin: c.origin.to_string(),
            features: feats.into_iter().collect(),
            goal_first_us: report.goals.iter().map(|(k, r)| (k.to_string(), r.first_us)).collect(),
            near: report.near_misses.iter().map(|(k, m)| (k.to_string(), m.clone())).collect(),
            steps: steps_of(report),
            scenario,
        };
        self.corpus.push(entry.clone());
        Some(entry)
    }
}

/// The handoff steps of a run a fault can act on, as `(event, node, ms)`: each `precopied`
/// (a pre-copy round's reads ended at that server), `paused` and `drained` (a source or
/// parent stopped writes and drained), at most [`STEPS_KEPT`] of each, evenly spread over
/// the run.
pub fn steps_of(report: &RunReport) -> Vec<(String, String, u64)> {
    use crate::events::{Sys, What};
    let mut by_kind: BTreeMap<&'static str, Vec<(String, u64)>> = BTreeMap::new();
    for ev in &report.events {
        let (kind, server) = match &ev.what {
            What::Sys(Sys::Precopied { server, .. }) => ("precopied", server),
            What::Sys(Sys::Paused { server, .. }) => ("paused", server),
            What::Sys(Sys::Drained { server, .. }) => ("drained", server),
            _ => continue,
        };
        by_kind.entry(kind).or_default().push((format!("server-{}", server.0), ev.t_us / 1000));
    }
    let mut out = Vec::new();
    for (kind, steps) in by_kind {
        let every = steps.len().div_ceil(STEPS_KEPT).max(1);
        out.extend(steps.into_iter().step_by(every).map(|(node, t)| (kind.to_string(), node, t)));
    }
    out
}

/// Swarm testing of the fault mix (Groce et al., "Swarm testing", ISSTA 2012): `s`'s random
/// faults given an emphasis of their own, drawn from `rng` (the explorer's generator, for a
/// fresh run and for a branch's new future) and blind to the mutation. Each of crashes, partitions, pauses and slow disks is left
/// out one time in four (a fault kind that masks another, a crash that ends the long
/// pause a race needs, is then absent); the aimed faults' rate
/// ([`crate::run::nemesis::draw_aimed`], faults fired by protocol steps at the roles that
/// take them) is kept one time in five and otherwise multiplied by 4 or 8; the message
/// faults' rate is tripled half the time; and half the runs put the clocks at the worst
/// case of the drift bound (`knobs.clock_drift_worst_case`), where a uniform draw seldom
/// lands. Only what the scenario already enables is scaled, never switched on, and every
/// rate stays within the format's 600 per minute. Measured on 200 seeds of the default
/// scenario (DESIGN.md, "the explorer"): raising the aimed rate alone multiplies how often
/// a run reaches a stale writer's race several times over. `true`: the clocks are at the
/// corner.
pub fn emphasize(rng: &mut impl Rng, s: &mut Scenario) -> bool {
    if let Some(r) = s.faults.random.as_mut() {
        let scale = |rate: &mut [f64; 2], k: f64| *rate = [(rate[0] * k).min(600.0), (rate[1] * k).min(600.0)];
        for rate in [&mut r.crash_per_min, &mut r.partition_per_min, &mut r.pause_per_min, &mut r.slow_disk_per_min] {
            if rng.gen_range(0..4) == 0 {
                *rate = [0.0, 0.0];
            }
        }
        let aimed = [1.0, 4.0, 4.0, 8.0, 8.0][rng.gen_range(0..5)];
        scale(&mut r.aimed_per_min, aimed);
        let message = if rng.gen_bool(0.5) { 3.0 } else { 1.0 };
        scale(&mut r.message_faults_per_min, message);
    }
    let corner = s.knobs.clock_drift_ppm > 0 && !s.knobs.clock_drift_worst_case && rng.gen_bool(0.5);
    s.knobs.clock_drift_worst_case |= corner;
    corner
}

/// At most this many steps of each kind are kept per corpus entry ([`steps_of`]).
pub const STEPS_KEPT: usize = 16;

/// An index of `weights` drawn with probability proportional to its weight (the last one
/// when rounding leaves the draw past every weight); `None` when the weights sum to 0 or less.
fn weighted(rng: &mut impl Rng, weights: &[f64]) -> Option<usize> {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut x = rng.gen_range(0.0..total);
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return Some(i);
        }
        x -= w;
    }
    Some(weights.len() - 1)
}

/// Swap one node of `f`'s fault for a role.
fn retarget(f: &mut TimedFault, rng: &mut impl Rng, keys: u32) {
    use crate::scenario::FaultSpec;
    let key = String::from_utf8(crate::scenario::key_name(rng.gen_range(0..keys.max(1)))).expect("ascii");
    const ROLES: [&str; 6] = ["@leader", "@move-source", "@move-target", "@reshape-parent-owner", "@failover-target", "@standby-manager"];
    let role = if rng.gen_bool(0.3) { format!("@owner?key={key}") } else { ROLES[rng.gen_range(0..ROLES.len())].to_string() };
    match &mut f.fault {
        FaultSpec::Crash { node } | FaultSpec::Isolate { node } | FaultSpec::Pause { node } => *node = role,
        FaultSpec::OneWay { from, to } | FaultSpec::Delay { from, to } | FaultSpec::Duplicate { from, to } | FaultSpec::Reorder { from, to } | FaultSpec::DelayNext { from, to, .. } => {
            if rng.gen_bool(0.5) {
                *from = role;
            } else {
                *to = role;
            }
        }
        FaultSpec::Corrupt { to, .. } => *to = "@move-target".into(),
        _ => {}
    }
}

/// Read every entry of `dir` (files `*.json`, in name order). A missing directory is empty.
///
/// Errors: an unreadable directory or file, a file that is no entry, an entry of another
/// corpus format or of another scenario (`scenario_hash`), each naming the file.
pub fn load_corpus(dir: &Path, scenario_hash: &str) -> Result<Vec<Entry>, String> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let listing = std::fs::read_dir(dir).map_err(|e| format!("--corpus {}: cannot read the directory: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for item in listing {
        let path = item.map_err(|e| format!("--corpus {}: {e}", dir.display()))?.path();
        if path.extension().is_some_and(|x| x == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("--corpus {}: {e}", path.display()))?;
        let entry: Entry = serde_json::from_str(&text).map_err(|e| format!("--corpus {}: not a corpus entry: {e}", path.display()))?;
        if entry.format != CORPUS_FORMAT {
            return Err(format!("--corpus {}: corpus format {}, this build reads format {CORPUS_FORMAT} (a corpus from another build)", path.display(), entry.format));
        }
        if entry.scenario_hash != scenario_hash {
            return Err(format!("--corpus {}: made for scenario hash {}, exploring {scenario_hash} (another scenario, or a build whose scenario defaults differ)", path.display(), entry.scenario_hash));
        }
        entry.scenario.validate().map_err(|e| format!("--corpus {}: its scenario is invalid here: {e}", path.display()))?;
        out.push(entry);
    }
    Ok(out)
}

/// The file name of corpus entry `e` in its directory: `entry-<scenario's FNV-1a, 16 hex
/// digits>-seed-<seed>.json`, the same for the same schedule and seed.
pub fn entry_name(e: &Entry) -> String {
    let text = serde_json::to_string(&e.scenario).expect("serializes");
    format!("entry-{:016x}-seed-{}.json", crate::sweep::summary::fnv1a(text.as_bytes()), e.seed)
}

/// Writes corpus entry `e` as pretty JSON into `dir` (created when missing) under
/// [`entry_name`]; an entry already there is kept. `Err`: the I/O error, naming the path.
pub fn save_entry(dir: &Path, e: &Entry) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|err| format!("--corpus {}: {err}", dir.display()))?;
    let path = dir.join(entry_name(e));
    if path.exists() {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(e).expect("an entry serializes");
    std::fs::write(&path, text).map_err(|err| format!("--corpus {}: {err}", path.display()))
}

/// Run `c` on this thread: the report (or the panic message) and the run's thread CPU seconds.
fn run_candidate(base: &RunOptions, c: &Candidate) -> Ran {
    let opts = c.opts(base);
    let from = crate::cpu::thread_cpu_ns();
    let r = std::panic::catch_unwind(|| run_seed(&opts)).map_err(|p| {
        p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "panic".into())
    });
    let cpu = (crate::cpu::thread_cpu_ns() - from) as f64 / 1e9;
    (r, cpu)
}

/// A candidate's run: its report (or the panic's message) and its thread CPU seconds.
type Ran = (Result<RunReport, String>, f64);

/// Run a batch on `jobs` threads; results in candidate order.
fn run_batch(base: &RunOptions, batch: &[Candidate], jobs: usize) -> Vec<Ran> {
    crate::search::workers::in_order(batch, jobs, |_, c| run_candidate(base, c))
}

/// The first violated property of `report` with its evidence, if any (safety or liveness).
fn violation(report: &RunReport) -> Option<(String, String)> {
    if !matches!(report.outcome(), RunOutcome::SafetyViolation | RunOutcome::LivenessFailure) {
        return None;
    }
    report.verdicts.iter().find(|v| v.violation.is_some()).map(|v| (v.property.to_string(), v.violation.clone().unwrap_or_default()))
}

/// Explore `base`'s scenario (with `base.mutation` on, if any) under `cfg`. `echo` receives the
/// progress and finding lines.
///
/// Errors: a corpus that cannot be read or written ([`load_corpus`]), or a finding's file that
/// cannot be written.
pub fn explore(base: &RunOptions, cfg: &ExploreConfig, echo: &mut dyn FnMut(&str)) -> Result<Outcome, String> {
    let mut x = Explorer::resume(base, cfg, echo)?;
    let started = std::time::Instant::now();
    let mut out = Outcome::default();
    'search: while x.runs < cfg.runs {
        if cfg.time_budget.is_some_and(|b| started.elapsed() >= b) {
            echo("explore: time budget spent");
            break;
        }
        let n = BATCH.min((cfg.runs - x.runs) as usize);
        let batch: Vec<Candidate> = (0..n).map(|_| x.candidate()).collect();
        let results = run_batch(base, &batch, cfg.jobs);
        for (c, (result, cpu)) in batch.iter().zip(results) {
            out.cpu_s += cpu;
            *out.by_origin.entry(c.origin).or_default() += 1;
            let found = match &result {
                Ok(report) => {
                    if let Some(entry) = x.fold(c, report) {
                        if let Some(dir) = cfg.corpus.first() {
                            save_entry(dir, &entry)?;
                        }
                    }
                    violation(report).map(|(p, e)| (p, e, Some(report)))
                }
                Err(panic) => {
                    x.runs += 1;
                    Some(("harness_crash".to_string(), panic.clone(), None))
                }
            };
            if cfg.progress_every > 0 && x.runs.is_multiple_of(cfg.progress_every) {
                echo(&format!("explore: runs={} corpus={} goals={}/{} features={} findings={} cpu={:.1}s", x.runs, x.corpus.len(), x.goal_runs.len(), crate::measure::goals::registry().len(), x.seen.len(), out.findings.len(), out.cpu_s));
            }
            if let Some((property, evidence, report)) = found {
                let scenario = report.map_or_else(|| c.scenario.clone(), |r| c.schedule(base, r));
                let mut finding = Finding { run: x.runs, seed: c.seed, property, evidence, path: None, scenario, cpu_s: out.cpu_s };
                if cfg.report_dir.is_some() {
                    write_finding(base, cfg, &mut finding, echo)?;
                }
                echo(&format!("explore: run {} (seed {}, {}) VIOLATED {}: {}", finding.run, finding.seed, c.origin, finding.property, finding.evidence));
                out.findings.push(finding);
                if !cfg.keep_going {
                    break 'search;
                }
            }
        }
    }
    out.runs = x.runs;
    out.corpus = x.corpus.len();
    out.features = x.seen.len();
    out.goals = x.goal_runs.keys().cloned().collect();
    Ok(out)
}

/// Write a finding's scenario, replay it to check it fails again, draw its timeline and, with
/// `--shrink`, shrink it; print the repro line.
fn write_finding(base: &RunOptions, cfg: &ExploreConfig, f: &mut Finding, echo: &mut dyn FnMut(&str)) -> Result<(), String> {
    let names = base.mutation.map(|m| crate::run::mutation_names(m, base.also_mutation));
    let dir = cfg.report_dir.as_ref().expect("checked").join("explore").join(format!("{}{}", crate::run::scenario_stem(&base.scenario_label), names.as_ref().map_or(String::new(), |m| format!("-{}", m.replace(',', "+")))));
    let path = dir.join(format!("find-{}-seed-{}.json", f.run, f.seed));
    let mut s = f.scenario.clone();
    s.description = format!(
        "Found by `partmap-sim explore --seed {}` (run {}, seed {}){}: violates {}. An explicit schedule; replay it with `partmap-sim run --seed {} --scenario {}{}`.",
        cfg.seed,
        f.run,
        f.seed,
        names.as_ref().map_or(String::new(), |m| format!(" with --mutation {m}")),
        f.property,
        f.seed,
        path.display(),
        names.as_ref().map_or(String::new(), |m| format!(" --mutation {m}")),
    );
    s.expect.outcome = crate::scenario::ExpectedOutcome::Pass;
    crate::search::schedule::write(&path, &s)?;
    f.path = Some(path.clone());
    let flag = names.as_ref().map_or(String::new(), |m| format!(" --mutation {m}"));
    // The file must fail on a plain run, the way the search saw it.
    let replay = RunOptions { seed: f.seed, scenario: s.clone(), scenario_label: path.display().to_string(), mutation: base.mutation, also_mutation: base.also_mutation, trace: false, echo_header: false };
    match std::panic::catch_unwind(|| run_seed(&replay)) {
        Ok(r) => {
            let again = violation(&r).map(|(p, _)| p);
            echo(&format!("explore: replayed {}: {}", path.display(), again.as_deref().map_or("PASSES (not reproduced)".to_string(), |p| format!("fails again ({p})"))));
            let html = crate::report::timeline::render(&r, &replay);
            let tl = dir.join(format!("find-{}-seed-{}.html", f.run, f.seed));
            std::fs::write(&tl, html).map_err(|e| format!("{}: {e}", tl.display()))?;
            echo(&format!("timeline: {}", tl.display()));
        }
        Err(_) => echo("explore: the replay panicked (harness crash)"),
    }
    echo(&format!("repro: partmap-sim run --seed {} --scenario {}{flag}", f.seed, path.display()));
    if cfg.shrink {
        let opts = crate::search::shrink::ShrinkOptions { seed: f.seed, scenario: s, scenario_label: path.display().to_string(), mutation: base.mutation, jobs: cfg.jobs, max_runs: 400, faults_only: false, echo: false };
        match crate::search::shrink::shrink(&opts) {
            Ok(shrunk) => {
                let out = dir.join(format!("find-{}-seed-{}-shrunk.json", f.run, f.seed));
                let described = crate::search::shrink::describe_result(&shrunk, &opts, &out);
                crate::search::schedule::write(&out, &described)?;
                echo(&format!("shrunk: faults {} -> {}, operator requests {} -> {}; repro: partmap-sim run --seed {} --scenario {}{flag}", shrunk.before.0, shrunk.after.0, shrunk.before.1, shrunk.after.1, f.seed, out.display()));
            }
            Err(e) => echo(&format!("shrink: {e:?}")),
        }
    }
    Ok(())
}
