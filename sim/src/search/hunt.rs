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

    /// The median ratio's text and value ([`ratio_of`] of the two sides' [`median`]s).
    pub fn ratio(&self) -> Option<(String, f64)> {
        let side = |s: &[Search]| median(&s.iter().map(Search::first).collect::<Vec<_>>());
        ratio_of(side(&self.random)?, side(&self.explore)?)
    }
}

/// A random sweep of `base` (its mutation on) over seeds `from..from + runs`.
pub fn random_search(base: &RunOptions, from: u64, runs: u64) -> Search {
    let mut s = Search::default();
    for seed in from..from + runs {
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

/// The guided search of `base` with `runs` runs (explorer seed `seed`, one thread, every
/// violation collected, nothing written).
pub fn guided_search(base: &RunOptions, runs: u64, seed: u64) -> Result<Search, String> {
    let cfg = ExploreConfig { seed, runs, time_budget: None, jobs: 1, keep_going: true, shrink: false, corpus: Vec::new(), report_dir: None, progress_every: 0 };
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
}

/// Hunt every mutation of `mutations` on `base`'s scenario; results in `mutations` order.
/// `echo` gets a row per finished mutation.
pub fn hunt(base: &RunOptions, mutations: &[Mutation], cfg: HuntConfig, echo: &(dyn Fn(&str) + Sync)) -> Result<Vec<Hunted>, String> {
    let rounds = cfg.rounds.max(1);
    let tasks: Vec<(Mutation, u64)> = mutations.iter().flat_map(|&m| (0..rounds).map(move |k| (m, k))).collect();
    let done = std::sync::Mutex::new(std::collections::BTreeMap::<usize, u64>::new());
    let results = crate::search::workers::in_order(&tasks, cfg.jobs, |i, &(m, k)| {
        let opts = RunOptions { mutation: Some(m), ..base.clone() };
        let random = random_search(&opts, k * cfg.runs, cfg.runs);
        let out = guided_search(&opts, cfg.runs, cfg.seed + k).map(|e| (random, e));
        let mut d = done.lock().expect("done");
        let n = d.entry(i / rounds as usize).or_insert(0);
        *n += 1;
        if *n == rounds {
            echo(&format!("{}: {} round(s) done", m.name(), rounds));
        }
        out
    });
    let mut out = Vec::new();
    for (chunk, &m) in results.chunks(rounds as usize).zip(mutations) {
        let mut h = Hunted { mutation: m, random: Vec::new(), explore: Vec::new() };
        for r in chunk {
            let (random, explore) = r.clone()?;
            h.random.push(random);
            h.explore.push(explore);
        }
        out.push(h);
    }
    Ok(out)
}

fn show(b: Option<Bound>) -> String {
    match b {
        Some(Bound { s, censored: false }) => format!("{s:.2}"),
        Some(Bound { s, censored: true }) => format!(">{s:.2}"),
        None => "-".into(),
    }
}

fn side(rounds: &[Search]) -> String {
    let (c, r, _) = pooled(rounds);
    let firsts: Vec<String> = rounds.iter().map(|s| s.first_run.map_or("-".into(), |f| f.to_string())).collect();
    let med = median(&rounds.iter().map(Search::first).collect::<Vec<_>>());
    format!("{c}/{r} | {:.1} | {} | {}", 1000.0 * c as f64 / r.max(1) as f64, show(med), firsts.join(" "))
}

/// One row of the table.
pub fn row(h: &Hunted) -> String {
    format!("| {} | {} | {} | {} |", h.mutation.name(), side(&h.random), side(&h.explore), h.ratio().map_or("-".into(), |(t, _)| t))
}

/// The table as markdown, with the command and build that produced it.
pub fn render(hunts: &[Hunted], cfg: HuntConfig, command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Hunt: random sweep against guided exploration, default scenario\n");
    let _ = writeln!(out, "Produced by `{command}` at commit {}.\n", option_env!("PARTMAP_COMMIT").unwrap_or("unknown"));
    let _ = writeln!(
        out,
        "Each mutation gets the same run budget, {} runs, on each side in each of {} round(s): round k sweeps seeds k·{}..(k+1)·{} of the default scenario, and runs `explore --keep-going --seed {}+k`. Caught and per 1000 are pooled over the rounds. CPU to first is thread CPU summed in run order up to and including the first catching run, the median over rounds (a round that never caught counts as more than its budget; `>x`: the median round never caught). First runs: the first catching run of each round. Ratio: random's median over explore's (`>x`: random's is a lower bound, so the ratio is at least x; `<x`: explore's is, so at most x).\n",
        cfg.runs, cfg.rounds, cfg.runs, cfg.runs, cfg.seed
    );
    let _ = writeln!(out, "| mutation | random caught | random per 1000 | random median CPU s to first | random first runs | explore caught | explore per 1000 | explore median CPU s to first | explore first runs | ratio |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
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
    let (rare, common): (Vec<&Hunted>, Vec<&Hunted>) = hunts.iter().partition(|h| h.random_per_1000() < 50.0);
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
