//! The table a sweep prints, rendered from its summary alone.

use super::{failing_seeds_path, Summary, Totals, PROPERTIES};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The human summary: table of properties, faults, coverage, operations, handoffs, failing
/// seeds with repro commands. A function of the summary alone, so a merged summary prints the
/// table one sweep of its seeds prints.
pub fn render(s: &Summary) -> String {
    let t = &s.totals;
    let n = t.seeds.max(1);
    let mut out = String::new();
    run_lines(&mut out, s);
    property_and_fault_tables(&mut out, t, n);
    coverage_tables(&mut out, t, n);
    fault_flow_table(&mut out, t);
    operation_lines(&mut out, t, n);
    pause_table(&mut out, t);
    map_and_view_lines(&mut out, t);
    report_files(&mut out, s);
    failing_seeds(&mut out, s);
    out
}

/// The sweep's selection, how far it ran and why it stopped, the build and the wall clock.
fn run_lines(out: &mut String, s: &Summary) {
    let t = &s.totals;
    let b = &s.build;
    let sel = &s.selection;
    let mut seeds = format!("seeds={}", sel.seeds);
    if let Some(shard) = &sel.shard {
        let _ = write!(seeds, " shard={shard}");
    }
    if let Some(budget) = &sel.time_budget {
        let _ = write!(seeds, " time_budget={budget}");
    }
    let mut ran = if t.seeds == sel.planned { format!("{} seeds", t.seeds) } else { format!("{} of {} seeds run", t.seeds, sel.planned) };
    if let Some(signal) = &s.stopped.interrupted {
        let _ = write!(ran, ": interrupted by {signal}");
    } else if s.stopped.time_budget_spent {
        let _ = write!(ran, ": time budget spent");
    }
    if !s.stopped.abandoned.is_empty() {
        let list: Vec<String> = s.stopped.abandoned.iter().map(u64::to_string).collect();
        let _ = write!(ran, "; abandoned while running: {}", list.join(" "));
    }
    if !s.stopped.missing_shards.is_empty() {
        let _ = write!(ran, "; PARTIAL, missing shards: {}", s.stopped.missing_shards.join(", "));
    }
    let m = &s.measured;
    let _ = writeln!(out, "scenario={} mutation={} {seeds} ({ran}) jobs={}", b.scenario, b.mutation.as_deref().unwrap_or("none"), m.jobs);
    let _ = writeln!(out, "build: partmap-sim {} commit={} scenario_hash={}", b.version, b.commit.as_deref().unwrap_or("unknown"), b.scenario_hash);
    let merged = if m.merged_from.is_empty() { String::new() } else { format!(" (merged from {} summaries: the longest wall, the summed rate)", m.merged_from.len()) };
    let _ = writeln!(out, "wall={:.1}s seeds_per_s={:.1} sim_s_per_seed={:.1}{merged}", m.wall_s, m.seeds_per_s, t.sim_s_per_seed);
}

/// Violations per property, and each fault kind's count and seeds.
fn property_and_fault_tables(out: &mut String, t: &Totals, n: u64) {
    let _ = writeln!(out, "\n{:<18} {:<11} {:>10}", "property", "kind", "violations");
    for (p, kind) in PROPERTIES {
        let _ = writeln!(out, "{:<18} {:<11} {:>10}", p, kind.name(), t.violations.get(p).copied().unwrap_or(0));
    }
    let _ = writeln!(out, "\n{:<16} {:>8} {:>10} {:>12}", "fault", "total", "per seed", "seeds with");
    for (k, v) in &t.faults {
        let seeds = t.seeds_with_fault.get(k).copied().unwrap_or(0);
        let _ = writeln!(out, "{:<16} {:>8} {:>10.2} {:>7} ({:.0}%)", k, v, *v as f64 / n as f64, seeds, 100.0 * seeds as f64 / n as f64);
    }
}

/// The coverage situations on how many seeds (and those never hit), then the goals table.
fn coverage_tables(out: &mut String, t: &Totals, n: u64) {
    let _ = writeln!(out, "\n{:<30} {:>12}  situation", "coverage", "seeds with");
    for (k, what) in crate::measure::coverage::SITUATIONS {
        let seeds = t.coverage_seeds.get(k).copied().unwrap_or(0);
        let _ = writeln!(out, "{:<30} {:>6} ({:>3.0}%)  {}", k, seeds, 100.0 * seeds as f64 / n as f64, what);
    }
    let never: Vec<&str> = crate::measure::coverage::SITUATIONS.iter().map(|(k, _)| *k).filter(|k| t.coverage_seeds.get(*k).copied().unwrap_or(0) == 0).collect();
    if !never.is_empty() {
        let _ = writeln!(out, "never hit: {}", never.join(", "));
    }
    let _ = writeln!(out, "\n{}", goals_table(&t.goal_seeds, n));
}

/// Per fault kind and flow in flight, on how many seeds they met (and the pairs that never
/// met); nothing when no flow was ever in flight during a fault.
fn fault_flow_table(out: &mut String, t: &Totals) {
    let flows: Vec<&str> = crate::measure::coverage::FLOWS.iter().copied().filter(|f| t.fault_flow_seeds.values().any(|m| m.contains_key(*f))).collect();
    if !flows.is_empty() {
        let _ = write!(out, "\n{:<30}", "fault kind x flow in flight");
        for f in &flows {
            let _ = write!(out, " {f:>9}");
        }
        let _ = writeln!(out, "   (seeds)");
        let mut never = Vec::new();
        for kind in t.faults.keys() {
            let _ = write!(out, "{kind:<30}");
            for f in &flows {
                let n = t.fault_flow_seeds.get(kind).and_then(|m| m.get(*f)).copied().unwrap_or(0);
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
}

/// Crash-and-network-fault seeds, operation counts, client-visible unavailability, and the
/// splits and merges committed.
fn operation_lines(out: &mut String, t: &Totals, n: u64) {
    let both = t.seeds_with_server_crash_and_partition;
    let _ = writeln!(out, "seeds with a server crash and a network fault: {both} ({:.0}%)", 100.0 * both as f64 / n as f64);
    let o = &t.ops;
    let _ = writeln!(
        out,
        "\noperations: {} ({:.0} per seed): appends ok={} failed={} unknown={}; reads ok={} failed={}; failed at once as MapUnavailable: {}; shed (not started in time, never sent): {}",
        o.total(), o.total() as f64 / n as f64, o.appends_ok, o.appends_failed, o.appends_unknown, o.reads_ok, o.reads_failed, o.unavailable, o.shed
    );
    let (p50, max) = t.unavailable_ms_p50_max;
    let _ = writeln!(out, "client-visible unavailability (per seed, the longest stretch with no append acknowledged): p50 {p50} ms, max {max} ms");
    if !t.reshapes.is_empty() {
        let _ = writeln!(out, "\n{:<18} {:>8} {:>10} {:>12}", "split / merge", "total", "per seed", "seeds with");
        for (k, v) in &t.reshapes {
            let seeds = t.seeds_with_reshape.get(k).copied().unwrap_or(0);
            let _ = writeln!(out, "{:<18} {:>8} {:>10.2} {:>7} ({:.0}%)", k, v, *v as f64 / n as f64, seeds, 100.0 * seeds as f64 / n as f64);
        }
        let both = t.seeds_with_split_and_merge;
        let _ = writeln!(out, "seeds with a split and a merge committed: {both} ({:.0}%)", 100.0 * both as f64 / n as f64);
    }
}

/// The handoffs' write pauses per strategy and range size, and the superseded handoffs.
fn pause_table(out: &mut String, t: &Totals) {
    if !t.pauses.is_empty() {
        let _ = writeln!(out, "\nhandoffs (planned moves the map published): write pause in ms as p50 / p99 / max; bytes copied");
        let _ = writeln!(out, "(clients away from moves: in each handoff's run, the longest gap between acknowledged appends to the same keys with no move's pause in it, the baseline of \"at the clients\")");
        let _ = writeln!(out, "{:<14} {:<9} {:>8} {:>6}  {:<26} {:<32} {:<26} {:>14} {:>16}", "strategy", "range", "handoffs", "seeds", "at the servers", "at the clients (n)", "clients away from moves", "before, p50", "during, p50/max");
        for f in &t.pauses {
            let ms = |v: [f64; 3]| format!("{:.1} / {:.1} / {:.1}", v[0], v[1], v[2]);
            let _ = writeln!(
                out,
                "{:<14} {:<9} {:>8} {:>6}  {:<26} {:<32} {:<26} {:>14} {:>16}",
                f.strategy, f.size, f.handoffs, f.seeds, ms(f.server_ms), format!("{} ({})", ms(f.client_ms), f.client_handoffs), ms(f.client_baseline_ms),
                format!("{:.0} B", f.precopy_bytes_p50), format!("{:.0} / {:.0} B", f.tail_bytes[0], f.tail_bytes[1])
            );
        }
    }
    if t.superseded_handoffs > 0 {
        let _ = writeln!(out, "{:<14} {:<9} {:>8}  (the target served, but the map never published it: the range failed over or the move rolled back; not in the figures above)", "superseded", "all", t.superseded_handoffs);
    }
}

/// Map versions durable but never announced, and views that disagreed.
fn map_and_view_lines(out: &mut String, t: &Totals) {
    let (versions, seeds) = t.unannounced_versions;
    let _ = writeln!(out, "\nmap versions durable at lock-1 but never announced (judged from its log): {versions} on {seeds} seeds");
    if !t.views_disagreeing.is_empty() {
        let parts: Vec<String> = t.views_disagreeing.iter().map(|(p, n)| format!("{p} on {n} seeds")).collect();
        let _ = writeln!(out, "views that disagreed (one violated, another not): {}", parts.join(", "));
    }
}

/// Where the summary, failing seeds, JUnit report and logs were written, errors writing them,
/// and, when nothing failed, the all-as-expected line.
fn report_files(out: &mut String, s: &Summary) {
    let t = &s.totals;
    let b = &s.build;
    let _ = writeln!(out);
    if let Some(p) = &s.json_path {
        let written = !s.report_errors.iter().any(|e| e.starts_with(&format!("{}:", p.display())));
        let _ = writeln!(out, "summary: {}{}", p.display(), if written { "" } else { " (NOT WRITTEN: see the error below)" });
        if written && t.failing > 0 {
            let _ = writeln!(out, "failing seeds (a --seeds-file): {}", failing_seeds_path(p).display());
        }
    }
    if let Some(p) = &s.junit_path {
        let _ = writeln!(out, "junit: {}", p.display());
    }
    if let Some(dir) = s.logs_dir.as_ref().filter(|_| t.failing > 0) {
        let _ = writeln!(out, "failing seeds' logs: {}", dir.display());
    }
    for e in &s.report_errors {
        let _ = writeln!(out, "ERROR: could not write report {e}");
    }
    if t.failing == 0 && s.report_errors.is_empty() {
        let stop = if s.stopped.interrupted.is_some() || s.stopped.time_budget_spent { " before the sweep stopped" } else { "" };
        let partial = if s.stopped.missing_shards.is_empty() { String::new() } else { format!(" (PARTIAL: the seeds of shards {} did not run here)", s.stopped.missing_shards.join(", ")) };
        let _ = writeln!(out, "\nall {} seeds as expected ({:?}){stop}{partial}", t.seeds, b.expected);
    }
}

/// Each failing seed: its outcome or harness crash, its violations and its repro command.
fn failing_seeds(out: &mut String, s: &Summary) {
    let b = &s.build;
    for f in s.failing() {
        match &f.panic {
            Some(msg) => {
                let _ = writeln!(out, "\nseed {}: HARNESS CRASH: {msg}", f.seed);
            }
            None => {
                let _ = writeln!(out, "\nseed {}: {:?} (expected {:?})", f.seed, f.outcome, b.expected);
                for (p, e) in f.violations() {
                    let _ = writeln!(out, "  {p}: {e}");
                }
            }
        }
        let _ = writeln!(out, "  repro: {}", f.repro);
    }
}


/// The goals table of a sweep: every goal of [`crate::measure::goals::registry`] that is not a coverage
/// situation (those have their own table), on how many of `n` seeds and the first seed, then
/// the goals never reached.
pub fn goals_table(goal_seeds: &BTreeMap<String, (u64, u64)>, n: u64) -> String {
    let mut out = format!("{:<34} {:>12} {:>11}  goal", "goal", "seeds with", "first seed");
    let mut never = Vec::new();
    for (k, what) in crate::measure::goals::registry() {
        match goal_seeds.get(k) {
            Some((seeds, first)) => {
                if !crate::measure::coverage::SITUATIONS.iter().any(|(s, _)| *s == k) {
                    out.push_str(&format!("\n{:<34} {:>6} ({:>3.0}%) {:>11}  {}", k, seeds, 100.0 * *seeds as f64 / n.max(1) as f64, first, what));
                }
            }
            None => never.push(k),
        }
    }
    if !never.is_empty() {
        out.push_str(&format!("\ngoals never reached: {}", never.join(", ")));
    }
    out
}
