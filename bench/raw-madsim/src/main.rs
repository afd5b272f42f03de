//! `raw-madsim RUNS PAIRS ROUND_TRIPS`: the raw madsim request/response loop of
//! `sim/src/bench/raw.rs`, built against madsim 0.2.34 as published (see `Cargo.toml`).
//! Prints one line, `messages=N cpu_ns=NS madsim=0.2.34-published`, read by `partmap-sim bench`.
//! Exits 64 with a message naming the argument when one is missing or not a positive integer.

#[path = "../../../sim/src/cpu.rs"]
mod cpu;
#[path = "../../../sim/src/bench/raw.rs"]
#[allow(dead_code)] // `Cost::us_per_message` is for partmap-sim; this binary prints the raw counts.
mod bench_raw;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names = ["RUNS", "PAIRS", "ROUND_TRIPS"];
    if args.len() != names.len() {
        eprintln!("usage: raw-madsim RUNS PAIRS ROUND_TRIPS (got {} arguments)", args.len());
        return ExitCode::from(64);
    }
    let mut n = [0u64; 3];
    for (i, (arg, name)) in args.iter().zip(names).enumerate() {
        match arg.parse::<u64>() {
            Ok(v) if v > 0 => n[i] = v,
            _ => {
                eprintln!("error: {name} must be a positive integer, got {arg:?}");
                return ExitCode::from(64);
            }
        }
    }
    let cost = bench_raw::raw_madsim(n[0], n[1], n[2]);
    println!("messages={} cpu_ns={} madsim=0.2.34-published", cost.messages, cost.cpu_ns);
    ExitCode::SUCCESS
}
