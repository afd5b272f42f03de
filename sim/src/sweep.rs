//! Many seeds of one scenario, run in parallel (one madsim runtime per seed per worker thread),
//! with a progress bar, a summary table, a JSON summary under `reports/`, the log of every
//! failing seed, and the exact command that reproduces each failure.

use crate::run::{run_seed, RunOptions, RunOutcome};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Every property with its kind, in report order.
pub const PROPERTIES: [(&str, &str); 6] = [
    ("single_writer", "always"),
    ("no_lost_append", "always"),
    ("reads_consistent", "always"),
    ("map_tiles", "always"),
    ("manager_exclusive", "always"),
    ("liveness", "eventually"),
];

/// One seed's result, kept for the summary.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SeedResult {
    /// The seed.
    pub seed: u64,
    /// Its outcome.
    pub outcome: RunOutcome,
    /// Whether that outcome is what the scenario expects.
    pub as_expected: bool,
    /// Violated properties with their evidence.
    pub violations: Vec<(String, String)>,
    /// Faults injected by kind.
    pub faults: BTreeMap<String, u64>,
    /// Client operations.
    pub ops: crate::run::OpCounts,
    /// Simulated ms.
    pub sim_ms: u64,
    /// Client-visible unavailability, ms ([`crate::run::unavailable_ms`]).
    pub unavailable_ms: u64,
    /// Coverage situations hit, with counts.
    pub coverage: BTreeMap<String, u64>,
    /// Trace hash.
    pub trace_hash: String,
    /// Committed planned moves with their pause figures.
    pub handoffs: Vec<crate::handoff::Handoff>,
    /// Splits and merges committed and aborted.
    pub reshapes: BTreeMap<String, u64>,
    /// Handoffs a target reported that no map version published (superseded).
    pub superseded_handoffs: u64,
    /// Durable map versions no `map_commit` announced (judged from the authority's log).
    pub unannounced_versions: u64,
    /// Properties whose views disagreed on this seed (one violated, another not).
    pub views_disagreeing: Vec<String>,
    /// Fault kinds injected while each flow was in flight.
    pub fault_flows: Vec<(String, String)>,
}

/// Write-pause figures of the handoffs of one strategy and range-size class, over a sweep.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PauseFigures {
    /// `pre-copy` or `stop-and-copy`.
    pub strategy: String,
    /// `all`, `<= 1 MiB` or `> 1 MiB` (the range's payload bytes at the cutover).
    pub size: String,
    /// Handoffs counted.
    pub handoffs: u64,
    /// Pause at the servers (source paused until target serves), ms: p50, p99, max.
    pub server_ms: [f64; 3],
    /// Longest gap between acknowledged appends around the pause, ms: p50, p99, max (over the
    /// handoffs where a client kept trying; `client_handoffs` of them).
    pub client_ms: [f64; 3],
    /// Handoffs with a client figure.
    pub client_handoffs: u64,
    /// Payload bytes copied before the pause, p50.
    pub precopy_bytes_p50: f64,
    /// Payload bytes copied during the pause, p50 and max.
    pub tail_bytes: [f64; 2],
}

/// Pause figures per strategy, over all handoffs and split at 1 MiB of range size.
pub fn pause_figures(handoffs: &[&crate::handoff::Handoff]) -> Vec<PauseFigures> {
    use crate::handoff::percentile;
    const MIB: u64 = 1 << 20;
    let mut out = Vec::new();
    for (_, strategy) in partmap::map::Strategy::ALL {
        for size in ["all", "<= 1 MiB", "> 1 MiB"] {
            let hs: Vec<&&crate::handoff::Handoff> = handoffs
                .iter()
                .filter(|h| h.strategy == strategy && (size == "all" || (size == "> 1 MiB") == (h.bytes > MIB)))
                .collect();
            if hs.is_empty() {
                continue;
            }
            let three = |v: &[f64]| [percentile(v, 0.5).unwrap_or(0.0), percentile(v, 0.99).unwrap_or(0.0), percentile(v, 1.0).unwrap_or(0.0)];
            let server: Vec<f64> = hs.iter().map(|h| h.server_pause_ms).collect();
            let client: Vec<f64> = hs.iter().filter_map(|h| h.client_gap_ms).collect();
            let pre: Vec<f64> = hs.iter().map(|h| h.precopy_bytes as f64).collect();
            let tail: Vec<f64> = hs.iter().map(|h| h.tail_bytes as f64).collect();
            out.push(PauseFigures {
                strategy: strategy.to_string(),
                size: size.to_string(),
                handoffs: hs.len() as u64,
                server_ms: three(&server),
                client_ms: three(&client),
                client_handoffs: client.len() as u64,
                precopy_bytes_p50: percentile(&pre, 0.5).unwrap_or(0.0),
                tail_bytes: [percentile(&tail, 0.5).unwrap_or(0.0), percentile(&tail, 1.0).unwrap_or(0.0)],
            });
        }
    }
    out
}

/// The summary of a sweep (also written as JSON).
#[derive(Debug, serde::Serialize)]
pub struct Summary {
    /// Scenario label.
    pub scenario: String,
    /// Mutation, if any.
    pub mutation: Option<String>,
    /// First seed.
    pub first_seed: u64,
    /// One past the last seed.
    pub end_seed: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Wall-clock seconds of the sweep (a measurement, never an input to a run).
    pub wall_s: f64,
    /// Seeds per wall-clock second.
    pub seeds_per_s: f64,
    /// Violations per property (seeds violating it).
    pub violations: BTreeMap<String, u64>,
    /// Faults injected per kind, summed over seeds.
    pub faults: BTreeMap<String, u64>,
    /// Seeds with at least one fault of each kind.
    pub seeds_with_fault: BTreeMap<String, u64>,
    /// Seeds with at least one server crash and at least one network fault (isolate, split,
    /// one_way or delay).
    pub seeds_with_server_crash_and_partition: u64,
    /// Seeds that hit each coverage situation (every situation listed, zeros included).
    pub coverage_seeds: BTreeMap<String, u64>,
    /// Operations summed over seeds.
    pub ops: crate::run::OpCounts,
    /// Mean simulated seconds per seed.
    pub sim_s_per_seed: f64,
    /// Client-visible unavailability per seed ([`crate::run::unavailable_ms`]), ms: p50 and
    /// max over the seeds.
    pub unavailable_ms_p50_max: (u64, u64),
    /// Write-pause figures of the committed planned moves, per strategy and range size.
    pub pauses: Vec<PauseFigures>,
    /// Splits and merges committed and aborted, summed over seeds.
    pub reshapes: BTreeMap<String, u64>,
    /// Seeds with at least one of each kind of `reshapes`.
    pub seeds_with_reshape: BTreeMap<String, u64>,
    /// Seeds that committed at least one split and at least one merge.
    pub seeds_with_split_and_merge: u64,
    /// Handoffs superseded (the target served, no map version published it), in all.
    pub superseded_handoffs: u64,
    /// Durable map versions no event announced, in all, and the seeds that had one.
    pub unannounced_versions: (u64, u64),
    /// Per property, the seeds on which its views disagreed.
    pub views_disagreeing: BTreeMap<String, u64>,
    /// Seeds where each fault kind was injected while each flow was in flight:
    /// fault kind → flow → seeds.
    pub fault_flow_seeds: BTreeMap<String, BTreeMap<String, u64>>,
    /// Seeds whose outcome was not the expected one.
    pub failing: Vec<SeedResult>,
    /// Seeds that crashed the harness, with the panic message.
    pub crashed: Vec<(u64, String)>,
    /// Where the JSON summary went.
    pub json_path: String,
    /// Report files that could not be written, with the error.
    pub report_errors: Vec<String>,
}

impl Summary {
    /// The exit code: 3 if the harness crashed on any seed or could not write a report, else 1 if any seed broke safety
    /// unexpectedly, else 2 for a liveness failure, else 0.
    pub fn exit_code(&self) -> i32 {
        let any = |o: RunOutcome| self.failing.iter().any(|f| f.outcome == o);
        if !self.crashed.is_empty() || !self.report_errors.is_empty() {
            3
        } else if any(RunOutcome::SafetyViolation) {
            1
        } else if any(RunOutcome::LivenessFailure) {
            2
        } else if !self.failing.is_empty() {
            1 // a violation was expected and not found
        } else {
            0
        }
    }
}

/// The command that reproduces `seed`.
pub fn repro_command(opts: &RunOptions, seed: u64) -> String {
    let mut cmd = format!("cargo run --release -p partmap-sim -- run --seed {seed}");
    if !opts.scenario_label.ends_with("(built-in)") {
        let _ = write!(cmd, " --scenario {}", opts.scenario_label);
    }
    if let Some(m) = opts.mutation {
        let _ = write!(cmd, " --mutation {}", m.name());
    }
    cmd
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "panic".into())
}

/// Run seeds `first..end` with `jobs` worker threads. `base` gives the scenario and mutation
/// (its seed is ignored). Failing seeds' event logs go to `report_dir/failing/`, the JSON
/// summary to `report_dir/sweep-<name>.json`.
pub fn sweep(base: &RunOptions, first: u64, end: u64, jobs: usize, report_dir: &PathBuf, progress: bool) -> Summary {
    let started = Instant::now();
    let next = AtomicU64::new(first);
    let results: Mutex<Vec<SeedResult>> = Mutex::new(Vec::new());
    let crashed: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    use std::io::IsTerminal;
    let progress_on_tty = progress && std::io::stderr().is_terminal();
    let done_count = AtomicU64::new(0);
    let bar = if progress_on_tty { indicatif::ProgressBar::new(end - first) } else { indicatif::ProgressBar::hidden() };
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} seeds {per_sec} eta {eta} {msg}").expect("template"));
    let failing_dir = report_dir.join("failing");
    let stem = report_stem(base);
    let report_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    // Logs of an earlier sweep of the same scenario would be mistaken for this one's.
    if let Ok(entries) = std::fs::read_dir(&failing_dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&format!("{stem}-seed-")) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= end {
                    return;
                }
                let opts = RunOptions { seed, trace: false, echo_header: false, ..base.clone() };
                match catch_unwind(AssertUnwindSafe(|| run_seed(&opts))) {
                    Ok(report) => {
                        let outcome = report.outcome();
                        let as_expected = outcome.matches(opts.scenario.expect.outcome);
                        let violations: Vec<(String, String)> =
                            report.verdicts.iter().filter_map(|v| v.violation.clone().map(|e| (v.property.to_string(), e))).collect();
                        if !as_expected {
                            let path = failing_dir.join(format!("{stem}-seed-{seed}.log"));
                            let timeline = failing_dir.join(format!("{stem}-seed-{seed}.html"));
                            let text = failing_log(&report, &opts, &violations, &timeline);
                            let html = crate::timeline::render(&report, &opts);
                            let written = std::fs::create_dir_all(&failing_dir).and_then(|_| std::fs::write(&path, text)).map_err(|e| format!("{}: {e}", path.display()));
                            let written = written.and_then(|_| std::fs::write(&timeline, html).map_err(|e| format!("{}: {e}", timeline.display())));
                            if let Err(e) = written {
                                report_errors.lock().expect("report errors").push(e);
                            }
                            bar.set_message(format!("seed {seed} FAILED"));
                        }
                        let r = SeedResult {
                            seed,
                            outcome,
                            as_expected,
                            violations,
                            faults: report.faults.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                            ops: report.ops.clone(),
                            sim_ms: report.sim_ms,
                            unavailable_ms: report.unavailable_ms,
                            coverage: report.coverage.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                            trace_hash: format!("{:016x}", report.trace_hash),
                            handoffs: report.handoffs.clone(),
                            reshapes: report.reshapes.clone(),
                            superseded_handoffs: report.superseded_handoffs.len() as u64,
                            unannounced_versions: report.unannounced_versions,
                            views_disagreeing: {
                                let mut d: Vec<String> = report.views.iter().filter(|v| v.violation.is_some()).map(|v| v.property.to_string()).filter(|p| report.views.iter().any(|w| w.property == p && w.violation.is_none())).collect();
                                d.dedup();
                                d
                            },
                            fault_flows: report.fault_flows.iter().map(|(k, f)| (k.clone(), f.to_string())).collect(),
                        };
                        results.lock().expect("results").push(r);
                    }
                    Err(p) => crashed.lock().expect("crashed").push((seed, panic_message(&*p))),
                }
                bar.inc(1);
                if !progress_on_tty {
                    let done = done_count.fetch_add(1, Ordering::SeqCst) + 1;
                    let total = end - first;
                    if progress && (done * 10 / total != (done - 1) * 10 / total || done == total) {
                        eprintln!("{done}/{total} seeds");
                    }
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|r| r.seed);
    let mut crashed = crashed.into_inner().expect("crashed");
    crashed.sort();
    let wall_s = started.elapsed().as_secs_f64();
    let mut s = Summary {
        scenario: base.scenario_label.clone(),
        mutation: base.mutation.map(|m| m.name().to_string()),
        first_seed: first,
        end_seed: end,
        jobs,
        wall_s,
        seeds_per_s: (end - first) as f64 / wall_s.max(1e-9),
        violations: PROPERTIES.iter().map(|(p, _)| p).map(|p| (p.to_string(), 0)).collect(),
        faults: BTreeMap::new(),
        seeds_with_fault: BTreeMap::new(),
        seeds_with_server_crash_and_partition: 0,
        coverage_seeds: crate::coverage::SITUATIONS.iter().map(|(k, _)| (k.to_string(), 0)).collect(),
        ops: Default::default(),
        sim_s_per_seed: 0.0,
        unavailable_ms_p50_max: (0, 0),
        pauses: Vec::new(),
        reshapes: BTreeMap::new(),
        seeds_with_reshape: BTreeMap::new(),
        seeds_with_split_and_merge: 0,
        superseded_handoffs: 0,
        unannounced_versions: (0, 0),
        views_disagreeing: BTreeMap::new(),
        fault_flow_seeds: BTreeMap::new(),
        failing: Vec::new(),
        crashed,
        json_path: String::new(),
        report_errors: Vec::new(),
    };
    for r in &results {
        let partitioned = ["isolate", "split", "one_way", "delay"].iter().any(|k| r.faults.contains_key(*k));
        if partitioned && r.faults.contains_key("crash_server") {
            s.seeds_with_server_crash_and_partition += 1;
        }
        for k in r.coverage.keys() {
            *s.coverage_seeds.entry(k.clone()).or_default() += 1;
        }
        for (p, _) in &r.violations {
            *s.violations.entry(p.clone()).or_default() += 1;
        }
        for (k, v) in &r.faults {
            *s.faults.entry(k.clone()).or_default() += v;
            *s.seeds_with_fault.entry(k.clone()).or_default() += 1;
        }
        s.ops.appends_ok += r.ops.appends_ok;
        s.ops.appends_failed += r.ops.appends_failed;
        s.ops.appends_unknown += r.ops.appends_unknown;
        s.ops.reads_ok += r.ops.reads_ok;
        s.ops.reads_failed += r.ops.reads_failed;
        s.ops.unavailable += r.ops.unavailable;
        s.sim_s_per_seed += r.sim_ms as f64 / 1000.0;
        for (k, v) in &r.reshapes {
            *s.reshapes.entry(k.clone()).or_default() += v;
            *s.seeds_with_reshape.entry(k.clone()).or_default() += 1;
        }
        for (kind, flow) in &r.fault_flows {
            *s.fault_flow_seeds.entry(kind.clone()).or_default().entry(flow.clone()).or_default() += 1;
        }
        if r.reshapes.contains_key("split_committed") && r.reshapes.contains_key("merge_committed") {
            s.seeds_with_split_and_merge += 1;
        }
        s.superseded_handoffs += r.superseded_handoffs;
        s.unannounced_versions.0 += r.unannounced_versions;
        s.unannounced_versions.1 += u64::from(r.unannounced_versions > 0);
        for p in &r.views_disagreeing {
            *s.views_disagreeing.entry(p.clone()).or_default() += 1;
        }
    }
    s.sim_s_per_seed /= results.len().max(1) as f64;
    let gaps: Vec<f64> = results.iter().map(|r| r.unavailable_ms as f64).collect();
    let pct = |p: f64| crate::handoff::percentile(&gaps, p).unwrap_or(0.0) as u64;
    s.unavailable_ms_p50_max = (pct(0.5), pct(1.0));
    s.pauses = pause_figures(&results.iter().flat_map(|r| r.handoffs.iter()).collect::<Vec<_>>());
    s.failing = results.into_iter().filter(|r| !r.as_expected).collect();
    s.report_errors = report_errors.into_inner().expect("report errors");
    let json_path = report_dir.join(format!("sweep-{stem}.json"));
    s.json_path = json_path.display().to_string();
    let json = serde_json::to_string_pretty(&s).expect("summary serializes");
    if let Err(e) = std::fs::create_dir_all(report_dir).and_then(|_| std::fs::write(&json_path, json)) {
        s.report_errors.push(format!("{}: {e}", json_path.display()));
    }
    s
}

/// The name reports of this sweep go under: the scenario's file stem, plus the mutation if any.
pub fn report_stem(base: &RunOptions) -> String {
    let stem = scenario_stem(&base.scenario_label);
    match base.mutation {
        Some(m) => format!("{stem}-{}", m.name()),
        None => stem,
    }
}

/// A failing seed's log: the violations and the repro command first, then where its timeline
/// is, the header (seed, knobs, drawn rates), and every event.
pub fn failing_log(report: &crate::run::RunReport, opts: &RunOptions, violations: &[(String, String)], timeline: &std::path::Path) -> String {
    let mut text = String::new();
    if violations.is_empty() {
        let _ = writeln!(text, "OUTCOME {:?} (expected {:?})", report.outcome(), opts.scenario.expect.outcome);
    }
    for (p, e) in violations {
        let _ = writeln!(text, "VIOLATION {p}: {e}");
    }
    let _ = writeln!(text, "repro: {}", repro_command(opts, opts.seed));
    let _ = writeln!(text, "timeline: {}", timeline.display());
    text.push_str(&report.header.join("\n"));
    text.push('\n');
    for ev in &report.events {
        text.push_str(&ev.render());
        text.push('\n');
    }
    text
}

/// `scenarios/failover.json` → `failover`.
pub fn scenario_stem(label: &str) -> String {
    let first = label.split_whitespace().next().unwrap_or(label);
    std::path::Path::new(first).file_stem().map_or("scenario".into(), |s| s.to_string_lossy().into_owned())
}

/// The human summary: table of properties, faults, operations, failing seeds with repro commands.
pub fn render(s: &Summary, base: &RunOptions) -> String {
    let n = (s.end_seed - s.first_seed).max(1);
    let mut out = String::new();
    let _ = writeln!(out, "scenario={} mutation={} seeds={}..{} ({} seeds) jobs={}", s.scenario, s.mutation.as_deref().unwrap_or("none"), s.first_seed, s.end_seed, n, s.jobs);
    let _ = writeln!(out, "wall={:.1}s seeds_per_s={:.1} sim_s_per_seed={:.1}", s.wall_s, s.seeds_per_s, s.sim_s_per_seed);
    let _ = writeln!(out, "\n{:<18} {:<11} {:>10}", "property", "kind", "violations");
    for (p, kind) in PROPERTIES {
        let _ = writeln!(out, "{:<18} {:<11} {:>10}", p, kind, s.violations.get(p).copied().unwrap_or(0));
    }
    let _ = writeln!(out, "\n{:<16} {:>8} {:>10} {:>12}", "fault", "total", "per seed", "seeds with");
    for (k, v) in &s.faults {
        let seeds = s.seeds_with_fault.get(k).copied().unwrap_or(0);
        let _ = writeln!(out, "{:<16} {:>8} {:>10.2} {:>7} ({:.0}%)", k, v, *v as f64 / n as f64, seeds, 100.0 * seeds as f64 / n as f64);
    }
    let _ = writeln!(out, "\n{:<30} {:>12}  situation", "coverage", "seeds with");
    for (k, what) in crate::coverage::SITUATIONS {
        let seeds = s.coverage_seeds.get(k).copied().unwrap_or(0);
        let _ = writeln!(out, "{:<30} {:>6} ({:>3.0}%)  {}", k, seeds, 100.0 * seeds as f64 / n as f64, what);
    }
    let never: Vec<&str> = crate::coverage::SITUATIONS.iter().map(|(k, _)| *k).filter(|k| s.coverage_seeds.get(*k).copied().unwrap_or(0) == 0).collect();
    if !never.is_empty() {
        let _ = writeln!(out, "never hit: {}", never.join(", "));
    }
    let flows: Vec<&str> = crate::coverage::FLOWS.iter().copied().filter(|f| s.fault_flow_seeds.values().any(|m| m.contains_key(*f))).collect();
    if !flows.is_empty() {
        let _ = write!(out, "\n{:<30}", "fault kind x flow in flight");
        for f in &flows {
            let _ = write!(out, " {f:>9}");
        }
        let _ = writeln!(out, "   (seeds)");
        let mut never = Vec::new();
        for kind in s.faults.keys() {
            let _ = write!(out, "{kind:<30}");
            for f in &flows {
                let n = s.fault_flow_seeds.get(kind).and_then(|m| m.get(*f)).copied().unwrap_or(0);
                if n == 0 {
                    never.push(format!("{kind}/{f}"));
                }
                let _ = write!(out, " {n:>9}");
            }
            let _ = writeln!(out);
        }
        if !never.is_empty() {
            let _ = writeln!(out, "never met: {}", never.join(", "));
        }
    }
    let both = s.seeds_with_server_crash_and_partition;
    let _ = writeln!(out, "seeds with a server crash and a network fault: {both} ({:.0}%)", 100.0 * both as f64 / n as f64);
    let o = &s.ops;
    let _ = writeln!(
        out,
        "\noperations: {} ({:.0} per seed): appends ok={} failed={} unknown={}; reads ok={} failed={}; failed at once as MapUnavailable: {}",
        o.total(), o.total() as f64 / n as f64, o.appends_ok, o.appends_failed, o.appends_unknown, o.reads_ok, o.reads_failed, o.unavailable
    );
    let (p50, max) = s.unavailable_ms_p50_max;
    let _ = writeln!(out, "client-visible unavailability (per seed, the longest stretch with no append acknowledged): p50 {p50} ms, max {max} ms");
    if !s.reshapes.is_empty() {
        let _ = writeln!(out, "\n{:<18} {:>8} {:>10} {:>12}", "split / merge", "total", "per seed", "seeds with");
        for (k, v) in &s.reshapes {
            let seeds = s.seeds_with_reshape.get(k).copied().unwrap_or(0);
            let _ = writeln!(out, "{:<18} {:>8} {:>10.2} {:>7} ({:.0}%)", k, v, *v as f64 / n as f64, seeds, 100.0 * seeds as f64 / n as f64);
        }
        let both = s.seeds_with_split_and_merge;
        let _ = writeln!(out, "seeds with a split and a merge committed: {both} ({:.0}%)", 100.0 * both as f64 / n as f64);
    }
    if !s.pauses.is_empty() {
        let _ = writeln!(out, "\nhandoffs (planned moves the map published): write pause in ms as p50 / p99 / max; bytes copied");
        let _ = writeln!(out, "{:<14} {:<9} {:>8}  {:<26} {:<26} {:>14} {:>16}", "strategy", "range", "handoffs", "at the servers", "at the clients (n)", "before, p50", "during, p50/max");
        for f in &s.pauses {
            let ms = |v: [f64; 3]| format!("{:.1} / {:.1} / {:.1}", v[0], v[1], v[2]);
            let _ = writeln!(
                out,
                "{:<14} {:<9} {:>8}  {:<26} {:<26} {:>14} {:>16}",
                f.strategy, f.size, f.handoffs, ms(f.server_ms), format!("{} ({})", ms(f.client_ms), f.client_handoffs),
                format!("{:.0} B", f.precopy_bytes_p50), format!("{:.0} / {:.0} B", f.tail_bytes[0], f.tail_bytes[1])
            );
        }
    }
    if s.superseded_handoffs > 0 {
        let _ = writeln!(out, "{:<14} {:<9} {:>8}  (the target served, but the map never published it: the range failed over or the move rolled back; not in the figures above)", "superseded", "all", s.superseded_handoffs);
    }
    let (versions, seeds) = s.unannounced_versions;
    let _ = writeln!(out, "\nmap versions durable at lock-1 but never announced (judged from its log): {versions} on {seeds} seeds");
    if !s.views_disagreeing.is_empty() {
        let parts: Vec<String> = s.views_disagreeing.iter().map(|(p, n)| format!("{p} on {n} seeds")).collect();
        let _ = writeln!(out, "views that disagreed (one violated, another not): {}", parts.join(", "));
    }
    let _ = writeln!(out, "\nsummary: {}", s.json_path);
    if !s.failing.is_empty() {
        let _ = writeln!(out, "failing seeds' logs: {}", std::path::Path::new(&s.json_path).with_file_name("failing").display());
    }
    for e in &s.report_errors {
        let _ = writeln!(out, "ERROR: could not write report {e}");
    }
    for (seed, msg) in &s.crashed {
        let _ = writeln!(out, "\nseed {seed}: HARNESS CRASH: {msg}\n  repro: {}", repro_command(base, *seed));
    }
    if s.failing.is_empty() && s.crashed.is_empty() && s.report_errors.is_empty() {
        let _ = writeln!(out, "\nall {n} seeds as expected ({:?})", base.scenario.expect.outcome);
    }
    for f in &s.failing {
        let _ = writeln!(out, "\nseed {}: {:?} (expected {:?})", f.seed, f.outcome, base.scenario.expect.outcome);
        for (p, e) in &f.violations {
            let _ = writeln!(out, "  {p}: {e}");
        }
        let _ = writeln!(out, "  repro: {}", repro_command(base, f.seed));
    }
    out
}
