//! `model`: bounded model checking of the cores ([`partmap_sim::model`]).

use super::ModelArgs;
use partmap_sim::model;
use std::process::ExitCode;

/// Run the search and print its figures; on a violation, the shortest counterexample.
pub fn model(args: ModelArgs) -> ExitCode {
    let bad = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(64)
    };
    let config = match model::config(&args.config) {
        Ok(c) => c,
        Err(e) => return bad(e),
    };
    if let Some(m) = args.mutation {
        if let Err(e) = model::runs(&config, m) {
            return bad(e);
        }
    }
    let b = match bounds(&args, config.bounds) {
        Ok(b) => b,
        Err(e) => return bad(e),
    };
    let mutation = args.mutation.map_or("none", |m| m.name());
    println!("model config={} mutation={mutation}: {}", config.name, config.about);
    println!(
        "bounds: depth {} states {} in_flight {} drops {} crashes {} horizon {} ms rounds {}",
        b.max_depth, b.max_states, b.max_in_flight, b.max_drops, b.max_crashes, b.horizon_ms, b.rounds
    );
    let report = match model::check(&config, args.mutation, b) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    println!(
        "states explored {} unique {} depth {} over_in_flight {} cut_by_depth {} cpu {:.2} s exhausted {}",
        report.explored,
        report.unique,
        report.depth,
        report.over_in_flight,
        report.cut_by_depth,
        report.cpu_s,
        if report.exhausted { "yes" } else if report.stopped_at_states { "no (state bound)" } else if report.violation.is_some() { "no (stopped at the violation)" } else { "no (depth bound)" }
    );
    if let Some(cx) = &report.violation {
        print_counterexample(cx, report.setup_steps);
        return ExitCode::from(1);
    }
    if report.exhausted {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(5)
    }
}

/// The configuration's bounds with the flags' overrides. `Err`: a bound of 0, naming its flag.
fn bounds(args: &ModelArgs, defaults: model::Bounds) -> Result<model::Bounds, String> {
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
    b.max_depth = args.max_depth.unwrap_or(b.max_depth);
    b.max_states = args.max_states.unwrap_or(b.max_states);
    b.max_in_flight = args.max_in_flight.unwrap_or(b.max_in_flight);
    b.horizon_ms = args.horizon_ms.unwrap_or(b.horizon_ms);
    b.rounds = args.rounds.unwrap_or(b.rounds);
    b.max_drops = args.max_drops.unwrap_or(b.max_drops);
    b.max_crashes = args.max_crashes.unwrap_or(b.max_crashes);
    Ok(b)
}

/// A counterexample as a numbered transcript: step, node, input, and each output under it.
fn print_counterexample(cx: &model::Counterexample, setup_steps: usize) {
    println!("VIOLATION {}: {}", cx.property, cx.message);
    println!("counterexample after the setup ({} history events: registrations, bootstrap, assign, open, activate, move request, begin move):", setup_steps);
    for (i, (node, input, outputs)) in cx.steps.iter().enumerate() {
        println!("{:>3}. {node:<10} {input}", i + 1);
        for o in outputs {
            println!("       -> {o}");
        }
    }
    println!("{} steps", cx.steps.len());
}
