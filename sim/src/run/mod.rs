//! One run: a pure function of (scenario, seed, build). Builds the world, draws the faults,
//! runs the workload under the nemesis, heals, probes liveness, reads the final content, and
//! checks every property.

pub mod nemesis;
pub mod world;

use crate::check::{self, Kind, Verdict};
use crate::check::no_lost_append::Content;
use crate::check::View;
use crate::events::{trace_hash, Event, Outcome, What};
use crate::scenario::{ExpectedOutcome, Scenario};
use crate::workload::{self, ProbeReport};
use crate::run::world::{Role, World};
use madsim::runtime::{Handle, Runtime};
use partmap::config::{client_addr, Knobs, Mutation};
use partmap::event::ClientOp;
use partmap::seam::sleep_ms;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The seed.
    pub seed: u64,
    /// The scenario.
    pub scenario: Scenario,
    /// Where it came from (for the header and repro commands).
    pub scenario_label: String,
    /// A deliberately broken safety mechanism, if any.
    pub mutation: Option<Mutation>,
    /// A second one on at once (`--mutation A,B`, [`partmap::config::Knobs::also_mutation`]):
    /// a defence-in-depth mutation with the layer that masks it also broken. `None` unless
    /// `mutation` is set.
    pub also_mutation: Option<Mutation>,
    /// Print every event as it happens (`--trace`).
    pub trace: bool,
    /// Print the header (seed and knobs) as soon as it is known.
    pub echo_header: bool,
}

/// How a run ended. Exit codes: 0, 1, 2, 3, 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Every property held.
    Pass,
    /// An `always` property was violated.
    SafetyViolation,
    /// An `eventually` property failed (and no safety property).
    LivenessFailure,
    /// The harness itself panicked.
    HarnessCrash,
    /// Every property held, but an availability bound of `expect` was exceeded.
    BoundExceeded,
}

impl RunOutcome {
    /// The process exit code for this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            RunOutcome::Pass => 0,
            RunOutcome::SafetyViolation => 1,
            RunOutcome::LivenessFailure => 2,
            RunOutcome::HarnessCrash => 3,
            RunOutcome::BoundExceeded => 4,
        }
    }

    /// Whether this outcome is what the scenario expects.
    pub fn matches(self, expected: ExpectedOutcome) -> bool {
        matches!(
            (self, expected),
            (RunOutcome::Pass, ExpectedOutcome::Pass)
                | (RunOutcome::SafetyViolation, ExpectedOutcome::SafetyViolation)
                | (RunOutcome::LivenessFailure, ExpectedOutcome::LivenessFailure)
        )
    }
}

/// Client operations of a run, by outcome (the probe client excluded).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpCounts {
    /// Appends acknowledged.
    pub appends_ok: u64,
    /// Appends that definitely failed.
    pub appends_failed: u64,
    /// Appends with an unknown outcome.
    pub appends_unknown: u64,
    /// Reads answered.
    pub reads_ok: u64,
    /// Reads that failed.
    pub reads_failed: u64,
    /// Appends and reads a frontend failed at once with `MapUnavailable` (its map too stale),
    /// also counted as failed (appends: definitely failed).
    pub unavailable: u64,
    /// Operations the clients shed: not started within `workload.shed_after_ms` of their
    /// arrival (or before the window's end) for want of a free in-flight slot; never sent, not
    /// in the other counts.
    #[serde(default)]
    pub shed: u64,
}

impl OpCounts {
    /// All operations.
    pub fn total(&self) -> u64 {
        self.appends_ok + self.appends_failed + self.appends_unknown + self.reads_ok + self.reads_failed
    }
}

/// Everything a run produced.
#[derive(Debug)]
pub struct RunReport {
    /// The seed.
    pub seed: u64,
    /// `name=value` lines: seed, scenario, every resolved knob, the drawn fault rates.
    pub header: Vec<String>,
    /// One verdict per property.
    pub verdicts: Vec<Verdict>,
    /// Every view of every property (a property's verdict is its first violated view).
    pub views: Vec<View>,
    /// Durable map versions at the authority that no `map_commit` announced (each was judged).
    pub unannounced_versions: u64,
    /// For a mutated run only: what the checkers without the durable log and the served final
    /// reads would have found ([`check::legacy_violation`]).
    pub legacy_violation: Option<String>,
    /// Handoffs a target reported whose move the map never published (superseded by a
    /// failover or a rollback); kept out of `handoffs` and the pause figures.
    pub superseded_handoffs: Vec<crate::measure::handoff::Handoff>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Triggers (`on`) that were armed and never fired, readable, in arming order: their
    /// faults were never injected.
    pub unfired_triggers: Vec<String>,
    /// Client operations.
    pub ops: OpCounts,
    /// Simulated time of the whole run, ms.
    pub sim_ms: u64,
    /// Simulated ms from the heal until every range took an append.
    pub recovery_ms: u64,
    /// Client-visible unavailability, ms: the longest stretch of the workload phase (from the
    /// first acknowledged append to the workload's end; the whole phase if none was) in which
    /// no client append was acknowledged. See [`crate::check::availability::unavailable_ms`].
    pub unavailable_ms: u64,
    /// Every availability figure ([`crate::check::availability`]).
    pub availability: crate::check::availability::Availability,
    /// The `expect` bounds the run exceeded, one line each (`expect.<bound> = <limit>,
    /// measured <value>`); judged only when every property held.
    pub bounds_exceeded: Vec<String>,
    /// Hash of the event trace.
    pub trace_hash: u64,
    /// The run's near misses ([`crate::measure::goals::near_misses`]): the smallest gap, µs, per race.
    pub near_misses: BTreeMap<&'static str, crate::measure::goals::NearMiss>,
    /// Every goal of [`crate::measure::goals::registry`] the run reached, with how often and when first.
    pub goals: BTreeMap<&'static str, crate::measure::goals::Reached>,
    /// Coverage: how often each situation of [`crate::measure::coverage::SITUATIONS`] happened.
    pub coverage: BTreeMap<&'static str, u64>,
    /// Every planned move whose target the map published, with its write pause and bytes
    /// copied.
    pub handoffs: Vec<crate::measure::handoff::Handoff>,
    /// Fault kinds injected while each flow was in flight, as `(fault kind, flow)`.
    pub fault_flows: std::collections::BTreeSet<(String, &'static str)>,
    /// Splits and merges that ended, as `split_committed`, `split_aborted`, `merge_committed`,
    /// `merge_aborted` (aborted ones counted only if they had paused their parents).
    pub reshapes: BTreeMap<String, u64>,
    /// The events (for logs of failing seeds).
    pub events: Vec<Event>,
    /// The served view of the final content: what the final strong reads returned, by key
    /// (`run --history` lists reads from it).
    pub served: Content,
    /// The scenario as run: the topology and move strategy drawn for this seed (no `swarm`
    /// section, no `per-seed` strategy left).
    pub scenario_run: Scenario,
    /// Every fault and operator request the nemesis planned (drawn or scheduled), sorted by
    /// start time; some may not have been injected (a crash of a node already down).
    pub plan: Vec<nemesis::Planned>,
}

impl RunReport {
    /// The operator requests' verdicts, in history order: `(time µs, request, None)` when
    /// accepted, or `Some(reason)` when refused on every attempt.
    pub fn operator_verdicts(&self) -> Vec<(u64, &crate::fault::Fault, Option<&str>)> {
        self.events.iter().filter_map(|e| match &e.what {
            What::OperatorVerdict { request, refused, .. } => Some((e.t_us, &**request, refused.as_deref())),
            _ => None,
        }).collect()
    }

    /// The run's outcome from its verdicts.
    pub fn outcome(&self) -> RunOutcome {
        let failed = |k: Kind| self.verdicts.iter().any(|v| v.kind == k && v.violation.is_some());
        if failed(Kind::Always) {
            RunOutcome::SafetyViolation
        } else if failed(Kind::Eventually) {
            RunOutcome::LivenessFailure
        } else if !self.bounds_exceeded.is_empty() {
            RunOutcome::BoundExceeded
        } else {
            RunOutcome::Pass
        }
    }
}

/// The command that reproduces `seed` of `opts`'s scenario and mutation, with the scenario's
/// path quoted for a POSIX shell when it needs it (spaces, quotes, `$`).
pub fn repro_command(opts: &RunOptions, seed: u64) -> String {
    let mut cmd = format!("cargo run --release -p partmap-sim -- run --seed {seed}");
    if !opts.scenario_label.ends_with(BUILTIN_SUFFIX) {
        let path = opts.scenario_label.as_str();
        // shlex refuses only text with a NUL byte, which no path holds.
        let quoted = shlex::try_quote(path).map_or_else(|_| path.into(), |q| q.into_owned());
        cmd.push_str(" --scenario ");
        cmd.push_str(&quoted);
    }
    if let Some(m) = opts.mutation {
        cmd.push_str(" --mutation ");
        cmd.push_str(&mutation_names(m, opts.also_mutation));
    }
    cmd
}

/// `A` or `A,B`: the `--mutation` argument of one mutation, or of two at once.
pub fn mutation_names(m: Mutation, also: Option<Mutation>) -> String {
    match also {
        Some(b) => format!("{},{}", m.name(), b.name()),
        None => m.name().to_string(),
    }
}

/// What a built-in scenario's label ends with (`scenarios/swarm.json (built-in)`).
pub const BUILTIN_SUFFIX: &str = " (built-in)";

/// Characters kept in report file names; any other becomes `_`.
pub(crate) fn file_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect()
}

/// `scenarios/failover.json` → `failover`; `scenarios/swarm.json (built-in)` → `swarm`;
/// `my runs/a b.json` → `a_b` (safe in a file name).
pub fn scenario_stem(label: &str) -> String {
    let path = label.strip_suffix(BUILTIN_SUFFIX).unwrap_or(label);
    let stem = std::path::Path::new(path).file_stem().map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    file_safe(&stem)
}


/// The knobs the nodes run with, as `name=value` lines. `s` is the scenario as run (its
/// topology drawn, for a swarm scenario).
pub fn header(opts: &RunOptions, s: &Scenario, knobs: &Knobs) -> Vec<String> {
    let t = &s.topology;
    let w = &s.workload;
    let mut h = vec![
        format!("seed={}", opts.seed),
        format!("scenario={}", opts.scenario_label),
        format!("mutation={}", opts.mutation.map_or("none".to_string(), |m| mutation_names(m, opts.also_mutation))),
        format!(
            "topology{}: servers={} managers={} frontends={} clients={} initial_ranges={}",
            if opts.scenario.swarm.is_some() { " (drawn)" } else { "" },
            t.servers, t.managers, t.frontends, t.clients, t.initial_ranges
        ),
        format!(
            "knobs: lease_ms={} lease_margin_ms={} renew_interval_ms={} rpc_timeout_ms={} store_timeout_ms={} manager_tick_ms={} frontend_attempts={} frontend_backoff_ms={}..{} bandwidth_bytes_per_s={} disk_sync_ms={} latency_ms={}..{} clock_drift_ppm={} torn_writes={} map_staleness_ms={}",
            knobs.lease_ms, knobs.lease_margin_ms, knobs.renew_interval_ms, knobs.rpc_timeout_ms, knobs.store_timeout_ms, knobs.manager_tick_ms, knobs.frontend_attempts,
            knobs.frontend_backoff_ms, knobs.frontend_backoff_ms_max, knobs.bandwidth_bytes_per_s, knobs.disk_sync_ms, s.knobs.latency_ms[0], s.knobs.latency_ms[1], s.knobs.clock_drift_ppm, s.knobs.torn_writes, knobs.map_staleness_ms
        ),
        format!(
            "workload: duration_s={} ops_per_s={} read_fraction={} bounded_read_fraction={} read_bound_ms={} keys={} key_skew={} record_bytes={} in_flight_per_client={} shed_after_ms={}{}",
            w.duration_s, w.ops_per_s, w.read_fraction, w.bounded_read_fraction, w.read_bound_ms, w.keys, w.key_skew, w.record_bytes, w.in_flight_per_client, w.shed_after_ms,
            // Only when set, so the settings line (and the trace hash) of other scenarios stays.
            if w.bulk_bytes + w.preload_bytes + w.start_s > 0 { format!(" bulk_bytes={} preload_bytes={} start_s={}", w.bulk_bytes, w.preload_bytes, w.start_s) } else { String::new() }
        ) + &if w.flux_fraction > 0.0 { format!(" flux_fraction={}", w.flux_fraction) } else { String::new() },
        format!("heal: liveness_deadline_s={}", s.heal.liveness_deadline_s),
        format!(
            "moves: strategy={}{} precopy_threshold_bytes={} precopy_max_rounds={} balance={} max_concurrent={}",
            knobs.strategy.name(), if opts.scenario.moves.strategy == "per-seed" { " (drawn)" } else { "" },
            knobs.precopy_threshold_bytes, knobs.precopy_max_rounds, knobs.balance, knobs.max_concurrent_moves
        ),
        format!(
            "splits: split_ops_per_s={} merge_ops_per_s={} merge_hysteresis_ms={} max_ranges={} min_ranges={} hot_shift_s={}",
            knobs.split_ops_per_s, knobs.merge_ops_per_s, knobs.merge_hysteresis_ms, knobs.max_ranges, knobs.min_ranges, w.hot_shift_s
        ),
    ];
    h.retain(|l| !l.is_empty());
    h
}

fn madsim_config(s: &Scenario) -> madsim::Config {
    let mut cfg = madsim::Config::default();
    let [lo, hi] = s.knobs.latency_ms;
    let lo = std::time::Duration::from_millis(lo);
    // madsim draws from `lo..hi`, which must not be empty.
    let hi = std::time::Duration::from_millis(hi).max(lo + std::time::Duration::from_micros(1));
    cfg.net.send_latency = lo..hi;
    cfg
}

/// The stored view of the final content: every key's records in the store's synced streams,
/// in stream order. Read after the heal and the probe, when no acknowledged append can still be
/// in flight.
pub fn final_content(store_disk: &partmap::seam::Disk<partmap::store::StoreRecord>) -> Content {
    use partmap::store::StoreRecord;
    store_disk.with_durable(|durable| {
        // Every stream's records in append order, streams in id order: what the store rebuilds
        // on recovery (`Streams::recover`), without its index of ids or a copy of each record.
        let mut streams: BTreeMap<partmap::ids::RangeId, Vec<&partmap::msg::Record>> = BTreeMap::new();
        for r in durable {
            if let StoreRecord::Append { stream, record } = r {
                streams.entry(*stream).or_default().push(record);
            }
        }
        // Each key's content built at its final size (one allocation, not a chain of them):
        // keys numbered as first met by a hash lookup (never iterated: no order leaks), put in
        // key order only once, by the map's collect.
        let mut number: rustc_hash::FxHashMap<&[u8], usize> = Default::default();
        let mut keys: Vec<(&[u8], usize)> = Vec::new();
        let numbered: Vec<usize> = streams
            .values()
            .flatten()
            .map(|rec| {
                let n = *number.entry(rec.key.as_slice()).or_insert(keys.len());
                if n == keys.len() {
                    keys.push((rec.key.as_slice(), 0));
                }
                keys[n].1 += rec.bytes.len();
                n
            })
            .collect();
        let mut parts: Vec<Vec<u8>> = keys.iter().map(|&(_, len)| Vec::with_capacity(len)).collect();
        for (rec, n) in streams.values().flatten().zip(numbered) {
            parts[n].extend_from_slice(&rec.bytes);
        }
        keys.into_iter().zip(parts).map(|((key, _), content)| (key.to_vec(), content)).collect()
    })
}

/// The fault rates drawn for a seed, as a header line.
fn drawn_line(plan: &nemesis::FaultPlan) -> String {
    format!(
        "faults drawn: crash_per_min={:.2} partition_per_min={:.2} pause_per_min={:.2} slow_disk_per_min={:.2} message_faults_per_min={:.2} move_requests_per_min={:.2} drains_per_min={:.2}{} planned={}",
        plan.crash_per_min, plan.partition_per_min, plan.pause_per_min, plan.slow_disk_per_min, plan.message_faults_per_min, plan.move_requests_per_min, plan.drains_per_min,
        // Only when drawn, so the header (and the trace hash) of other scenarios stays.
        if plan.aimed_per_min > 0.0 { format!(" aimed_per_min={:.2}", plan.aimed_per_min) } else { String::new() },
        plan.faults.len()
    )
}

/// Mutation `map-forgets-reshapes` switched on for as long as this lives.
struct ForgetReshapes;

impl ForgetReshapes {
    fn new(on: bool) -> Self {
        partmap::map::forget_reshapes(on);
        ForgetReshapes
    }
}

impl Drop for ForgetReshapes {
    fn drop(&mut self) {
        partmap::map::forget_reshapes(false);
    }
}

/// Run one seed to the end and check it. Panics inside the simulation propagate (the sweep
/// catches them as harness crashes).
pub fn run_seed(opts: &RunOptions) -> RunReport {
    crate::fault::trigger::reset();
    crate::events::start(opts.trace, |e| {
        crate::fault::aim::observe(e);
        crate::fault::trigger::observe(e);
    });
    crate::measure::goals::start();
    let rt = Runtime::with_seed_and_config(opts.seed, madsim_config(&opts.scenario));
    let sim = {
        // Mutation `map-forgets-reshapes` lives in the map's code: on for the nodes, off
        // again (even on a panic) before the checkers replay the authority's log.
        let forget = [opts.mutation, opts.also_mutation].contains(&Some(partmap::config::Mutation::MapForgetsReshapes));
        let _forget = ForgetReshapes::new(forget);
        rt.block_on(simulate(opts.clone()))
    };
    drop(rt);
    let events = crate::events::finish();
    let declared = crate::measure::goals::finish();
    // Triggers that never fired: their tasks are gone with the runtime once their wakers are.
    crate::fault::trigger::reset();
    let Simulated { header, probe, stored, durable_map, faults, unfired_triggers, aimed_injected, sim_ms, scenario_run, plan } = sim;
    let ops = OpCounts::of(&events);
    let liveness = (!probe.live).then(|| format!("not live {} s after the heal: {}", opts.scenario.heal.liveness_deadline_s, probe.detail));
    let served = &probe.served;
    let views = check::judge(&events, served, &stored, &durable_map, &scenario_run.knobs);
    let legacy = opts.mutation.and_then(|_| check::legacy_violation(&events, &views, served, &stored));
    let verdicts = verdicts(&views, liveness);
    let (handoffs, superseded_handoffs): (Vec<_>, Vec<_>) = crate::measure::handoff::handoffs(&events).into_iter().partition(|h| h.committed);
    let reshapes = reshape_counts(&events);
    let end_us = opts.scenario.workload.duration_s * 1_000_000;
    let start_us = opts.scenario.workload.start_s * 1_000_000;
    let unavailable_ms = crate::check::availability::unavailable_ms(&events, start_us, end_us);
    let write_pause_ms = handoffs.iter().map(|h| h.server_pause_ms).fold(0.0, f64::max);
    let availability = crate::check::availability::measure(&events, start_us, end_us, scenario_run.knobs.lease_ms, write_pause_ms);
    let bounds_exceeded = crate::check::availability::exceeded(&opts.scenario.expect, &availability);
    let mut goals = crate::measure::goals::reached(&events, &declared, scenario_run.knobs.lease_ms);
    crate::measure::goals::count_aimed(&mut goals, aimed_injected);
    RunReport {
        seed: opts.seed,
        header,
        verdicts,
        unannounced_versions: check::map_tiles::unannounced(&durable_map, &events),
        views,
        legacy_violation: legacy,
        faults,
        unfired_triggers,
        ops,
        sim_ms,
        recovery_ms: probe.recovery_ms,
        unavailable_ms,
        availability,
        bounds_exceeded,
        trace_hash: trace_hash(&events),
        coverage: goals.iter().filter(|(k, _)| crate::measure::coverage::SITUATIONS.iter().any(|(s, _)| s == *k)).map(|(k, r)| (*k, r.count)).collect(),
        goals,
        near_misses: crate::measure::goals::near_misses(&events),
        fault_flows: crate::measure::coverage::fault_flows(&events),
        handoffs,
        superseded_handoffs,
        reshapes,
        events,
        served: probe.served,
        scenario_run,
        plan,
    }
}

/// Every property's verdict, in [`check::PROPERTIES`] order: a judged property's first
/// violated view (its message and evidence), and `liveness` from the probe (`liveness`: why the
/// system was not live after the heal).
fn verdicts(views: &[View], liveness: Option<String>) -> Vec<Verdict> {
    let verdict = |property: &'static str, kind: Kind| {
        let first = views.iter().find(|v| v.property == property && v.violation.is_some());
        Verdict { property, kind, violation: first.and_then(|v| v.violation.clone()), evidence: first.map(|v| v.evidence.clone()).unwrap_or_default() }
    };
    let mut liveness = liveness;
    check::PROPERTIES
        .iter()
        .map(|&(property, kind)| match property {
            "liveness" => Verdict { property, kind, violation: liveness.take(), evidence: Default::default() },
            _ => verdict(property, kind),
        })
        .collect()
}

impl OpCounts {
    /// The clients' operations in `events` by outcome (the probe's left out), and the shed ones.
    pub fn of(events: &[Event]) -> OpCounts {
        let mut ops = OpCounts::default();
        for ev in events {
            if let What::Shed { .. } = &ev.what {
                ops.shed += 1;
                continue;
            }
            let What::Complete { op, id, outcome, .. } = &ev.what else { continue };
            if id.client == 0 {
                continue;
            }
            match (op, outcome) {
                (ClientOp::Append, Outcome::Ok) => ops.appends_ok += 1,
                (ClientOp::Append, Outcome::Fail) => ops.appends_failed += 1,
                (ClientOp::Append, Outcome::Unavailable) => {
                    ops.appends_failed += 1;
                    ops.unavailable += 1;
                }
                (ClientOp::Read, Outcome::Unavailable) => {
                    ops.reads_failed += 1;
                    ops.unavailable += 1;
                }
                (ClientOp::Append, Outcome::Unknown) => ops.appends_unknown += 1,
                (ClientOp::Read, Outcome::Ok) => ops.reads_ok += 1,
                (ClientOp::Read, _) => ops.reads_failed += 1,
            }
        }
        ops
    }
}

/// Splits and merges that ended, counted from the maps the authority committed or restored: a
/// journal entry that leaves the journal with its first parent retired committed; one that
/// leaves otherwise aborted (counted only if it had paused its parents). Keys:
/// `split_committed`, `split_aborted`, `merge_committed`, `merge_aborted`.
pub fn reshape_counts(events: &[Event]) -> BTreeMap<String, u64> {
    use partmap::map::{RangeState, TransferPhase};
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut journal: BTreeMap<partmap::ids::RangeId, partmap::map::Reshape> = BTreeMap::new();
    for ev in events {
        let What::Sys(crate::events::Sys::MapCommit { map, .. } | crate::events::Sys::MapRestored { map, .. }) = &ev.what else { continue };
        for (first, r) in &journal {
            if map.reshapes.contains_key(first) {
                continue;
            }
            let committed = map.rows.get(first).is_some_and(|row| row.state == RangeState::Retired);
            if committed || r.phase == TransferPhase::Paused || matches!(r.phase, TransferPhase::Aborted(_)) {
                *counts.entry(format!("{}_{}", r.kind.name(), if committed { "committed" } else { "aborted" })).or_default() += 1;
            }
        }
        journal = map.reshapes.clone();
    }
    counts
}

/// Start the workload's clients (the random load, and the scripted appends if any) and the
/// operator node that sends the plan's requests; each client counts itself in `finished` when
/// done. Returns their node ids, for the kill at the end.
fn spawn_clients(s: &Scenario, knobs: &Knobs, plan: &nemesis::FaultPlan, finished: &Arc<AtomicU32>) -> Vec<madsim::task::NodeId> {
    let handle = Handle::current();
    let mut clients = Vec::new();
    // Client `n` runs the random load (or, with `script`, the scripted appends), then counts
    // itself finished.
    let spawn_client = |n: u32, script: bool| {
        let (sc, k, fin) = (s.clone(), knobs.clone(), finished.clone());
        let node = handle
            .create_node()
            .name(format!("client-{n}"))
            .ip(client_addr(n).ip())
            .init(move || {
                let (sc, k, fin) = (sc.clone(), k.clone(), fin.clone());
                async move {
                    if script {
                        workload::script(n, sc, k).await;
                    } else {
                        workload::client(n, sc, k).await;
                    }
                    fin.fetch_add(1, Ordering::SeqCst);
                }
            })
            .build();
        node.id()
    };
    for n in 1..=s.topology.clients {
        clients.push(spawn_client(n, false));
    }
    if !s.workload.script.is_empty() {
        clients.push(spawn_client(s.topology.clients + 1, true));
    }
    let actions = plan.operator_actions();
    if !actions.is_empty() {
        let k = knobs.clone();
        let node = handle
            .create_node()
            .name("operator")
            .ip(partmap::config::operator_addr().ip())
            .init(move || nemesis::operator(actions.clone(), k.clone()))
            .build();
        clients.push(node.id());
    }
    clients
}

/// After the heal and the clients' last operations: the probe (`client-0`) checks liveness and
/// reads every appended key. Returns its report and its node id.
async fn probe_after_heal(s: &Scenario, knobs: &Knobs) -> (ProbeReport, madsim::task::NodeId) {
    let final_keys = crate::events::appended_keys();
    let report = Arc::new(Mutex::new(ProbeReport::default()));
    let probe_node;
    {
        let (sc, k, r) = (s.clone(), knobs.clone(), report.clone());
        let node = Handle::current()
            .create_node()
            .name("client-0")
            .ip(client_addr(0).ip())
            .init(move || workload::probe(sc.clone(), k.clone(), final_keys.clone(), r.clone()))
            .build();
        probe_node = node.id();
    }
    while !report.lock().expect("probe report").done {
        sleep_ms(100).await;
    }
    let probe = report.lock().expect("probe report").clone();
    (probe, probe_node)
}

/// What the simulation hands back to [`run_seed`].
struct Simulated {
    header: Vec<String>,
    probe: ProbeReport,
    /// The store's synced streams, per key.
    stored: Content,
    /// The authority's durable log.
    durable_map: Vec<partmap::lock::LockRecord>,
    faults: BTreeMap<&'static str, u64>,
    unfired_triggers: Vec<String>,
    /// Aimed faults that took effect: how many, and when the first did, µs.
    aimed_injected: (u64, u64),
    sim_ms: u64,
    scenario_run: Scenario,
    plan: Vec<nemesis::Planned>,
}

async fn simulate(opts: RunOptions) -> Simulated {
    // The seed decides everything from here on: first the topology (swarm scenarios), then the
    // clocks and the faults. The header is printed before any node runs.
    // Topology, rates and faults come from the nemesis's own stream (see
    // `nemesis::plan_rng`), so the run's generator draws the same whether the faults are
    // random or written out as a schedule.
    let mut plan_rng = nemesis::plan_rng(opts.seed);
    let s = opts.scenario.draw_swarm(&mut plan_rng);
    let mut knobs = s.node_knobs();
    knobs.mutation = opts.mutation;
    knobs.also_mutation = opts.also_mutation;
    let mut header = header(&opts, &s, &knobs);
    if opts.echo_header {
        for l in &header {
            println!("{l}");
        }
    }
    let world = World::build(&s, &knobs).await;
    crate::fault::trigger::set_names(world.nodes.values().map(|n| (n.id, n.name.clone())).collect());
    crate::fault::aim::reset(s.topology.managers);
    let mut by_role: BTreeMap<Role, Vec<String>> = BTreeMap::new();
    for node in world.nodes.values() {
        by_role.entry(node.role).or_default().push(node.name.clone());
    }
    by_role.remove(&Role::Frontend);
    let plan = nemesis::draw(&s, &by_role, &mut plan_rng);
    header.push(drawn_line(&plan));
    if opts.echo_header {
        // Before any node runs, so the header precedes the trace.
        println!("{}", header.last().expect("just pushed"));
    }
    let world = Rc::new(RefCell::new(world));
    // Messages held in the network ride on a node of their own that is never faulted, so they
    // outlive a crash or pause of their sender.
    let wire = Handle::current().create_node().name("wire").build();
    partmap::seam::set_wire(Some(wire.clone()));
    let counts = Rc::new(RefCell::new(BTreeMap::new()));
    let nemesis_node = Handle::current().create_node().name("nemesis").build();
    nemesis::spawn(&nemesis_node, world.clone(), &plan, counts.clone());

    let finished = Arc::new(AtomicU32::new(0));
    let mut clients = spawn_clients(&s, &knobs, &plan, &finished);
    let client_nodes = s.topology.clients + u32::from(!s.workload.script.is_empty());
    sleep_ms(s.workload.duration_s * 1000).await;
    world.borrow_mut().heal_all();
    // Let every client's last operation complete before the final reads (bounded by the
    // client timeout, which outlasts the frontends' retry budget).
    while finished.load(Ordering::SeqCst) < client_nodes {
        sleep_ms(100).await;
    }
    let (probe, probe_node) = probe_after_heal(&s, &knobs).await;
    clients.push(probe_node);
    let stored = final_content(&world.borrow().store_disk);
    let durable_map = world.borrow().lock_disk.read_durable();
    let faults = counts.borrow().clone();
    let unfired_triggers = crate::fault::trigger::unfired();
    let aimed_injected = crate::fault::aim::injected();
    let sim_ms = partmap::seam::now_ms();
    // Kill every node and let the executor drop their tasks: tasks that wait on each other
    // form reference cycles that would otherwise outlive the runtime (a leak per seed).
    partmap::seam::set_wire(None);
    let handle = Handle::current();
    for id in clients.into_iter().chain(world.borrow().nodes.values().map(|n| n.id)).chain([wire.id(), nemesis_node.id()]) {
        handle.kill(id);
    }
    sleep_ms(1).await;
    Simulated { header, probe, stored, durable_map, faults, unfired_triggers, aimed_injected, sim_ms, scenario_run: s, plan: plan.faults }
}
