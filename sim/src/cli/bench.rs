//! `bench`: what a seed costs against madsim alone.

use std::process::ExitCode;
use super::*;

/// `bench`: what a seed costs, against madsim alone.
pub fn bench(args: BenchArgs) -> ExitCode {
    let BenchArgs { seeds, scenario, round_trips, scaled_seeds, published_madsim } = args;
    let (scenario, label) = match load(scenario) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let raw = partmap_sim::bench::raw_madsim(5, 4, round_trips);
    let published = match published_madsim {
        Some(path) => match partmap_sim::bench::published_madsim(&path, 5, 4, round_trips) {
            Err(e) => return usage(e),
            measured => measured,
        },
        None => match partmap_sim::bench::default_published_madsim().filter(|p| p.is_file()) {
            Some(path) => partmap_sim::bench::published_madsim(&path, 5, 4, round_trips),
            None => Err("not built; `just bench` builds it: cargo build --release --manifest-path bench/raw-madsim/Cargo.toml --target-dir target/raw-madsim".to_string()),
        },
    };
    let run = partmap_sim::bench::scenario(&scenario, &label, seeds.0..seeds.1);
    let scaled = (scaled_seeds > 0).then(|| {
        let mut longer = scenario.clone();
        longer.workload.duration_s *= 4;
        let first = seeds.0..seeds.1.min(seeds.0 + scaled_seeds);
        // Warm-up, not counted: the checkers' reused buffers grow to the longer
        // history's size once per process.
        partmap_sim::bench::scenario(&longer, &label, seeds.1..seeds.1 + 1);
        let longer_cost = partmap_sim::bench::scenario(&longer, &label, first.clone());
        (4, longer_cost, partmap_sim::bench::scenario(&scenario, &label, first))
    });
    // Read before the seam figure's runs: their 20,000 requests per runtime raise the
    // peak by about 14 MiB (madsim keeps every spawned task's info until the node dies).
    let peak_rss_mib = partmap_sim::bench::peak_rss_mib();
    let seam = partmap_sim::bench::seam_rpc(5, 4, round_trips);
    let b = partmap_sim::bench::Bench { raw, published, seam, run, scaled, peak_rss_mib };
    print!("{}", partmap_sim::bench::render(&b, &label));
    if b.run.unexpected > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
