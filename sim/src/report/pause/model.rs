//! The first-order model of a handoff's pause and the calibration of its network constants
//! (see [`Model`]). Source: C. Clark et al., "Live Migration of Virtual Machines", NSDI 2005,
//! adapted to an append-only stream and to this leader's round structure.

use super::{knobs_of, Cell, Strategy, KIB, MIB};
use crate::run::{run_seed, RunOptions};
use partmap::event::Event as Sys;

/// The first-order model of a handoff's pause, with this leader's round structure.
///
/// Symbols: `B` bandwidth (bytes/s), `W` write rate into the range, `a = W / appends per s` one
/// append's bytes, `L` one control message's one-way time and `c` one further chunk's overhead
/// (both measured, [`calibrate`]), `τ` the
/// leader's sleep between rounds (`manager_tick_ms`), `s` one fsync (`disk_sync_ms`), `T` the
/// leader's wait for a pre-copy round (store timeout + request timeout).
///
/// - **Transfers** go a chunk at a time (`partmap::store::chunk_budget`, 50 ms of link each):
///   `x(V) = V / B + (chunks − 1) c`; below, `V / B` stands for `x(V)`.
/// - **Cutover (both strategies).** The leader's pause reaches the source (`L`, the pause
///   begins); the source drains, waiting for the rest of the last admitted append's trip to
///   the store and back, `T = a / B + 2L + s`: with admissions a Poisson stream at `λ = W / a`,
///   `D = T − (1 − e^{−λT}) / λ` on average (see `drain_s`); its digest goes back to the leader (`L`), the finish to the target
///   (`L`), the target's fence to the store (`L`), the store syncs the fence (`s`) and sends
///   the tail (`L + tail / B`). Pause = `D + 4L + s + tail / B`.
/// - **Stop-and-copy**: the tail is the whole range at the pause, `S_p`.
/// - **Pre-copy**: round 0 reads `V_0`, the range at the move's start. A round takes
///   `c_i = V_i / B + 4L + s`. When the leader waits for it (`c_i < T`), the next read comes
///   after the copy reaches the target (`V_i / B + L`), its answer (`L`), a tick (`τ`), the
///   next tick's lease renewal and read of the map and sessions (two round trips, `4L`), the
///   call (`L`) and the target's read request (`L`): `g_i = V_i / B + τ + 8L`; a longer
///   round outlasts the call, and the leader polls once a tick, so `g_i = V_i / B + 4L + (τ + 4L)
///   / 2` on average. `V_{i+1} = W · g_i`. Rounds stop after the first round with
///   `V_i <= threshold` (converged) or at the round limit. The tail is what arrives between the
///   last round's read and the pause: `W · (g_n + 3L + s)`: where the next read would come
///   after the target's read request (`L`), the ready answer (`L`), its journal write at the
///   authority (`2L + s`) and the pause reaching the source (`L`) come instead. (Measured from
///   a round's end to the pause, 20 seeds of 1 GiB at r = 0.05 of 1 GiB/s: 251.8 ms, against
///   `τ + 10L + s` = 250 ms; the model's earlier `τ + 6L` and `2L + s` left out the renewal,
///   the state read and the target's read request, and its tails came out 8% short.)
/// - Converges only while `r = W / B < 1`: the rounds approach `W · (τ + 8L) / (1 − r)`, so a
///   threshold below that is never reached; at `r >= 1` every round copies at least as much as
///   the last and the round limit decides.
/// - **Floor**: `D + 4L + s + (bytes written since the last copy) / B`, with the measured tail:
///   no design copies what it has not copied yet faster than the link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    /// Predicted write pause at the servers, ms.
    pub pause_ms: f64,
    /// Predicted pre-copy rounds (0 for stop-and-copy).
    pub rounds: u32,
    /// Predicted convergence (a round at or under the threshold within the round limit).
    pub converged: bool,
    /// Predicted bytes copied during the pause.
    pub tail_bytes: f64,
    /// Predicted bytes copied by the pre-copy rounds, before the pause (0 for stop-and-copy).
    pub before_bytes: f64,
}

/// The simulated network's effective costs at one bandwidth, measured by [`calibrate`]: the
/// one-way time of a control message (the configured latency draw, 1..5 ms by default, plus
/// what the runtime adds per message) and the overhead of each chunk of a transfer after the
/// first (its request's trip, the store's read and the answer's trip, on top of `bytes / B`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The bandwidth it was measured at, bytes/s.
    pub bandwidth: u64,
    /// `L`, seconds: one control message's one-way time.
    pub latency_s: f64,
    /// `c`, seconds: the overhead of one more chunk of a transfer.
    pub chunk_s: f64,
    /// Seconds from the operator's move request to the source's pause in the calibration's
    /// quiet moves (`None`: not measured). Shown beside `request_to_pause_s`, which the model
    /// uses: with no writes the request takes 303 ms, in the grid's cells under load 340 to
    /// 410 ms, and the round structure's formula (352 ms) lies between.
    pub request_s: Option<f64>,
}

impl Calibration {
    /// The nominal figures for `knobs` when nothing was measured: `L` the mean of the default
    /// latency draw (1..5 ms), 3 ms, and `c = 2L + s`.
    pub fn nominal(knobs: &partmap::config::Knobs) -> Calibration {
        let l = 0.003;
        Calibration { bandwidth: knobs.bandwidth_bytes_per_s, latency_s: l, chunk_s: 2.0 * l + knobs.disk_sync_ms as f64 / 1000.0, request_s: None }
    }
}

/// Seeds of the calibration move. Since the madsim patch (PATCHES.md) `L` is the latency draw
/// alone (uniform over 1..5 ms, standard deviation 1.15 ms), and one move measures it from three
/// draws, so one seed's `L` spreads by about 0.67 ms, 22% of its 3 ms mean. 8 seeds left the
/// mean's standard error at 8% (0.24 ms) and gave 2.64 ms at 1 GiB/s, 1.5 standard errors under
/// the draw's mean, which every pause's `4L` to `7L` carried into the model (the 1 GiB/s cells
/// of the quick grid all erred positive, up to +15%). 128 seeds bring the standard error to 2%
/// (0.06 ms: measured 3.03 and 3.07 ms at 100 MiB/s and 1 GiB/s), under `TARGET_REL_SE`, the
/// precision the grid asks of a cell's mean pause, for about 16 s of CPU for both bandwidths.
pub const CALIBRATION_SEEDS: u64 = 128;

/// Measure `L` and `c` at `bandwidth` from [`CALIBRATION_SEEDS`] stop-and-copy moves of a
/// range of 4 s of bytes with no writes, each from the protocol step it stands for: from the
/// source's `drained` to the store's `fence` at the new epoch go three control messages and a
/// sync (`3L + s`: to the leader, to the target, to the store); from the fence to the target
/// serving go the last answer and the copy (`L + S / B + (chunks − 1) c`). The means over the
/// seeds.
///
/// Errors: a calibration move did not commit, or its events are missing.
pub fn calibrate(bandwidth: u64) -> Result<Calibration, String> {
    let cell = Cell { strategy: Strategy::StopAndCopy, size: bandwidth * 4, ratio: 0.0, bandwidth, faults: false };
    let scenario = cell.scenario().map_err(|e| format!("calibration at {bandwidth} B/s: {e}"))?;
    let knobs = knobs_of(&cell);
    let sync = knobs.disk_sync_ms as f64 / 1000.0;
    let chunk = partmap::store::chunk_budget(bandwidth, knobs.store_timeout_ms, 0) as f64;
    let (mut ls, mut cs, mut rs) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 0..CALIBRATION_SEEDS {
        let opts = RunOptions { seed, scenario: scenario.clone(), scenario_label: "report pause calibration".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
        let report = run_seed(&opts);
        let h = report.handoffs.iter().find(|h| h.committed).ok_or_else(|| format!("calibration at {bandwidth} B/s, seed {seed}: the move did not commit"))?;
        let mut drained = None;
        let mut fence = None;
        for e in &report.events {
            match e.sys() {
                Some(Sys::Drained { server, range, epoch, .. }) if u64::from(server.0) == h.from && range.0 == h.range && epoch.0 == h.from_epoch => {
                    drained.get_or_insert(e.t_us);
                }
                Some(Sys::Fence { stream, epoch, .. }) if stream.0 == h.range && epoch.0 == h.epoch => {
                    fence.get_or_insert(e.t_us);
                }
                _ => {}
            }
        }
        let (Some(drained), Some(fence)) = (drained, fence) else { return Err(format!("calibration at {bandwidth} B/s, seed {seed}: no drained or fence event for the move")) };
        let served = h.paused_at_us as f64 / 1e6 + h.server_pause_ms / 1000.0;
        let l = ((fence.saturating_sub(drained)) as f64 / 1e6 - sync) / 3.0;
        let chunks = (h.bytes as f64 / chunk).ceil().max(2.0);
        let c = (served - fence as f64 / 1e6 - l - h.bytes as f64 / bandwidth as f64) / (chunks - 1.0);
        ls.push(l.max(0.0));
        cs.push(c.max(0.0));
        rs.push(h.paused_at_us.saturating_sub(cell.start_s() * 1_000_000) as f64 / 1e6);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Ok(Calibration { bandwidth, latency_s: mean(&ls), chunk_s: mean(&cs), request_s: Some(mean(&rs)) })
}

pub(crate) fn calibration_at(cal: &[Calibration], knobs: &partmap::config::Knobs) -> Calibration {
    cal.iter().find(|c| c.bandwidth == knobs.bandwidth_bytes_per_s).copied().unwrap_or_else(|| Calibration::nominal(knobs))
}

/// The cutover's fixed part, seconds: `D + 4L + s` (see [`Model`]), for appends of
/// `append_bytes` arriving at `w / append_bytes` a second.
fn fixed_s(knobs: &partmap::config::Knobs, l: f64, append_bytes: f64, w: f64) -> f64 {
    let sync = knobs.disk_sync_ms as f64 / 1000.0;
    drain_s(knobs, l, append_bytes, w) + 4.0 * l + sync
}

/// The drain `D`, seconds: the rest of the last admitted append's trip to the store and back,
/// `T = a / B + 2L + s`. Admissions arrive as a Poisson stream at `λ = W / a`, so the time `A`
/// since the last one before the pause is exponential and `D = max(0, T − A)`, whose mean is
/// `T − (1 − e^{−λT}) / λ`: near `T` when appends are dense, near 0 when they are sparse.
/// (Measured on 40 seeds of a pre-copy cell, 64 MiB at r = 0.05 of 100 MiB/s: 7.2 ms against
/// 7.4 ms by this formula; the earlier `T / 2` said 6.3 ms.)
fn drain_s(knobs: &partmap::config::Knobs, l: f64, append_bytes: f64, w: f64) -> f64 {
    let b = knobs.bandwidth_bytes_per_s as f64;
    let sync = knobs.disk_sync_ms as f64 / 1000.0;
    let trip = append_bytes / b + 2.0 * l + sync;
    let lambda = if append_bytes > 0.0 { w / append_bytes } else { 0.0 };
    if lambda <= 0.0 {
        return 0.0;
    }
    trip - (1.0 - (-lambda * trip).exp()) / lambda
}

/// The model's figures for `cell` (see [`Model`]) with `l` the one-way message time
/// ([`Calibration`]) and `w` the write rate into the range (bytes/s): `start_bytes` is the range at the move's
/// start (pre-copy's `V_0`), `pause_bytes` the range at the pause (stop-and-copy's `S_p`).
pub fn model(cell: &Cell, knobs: &partmap::config::Knobs, cal: Calibration, w: f64, start_bytes: f64, pause_bytes: f64) -> Model {
    let l = cal.latency_s;
    let tau = knobs.manager_tick_ms as f64 / 1000.0;
    let sync = knobs.disk_sync_ms as f64 / 1000.0;
    let wait_s = (knobs.store_timeout_ms + knobs.rpc_timeout_ms) as f64 / 1000.0;
    let a = cell.write_rate() / cell.appends_per_s();
    let fixed = fixed_s(knobs, l, a, w);
    // The preload is in records of one chunk each; what the clients wrote is in appends of
    // `a` bytes, whole appends to a chunk (see [`transfer_parts_s`]).
    let preload = cell.size as f64;
    let mixed = |v: f64| transfer_parts_s(knobs, cal, v.min(preload), (v - preload).max(0.0), a);
    let appended = |v: f64| transfer_parts_s(knobs, cal, 0.0, v, a);
    let gap = |x: f64| {
        if x + 4.0 * l + sync < wait_s {
            x + tau + 8.0 * l
        } else {
            x + 4.0 * l + (tau + 4.0 * l) / 2.0
        }
    };
    match cell.strategy {
        Strategy::StopAndCopy => Model { pause_ms: 1000.0 * (fixed + mixed(pause_bytes)), rounds: 0, converged: true, tail_bytes: pause_bytes, before_bytes: 0.0 },
        Strategy::PreCopy => {
            let threshold = knobs.precopy_threshold_bytes as f64;
            let mut v = start_bytes;
            let mut x = mixed(v);
            let mut before = v;
            let mut rounds = 1;
            let mut converged = v <= threshold;
            while !converged && rounds < knobs.precopy_max_rounds {
                v = w * gap(x);
                x = appended(v);
                before += v;
                rounds += 1;
                converged = v <= threshold;
            }
            let tail = w * (gap(x) + 3.0 * l + sync);
            Model { pause_ms: 1000.0 * (fixed + appended(tail)), rounds, converged, tail_bytes: tail, before_bytes: before }
        }
    }
}

/// Seconds from the operator's move request to the source's pause for stop-and-copy (to the
/// target's first read for pre-copy, `first_read`), by the leader's round structure: the
/// request reaches the authority and is synced (`L + s`); the next round starts on average
/// half a period later (a period is a tick `τ` and the round's lease renewal and state read,
/// `4L`); that round renews, reads (`4L`) and journals the transfer (`2L + s`) and ends; a tick
/// later the next round renews and reads (`4L`) and then either journals the pause (`2L + s`)
/// and sends it to the source (`L`), or calls the target (`L`), whose read reaches the store
/// (`L`). Stop-and-copy: `1.5τ + 16L + 3s`; pre-copy's first read: `1.5τ + 15L + 2s`.
/// (Measured in the committed grid's fault-free stop-and-copy cells, from the bytes written
/// between the clients' start and the pause at the offered rate: 0.34 to 0.37 s over the ten
/// rate and bandwidth pairs, against 0.351 s by this formula at `L` = 3 ms.)
pub fn request_to_pause_s(knobs: &partmap::config::Knobs, cal: Calibration, first_read: bool) -> f64 {
    let (l, tau, sync) = (cal.latency_s, knobs.manager_tick_ms as f64 / 1000.0, knobs.disk_sync_ms as f64 / 1000.0);
    let to_pause = 1.5 * tau + 16.0 * l + 3.0 * sync;
    if first_read {
        to_pause - l - sync
    } else {
        to_pause
    }
}

/// The model's prediction for `cell` from its inputs alone (size, offered write rate,
/// bandwidth and the knobs), with nothing measured: the range at the move's start and at the
/// pause are the preload plus what the offered rate writes until then
/// ([`request_to_pause_s`]). This is what `report pause --predict` prints and what every cell
/// of the report is judged against (the model fed each seed's own sizes and rate, [`model`],
/// is the second opinion that separates the round structure from the size prediction).
pub fn predict(cell: &Cell, knobs: &partmap::config::Knobs, cal: Calibration) -> Model {
    let w = cell.write_rate();
    let s = cell.size as f64;
    let start = s + w * request_to_pause_s(knobs, cal, true);
    let pause = s + w * request_to_pause_s(knobs, cal, false);
    model(cell, knobs, cal, w, start, pause)
}

/// Pre-copy's convergence limit, bytes/s: the largest write rate `W` at which the model's
/// rounds reach the stop threshold `θ` (however many rounds it takes). From the model's round
/// recursion `V' = W · g(V)`: near the threshold a round is shorter than the leader's wait, so
/// `g(V) = x(V) + τ + 8L` with `x(V) = V / B + (chunks − 1) c ≈ V (1 + c / Δ) / B` (a chunk is
/// `Δ` seconds of link, `partmap::store::CHUNK_TARGET_MS`); the rounds approach the fixed point
/// `V* = W (τ + 8L) / (1 − W (1 + c / Δ) / B)`, and `V* <= θ` solves to
/// `W_max = θB / (B(τ + 8L) + θ(1 + c/Δ))`. A threshold whose round outlasts the leader's wait
/// uses that branch's gap, `x(V) + 4L + (τ + 4L) / 2`, in place of `x(V) + τ + 8L`. The chunk
/// term counts every chunk's overhead, so this is the limit for a range of many chunks (a
/// lower bound for one of a few). `Δ` is the link time of one chunk of appends of
/// `append_bytes` each ([`chunk_of_appends`]: whole appends, so under 50 ms for appends above
/// a few percent of a chunk).
pub fn convergence_limit_w(knobs: &partmap::config::Knobs, cal: Calibration, append_bytes: f64) -> f64 {
    let (l, tau, sync) = (cal.latency_s, knobs.manager_tick_ms as f64 / 1000.0, knobs.disk_sync_ms as f64 / 1000.0);
    let b = knobs.bandwidth_bytes_per_s as f64;
    let theta = knobs.precopy_threshold_bytes as f64;
    let delta = chunk_of_appends(knobs, append_bytes) / b;
    let wait_s = (knobs.store_timeout_ms + knobs.rpc_timeout_ms) as f64 / 1000.0;
    let fixed_gap = if transfer_parts_s(knobs, cal, 0.0, theta, append_bytes) + 4.0 * l + sync < wait_s { tau + 8.0 * l } else { 4.0 * l + (tau + 4.0 * l) / 2.0 };
    theta * b / (b * fixed_gap + theta * (1.0 + cal.chunk_s / delta))
}

/// Seconds to send `v` bytes from the store in chunks: `v / B`, plus the calibrated overhead
/// `c` (about a round trip, `2L + s`) for every chunk after the first (whose trip the
/// cutover's fixed part counts). A chunk is what the link sends in
/// `partmap::store::CHUNK_TARGET_MS` (`Δ`); this counts full chunks (the preload's records are
/// one chunk each).
pub(crate) fn transfer_s(knobs: &partmap::config::Knobs, cal: Calibration, v: f64) -> f64 {
    transfer_parts_s(knobs, cal, v, 0.0, 0.0)
}

/// The bytes one chunk carries of appends of `a` bytes: whole appends only, as many as fit in
/// the chunk budget and at least one (`partmap::store` sends a record whole), so appends above
/// half a chunk leave the rest of each chunk empty (`a = 0`: a full chunk).
pub(crate) fn chunk_of_appends(knobs: &partmap::config::Knobs, a: f64) -> f64 {
    let budget = partmap::store::chunk_budget(knobs.bandwidth_bytes_per_s, knobs.store_timeout_ms, 0) as f64;
    if a <= 0.0 {
        return budget;
    }
    // An append's wire size: its payload and about 31 bytes of header and key.
    let wire = a + 31.0;
    (budget / wire).floor().max(1.0) * a
}

/// Seconds to send `preload` bytes of full chunks and `appended` bytes of appends of `a` bytes
/// each ([`chunk_of_appends`]): `(preload + appended) / B + (chunks − 1) c`, the chunks sent one
/// after another, each asked for once the previous arrived (stop-and-wait). (The stop-and-wait
/// of appends larger than half a chunk: 64 GiB at r = 0.95 of 1 GiB/s takes 32 appends/s of
/// 31.9 MB, one to a 53.7 MB chunk, so a chunk carries 59% of what the link could: the rounds
/// grew 1.15 times a round, where the model with full chunks said 1.08.)
pub(crate) fn transfer_parts_s(knobs: &partmap::config::Knobs, cal: Calibration, preload: f64, appended: f64, a: f64) -> f64 {
    let b = knobs.bandwidth_bytes_per_s as f64;
    let full = chunk_of_appends(knobs, 0.0);
    // The preload's last record and the first appends may share a chunk.
    let chunks = (preload / full + appended / chunk_of_appends(knobs, a)).ceil();
    (preload + appended) / b + (chunks.max(1.0) - 1.0) * cal.chunk_s
}

/// The floor under any strategy for a measured tail, ms (see [`Model`]), at write rate `w`.
pub fn floor_ms(cell: &Cell, knobs: &partmap::config::Knobs, cal: Calibration, w: f64, tail_bytes: f64) -> f64 {
    let a = cell.write_rate() / cell.appends_per_s();
    1000.0 * (fixed_s(knobs, cal.latency_s, a, w) + transfer_parts_s(knobs, cal, 0.0, tail_bytes, a))
}

/// The model's crossover at `bandwidth` and `ratio`: the smallest range size (bytes at the move)
/// from which pre-copy's modelled pause is below stop-and-copy's, searched on a log grid from
/// 4 KiB to 64 GiB. `None`: never below it there.
pub fn model_crossover(cal: &[Calibration], bandwidth: u64, ratio: f64) -> Option<u64> {
    let pause = |st: Strategy, size: f64| {
        let c = Cell { strategy: st, size: size as u64, ratio, bandwidth, faults: false };
        let k = knobs_of(&Cell { size: MIB, ..c.clone() });
        model(&c, &k, calibration_at(cal, &k), c.write_rate(), size, size).pause_ms
    };
    (0..=240).map(|i| 4.0 * KIB as f64 * 2f64.powf(i as f64 / 10.0)).find(|&x| pause(Strategy::PreCopy, x) < pause(Strategy::StopAndCopy, x)).map(|x| x as u64)
}

