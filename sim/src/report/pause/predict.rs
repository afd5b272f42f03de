//! `partmap-sim report pause --predict SIZE,WRITE_RATE,BANDWIDTH`: the pause model as a
//! calculator for one's own numbers, running no simulation. For a range of `SIZE` bytes taking
//! `WRITE_RATE` bytes/s of appends over links of `BANDWIDTH` bytes/s it prints, per strategy,
//! the predicted write pause, the pre-copy rounds, the bytes copied before and during the
//! pause, whether pre-copy converges, pre-copy's convergence limit (a formula, evaluated), the
//! range size from which pre-copy pauses less at this rate, and a recommendation. `--verify N`
//! then runs N seeds of each strategy on that cell and prints measured against predicted.
//!
//! The model is [`super::predict`] (see [`super::Model`]); the convergence limit is
//! `pause::model::convergence_limit_w`.

use super::model::{convergence_limit_w, predict, request_to_pause_s};
use super::{bw_name, bytes, knobs_of, measure_in, ms, Calibration, Cell, Measured, Model, Strategy, GIB, KIB, MIB};
use crate::measure::handoff::percentile;
use crate::scenario::Scenario;
use std::fmt::Write as _;

/// What `--predict` is asked: one range's size and write rate and the links' bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Query {
    /// Bytes in the range when the move is asked for.
    pub size: u64,
    /// Bytes per second appended to the range.
    pub write_rate: u64,
    /// Every node's outgoing bandwidth, bytes per second.
    pub bandwidth: u64,
}

/// The knobs `--predict` may be given (`None`: the review grid's value).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overrides {
    /// Pre-copy stops once a round copied at most this many bytes (grid: 16 MiB).
    pub threshold: Option<u64>,
    /// Pre-copy stops after this many rounds (grid: 8).
    pub max_rounds: Option<u32>,
    /// The leader's tick, ms (grid: 200).
    pub tick_ms: Option<u64>,
    /// One control message's one-way time, ms (grid: 3, the mean of the 1..5 ms draw).
    pub latency_ms: Option<f64>,
    /// The cutover rule's pause budget, ms (grid: none, the rule off so the strategies are
    /// measured themselves).
    pub budget_ms: Option<u64>,
}

/// Read a byte count or rate: a number (decimals allowed) with an optional unit `B`, `KiB`,
/// `MiB` or `GiB` (binary: 1 MiB = 1,048,576 B), and for a rate an optional `/s`. `part` names
/// the part in errors (`size`, `write rate`, `bandwidth`, `--threshold`).
///
/// Errors: an empty part, a number that does not parse, an unknown unit, a rate given as a
/// size or the reverse, zero or a negative figure, or one too large for 64 bits; each names
/// the part and the text.
pub fn parse_amount(part: &str, text: &str, rate: bool) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("{part} is missing"));
    }
    let (body, per_s) = match t.strip_suffix("/s") {
        Some(b) => (b.trim_end(), true),
        None => (t, false),
    };
    if per_s && !rate {
        return Err(format!("{part} `{t}` is a rate; a {part} is bytes (B, KiB, MiB or GiB, no /s)"));
    }
    let split = body.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(body.len());
    let (num, unit) = (body[..split].trim(), body[split..].trim());
    let mult = match unit {
        "" | "B" => 1,
        "KiB" => KIB,
        "MiB" => MIB,
        "GiB" => GIB,
        u => return Err(format!("{part} `{t}`: unit `{u}` is not B, KiB, MiB or GiB{} (binary units: 1 MiB = 1048576 B)", if rate { ", optionally with /s" } else { "" })),
    };
    let n: f64 = num.parse().map_err(|_| format!("{part} `{t}`: `{num}` is not a number"))?;
    if !n.is_finite() || n <= 0.0 {
        return Err(format!("{part} `{t}` must be above 0"));
    }
    let v = n * mult as f64;
    if v >= u64::MAX as f64 {
        return Err(format!("{part} `{t}` is too large (at most 2^64 bytes)"));
    }
    if v < 1.0 {
        return Err(format!("{part} `{t}` is less than one byte"));
    }
    Ok(v.round() as u64)
}

/// Read `SIZE,WRITE_RATE,BANDWIDTH`, e.g. `1GiB,600MiB/s,1GiB/s`.
///
/// Errors: not three parts, a part [`parse_amount`] refuses, a bandwidth under 1,000 B/s (the
/// scenario format's least), or a write rate at or above the bandwidth (the stream would
/// grow faster than any copy of it); each names the part.
pub fn parse_query(text: &str) -> Result<Query, String> {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() != 3 {
        let named = ["size", "write rate", "bandwidth"];
        let missing = named.get(parts.len()).map_or(String::new(), |p| format!(" ({p} is missing)"));
        return Err(format!("`{text}`: expected SIZE,WRITE_RATE,BANDWIDTH, e.g. 1GiB,600MiB/s,1GiB/s; got {} part{}{missing}", parts.len(), if parts.len() == 1 { "" } else { "s" }));
    }
    let size = parse_amount("size", parts[0], false)?;
    let write_rate = parse_amount("write rate", parts[1], true)?;
    let bandwidth = parse_amount("bandwidth", parts[2], true)?;
    if bandwidth < 1000 {
        return Err(format!("bandwidth `{}` is below 1000 B/s, the least the simulation models", parts[2].trim()));
    }
    if write_rate >= bandwidth {
        return Err(format!("write rate `{}` is at or above the bandwidth `{}`: the range grows faster than any copy of it, and no strategy finishes", parts[1].trim(), parts[2].trim()));
    }
    Ok(Query { size, write_rate, bandwidth })
}

/// The model's answer for one query.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// What was asked.
    pub query: Query,
    /// The knobs the model used.
    pub knobs: partmap::config::Knobs,
    /// The network constants it used (nominal unless `--latency-ms`).
    pub cal: Calibration,
    /// Stop-and-copy's figures.
    pub stop: Model,
    /// Pre-copy's figures.
    pub pre: Model,
    /// Pre-copy's convergence limit, bytes/s (`convergence_limit_w`, at the append size the
    /// simulation's cell would use at that rate).
    pub w_max: f64,
    /// The smallest range size (bytes, on a log grid from 4 KiB to 1 TiB) from which
    /// pre-copy's predicted pause is below stop-and-copy's at this write rate (`None`: never).
    pub crossover: Option<f64>,
}

impl Prediction {
    /// The cell of strategy `st` this query stands for.
    pub fn cell(&self, st: Strategy) -> Cell {
        cell_of(&self.query, st, self.query.size)
    }
}

fn cell_of(q: &Query, strategy: Strategy, size: u64) -> Cell {
    Cell { strategy, size, ratio: q.write_rate as f64 / q.bandwidth as f64, bandwidth: q.bandwidth, faults: false }
}

/// The knobs of `q`'s cell with the overrides applied.
pub fn knobs_for(q: &Query, o: &Overrides) -> partmap::config::Knobs {
    // The grid's knobs at this bandwidth (a small cell always makes a valid scenario).
    let mut k = knobs_of(&Cell { strategy: Strategy::PreCopy, size: MIB, ratio: 0.05, bandwidth: q.bandwidth, faults: false });
    k.bandwidth_bytes_per_s = q.bandwidth;
    if let Some(t) = o.threshold {
        k.precopy_threshold_bytes = t;
    }
    if let Some(r) = o.max_rounds {
        k.precopy_max_rounds = r;
    }
    if let Some(t) = o.tick_ms {
        k.manager_tick_ms = t;
    }
    k.cutover_budget_ms = o.budget_ms.unwrap_or(0);
    k
}

/// The model's prediction for `q` under the overrides `o` (no simulation).
pub fn predict_query(q: &Query, o: &Overrides) -> Prediction {
    let knobs = knobs_for(q, o);
    let mut cal = Calibration::nominal(&knobs);
    if let Some(l) = o.latency_ms {
        cal.latency_s = l / 1000.0;
        cal.chunk_s = 2.0 * cal.latency_s + knobs.disk_sync_ms as f64 / 1000.0;
    }
    let stop = predict(&cell_of(q, Strategy::StopAndCopy, q.size), &knobs, cal);
    let pre = predict(&cell_of(q, Strategy::PreCopy, q.size), &knobs, cal);
    let pause = |st: Strategy, size: f64| predict(&cell_of(q, st, size as u64), &knobs, cal).pause_ms;
    let crossover = (0..=280).map(|i| 4.0 * KIB as f64 * 2f64.powf(i as f64 / 10.0)).find(|&x| pause(Strategy::PreCopy, x) < pause(Strategy::StopAndCopy, x));
    // The limit depends on the append size through the chunk (whole appends to a chunk), and
    // the simulation's append size on the rate: solve for the limit at its own append size.
    let mut w_max = q.write_rate as f64;
    for _ in 0..8 {
        let c = cell_of(&Query { write_rate: w_max as u64, ..*q }, Strategy::PreCopy, q.size);
        w_max = convergence_limit_w(&knobs, cal, c.write_rate() / c.appends_per_s());
    }
    Prediction { query: *q, w_max, knobs, cal, stop, pre, crossover }
}

fn rate_name(b: f64) -> String {
    format!("{}/s", bytes(b as u64))
}

fn time_name(ms_v: f64) -> String {
    if ms_v >= 10_000.0 {
        format!("{:.1} s", ms_v / 1000.0)
    } else {
        format!("{} ms", ms(ms_v))
    }
}

/// The prediction as the text `--predict` prints.
pub fn render(p: &Prediction) -> String {
    let q = &p.query;
    let k = &p.knobs;
    let l_ms = p.cal.latency_s * 1000.0;
    let cell = p.cell(Strategy::PreCopy);
    let a = cell.write_rate() / cell.appends_per_s();
    let chunk = super::model::chunk_of_appends(k, a);
    let chunk_s = chunk / q.bandwidth as f64;
    let mut out = String::new();
    let _ = writeln!(out, "predicted handoff pause (model only, no simulation): a range of {} taking {} of appends over {} links (r = W / B = {:.3})", bytes(q.size), rate_name(q.write_rate as f64), bw_name(q.bandwidth), q.write_rate as f64 / q.bandwidth as f64);
    let _ = writeln!(out, "knobs: pre-copy threshold θ = {}, round limit {}, leader tick τ = {} ms, message time L = {l_ms:.1} ms, chunk overhead c = {:.1} ms per chunk, a chunk Δ = {:.1} ms of link ({} appends of {} each; the simulation's {:.0} appends/s for this cell), fsync s = {} ms", bytes(k.precopy_threshold_bytes), k.precopy_max_rounds, k.manager_tick_ms, p.cal.chunk_s * 1000.0, chunk_s * 1000.0, (chunk / a.max(1.0)).round(), bytes(a as u64), cell.appends_per_s(), k.disk_sync_ms);
    let _ = writeln!(out, "request to pause: {:.0} ms (1.5τ + 16L + 3s), during which the range grows to {}", request_to_pause_s(k, p.cal, false) * 1000.0, bytes(p.stop.tail_bytes as u64));
    let _ = writeln!(out);
    let _ = writeln!(out, "stop-and-copy: pause {}; copies {} during the pause, nothing before", time_name(p.stop.pause_ms), bytes(p.stop.tail_bytes as u64));
    let _ = writeln!(out, "pre-copy:      pause {}; {} round{} ({}); copies {} before the pause and {} during", time_name(p.pre.pause_ms), p.pre.rounds, if p.pre.rounds == 1 { "" } else { "s" }, if p.pre.converged { "converged: the last round was at most θ" } else { "did not converge: stopped at the round limit" }, bytes(p.pre.before_bytes as u64), bytes(p.pre.tail_bytes as u64));
    let _ = writeln!(out);
    let above = q.write_rate as f64 > p.w_max;
    let _ = writeln!(out, "convergence limit: W_max = θB / (B(τ + 8L) + θ(1 + c/Δ)) = {} (r = {:.3}); {} is {} it{}", rate_name(p.w_max), p.w_max / q.bandwidth as f64, rate_name(q.write_rate as f64), if above { "above" } else { "below" }, if above { ": pre-copy's rounds never shrink to θ, and the round limit decides its tail" } else { ": pre-copy's rounds shrink to θ given rounds enough" });
    match p.crossover {
        Some(x) => {
            let _ = writeln!(out, "crossover at this rate: pre-copy pauses less from a range of about {} up", bytes(x as u64));
        }
        None => {
            let _ = writeln!(out, "crossover at this rate: none up to 1 TiB; stop-and-copy pauses less at every size");
        }
    }
    let (sp, pp) = (p.stop.pause_ms, p.pre.pause_ms);
    let extra = p.pre.before_bytes + p.pre.tail_bytes - p.stop.tail_bytes;
    let rec = if pp < sp {
        format!("pre-copy: it pauses writes {:.2} times shorter ({} against {}), at the cost of {} more on the links ({:.1} times stop-and-copy's bytes){}", sp / pp.max(1e-9), time_name(pp), time_name(sp), bytes(extra.max(0.0) as u64), (p.pre.before_bytes + p.pre.tail_bytes) / p.stop.tail_bytes.max(1.0), if p.pre.converged { "" } else { "; it does not converge here, so its pause grows with the round limit's last round: lowering the write rate below W_max, raising θ or shortening the tick would converge" })
    } else {
        format!("stop-and-copy: its pause ({}) is at most pre-copy's ({}), and it copies {} less{}", time_name(sp), time_name(pp), bytes(extra.max(0.0) as u64), if p.pre.converged { "" } else { "; pre-copy does not converge at this rate" })
    };
    let _ = writeln!(out, "recommendation: {rec}");
    if p.knobs.cutover_budget_ms > 0 {
        // The rule as the leader applies it: rounds go on down to the budget's bytes; at the
        // round limit a last round over the budget aborts the move unpaused.
        let budget_bytes = p.knobs.cutover_budget_ms as f64 * q.bandwidth as f64 / 1000.0;
        let mut k = p.knobs.clone();
        k.precopy_threshold_bytes = k.precopy_threshold_bytes.min(budget_bytes as u64);
        let ruled = predict(&p.cell(Strategy::PreCopy), &k, p.cal);
        let fits = ruled.converged || ruled.tail_bytes * 1000.0 / q.bandwidth as f64 <= k.cutover_budget_ms as f64;
        let _ = if fits {
            writeln!(out, "cutover budget {} ms: pre-copy pauses about {} after {} rounds", k.cutover_budget_ms, time_name(ruled.pause_ms), ruled.rounds)
        } else {
            writeln!(out, "cutover budget {} ms: pre-copy's rounds stay over the budget's {} to the round limit, so the move is aborted without a pause", k.cutover_budget_ms, bytes(budget_bytes as u64))
        };
    }
    out
}

/// The scenario `--verify` runs for strategy `st`: the grid cell's, with the overrides' knobs.
///
/// Errors: the cell cannot run in the simulation's windows, or its scenario does not validate.
pub fn verify_scenario(p: &Prediction, st: Strategy, o: &Overrides) -> Result<Scenario, String> {
    let cell = p.cell(st);
    if let Some(why) = cell.skip_reason() {
        return Err(format!("{} cannot be run here: {why}", st.name()));
    }
    let mut json = cell.scenario_json();
    if let Some(t) = o.threshold {
        json["moves"]["precopy_threshold_bytes"] = t.into();
    }
    if let Some(r) = o.max_rounds {
        json["moves"]["precopy_max_rounds"] = r.into();
    }
    if let Some(t) = o.tick_ms {
        json["knobs"]["manager_tick_ms"] = t.into();
    }
    if let Some(b) = o.budget_ms {
        json["moves"]["cutover_budget_ms"] = b.into();
    }
    if o.latency_ms.is_some() {
        return Err("--latency-ms is the model's alone (the simulation draws 1..5 ms); drop it to verify".into());
    }
    Scenario::parse(&json.to_string(), "report pause --verify").map_err(|e| format!("{}: {e}", st.name()))
}

/// One seed of `--verify`: the seed, its committed move's figures, why it failed its checkers.
type SeedRun = (u64, Result<Measured, Measured>, Option<String>);

/// Run seeds `0..n` of both strategies of `p`'s cell on `jobs` threads and print measured
/// against predicted: mean ± standard error, p50, p99 (only where n >= 100, else the max of n),
/// rounds and bytes, and the error of the prediction.
///
/// Errors: see [`verify_scenario`]. Seeds that failed their checkers are listed in the text.
pub fn verify(p: &Prediction, o: &Overrides, n: u64, jobs: usize) -> Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(out, "\nverify: {n} seeds of each strategy (seeds 0..{n}), measured against predicted");
    for (st, m) in [(Strategy::StopAndCopy, &p.stop), (Strategy::PreCopy, &p.pre)] {
        let scenario = verify_scenario(p, st, o)?;
        let cell = p.cell(st);
        let next = std::sync::atomic::AtomicU64::new(0);
        let runs: std::sync::Mutex<Vec<SeedRun>> = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1) {
                scope.spawn(|| loop {
                    let seed = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if seed >= n {
                        return;
                    }
                    let (meas, failed) = measure_in(&cell, scenario.clone(), seed);
                    runs.lock().expect("verify lock").push((seed, meas, failed));
                });
            }
        });
        let mut runs = runs.into_inner().expect("verify lock");
        runs.sort_by_key(|r| r.0);
        let got: Vec<&Measured> = runs.iter().filter_map(|r| r.1.as_ref().ok()).collect();
        let failed: Vec<&String> = runs.iter().filter_map(|r| r.2.as_ref()).collect();
        let none = runs.len() - got.len();
        if got.is_empty() {
            let paused: u32 = runs.iter().map(|r| r.1.as_ref().map_or_else(|m| m.aborted, |m| m.aborted)).sum();
            let _ = writeln!(out, "{}: no move committed in {n} seeds; pauses of moves that did not commit: {paused}", st.name());
            continue;
        }
        let pauses: Vec<f64> = got.iter().map(|m| m.server_ms).collect();
        let mean = pauses.iter().sum::<f64>() / pauses.len() as f64;
        let se = super::rel_se(&pauses).map_or(String::new(), |e| format!(" ± {}", ms(e * mean)));
        let tail = if pauses.len() >= 100 { format!("p99 {}", ms(percentile(&pauses, 0.99).unwrap_or(0.0))) } else { format!("max of {} {}", pauses.len(), ms(percentile(&pauses, 1.0).unwrap_or(0.0))) };
        let med = |f: &dyn Fn(&Measured) -> f64| {
            let v: Vec<f64> = got.iter().map(|m| f(m)).collect();
            percentile(&v, 0.5).unwrap_or(0.0)
        };
        let converged = got.iter().filter(|m| m.converged).count();
        let _ = writeln!(
            out,
            "{}: measured mean {}{se} ms, p50 {} ms, {tail} ms over {} seeds{}; predicted {} ms, error {:+.1}%; rounds p50 {} (predicted {}){}; copied before p50 {} (predicted {}), during p50 {} (predicted {})",
            st.name(),
            ms(mean),
            ms(med(&|m| m.server_ms)),
            got.len(),
            if none > 0 { format!(" ({none} more seeds committed no move while the clients wrote)") } else { String::new() },
            ms(m.pause_ms),
            (mean - m.pause_ms) / m.pause_ms * 100.0,
            med(&|m| m.rounds as f64),
            m.rounds,
            if st == Strategy::PreCopy { format!(", converged {converged}/{} (predicted {})", got.len(), if m.converged { "yes" } else { "no" }) } else { String::new() },
            bytes(med(&|m| m.before as f64) as u64),
            bytes(m.before_bytes as u64),
            bytes(med(&|m| m.during as f64) as u64),
            bytes(m.tail_bytes as u64),
        );
        for f in failed {
            let _ = writeln!(out, "  failed its checkers: {f}");
        }
    }
    Ok(out)
}
