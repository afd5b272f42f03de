//! The summary of a sweep: one record per seed, totals computed from the records alone, the
//! build's identity, which seeds were selected and why the sweep stopped. It is written as
//! versioned JSON ([`FORMAT_VERSION`]), read back, merged across shards ([`merge`]) and rendered
//! as the table a sweep prints ([`render`]).
//!
//! Merging is exact: the totals are a function of the records sorted by seed, and floats
//! round-trip through the JSON bit for bit, so the merged summary of the shards of a range is
//! the summary one sweep of the range writes, apart from the wall-clock measurements
//! ([`Measured`]).

use crate::measure::handoff::{percentile, Handoff};
use crate::run::{OpCounts, RunOptions, RunOutcome, RunReport};
use crate::scenario::ExpectedOutcome;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `format` field of every summary.
pub const FORMAT: &str = "partmap-sim sweep summary";

/// The version of the summary's layout. Version 1 (before issue 16) held aggregates only.
pub const FORMAT_VERSION: u32 = 2;

pub use crate::check::PROPERTIES;

mod merge;
mod table;
pub use merge::{check_shards, merge, ShardCheck};
pub use table::{goals_table, render};

/// What a summary's seeds were run by: the binary and the scenario. Two summaries merge only
/// when these agree (the scenario's label, a path, may differ).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Build {
    /// partmap-sim's version (its Cargo.toml).
    pub version: String,
    /// The git commit the binary was built from, with `-dirty` when tracked sources differed
    /// from it; `None` when it was not built from a git checkout (set `PARTMAP_COMMIT` at build
    /// time to name it).
    pub commit: Option<String>,
    /// The scenario as given: its path, or `scenarios/swarm.json (built-in)`.
    pub scenario: String,
    /// FNV-1a (64 bits, 16 hex digits) of the scenario as parsed, every default filled in and
    /// serialized as JSON: two files that parse to the same scenario have the same hash.
    pub scenario_hash: String,
    /// The mutation switched on, if any.
    pub mutation: Option<String>,
    /// How the scenario expects each seed to end.
    pub expected: ExpectedOutcome,
}

impl Build {
    /// The identity of this binary running `opts` (its seed is ignored).
    pub fn of(opts: &RunOptions) -> Build {
        let canonical = serde_json::to_string(&opts.scenario).expect("a scenario serializes");
        Build {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: option_env!("PARTMAP_COMMIT").map(str::to_string),
            scenario: opts.scenario_label.clone(),
            scenario_hash: format!("{:016x}", fnv1a(canonical.as_bytes())),
            mutation: opts.mutation.map(|m| crate::run::mutation_names(m, opts.also_mutation)),
            expected: opts.scenario.expect.outcome,
        }
    }

    /// The first field on which `other` is another build or scenario, as `field: this vs
    /// that`; `None` when they may be merged.
    pub fn mismatch(&self, other: &Build) -> Option<String> {
        let opt = |v: &Option<String>, none: &str| v.clone().unwrap_or_else(|| none.to_string());
        if self.version != other.version {
            return Some(format!("different builds: version {} vs {}", self.version, other.version));
        }
        if self.commit != other.commit {
            return Some(format!("different builds: commit {} vs {}", opt(&self.commit, "unknown"), opt(&other.commit, "unknown")));
        }
        if self.scenario_hash != other.scenario_hash {
            return Some(format!("different scenarios: scenario_hash {} ({}) vs {} ({})", self.scenario_hash, self.scenario, other.scenario_hash, other.scenario));
        }
        if self.mutation != other.mutation {
            return Some(format!("different mutations: {} vs {}", opt(&self.mutation, "none"), opt(&other.mutation, "none")));
        }
        None
    }
}

/// FNV-1a, 64 bits: the hash of a scenario's canonical JSON (and of corpus entries' file names).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether a property held on a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyOutcome {
    /// It held.
    Pass,
    /// It was violated.
    Violated,
}

/// One property's verdict on one seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropertyVerdict {
    /// The property (a name of [`PROPERTIES`]).
    pub property: String,
    /// `always` (safety) or `eventually` (liveness).
    pub kind: String,
    /// Held or violated.
    pub verdict: PropertyOutcome,
    /// The evidence of a violation.
    pub evidence: Option<String>,
}

/// One seed's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedRecord {
    /// The seed.
    pub seed: u64,
    /// How it ended (`harness_crash`: the harness panicked; nothing else is known).
    pub outcome: RunOutcome,
    /// Whether that is what the scenario expects.
    pub as_expected: bool,
    /// Every property's verdict, in [`PROPERTIES`] order (empty if the harness crashed).
    pub properties: Vec<PropertyVerdict>,
    /// The trace hash, 16 hex digits (empty if the harness crashed). The same seed of the same
    /// build and scenario always gives the same hash.
    pub trace_hash: String,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
    /// Coverage situations hit ([`crate::measure::coverage::SITUATIONS`]), with how often.
    pub coverage: BTreeMap<String, u64>,
    /// Goals reached ([`crate::measure::goals::registry`]), with how often.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub goals: BTreeMap<String, u64>,
    /// Fault kinds injected while each flow was in flight, as `(fault kind, flow)`.
    pub fault_flows: Vec<(String, String)>,
    /// Planned moves the map published, with their write pause and bytes copied.
    pub handoffs: Vec<Handoff>,
    /// Handoffs a target reported that no map version published (superseded).
    pub superseded_handoffs: u64,
    /// Splits and merges committed and aborted.
    pub reshapes: BTreeMap<String, u64>,
    /// Client operations.
    pub ops: OpCounts,
    /// Simulated time of the run, ms.
    pub sim_ms: u64,
    /// Client-visible unavailability, ms ([`crate::check::availability::unavailable_ms`]).
    pub unavailable_ms: u64,
    /// Every availability figure ([`crate::check::availability::Availability`]).
    #[serde(default)]
    pub availability: crate::check::availability::Availability,
    /// The `expect` bounds exceeded, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds_exceeded: Vec<String>,
    /// Durable map versions no `map_commit` announced (judged from the authority's log).
    pub unannounced_versions: u64,
    /// Properties whose views disagreed on this seed (one violated, another not).
    pub views_disagreeing: Vec<String>,
    /// The panic message, if the harness crashed.
    pub panic: Option<String>,
    /// The command that reproduces this seed.
    pub repro: String,
}

impl SeedRecord {
    /// The record of a seed that ran to the end.
    pub fn of(opts: &RunOptions, report: &RunReport) -> SeedRecord {
        let outcome = report.outcome();
        let properties = report
            .verdicts
            .iter()
            .map(|v| PropertyVerdict {
                property: v.property.to_string(),
                kind: PROPERTIES.iter().find(|(p, _)| *p == v.property).map_or("always", |(_, k)| k.name()).to_string(),
                verdict: if v.violation.is_some() { PropertyOutcome::Violated } else { PropertyOutcome::Pass },
                evidence: v.violation.clone(),
            })
            .collect();
        let mut views_disagreeing: Vec<String> = report
            .views
            .iter()
            .filter(|v| v.violation.is_some())
            .map(|v| v.property.to_string())
            .filter(|p| report.views.iter().any(|w| w.property == p && w.violation.is_none()))
            .collect();
        views_disagreeing.dedup();
        SeedRecord {
            seed: report.seed,
            outcome,
            as_expected: outcome.matches(opts.scenario.expect.outcome),
            properties,
            trace_hash: format!("{:016x}", report.trace_hash),
            faults: report.faults.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            coverage: report.coverage.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            goals: report.goals.iter().map(|(k, r)| (k.to_string(), r.count)).collect(),
            fault_flows: report.fault_flows.iter().map(|(k, f)| (k.clone(), f.to_string())).collect(),
            handoffs: report.handoffs.clone(),
            superseded_handoffs: report.superseded_handoffs.len() as u64,
            reshapes: report.reshapes.clone(),
            ops: report.ops.clone(),
            sim_ms: report.sim_ms,
            unavailable_ms: report.unavailable_ms,
            availability: report.availability.clone(),
            bounds_exceeded: report.bounds_exceeded.clone(),
            unannounced_versions: report.unannounced_versions,
            views_disagreeing,
            panic: None,
            repro: crate::run::repro_command(opts, report.seed),
        }
    }

    /// The record of a seed whose harness panicked with `message`.
    pub fn crashed(opts: &RunOptions, seed: u64, message: String) -> SeedRecord {
        SeedRecord {
            seed,
            outcome: RunOutcome::HarnessCrash,
            as_expected: false,
            properties: Vec::new(),
            trace_hash: String::new(),
            faults: BTreeMap::new(),
            coverage: BTreeMap::new(),
            goals: BTreeMap::new(),
            fault_flows: Vec::new(),
            handoffs: Vec::new(),
            superseded_handoffs: 0,
            reshapes: BTreeMap::new(),
            ops: OpCounts::default(),
            sim_ms: 0,
            unavailable_ms: 0,
            availability: Default::default(),
            bounds_exceeded: Vec::new(),
            unannounced_versions: 0,
            views_disagreeing: Vec::new(),
            panic: Some(message),
            repro: crate::run::repro_command(opts, seed),
        }
    }

    /// Violated properties with their evidence.
    pub fn violations(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.properties.iter().filter_map(|p| p.evidence.as_deref().map(|e| (p.property.as_str(), e)))
    }
}

/// Write-pause figures of the handoffs of one strategy and range-size class, over a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PauseFigures {
    /// `pre-copy` or `stop-and-copy`.
    pub strategy: String,
    /// `all`, `<= 1 MiB` or `> 1 MiB` (the range's payload bytes at the cutover).
    pub size: String,
    /// Handoffs counted.
    pub handoffs: u64,
    /// Seeds with at least one of those handoffs.
    #[serde(default)]
    pub seeds: u64,
    /// Pause at the servers (source paused until target serves), ms: p50, p99, max.
    pub server_ms: [f64; 3],
    /// Longest gap between acknowledged appends around the pause, ms: p50, p99, max (over the
    /// handoffs where a client kept trying; `client_handoffs` of them).
    pub client_ms: [f64; 3],
    /// Handoffs with a client figure.
    pub client_handoffs: u64,
    /// The clients' baseline, ms: p50, p99, max of [`Handoff::client_baseline_ms`] (the
    /// longest gap between acknowledged appends to the same keys away from any move, in the
    /// handoff's own run), over the handoffs that have one.
    #[serde(default)]
    pub client_baseline_ms: [f64; 3],
    /// Payload bytes copied before the pause, p50.
    pub precopy_bytes_p50: f64,
    /// Payload bytes copied during the pause, p50 and max.
    pub tail_bytes: [f64; 2],
}

/// Pause figures per strategy, over all handoffs and, when a strategy's handoffs fall on both
/// sides of 1 MiB of range size, split there (one class alone would repeat the `all` row).
pub fn pause_figures(handoffs: &[&Handoff]) -> Vec<PauseFigures> {
    pause_figures_of(&handoffs.iter().map(|h| PauseSample::of(h)).collect::<Vec<_>>())
}

/// What the pause figures need of one handoff: a few numbers instead of the whole [`Handoff`],
/// so a sweep of thousands of seeds keeps every handoff's figures for the percentiles in a few
/// tens of bytes each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PauseSample {
    /// The index of the handoff's strategy in [`partmap::map::Strategy::ALL`] (`None`: a name
    /// no strategy has, counted in no row).
    pub strategy: Option<u8>,
    /// The range's payload bytes at the cutover are over 1 MiB.
    pub big: bool,
    /// [`Handoff::server_pause_ms`].
    pub server_pause_ms: f64,
    /// [`Handoff::client_gap_ms`].
    pub client_gap_ms: Option<f64>,
    /// [`Handoff::client_baseline_ms`].
    pub client_baseline_ms: Option<f64>,
    /// The seed that ran the handoff (0 from [`PauseSample::of`]; a sweep's totals set it).
    pub seed: u64,
    /// [`Handoff::precopy_bytes`].
    pub precopy_bytes: u64,
    /// [`Handoff::tail_bytes`].
    pub tail_bytes: u64,
}

impl PauseSample {
    /// The sample of `h`.
    pub fn of(h: &Handoff) -> PauseSample {
        PauseSample {
            strategy: partmap::map::Strategy::ALL.iter().position(|(_, name)| *name == h.strategy).map(|i| i as u8),
            big: h.bytes > 1 << 20,
            server_pause_ms: h.server_pause_ms,
            client_gap_ms: h.client_gap_ms,
            client_baseline_ms: h.client_baseline_ms,
            seed: 0,
            precopy_bytes: h.precopy_bytes,
            tail_bytes: h.tail_bytes,
        }
    }
}

/// [`pause_figures`] of samples, in the order the handoffs were reported.
pub fn pause_figures_of(samples: &[PauseSample]) -> Vec<PauseFigures> {
    let mut out = Vec::new();
    for (i, (_, strategy)) in partmap::map::Strategy::ALL.iter().enumerate() {
        let of_strategy = || samples.iter().filter(|h| h.strategy == Some(i as u8));
        let split = of_strategy().any(|h| h.big) && of_strategy().any(|h| !h.big);
        for size in ["all", "<= 1 MiB", "> 1 MiB"] {
            let hs: Vec<&PauseSample> = of_strategy().filter(|h| size == "all" || (size == "> 1 MiB") == h.big).collect();
            if hs.is_empty() || (size != "all" && !split) {
                continue;
            }
            let three = |v: &[f64]| [percentile(v, 0.5).unwrap_or(0.0), percentile(v, 0.99).unwrap_or(0.0), percentile(v, 1.0).unwrap_or(0.0)];
            let server: Vec<f64> = hs.iter().map(|h| h.server_pause_ms).collect();
            let client: Vec<f64> = hs.iter().filter_map(|h| h.client_gap_ms).collect();
            let baseline: Vec<f64> = hs.iter().filter_map(|h| h.client_baseline_ms).collect();
            let seeds = hs.iter().map(|h| h.seed).collect::<BTreeSet<u64>>().len() as u64;
            let pre: Vec<f64> = hs.iter().map(|h| h.precopy_bytes as f64).collect();
            let tail: Vec<f64> = hs.iter().map(|h| h.tail_bytes as f64).collect();
            out.push(PauseFigures {
                strategy: strategy.to_string(),
                size: size.to_string(),
                handoffs: hs.len() as u64,
                seeds,
                server_ms: three(&server),
                client_ms: three(&client),
                client_handoffs: client.len() as u64,
                client_baseline_ms: three(&baseline),
                precopy_bytes_p50: percentile(&pre, 0.5).unwrap_or(0.0),
                tail_bytes: [percentile(&tail, 0.5).unwrap_or(0.0), percentile(&tail, 1.0).unwrap_or(0.0)],
            });
        }
    }
    out
}

/// Totals over the records of a summary: a function of the records alone ([`Totals::of`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Seeds run to the end (harness crashes included).
    pub seeds: u64,
    /// Seeds that did not end as the scenario expects (harness crashes included).
    pub failing: u64,
    /// Seeds whose harness crashed.
    pub crashed: u64,
    /// Violations per property (seeds violating it).
    pub violations: BTreeMap<String, u64>,
    /// Faults injected per kind, summed over seeds.
    pub faults: BTreeMap<String, u64>,
    /// Seeds with at least one fault of each kind.
    pub seeds_with_fault: BTreeMap<String, u64>,
    /// Seeds with at least one server crash and at least one network fault (isolate, split,
    /// one_way or delay).
    pub seeds_with_server_crash_and_partition: u64,
    /// Seeds that hit each coverage situation (every situation listed, zeros included).
    pub coverage_seeds: BTreeMap<String, u64>,
    /// Each goal of [`crate::measure::goals::registry`] reached: on how many seeds, and the first seed
    /// (in seed order) that reached it. Goals never reached are absent.
    #[serde(default)]
    pub goal_seeds: BTreeMap<String, (u64, u64)>,
    /// Operations summed over seeds.
    pub ops: OpCounts,
    /// Mean simulated seconds per seed.
    pub sim_s_per_seed: f64,
    /// Client-visible unavailability per seed ([`crate::check::availability::unavailable_ms`]), ms: p50 and
    /// max over the seeds.
    pub unavailable_ms_p50_max: (u64, u64),
    /// Write-pause figures of the committed planned moves, per strategy and range size.
    pub pauses: Vec<PauseFigures>,
    /// Splits and merges committed and aborted, summed over seeds.
    pub reshapes: BTreeMap<String, u64>,
    /// Seeds with at least one of each kind of `reshapes`.
    pub seeds_with_reshape: BTreeMap<String, u64>,
    /// Seeds that committed at least one split and at least one merge.
    pub seeds_with_split_and_merge: u64,
    /// Handoffs superseded (the target served, no map version published it), in all.
    pub superseded_handoffs: u64,
    /// Durable map versions no event announced, in all, and the seeds that had one.
    pub unannounced_versions: (u64, u64),
    /// Per property, the seeds on which its views disagreed.
    pub views_disagreeing: BTreeMap<String, u64>,
    /// Seeds where each fault kind was injected while each flow was in flight:
    /// fault kind → flow → seeds.
    pub fault_flow_seeds: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Totals {
    /// The totals of `records`, which must be sorted by seed (the float sums depend on the
    /// order).
    pub fn of(records: &[SeedRecord]) -> Totals {
        let mut b = TotalsBuilder::new();
        for r in records {
            b.add(r);
        }
        b.finish()
    }
}

/// [`Totals`] computed one record at a time, records fed in seed order: how a sweep builds its
/// summary while streaming its records back from disk (issue 13: a sweep's memory must not grow
/// with its seeds). It keeps the running totals, one number per seed (the unavailability, for
/// its percentiles) and a [`PauseSample`] per handoff; no record.
#[derive(Clone, Debug)]
pub struct TotalsBuilder {
    t: Totals,
    last_seed: Option<u64>,
    ran: u64,
    gaps: Vec<f64>,
    pauses: Vec<PauseSample>,
}

impl Default for TotalsBuilder {
    fn default() -> TotalsBuilder {
        TotalsBuilder::new()
    }
}

impl TotalsBuilder {
    /// Totals of no record yet.
    pub fn new() -> TotalsBuilder {
        let t = Totals {
            seeds: 0,
            failing: 0,
            crashed: 0,
            violations: PROPERTIES.iter().map(|(p, _)| (p.to_string(), 0)).collect(),
            faults: BTreeMap::new(),
            seeds_with_fault: BTreeMap::new(),
            seeds_with_server_crash_and_partition: 0,
            coverage_seeds: crate::measure::coverage::SITUATIONS.iter().map(|(k, _)| (k.to_string(), 0)).collect(),
            goal_seeds: BTreeMap::new(),
            ops: OpCounts::default(),
            sim_s_per_seed: 0.0,
            unavailable_ms_p50_max: (0, 0),
            pauses: Vec::new(),
            reshapes: BTreeMap::new(),
            seeds_with_reshape: BTreeMap::new(),
            seeds_with_split_and_merge: 0,
            superseded_handoffs: 0,
            unannounced_versions: (0, 0),
            views_disagreeing: BTreeMap::new(),
            fault_flow_seeds: BTreeMap::new(),
        };
        TotalsBuilder { t, last_seed: None, ran: 0, gaps: Vec::new(), pauses: Vec::new() }
    }

    /// Count `r`, whose seed must be above every seed counted so far.
    ///
    /// # Panics
    /// If `r.seed` is not above the last seed counted (the float sums depend on the order).
    pub fn add(&mut self, r: &SeedRecord) {
        assert!(self.last_seed.is_none_or(|s| s < r.seed), "records sorted by seed, each once: {} after {:?}", r.seed, self.last_seed);
        self.last_seed = Some(r.seed);
        let t = &mut self.t;
        t.seeds += 1;
        t.failing += u64::from(!r.as_expected);
        // A crashed seed left nothing to count but itself.
        if r.panic.is_some() {
            t.crashed += 1;
            return;
        }
        self.ran += 1;
        let partitioned = ["isolate", "split", "one_way", "delay"].iter().any(|k| r.faults.contains_key(*k));
        if partitioned && r.faults.contains_key("crash_server") {
            t.seeds_with_server_crash_and_partition += 1;
        }
        for k in r.coverage.keys() {
            *t.coverage_seeds.entry(k.clone()).or_default() += 1;
        }
        for k in r.goals.keys() {
            let e = t.goal_seeds.entry(k.clone()).or_insert((0, r.seed));
            e.0 += 1;
            e.1 = e.1.min(r.seed);
        }
        for (p, _) in r.violations() {
            *t.violations.entry(p.to_string()).or_default() += 1;
        }
        for (k, v) in &r.faults {
            *t.faults.entry(k.clone()).or_default() += v;
            *t.seeds_with_fault.entry(k.clone()).or_default() += 1;
        }
        t.ops.appends_ok += r.ops.appends_ok;
        t.ops.appends_failed += r.ops.appends_failed;
        t.ops.appends_unknown += r.ops.appends_unknown;
        t.ops.reads_ok += r.ops.reads_ok;
        t.ops.reads_failed += r.ops.reads_failed;
        t.ops.unavailable += r.ops.unavailable;
        t.ops.shed += r.ops.shed;
        t.sim_s_per_seed += r.sim_ms as f64 / 1000.0;
        for (k, v) in &r.reshapes {
            *t.reshapes.entry(k.clone()).or_default() += v;
            *t.seeds_with_reshape.entry(k.clone()).or_default() += 1;
        }
        for (kind, flow) in &r.fault_flows {
            *t.fault_flow_seeds.entry(kind.clone()).or_default().entry(flow.clone()).or_default() += 1;
        }
        if r.reshapes.contains_key("split_committed") && r.reshapes.contains_key("merge_committed") {
            t.seeds_with_split_and_merge += 1;
        }
        t.superseded_handoffs += r.superseded_handoffs;
        t.unannounced_versions.0 += r.unannounced_versions;
        t.unannounced_versions.1 += u64::from(r.unannounced_versions > 0);
        for p in &r.views_disagreeing {
            *t.views_disagreeing.entry(p.clone()).or_default() += 1;
        }
        self.gaps.push(r.unavailable_ms as f64);
        self.pauses.extend(r.handoffs.iter().map(|h| PauseSample { seed: r.seed, ..PauseSample::of(h) }));
    }

    /// The totals of every record added.
    pub fn finish(self) -> Totals {
        let mut t = self.t;
        t.sim_s_per_seed /= self.ran.max(1) as f64;
        let pct = |p: f64| percentile(&self.gaps, p).unwrap_or(0.0) as u64;
        t.unavailable_ms_p50_max = (pct(0.5), pct(1.0));
        t.pauses = pause_figures_of(&self.pauses);
        t
    }
}

/// Which seeds were selected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// The whole selection: `A..B`, or `file PATH`; merged summaries of other selections join
    /// theirs with ` + `.
    pub seeds: String,
    /// The shard run (`K/N`), if any; merged summaries that do not make up every shard list
    /// theirs (`1/3, 2/3`).
    pub shard: Option<String>,
    /// The wall-clock budget (`10m`), if any: seeds were started in order until it was spent.
    pub time_budget: Option<String>,
    /// Seeds selected (of this shard), whether or not they ran.
    pub planned: u64,
}

/// Why a sweep ran fewer seeds than it selected.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopped {
    /// The signal (`SIGINT`, `SIGTERM`) that stopped it, if one did: it started no seed after.
    pub interrupted: Option<String>,
    /// Whether the time budget was spent before every selected seed had started.
    pub time_budget_spent: bool,
    /// Seeds that were running when a second signal arrived and were abandoned (no record).
    pub abandoned: Vec<u64>,
    /// Of a merge run with `--allow-partial`: the shards (`K/N`) of its selection that no
    /// summary held, so their seeds never ran here ([`check_shards`]). Empty otherwise, and
    /// then left out of the JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<String>,
}

/// Wall-clock measurements of the sweep: never an input to a run, and the only part of a
/// summary that differs between two sweeps of the same seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Worker threads (summed over merged summaries).
    pub jobs: u64,
    /// Wall-clock seconds of the sweep (of a merge: the longest of its summaries).
    pub wall_s: f64,
    /// Seeds per wall-clock second (of a merge: the sum of its summaries').
    pub seeds_per_s: f64,
    /// The summaries a merge read, in order (empty for a sweep).
    pub merged_from: Vec<String>,
}

/// The summary of a sweep (or of several, merged): the JSON a sweep writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] when written by this build.
    pub format_version: u32,
    /// The binary and scenario that ran the seeds.
    pub build: Build,
    /// Which seeds were selected.
    pub selection: Selection,
    /// Why fewer seeds ran than were selected, if they did.
    pub stopped: Stopped,
    /// Wall-clock measurements.
    pub measured: Measured,
    /// Totals over `records`.
    pub totals: Totals,
    /// One record per seed that ran to the end, sorted by seed. A summary a sweep returns
    /// holds only the records of the seeds that did not end as expected: the others are in the
    /// JSON it wrote and listed in `held_out` (a sweep never holds every record: issue 13).
    pub records: Vec<SeedRecord>,
    /// Seeds that ran as expected whose records are in the written JSON but not in `records`
    /// (sorted; not part of the JSON). Empty for a summary read from a file or merged.
    #[serde(skip)]
    pub held_out: Vec<u64>,
    /// Where this summary was written (not part of the JSON).
    #[serde(skip)]
    pub json_path: Option<PathBuf>,
    /// Where the JUnit report was written (not part of the JSON).
    #[serde(skip)]
    pub junit_path: Option<PathBuf>,
    /// Where failing seeds' logs went, for a sweep (not part of the JSON).
    #[serde(skip)]
    pub logs_dir: Option<PathBuf>,
    /// Report files that could not be written, with the error (not part of the JSON).
    #[serde(skip)]
    pub report_errors: Vec<String>,
}

impl Summary {
    /// A summary of `records` (sorted by seed), with its totals computed.
    pub fn new(build: Build, selection: Selection, stopped: Stopped, measured: Measured, records: Vec<SeedRecord>) -> Summary {
        let totals = Totals::of(&records);
        Summary {
            format: FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            build,
            selection,
            stopped,
            measured,
            totals,
            records,
            held_out: Vec::new(),
            json_path: None,
            junit_path: None,
            logs_dir: None,
            report_errors: Vec::new(),
        }
    }

    /// Seeds that did not end as the scenario expects (harness crashes included).
    pub fn failing(&self) -> impl Iterator<Item = &SeedRecord> + '_ {
        self.records.iter().filter(|r| !r.as_expected)
    }

    /// Seeds whose harness crashed.
    pub fn crashed(&self) -> impl Iterator<Item = &SeedRecord> + '_ {
        self.records.iter().filter(|r| r.panic.is_some())
    }

    /// The exit code: 3 if the harness crashed on any seed or a report could not be written,
    /// else 1 if any seed broke safety unexpectedly (or an expected violation did not happen),
    /// else 2 for a liveness failure, else 4 for an exceeded `expect` bound, else 128 + the signal number if a signal stopped the sweep
    /// (130 for SIGINT, 143 for SIGTERM), else 0.
    pub fn exit_code(&self) -> i32 {
        let any = |o: RunOutcome| self.failing().any(|f| f.outcome == o);
        if self.totals.crashed > 0 || !self.report_errors.is_empty() {
            3
        } else if any(RunOutcome::SafetyViolation) {
            1
        } else if any(RunOutcome::LivenessFailure) {
            2
        } else if any(RunOutcome::BoundExceeded) {
            4
        } else if self.totals.failing > 0 {
            1 // a violation was expected and not found
        } else if let Some(signal) = &self.stopped.interrupted {
            if signal == "SIGTERM" {
                143
            } else {
                130
            }
        } else {
            0
        }
    }

    /// The summary as JSON: indented, but each record on one line (so a seed's record is one
    /// `grep '"seed":17,'` away, and the file stays about half the size).
    ///
    /// # Panics
    /// If the summary holds records out (`held_out`): a sweep wrote its JSON itself.
    pub fn to_json(&self) -> String {
        assert!(self.held_out.is_empty(), "a sweep's summary holds {} records out; its JSON is the file the sweep wrote", self.held_out.len());
        let mut out = Vec::new();
        self.write_json(&mut out, self.records.iter().map(|r| Ok(serde_json::to_string(r).expect("a record serializes")))).expect("writing to memory");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Write the JSON of [`Summary::to_json`] to `out` with `records` (each one record's
    /// one-line JSON, in seed order) in place of `self.records`: how a sweep writes a summary
    /// whose records it streams back from disk.
    ///
    /// Errors: the first error of `records` or of `out`.
    pub fn write_json(&self, out: &mut impl std::io::Write, records: impl Iterator<Item = std::io::Result<String>>) -> std::io::Result<()> {
        /// Every field but the records, in the summary's order.
        #[derive(Serialize)]
        struct Head<'a> {
            format: &'a str,
            format_version: u32,
            build: &'a Build,
            selection: &'a Selection,
            stopped: &'a Stopped,
            measured: &'a Measured,
            totals: &'a Totals,
        }
        let head = Head {
            format: &self.format,
            format_version: self.format_version,
            build: &self.build,
            selection: &self.selection,
            stopped: &self.stopped,
            measured: &self.measured,
            totals: &self.totals,
        };
        let head = serde_json::to_string_pretty(&head).expect("a summary serializes");
        let head = head.strip_suffix("\n}").expect("a pretty JSON object ends with a closing brace");
        write!(out, "{head},\n  \"records\": [")?;
        let mut any = false;
        for r in records {
            let r = r?;
            write!(out, "{}\n    {r}", if any { "," } else { "" })?;
            any = true;
        }
        if any {
            writeln!(out, "\n  ]\n}}")
        } else {
            writeln!(out, "]\n}}")
        }
    }

    /// Write the summary as JSON ([`Summary::to_json`]) to `path` (through a temporary file renamed over it, so a
    /// reader never sees half a summary), and the failing seeds, one per line (a `--seeds-file`
    /// for a re-run), to [`failing_seeds_path`] of it (an old list there is removed when no seed
    /// failed).
    ///
    /// Errors: `<path>: <io error>` when a file cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        if !self.held_out.is_empty() {
            return Err(format!("{}: this summary holds {} records out (a sweep's); the sweep wrote its JSON", path.display(), self.held_out.len()));
        }
        let records = self.records.iter().map(|r| Ok(serde_json::to_string(r).expect("a record serializes")));
        self.write_with(path, records)
    }

    /// [`Summary::write`] with `records` (one-line JSON each, in seed order) in place of
    /// `self.records` ([`Summary::write_json`]).
    ///
    /// Errors: `<path>: <io error>` when a file cannot be written or a record cannot be read.
    pub fn write_with(&self, path: &Path, records: impl Iterator<Item = std::io::Result<String>>) -> Result<(), String> {
        use std::io::Write as _;
        let tmp = path.with_extension("json.tmp");
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let written = std::fs::File::create(&tmp).and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            self.write_json(&mut out, records)?;
            out.flush()
        });
        written.and_then(|_| std::fs::rename(&tmp, path)).map_err(fail)?;
        let seeds_path = failing_seeds_path(path);
        let failing: Vec<String> = self.failing().map(|r| r.seed.to_string()).collect();
        if failing.is_empty() {
            if seeds_path.exists() {
                std::fs::remove_file(&seeds_path).map_err(|e| format!("{}: {e}", seeds_path.display()))?;
            }
        } else {
            std::fs::write(&seeds_path, failing.join("\n") + "\n").map_err(|e| format!("{}: {e}", seeds_path.display()))?;
        }
        Ok(())
    }

    /// Read a summary written by [`Summary::write`].
    ///
    /// Errors, each naming the file: it cannot be read, it is not JSON, it is not a partmap-sim
    /// summary, it has another `format_version` (a summary of version 1 has no records and
    /// cannot be merged), or a field is missing or malformed (with its path).
    pub fn read(path: &Path) -> Result<Summary, String> {
        let origin = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{origin}: not JSON: {e}"))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(format!("{origin}: not a partmap-sim sweep summary (no `\"format\": \"{FORMAT}\"`)"));
        }
        match value.get("format_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(FORMAT_VERSION) => {}
            Some(v) => return Err(format!("{origin}: format_version {v}; this partmap-sim reads version {FORMAT_VERSION} (sweep again with this build)")),
            None => return Err(format!("{origin}: format_version missing")),
        }
        let mut de = serde_json::Deserializer::from_str(&text);
        let summary: Summary = serde_path_to_error::deserialize(&mut de).map_err(|e| format!("{origin}: field `{}`: {}", e.path(), e.inner()))?;
        if !summary.records.windows(2).all(|w| w[0].seed < w[1].seed) {
            return Err(format!("{origin}: records: not sorted by seed, or a seed is there twice"));
        }
        if Totals::of(&summary.records) != summary.totals {
            return Err(format!("{origin}: totals: do not match the records (was the file edited?)"));
        }
        Ok(summary)
    }
}

/// Where [`Summary::write`] lists the failing seeds: `sweep-x.json` → `sweep-x.failing-seeds.txt`.
pub fn failing_seeds_path(json_path: &Path) -> PathBuf {
    json_path.with_extension("failing-seeds.txt")
}
