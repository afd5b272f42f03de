//! The pause review's outputs: the Markdown report (headlines over every write ratio, the
//! convergence limit as a formula, every cell with the prediction's error), `grid.csv` (every
//! seed run, those without a committed move included) and its reader, and the SVG plots.

use super::model::{convergence_limit_w, predict};
use super::*;
use std::path::Path;

/// The crossover per bandwidth (fault-free, at `ratio`): the smallest size from which pre-copy's
/// median pause is below stop-and-copy's at every larger size of the grid. `None`: never.
pub fn crossover(rows: &[Row], bandwidth: u64, ratio: f64) -> Option<u64> {
    let pick = |st: Strategy| -> Vec<(u64, f64)> {
        let mut v: Vec<(u64, f64)> = rows.iter().filter(|r| !r.cell.faults && r.cell.bandwidth == bandwidth && r.cell.ratio == ratio && r.cell.strategy == st).map(|r| (r.cell.size, r.server[0])).collect();
        v.sort_by_key(|x| x.0);
        v
    };
    let (sc, pc) = (pick(Strategy::StopAndCopy), pick(Strategy::PreCopy));
    let mut answer = None;
    for (size, pre) in pc.iter().rev() {
        let Some((_, stop)) = sc.iter().find(|(s, _)| s == size) else { break };
        if pre < stop {
            answer = Some(*size);
        } else {
            break;
        }
    }
    answer
}

/// The lowest write ratio at which pre-copy stopped converging (fault-free, at `size` and
/// `bandwidth`): its median run hit the round limit with the last round above the threshold.
pub fn convergence_limit(rows: &[Row], bandwidth: u64, size: u64) -> Option<f64> {
    let mut v: Vec<&Row> = rows.iter().filter(|r| !r.cell.faults && r.cell.bandwidth == bandwidth && r.cell.size == size && r.cell.strategy == Strategy::PreCopy).collect();
    v.sort_by(|a, b| a.cell.ratio.total_cmp(&b.cell.ratio));
    v.iter().find(|r| r.converged * 2 < r.n).map(|r| r.cell.ratio)
}

/// How a tail is named: "p99 X" only where at least 100 seeds measured it, else "max of n X".
fn tail(r: &Row) -> String {
    match r.p99 {
        Some(v) => format!("p99 {}", ms(v)),
        None => format!("max of {} {}", r.n, ms(r.server[2])),
    }
}

/// Runs of consecutive sizes (in grid order) with the same winner, as text: for the fault-free
/// cells of `rows` at `bandwidth` (bytes/s) and write ratio `ratio`, each run of sizes with the
/// strategy of lower mean server pause and how many times longer the other's is. `None` when no
/// size has both strategies.
pub fn wins(rows: &[Row], bandwidth: u64, ratio: f64) -> Option<String> {
    let pick = |st: Strategy, size: u64| rows.iter().find(|r| !r.cell.faults && r.cell.bandwidth == bandwidth && r.cell.ratio == ratio && r.cell.size == size && r.cell.strategy == st);
    let mut sizes: Vec<u64> = rows.iter().filter(|r| !r.cell.faults && r.cell.bandwidth == bandwidth && r.cell.ratio == ratio).map(|r| r.cell.size).collect();
    sizes.sort();
    sizes.dedup();
    // (size, pre-copy wins, pre mean / stop mean)
    let pairs: Vec<(u64, bool, f64)> = sizes.iter().filter_map(|&s| Some((s, pick(Strategy::PreCopy, s)?, pick(Strategy::StopAndCopy, s)?))).map(|(s, pre, stop)| (s, pre.mean < stop.mean, pre.mean / stop.mean)).collect();
    if pairs.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let mut j = i;
        while j + 1 < pairs.len() && pairs[j + 1].1 == pairs[i].1 {
            j += 1;
        }
        let span = if i == j { size_name(pairs[i].0) } else { format!("{} to {}", size_name(pairs[i].0), size_name(pairs[j].0)) };
        let ratios: Vec<f64> = pairs[i..=j].iter().map(|p| p.2).collect();
        let (lo, hi) = (ratios.iter().copied().fold(f64::MAX, f64::min), ratios.iter().copied().fold(0.0, f64::max));
        let by = |a: f64, b: f64| if (a - b).abs() < 0.005 { format!("{a:.2}") } else { format!("{a:.2} to {b:.2}") };
        parts.push(if pairs[i].1 {
            format!("pre-copy wins at {span} (stop-and-copy {} times longer)", by(1.0 / hi, 1.0 / lo))
        } else {
            format!("**stop-and-copy wins at {span}** (pre-copy {} times longer)", by(lo, hi))
        });
        i = j + 1;
    }
    Some(parts.join("; "))
}

/// The headline of what clients feel, one line per fault mix and strategy: the append p99
/// during the move over the same runs' p99 outside it (each the median over a cell's seeds),
/// its spread over the cells and the cell where it is largest, and the appends failed and shed.
fn clients_feel(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for faults in [false, true] {
        for st in [Strategy::StopAndCopy, Strategy::PreCopy] {
            let cells: Vec<(&Row, [f64; 2], [f64; 2])> = rows.iter().filter(|r| r.cell.faults == faults && r.cell.strategy == st).filter_map(|r| Some((r, r.move_latency?, r.base_latency?))).filter(|(_, _, b)| b[1] > 0.0).collect();
            if cells.is_empty() {
                continue;
            }
            let over: Vec<f64> = cells.iter().map(|(_, m, b)| m[1] / b[1]).collect();
            let (worst, wm, wb) = cells.iter().max_by(|a, b| (a.1[1] / a.2[1]).total_cmp(&(b.1[1] / b.2[1]))).expect("not empty");
            let (lo, hi) = (over.iter().copied().fold(f64::MAX, f64::min), over.iter().copied().fold(0.0, f64::max));
            let p50_over: Vec<f64> = cells.iter().map(|(_, m, b)| m[0] / b[0].max(1e-9)).collect();
            let all: Vec<&Row> = rows.iter().filter(|r| r.cell.faults == faults && r.cell.strategy == st).collect();
            let failed = all.iter().map(|r| r.failed_per_seed).fold(0.0, f64::max);
            let shed = all.iter().map(|r| r.shed_per_seed).fold(0.0, f64::max);
            let lost = |i: usize| all.iter().filter_map(|r| r.move_lost_per_seed.map(|l| l[i])).fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
            let during = match (lost(0), lost(1)) {
                (Some(f), Some(s)) => format!("{f:.1} failed and {s:.1} shed during the move (over the whole run "),
                _ => "(over the whole run ".into(),
            };
            let gap_row = all.iter().filter(|r| r.client.is_some()).max_by(|a, b| a.client.map(|c| c[2]).unwrap_or(0.0).total_cmp(&b.client.map(|c| c[2]).unwrap_or(0.0)));
            let gap = gap_row.map_or("-".to_string(), |r| format!("{} ms ({} r = {} of {}, whose longest server pause was {} ms)", ms(r.client.map_or(0.0, |c| c[2])), size_name(r.cell.size), r.cell.ratio, bw_name(r.cell.bandwidth), ms(r.server[2])));
            out.push(format!(
                "- {}, {}: the move's append p99 is {lo:.2} to {hi:.2} times the p99 outside it (median over {} cells {:.2}; p50 {:.2} times, median), largest at {} r = {} of {} ({} ms against {} ms); appends lost per seed at most {during}{failed:.1} and {shed:.1}); the longest client gap {gap}.",
                if faults { "with faults" } else { "fault-free" },
                st.name(),
                cells.len(),
                percentile(&over, 0.5).unwrap_or(0.0),
                percentile(&p50_over, 0.5).unwrap_or(0.0),
                size_name(worst.cell.size),
                worst.cell.ratio,
                bw_name(worst.cell.bandwidth),
                ms(wm[1]),
                ms(wb[1]),
            ));
        }
    }
    out
}

/// Why the fault-free cells lose thousands of appends a seed: the cell that lost the most
/// during its move, its offered appends over its mean pause against what it lost (failed and
/// shed), with the retry policy that turns a long pause into failures (`None` without a
/// fault-free cell that measured its move's losses).
pub fn losses_explained(rows: &[Row]) -> Option<String> {
    let r = rows.iter().filter(|r| !r.cell.faults).filter_map(|r| Some((r, r.move_lost_per_seed?))).max_by(|a, b| (a.1[0] + a.1[1]).total_cmp(&(b.1[0] + b.1[1])))?;
    let (row, lost) = r;
    let s = row.cell.scenario().ok()?;
    let k = s.node_knobs();
    let offered = row.cell.appends_per_s() * row.mean / 1000.0;
    Some(format!(
        "These counts are client operations, not attempts, and they are what a long pause costs, not a measurement artefact: while no owner is active a frontend spends its {} attempts on an append (backoff {} ms doubling to {} ms, about 2 s in all) and fails it; each of the {} clients has {} operation in flight, so an arrival that finds it busy for {} ms is shed. Together they are the appends offered during the pause: the largest, {} of {} at r = {} of {}, offers {:.1} appends/s × {} ms = {offered:.0} appends in its mean pause, and lost {:.1} failed + {:.1} shed = {:.0} a seed during the move.",
        k.frontend_attempts,
        k.frontend_backoff_ms,
        k.frontend_backoff_ms_max,
        s.topology.clients,
        s.workload.in_flight_per_client,
        s.workload.shed_after_ms,
        row.cell.strategy.name(),
        size_name(row.cell.size),
        row.cell.ratio,
        bw_name(row.cell.bandwidth),
        row.cell.appends_per_s(),
        ms(row.mean),
        lost[0],
        lost[1],
        lost[0] + lost[1],
    ))
}

/// The Markdown report: where it came from (`provenance`, one paragraph naming the commit and
/// command), the headlines (where each strategy wins at every write ratio, the convergence
/// limit as a formula and against the grid, the prediction's error, every move counted), then
/// every cell.
pub fn markdown(results: &[CellResult], cal: &[Calibration], provenance: &str) -> String {
    let rows: Vec<Row> = results.iter().filter_map(|r| row(r, cal)).collect();
    let mut out = String::new();
    let _ = writeln!(out, "# Handoff pause review\n");
    let _ = writeln!(out, "{provenance}\n");
    let _ = writeln!(out, "Each cell is one planned move of one range (server-1 to server-2) under {APPENDS_PER_S} appends/s (fewer in long cells, at most 40,000 per run) of `W / rate` bytes each (simulated bulk), with the range preloaded to its size; pre-copy stops at a round of at most {} or after {PRECOPY_MAX_ROUNDS} rounds. Pauses are at the servers (from the source's pause to the target serving) and at the clients (the longest gap between acknowledged appends around the pause, where a client kept trying; left out for a pause that began after the clients' window ended). A tail is called p99 only where at least 100 seeds measured it; elsewhere it is the max of the n seeds. The model is `sim/src/report/pause/model.rs`; `predicted` is its answer from the cell's inputs alone (size, offered rate, bandwidth, knobs), the same as `partmap-sim report pause --predict SIZE,W,B` prints.\n", bytes(PRECOPY_THRESHOLD_BYTES));
    for c in cal {
        let _ = writeln!(out, "Calibrated at {}: one control message `L` = {:.2} ms, each further chunk of a transfer `c` = {:.2} ms, the operator's request to the pause {:.0} ms with no writes (means over {CALIBRATION_SEEDS} stop-and-copy moves of 4 s of bytes with no writes; see `calibrate`; the prediction uses the round structure's `1.5τ + 16L + 3s`, {:.0} ms, as under load the grid's stop-and-copy cells took 340 to 410 ms).\n", bw_name(c.bandwidth), c.latency_s * 1000.0, c.chunk_s * 1000.0, c.request_s.unwrap_or(0.0) * 1000.0, (0.3 + 16.0 * c.latency_s + 0.003) * 1000.0);
    }
    let mut rs: Vec<f64> = rows.iter().filter(|r| !r.cell.faults).map(|r| r.cell.ratio).collect();
    rs.sort_by(f64::total_cmp);
    rs.dedup();
    for r in rs {
        let _ = writeln!(out, "![pause against range size at r = {r}]({})\n", size_plot_name(r));
    }
    let _ = writeln!(out, "![pause against write rate over bandwidth](pause-vs-rate.svg)\n");
    let _ = writeln!(out, "## Where each strategy wins (fault-free, measured mean server pause)\n");
    let mut ratios: Vec<f64> = rows.iter().filter(|r| !r.cell.faults).map(|r| r.cell.ratio).collect();
    ratios.sort_by(f64::total_cmp);
    ratios.dedup();
    for bw in BANDWIDTHS {
        for &ratio in &ratios {
            let Some(text) = wins(&rows, bw, ratio) else { continue };
            let model_x = model_crossover(cal, bw, ratio).map_or("never below 64 GiB".to_string(), |x| format!("from {} up", bytes(x)));
            let _ = writeln!(out, "- {} at r = {ratio} (W = {:.0} MiB/s): {text}. The prediction: pre-copy wins {model_x}.", bw_name(bw), ratio * bw as f64 / MIB as f64);
        }
    }
    let _ = writeln!(out, "\n## Pre-copy's convergence limit\n");
    let _ = writeln!(out, "Pre-copy converges (a round at most θ) only while `W < W_max = θB / (B(τ + 8L) + θ(1 + c/Δ))`, from the model's round recursion `V' = W (x(V) + τ + 8L)` with `x(V) ≈ V (1 + c/Δ) / B` (θ the stop threshold, τ the leader's tick, L one message, c a chunk's stop-and-wait overhead, Δ the link time of one chunk: `convergence_limit_w`). The limit is set by the tick, not by the bandwidth: the `τ + 8L` a round waits between reads writes `W (τ + 8L)` bytes that the next round must copy.\n");
    for bw in BANDWIDTHS {
        let c = Cell { strategy: Strategy::PreCopy, size: GIB, ratio: 0.05, bandwidth: bw, faults: false };
        let k = knobs_of(&c);
        let l = calibration_at(cal, &k);
        let w = convergence_limit_w(&k, l, c.write_rate() / c.appends_per_s());
        let pre: Vec<&Row> = rows.iter().filter(|r| !r.cell.faults && r.cell.bandwidth == bw && r.cell.strategy == Strategy::PreCopy).collect();
        let below: Vec<&&Row> = pre.iter().filter(|r| r.cell.write_rate() < w).collect();
        let above: Vec<&&Row> = pre.iter().filter(|r| r.cell.write_rate() >= w).collect();
        let conv = |v: &[&&Row]| (v.iter().map(|r| r.converged).sum::<usize>(), v.iter().map(|r| r.n).sum::<usize>());
        let ((cb, nb), (ca, na)) = (conv(&below), conv(&above));
        let _ = writeln!(out, "- {}: W_max = {:.1} MiB/s (r = {:.3}, θ = {}, τ = {} ms, L = {:.2} ms, c = {:.2} ms, Δ = 50 ms). Measured: pre-copy converged in {cb} of {nb} seeds below it and in {ca} of {na} seeds above it (the grid's rates below it: r = 0.05 on 100 MiB/s only; on small ranges the first round alone is under θ and needs no convergence).", bw_name(bw), w / MIB as f64, w / bw as f64, bytes(k.precopy_threshold_bytes), k.manager_tick_ms, l.latency_s * 1000.0, l.chunk_s * 1000.0);
    }
    let _ = writeln!(out, "\n## The model, judged in every cell\n");
    let ff: Vec<&Row> = rows.iter().filter(|r| !r.cell.faults).collect();
    let conv: Vec<&&Row> = ff.iter().filter(|r| r.cell.strategy == Strategy::StopAndCopy || (r.predicted.converged && r.converged * 2 > r.n)).collect();
    let other: Vec<&&Row> = ff.iter().filter(|r| !(r.cell.strategy == Strategy::StopAndCopy || (r.predicted.converged && r.converged * 2 > r.n))).collect();
    let within = |v: &[&&Row], lim: f64| v.iter().filter(|r| r.predicted_error.abs() <= lim).count();
    let worst = |v: &[&&Row]| v.iter().max_by(|a, b| a.predicted_error.abs().total_cmp(&b.predicted_error.abs())).map(|r| format!("{:+.1}% ({} of {} at r = {} of {})", r.predicted_error * 100.0, r.cell.strategy.name(), size_name(r.cell.size), r.cell.ratio, bw_name(r.cell.bandwidth))).unwrap_or_else(|| "-".into());
    let _ = writeln!(out, "- Converged cells (stop-and-copy, and pre-copy where it converged): {} cells, the prediction within 10% of the measured mean in {} (worst {}).", conv.len(), within(&conv, 0.10), worst(&conv));
    let _ = writeln!(out, "- Pre-copy cells that did not converge: {} cells, within 20% in {} (worst {}).", other.len(), within(&other, 0.20), worst(&other));
    let off: Vec<String> = ff.iter().filter(|r| r.predicted_error.abs() > if conv.iter().any(|c| std::ptr::eq(**c, **r)) { 0.10 } else { 0.20 }).map(|r| format!("{} {} {} r = {} ({:+.1}%)", bw_name(r.cell.bandwidth), r.cell.strategy.name(), size_name(r.cell.size), r.cell.ratio, r.predicted_error * 100.0)).collect();
    if !off.is_empty() {
        let _ = writeln!(out, "- Outside those bounds: {}.", off.join("; "));
    }
    let _ = writeln!(out, "\n## Every move counted\n");
    let seeds: usize = rows.iter().map(|r| r.seeds).sum::<usize>() + results.iter().filter(|r| r.runs.is_empty()).map(|r| r.missing.len()).sum::<usize>();
    let no_move: u64 = results.iter().map(|r| r.no_handoff).sum();
    let aborted: u32 = rows.iter().map(|r| r.aborted).sum::<u32>() + results.iter().filter(|r| r.runs.is_empty()).flat_map(|r| r.missing.iter()).map(|m| m.aborted).sum::<u32>();
    let after: usize = rows.iter().map(|r| r.after_window).sum();
    let skipped = results.iter().filter(|r| r.skipped.is_some()).count();
    let failed: usize = results.iter().map(|r| r.failed.len()).sum();
    let _ = writeln!(out, "- Seeds run: {seeds}; without a committed move: {no_move}; pauses of moves that did not commit (rolled back or superseded): {aborted}; committed pauses that began after the clients' window: {after} (kept, without a client figure); seeds that failed their checkers: {failed}; cells skipped (the move or a reload would outlast the simulation's windows): {skipped}.\n");
    let feel = clients_feel(&rows);
    if !feel.is_empty() {
        let _ = writeln!(out, "## What clients feel\n");
        let _ = writeln!(out, "Each append's latency, from its invocation to its answer whatever the outcome, during the move (invoked from the move request until the seed's last pause ended) and in the same run outside it; a cell's figure is the median over its seeds of each seed's p50 and p99. Appends the clients shed (never sent) are counted apart.\n");
        for l in feel {
            let _ = writeln!(out, "{l}");
        }
        if let Some(why) = losses_explained(&rows) {
            let _ = writeln!(out, "\n{why}");
        }
        let _ = writeln!(out);
    }
    let failures: Vec<&String> = results.iter().flat_map(|r| r.failed.iter()).collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "## Seeds that failed their checkers\n");
        for f in failures {
            let _ = writeln!(out, "- {f}");
        }
        let _ = writeln!(out);
    }
    for faults in [false, true] {
        let _ = writeln!(out, "## {}\n", if faults { "With the random fault mix (r = 0.25; the prediction is fault-free, so its error here is what the faults cost)" } else { "Fault-free" });
        let _ = writeln!(out, "| bandwidth | strategy | size | r | n | servers mean ± se, ms | servers p50 / tail, ms | clients p50 / max, ms | append latency p50 / p99, ms: during the move (outside it) | appends failed / shed per seed: during the move (whole run) | not committed: pauses (longest, ms) | before | during | rounds | converged | predicted ms | error | model on the seed's sizes, ms | error | over floor |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for r in results.iter().filter(|r| r.cell.faults == faults) {
            let c = &r.cell;
            let head = format!("| {} | {} | {} | {} ", bw_name(c.bandwidth), c.strategy.name(), size_name(c.size), c.ratio);
            if let Some(why) = &r.skipped {
                let _ = writeln!(out, "{head}| skipped: {why} |||||||||||||||");
                continue;
            }
            let Some(w) = row(r, cal) else {
                let ab: u32 = r.missing.iter().map(|m| m.aborted).sum();
                let _ = writeln!(out, "{head}| 0 (no move committed in {} seeds; {ab} paused and rolled back) |||||||||||||||", r.no_handoff);
                continue;
            };
            let client = w.client.map_or("-".to_string(), |c| format!("{} / {}", ms(c[0]), ms(c[2])));
            let lat = |v: Option<[f64; 2]>| v.map_or("-".to_string(), |v| format!("{} / {}", ms(v[0]), ms(v[1])));
            let latency = format!("{} ({})", lat(w.move_latency), lat(w.base_latency));
            let conv = if c.strategy == Strategy::PreCopy { format!("{}/{} (predicted: {})", w.converged, w.n, if w.predicted.converged { "yes" } else { "no" }) } else { "-".into() };
            let model = w.model_ms.map_or("-".into(), ms);
            let err = w.error.map_or("-".into(), |e| format!("{:+.1}%", e * 100.0));
            let fl = w.over_floor.map_or("-".into(), |f| format!("{f:.2}"));
            let se = w.rel_se.map_or(String::new(), |e| format!(" ± {}", ms(e * w.mean)));
            let n = if w.seeds > w.n { format!("{} of {}", w.n, w.seeds) } else { w.n.to_string() };
            let lost = w.move_lost_per_seed.map_or(String::new(), |l| format!("{:.1} / {:.1} (", l[0], l[1]));
            let ab = if w.aborted > 0 { format!("{} ({})", w.aborted, ms(w.aborted_max_ms)) } else { "0".into() };
            let _ = writeln!(out, "{head}| {n} | {}{se} | {} / {} | {client} | {latency} | {lost}{:.1} / {:.1}{} | {ab} | {} | {} | {} | {conv} | {} | {:+.1}% | {model} | {err} | {fl} |", ms(w.mean), ms(w.server[0]), tail(&w), w.failed_per_seed, w.shed_per_seed, if w.move_lost_per_seed.is_some() { ")" } else { "" }, bytes(w.before), bytes(w.during), w.rounds, ms(w.predicted_ms), w.predicted_error * 100.0);
        }
        let _ = writeln!(out);
    }
    out
}

const CSV_HEADER: &str = "strategy,size_bytes,ratio,bandwidth_bytes_per_s,faults,seed,committed,server_pause_ms,client_pause_ms,before_bytes,during_bytes,rounds,converged,start_bytes,pause_bytes,rate_since_start,first_round_us,paused_at_us,after_window,appends_failed,shed,aborted,aborted_pause_ms,move_latency_p50_ms,move_latency_p99_ms,base_latency_p50_ms,base_latency_p99_ms,move_appends,base_appends,move_appends_failed,move_shed";

/// `grid.csv`: one line per seed run, every seed (a seed without a committed move has
/// `committed` false and no pause figures): the cell, the seed, the measured figures.
pub fn csv(results: &[CellResult]) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    for r in results {
        let c = &r.cell;
        for (m, committed) in r.runs.iter().map(|m| (m, true)).chain(r.missing.iter().map(|m| (m, false))) {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{committed},{:.3},{},{},{},{},{},{},{},{:.1},{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{}",
                c.strategy.name(),
                c.size,
                c.ratio,
                c.bandwidth,
                c.faults,
                m.seed,
                m.server_ms,
                m.client_ms.map_or(String::new(), |v| format!("{v:.3}")),
                m.before,
                m.during,
                m.rounds,
                m.converged,
                m.start_bytes,
                m.pause_bytes,
                m.rate_since_start,
                m.first_round_us.map_or(String::new(), |v| v.to_string()),
                m.paused_at_us,
                m.after_window,
                m.appends_failed,
                m.shed,
                m.aborted,
                m.aborted_pause_ms,
                opt_ms(m.move_latency_ms.map(|v| v[0])),
                opt_ms(m.move_latency_ms.map(|v| v[1])),
                opt_ms(m.base_latency_ms.map(|v| v[0])),
                opt_ms(m.base_latency_ms.map(|v| v[1])),
                m.latency_n[0],
                m.latency_n[1],
                m.move_lost.map_or(String::new(), |l| l[0].to_string()),
                m.move_lost.map_or(String::new(), |l| l[1].to_string()),
            );
        }
    }
    out
}

/// An optional figure in ms as a CSV field (empty for none).
fn opt_ms(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.3}"))
}

/// Read a `grid.csv` back into cells of `cells` (cells the file does not have come back with
/// no runs; rows of cells not in `cells` are appended as their own cells), for regenerating the
/// report from committed data. Reads this version's columns and the first version's (strategy
/// to converged, committed moves only: the columns it lacks read as 0 or none, and the per-seed
/// model cannot be computed from it).
///
/// Errors: a missing column, or a field that does not parse, named with its line.
pub fn read_csv(text: &str, cells: &[Cell]) -> Result<Vec<CellResult>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("grid.csv is empty")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let need = |name: &str| col(name).ok_or_else(|| format!("grid.csv: no `{name}` column"));
    let (ist, isz, ira, ibw, ifa, ise, isp, icl, ibe, idu, iro, ico) = (need("strategy")?, need("size_bytes")?, need("ratio")?, need("bandwidth_bytes_per_s")?, need("faults")?, need("seed")?, need("server_pause_ms")?, need("client_pause_ms")?, need("before_bytes")?, need("during_bytes")?, need("rounds")?, need("converged")?);
    let mut out: Vec<CellResult> = cells.iter().map(CellResult::empty).collect();
    for (no, line) in lines.enumerate() {
        let at = no + 2;
        let f: Vec<&str> = line.split(',').collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("");
        let opt = |name: &str| col(name).map(get).filter(|v| !v.is_empty());
        let num = |name: &str, v: &str| -> Result<f64, String> { v.parse::<f64>().map_err(|_| format!("grid.csv line {at}: {name} `{v}` is not a number")) };
        let int = |name: &str, v: &str| -> Result<u64, String> { v.parse::<u64>().map_err(|_| format!("grid.csv line {at}: {name} `{v}` is not a whole number")) };
        let flag = |name: &str, v: &str| -> Result<bool, String> { v.parse::<bool>().map_err(|_| format!("grid.csv line {at}: {name} `{v}` is not true or false")) };
        let pair = |p50: &str, p99: &str| -> Result<Option<[f64; 2]>, String> {
            match (opt(p50), opt(p99)) {
                (Some(a), Some(b)) => Ok(Some([num(p50, a)?, num(p99, b)?])),
                _ => Ok(None),
            }
        };
        let strategy = match get(ist) {
            "stop-and-copy" => Strategy::StopAndCopy,
            "pre-copy" => Strategy::PreCopy,
            other => return Err(format!("grid.csv line {at}: strategy `{other}` is not stop-and-copy or pre-copy")),
        };
        let cell = Cell { strategy, size: int("size_bytes", get(isz))?, ratio: num("ratio", get(ira))?, bandwidth: int("bandwidth_bytes_per_s", get(ibw))?, faults: flag("faults", get(ifa))? };
        let committed = opt("committed").map(|v| flag("committed", v)).transpose()?.unwrap_or(true);
        let m = Measured {
            seed: int("seed", get(ise))?,
            server_ms: num("server_pause_ms", get(isp))?,
            client_ms: Some(get(icl)).filter(|v| !v.is_empty()).map(|v| num("client_pause_ms", v)).transpose()?,
            before: int("before_bytes", get(ibe))?,
            during: int("during_bytes", get(idu))?,
            rounds: int("rounds", get(iro))? as u32,
            converged: flag("converged", get(ico))?,
            start_bytes: opt("start_bytes").map(|v| int("start_bytes", v)).transpose()?.unwrap_or(0),
            pause_bytes: opt("pause_bytes").map(|v| int("pause_bytes", v)).transpose()?.unwrap_or(0),
            rate_since_start: opt("rate_since_start").map(|v| num("rate_since_start", v)).transpose()?.unwrap_or(0.0),
            first_round_us: opt("first_round_us").map(|v| int("first_round_us", v)).transpose()?,
            paused_at_us: opt("paused_at_us").map(|v| int("paused_at_us", v)).transpose()?.unwrap_or(0),
            after_window: opt("after_window").map(|v| flag("after_window", v)).transpose()?.unwrap_or(false),
            appends_failed: opt("appends_failed").map(|v| int("appends_failed", v)).transpose()?.unwrap_or(0),
            shed: opt("shed").map(|v| int("shed", v)).transpose()?.unwrap_or(0),
            move_lost: match (opt("move_appends_failed"), opt("move_shed")) {
                (Some(f), Some(s)) => Some([int("move_appends_failed", f)?, int("move_shed", s)?]),
                _ => None,
            },
            aborted: opt("aborted").map(|v| int("aborted", v)).transpose()?.unwrap_or(0) as u32,
            aborted_pause_ms: opt("aborted_pause_ms").map(|v| num("aborted_pause_ms", v)).transpose()?.unwrap_or(0.0),
            move_latency_ms: pair("move_latency_p50_ms", "move_latency_p99_ms")?,
            base_latency_ms: pair("base_latency_p50_ms", "base_latency_p99_ms")?,
            latency_n: [opt("move_appends").map(|v| int("move_appends", v)).transpose()?.unwrap_or(0), opt("base_appends").map(|v| int("base_appends", v)).transpose()?.unwrap_or(0)],
        };
        let i = match out.iter().position(|r| r.cell == cell) {
            Some(i) => i,
            None => {
                out.push(CellResult { skipped: None, ..CellResult::empty(&cell) });
                out.len() - 1
            }
        };
        if committed {
            out[i].runs.push(m);
        } else {
            out[i].no_handoff += 1;
            out[i].missing.push(m);
        }
    }
    for r in &mut out {
        r.runs.sort_by(|a, b| a.server_ms.total_cmp(&b.server_ms).then(a.seed.cmp(&b.seed)));
        r.missing.sort_by_key(|m| m.seed);
    }
    Ok(out)
}

/// A byte count as an axis label (KiB, MiB, GiB).
fn bytes_tick(v: &f64) -> String {
    let v = *v;
    if v >= GIB as f64 {
        format!("{:.0} GiB", v / GIB as f64)
    } else if v >= MIB as f64 {
        format!("{:.0} MiB", v / MIB as f64)
    } else {
        format!("{:.0} KiB", v / KIB as f64)
    }
}

/// A pause as an axis label (ms below a second, s above).
fn ms_tick(v: &f64) -> String {
    let v = *v;
    if v >= 1000.0 {
        format!("{} s", v / 1000.0)
    } else {
        format!("{v} ms")
    }
}

/// The plots' file names for the size plot at `ratio`.
pub fn size_plot_name(ratio: f64) -> String {
    format!("pause-vs-size-r{ratio}.svg")
}

/// Draw the plots into `dir`: the mean server pause against the range's size (log axes, per
/// strategy and bandwidth, the prediction's curve beside the measured means), one plot per
/// write ratio of the grid (`size_plot_name`), and against the write ratio for a 1 GiB range
/// (`pause-vs-rate.svg`). Axes carry units; the legend sits beside the chart, over no data.
///
/// Errors: a plot could not be drawn or written.
pub fn plots(results: &[CellResult], cal: &[Calibration], dir: &Path) -> Result<(), String> {
    use plotters::prelude::*;
    let rows: Vec<Row> = results.iter().filter_map(|r| row(r, cal)).filter(|r| !r.cell.faults).collect();
    let colours = [RED, BLUE, GREEN, MAGENTA];
    type Series = (String, Vec<(f64, f64)>, Vec<(f64, f64)>);
    // The prediction's pause over a dense axis for a range of x bytes at the offered rate.
    let predicted = |st: Strategy, bw: u64, size: f64, ratio: f64| {
        let c = Cell { strategy: st, size: size as u64, ratio, bandwidth: bw, faults: false };
        let k = knobs_of(&Cell { size: MIB, ..c.clone() });
        predict(&c, &k, calibration_at(cal, &k)).pause_ms.max(0.1)
    };
    let mut ratios: Vec<f64> = rows.iter().map(|r| r.cell.ratio).collect();
    ratios.sort_by(f64::total_cmp);
    ratios.dedup();
    let draw = |file: &str, caption: &str, xdesc: &str, xlog: bool, data: Vec<Series>| -> Result<(), Box<dyn std::error::Error>> {
        let path = dir.join(file);
        let root = SVGBackend::new(&path, (1100, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, legend) = root.split_horizontally(820);
        let all = || data.iter().flat_map(|(_, p, c)| p.iter().chain(c.iter()));
        let (x0, x1) = (all().map(|p| p.0).fold(f64::MAX, f64::min), all().map(|p| p.0).fold(0.0, f64::max));
        let (y0, y1) = (all().map(|p| p.1).fold(f64::MAX, f64::min) / 2.0, all().map(|p| p.1).fold(0.0, f64::max) * 2.0);
        let mut b = ChartBuilder::on(&left);
        b.caption(caption, ("sans-serif", 17)).margin(12).x_label_area_size(44).y_label_area_size(80);
        macro_rules! body {
            ($chart:expr, $xfmt:expr) => {{
                let mut chart = $chart;
                chart.configure_mesh().x_desc(xdesc).y_desc("mean write pause at the servers (log)").x_label_formatter($xfmt).y_label_formatter(&ms_tick).draw()?;
                for (i, (_, pts, curve)) in data.iter().enumerate() {
                    let c = colours[i % colours.len()];
                    chart.draw_series(LineSeries::new(curve.iter().copied(), c.stroke_width(1)))?;
                    // Stop-and-copy (even series) a ring, pre-copy a filled triangle: where
                    // both measure the same pause, neither hides the other.
                    if i % 2 == 0 {
                        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 5, c.stroke_width(2))))?;
                    } else {
                        chart.draw_series(pts.iter().map(|p| TriangleMarker::new(*p, 5, c.filled())))?;
                    }
                }
            }};
        }
        // Ticks where a reader looks for them: the grid's sizes (powers of 4 from 256 KiB, in
        // KiB, MiB and GiB, not powers of 10 of bytes), and 1, 2 and 5 times a power of 10 ms.
        let (xa, xb) = (x0 / 1.2, x1 * 1.2);
        let x_keys: Vec<f64> = (0..=10).map(|i| 256.0 * KIB as f64 * 4f64.powi(i)).filter(|x| (xa..=xb).contains(x)).collect();
        let y_keys: Vec<f64> = (-1..=7).flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e))).filter(|y| (y0..=y1).contains(y)).collect();
        if xlog {
            body!(b.build_cartesian_2d((xa..xb).log_scale().with_key_points(x_keys), (y0..y1).log_scale().with_key_points(y_keys))?, &bytes_tick);
        } else {
            body!(b.build_cartesian_2d(0.0..1.0, (y0..y1).log_scale().with_key_points(y_keys))?, &|v: &f64| format!("{v:.2}"));
        }
        // The legend, beside the chart.
        legend.draw(&Text::new("line: predicted; marker: measured mean", (8, 40), ("sans-serif", 13)))?;
        for (i, (name, _, _)) in data.iter().enumerate() {
            let c = colours[i % colours.len()];
            let y = 70 + 28 * i as i32;
            legend.draw(&PathElement::new(vec![(8, y), (30, y)], c.stroke_width(2)))?;
            if i % 2 == 0 {
                legend.draw(&Circle::new((19, y), 5, c.stroke_width(2)))?;
            } else {
                legend.draw(&TriangleMarker::new((19, y), 5, c.filled()))?;
            }
            legend.draw(&Text::new(name.clone(), (38, y - 7), ("sans-serif", 13)))?;
        }
        root.present()?;
        Ok(())
    };
    for &ratio in &ratios {
        let mut data: Vec<Series> = Vec::new();
        for bw in BANDWIDTHS {
            for st in [Strategy::StopAndCopy, Strategy::PreCopy] {
                let mut pts: Vec<(f64, f64)> = rows.iter().filter(|r| r.cell.bandwidth == bw && r.cell.strategy == st && r.cell.ratio == ratio).map(|r| (r.cell.size as f64, r.mean.max(0.1))).collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let curve: Vec<(f64, f64)> = (0..=72).map(|i| 256.0 * KIB as f64 * 2f64.powf(i as f64 / 4.0)).map(|x| (x, predicted(st, bw, x, ratio))).collect();
                data.push((format!("{} at {}", st.name(), bw_name(bw)), pts, curve));
            }
        }
        let file = size_plot_name(ratio);
        draw(&file, &format!("Write pause against the range's preloaded size, r = W/B = {ratio} (fault-free)"), "range size at the move request (log)", true, data).map_err(|e| format!("{file}: {e}"))?;
    }
    let mut by_rate: Vec<Series> = Vec::new();
    for bw in BANDWIDTHS {
        for st in [Strategy::StopAndCopy, Strategy::PreCopy] {
            let mut pts: Vec<(f64, f64)> = rows.iter().filter(|r| r.cell.bandwidth == bw && r.cell.strategy == st && r.cell.size == GIB).map(|r| (r.cell.ratio, r.mean.max(0.1))).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let curve: Vec<(f64, f64)> = (1..=99).map(|i| i as f64 / 100.0).map(|r| (r, predicted(st, bw, GIB as f64, r))).collect();
            by_rate.push((format!("{} at {}", st.name(), bw_name(bw)), pts, curve));
        }
    }
    draw("pause-vs-rate.svg", "Write pause against write rate over bandwidth, 1 GiB range (fault-free)", "r = W / B", false, by_rate).map_err(|e| format!("pause-vs-rate.svg: {e}"))?;
    Ok(())
}
