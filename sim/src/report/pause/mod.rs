//! `partmap-sim report pause`: the design review of how long a handoff pauses writes (issue 15).
//!
//! A grid of cells, each one planned move of one range (`server-1` to `server-2`) under load:
//! strategy (stop-and-copy, or pre-copy with its threshold and round limit) × range size
//! (simulated bulk bytes preloaded into the range, 256 KiB to 64 GiB) × write rate into the
//! range (as a fraction `r = W / B` of the bandwidth) × bandwidth, without faults, and (at one
//! write rate) with the random fault mix. Every cell runs N seeds on worker threads; per cell
//! it reports the write pause at the servers and at the clients (p50, p99, max), the bytes copied
//! before and during the pause, the pre-copy rounds and whether pre-copy converged, and, in the
//! fault-free cells, the analytical model's pause next to the measured one with the error and
//! the floor (see [`model`]). Writes `reports/pause/README.md`, `grid.csv` and SVG plots.
//!
//! Source of the model: C. Clark et al., "Live Migration of Virtual Machines", NSDI 2005
//! (iterative pre-copy as rounds that converge while the write rate stays below the copy
//! bandwidth), adapted to an append-only stream and to this leader's round structure.

use crate::measure::handoff::percentile;
use crate::run::{run_seed, RunOptions, RunOutcome};
use crate::run::nemesis;
use crate::scenario::{Scenario, TimedFault};
use crate::search::explore::{names_by_role, timed};
use partmap::event::Event as Sys;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

mod model;
pub mod predict;
mod render;

pub use render::{convergence_limit, crossover, csv, markdown, plots, read_csv, wins};

pub use model::{calibrate, floor_ms, model, model_crossover, Calibration, Model, CALIBRATION_SEEDS};
use model::{calibration_at, transfer_s};

/// One kibibyte, in bytes (1024).
pub const KIB: u64 = 1024;
/// One mebibyte, in bytes (1024 KiB).
pub const MIB: u64 = 1024 * KIB;
/// One gibibyte, in bytes (1024 MiB).
pub const GIB: u64 = 1024 * MIB;

/// Appends per second into the range (all clients together) in a short cell; each carries
/// `W / appends per s` bytes, mostly simulated bulk. Long cells use fewer (see
/// [`Cell::appends_per_s`]).
pub const APPENDS_PER_S: f64 = 200.0;
/// Appends a cell's window may hold at most (the cost of a run grows with them).
const MAX_APPENDS: f64 = 40_000.0;
/// Clients offering the appends: each has one operation in flight, so enough of them that the
/// offered rate is reached (an append of a few MiB takes a few ms per link).
pub const CLIENTS: u32 = 64;
/// Real payload bytes of each append (the rest of its size is bulk).
pub const RECORD_BYTES: u64 = 64;
/// Pre-copy stops once a round copied at most this many bytes...
pub const PRECOPY_THRESHOLD_BYTES: u64 = 16 * MIB;
/// ...or after this many rounds.
pub const PRECOPY_MAX_ROUNDS: u32 = 8;
/// The bandwidths of the grid: 100 MiB/s (about a 1 Gb/s link) and 1 GiB/s (about 10 Gb/s).
pub const BANDWIDTHS: [u64; 2] = [100 * MIB, GIB];
/// Longest simulated workload window a cell may need (the scenario format's limit).
const MAX_WINDOW_S: f64 = 3600.0;

/// A move strategy of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Pause, then copy everything.
    StopAndCopy,
    /// Copy in rounds while the source serves, then pause for the tail.
    PreCopy,
}

impl Strategy {
    /// The scenario name (`stop-and-copy`, `pre-copy`).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::StopAndCopy => "stop-and-copy",
            Strategy::PreCopy => "pre-copy",
        }
    }
}

/// One cell of the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// How the move copies.
    pub strategy: Strategy,
    /// Bytes preloaded into the range before the run (simulated bulk).
    pub size: u64,
    /// Write rate into the range over the bandwidth, `r = W / B`.
    pub ratio: f64,
    /// Every node's outgoing bandwidth, bytes per second.
    pub bandwidth: u64,
    /// With the random fault mix (crashes, partitions, pauses, slow disks).
    pub faults: bool,
}

impl Cell {
    /// Appends per second: [`APPENDS_PER_S`], or fewer so the window holds at most 40,000, but
    /// enough that each stays within the store's chunk (at most 50 ms of link: `W / (20 B)`, with
    /// a quarter to spare).
    pub fn appends_per_s(&self) -> f64 {
        let least = 25.0 * self.ratio.max(0.05);
        (MAX_APPENDS / self.window_s()).clamp(least, APPENDS_PER_S)
    }

    /// Write rate into the range, bytes per second.
    pub fn write_rate(&self) -> f64 {
        self.ratio * self.bandwidth as f64
    }

    /// When the clients begin and the operator asks for the move, s: once the first owner has
    /// loaded the preloaded range (`S / B`, with a quarter to spare, and a second for the
    /// bootstrap), so no client builds a backlog against a range that is still opening.
    pub fn start_s(&self) -> u64 {
        (1.0 + 1.25 * self.size as f64 / self.bandwidth as f64).ceil() as u64
    }

    /// Simulated seconds a move of `strategy` needs by the model, without margin.
    fn move_s(&self, strategy: Strategy) -> f64 {
        let copy_s = self.size as f64 / self.bandwidth as f64;
        match strategy {
            Strategy::StopAndCopy => copy_s,
            // Every round copies what the previous one took to copy at rate r: at most
            // PRECOPY_MAX_ROUNDS + 1 of them, each also a leader tick.
            Strategy::PreCopy => (0..=PRECOPY_MAX_ROUNDS).map(|i| copy_s * self.ratio.powi(i as i32) + 0.3).sum::<f64>(),
        }
    }

    /// Simulated seconds the move needs by the model, with margin: the window the cell runs.
    /// With faults both strategies run the longer of their two windows, so that a seed's
    /// scenario, and with it its fault schedule, is the same for both but for the strategy.
    fn window_s(&self) -> f64 {
        let move_s = if self.faults { self.move_s(Strategy::PreCopy).max(self.move_s(Strategy::StopAndCopy)) } else { self.move_s(self.strategy) };
        // The clients and the move start once the first owner has loaded the range.
        (self.start_s() as f64 + 2.5 * move_s + 10.0).ceil()
    }

    /// Bytes the range holds at the heal: its preload and everything the clients wrote over
    /// the window. A failover after the heal reloads all of it, so the liveness deadline
    /// grows with it (sized by the preload alone, a 16 GiB range at r = 0.25 of 100 MiB/s,
    /// twice as large after its 626 s window, was still loading when the deadline passed).
    pub fn size_at_heal(&self) -> f64 {
        self.size as f64 + self.write_rate() * self.window_s()
    }

    /// The CPU one seed of this cell costs on the `fast` build, seconds, estimated from its
    /// inputs alone: a fixed part, each append the clients offer, each simulated second and
    /// each chunk copied (the range and its writes, once per copy); the constants are fitted to
    /// the grid's runs (see [`CHEAP_SEED_S`]). An estimate, so that the seeds a cell runs are a
    /// function of the cell, never of how busy the machine was.
    pub fn cost_s(&self) -> f64 {
        let sim_s = self.start_s() as f64 + self.window_s();
        let appends = self.appends_per_s() * self.window_s();
        let copies = match self.strategy {
            Strategy::StopAndCopy => 1.0,
            Strategy::PreCopy => (0..=PRECOPY_MAX_ROUNDS).map(|i| self.ratio.powi(i as i32)).sum::<f64>(),
        };
        // A chunk is at most 50 ms of link; the range is read once at the open and copied.
        let chunks = (1.0 + copies) * self.size as f64 / (0.05 * self.bandwidth as f64);
        COST_FIXED_S + COST_APPEND_S * appends + COST_SIM_S * sim_s + COST_CHUNK_S * chunks
    }

    /// The seeds this cell runs when a cheap cell runs `seeds`: all of them where one seed is
    /// estimated under [`CHEAP_SEED_S`] ([`Cell::cost_s`]), else as many as that cost buys
    /// (`seeds × CHEAP_SEED_S / cost`), at least [`MIN_SEEDS`] (or `seeds`, if fewer).
    pub fn planned_seeds(&self, seeds: u64) -> u64 {
        let cost = self.cost_s();
        if cost < CHEAP_SEED_S {
            return seeds;
        }
        ((seeds as f64 * CHEAP_SEED_S / cost).round() as u64).clamp(MIN_SEEDS.min(seeds), seeds)
    }

    /// Why the cell cannot run here, if it cannot: its move would outlast the longest window,
    /// or (with faults) a failover's reload of the range would outlast the liveness deadline.
    pub fn skip_reason(&self) -> Option<String> {
        if self.window_s() > MAX_WINDOW_S {
            return Some(format!("the move needs more than {MAX_WINDOW_S} s of simulated time"));
        }
        if self.size as f64 / self.bandwidth as f64 > 200.0 {
            return Some("one copy of the range takes over 200 s (kept out of the grid for time; `report` cells are ordinary scenarios)".into());
        }
        if self.faults && 60.0 + 1.5 * self.size_at_heal() / self.bandwidth as f64 > 600.0 {
            return Some("a failover's reload of the range would outlast the 600 s liveness deadline".into());
        }
        None
    }

    /// The scenario of this cell: one range on server-1 of three, preloaded with `size`
    /// bytes; `APPENDS_PER_S` appends a second of `W / APPENDS_PER_S` bytes; a move to
    /// server-2 requested when the clients start ([`Cell::start_s`]); random faults only with `faults`.
    ///
    /// Errors: the scenario does not validate (an append larger than the store's chunk).
    pub fn scenario(&self) -> Result<Scenario, String> {
        Scenario::parse(&self.scenario_json().to_string(), "report pause cell")
    }

    /// The faults seed `seed` of this cell runs with, as an explicit schedule: the cell's one
    /// move request and, with `faults`, the random fault mix drawn first from the nemesis's own
    /// stream for `seed` ([`nemesis::plan_rng`]) over the cell's window. The draw sees the cell
    /// with its strategy set aside (both strategies of a faulted cell run the same window and
    /// topology), so it is a function of the seed and the cell's size, rate and bandwidth only:
    /// stop-and-copy and pre-copy get the same faults at the same times for the same seed, a
    /// paired comparison. It is exactly what the random mix of [`Cell::scenario`] draws for
    /// `seed`, so `--cell ... ,faults` run with that seed replays the grid's run.
    ///
    /// Errors: the scenario does not validate.
    pub fn fault_schedule(&self, seed: u64) -> Result<Vec<TimedFault>, String> {
        let neutral = Cell { strategy: Strategy::PreCopy, ..self.clone() }.scenario()?;
        let plan = nemesis::draw(&neutral, &names_by_role(&neutral), &mut nemesis::plan_rng(seed));
        Ok(plan.faults.iter().map(timed).collect())
    }

    /// The scenario seed `seed` of this cell runs: [`Cell::scenario`] with its faults replayed
    /// from [`Cell::fault_schedule`] (random faults off), so a faulted cell's two strategies
    /// differ only in the strategy.
    ///
    /// Errors: the scenario does not validate.
    pub fn scenario_for(&self, seed: u64) -> Result<Scenario, String> {
        let mut s = self.scenario()?;
        if self.faults {
            s.faults.schedule = self.fault_schedule(seed)?;
            s.faults.random = None;
        }
        Ok(s)
    }

    /// The scenario of this cell as the JSON a scenario file holds (see [`Cell::scenario`]), so
    /// one cell's seed can be run, traced and shrunk like any scenario
    /// (`partmap-sim report pause --cell ...`).
    pub fn scenario_json(&self) -> serde_json::Value {
        let per_append = (self.write_rate() / self.appends_per_s()) as u64;
        let bulk = per_append.saturating_sub(RECORD_BYTES);
        let reload_s = self.size_at_heal() / self.bandwidth as f64;
        let json = serde_json::json!({
            "description": format!("report pause cell: {} of {} at r = {} of {} B/s{}", self.strategy.name(), self.size, self.ratio, self.bandwidth, if self.faults { " with the random fault mix" } else { "" }),
            "topology": { "servers": 3, "managers": 2, "frontends": 2, "clients": CLIENTS, "initial_ranges": 1 },
            "knobs": { "bandwidth_bytes_per_s": self.bandwidth },
            "workload": { "start_s": self.start_s(), "duration_s": self.window_s() as u64, "ops_per_s": self.appends_per_s(), "read_fraction": 0.0, "record_bytes": RECORD_BYTES, "bulk_bytes": bulk, "preload_bytes": self.size, "key_skew": 0.0 },
            "moves": { "strategy": self.strategy.name(), "precopy_threshold_bytes": PRECOPY_THRESHOLD_BYTES, "precopy_max_rounds": PRECOPY_MAX_ROUNDS, "cutover_budget_ms": 0, "cutover_timeout_ms": 0 },
            "faults": {
                "random": if self.faults { serde_json::json!({}) } else { serde_json::Value::Null },
                "schedule": [{ "at_ms": self.start_s() * 1000, "fault": { "kind": "move", "key": "k000000", "to": "server-2" } }],
            },
            "heal": { "liveness_deadline_s": (60.0 + 1.5 * reload_s).min(600.0) as u64 },
        });
        json
    }

    /// Read a cell written `STRATEGY,SIZE,RATIO,BANDWIDTH[,faults]` (sizes in bytes or with a
    /// `KiB`/`MiB`/`GiB` suffix; bandwidth in bytes/s or `MiB`/`GiB` meaning per second), e.g.
    /// `pre-copy,64MiB,0.05,100MiB`.
    ///
    /// Errors: a missing or unreadable part, named.
    pub fn parse(text: &str) -> Result<Cell, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if !(4..=5).contains(&parts.len()) {
            return Err(format!("cell `{text}`: expected STRATEGY,SIZE,RATIO,BANDWIDTH[,faults], e.g. pre-copy,64MiB,0.05,100MiB"));
        }
        let strategy = match parts[0] {
            "stop-and-copy" => Strategy::StopAndCopy,
            "pre-copy" => Strategy::PreCopy,
            other => return Err(format!("cell `{text}`: strategy `{other}` is not stop-and-copy or pre-copy")),
        };
        let bytes = |what: &str, v: &str| -> Result<u64, String> {
            let (num, unit) = match v.find(|c: char| c.is_ascii_alphabetic()) {
                Some(i) => (&v[..i], &v[i..]),
                None => (v, ""),
            };
            let mult = match unit {
                "" | "B" => 1,
                "KiB" => KIB,
                "MiB" => MIB,
                "GiB" => GIB,
                u => return Err(format!("cell `{text}`: {what} unit `{u}` is not B, KiB, MiB or GiB")),
            };
            let n: u64 = num.parse().map_err(|_| format!("cell `{text}`: {what} `{v}` is not a whole number of bytes"))?;
            n.checked_mul(mult).filter(|&b| b > 0).ok_or_else(|| format!("cell `{text}`: {what} `{v}` must be above 0 and fit in 64 bits"))
        };
        let size = bytes("size", parts[1])?;
        let ratio: f64 = parts[2].parse().map_err(|_| format!("cell `{text}`: ratio `{}` is not a number", parts[2]))?;
        if !(ratio > 0.0 && ratio < 1.0) {
            return Err(format!("cell `{text}`: ratio {ratio} must be above 0 and below 1 (r = W / B)"));
        }
        let bandwidth = bytes("bandwidth", parts[3])?;
        let faults = match parts.get(4) {
            None => false,
            Some(&"faults") => true,
            Some(other) => return Err(format!("cell `{text}`: the fifth part `{other}` may only be `faults`")),
        };
        Ok(Cell { strategy, size, ratio, bandwidth, faults })
    }
}

/// A cell whose seed costs under this much CPU (estimated, [`Cell::cost_s`]) runs every seed
/// asked for; a dearer one runs fewer ([`Cell::planned_seeds`]), seconds.
pub const CHEAP_SEED_S: f64 = 0.5;
/// The fewest seeds a dear cell runs (its tail is then the max of them).
pub const MIN_SEEDS: u64 = 20;
const COST_FIXED_S: f64 = 0.02;
const COST_APPEND_S: f64 = 20e-6;
const COST_SIM_S: f64 = 0.5e-3;
const COST_CHUNK_S: f64 = 50e-6;

/// The grid: every fault-free cell of strategy × size × ratio × bandwidth, and the cells with
/// the fault mix at `r = 0.25`. `quick` keeps three sizes and two ratios (for tests).
pub fn grid(quick: bool) -> Vec<Cell> {
    let sizes: Vec<u64> = if quick { vec![256 * KIB, 16 * MIB, GIB] } else { vec![256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, GIB, 16 * GIB, 64 * GIB] };
    let ratios: Vec<f64> = if quick { vec![0.05, 0.5] } else { vec![0.05, 0.25, 0.5, 0.75, 0.95] };
    let bandwidths = BANDWIDTHS;
    let mut out = Vec::new();
    for faults in [false, true] {
        for &bandwidth in &bandwidths {
            for strategy in [Strategy::StopAndCopy, Strategy::PreCopy] {
                for &size in &sizes {
                    for &ratio in &ratios {
                        if faults && ratio != 0.25 && !(quick && ratio == 0.05) {
                            continue;
                        }
                        out.push(Cell { strategy, size, ratio, bandwidth, faults });
                    }
                }
            }
        }
    }
    out
}

/// What one seed of a cell measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// The seed.
    pub seed: u64,
    /// Write pause at the servers, ms.
    pub server_ms: f64,
    /// Longest gap between acknowledged appends around the pause, ms (`None`: no client tried).
    pub client_ms: Option<f64>,
    /// Bytes copied before the pause.
    pub before: u64,
    /// Bytes copied during the pause.
    pub during: u64,
    /// Pre-copy rounds.
    pub rounds: u32,
    /// The last round copied at most the threshold.
    pub converged: bool,
    /// Range bytes at the move's start (the first round) and at the pause.
    pub start_bytes: u64,
    /// Range bytes at the pause.
    pub pause_bytes: u64,
    /// The write rate into the range the clients achieved from their start to the pause,
    /// bytes/s: the model's `W` for stop-and-copy (see [`achieved_w`] for pre-copy).
    pub rate_since_start: f64,
    /// When the first pre-copy round reported its copy, µs (`None` for stop-and-copy).
    pub first_round_us: Option<u64>,
    /// When the source paused, µs.
    pub paused_at_us: u64,
    /// The pause began after the clients' window ended (its client figure is then not what a
    /// client felt, and is left out).
    pub after_window: bool,
    /// Appends that failed (an error answer, or no answer: outcome unknown) over the run, the
    /// run's one move included.
    pub appends_failed: u64,
    /// Appends the frontends shed (refused before sending, the range's queue full) over the run.
    pub shed: u64,
    /// Of `appends_failed`, those invoked during the move (the span of `move_latency_ms`), and
    /// of `shed`, those that arrived in it: what the move cost, apart from what the same run
    /// lost outside it (at r = 0.95 a client's one slot is sometimes busy past
    /// `shed_after_ms` with no move at all). `None`: read from a CSV without the columns.
    pub move_lost: Option<[u64; 2]>,
    /// Handoffs of the seed whose commit never landed (rolled back or superseded), and the
    /// longest write pause among them, ms.
    pub aborted: u32,
    /// The longest write pause of an aborted handoff, ms (0 without one).
    pub aborted_pause_ms: f64,
    /// Per-request append latency during the move (invoked from the move request until the
    /// last pause of the seed ended: the committed target serving, or an aborted pause's end),
    /// invocation to completion whatever the outcome, ms: p50 and p99 by nearest rank (`None`:
    /// no append in that span).
    pub move_latency_ms: Option<[f64; 2]>,
    /// The same run's baseline: appends invoked outside the move, ms, p50 and p99.
    pub base_latency_ms: Option<[f64; 2]>,
    /// Appends timed in each span: during the move, and outside it.
    pub latency_n: [u64; 2],
}

/// The write rate into the range the model is given, bytes/s. Pre-copy: the bytes that
/// arrived after round 1 read the stream (it read them before its copy ended) over the time
/// since that read, the read taking `x(V_0)` with the calibrated chunk overhead (taken as
/// `V_0 / B` alone, the rate came out 15 to 25% high for large ranges at 100 MiB/s); this is
/// the rate over the rounds that the tail depends on, fluctuations of the Poisson arrivals
/// included. Stop-and-copy: the clients' rate from their start to the pause.
pub fn achieved_w(m: &Measured, knobs: &partmap::config::Knobs, cal: Calibration) -> f64 {
    match m.first_round_us {
        Some(t) => {
            let read_us = t.saturating_sub((transfer_s(knobs, cal, m.start_bytes as f64) * 1e6) as u64);
            let secs = m.paused_at_us.saturating_sub(read_us) as f64 / 1e6;
            if secs > 0.0 { m.pause_bytes.saturating_sub(m.start_bytes) as f64 / secs } else { 0.0 }
        }
        None => m.rate_since_start,
    }
}

/// One cell's seeds.
#[derive(Clone, Debug)]
pub struct CellResult {
    /// The cell.
    pub cell: Cell,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
    /// Each seed's handoff (committed) as measured; seeds without one are counted in
    /// `no_handoff`.
    pub runs: Vec<Measured>,
    /// Seeds whose move never committed (faults rolled it back or superseded it).
    pub no_handoff: u64,
    /// Those seeds, with what was measured of them (seed, appends failed and shed, aborted
    /// handoffs; no pause), so no seed is dropped from the data.
    pub missing: Vec<Measured>,
    /// Seeds that did not pass (`seed: outcome`).
    pub failed: Vec<String>,
    /// CPU time of this cell's runs, seconds (thread CPU time; 0 when read from a CSV). Not
    /// written to the report, which must not depend on the machine.
    pub cpu_s: f64,
}

impl CellResult {
    /// A cell with no seeds run yet (skipped if it cannot run).
    pub fn empty(cell: &Cell) -> CellResult {
        CellResult { cell: cell.clone(), skipped: cell.skip_reason(), runs: Vec::new(), no_handoff: 0, missing: Vec::new(), failed: Vec::new(), cpu_s: 0.0 }
    }
}

/// One seed of `cell` run and measured as the grid does: the committed
/// move's figures (`Err`: none committed) and, when the seed failed its checkers, why.
pub fn measure_cell(cell: &Cell, seed: u64) -> (Result<Measured, Measured>, Option<String>) {
    match cell.scenario_for(seed) {
        Ok(s) => measure_in(cell, s, seed),
        Err(e) => (Err(Measured { seed, ..Default::default() }), Some(format!("seed {seed}: bad cell: {e}"))),
    }
}

/// One seed of `cell` run as `scenario` (the cell's own, or one with other knobs): the
/// committed move's figures (`Err`: no move committed; the seed's appends failed and shed and
/// its aborted handoffs only) and, when the seed did not pass its checkers, why.
pub(crate) fn measure_in(cell: &Cell, scenario: Scenario, seed: u64) -> (Result<Measured, Measured>, Option<String>) {
    let threshold = scenario.moves.precopy_threshold_bytes;
    let opts = RunOptions { seed, scenario, scenario_label: "report pause".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let failed = (report.outcome() != RunOutcome::Pass).then(|| {
        let why: Vec<String> = report.verdicts.iter().filter_map(|v| v.violation.as_ref().map(|x| format!("{}: {x}", v.property))).collect();
        format!("{} of {} at r = {} of {} B/s{}, seed {seed}: {:?}: {}", cell.strategy.name(), cell.size, cell.ratio, cell.bandwidth, if cell.faults { " with faults" } else { "" }, report.outcome(), why.join("; "))
    });
    // Every committed handoff counts; one that paused after the clients' window ended is
    // marked (its client figure is no client's experience).
    let window_end_us = (opts.scenario.workload.start_s + opts.scenario.workload.duration_s).saturating_sub(1) * 1_000_000;
    let committed = report.handoffs.iter().find(|h| h.committed);
    // Every pause of a source that was not the committed move's (a move rolled back, or
    // superseded after its target served): from the pause to the range's next activation
    // anywhere (or the run's end).
    let mut aborted: Vec<f64> = Vec::new();
    let mut aborted_ends: Vec<u64> = Vec::new();
    for (i, e) in report.events.iter().enumerate() {
        if let Some(Sys::Paused { server, range, epoch }) = e.sys() {
            if committed.is_some_and(|h| h.range == range.0 && h.from == u64::from(server.0) && h.from_epoch == epoch.0) {
                continue;
            }
            let back = report.events[i..].iter().find(|x| matches!(x.sys(), Some(Sys::Activated { range: r, .. }) if r == range)).map_or(report.sim_ms * 1000, |x| x.t_us);
            aborted.push(back.saturating_sub(e.t_us) as f64 / 1000.0);
            aborted_ends.push(back);
        }
    }
    // The move: from its request (when the clients start) until the last pause ended.
    let move_from_us = opts.scenario.workload.start_s * 1_000_000;
    let committed_end_us = committed.map_or(0, |h| h.paused_at_us + (h.server_pause_ms * 1000.0) as u64);
    let move_to_us = aborted_ends.iter().copied().fold(committed_end_us, u64::max).max(move_from_us);
    let (during, outside) = append_latencies(&report.events, move_from_us, move_to_us);
    let lost = appends_lost(&report.events, move_from_us, move_to_us);
    let p50_p99 = |v: &[f64]| Some([percentile(v, 0.5)?, percentile(v, 0.99)?]);
    let base = Measured {
        seed,
        appends_failed: report.ops.appends_failed + report.ops.appends_unknown,
        shed: report.ops.shed,
        move_lost: Some(lost),
        aborted: aborted.len() as u32,
        aborted_pause_ms: aborted.iter().copied().fold(0.0, f64::max),
        move_latency_ms: p50_p99(&during),
        base_latency_ms: p50_p99(&outside),
        latency_n: [during.len() as u64, outside.len() as u64],
        ..Default::default()
    };
    let Some(h) = committed else { return (Err(base), failed) };
    let after_window = h.paused_at_us >= window_end_us;
    let mut rounds = Vec::new();
    let mut first_round_us = None;
    for e in &report.events {
        if let Some(Sys::Precopied { range, epoch, bytes, .. }) = e.sys() {
            if range.0 == h.range && epoch.0 == h.epoch {
                rounds.push(*bytes);
                first_round_us.get_or_insert(e.t_us);
            }
        }
    }
    // The clients' write rate into the range: the bytes appended from the clients' start
    // (`workload.start_s`, when the range holds its preload and the move is asked for) to the
    // pause, over that time. (Measured from the copy's timing instead, the rate came out 15 to
    // 25% high for large ranges at 100 MiB/s, where chunk round trips make a round last longer
    // than its bytes over the bandwidth.)
    let since_start_s = h.paused_at_us as f64 / 1e6 - cell.start_s() as f64;
    let rate_since_start = if since_start_s > 0.0 { h.bytes.saturating_sub(cell.size) as f64 / since_start_s } else { 0.0 };
    let m = Measured {
        server_ms: h.server_pause_ms,
        client_ms: h.client_gap_ms.filter(|_| !after_window),
        before: h.precopy_bytes,
        during: h.tail_bytes,
        rounds: rounds.len() as u32,
        converged: rounds.last().is_some_and(|b| *b <= threshold),
        start_bytes: rounds.first().copied().unwrap_or(h.bytes),
        pause_bytes: h.bytes,
        rate_since_start,
        first_round_us,
        paused_at_us: h.paused_at_us,
        after_window,
        ..base
    };
    (Ok(m), failed)
}

/// Every client append's latency in `events`, invocation to completion whatever the outcome
/// (the probe's left out), ms: those invoked in `[from_us, to_us)` and those invoked outside it.
pub fn append_latencies(events: &[crate::events::Event], from_us: u64, to_us: u64) -> (Vec<f64>, Vec<f64>) {
    use crate::events::What;
    use partmap::event::ClientOp;
    let mut invoked: std::collections::BTreeMap<partmap::ids::OpId, u64> = std::collections::BTreeMap::new();
    let (mut during, mut outside) = (Vec::new(), Vec::new());
    for e in events {
        match &e.what {
            What::Invoke { op: ClientOp::Append, id, .. } if id.client != 0 => {
                invoked.insert(*id, e.t_us);
            }
            What::Complete { op: ClientOp::Append, id, .. } => {
                let Some(at) = invoked.remove(id) else { continue };
                let ms = e.t_us.saturating_sub(at) as f64 / 1000.0;
                if (from_us..to_us).contains(&at) { during.push(ms) } else { outside.push(ms) }
            }
            _ => {}
        }
    }
    (during, outside)
}

/// The client appends of `events` lost in `[from_us, to_us)` (the probe's left out): those
/// invoked in it that did not succeed (failed, unknown, or `MapUnavailable`), and those the
/// clients shed whose arrival was in it (never sent). A failed append is one client
/// operation, whatever the frontend's attempts for it (`frontend_attempts`, 8 by default).
pub fn appends_lost(events: &[crate::events::Event], from_us: u64, to_us: u64) -> [u64; 2] {
    use crate::events::{Outcome, What};
    use partmap::event::ClientOp;
    let mut invoked: std::collections::BTreeMap<partmap::ids::OpId, u64> = std::collections::BTreeMap::new();
    let (mut failed, mut shed) = (0, 0);
    for e in events {
        match &e.what {
            What::Invoke { op: ClientOp::Append, id, .. } if id.client != 0 => {
                invoked.insert(*id, e.t_us);
            }
            What::Complete { op: ClientOp::Append, id, outcome, .. } => {
                let Some(at) = invoked.remove(id) else { continue };
                if *outcome != Outcome::Ok && (from_us..to_us).contains(&at) {
                    failed += 1;
                }
            }
            What::Shed { client, op: ClientOp::Append, arrived_us } if *client != 0 && (from_us..to_us).contains(arrived_us) => shed += 1,
            _ => {}
        }
    }
    [failed, shed]
}

/// The standard error of a fault-free cell's mean server pause, relative to the mean, that
/// [`run_grid`] runs more seeds to reach: the model is judged on the mean, and a 40 ms pause
/// varies by about 12% from seed to seed (the drain is 0 on some seeds and a whole append trip
/// on others), so 10 seeds leave its mean uncertain by about 4%, too close to the 10% it is
/// judged by.
pub const TARGET_REL_SE: f64 = 0.025;
/// A fault-free cell runs at most this many times the seeds asked for (in batches of that
/// many) while its mean is less precise than [`TARGET_REL_SE`].
pub const MAX_SEED_FACTOR: u64 = 4;

/// The standard error of the mean of `v` relative to the mean (`None` under two values or a
/// zero mean).
pub fn rel_se(v: &[f64]) -> Option<f64> {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 || mean <= 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((var / n).sqrt() / mean)
}

/// Run seeds `0..n` of every cell of `cells` on `jobs` worker threads, `n` the cell's
/// [`Cell::planned_seeds`] for `seeds`, then more seeds, a batch of `n` at a time, for every
/// fault-free cell under [`CHEAP_SEED_S`] a seed whose mean server pause has a relative standard error above
/// [`TARGET_REL_SE`], up to [`MAX_SEED_FACTOR`] times `n` in all (the rule looks at the spread
/// of the measured pauses only, never at the model). `progress` is called after each run with
/// (done, total so far). Each cell's CPU time is summed in [`CellResult::cpu_s`].
pub fn run_grid(cells: &[Cell], seeds: u64, jobs: usize, progress: &(dyn Fn(usize, usize) + Sync)) -> Vec<CellResult> {
    let results: Vec<Mutex<CellResult>> = cells.iter().map(|c| Mutex::new(CellResult::empty(c))).collect();
    let planned: Vec<u64> = cells.iter().map(|c| c.planned_seeds(seeds)).collect();
    let mut work: Vec<(usize, u64)> = cells.iter().enumerate().filter(|(_, c)| c.skip_reason().is_none()).flat_map(|(i, _)| (0..planned[i]).map(move |s| (i, s))).collect();
    let done = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    let mut batch = 1;
    while !work.is_empty() {
        total.fetch_add(work.len(), Ordering::SeqCst);
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1) {
                scope.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(i, seed)) = work.get(k) else { return };
                    let cpu_ns = crate::cpu::thread_cpu_ns();
                    let (m, failed) = measure_cell(&cells[i], seed);
                    let cpu_s = crate::cpu::thread_cpu_ns().saturating_sub(cpu_ns) as f64 / 1e9;
                    {
                        let mut r = results[i].lock().expect("cell lock");
                        r.cpu_s += cpu_s;
                        match m {
                            Ok(m) => r.runs.push(m),
                            Err(m) => {
                                r.no_handoff += 1;
                                r.missing.push(m);
                            }
                        }
                        r.failed.extend(failed);
                    }
                    progress(done.fetch_add(1, Ordering::SeqCst) + 1, total.load(Ordering::SeqCst));
                });
            }
        });
        if batch >= MAX_SEED_FACTOR || seeds == 0 {
            break;
        }
        let from = batch;
        batch += 1;
        work = cells
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                let r = results[*i].lock().expect("cell lock");
                let pauses: Vec<f64> = r.runs.iter().map(|m| m.server_ms).collect();
                !c.faults && r.skipped.is_none() && c.cost_s() < CHEAP_SEED_S && rel_se(&pauses).is_some_and(|e| e > TARGET_REL_SE)
            })
            .flat_map(|(i, _)| (from * planned[i]..(from + 1) * planned[i]).map(move |s| (i, s)))
            .collect();
    }
    // Seeds finish in any order on the workers; sort each cell's runs so the report does not
    // depend on thread timing.
    results
        .into_iter()
        .map(|m| {
            let mut r = m.into_inner().expect("cell lock");
            r.runs.sort_by(|a, b| a.server_ms.total_cmp(&b.server_ms).then(a.seed.cmp(&b.seed)));
            r.missing.sort_by_key(|m| m.seed);
            r.failed.sort();
            r
        })
        .collect()
}

pub(crate) fn size_name(b: u64) -> String {
    if b >= GIB {
        format!("{} GiB", b / GIB)
    } else if b >= MIB {
        format!("{} MiB", b / MIB)
    } else {
        format!("{} KiB", b / KIB)
    }
}

pub(crate) fn bw_name(b: u64) -> String {
    format!("{}/s", size_name(b))
}

pub(crate) fn knobs_of(cell: &Cell) -> partmap::config::Knobs {
    cell.scenario().map(|s| s.node_knobs()).unwrap_or_default()
}

/// Per-cell summary row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The cell.
    pub cell: Cell,
    /// Seeds with a committed handoff.
    pub n: usize,
    /// Server pause p50, p99, max (ms).
    pub server: [f64; 3],
    /// Server pause, mean over the seeds (ms): what the model is judged against.
    pub mean: f64,
    /// The standard error of `mean`, relative to it (`None` with one seed).
    pub rel_se: Option<f64>,
    /// Client pause p50, p99, max (ms), over seeds with a client figure.
    pub client: Option<[f64; 3]>,
    /// Bytes before / during the pause, p50.
    pub before: u64,
    /// Bytes during the pause, p50.
    pub during: u64,
    /// Rounds, p50.
    pub rounds: u32,
    /// Seeds whose pre-copy converged.
    pub converged: usize,
    /// The model's pause, ms (fault-free cells): the mean over the seeds of the model given
    /// each seed's own write rate and range sizes.
    pub model_ms: Option<f64>,
    /// The model's convergence (for more than half of the seeds).
    pub model_converged: Option<bool>,
    /// (measured mean − model mean) / model mean.
    pub error: Option<f64>,
    /// Measured mean over the mean of each seed's floor (for its own tail).
    pub over_floor: Option<f64>,
    /// The achieved write rate over the offered one, mean over the seeds (pre-copy: over the
    /// rounds; see [`achieved_w`]).
    pub achieved: Option<f64>,
    /// The median seed's range bytes at the pause.
    pub pause_bytes: u64,
    /// The model's prediction from the cell's inputs alone (`model::predict`): pause, ms.
    pub predicted_ms: f64,
    /// The prediction's rounds and convergence.
    pub predicted: Model,
    /// (measured mean − predicted) / predicted.
    pub predicted_error: f64,
    /// The server pause's 99th percentile, only where at least 100 seeds measured it.
    pub p99: Option<f64>,
    /// Seeds run in all (with and without a committed move).
    pub seeds: usize,
    /// Appends failed (error or unknown outcome) and shed per seed, mean over every seed run.
    pub failed_per_seed: f64,
    /// Appends shed per seed, mean over every seed run.
    pub shed_per_seed: f64,
    /// Of those, the appends lost during the move (failed, shed) per seed, mean over every
    /// seed run (`None` when a seed's CSV row lacks them).
    pub move_lost_per_seed: Option<[f64; 2]>,
    /// Pauses of moves that did not commit (rolled back or superseded), over every seed run,
    /// and the longest of them, ms.
    pub aborted: u32,
    /// The longest pause of a move that did not commit, ms.
    pub aborted_max_ms: f64,
    /// Seeds whose committed pause began after the clients' window ended.
    pub after_window: usize,
    /// Append latency during the move, ms: the median over every seed run of its p50, and of
    /// its p99 (see [`Measured::move_latency_ms`]); `None` where no seed timed an append.
    pub move_latency: Option<[f64; 2]>,
    /// The same for the baseline (appends outside the move), ms.
    pub base_latency: Option<[f64; 2]>,
}

/// The median over `seeds` of each seed's p50 and of its p99 (`None`: no seed has the figure).
fn median_latency(seeds: &[&Measured], pick: impl Fn(&Measured) -> Option<[f64; 2]>) -> Option<[f64; 2]> {
    let v: Vec<[f64; 2]> = seeds.iter().filter_map(|m| pick(m)).collect();
    let at = |i: usize| percentile(&v.iter().map(|x| x[i]).collect::<Vec<f64>>(), 0.5);
    Some([at(0)?, at(1)?])
}

fn p(values: &[f64]) -> [f64; 3] {
    [percentile(values, 0.5).unwrap_or(0.0), percentile(values, 0.99).unwrap_or(0.0), percentile(values, 1.0).unwrap_or(0.0)]
}

/// Summarise a cell's runs. The model is compared with the mean pause, not the median: it
/// predicts an expectation (the drain is the mean of `max(0, T − A)` over the exponential gap
/// `A` since the last admission, the tail the mean of a Poisson count), and a pause whose
/// drain is 0 on some seeds and a whole append trip on others has a median apart from its mean.
/// Each seed's model takes that seed's own achieved write rate and range sizes, so the
/// comparison is of like with like seed by seed.
pub fn row(r: &CellResult, cal: &[Calibration]) -> Option<Row> {
    if r.runs.is_empty() {
        return None;
    }
    let server: Vec<f64> = r.runs.iter().map(|m| m.server_ms).collect();
    let client: Vec<f64> = r.runs.iter().filter_map(|m| m.client_ms).collect();
    let n = r.runs.len() as f64;
    let mean = server.iter().sum::<f64>() / n;
    // Runs are sorted by server pause; the median seed is the one the p50 column shows
    // (nearest rank: the lower of the two middle seeds when there is an even number).
    let med = &r.runs[(r.runs.len() - 1) / 2];
    let knobs = knobs_of(&r.cell);
    let l = calibration_at(cal, &knobs);
    // W as the clients achieved it over the rounds (see [`achieved_w`]), seed by seed.
    let rates: Vec<f64> = r.runs.iter().map(|m| achieved_w(m, &knobs, l)).map(|w| if w > 0.0 { w } else { r.cell.write_rate() }).collect();
    let (model_ms, model_converged, error, over_floor) = if r.cell.faults || r.runs.iter().any(|m| m.paused_at_us == 0) {
        (None, None, None, None)
    } else {
        let models: Vec<Model> = r.runs.iter().zip(&rates).map(|(m, &w)| model(&r.cell, &knobs, l, w, m.start_bytes as f64, m.pause_bytes as f64)).collect();
        let model_mean = models.iter().map(|m| m.pause_ms).sum::<f64>() / n;
        let floor_mean = r.runs.iter().zip(&rates).map(|(m, &w)| floor_ms(&r.cell, &knobs, l, w, m.during as f64)).sum::<f64>() / n;
        let converged = models.iter().filter(|m| m.converged).count() * 2 > models.len();
        (Some(model_mean), Some(converged), Some((mean - model_mean) / model_mean), Some(mean / floor_mean))
    };
    let mut rounds: Vec<u32> = r.runs.iter().map(|m| m.rounds).collect();
    rounds.sort();
    let achieved = rates.iter().sum::<f64>() / n;
    let predicted = model::predict(&r.cell, &knobs, l);
    let every: Vec<&Measured> = r.runs.iter().chain(r.missing.iter()).collect();
    let seeds = every.len().max(1) as f64;
    Some(Row {
        cell: r.cell.clone(),
        n: r.runs.len(),
        server: p(&server),
        mean,
        rel_se: rel_se(&server),
        client: (!client.is_empty()).then(|| p(&client)),
        before: med.before,
        during: med.during,
        rounds: rounds[rounds.len() / 2],
        converged: r.runs.iter().filter(|m| m.converged).count(),
        model_ms,
        model_converged,
        error,
        over_floor,
        achieved: (r.cell.write_rate() > 0.0).then(|| achieved / r.cell.write_rate()),
        pause_bytes: med.pause_bytes,
        predicted_ms: predicted.pause_ms,
        predicted,
        predicted_error: (mean - predicted.pause_ms) / predicted.pause_ms,
        p99: (server.len() >= 100).then(|| percentile(&server, 0.99).unwrap_or(0.0)),
        seeds: every.len(),
        failed_per_seed: every.iter().map(|m| m.appends_failed as f64).sum::<f64>() / seeds,
        shed_per_seed: every.iter().map(|m| m.shed as f64).sum::<f64>() / seeds,
        move_lost_per_seed: every.iter().map(|m| m.move_lost).collect::<Option<Vec<_>>>().map(|v| [0, 1].map(|i| v.iter().map(|l| l[i] as f64).sum::<f64>() / seeds)),
        aborted: every.iter().map(|m| m.aborted).sum(),
        aborted_max_ms: every.iter().map(|m| m.aborted_pause_ms).fold(0.0, f64::max),
        after_window: r.runs.iter().filter(|m| m.after_window).count(),
        move_latency: median_latency(&every, |m| m.move_latency_ms),
        base_latency: median_latency(&every, |m| m.base_latency_ms),
    })
}

pub(crate) fn ms(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}", v)
    } else {
        format!("{:.1}", v)
    }
}

pub(crate) fn bytes(b: u64) -> String {
    if b >= GIB {
        format!("{:.2} GiB", b as f64 / GIB as f64)
    } else if b >= MIB {
        format!("{:.1} MiB", b as f64 / MIB as f64)
    } else {
        format!("{:.0} KiB", b as f64 / KIB as f64)
    }
}
