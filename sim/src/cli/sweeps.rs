//! `sweep` and `merge`: many seeds of one scenario, and the summaries of its shards joined.

use partmap_sim::run::RunOptions;
use partmap_sim::sweep::seeds::{read_seeds_file, SeedSelection, Source};
use partmap_sim::sweep::summary::{self, Summary};
use partmap_sim::sweep::{self, Stop, SweepConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use super::*;

/// `sweep`: many seeds of one scenario on worker threads; the summary, the table, the failing seeds' logs.
pub fn sweep(args: SweepArgs) -> ExitCode {
    let SweepArgs { seeds, seeds_file, shard, time_budget, junit, scenario, jobs, mutation, report_dir, require_goal } = args;
    if let Err(e) = sweep::check_report_dir(&report_dir) {
        return usage(e);
    }
    if let Some(bad) = require_goal.iter().find(|g| !partmap_sim::measure::goals::is_goal(g)) {
        eprintln!("error: --require-goal: unknown goal `{bad}`; `partmap-sim goals` lists them");
        return ExitCode::from(64);
    }
    let (scenario, scenario_label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let source = match (seeds, seeds_file) {
        (Some((first, end)), _) => Source::Range { first, end },
        (None, Some(path)) => match read_seeds_file(&path) {
            Ok(seeds) => Source::File { path: path.display().to_string(), seeds },
            Err(e) => {
                eprintln!("error: --seeds-file {e}");
                return ExitCode::from(64);
            }
        },
        (None, None) => unreachable!("clap requires --seeds or --seeds-file"),
    };
    let selection = SeedSelection { source, shard };
    let base = RunOptions { seed: 0, scenario, scenario_label, mutation: mutation.map(|m| m.first), also_mutation: mutation.and_then(|m| m.also), trace: false, echo_header: false };
    let cfg = SweepConfig { jobs: jobs as usize, report_dir, junit, time_budget, progress: true };
    let stop = Stop::new();
    let _signals = match stop.on_signals() {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    match sweep::run_sweep(&base, &selection, &cfg, &stop) {
        Ok(summary) => {
            print!("{}", sweep::render(&summary));
            let missed: Vec<&String> = require_goal.iter().filter(|g| !summary.totals.goal_seeds.contains_key(g.as_str())).collect();
            for g in &missed {
                println!("REQUIRED GOAL NEVER REACHED: {g}");
            }
            if !missed.is_empty() && summary.exit_code() == 0 {
                return ExitCode::from(1);
            }
            ExitCode::from(summary.exit_code() as u8)
        }
        Err(e) => {
            eprintln!("error: {e}; no seed was run");
            ExitCode::from(3)
        }
    }
}

/// `merge`: the summaries of several sweeps (the shards of one) joined into one.
pub fn merge(args: MergeArgs) -> ExitCode {
    let MergeArgs { summaries, out, junit, allow_partial } = args;
    // The report files first, before any summary is read (exit 64 for a folder, 3 for
    // a place that cannot be written, as sweep does for its --report-dir).
    let check = |path: &std::path::Path, flag: &str, example: &str| -> Result<(), ExitCode> {
        let fail = |code: u8| move |e: String| {
            eprintln!("error: {e}; nothing was merged");
            ExitCode::from(code)
        };
        sweep::check_not_folder(path, flag, example).map_err(fail(64))?;
        sweep::check_file_writable(path, flag).map_err(fail(3))
    };
    for (path, flag, example) in [(&out, "--out", "reports/merged.json"), (&junit, "--junit", "reports/junit.xml")] {
        if let Some(Err(code)) = path.as_deref().map(|p| check(p, flag, example)) {
            return code;
        }
    }
    let mut inputs = Vec::new();
    for path in &summaries {
        match Summary::read(path) {
            Ok(s) => inputs.push((path.display().to_string(), s)),
            Err(e) => return usage(e),
        }
    }
    let shards = summary::check_shards(&inputs);
    let refuse_shards = |shards: &summary::ShardCheck| {
        let hint = if shards.duplicate.is_empty() { "; give every shard's summary, or --allow-partial to merge these alone (the summary then says it is partial)" } else { "; give each shard's summary once" };
        eprintln!("error: {}{hint}", shards.problem());
        ExitCode::from(64)
    };
    let mut merged = match summary::merge(inputs) {
        Ok(m) => m,
        // A shard given twice shows as its seeds given twice: name the shard.
        Err(_) if !shards.duplicate.is_empty() => return refuse_shards(&shards),
        Err(e) => return usage(e),
    };
    if !shards.duplicate.is_empty() || (!shards.missing.is_empty() && !allow_partial) {
        return refuse_shards(&shards);
    }
    let out = out.unwrap_or_else(|| {
        let b = &merged.build;
        let mutation = b.mutation.as_ref().map_or(String::new(), |m| format!("-{}", m.replace(',', "+")));
        PathBuf::from("reports").join(format!("sweep-{}{mutation}-merged.json", sweep::scenario_stem(&b.scenario)))
    });
    if let Err(code) = check(&out, "--out", "reports/merged.json") {
        return code;
    }
    if let Err(e) = merged.write(&out) {
        merged.report_errors.push(e);
    }
    merged.json_path = Some(out);
    if let Some(junit) = junit {
        match partmap_sim::sweep::junit::write(&merged, &junit) {
            Ok(()) => merged.junit_path = Some(junit),
            Err(e) => merged.report_errors.push(e),
        }
    }
    print!("{}", summary::render(&merged));
    ExitCode::from(merged.exit_code() as u8)
}
