//! `bench`: what a seed costs, against what madsim alone costs, measured in one process on the
//! same machine (issue 13).
//!
//! The figures, each as CPU time of the measuring thread (`CLOCK_THREAD_CPUTIME_ID`; wall
//! time is not used, the machines this runs on are shared):
//! - **raw**: madsim alone moving small request/response messages between pairs of nodes (no
//!   partmap code in the way): CPU per message ([`crate::bench::raw`]), on the madsim we run and,
//!   in a child process, on madsim 0.2.34 as published ([`published_madsim`]).
//! - **seam**: the same exchange through partmap's seam ([`partmap::seam::Rpc`]: `call` and
//!   `serve` with a handler that answers at once): CPU per message, so the seam's own overhead
//!   over raw madsim stands apart from the nodes'.
//! - **scenario**: seeds of a scenario run one after the other, as a `--jobs 1` sweep runs them:
//!   CPU per seed and per message (messages counted where the seam puts them on the wire,
//!   [`partmap::seam::messages_sent`]), the checkers' share ([`crate::check::checker_cpu_ns`]),
//!   and the **ratio** of the scenario's CPU per message to raw madsim's (each floor's).
//! - **scaling**: the same seeds with the workload 4 times as long: how much more the checkers
//!   cost (linear in the history: about 4).
//!
//! Measuring costs is harness work, outside any run: the clocks read here never reach a
//! simulation, so runs stay a pure function of (scenario, seed, build).

pub mod raw;

use crate::run::{run_seed, RunOptions};
use crate::scenario::Scenario;
pub use crate::bench::raw::{raw_madsim, thread_cpu_ns, Cost};
use madsim::runtime::{Handle, Runtime};
use std::collections::BTreeMap;

/// Peak resident set size of this process so far, in MiB (`getrusage`).
pub fn peak_rss_mib() -> f64 {
    // SAFETY: getrusage fills one rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage failed");
    ru.ru_maxrss as f64 / 1024.0
}

/// partmap's seam on the exchange [`raw_madsim`] makes: `runs` runtimes (seeds 0..runs), each
/// with `pairs` client/server node pairs, every client doing `round_trips`
/// [`partmap::seam::Rpc::call`]s answered by an [`partmap::seam::Rpc::serve`] handler that
/// answers at once (no faults, a link fast enough never to wait). Every message counts (a
/// round trip is two). Against [`raw_madsim`]'s figure: what the seam adds per message.
pub fn seam_rpc(runs: u64, pairs: u64, round_trips: u64) -> Cost {
    use partmap::msg::Msg;
    use partmap::seam::{LinkFaults, Net, Rpc};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let started = thread_cpu_ns();
    for seed in 0..runs {
        let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
        rt.block_on(async move {
            let h = Handle::current();
            let net = Net { bandwidth_bytes_per_s: 1 << 40, faults: LinkFaults::default() };
            let done = Arc::new(AtomicU64::new(0));
            for p in 0..pairs {
                let (server, client) = crate::bench::raw::pair_addrs(p);
                let server_net = net.clone();
                h.create_node()
                    .ip(server.ip())
                    .init(move || {
                        let net = server_net.clone();
                        async move {
                            let rpc = Rpc::bind(server, &net).await;
                            rpc.serve(|_msg, _from| async { Some(Msg::SessionRenewed { ok: true }) });
                            std::future::pending::<()>().await
                        }
                    })
                    .build();
                let (client_net, done) = (net.clone(), done.clone());
                h.create_node()
                    .ip(client.ip())
                    .init(move || {
                        let (net, done) = (client_net.clone(), done.clone());
                        async move {
                            madsim::time::sleep(std::time::Duration::from_millis(10)).await;
                            let rpc = Rpc::bind(client, &net).await;
                            for _ in 0..round_trips {
                                rpc.call(server, Msg::GetLoad { leader_epoch: 1 }, 60_000).await.expect("answered");
                            }
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                    .build();
            }
            while done.load(Ordering::SeqCst) < pairs {
                madsim::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        });
    }
    Cost { messages: runs * pairs * round_trips * 2, cpu_ns: thread_cpu_ns() - started }
}

/// Where `bench` looks for the published-madsim floor when `--published-madsim` is not given:
/// `target/raw-madsim/release/raw-madsim` beside the running binary's `target/release/`, as
/// `cargo build --release --manifest-path bench/raw-madsim/Cargo.toml --target-dir
/// target/raw-madsim` (and `just bench`) builds it. `None` when the running binary's path is
/// unknown or not two folders deep.
pub fn default_published_madsim() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("raw-madsim").join("release").join("raw-madsim"))
}

/// The same raw loop as [`raw_madsim`], run by the `bench/raw-madsim` binary at `path` (built
/// against madsim 0.2.34 as published, without `PATCHES.md`) as a child process, which measures
/// its own thread's CPU time. Errors: the binary cannot be started, exits non-zero, or prints
/// something other than the line [`parse_published`] reads; each error names `path`.
pub fn published_madsim(path: &std::path::Path, runs: u64, pairs: u64, round_trips: u64) -> Result<Cost, String> {
    let out = std::process::Command::new(path)
        .args([runs.to_string(), pairs.to_string(), round_trips.to_string()])
        .output()
        .map_err(|e| format!("--published-madsim {}: cannot run it: {e}", path.display()))?;
    if !out.status.success() {
        return Err(format!("--published-madsim {}: exited with {}: {}", path.display(), out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    parse_published(&text).map_err(|e| format!("--published-madsim {}: {e}", path.display()))
}

/// Read the `raw-madsim` binary's one line, `messages=N cpu_ns=NS madsim=VERSION`. Errors name
/// the missing or malformed field.
pub fn parse_published(line: &str) -> Result<Cost, String> {
    let field = |name: &str| -> Result<u64, String> {
        let value = line
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
            .ok_or_else(|| format!("no `{name}=` in its output {:?}", line.trim()))?;
        value.parse::<u64>().map_err(|_| format!("`{name}` is not a whole number: {value:?}"))
    };
    let cost = Cost { messages: field("messages")?, cpu_ns: field("cpu_ns")? };
    if cost.messages == 0 {
        return Err("`messages` is 0".to_string());
    }
    Ok(cost)
}

/// What seeds of a scenario cost, run one after the other on this thread.
#[derive(Clone, Debug, Default)]
pub struct ScenarioCost {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that did not end as the scenario expects.
    pub unexpected: u64,
    /// Messages and CPU time of the whole runs (simulation, checkers and reports).
    pub total: Cost,
    /// CPU time of the checkers, nanoseconds.
    pub checker_cpu_ns: u64,
    /// CPU time of each checker's view (and of their shared index), nanoseconds.
    pub checker_cpu_by_view: BTreeMap<(&'static str, &'static str), u64>,
    /// Each seed's own figures, in run order.
    pub per_seed: Vec<SeedCost>,
}

/// What one seed cost ([`scenario`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeedCost {
    /// The seed.
    pub seed: u64,
    /// CPU time of the whole run, nanoseconds.
    pub cpu_ns: u64,
    /// CPU time of the checkers, nanoseconds.
    pub checker_cpu_ns: u64,
    /// Events in the run's history (what the checkers read).
    pub events: u64,
}

/// `scaled` against `base` on the seeds both ran (a longer workload is compared with the same
/// seeds at the normal length, not with other seeds): (seeds compared, whole-run CPU ratio,
/// checkers' CPU ratio, history length ratio). `None` when no seed is in both.
pub fn scaling(base: &ScenarioCost, scaled: &ScenarioCost) -> Option<(usize, f64, f64, f64)> {
    let pairs: Vec<(&SeedCost, &SeedCost)> = scaled.per_seed.iter().filter_map(|s| base.per_seed.iter().find(|b| b.seed == s.seed).map(|b| (b, s))).collect();
    if pairs.is_empty() {
        return None;
    }
    let ratio = |f: fn(&SeedCost) -> u64| pairs.iter().map(|(_, s)| f(s)).sum::<u64>() as f64 / pairs.iter().map(|(b, _)| f(b)).sum::<u64>().max(1) as f64;
    Some((pairs.len(), ratio(|c| c.cpu_ns), ratio(|c| c.checker_cpu_ns), ratio(|c| c.events)))
}

impl ScenarioCost {
    /// CPU seconds per seed.
    pub fn cpu_s_per_seed(&self) -> f64 {
        self.total.cpu_ns as f64 / 1e9 / self.seeds.max(1) as f64
    }
    /// The checkers' share of the CPU time (0..1).
    pub fn checker_share(&self) -> f64 {
        self.checker_cpu_ns as f64 / self.total.cpu_ns.max(1) as f64
    }
}

/// Run `seeds` of `scenario` (labelled `label`) one after the other and measure them.
pub fn scenario(scenario: &Scenario, label: &str, seeds: std::ops::Range<u64>) -> ScenarioCost {
    let mut cost = ScenarioCost::default();
    for seed in seeds {
        let opts = RunOptions { seed, scenario: scenario.clone(), scenario_label: label.to_string(), mutation: None, also_mutation: None, trace: false, echo_header: false };
        let (cpu0, msgs0, check0) = (thread_cpu_ns(), partmap::seam::messages_sent(), crate::check::checker_cpu_ns());
        let by_view0 = crate::check::checker_cpu_by_view();
        let report = run_seed(&opts);
        for (view, ns) in crate::check::checker_cpu_by_view() {
            *cost.checker_cpu_by_view.entry(view).or_default() += ns - by_view0.get(&view).copied().unwrap_or(0);
        }
        let (cpu_ns, checker_cpu_ns) = (thread_cpu_ns() - cpu0, crate::check::checker_cpu_ns() - check0);
        cost.total.cpu_ns += cpu_ns;
        cost.total.messages += partmap::seam::messages_sent() - msgs0;
        cost.checker_cpu_ns += checker_cpu_ns;
        cost.per_seed.push(SeedCost { seed, cpu_ns, checker_cpu_ns, events: report.events.len() as u64 });
        cost.seeds += 1;
        if !report.outcome().matches(scenario.expect.outcome) {
            cost.unexpected += 1;
        }
        // As a sweep does: the next seed reuses this history's buffer.
        crate::events::recycle(report.events);
    }
    cost
}

/// The whole benchmark's figures.
#[derive(Clone, Debug)]
pub struct Bench {
    /// madsim alone, the build the project runs on (with `PATCHES.md`).
    pub raw: Cost,
    /// madsim alone, 0.2.34 as published ([`published_madsim`]): `Ok` when measured, else why
    /// not (the binary was not built).
    pub published: Result<Cost, String>,
    /// The same exchange through partmap's seam ([`seam_rpc`]).
    pub seam: Cost,
    /// The scenario's seeds.
    pub run: ScenarioCost,
    /// The first seeds again with the workload `scale` times as long, and the same seeds again
    /// at the normal length, both run after an uncounted warm-up seed at the longer length
    /// (the checkers' reused buffers grow once per process, not per seed): `(scale, longer,
    /// normal)` (`None`: not measured).
    pub scaled: Option<(u64, ScenarioCost, ScenarioCost)>,
    /// Peak RSS of the process after the raw and scenario runs (before the seam figure's), MiB.
    pub peak_rss_mib: f64,
}

impl Bench {
    /// CPU per message of the scenario over CPU per message of raw madsim (patched).
    pub fn ratio(&self) -> f64 {
        self.run.total.us_per_message() / self.raw.us_per_message()
    }
    /// CPU per message of the scenario over CPU per message of raw madsim as published, when
    /// measured.
    pub fn ratio_published(&self) -> Option<f64> {
        self.published.as_ref().ok().map(|p| self.run.total.us_per_message() / p.us_per_message())
    }
}

/// One measured exchange as `bench` prints it: messages, CPU, CPU per message, and that against
/// `floor`'s (named `floor_name`).
fn cost_line(what: &str, c: &Cost, floor: &Cost, floor_name: &str) -> String {
    format!(
        "{what}: {} messages, {:.3} s CPU, {:.3} us per message ({:.2}x {floor_name})\n",
        c.messages,
        c.cpu_ns as f64 / 1e9,
        c.us_per_message(),
        c.us_per_message() / floor.us_per_message()
    )
}

/// Render the figures as the lines `bench` prints.
pub fn render(b: &Bench, label: &str) -> String {
    let mut out = String::new();
    let raw = &b.raw;
    out += &format!("raw madsim: {} messages, {:.3} s CPU, {:.3} us per message\n", raw.messages, raw.cpu_ns as f64 / 1e9, raw.us_per_message());
    match &b.published {
        Ok(p) => out += &cost_line("raw madsim 0.2.34 as published (bench/raw-madsim, own process)", p, raw, "the patched"),
        Err(why) => out += &format!("raw madsim 0.2.34 as published: not measured ({why})\n"),
    }
    out += &cost_line("seam (partmap Rpc, answer at once)", &b.seam, raw, "raw madsim");
    let r = &b.run;
    out += &format!(
        "scenario {label}: {} seeds, {} messages ({:.0} per seed), {:.3} s CPU: {:.4} s per seed = {:.2} seeds/s per core, {:.3} us per message\n",
        r.seeds,
        r.total.messages,
        r.total.messages as f64 / r.seeds.max(1) as f64,
        r.total.cpu_ns as f64 / 1e9,
        r.cpu_s_per_seed(),
        1.0 / r.cpu_s_per_seed(),
        r.total.us_per_message()
    );
    out += &format!("checkers: {:.3} s CPU, {:.1}% of the runs' CPU\n", r.checker_cpu_ns as f64 / 1e9, 100.0 * r.checker_share());
    let by_view: Vec<String> = r.checker_cpu_by_view.iter().map(|((p, v), ns)| format!("{p}/{v} {:.1}%", 100.0 * *ns as f64 / r.total.cpu_ns.max(1) as f64)).collect();
    if !by_view.is_empty() {
        out += &format!("checkers by view (share of the runs' CPU): {}\n", by_view.join(", "));
    }
    if let Some((scale, s, base)) = &b.scaled {
        let per_seed = |c: &ScenarioCost| c.checker_cpu_ns as f64 / c.seeds.max(1) as f64;
        out += &format!("workload x{scale}: {:.4} s CPU per seed, checkers {:.4} s per seed, {:.1}% of the CPU\n", s.cpu_s_per_seed(), per_seed(s) / 1e9, 100.0 * s.checker_share());
        if let Some((n, cpu, checkers, events)) = scaling(base, s) {
            out += &format!(
                "workload x{scale} against the same {n} seeds at x1: run CPU {cpu:.2}x, checkers {checkers:.2}x, history {events:.2}x the events (checkers per event {:.2}x)\n",
                checkers / events
            );
            // Each view's cost at the longer length against the same seeds at x1: which one
            // grows faster than the history.
            let by_view: Vec<String> = s
                .checker_cpu_by_view
                .iter()
                .filter_map(|(view, ns)| base.checker_cpu_by_view.get(view).filter(|b| **b > 0).map(|b| format!("{}/{} {:.2}x", view.0, view.1, *ns as f64 / *b as f64)))
                .collect();
            if !by_view.is_empty() {
                out += &format!("workload x{scale} against x1 by view: {}\n", by_view.join(", "));
            }
        }
    }
    out += &format!("peak RSS: {:.1} MiB\n", b.peak_rss_mib);
    if r.unexpected > 0 {
        out += &format!("note: {} of the {} seeds did not end as the scenario expects (the figures still count them)\n", r.unexpected, r.seeds);
    }
    if let Some((scale, s, _)) = b.scaled.as_ref().filter(|s| s.1.unexpected > 0) {
        out += &format!("note: {} of the {} seeds with the workload x{scale} did not end as the scenario expects (a longer run than the scenario was written for; costs only)\n", s.unexpected, s.seeds);
    }
    out += &format!("ratio (scenario CPU per message / raw madsim CPU per message): {:.2}\n", b.ratio());
    if let Some(r) = b.ratio_published() {
        out += &format!("ratio against madsim 0.2.34 as published: {r:.2}\n");
    }
    out
}
