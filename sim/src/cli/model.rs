//! `model`: bounded model checking of the cores ([`partmap_sim::model`]).

use super::ModelArgs;
use partmap_sim::model;
use std::process::ExitCode;

fn bad(e: String) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(64)
}

/// Run the search and print its figures; on a violation, the shortest counterexample, its
/// replay scenario and the repro line. With `--all`, the table of every configuration and
/// mutation.
pub fn model(args: ModelArgs) -> ExitCode {
    if args.all {
        return all();
    }
    let Some(name) = args.config.as_deref() else { return bad("--config: missing; name a configuration or give --all".to_string()) };
    let config = match model::config(name) {
        Ok(c) => c,
        Err(e) => return bad(e),
    };
    let (first, also) = match mutations(args.mutation.as_deref()) {
        Ok(ms) => ms,
        Err(e) => return bad(e),
    };
    for m in [first, also].into_iter().flatten() {
        if let Err(e) = model::runs(&config, m) {
            return bad(e);
        }
    }
    let b = match bounds(&args, &config) {
        Ok(b) => b,
        Err(e) => return bad(e),
    };
    let mutation = args.mutation.as_deref().unwrap_or("none");
    println!("model config={} mutation={mutation}: {}", config.name, config.about);
    println!(
        "bounds: depth {} states {} in_flight {} drops {} dups {} delays {} drift {} ppm crashes {} store_crashes {} torn_writes {} corrupts {} cuts {} horizon {} ms rounds {} standby_rounds {} appends {} urgent {} ticked {} closed_loop {}",
        b.max_depth, b.max_states, b.max_in_flight, b.max_drops, b.max_dups, b.max_delays, b.drift_ppm, b.max_crashes, b.max_store_crashes, b.torn_writes, b.max_corrupts, b.max_cuts, b.horizon_ms, b.rounds, b.standby_rounds, b.appends, b.urgent, b.ticked, b.closed_loop
    );
    let on = |x: bool| if x { "on" } else { "off" };
    let por = if b.urgent { on(b.reduce.por) } else { "n/a (applies only to urgent configurations)" };
    println!("reductions: por {por} fold {} multiset {}", on(b.reduce.fold), on(b.reduce.multiset));
    let liveness = match b.liveness {
        model::Liveness::Off => "off (--no-liveness)",
        model::Liveness::Ends => "every state where the search stops",
        model::Liveness::Every => "every state (--liveness-every-state)",
    };
    println!("liveness: {liveness}; heal: faults off, links restored, time up to {} ms on, rounds on the tick; confirmed by a search of the healed system (at most {} states)", model::live::HEAL_MS, model::live::CONFIRM_STATES);
    let report = match model::check_with(&config, first, also, b) {
        Ok(r) => r,
        Err(e) if e.starts_with("--mutation") || e.starts_with("--max-delays") => return bad(e),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    println!(
        "states explored {} unique {} depth {} over_in_flight {} cut_by_depth {} cpu {:.2} s states/s {:.0} exhausted {}",
        report.explored,
        report.unique,
        report.depth,
        report.over_in_flight,
        report.cut_by_depth,
        report.cpu_s,
        report.states_per_s(),
        if report.exhausted { "yes" } else if report.stopped_at_states { "no (state bound)" } else if report.violation.is_some() { "no (stopped at the violation)" } else { "no (depth bound)" }
    );
    if b.liveness != model::Liveness::Off {
        let l = &report.live;
        println!(
            "liveness: states healed {} live by the heal schedule {} by the confirming search {} undecided {} heal steps {} memo hits {} search states {} cpu {:.2} s",
            l.judged, l.live_by_schedule, l.live_by_search, l.undecided, l.heal_steps, l.memo_hits, l.confirm_states, l.cpu_s
        );
    }
    let per_depth: Vec<String> = report.per_depth.iter().map(|n| n.to_string()).collect();
    println!("states expanded per depth: {}", per_depth.join(" "));
    if let Some(cx) = &report.violation {
        print_counterexample(cx, report.setup_steps);
        replay(&args, &config, b, cx, first, also);
        return ExitCode::from(1);
    }
    if report.exhausted {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(5)
    }
}

/// Write the counterexample's replay scenario under REPORT_DIR/model/, run it, and print the
/// result and the repro line.
fn replay(args: &ModelArgs, config: &model::Config, b: model::Bounds, cx: &model::Counterexample, mutation: Option<partmap::config::Mutation>, also: Option<partmap::config::Mutation>) {
    let dir = args.report_dir.join("model");
    let r = match model::replay::write_and_replay(config, (mutation, also), b, cx, &dir, args.replay_seeds, &super::report::head_commit()) {
        Ok(r) => r,
        Err(e) => {
            println!("replay: not written: {e}");
            return;
        }
    };
    for n in &r.notes {
        println!("replay: {n}");
    }
    let flag = mutation.map_or(String::new(), |m| format!(" --mutation {}", partmap_sim::run::mutation_names(m, also)));
    match r.seed {
        Some(seed) => {
            let also: Vec<&String> = r.found.last().into_iter().flatten().filter(|p| !partmap_sim::model::replay::same_failure(cx.property, p)).collect();
            let also = if also.is_empty() { String::new() } else { format!("; also {}", also.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")) };
            println!("replay: {}: fails again ({}{also}) on seed {seed}", r.path.display(), cx.property);
            println!("repro: partmap-sim run --seed {seed} --scenario {}{flag}", r.path.display());
        }
        None if r.tried == 0 => println!("replay: {} written, not run (--replay-seeds 0)", r.path.display()),
        None => {
            let found: Vec<String> = r.found.iter().enumerate().map(|(s, p)| format!("seed {s}: {}", if p.is_empty() { "passes".to_string() } else { p.join(", ") })).collect();
            println!("replay: {}: NOT REPRODUCED on seeds 0..{} ({})", r.path.display(), r.tried, found.join(", "));
            println!("repro (does not reproduce): partmap-sim run --seed 0 --scenario {}{flag}", r.path.display());
        }
    }
}

/// `--all`: every configuration unmutated and under every core mutation, on its default
/// bounds, as a table. Exit 0 when every unmutated configuration is exhausted with no
/// violation, 1 otherwise.
fn all() -> ExitCode {
    println!("# partmap-sim model --all (commit {})", super::report::head_commit());
    println!("# every configuration on its default bounds, unmutated and under every mutation that lives in its cores; CPU: this thread, user+sys");
    println!("{:<13} {:<30} {:<9} {:<17} {:>5} {:>9} {:>9} {:>6} {:>8} {:>8}", "config", "mutation", "verdict", "property", "steps", "unique", "explored", "depth", "cpu_s", "states_s");
    let mut ok = true;
    for config in model::CONFIGS {
        let mutations = std::iter::once(None).chain(model::CORE_MUTATIONS.iter().chain(config.also_runs).map(|m| Some(*m)));
        for m in mutations {
            let r = match model::check(&config, m, config.bounds) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {}: {e}", config.name);
                    return ExitCode::from(3);
                }
            };
            let verdict = match (&r.violation, r.exhausted) {
                (Some(_), _) => "caught",
                (None, true) if m.is_some() => "masked",
                (None, true) => "holds",
                (None, false) => "cut",
            };
            if m.is_none() && verdict != "holds" {
                ok = false;
            }
            let steps = r.violation.as_ref().map_or("-".to_string(), |cx| cx.steps.len().to_string());
            let property = r.violation.as_ref().map_or("-", |cx| cx.property);
            let name = m.map_or("none", |m| m.name());
            println!("{:<13} {:<30} {:<9} {:<17} {:>5} {:>9} {:>9} {:>6} {:>8.2} {:>8.0}", config.name, name, verdict, property, steps, r.unique, r.explored, r.depth, r.cpu_s, r.states_per_s());
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--mutation`'s value: one name, or two joined by a comma ([`super::parse_mutations`]).
/// Errors name `--mutation`.
fn mutations(arg: Option<&str>) -> Result<(Option<partmap::config::Mutation>, Option<partmap::config::Mutation>), String> {
    let Some(arg) = arg else { return Ok((None, None)) };
    let ms = super::parse_mutations(arg).map_err(|e| format!("--mutation: {e}"))?;
    Ok((Some(ms.first), ms.also))
}

/// The configuration's bounds with the flags' overrides. `Err`: a bound of 0, naming its flag.
fn bounds(args: &ModelArgs, config: &model::Config) -> Result<model::Bounds, String> {
    let defaults = config.bounds;
    let mut b = defaults;
    let positive: [(&str, Option<u64>); 5] = [
        ("--max-depth", args.max_depth.map(u64::from)),
        ("--max-states", args.max_states),
        ("--max-in-flight", args.max_in_flight.map(|n| n as u64)),
        ("--horizon-ms", args.horizon_ms),
        ("--rounds", args.rounds.map(u64::from)),
    ];
    if let Some((flag, _)) = positive.iter().find(|(_, v)| *v == Some(0)) {
        return Err(format!("{flag}: a bound of 0 explores nothing; give at least 1"));
    }
    if let Some(ppm) = args.drift_ppm.filter(|p| *p > 500_000) {
        return Err(format!("--drift-ppm: {ppm} is beyond 500000 (a clock at half or one and a half times the real rate; the simulator's knobs.clock_drift_ppm has the same bound)"));
    }
    if defaults.standby_rounds > 0 && args.standby_rounds == Some(0) {
        return Err("--standby-rounds: this configuration's setup needs a standby; give at least 1".to_string());
    }
    if defaults.standby_rounds == 0 && args.standby_rounds.is_some_and(|n| n > 0) {
        return Err("--standby-rounds: this configuration has no standby manager (only depose's setup plays one)".to_string());
    }
    if args.max_corrupts.is_some_and(|n| n > 0) && !model::precopies(config) {
        return Err(format!("--max-corrupts: configuration `{}` reads no pre-copy chunk (only move-precopy and move-corrupt do); give 0", config.name));
    }
    b.max_corrupts = args.max_corrupts.unwrap_or(b.max_corrupts);
    b.max_depth = args.max_depth.unwrap_or(b.max_depth);
    b.max_states = args.max_states.unwrap_or(b.max_states);
    b.max_in_flight = args.max_in_flight.unwrap_or(b.max_in_flight);
    b.horizon_ms = args.horizon_ms.unwrap_or(b.horizon_ms);
    b.rounds = args.rounds.unwrap_or(b.rounds);
    b.max_drops = args.max_drops.unwrap_or(b.max_drops);
    b.max_crashes = args.max_crashes.unwrap_or(b.max_crashes);
    b.max_cuts = args.max_cuts.unwrap_or(b.max_cuts);
    b.max_store_crashes = args.max_store_crashes.unwrap_or(b.max_store_crashes);
    match args.torn_writes.as_deref() {
        Some("on") if b.max_store_crashes == 0 => return Err("--torn-writes: on needs a store crash within the bounds (--max-store-crashes at least 1)".to_string()),
        Some(t) => b.torn_writes = t == "on",
        // No store crash: nothing to tear (store-crash's default on goes with its crash).
        None if b.max_store_crashes == 0 => b.torn_writes = false,
        None => {}
    }
    b.max_dups = args.max_dups.unwrap_or(b.max_dups);
    b.max_delays = args.max_delays.unwrap_or(b.max_delays);
    b.drift_ppm = args.drift_ppm.unwrap_or(b.drift_ppm);
    b.standby_rounds = args.standby_rounds.unwrap_or(b.standby_rounds);
    b.appends = args.appends.unwrap_or(b.appends);
    b.reduce = model::Reductions { por: !args.no_por, fold: !args.no_fold, multiset: !args.no_multiset };
    b.liveness = if args.no_liveness {
        model::Liveness::Off
    } else if args.liveness_every_state {
        model::Liveness::Every
    } else {
        model::Liveness::Ends
    };
    Ok(b)
}

/// A counterexample as a numbered transcript: step, node, input, and each output under it.
fn print_counterexample(cx: &model::Counterexample, setup_steps: usize) {
    println!("VIOLATION {}: {}", cx.property, cx.message);
    println!("counterexample after the setup ({} history events: registrations, bootstrap, assign, open, activate, and for a move the request and the begin move):", setup_steps);
    for (i, (node, input, outputs)) in cx.steps.iter().enumerate() {
        println!("{:>3}. {node:<10} {input}", i + 1);
        for o in outputs {
            println!("       -> {o}");
        }
    }
    println!("{} steps", cx.steps.len());
    if let Some(stuck) = &cx.stuck {
        println!("the heal from the last state (faults off, links restored, servers restarted, time moving, the leader rounding; {} steps, {} ms):", stuck.heal.len(), stuck.heal_ms);
        for (i, (node, input, outputs)) in stuck.heal.iter().enumerate() {
            println!("  h{:<3} {node:<10} {input}", i + 1);
            for o in outputs {
                println!("        -> {o}");
            }
        }
        println!("stuck: {}", stuck.at_end);
        println!("no live state in the {} states of the healed system searched from the last state", stuck.searched);
    }
}
