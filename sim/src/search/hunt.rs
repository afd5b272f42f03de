//! `partmap-sim hunt`: the benchmark of the search. For each named mutation (or `--only`), on
//! the default scenario and in one process, a plain random sweep (seeds 0..N) and a guided
//! search ([`crate::search::explore`], `--keep-going`) each get the same run budget; the table gives,
//! for each, the runs that caught the mutation, the CPU seconds to the first catch, the catches
//! per 1,000 runs, and the ratio of random's CPU to first catch over explore's. CPU is each
//! run's thread CPU time, summed in run order, so the figures do not depend on what else the
//! machine does. Both searches see the mutation only through the runs.

use crate::search::explore::{explore, ExploreConfig};
use crate::run::{run_seed, RunOptions, RunOutcome};
use partmap::config::Mutation;
use std::fmt::Write as _;

/// One search's figures.
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
}

/// One mutation's hunt.
#[derive(Clone, Debug)]
pub struct Hunted {
    /// The mutation.
    pub mutation: Mutation,
    /// The random sweep.
    pub random: Search,
    /// The guided search.
    pub explore: Search,
}

/// A random sweep of `base` (its mutation on) over seeds 0..runs.
pub fn random_search(base: &RunOptions, runs: u64) -> Search {
    let mut s = Search::default();
    for seed in 0..runs {
        let opts = RunOptions { seed, ..base.clone() };
        let from = crate::cpu::thread_cpu_ns();
        let caught = match std::panic::catch_unwind(|| run_seed(&opts)) {
            Ok(r) => matches!(r.outcome(), RunOutcome::SafetyViolation | RunOutcome::LivenessFailure),
            Err(_) => true,
        };
        s.cpu_s += (crate::cpu::thread_cpu_ns() - from) as f64 / 1e9;
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

/// Hunt every mutation of `mutations` on `base`'s scenario, `jobs` mutations at a time (each
/// on one thread); results in `mutations` order. `echo` gets a line per finished mutation.
pub fn hunt(base: &RunOptions, mutations: &[Mutation], runs: u64, seed: u64, jobs: usize, echo: &(dyn Fn(&str) + Sync)) -> Result<Vec<Hunted>, String> {
    let hunts = crate::search::workers::in_order(mutations, jobs, |_, &m| {
        let opts = RunOptions { mutation: Some(m), ..base.clone() };
        let random = random_search(&opts, runs);
        let result = guided_search(&opts, runs, seed).map(|explore| Hunted { mutation: m, random, explore });
        if let Ok(h) = &result {
            echo(&row(h));
        }
        result
    });
    hunts.into_iter().collect()
}

fn cpu(s: &Search) -> String {
    s.cpu_to_first_s.map_or("-".into(), |c| format!("{c:.2}"))
}

/// The ratio of random's CPU to first catch over explore's (`>1`: explore is faster); when
/// one side never caught, its whole budget stands in, marked `>`.
pub fn ratio(h: &Hunted) -> String {
    match (h.random.cpu_to_first_s, h.explore.cpu_to_first_s) {
        (Some(r), Some(e)) => format!("{:.2}", r / e.max(1e-9)),
        (None, Some(e)) => format!(">{:.2}", h.random.cpu_s / e.max(1e-9)),
        (Some(r), None) => format!("<{:.2}", r / h.explore.cpu_s.max(1e-9)),
        (None, None) => "-".into(),
    }
}

/// One row of the table.
pub fn row(h: &Hunted) -> String {
    let (r, e) = (&h.random, &h.explore);
    format!(
        "| {} | {}/{} | {} | {:.1} | {}/{} | {} | {:.1} | {} |",
        h.mutation.name(), r.catches, r.runs, cpu(r), r.per_1000(), e.catches, e.runs, cpu(e), e.per_1000(), ratio(h)
    )
}

/// The table as markdown, with the command and build that produced it.
pub fn render(hunts: &[Hunted], command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Hunt: random sweep against guided exploration, default scenario\n");
    let _ = writeln!(out, "Produced by `{command}` at commit {}.", option_env!("PARTMAP_COMMIT").unwrap_or("unknown"));
    let _ = writeln!(out, "Each mutation gets the same run budget twice: seeds 0..N of a plain sweep, and N runs of `explore --keep-going`. CPU is thread CPU time summed in run order up to and including the first catching run. Ratio: random's CPU to first catch over explore's (`>x`: random never caught; its whole budget over explore's CPU to first catch).\n");
    let _ = writeln!(out, "| mutation | random caught | random CPU s to first | random per 1000 | explore caught | explore CPU s to first | explore per 1000 | ratio |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for h in hunts {
        let _ = writeln!(out, "{}", row(h));
    }
    let (rc, ec): (f64, f64) = hunts.iter().fold((0.0, 0.0), |(a, b), h| (a + h.random.cpu_s, b + h.explore.cpu_s));
    let (rn, en): (u64, u64) = hunts.iter().fold((0, 0), |(a, b), h| (a + h.random.runs, b + h.explore.runs));
    let _ = writeln!(out, "\nCPU per run: random {:.4} s, explore {:.4} s (explore/random {:.3}).", rc / rn.max(1) as f64, ec / en.max(1) as f64, (ec / en.max(1) as f64) / (rc / rn.max(1) as f64).max(1e-12));
    let rare: Vec<&Hunted> = hunts.iter().filter(|h| h.random.per_1000() < 50.0).collect();
    let mut speedups: Vec<f64> = rare.iter().filter_map(|h| match (h.random.cpu_to_first_s, h.explore.cpu_to_first_s) {
        (Some(r), Some(e)) => Some(r / e.max(1e-9)),
        (None, Some(e)) => Some(h.random.cpu_s / e.max(1e-9)),
        _ => None,
    }).collect();
    speedups.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    if !speedups.is_empty() {
        let median = speedups[speedups.len() / 2];
        let _ = writeln!(out, "Mutations random catches on fewer than 5% of seeds: {}; median CPU-to-first-catch ratio over those explore caught: {median:.2} (at least, where random never caught).", rare.len());
    }
    out
}
