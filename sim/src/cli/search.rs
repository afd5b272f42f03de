//! `explore`, `hunt`, `goals` and `mutants`: the search and its benchmarks.

use partmap::config::Mutation;
use partmap_sim::run::RunOptions;
use partmap_sim::sweep;
use partmap_sim::search::mutants;
use std::path::PathBuf;
use std::process::ExitCode;
use super::*;

/// `explore`: the feedback-guided search of the scenario.
pub fn explore(args: ExploreArgs) -> ExitCode {
    let ExploreArgs { scenario, seed, runs, time_budget, jobs, mutation, keep_going, shrink, corpus, report_dir } = args;
    let cfg = partmap_sim::search::explore::ExploreConfig { seed, runs, time_budget, jobs: jobs as usize, keep_going, shrink, corpus, report_dir: Some(report_dir), progress_every: 100 };
    cmd_explore(scenario, mutation, &cfg)
}

/// `hunt`: random sweep against explore, per named mutation, CPU to first catch.
pub fn hunt(args: HuntArgs) -> ExitCode {
    let HuntArgs { runs, only, seed, rounds, first_rounds, jobs, write_table, report_dir } = args;
    let cfg = partmap_sim::search::hunt::HuntConfig { runs, rounds, seed, jobs: jobs as usize, first_rounds };
    cmd_hunt(cfg, only, write_table.then_some(report_dir))
}

/// `goals`: the goals registry, one line each.
pub fn goals() -> ExitCode {
    for (name, what) in partmap_sim::measure::goals::registry() {
        println!("{name:<34} {what}");
    }
    ExitCode::SUCCESS
}

/// `mutants`: every named mutation on its scenario; each must be caught.
pub fn mutants(args: MutantsArgs) -> ExitCode {
    let MutantsArgs { seeds, rate, only, jobs, write_table, report_dir } = args;
    if let Err(e) = if write_table { sweep::check_report_dir(&report_dir) } else { Ok(()) } {
        return usage(e);
    }
    if let Some(d) = mutants::DEFENCE_IN_DEPTH.iter().find(|d| only.contains(&d.mutation)) {
        eprintln!(
            "error: --only {}: a defence-in-depth mutation, which no checker can catch (reports/mutation-testing.md); run it with `sweep --mutation {}`, or compare its traces with scripts/mutation-reach.py",
            d.mutation.name(),
            d.mutation.name()
        );
        return ExitCode::from(64);
    }
    let mut targets: Vec<mutants::Target> = mutants::TARGETS.iter().filter(|t| only.is_empty() || only.contains(&t.mutation)).copied().collect();
    if rate {
        targets = mutants::with_default_scenario(&targets);
    }
    eprintln!("hunting {} mutations with {jobs} jobs (a line as each ends)", targets.len());
    let progress = |ended: usize, of: usize, h: &Result<mutants::Hunt, String>| eprintln!("{}", mutants::progress_line(ended, of, h));
    let hunts = match mutants::hunt_all(&targets, seeds, rate, true, jobs as usize, &progress) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    let table = mutants::render(&hunts);
    print!("{table}");
    // The kept table is rewritten only when asked (clap refuses --write-table with --only).
    if !write_table {
        println!("(table not written; --write-table writes it to {})", report_dir.join("mutants.md").display());
        return if hunts.iter().filter(|h| h.own()).all(|h| h.caught()) { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    let path = report_dir.join("mutants.md");
    let args = seeds.map_or(String::new(), |n| format!(" --seeds {n}")) + if rate { " --rate" } else { "" } + " --write-table";
    let commit = option_env!("PARTMAP_COMMIT").unwrap_or("unknown (not built from a git checkout)");
    let doc = format!("# Mutations and the checkers that catch them\n\nWritten by `partmap-sim mutants{args}`, built from commit {commit}.\n\n{table}");
    if let Err(e) = std::fs::create_dir_all(&report_dir).and_then(|_| std::fs::write(&path, doc)) {
        eprintln!("error: cannot write {}: {e}", path.display());
        return ExitCode::from(3);
    }
    println!("table: {}", path.display());
    if hunts.iter().filter(|h| h.own()).all(|h| h.caught()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `explore`: load the scenario, search, print the findings and the goals never reached.
fn cmd_explore(scenario: Option<PathBuf>, mutation: Option<super::Mutations>, cfg: &partmap_sim::search::explore::ExploreConfig) -> ExitCode {
    if cfg.shrink && mutation.is_some_and(|m| m.also.is_some()) {
        return usage("--shrink: the shrinker runs one mutation; give --mutation one name, or leave --shrink out".to_string());
    }
    if let Some(dir) = &cfg.report_dir {
        if let Err(e) = sweep::check_report_dir(dir) {
            return usage(e);
        }
    }
    let (scenario, scenario_label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let base = RunOptions { seed: 0, scenario, scenario_label, mutation: mutation.map(|m| m.first), also_mutation: mutation.and_then(|m| m.also), trace: false, echo_header: false };
    let names = base.mutation.map_or("none".to_string(), |m| partmap_sim::run::mutation_names(m, base.also_mutation));
    println!("explore: scenario={} mutation={names} seed={} runs={} jobs={}", base.scenario_label, cfg.seed, cfg.runs, cfg.jobs);
    let out = match partmap_sim::search::explore::explore(&base, cfg, &mut |l| println!("{l}")) {
        Ok(out) => out,
        Err(e) => return usage(e),
    };
    let origins: Vec<String> = out.by_origin.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("explore: {} runs ({}), corpus {} entries, {} features, {} goals reached, {:.1} s CPU, {} violation(s)", out.runs, origins.join(" "), out.corpus, out.features, out.goals.len(), out.cpu_s, out.findings.len());
    let never: Vec<&str> = partmap_sim::measure::goals::registry().into_iter().map(|(n, _)| n).filter(|n| !out.goals.contains(*n)).collect();
    if !never.is_empty() {
        println!("goals never reached: {}", never.join(", "));
    }
    if out.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `hunt`: random against explore for each mutation; print (and write) the table.
fn cmd_hunt(cfg: partmap_sim::search::hunt::HuntConfig, only: Vec<Mutation>, write_to: Option<PathBuf>) -> ExitCode {
    let partmap_sim::search::hunt::HuntConfig { runs, rounds, seed, jobs, first_rounds } = cfg;
    if let Some(dir) = &write_to {
        if let Err(e) = sweep::check_report_dir(dir) {
            return usage(e);
        }
    }
    let mutations: Vec<Mutation> = if only.is_empty() { Mutation::ALL.iter().map(|(m, _)| *m).collect() } else { only.clone() };
    let base = RunOptions { seed: 0, scenario: partmap_sim::scenario::Scenario::default_swarm(), scenario_label: format!("scenarios/swarm.json{}", partmap_sim::run::BUILTIN_SUFFIX), mutation: None, also_mutation: None, trace: false, echo_header: false };
    println!("hunt: {} mutation(s), {runs} runs per search and round, {rounds} round(s) (+{first_rounds} first-catch rounds for the common ones), explorer seeds from {seed}, jobs {jobs}", mutations.len());
    let hunts = match partmap_sim::search::hunt::hunt(&base, &mutations, cfg, &|l| eprintln!("{l}")) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    let only_flags: String = only.iter().map(|m| format!(" --only {}", m.name())).collect();
    let command = format!("partmap-sim hunt --runs {runs} --rounds {rounds} --first-rounds {first_rounds} --seed {seed} --jobs {jobs}{only_flags} --write-table");
    let table = partmap_sim::search::hunt::render(&hunts, cfg, &command);
    if let Some(dir) = write_to {
        let path = dir.join("hunt.md");
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, &table)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(3);
        }
        println!("written: {}", path.display());
    }
    print!("{}", table.lines().skip_while(|l| !l.starts_with("| mutation")).map(|l| format!("{l}\n")).collect::<String>());
    ExitCode::SUCCESS
}
