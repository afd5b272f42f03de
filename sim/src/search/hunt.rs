//! `partmap-sim hunt`: the benchmark of the search. For each named mutation (or `--only`), on
//! the default scenario and in one process, a plain random sweep and a guided search
//! ([`crate::search::explore`], `--keep-going`) each get the same run budget, in `--rounds`
//! independent rounds: round k sweeps seeds k·N..(k+1)·N and explores with explorer seed
//! `--seed`+k. One round's first catch is mostly luck (at one explorer seed the median ratio
//! over the rare mutations was 1.89, at the next two 5.93 and 1.31), so the table gives, per
//! side, the catches pooled over the rounds and the *median over rounds* of the CPU seconds to
//! the first catch, and the ratio of random's median over explore's. CPU is each run's thread
//! CPU time, summed in run order, so the figures do not depend on what else the machine does.
//! Both searches see the mutation only through the runs.
//!
//! A mutation random catches on 5% of runs or more is first caught within a few runs on both
//! sides, and three rounds cannot tell a first catch at run 1 from one at run 7 (at 3be2fd7
//! `map-forgets-reshapes` read 0.55 from first runs `1 7 1` against `1 3 3`, with explore
//! catching more often, 540 per 1000 against 487). So such a mutation also gets
//! `--first-rounds` more rounds that stop at their first catch (each still within the run
//! budget; seeds and explorer seeds continue the full rounds' numbering), and its median is
//! over all its rounds. The extra rounds count towards the time to first catch only, never
//! towards the pooled catches. The rare mutations are left at the full rounds: a round of
//! theirs costs the whole budget, and their first catches are far apart already.

use crate::search::explore::{explore, ExploreConfig};
use crate::run::{run_seed, RunOptions, RunOutcome};
use partmap::config::Mutation;
use std::fmt::Write as _;

/// One search's figures in one round.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// Runs made.
    pub runs: u64,
    /// Runs that violated a property.
    pub catches: u64,
    /// CPU seconds up to and including the first catch (`None`: never caught).
    pub cpu_to_first_s: Option<f64>,
    /// The first catching run (from 1).
    pub first_run: Option<u64>,
    /// CPU seconds of all runs.
    pub cpu_s: f64,
}

impl Search {
    /// Catches per 1,000 runs.
    pub fn per_1000(&self) -> f64 {
        1000.0 * self.catches as f64 / self.runs.max(1) as f64
    }

    /// The CPU seconds to the first catch, or, never caught, the whole budget as a lower
    /// bound (`censored`).
    pub fn first(&self) -> Bound {
        match self.cpu_to_first_s {
            Some(s) => Bound { s, censored: false },
            None => Bound { s: self.cpu_s, censored: true },
        }
    }
}

/// A time to first catch that may be only a lower bound: `censored` means the search never
/// caught the mutation and `s` is the CPU it spent (the true figure is more).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// CPU seconds.
    pub s: f64,
    /// Only a lower bound.
    pub censored: bool,
}

/// The median of `rounds` (the upper one of an even count), ranking every censored value
/// after every caught one (it stands for "more than its budget"); a censored median is the
/// smallest censored value, still a lower bound. `None` for no rounds.
pub fn median(rounds: &[Bound]) -> Option<Bound> {
    let mut caught: Vec<f64> = rounds.iter().filter(|b| !b.censored).map(|b| b.s).collect();
    caught.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let mid = rounds.len() / 2;
    if rounds.is_empty() {
        None
    } else if mid < caught.len() {
        Some(Bound { s: caught[mid], censored: false })
    } else {
        let least = rounds.iter().filter(|b| b.censored).map(|b| b.s).fold(f64::INFINITY, f64::min);
        Some(Bound { s: least, censored: true })
    }
}

/// Random's time to first catch over explore's (`> 1`: explore is faster), as text and as a
/// number: `>x` when only random's figure is a lower bound (the ratio is at least x), `<x`
/// when only explore's is (at most x), `None` when both are.
pub fn ratio_of(random: Bound, explore: Bound) -> Option<(String, f64)> {
    let x = random.s / explore.s.max(1e-9);
    match (random.censored, explore.censored) {
        (false, false) => Some((format!("{x:.2}"), x)),
        (true, false) => Some((format!(">{x:.2}"), x)),
        (false, true) => Some((format!("<{x:.2}"), x)),
        (true, true) => None,
    }
}

/// One mutation's hunt: one [`Search`] per round on each side.
#[derive(Clone, Debug)]
pub struct Hunted {
    /// The mutation.
    pub mutation: Mutation,
    /// The random sweeps, by round.
    pub random: Vec<Search>,
    /// The guided searches, by round.
    pub explore: Vec<Search>,
    /// The random sweeps of the first-catch rounds (see the module doc), by round: each stops
    /// at its first catch. Empty for a rare mutation.
    pub random_first: Vec<Search>,
    /// The guided searches of the first-catch rounds, by round.
    pub explore_first: Vec<Search>,
}

/// Figures pooled over rounds: (catches, runs, CPU seconds).
fn pooled(rounds: &[Search]) -> (u64, u64, f64) {
    rounds.iter().fold((0, 0, 0.0), |(c, r, s), x| (c + x.catches, r + x.runs, s + x.cpu_s))
}

impl Hunted {
    /// Random's catches per 1,000 runs, pooled over rounds.
    pub fn random_per_1000(&self) -> f64 {
        let (c, r, _) = pooled(&self.random);
        1000.0 * c as f64 / r.max(1) as f64
    }

    /// The median ratio's text and value ([`ratio_of`] of the two sides' [`median`]s, each
    /// over the full rounds and the first-catch rounds).
    pub fn ratio(&self) -> Option<(String, f64)> {
        ratio_of(first_median(&self.random, &self.random_first)?, first_median(&self.explore, &self.explore_first)?)
    }
}

/// The median CPU to first catch over a side's full rounds and first-catch rounds.
fn first_median(full: &[Search], first: &[Search]) -> Option<Bound> {
    median(&full.iter().chain(first).map(Search::first).collect::<Vec<_>>())
}

/// Whether `h` is common: random catches it on 5% of its full rounds' runs or more.
fn common(h: &Hunted) -> bool {
    h.random_per_1000() >= 50.0
}

/// A random sweep of `base` (its mutation on) over seeds `from..from + runs`; with
/// `stop_at_first`, up to its first catch.
pub fn random_search(base: &RunOptions, from: u64, runs: u64, stop_at_first: bool) -> Search {
    let mut s = Search::default();
    for seed in from..from + runs {
        if stop_at_first && s.catches > 0 {
            break;
        }
        let opts = RunOptions { seed, ..base.clone() };
        let cpu0 = crate::cpu::thread_cpu_ns();
        let caught = match std::panic::catch_unwind(|| run_seed(&opts)) {
            Ok(r) => matches!(r.outcome(), RunOutcome::SafetyViolation | RunOutcome::LivenessFailure),
            Err(_) => true,
        };
        s.cpu_s += (crate::cpu::thread_cpu_ns() - cpu0) as f64 / 1e9;
        s.runs += 1;
        if caught {
            s.catches += 1;
            if s.first_run.is_none() {
                s.first_run = Some(s.runs);
                s.cpu_to_first_s = Some(s.cpu_s);
            }
        }
    }
    s
}

/// The guided search of `base` with `runs` runs (explorer seed `seed`, one thread, nothing
/// written): every violation collected, or with `stop_at_first` up to the first.
pub fn guided_search(base: &RunOptions, runs: u64, seed: u64, stop_at_first: bool) -> Result<Search, String> {
    let cfg = ExploreConfig { seed, runs, time_budget: None, jobs: 1, keep_going: !stop_at_first, shrink: false, corpus: Vec::new(), report_dir: None, progress_every: 0 };
    let out = explore(base, &cfg, &mut |_| {})?;
    let first = out.findings.first();
    Ok(Search { runs: out.runs, catches: out.findings.len() as u64, cpu_to_first_s: first.map(|f| f.cpu_s), first_run: first.map(|f| f.run), cpu_s: out.cpu_s })
}

/// What a hunt does: `runs` runs per search and round, `rounds` rounds, explorer seeds
/// `seed..seed + rounds`, `jobs` worker threads (each takes one mutation's round at a time).
#[derive(Clone, Copy, Debug)]
pub struct HuntConfig {
    /// Run budget of each search per round.
    pub runs: u64,
    /// Independent rounds (at least 1).
    pub rounds: u64,
    /// The first round's explorer seed.
    pub seed: u64,
    /// Worker threads.
    pub jobs: usize,
    /// First-catch rounds for each common mutation (see the module doc).
    pub first_rounds: u64,
}

/// Hunt every mutation of `mutations` on `base`'s scenario: the full rounds, then the
/// first-catch rounds of the common ones; results in `mutations` order. `echo` gets a line as
/// each mutation's full rounds end, and one as the first-catch rounds start.
pub fn hunt(base: &RunOptions, mutations: &[Mutation], cfg: HuntConfig, echo: &(dyn Fn(&str) + Sync)) -> Result<Vec<Hunted>, String> {
    let rounds = cfg.rounds.max(1);
    let tasks: Vec<(Mutation, u64)> = mutations.iter().flat_map(|&m| (0..rounds).map(move |k| (m, k))).collect();
    let done = std::sync::Mutex::new(std::collections::BTreeMap::<usize, u64>::new());
    let results = rounds_of(base, &tasks, cfg, false, &|i, m| {
        let mut d = done.lock().expect("done");
        let n = d.entry(i / rounds as usize).or_insert(0);
        *n += 1;
        if *n == rounds {
            echo(&format!("{}: {} round(s) done", m.name(), rounds));
        }
    });
    let mut out = Vec::new();
    for (chunk, &m) in results.chunks(rounds as usize).zip(mutations) {
        let mut h = Hunted { mutation: m, random: Vec::new(), explore: Vec::new(), random_first: Vec::new(), explore_first: Vec::new() };
        for r in chunk {
            let (random, explore) = r.clone()?;
            h.random.push(random);
            h.explore.push(explore);
        }
        out.push(h);
    }
    let first: Vec<(Mutation, u64)> = out.iter().filter(|h| common(h)).flat_map(|h| (rounds..rounds + cfg.first_rounds).map(move |k| (h.mutation, k))).collect();
    if !first.is_empty() {
        echo(&format!("first-catch rounds: {} for each of {} common mutation(s)", cfg.first_rounds, first.len() as u64 / cfg.first_rounds.max(1)));
    }
    for (&(m, _), r) in first.iter().zip(rounds_of(base, &first, cfg, true, &|_, _| {})) {
        let (random, explore) = r?;
        let h = out.iter_mut().find(|h| h.mutation == m).expect("hunted");
        h.random_first.push(random);
        h.explore_first.push(explore);
    }
    Ok(out)
}

/// Run each task's round k on both sides, `cfg.jobs` at a time, in task order: random sweeps
/// seeds k·runs..(k+1)·runs, explore seeds `cfg.seed + k`; `stop_at_first` ends each side at
/// its first catch. `done` gets each task's index as it ends.
fn rounds_of(base: &RunOptions, tasks: &[(Mutation, u64)], cfg: HuntConfig, stop_at_first: bool, done: &(dyn Fn(usize, Mutation) + Sync)) -> Vec<Result<(Search, Search), String>> {
    crate::search::workers::in_order(tasks, cfg.jobs, |i, &(m, k)| {
        let opts = RunOptions { mutation: Some(m), ..base.clone() };
        let random = random_search(&opts, k * cfg.runs, cfg.runs, stop_at_first);
        let out = guided_search(&opts, cfg.runs, cfg.seed + k, stop_at_first).map(|e| (random, e));
        done(i, m);
        out
    })
}

fn show(b: Option<Bound>) -> String {
    match b {
        Some(Bound { s, censored: false }) => format!("{s:.2}"),
        Some(Bound { s, censored: true }) => format!(">{s:.2}"),
        None => "-".into(),
    }
}

fn side(full: &[Search], first: &[Search]) -> String {
    let (c, r, _) = pooled(full);
    let runs = |rs: &[Search]| -> Vec<String> { rs.iter().map(|s| s.first_run.map_or("-".into(), |f| f.to_string())).collect() };
    let mut firsts = runs(full).join(" ");
    if !first.is_empty() {
        let mut more: Vec<u64> = first.iter().map(|s| s.first_run.unwrap_or(u64::MAX)).collect();
        more.sort_unstable();
        let mid = more[more.len() / 2];
        let mid = if mid == u64::MAX { "-".to_string() } else { mid.to_string() };
        firsts = format!("{firsts}; +{}: median {mid}", first.len());
    }
    format!("{c}/{r} | {:.1} | {} | {firsts}", 1000.0 * c as f64 / r.max(1) as f64, show(first_median(full, first)))
}

/// One row of the table.
pub fn row(h: &Hunted) -> String {
    let rounds = h.random.len() + h.random_first.len();
    format!("| {} | {} | {} | {rounds} | {} |", h.mutation.name(), side(&h.random, &h.random_first), side(&h.explore, &h.explore_first), h.ratio().map_or("-".into(), |(t, _)| t))
}

/// The table as markdown, with the command and build that produced it.
pub fn render(hunts: &[Hunted], cfg: HuntConfig, command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Hunt: random sweep against guided exploration, default scenario\n");
    let _ = writeln!(out, "Produced by `{command}` at commit {}.\n", option_env!("PARTMAP_COMMIT").unwrap_or("unknown"));
    let _ = writeln!(
        out,
        "Each mutation gets the same run budget, {} runs, on each side in each of {} round(s): round k sweeps seeds k·{}..(k+1)·{} of the default scenario, and runs `explore --keep-going --seed {}+k`. Caught and per 1000 are pooled over the rounds. CPU to first is thread CPU summed in run order up to and including the first catching run, the median over rounds (a round that never caught counts as more than its budget; `>x`: the median round never caught). First runs: the first catching run of each round. A mutation random catches on 5% of runs or more (common) also gets {} first-catch rounds, k = {}..{}, each stopping at its first catch within the budget: they count in the median CPU to first only, never in caught or per 1000 (first runs: `+n: median m`, the median first catching run of those n rounds). Rounds: how many rounds the medians are over. Ratio: random's median over explore's (`>x`: random's is a lower bound, so the ratio is at least x; `<x`: explore's is, so at most x).\n",
        cfg.runs, cfg.rounds, cfg.runs, cfg.runs, cfg.seed, cfg.first_rounds, cfg.rounds, cfg.rounds + cfg.first_rounds
    );
    let _ = writeln!(out, "| mutation | random caught | random per 1000 | random median CPU s to first | random first runs | explore caught | explore per 1000 | explore median CPU s to first | explore first runs | rounds | ratio |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|");
    for h in hunts {
        let _ = writeln!(out, "{}", row(h));
    }
    let (mut rc, mut ec, mut rn, mut en) = (0.0, 0.0, 0u64, 0u64);
    for h in hunts {
        let (_, r, c) = pooled(&h.random);
        let (_, e, d) = pooled(&h.explore);
        (rc, ec, rn, en) = (rc + c, ec + d, rn + r, en + e);
    }
    let (rp, ep) = (rc / rn.max(1) as f64, ec / en.max(1) as f64);
    let _ = writeln!(out, "\nCPU per run: random {rp:.4} s, explore {ep:.4} s (explore/random {:.3}).", ep / rp.max(1e-12));
    let _ = writeln!(out, "{}", summary(hunts));
    out
}

/// The headline: the median ratio over the mutations random catches on fewer than 5% of
/// runs (a bound counted as its value, so a `<x` helps explore and a `>x` hurts it), and the
/// lowest ratio over the common ones.
pub fn summary(hunts: &[Hunted]) -> String {
    let (common, rare): (Vec<&Hunted>, Vec<&Hunted>) = hunts.iter().partition(|h| common(h));
    let list = |hs: &[&Hunted]| -> Vec<(String, String, f64)> { hs.iter().filter_map(|h| h.ratio().map(|(t, x)| (h.mutation.name().to_string(), t, x))).collect() };
    let mut r = list(&rare);
    r.sort_by(|a, b| a.2.partial_cmp(&b.2).expect("finite"));
    let mut text = String::new();
    if !r.is_empty() {
        let mid = r.len() / 2;
        let median = if r.len() % 2 == 1 { r[mid].2 } else { (r[mid - 1].2 + r[mid].2) / 2.0 };
        let shown: Vec<String> = r.iter().map(|(n, t, _)| format!("{n} {t}")).collect();
        let _ = write!(text, "Mutations random catches on fewer than 5% of runs: {} ({} with a ratio: {}); median ratio {median:.2}. ", rare.len(), r.len(), shown.join(", "));
    }
    let mut c = list(&common);
    c.sort_by(|a, b| a.2.partial_cmp(&b.2).expect("finite"));
    if let Some((n, t, _)) = c.first() {
        let _ = write!(text, "Common ones: {}, the lowest ratio {t} ({n}).", common.len());
    }
    text
}
