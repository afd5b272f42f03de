//! One run: a pure function of (scenario, seed, build). Builds the world, draws the faults,
//! runs the workload under the nemesis, heals, probes liveness, reads the final content, and
//! checks every property.

use crate::check::{self, Kind, Verdict};
use crate::events::{trace_hash, Collector, Event};
use crate::nemesis;
use crate::scenario::{ExpectedOutcome, Scenario};
use crate::workload::{self, ProbeReport};
use crate::world::{Role, World};
use madsim::runtime::{Handle, Runtime};
use partmap::config::{client_addr, Knobs, Mutation};
use partmap::seam::sleep_ms;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt;

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
    /// Print every event as it happens (`--trace`).
    pub trace: bool,
    /// Print the header (seed and knobs) as soon as it is known.
    pub echo_header: bool,
}

/// How a run ended. Exit codes: 0, 1, 2, 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
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
}

impl RunOutcome {
    /// The process exit code for this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            RunOutcome::Pass => 0,
            RunOutcome::SafetyViolation => 1,
            RunOutcome::LivenessFailure => 2,
            RunOutcome::HarnessCrash => 3,
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
#[derive(Clone, Debug, Default, serde::Serialize)]
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
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Client operations.
    pub ops: OpCounts,
    /// Simulated time of the whole run, ms.
    pub sim_ms: u64,
    /// Simulated ms from the heal until every range took an append.
    pub recovery_ms: u64,
    /// Client-visible unavailability, ms: the longest stretch of the workload phase (from the
    /// first acknowledged append to the workload's end) in which no client append was
    /// acknowledged. See [`unavailable_ms`].
    pub unavailable_ms: u64,
    /// Hash of the event trace.
    pub trace_hash: u64,
    /// Coverage: how often each situation of [`crate::coverage::SITUATIONS`] happened.
    pub coverage: BTreeMap<&'static str, u64>,
    /// Every committed planned move, with its write pause and bytes copied.
    pub handoffs: Vec<crate::handoff::Handoff>,
    /// Fault kinds injected while each flow was in flight, as `(fault kind, flow)`.
    pub fault_flows: std::collections::BTreeSet<(String, &'static str)>,
    /// Splits and merges that ended, as `split_committed`, `split_aborted`, `merge_committed`,
    /// `merge_aborted` (aborted ones counted only if they had paused their parents).
    pub reshapes: BTreeMap<String, u64>,
    /// The events (for logs of failing seeds).
    pub events: Vec<Event>,
}

impl RunReport {
    /// The run's outcome from its verdicts.
    pub fn outcome(&self) -> RunOutcome {
        let failed = |k: Kind| self.verdicts.iter().any(|v| v.kind == k && v.violation.is_some());
        if failed(Kind::Always) {
            RunOutcome::SafetyViolation
        } else if failed(Kind::Eventually) {
            RunOutcome::LivenessFailure
        } else {
            RunOutcome::Pass
        }
    }
}

/// The longest stretch, ms, between consecutive acknowledgements of client appends (the probe
/// client excluded), from the first acknowledgement to `end_us` (the workload's end): how long
/// the service as a whole took no write. An outage of a few ranges shows in the handoff and
/// recovery figures instead; this one shows an authority outage or a cut-off frontend.
pub fn unavailable_ms(events: &[Event], end_us: u64) -> u64 {
    let acks = events.iter().filter(|e| e.kind == "complete" && e.s("op") == "append" && e.s("outcome") == "ok" && e.u("client") > 0).map(|e| e.t_us).filter(|t| *t <= end_us);
    let mut last: Option<u64> = None;
    let mut worst = 0;
    for t in acks {
        if let Some(l) = last {
            worst = worst.max(t - l);
        }
        last = Some(t);
    }
    if let Some(l) = last {
        worst = worst.max(end_us.saturating_sub(l));
    }
    worst / 1000
}

/// The knobs the nodes run with, as `name=value` lines. `s` is the scenario as run (its
/// topology drawn, for a swarm scenario).
pub fn header(opts: &RunOptions, s: &Scenario, knobs: &Knobs) -> Vec<String> {
    let t = &s.topology;
    let w = &s.workload;
    let mut h = vec![
        format!("seed={}", opts.seed),
        format!("scenario={}", opts.scenario_label),
        format!("mutation={}", opts.mutation.map_or("none", |m| m.name())),
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
            "workload: duration_s={} ops_per_s={} read_fraction={} bounded_read_fraction={} read_bound_ms={} keys={} key_skew={} record_bytes={}",
            w.duration_s, w.ops_per_s, w.read_fraction, w.bounded_read_fraction, w.read_bound_ms, w.keys, w.key_skew, w.record_bytes
        ),
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

/// The final content of every key: its records in the store's synced streams, in stream order.
/// Read after the heal and the probe, when no acknowledged append can still be in flight.
pub fn final_content(store_disk: &partmap::seam::Disk<partmap::store::StoreRecord>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let streams = partmap::store::Streams::recover(&store_disk.read_durable());
    let mut content: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for stream in streams.streams.values() {
        for rec in &stream.records {
            content.entry(rec.key.clone()).or_default().extend_from_slice(&rec.bytes);
        }
    }
    content.into_iter().collect()
}

/// The fault rates drawn for a seed, as a header line.
fn drawn_line(plan: &nemesis::FaultPlan) -> String {
    format!(
        "faults drawn: crash_per_min={:.2} partition_per_min={:.2} pause_per_min={:.2} slow_disk_per_min={:.2} message_faults_per_min={:.2} move_requests_per_min={:.2} drains_per_min={:.2} planned={}",
        plan.crash_per_min, plan.partition_per_min, plan.pause_per_min, plan.slow_disk_per_min, plan.message_faults_per_min, plan.move_requests_per_min, plan.drains_per_min, plan.faults.len()
    )
}

/// How many of the most-appended keys the probe reads back through the frontends at the end.
const FINAL_READ_KEYS: usize = 16;

/// The `n` keys with the most append invocations (ties: key order). Workload keys are printable
/// ASCII, so their rendered form is their bytes.
fn busiest_keys(events: &[Event], n: usize) -> Vec<Vec<u8>> {
    let mut count: BTreeMap<&str, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e.kind == "invoke" && e.s("op") == "append") {
        *count.entry(e.s("key")).or_default() += 1;
    }
    let mut by_count: Vec<(u64, &str)> = count.into_iter().map(|(k, c)| (c, k)).collect();
    by_count.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    by_count.into_iter().take(n).map(|(_, k)| k.as_bytes().to_vec()).collect()
}

/// Run one seed to the end and check it. Panics inside the simulation propagate (the sweep
/// catches them as harness crashes).
pub fn run_seed(opts: &RunOptions) -> RunReport {
    let log: crate::events::EventLog = Arc::new(Mutex::new(Vec::with_capacity(16 * 1024)));
    let subscriber = tracing_subscriber::registry().with(Collector { log: log.clone(), print: opts.trace });
    let (header, probe, finals, faults, sim_ms) = tracing::subscriber::with_default(subscriber, || {
        let rt = Runtime::with_seed_and_config(opts.seed, madsim_config(&opts.scenario));
        rt.block_on(simulate(opts.clone(), log.clone()))
    });
    let events = std::mem::take(&mut *log.lock().expect("event log"));
    let mut ops = OpCounts::default();
    for ev in events.iter().filter(|e| e.kind == "complete" && e.u("client") > 0) {
        match (ev.s("op"), ev.s("outcome")) {
            ("append", "ok") => ops.appends_ok += 1,
            ("append", "fail") => ops.appends_failed += 1,
            ("append", "unavailable") => {
                ops.appends_failed += 1;
                ops.unavailable += 1;
            }
            ("read", "unavailable") => {
                ops.reads_failed += 1;
                ops.unavailable += 1;
            }
            ("append", _) => ops.appends_unknown += 1,
            ("read", "ok") => ops.reads_ok += 1,
            _ => ops.reads_failed += 1,
        }
    }
    let liveness = (!probe.live).then(|| format!("not live {} s after the heal: {}", opts.scenario.heal.liveness_deadline_s, probe.detail));
    let verdicts = vec![
        Verdict { property: "single_writer", kind: Kind::Always, violation: check::single_writer::check(&events).err() },
        Verdict { property: "no_lost_append", kind: Kind::Always, violation: check::no_lost_append::check(&events, &finals).err() },
        Verdict { property: "reads_consistent", kind: Kind::Always, violation: check::reads_consistent::check(&events, &finals).err() },
        Verdict { property: "map_tiles", kind: Kind::Always, violation: check::map_tiles::check(&events).err() },
        Verdict { property: "manager_exclusive", kind: Kind::Always, violation: check::manager_exclusive::check(&events).err() },
        Verdict { property: "liveness", kind: Kind::Eventually, violation: liveness },
    ];
    let handoffs = crate::handoff::handoffs(&events);
    let mut reshapes: BTreeMap<String, u64> = BTreeMap::new();
    for ev in events.iter().filter(|e| e.kind == "reshaped") {
        *reshapes.entry(format!("{}_{}", ev.s("reshape"), ev.s("outcome"))).or_default() += 1;
    }
    let unavailable_ms = unavailable_ms(&events, opts.scenario.workload.duration_s * 1_000_000);
    RunReport { seed: opts.seed, header, verdicts, faults, ops, sim_ms, recovery_ms: probe.recovery_ms, unavailable_ms, trace_hash: trace_hash(&events), coverage: crate::coverage::situations(&events), fault_flows: crate::coverage::fault_flows(&events), handoffs, reshapes, events }
}

type Simulated = (Vec<String>, ProbeReport, Vec<(Vec<u8>, Vec<u8>)>, BTreeMap<&'static str, u64>, u64);

async fn simulate(opts: RunOptions, log: crate::events::EventLog) -> Simulated {
    // The seed decides everything from here on: first the topology (swarm scenarios), then the
    // clocks and the faults. The header is printed before any node runs.
    let s = opts.scenario.draw_swarm(&mut madsim::rand::thread_rng());
    let mut knobs = s.node_knobs();
    knobs.mutation = opts.mutation;
    let mut header = header(&opts, &s, &knobs);
    if opts.echo_header {
        for l in &header {
            println!("{l}");
        }
    }
    let world = World::build(&s, &knobs);
    let mut by_role: BTreeMap<Role, Vec<String>> = BTreeMap::new();
    for node in world.nodes.values() {
        by_role.entry(node.role).or_default().push(node.name.clone());
    }
    by_role.remove(&Role::Frontend);
    let plan = nemesis::draw(&s, &by_role, &mut madsim::rand::thread_rng());
    header.push(drawn_line(&plan));
    if opts.echo_header {
        // Before any node runs, so the header precedes the trace.
        println!("{}", header.last().expect("just pushed"));
    }
    let world = Rc::new(RefCell::new(world));
    let counts = Rc::new(RefCell::new(BTreeMap::new()));
    nemesis::spawn(world.clone(), &plan, counts.clone());

    let handle = Handle::current();
    let finished = Arc::new(AtomicU32::new(0));
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
    let client_nodes = s.topology.clients + u32::from(!s.workload.script.is_empty());
    sleep_ms(s.workload.duration_s * 1000).await;
    world.borrow_mut().heal_all();
    // Let every client's last operation complete before the final reads (bounded by the
    // client timeout, which outlasts the frontends' retry budget).
    while finished.load(Ordering::SeqCst) < client_nodes {
        sleep_ms(100).await;
    }
    let final_keys = busiest_keys(&log.lock().expect("event log"), FINAL_READ_KEYS);
    let report = Arc::new(Mutex::new(ProbeReport::default()));
    {
        let (sc, k, r) = (s.clone(), knobs.clone(), report.clone());
        let node = handle
            .create_node()
            .name("client-0")
            .ip(client_addr(0).ip())
            .init(move || workload::probe(sc.clone(), k.clone(), final_keys.clone(), r.clone()))
            .build();
        clients.push(node.id());
    }
    while !report.lock().expect("probe report").done {
        sleep_ms(100).await;
    }
    let probe = report.lock().expect("probe report").clone();
    let finals = final_content(&world.borrow().store_disk);
    let faults = counts.borrow().clone();
    let sim_ms = partmap::seam::now_ms();
    // Kill every node and let the executor drop their tasks: tasks that wait on each other
    // form reference cycles that would otherwise outlive the runtime (a leak per seed).
    for id in clients.into_iter().chain(world.borrow().nodes.values().map(|n| n.id)) {
        handle.kill(id);
    }
    sleep_ms(1).await;
    (header, probe, finals, faults, sim_ms)
}
