//! The scenario file: what cluster to build, which knobs its nodes run with, what load the
//! clients offer, which faults the harness injects, and what outcome the run should have.
//!
//! A scenario is JSON (format documented in `scenarios/README.md`). Every section is optional
//! except `description`, and a missing field takes the default noted on it, which is also the
//! value `scenarios/failover.json` writes out, except: the three fields of `swarm` (when present)
//! and the fields a list entry needs (a schedule entry's `fault` and, but for instant requests,
//! `duration_ms`; a scripted append's `at_ms`, `key`, `bytes`; a trigger's `event`, `node`).
//! Unknown fields are rejected so a typo cannot silently fall back to a default.
//!
//! [`Scenario::parse`] reports the first problem as one line, `<origin>: <path>: <problem>`, so
//! a reader can go straight to the offending field.

use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::path::Path;


/// The memory a run may need for its offered load, bytes (4 GiB): a scenario over it is refused
/// before it runs ([`Scenario::offered_memory_bytes`]; issue 13 measured 1 MiB records at the
/// default rate reaching 6.8 GB in 18 s).
pub const MEMORY_BUDGET_BYTES: f64 = (4u64 << 30) as f64;

/// How many times a run holds an append's payload (the store's stream, the owner's content, a
/// copy by a move or split child, the final read): the estimate's factor.
pub const RECORD_COPIES: f64 = 4.0;

/// History and checker bytes per client operation, kept until the run is judged (issue 13
/// measured about 2.8 KB per operation at 64 clients and 10,000 ops/s).
pub const HISTORY_BYTES_PER_OP: f64 = 3072.0;

/// One scenario file. Source of the idea: etcd raft's testdata and RisingWave's simulation
/// options, where scenarios are data rather than code.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario exercises and why. Required and non-empty.
    pub description: String,
    /// Node counts and the initial range layout.
    pub topology: Topology,
    /// Timing and sizing knobs of the nodes and the simulated network.
    pub knobs: KnobsSpec,
    /// The load the clients offer.
    pub workload: Workload,
    /// Planned moves: how they copy, and what starts them.
    pub moves: Moves,
    /// Splits of busy ranges and merges of cold neighbours.
    pub splits: Splits,
    /// Faults injected during the workload.
    pub faults: Faults,
    /// What happens after the faults stop.
    pub heal: Heal,
    /// The outcome the run is expected to have.
    pub expect: Expect,
    /// Swarm testing of the topology: when present, each seed draws its servers, frontends and
    /// initial ranges from these ranges. A file with `swarm` must leave `topology.servers`,
    /// `topology.frontends` and `topology.initial_ranges` out ([`Scenario::parse`] refuses them:
    /// they would be ignored); the other topology fields apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
}

/// Ranges `[min, max]` from which each seed draws its topology (swarm testing, Groce et al.,
/// ISSTA 2012). A swarm scenario cannot have an explicit fault schedule, which names nodes that
/// might not exist.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Swarm {
    /// Partition servers. `1 <= min <= max <= 32`.
    pub servers: [u32; 2],
    /// Frontends. `1 <= min <= max <= 8`.
    pub frontends: [u32; 2],
    /// Initial ranges. `1 <= min <= max <= 256`, `max <= workload.keys`.
    pub initial_ranges: [u32; 2],
}

/// Node counts and the initial range layout.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Topology {
    /// Partition servers, `server-1..=servers`. 1..=32, default 3.
    pub servers: u32,
    /// Managers (one leader, the rest standby), `manager-1..=managers`. 1..=3, default 2.
    pub managers: u32,
    /// Frontends, `frontend-1..=frontends`. 1..=8, default 2.
    pub frontends: u32,
    /// Client tasks offering the workload. 1..=64, default 4.
    pub clients: u32,
    /// Ranges the key space starts split into. 1..=256 and at most `workload.keys`, default 8.
    pub initial_ranges: u32,
}

/// Timing and sizing knobs; all durations are milliseconds of simulated time.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KnobsSpec {
    /// Session and leader lease length at the authority. 100..=60000, default 2000.
    pub lease_ms: u64,
    /// A holder stops trusting its lease this long before it expires. Below `lease_ms`,
    /// default 200.
    pub lease_margin_ms: u64,
    /// Lease renewal period. Above 0 and below `lease_ms - lease_margin_ms`, default 400.
    pub renew_interval_ms: u64,
    /// Timeout of one request between nodes. 1..=60000, default 500.
    pub rpc_timeout_ms: u64,
    /// Timeout of an append at the store. 1..=60000, default 1000.
    pub store_timeout_ms: u64,
    /// Period of the leader manager's look at the map and sessions. 1..=60000, default 200.
    pub manager_tick_ms: u64,
    /// Attempts of a frontend per client operation. 1..=100, default 8.
    pub frontend_attempts: u32,
    /// First frontend retry backoff, doubling per attempt. 1..=10000, default 20.
    pub frontend_backoff_ms: u64,
    /// Cap of the frontend backoff. `frontend_backoff_ms..=60000`, default 640.
    pub frontend_backoff_ms_max: u64,
    /// Outgoing bandwidth of every node, bytes per second. At least 1000, default 104857600.
    pub bandwidth_bytes_per_s: u64,
    /// Duration of one fsync at the authority and the store. 0..=1000, default 1.
    pub disk_sync_ms: u64,
    /// One-way network latency range `[min, max]`, each message drawn uniformly in it.
    /// `min <= max`, both 0..=10000, default `[1, 5]`.
    pub latency_ms: [u64; 2],
    /// Bound of clock drift, parts per million: each node's clock runs at a rate drawn per seed
    /// in `1 ± clock_drift_ppm / 1e6`, and leases are measured on it. 0..=500000, default 0.
    /// The lease margin covers drift up to about `lease_margin_ms / (2 * lease_ms)` (50000 ppm
    /// at the defaults); beyond that `single_writer` must catch two owners at once.
    pub clock_drift_ppm: u64,
    /// A crash of the authority or the store keeps a random prefix (0 to 8 records) of what it
    /// had written but not synced, and tears the record after it (recovery detects it by its
    /// checksum and drops it). Default false: a crash loses everything unsynced.
    pub torn_writes: bool,
    /// A frontend routes on its cached map only while its last successful read of the map is
    /// at most this old; beyond it every operation fails at once with `MapUnavailable`.
    /// Frontends re-read the map every `renew_interval_ms`. 0 (no bound) or 100..=600000,
    /// default 5000.
    pub map_staleness_ms: u64,
}

/// The load the clients offer.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Workload {
    /// Length of the workload, seconds of simulated time. 1..=3600, default 60.
    pub duration_s: u64,
    /// Operations per second summed over all clients. Above 0 and at most 100000, default 100.
    pub ops_per_s: f64,
    /// Fraction of operations that are reads; the rest are appends. 0..=1, default 0.3.
    pub read_fraction: f64,
    /// Fraction of reads at consistency `bounded(read_bound_ms)`; the rest are `strong`.
    /// 0..=1, default 0.
    pub bounded_read_fraction: f64,
    /// The staleness bound of bounded reads, ms. 0..=600000, default 1000.
    pub read_bound_ms: u64,
    /// Fraction of operations (appends and reads alike) aimed at a key of a range in flux: one
    /// a map commit made or changed (owner, epoch, state) in the last two seconds, or one in a
    /// move, split or merge ([`crate::fault::aim::with_flux`]); the key is uniform over the range's first
    /// four keys (so a key written across the handoff is read across it too).
    /// When nothing is in flux the operation takes its usual key. 0..=1, default 0.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub flux_fraction: f64,
    /// Size of the key space, keys `k000000..`. 1..=1000000, default 1000.
    pub keys: u32,
    /// Key popularity skew: key index = `floor(keys * u^(1 + key_skew))` for uniform `u` in
    /// `[0, 1)`; 0 is uniform, larger values favour low keys. 0..=5, default 1.0.
    pub key_skew: f64,
    /// Payload length of each append, bytes. 16..=1048576, default 16.
    pub record_bytes: u32,
    /// Simulated bulk bytes each random append carries on top of `record_bytes`: a size, not
    /// a buffer (`partmap::msg::Record::bulk`), charged by the network and counted by digests,
    /// so a high write rate into a range costs no memory. 0..=2^40, default 0. The whole record
    /// must fit the store's smallest chunk (see `Scenario::max_record_bytes`).
    pub bulk_bytes: u64,
    /// Simulated bytes every initial range holds before the run starts (the pause review's
    /// range size), written to the store as records of at most `Scenario::max_record_bytes`
    /// by a loader (`client-<clients+2>`, acknowledged at time 0 in the history). 0..=2^46
    /// (64 TiB), default 0.
    pub preload_bytes: u64,
    /// Seconds after the start before the random clients begin (the script is not delayed).
    /// Below `duration_s`; default 0. The pause review starts its writes once a large preloaded
    /// range is open, so the clients build no backlog during its first load.
    pub start_s: u64,
    /// Every this many seconds the hot spot of the key distribution moves to another part of the
    /// key space (drawn from the seed), so busy ranges cool down and cold ones heat up. 0..=3600
    /// (0: the hot spot stays on the low keys), default 0.
    pub hot_shift_s: u64,
    /// Operations one random client may have in flight at once (issue 13: bounded load).
    /// 1..=64, default 1 (each client waits for its operation before starting the next).
    pub in_flight_per_client: u32,
    /// How late after its arrival an operation may still start, ms: one that finds its client
    /// at `in_flight_per_client` operations for longer is shed (counted, traced as `shed`, not
    /// queued), and none starts after the window ends. 0..=600000, default 1000.
    pub shed_after_ms: u64,
    /// Appends at fixed times, made by one more client (`client-<clients+1>`) besides the
    /// random load, for worked examples. Default empty.
    pub script: Vec<ScriptedAppend>,
}

/// One append at a fixed time.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAppend {
    /// When it is sent, ms after the workload starts. Below `workload.duration_s * 1000`.
    pub at_ms: u64,
    /// The key, as text (1..=64 bytes).
    pub key: String,
    /// Payload length, bytes (the payload is the append's id padded with `-`, so the checkers
    /// can tell appends apart). 6..=1048576.
    pub bytes: u32,
    /// The frontend it goes through, `frontend-N`. Default 1.
    #[serde(default = "one")]
    pub frontend: u32,
}

fn one() -> u32 {
    1
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Planned moves: the copy strategy and its knobs, and what starts moves.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Moves {
    /// `pre-copy`, `stop-and-copy`, or `per-seed` (each seed draws one of the two, so one
    /// sweep compares them under the same load and faults). Default `pre-copy`.
    pub strategy: String,
    /// Pre-copy stops once a round copied at most this many payload bytes. 0..=1073741824,
    /// default 4096.
    pub precopy_threshold_bytes: u64,
    /// Pre-copy stops after this many rounds whatever the tail. 1..=100, default 4.
    pub precopy_max_rounds: u32,
    /// The cutover rule's pause budget, ms: pre-copy pauses only when its predicted tail (the
    /// last round over the bandwidth) fits, keeps copying up to the round limit while it does
    /// not, and then aborts the move unpaused. 0 (no budget) or 1..=3600000, default 2000.
    pub cutover_budget_ms: u64,
    /// A move paused for longer than this (as the leader saw it) is rolled back. 0 (never) or
    /// 1000..=3600000, default 120000.
    pub cutover_timeout_ms: u64,
    /// The leader moves a range from the server with the most ranges to the one with the
    /// fewest when they differ by two or more. Default false.
    pub balance: bool,
    /// Moves in flight at once. 0..=64 (0: no moves at all), default 1. At 0 a scenario may
    /// not ask for moves (`requests_per_min` above `[0, 0]`, or a scheduled `move` request):
    /// they would be accepted and never run.
    pub max_concurrent: u32,
    /// Range of the rate of random operator move requests (a random key's range to a random
    /// server), per minute, drawn per seed. `0 <= a <= b <= 600`, default `[0, 0]`; `[0, 0]`
    /// when `max_concurrent` is 0.
    pub requests_per_min: [f64; 2],
    /// Range of the rate of random drain-server requests, per minute, drawn per seed.
    /// `0 <= a <= b <= 600`, default `[0, 0]`.
    pub drains_per_min: [f64; 2],
    /// How long a random drain lasts, ms. `1 <= a <= b <= 3600000`, default `[2000, 10000]`.
    pub drain_ms: [u64; 2],
}

/// Splits of busy ranges and merges of cold neighbours, decided by the leader from the
/// servers' load reports (operations per second over the last 2 s, and a sample of keys).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Splits {
    /// Split a range at or over this many operations per second, at the median of its sampled
    /// keys. 0..=100000 (0: never split; merges still follow `merge_ops_per_s`), default 0.
    pub split_ops_per_s: f64,
    /// Merge two adjacent ranges both at or under this many operations per second.
    /// 0..=100000 (0: never merge), default 0. With splits on (`split_ops_per_s` above 0) it
    /// must be below `split_ops_per_s`, or a range could split and merge back at once; with
    /// splits off (`split_ops_per_s` 0) any value is accepted and the leader only merges, the
    /// two thresholds being independent in the manager's plan (`scenarios/move-during-merge.json`
    /// merges at 50 ops/s with splits off).
    pub merge_ops_per_s: f64,
    /// No merge of a range made by a split or merge less than this long ago (hysteresis).
    /// 0..=3600000, default 10000.
    pub merge_hysteresis_ms: u64,
    /// No split once this many ranges are live. 1..=1024, default 64.
    pub max_ranges: u32,
    /// No merge once only this many ranges are live. 1..=`max_ranges`, default 1.
    pub min_ranges: u32,
}

impl Default for Splits {
    fn default() -> Self {
        Splits { split_ops_per_s: 0.0, merge_ops_per_s: 0.0, merge_hysteresis_ms: 10_000, max_ranges: 64, min_ranges: 1 }
    }
}

impl Default for Moves {
    fn default() -> Self {
        Moves {
            strategy: "pre-copy".into(),
            precopy_threshold_bytes: 4096,
            precopy_max_rounds: 4,
            cutover_budget_ms: 2000,
            cutover_timeout_ms: 120_000,
            balance: false,
            max_concurrent: 1,
            requests_per_min: [0.0, 0.0],
            drains_per_min: [0.0, 0.0],
            drain_ms: [2000, 10_000],
        }
    }
}

/// Faults injected during the workload: a random mix, an explicit schedule, or both.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Random crashes and partitions; `null` turns them off. Default: [`RandomFaults::default`].
    pub random: Option<RandomFaults>,
    /// Faults at fixed times. Default empty.
    pub schedule: Vec<TimedFault>,
}

/// A random fault mix. Each seed draws its own rates uniformly from the ranges (swarm testing:
/// Groce et al., "Swarm Testing", ISSTA 2012), so some seeds are quiet and some are storms.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RandomFaults {
    /// Range of the crash rate, crashes per minute. `0 <= a <= b <= 600`, default `[1.0, 6.0]`.
    pub crash_per_min: [f64; 2],
    /// Range of the partition rate, partitions per minute. `0 <= a <= b <= 600`,
    /// default `[1.0, 6.0]`.
    pub partition_per_min: [f64; 2],
    /// How long a crashed node stays down, ms, drawn per crash. `1 <= a <= b <= 3600000`,
    /// default `[200, 6000]`.
    pub down_ms: [u64; 2],
    /// How long a partition lasts, ms, drawn per partition. `1 <= a <= b <= 3600000`,
    /// default `[200, 6000]`.
    pub partition_ms: [u64; 2],
    /// Kinds of node that may crash. No duplicates; non-empty unless `crash_per_min` is
    /// `[0, 0]`. Default all four.
    pub crash_targets: Vec<NodeKind>,
    /// Range of the process-pause rate, pauses per minute. `0 <= a <= b <= 600`,
    /// default `[0.5, 3.0]`. Any node but a client may be paused.
    pub pause_per_min: [f64; 2],
    /// How long a paused node stays frozen, ms, drawn per pause. `1 <= a <= b <= 3600000`,
    /// default `[200, 5000]` (the upper end outlasts the default lease).
    pub pause_ms: [u64; 2],
    /// Range of the slow-disk rate, episodes per minute, on the authority's or the store's disk.
    /// `0 <= a <= b <= 600`, default `[0.5, 2.0]`.
    pub slow_disk_per_min: [f64; 2],
    /// How much longer each fsync takes during an episode, ms. `1 <= a <= b <= 60000`,
    /// default `[20, 1500]` (the upper end outlasts the store timeout).
    pub slow_disk_extra_ms: [u64; 2],
    /// Range of the rate of message faults per minute: each reorders the messages of a random
    /// link for a `partition_ms` draw, or holds the next message of a random kind (store append,
    /// fence, append, map write, session renewal) from a random node for a `hold_ms` draw.
    /// `0 <= a <= b <= 600`, default `[0, 0]`.
    pub message_faults_per_min: [f64; 2],
    /// How long a targeted hold keeps its message, ms. `1 <= a <= b <= 3600000`, default
    /// `[1000, 8000]`.
    pub hold_ms: [u64; 2],
    /// Range of the rate of aimed faults per minute ([`crate::run::nemesis::draw_aimed`]): faults
    /// aimed at protocol roles (the leader, a move's source or target, a key's owner, a
    /// split's parent owner, the emitter of a protocol event), most of them fired by a protocol
    /// event, lasting around the protocol's own margins (the lease margin, the request timeout,
    /// the lease) as often as in seconds; they include corrupted pre-copy chunks and a leader
    /// crash short enough to restart within its lease. Drawn from a stream of their own, so the
    /// other draws of a seed stay as they were. `0 <= a <= b <= 600`, default `[0, 0]`.
    #[serde(skip_serializing_if = "no_rate")]
    pub aimed_per_min: [f64; 2],
}

/// A kind of node that random faults may crash.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A partition server, `server-N`.
    Server,
    /// A manager, `manager-N`.
    Manager,
    /// The stream store, `store-1`.
    Store,
    /// The coordination authority, `lock-1`.
    Lock,
}

/// One fault (or operator request) at a fixed time, or on a protocol event.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TimedFault {
    /// Start of the fault, ms after the workload starts. Below `workload.duration_s * 1000`.
    /// With `on`, the time the trigger is armed instead (default 0 then).
    #[serde(default)]
    pub at_ms: u64,
    /// Fire on a protocol event instead of at `at_ms` (FoundationDB-style fault injection at
    /// named points): see [`Trigger`]. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<Trigger>,
    /// The crashed node restarts, or the network heals, this long after `at_ms`.
    /// 1..=3600000; required (a missing one is reported as missing) for every kind but the
    /// instantaneous requests `move`, `split_range`, `merge_ranges` and `leader_transfer`, which must leave it out
    /// (`None`). See [`TimedFault::lasts_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What goes wrong.
    pub fault: FaultSpec,
}

/// A protocol step that fires a [`TimedFault`]: the `count`-th event named `event` emitted by
/// node `node` after the trigger is armed (at the entry's `at_ms`), then `delay_ms` later the
/// fault. Events are those of `partmap::event::Event` (names as in the trace,
/// [`partmap::event::Event::NAMES`]); the node is the one whose task emitted it: servers emit
/// their own steps (`paused`, `drained`, `activated`, ...), `store-1` emits `effect`, `fence`,
/// `fenced`, `deduplicated`, and `lock-1` emits `map_commit`, `leader`, `reshaped`,
/// `lease_expired`. A trigger that fires records `triggered` in the history; one that never
/// fires injects nothing.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// The event's name, one of [`partmap::event::Event::NAMES`].
    pub event: String,
    /// The node that emits it, by name.
    #[serde(with = "crate::fault::aim::node_field")]
    pub node: String,
    /// Only events that concern this range id count (an event without a range: an error).
    /// Default any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<u64>,
    /// Only events at this range epoch count (an event without an epoch: an error). Default
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// Which occurrence fires: 1 is the first after arming. 1..=1000000, default 1.
    #[serde(default = "one")]
    pub count: u32,
    /// How long after the event the fault starts, ms. 0..=3600000, default 0 (the same
    /// simulated instant, once the emitting task yields).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

impl TimedFault {
    /// `duration_ms`, or 0 for an instantaneous request (which has none).
    pub fn lasts_ms(&self) -> u64 {
        self.duration_ms.unwrap_or(0)
    }
}

impl FaultSpec {
    /// An operator request: sent by the operator node at `at_ms`, never on a trigger.
    pub fn is_operator_request(&self) -> bool {
        matches!(self, FaultSpec::Move { .. } | FaultSpec::Drain { .. } | FaultSpec::SplitRange { .. } | FaultSpec::MergeRanges { .. } | FaultSpec::LeaderTransfer {})
    }

    /// For an instantaneous operator request (no `duration_ms`), its kind as the file names
    /// it.
    pub fn instant_request(&self) -> Option<&'static str> {
        match self {
            FaultSpec::Move { .. } => Some("move"),
            FaultSpec::SplitRange { .. } => Some("split_range"),
            FaultSpec::MergeRanges { .. } => Some("merge_ranges"),
            FaultSpec::LeaderTransfer {} => Some("leader_transfer"),
            _ => None,
        }
    }
}

/// What goes wrong in a [`TimedFault`]. Node names are those of [`Scenario::node_names`].
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// The node stops (losing its memory, keeping its disk) and later restarts.
    Crash {
        /// The node to crash, by name (`server-2`, `lock-1`, ...).
        #[serde(with = "crate::fault::aim::node_field")]
        node: String,
    },
    /// Every message to and from the node is dropped.
    Isolate {
        /// The node to cut off, by name.
        #[serde(with = "crate::fault::aim::node_field")]
        node: String,
    },
    /// The cluster is cut between the nodes of `side` and all other nodes. `side` is non-empty,
    /// has no duplicates and leaves at least one node on the other side.
    Split {
        /// The node names on one side of the cut.
        side: Vec<String>,
    },
    /// Messages from `from` to `to` are dropped; the reverse direction still works.
    OneWay {
        /// The sending node whose messages are dropped.
        #[serde(with = "crate::fault::aim::node_field")]
        from: String,
        /// The receiving node.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
    },
    /// Messages from `from` to `to` are held, not dropped, until the fault ends; then they are
    /// delivered: a write that reaches the store after a cutover.
    Delay {
        /// The sending node whose messages are held.
        #[serde(with = "crate::fault::aim::node_field")]
        from: String,
        /// The receiving node.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
    },
    /// Every message from `from` to `to` is delivered twice (the copy up to 10 ms later) until
    /// the fault ends.
    Duplicate {
        /// The sending node whose messages are duplicated.
        #[serde(with = "crate::fault::aim::node_field")]
        from: String,
        /// The receiving node.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
    },
    /// Every fsync on the node's disk (`lock-1` or `store-1`) takes `extra_ms` longer until the
    /// fault ends: a slow disk.
    SlowDisk {
        /// The node whose disk is slow: `lock-1` or `store-1`.
        #[serde(with = "crate::fault::aim::node_field")]
        node: String,
        /// Extra time each fsync takes, ms. 1..=60000.
        extra_ms: u64,
    },
    /// The node's process is frozen (no task runs; messages to it queue up), then resumes
    /// where it stopped, with its memory: HBASE-2231's region server paused past its lease.
    Pause {
        /// The node to freeze, by name.
        #[serde(with = "crate::fault::aim::node_field")]
        node: String,
    },
    /// One bit of every pre-copy chunk sent from `from` (the store) to `to` (a move target) is
    /// flipped until the fault ends: the copies diverge, and the final checksum must say so.
    Corrupt {
        /// The sending node; only stream reads (`stream_read` answers) are corrupted, so in
        /// effect `store-1`.
        #[serde(with = "crate::fault::aim::node_field")]
        from: String,
        /// The receiving node: a move target, whose pre-copy chunks (reads flagged `precopy`)
        /// are corrupted; its loads and lineage reads are not.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
    },
    /// Messages from `from` to `to` each wait a random extra 0 to 50 ms until the fault ends, so
    /// they overtake each other.
    Reorder {
        /// The sending node whose messages are reordered.
        #[serde(with = "crate::fault::aim::node_field")]
        from: String,
        /// The receiving node.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
    },
    /// The next message of kind `message` (`store_append`, `fence`, `append`, `cas_map`, ...:
    /// any message in snake case) sent from `from` to `to` after `at_ms` is held for
    /// `duration_ms`, then delivered: "delay the next store append from server-1 by 8 s".
    DelayNext {
        /// The sending node.
        #[serde(with = "crate::fault::aim::node_field")]
        from: String,
        /// The receiving node.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
        /// The message kind to hold, one of [`partmap::msg::Msg::KIND_NAMES`].
        message: String,
    },
    /// An operator asks the leader to move the range holding `key` to server `to` (no
    /// `duration_ms`).
    Move {
        /// A key of the range to move (the range holding it when the request is sent).
        key: String,
        /// The target server's name, `server-N`.
        #[serde(with = "crate::fault::aim::node_field")]
        to: String,
    },
    /// An operator drains server `node` (moves its ranges away, assigns it nothing) for the
    /// duration.
    Drain {
        /// The server to drain, by name, `server-N`.
        #[serde(with = "crate::fault::aim::node_field")]
        node: String,
    },
    /// An operator asks the leader to split the range holding key `at` at `at` (the right
    /// half starts there; no `duration_ms`). Keys name ranges because range ids differ
    /// between seeds.
    SplitRange {
        /// The split key, a workload key (`k` and six digits, below `workload.keys`), not the
        /// start of an initial range.
        at: String,
    },
    /// An operator asks the leader to merge the range holding key `left` with the range
    /// holding key `right`, which must be its right neighbour when the request is sent (no
    /// `duration_ms`).
    MergeRanges {
        /// A key of the left range (a workload key).
        left: String,
        /// A key of the right range (a workload key after `left`).
        right: String,
    },
    /// An operator asks the leader to hand over: it steps down at its next clean point between
    /// rounds and releases its lease, so that a standby takes over at once (no `duration_ms`).
    /// Refused when no manager holds the lease.
    LeaderTransfer {},
}

/// A rate range that draws nothing (`[0, 0]`): left out of the written file.
fn no_rate(r: &[f64; 2]) -> bool {
    r[1] <= 0.0
}

/// `Err` naming `path` when `node` is a role where `kind` needs a node name (`why`).
fn named_only(path: &str, node: &str, kind: &str, why: &str) -> Result<(), String> {
    if crate::fault::aim::is_aimed(node) {
        return Err(format!("{path}: a `{kind}` cannot be aimed at a role ({why}); name a node"));
    }
    Ok(())
}

/// What happens after the faults stop.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Heal {
    /// After the workload, crashed nodes restart, paused ones resume and the network heals; every
    /// range must then be active and take an append within this many seconds. 1..=600,
    /// default 30.
    pub liveness_deadline_s: u64,
}

/// The outcome the run is expected to have.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Expect {
    /// Default `pass`.
    pub outcome: ExpectedOutcome,
    /// Availability bounds (each optional): checked when the properties hold; a run over one
    /// fails with outcome `bound_exceeded` (exit code 4). The figures are those of
    /// `Availability` (the harness's `check::availability`). Longest write pause at the servers of a published
    /// planned move, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_write_pause_ms: Option<u64>,
    /// Longest client-visible unavailability of the whole service, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable_ms: Option<u64>,
    /// Longest time one range took no append while clients tried, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_range_unavailable_ms: Option<u64>,
    /// Longest time from a fault's end to a waited-on range serving again, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_recovery_after_fault_ms: Option<u64>,
    /// Most leader terms started (after the first) with no fault near a manager or `lock-1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_leader_terms_without_manager_fault: Option<u64>,
}

/// How a run ends.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedOutcome {
    /// No checker reports a violation.
    Pass,
    /// A safety checker (an "always" property) reports a violation.
    SafetyViolation,
    /// The cluster does not recover within `heal.liveness_deadline_s`.
    LivenessFailure,
}

impl Default for Scenario {
    /// Every section at its default and an empty description (which validation rejects, so a
    /// file must supply one).
    fn default() -> Self {
        Scenario {
            description: String::new(),
            topology: Topology::default(),
            knobs: KnobsSpec::default(),
            workload: Workload::default(),
            moves: Moves::default(),
            splits: Splits::default(),
            faults: Faults::default(),
            heal: Heal::default(),
            expect: Expect::default(),
            swarm: None,
        }
    }
}

impl Default for Topology {
    fn default() -> Self {
        Topology { servers: 3, managers: 2, frontends: 2, clients: 4, initial_ranges: 8 }
    }
}

impl Default for KnobsSpec {
    fn default() -> Self {
        KnobsSpec {
            lease_ms: 2000,
            lease_margin_ms: 200,
            renew_interval_ms: 400,
            rpc_timeout_ms: 500,
            store_timeout_ms: 1000,
            manager_tick_ms: 200,
            frontend_attempts: 8,
            frontend_backoff_ms: 20,
            frontend_backoff_ms_max: 640,
            bandwidth_bytes_per_s: 100 * 1024 * 1024,
            disk_sync_ms: 1,
            latency_ms: [1, 5],
            clock_drift_ppm: 0,
            torn_writes: false,
            map_staleness_ms: 5000,
        }
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            duration_s: 60,
            ops_per_s: 100.0,
            read_fraction: 0.3,
            bounded_read_fraction: 0.0,
            flux_fraction: 0.0,
            read_bound_ms: 1000,
            keys: 1000,
            key_skew: 1.0,
            record_bytes: 16,
            bulk_bytes: 0,
            preload_bytes: 0,
            start_s: 0,
            hot_shift_s: 0,
            in_flight_per_client: 1,
            shed_after_ms: 1000,
            script: Vec::new(),
        }
    }
}

impl Default for Faults {
    fn default() -> Self {
        Faults { random: Some(RandomFaults::default()), schedule: Vec::new() }
    }
}

impl Default for RandomFaults {
    fn default() -> Self {
        RandomFaults {
            crash_per_min: [1.0, 6.0],
            partition_per_min: [1.0, 6.0],
            down_ms: [200, 6000],
            partition_ms: [200, 6000],
            pause_per_min: [0.5, 3.0],
            pause_ms: [200, 5000],
            slow_disk_per_min: [0.5, 2.0],
            slow_disk_extra_ms: [20, 1500],
            message_faults_per_min: [0.0, 0.0],
            hold_ms: [1000, 8000],
            aimed_per_min: [0.0, 0.0],
            crash_targets: vec![
                NodeKind::Server,
                NodeKind::Manager,
                NodeKind::Store,
                NodeKind::Lock,
            ],
        }
    }
}

impl Default for Heal {
    fn default() -> Self {
        Heal { liveness_deadline_s: 30 }
    }
}

impl Default for Expect {
    fn default() -> Self {
        Expect {
            outcome: ExpectedOutcome::Pass,
            max_write_pause_ms: None,
            max_unavailable_ms: None,
            max_range_unavailable_ms: None,
            max_recovery_after_fault_ms: None,
            max_leader_terms_without_manager_fault: None,
        }
    }
}

/// Longest fault or outage a scenario may ask for: one hour, in ms.
const FAULT_MS_MAX: u64 = 3_600_000;

impl Scenario {
    /// Parse and validate a scenario. `origin` (usually the file name) prefixes every error.
    ///
    /// Errors are one line, `<origin>: <path>: <problem>`: JSON syntax errors give line and
    /// column; unknown fields give the containing object's path, the field and the accepted
    /// names; wrong types give the field's path; out-of-range values come from [`validate`].
    ///
    /// [`validate`]: Scenario::validate
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, String> {
        // serde reads a struct from a JSON array too, field by field in declaration order
        // (`"topology": [5, 3]` would be 5 servers and 3 managers): refuse arrays where the
        // format has objects before the typed read. Text that is not JSON at all gets its
        // syntax error from the typed read below, which knows the line and column.
        let value = serde_json::from_str::<serde_json::Value>(text).ok();
        if let Some(value) = &value {
            let template = serde_json::to_value(Scenario::shape_template()).expect("serializable");
            check_objects(value, &template, "").map_err(|e| format!("{origin}: {e}"))?;
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let scenario: Scenario = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| describe_json_error(origin, &e.path().to_string(), e.inner()))?;
        // Trailing text after the top-level object is a mistake too (e.g. two objects pasted).
        de.end().map_err(|e| describe_json_error(origin, ".", &e))?;
        // Whether a topology field was written (not defaulted) shows only in the text.
        if let Some(value) = &value {
            check_swarm_topology(value).map_err(|e| format!("{origin}: {e}"))?;
        }
        scenario.validate().map_err(|e| format!("{origin}: {e}"))?;
        Ok(scenario)
    }

    /// Read and parse a scenario file. Errors: `<path>: cannot read: <io error>`, or those of
    /// [`Scenario::parse`] with the path as origin.
    pub fn load(path: &Path) -> Result<Scenario, String> {
        let origin = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
        Scenario::parse(&text, &origin)
    }

    /// Check every value against its accepted range and the cross-field rules. Errors: the
    /// first problem found, as `<field path>: <problem>`.
    pub fn validate(&self) -> Result<(), String> {
        if self.description.trim().is_empty() {
            return Err("description: missing or empty; a scenario opens with what it exercises \
                        and why"
                .to_string());
        }
        if let Some(sw) = &self.swarm {
            ordered_pair("swarm.servers", sw.servers, 1, 32)?;
            ordered_pair("swarm.frontends", sw.frontends, 1, 8)?;
            ordered_pair("swarm.initial_ranges", sw.initial_ranges, 1, 256)?;
        }
        // Before the topology, whose initial_ranges is checked against it: a bad key count is
        // reported as itself, not as too many initial ranges.
        in_range("workload.keys", self.workload.keys, 1, 1_000_000)?;
        self.validate_topology()?;
        self.validate_knobs()?;
        self.validate_workload()?;
        self.validate_moves()?;
        self.validate_splits()?;
        self.validate_faults()?;
        in_range("heal.liveness_deadline_s", self.heal.liveness_deadline_s, 1, 600)?;
        if let Some(sw) = &self.swarm {
            if sw.initial_ranges[1] > self.workload.keys {
                return Err(format!("swarm.initial_ranges: the maximum must be at most workload.keys ({}), got {}", self.workload.keys, sw.initial_ranges[1]));
            }
            if !self.faults.schedule.is_empty() {
                return Err("faults.schedule: a swarm scenario draws its topology per seed, so an explicit schedule could name nodes that do not exist; use random faults or drop `swarm`".to_string());
            }
        }
        Ok(())
    }

    fn validate_topology(&self) -> Result<(), String> {
        let t = &self.topology;
        in_range("topology.servers", t.servers, 1, 32)?;
        in_range("topology.managers", t.managers, 1, 3)?;
        in_range("topology.frontends", t.frontends, 1, 8)?;
        in_range("topology.clients", t.clients, 1, 64)?;
        in_range("topology.initial_ranges", t.initial_ranges, 1, 256)?;
        if t.initial_ranges > self.workload.keys {
            return Err(format!(
                "topology.initial_ranges: must be at most workload.keys ({}), got {}",
                self.workload.keys, t.initial_ranges
            ));
        }
        Ok(())
    }

    fn validate_knobs(&self) -> Result<(), String> {
        let k = &self.knobs;
        in_range("knobs.lease_ms", k.lease_ms, 100, 60_000)?;
        if k.lease_margin_ms >= k.lease_ms {
            return Err(format!(
                "knobs.lease_margin_ms: must be less than knobs.lease_ms ({}), got {}",
                k.lease_ms, k.lease_margin_ms
            ));
        }
        // A holder must get at least one renewal in before it stops trusting its lease.
        let trusted_ms = k.lease_ms - k.lease_margin_ms;
        if k.renew_interval_ms == 0 || k.renew_interval_ms >= trusted_ms {
            return Err(format!(
                "knobs.renew_interval_ms: must be above 0 and less than knobs.lease_ms - \
                 knobs.lease_margin_ms ({trusted_ms}), got {}",
                k.renew_interval_ms
            ));
        }
        in_range("knobs.rpc_timeout_ms", k.rpc_timeout_ms, 1, 60_000)?;
        in_range("knobs.store_timeout_ms", k.store_timeout_ms, 1, 60_000)?;
        in_range("knobs.manager_tick_ms", k.manager_tick_ms, 1, 60_000)?;
        in_range("knobs.frontend_attempts", k.frontend_attempts, 1, 100)?;
        in_range("knobs.frontend_backoff_ms", k.frontend_backoff_ms, 1, 10_000)?;
        in_range(
            "knobs.frontend_backoff_ms_max",
            k.frontend_backoff_ms_max,
            k.frontend_backoff_ms,
            60_000,
        )?;
        in_range("knobs.bandwidth_bytes_per_s", k.bandwidth_bytes_per_s, 1000, u64::MAX)?;
        in_range("knobs.disk_sync_ms", k.disk_sync_ms, 0, 1000)?;
        ordered_pair("knobs.latency_ms", k.latency_ms, 0, 10_000)?;
        // Settings that fail without any fault: a request and its answer each take up to
        // latency_ms[1], so a timeout below the round trip times out healthy requests, and a
        // renewal must come back before the holder stops trusting its lease.
        let round_trip_ms = 2 * k.latency_ms[1];
        if round_trip_ms >= k.rpc_timeout_ms {
            return Err(format!(
                "knobs.latency_ms: a round trip at the highest latency takes 2 * {} = {round_trip_ms} ms, not below knobs.rpc_timeout_ms ({}): healthy requests would time out; lower the latency or raise the timeout",
                k.latency_ms[1], k.rpc_timeout_ms
            ));
        }
        if round_trip_ms + k.disk_sync_ms >= k.store_timeout_ms {
            return Err(format!(
                "knobs.store_timeout_ms: must be above a store append's round trip at the highest latency plus one fsync (2 * {} + {} = {} ms), or healthy appends would time out; got {}",
                k.latency_ms[1], k.disk_sync_ms, round_trip_ms + k.disk_sync_ms, k.store_timeout_ms
            ));
        }
        if k.renew_interval_ms + round_trip_ms >= trusted_ms {
            return Err(format!(
                "knobs.renew_interval_ms: a renewal sent every {} ms and answered within a round trip at the highest latency ({round_trip_ms} ms) must land before the lease stops being trusted (knobs.lease_ms - knobs.lease_margin_ms = {trusted_ms} ms), or every lease lapses without a fault",
                k.renew_interval_ms
            ));
        }
        in_range("knobs.clock_drift_ppm", k.clock_drift_ppm, 0, 500_000)?;
        if k.map_staleness_ms != 0 {
            in_range("knobs.map_staleness_ms", k.map_staleness_ms, 100, 600_000).map_err(|e| format!("{e} (or 0: no bound)"))?;
            // Frontends re-read the map every renew_interval_ms, each read taking up to
            // rpc_timeout_ms: a smaller bound would call a healthy map stale.
            let refresh = k.renew_interval_ms + k.rpc_timeout_ms;
            if k.map_staleness_ms <= refresh {
                return Err(format!(
                    "knobs.map_staleness_ms: must be above knobs.renew_interval_ms + knobs.rpc_timeout_ms ({refresh}), how long a frontend's re-read of the map can take, or 0 (no bound); got {}",
                    k.map_staleness_ms
                ));
            }
        }
        Ok(())
    }

    fn validate_workload(&self) -> Result<(), String> {
        let w = &self.workload;
        in_range("workload.duration_s", w.duration_s, 1, 3600)?;
        if !(w.ops_per_s >= 0.0 && w.ops_per_s <= 100_000.0) || (w.ops_per_s == 0.0 && w.script.is_empty()) {
            return Err(format!(
                "workload.ops_per_s: must be above 0 (or 0 with a workload.script) and at most 100000, got {}",
                w.ops_per_s
            ));
        }
        // Each client draws exponential gaps with mean `clients / ops_per_s` seconds; a rate at
        // which the whole window expects less than one operation is a mistake (0 says "none").
        if w.ops_per_s > 0.0 && w.ops_per_s * (w.duration_s as f64) < 1.0 {
            return Err(format!(
                "workload.ops_per_s: {} ops/s expects less than one operation in workload.duration_s ({} s); \
                 use at least 1 / duration_s ({}), or 0 with a workload.script",
                w.ops_per_s,
                w.duration_s,
                1.0 / w.duration_s as f64
            ));
        }
        let end_ms = w.duration_s.saturating_mul(1000);
        for (i, a) in w.script.iter().enumerate() {
            let path = format!("workload.script[{i}]");
            if a.at_ms >= end_ms {
                return Err(format!("{path}.at_ms: must be less than the workload's end ({end_ms}), got {}", a.at_ms));
            }
            in_range(&format!("{path}.key"), a.key.len(), 1, 64).map_err(|e| format!("{e} (bytes)"))?;
            in_range(&format!("{path}.bytes"), a.bytes, 6, 1_048_576)?;
            // A swarm scenario draws its frontends per seed: the script may only name one that
            // every draw has.
            let (frontends, limit) = match &self.swarm {
                Some(sw) => (sw.frontends[0], "swarm.frontends[0], the fewest frontends a seed can draw"),
                None => (self.topology.frontends, "topology.frontends"),
            };
            if a.frontend == 0 || a.frontend > frontends {
                return Err(format!(
                    "{path}.frontend: must be in 1..={frontends} ({limit}), got {}",
                    a.frontend
                ));
            }
        }
        in_range("workload.read_fraction", w.read_fraction, 0.0, 1.0)?;
        in_range("workload.bounded_read_fraction", w.bounded_read_fraction, 0.0, 1.0)?;
        in_range("workload.flux_fraction", w.flux_fraction, 0.0, 1.0)?;
        in_range("workload.read_bound_ms", w.read_bound_ms, 0, 600_000)?;
        in_range("workload.key_skew", w.key_skew, 0.0, 5.0)?;
        in_range("workload.record_bytes", w.record_bytes, 16, 1_048_576)?;
        in_range("workload.bulk_bytes", w.bulk_bytes, 0, 1 << 40)?;
        in_range("workload.preload_bytes", w.preload_bytes, 0, 1 << 46)?;
        let record = w.record_bytes as u64 + w.bulk_bytes;
        let max = self.max_record_bytes();
        if record > max {
            return Err(format!(
                "workload.bulk_bytes: an append of record_bytes + bulk_bytes = {record} bytes must fit the store's smallest chunk, {max} bytes (knobs.bandwidth_bytes_per_s for a twentieth of knobs.store_timeout_ms), or no timeout can hold for it"
            ));
        }
        in_range("workload.hot_shift_s", w.hot_shift_s, 0, 3600)?;
        in_range("workload.in_flight_per_client", w.in_flight_per_client, 1, 64)?;
        in_range("workload.shed_after_ms", w.shed_after_ms, 0, 600_000)?;
        let need = self.offered_memory_bytes();
        if need > MEMORY_BUDGET_BYTES {
            let appends = self.offered_appends();
            let ops = appends / (1.0 - w.read_fraction).max(1e-9);
            // Name the field whose term dominates the estimate.
            let field = if appends * RECORD_COPIES * w.record_bytes as f64 > ops * HISTORY_BYTES_PER_OP { "workload.record_bytes" } else { "workload.ops_per_s" };
            return Err(format!(
                "{field}: the offered load cannot fit in memory: about {:.1} GiB (ops_per_s {} for {} s is {:.0} operations, {:.0} of them appends of record_bytes {} held about {} times, plus about {} bytes of history per operation), over the {} GiB a run may use; lower workload.ops_per_s, workload.duration_s or workload.record_bytes (bulk_bytes simulate size without memory)",
                need / (1u64 << 30) as f64,
                w.ops_per_s,
                w.duration_s - w.start_s,
                ops,
                appends,
                w.record_bytes,
                RECORD_COPIES,
                HISTORY_BYTES_PER_OP,
                MEMORY_BUDGET_BYTES / (1u64 << 30) as f64,
            ));
        }
        if w.start_s >= w.duration_s.max(1) {
            return Err(format!("workload.start_s: must be less than workload.duration_s ({}), got {}", w.duration_s, w.start_s));
        }
        Ok(())
    }

    /// Appends the random clients offer over the window (the script's are few and not counted).
    pub fn offered_appends(&self) -> f64 {
        let w = &self.workload;
        w.ops_per_s * (w.duration_s.saturating_sub(w.start_s)) as f64 * (1.0 - w.read_fraction)
    }

    /// The memory the offered load needs, bytes: every append's payload held about
    /// [`RECORD_COPIES`] times (the store's stream, its owner's content, a move's or split's
    /// copy, the final read) plus [`HISTORY_BYTES_PER_OP`] per operation (the history's events
    /// and the checkers' indexes, kept until the run is judged). Shedding bounds what is in
    /// flight, not what a run keeps: an operation that completes stays in the history.
    pub fn offered_memory_bytes(&self) -> f64 {
        let w = &self.workload;
        let appends = self.offered_appends();
        let ops = w.ops_per_s * (w.duration_s.saturating_sub(w.start_s)) as f64;
        appends * RECORD_COPIES * w.record_bytes as f64 + ops * HISTORY_BYTES_PER_OP
    }

    fn validate_moves(&self) -> Result<(), String> {
        let m = &self.moves;
        if m.strategy != "per-seed" {
            partmap::map::Strategy::parse(&m.strategy).map_err(|e| format!("moves.strategy: {e}, per-seed"))?;
        }
        in_range("moves.precopy_threshold_bytes", m.precopy_threshold_bytes, 0, 1 << 30)?;
        in_range("moves.precopy_max_rounds", m.precopy_max_rounds, 1, 100)?;
        if m.cutover_budget_ms != 0 {
            in_range("moves.cutover_budget_ms", m.cutover_budget_ms, 1, 3_600_000).map_err(|e| format!("{e} (or 0: no budget)"))?;
        }
        if m.cutover_timeout_ms != 0 {
            in_range("moves.cutover_timeout_ms", m.cutover_timeout_ms, 1000, 3_600_000).map_err(|e| format!("{e} (or 0: never)"))?;
        }
        in_range("moves.max_concurrent", m.max_concurrent, 0, 64)?;
        ordered_pair("moves.requests_per_min", m.requests_per_min, 0.0, 600.0)?;
        // The leader accepts a move request and queues it, but starts at most max_concurrent
        // moves: at 0 every request would be accepted and never run.
        if m.max_concurrent == 0 && m.requests_per_min[1] > 0.0 {
            return Err(format!(
                "moves.requests_per_min: asks for random move requests (up to {} a minute), but moves.max_concurrent is 0, so no move ever starts and every request would be accepted and never run; raise moves.max_concurrent or set requests_per_min to [0, 0]",
                m.requests_per_min[1]
            ));
        }
        ordered_pair("moves.drains_per_min", m.drains_per_min, 0.0, 600.0)?;
        ordered_pair("moves.drain_ms", m.drain_ms, 1, FAULT_MS_MAX)?;
        Ok(())
    }

    fn validate_splits(&self) -> Result<(), String> {
        let sp = &self.splits;
        in_range("splits.split_ops_per_s", sp.split_ops_per_s, 0.0, 100_000.0)?;
        in_range("splits.merge_ops_per_s", sp.merge_ops_per_s, 0.0, 100_000.0)?;
        if sp.split_ops_per_s > 0.0 && sp.merge_ops_per_s >= sp.split_ops_per_s {
            return Err(format!(
                "splits.merge_ops_per_s: must be below splits.split_ops_per_s ({}), or ranges would split and merge back at once; got {}",
                sp.split_ops_per_s, sp.merge_ops_per_s
            ));
        }
        in_range("splits.merge_hysteresis_ms", sp.merge_hysteresis_ms, 0, FAULT_MS_MAX)?;
        in_range("splits.max_ranges", sp.max_ranges, 1, 1024)?;
        in_range("splits.min_ranges", sp.min_ranges, 1, sp.max_ranges)?;
        Ok(())
    }

    fn validate_faults(&self) -> Result<(), String> {
        if let Some(r) = &self.faults.random {
            ordered_pair("faults.random.crash_per_min", r.crash_per_min, 0.0, 600.0)?;
            ordered_pair("faults.random.partition_per_min", r.partition_per_min, 0.0, 600.0)?;
            ordered_pair("faults.random.down_ms", r.down_ms, 1, FAULT_MS_MAX)?;
            ordered_pair("faults.random.partition_ms", r.partition_ms, 1, FAULT_MS_MAX)?;
            ordered_pair("faults.random.pause_per_min", r.pause_per_min, 0.0, 600.0)?;
            ordered_pair("faults.random.pause_ms", r.pause_ms, 1, FAULT_MS_MAX)?;
            ordered_pair("faults.random.slow_disk_per_min", r.slow_disk_per_min, 0.0, 600.0)?;
            ordered_pair("faults.random.slow_disk_extra_ms", r.slow_disk_extra_ms, 1, 60_000)?;
            ordered_pair("faults.random.message_faults_per_min", r.message_faults_per_min, 0.0, 600.0)?;
            ordered_pair("faults.random.hold_ms", r.hold_ms, 1, FAULT_MS_MAX)?;
            ordered_pair("faults.random.aimed_per_min", r.aimed_per_min, 0.0, 600.0)?;
            for (i, kind) in r.crash_targets.iter().enumerate() {
                if r.crash_targets[..i].contains(kind) {
                    return Err(format!(
                        "faults.random.crash_targets[{i}]: `{}` is listed twice",
                        node_kind_name(*kind)
                    ));
                }
            }
            if r.crash_targets.is_empty() && r.crash_per_min[1] > 0.0 {
                return Err("faults.random.crash_targets: empty, but faults.random.crash_per_min \
                            allows crashes; list the kinds to crash or set crash_per_min to \
                            [0, 0]"
                    .to_string());
            }
        }
        let names = self.node_names();
        let end_ms = self.workload.duration_s.saturating_mul(1000);
        for (i, timed) in self.faults.schedule.iter().enumerate() {
            let path = format!("faults.schedule[{i}]");
            if timed.at_ms >= end_ms {
                return Err(format!(
                    "{path}.at_ms: must be less than the workload's end, workload.duration_s * \
                     1000 ({end_ms}), got {}",
                    timed.at_ms
                ));
            }
            match (timed.fault.instant_request(), timed.duration_ms) {
                (Some(kind), Some(_)) => {
                    return Err(format!("{path}.duration_ms: a `{kind}` request is instantaneous; leave duration_ms out"));
                }
                (Some(_), None) => {}
                (None, Some(ms)) => in_range(&format!("{path}.duration_ms"), ms, 1, FAULT_MS_MAX)?,
                (None, None) => {
                    return Err(format!(
                        "{path}.duration_ms: missing; a `{}` fault lasts duration_ms (1..={FAULT_MS_MAX}); only move, split_range, merge_ranges and leader_transfer requests leave it out",
                        fault_kind_name(&timed.fault)
                    ));
                }
            }
            self.validate_fault(&format!("{path}.fault"), &timed.fault, &names)?;
            if timed.on.is_none() && crate::fault::Fault::from_spec(&timed.fault).nodes().iter().any(|n| crate::fault::aim::Aim::decode(n).is_some_and(|a| a.role == crate::fault::aim::Role::TriggerNode)) {
                return Err(format!("{path}.fault: role `trigger-node` needs a trigger (`on`) whose event names the node"));
            }
            if matches!(timed.fault, FaultSpec::Move { .. }) && self.moves.max_concurrent == 0 {
                return Err(format!("{path}.fault: a `move` request, but moves.max_concurrent is 0, so no move ever starts and it would be accepted and never run; raise moves.max_concurrent or drop the request"));
            }
            if let Some(on) = &timed.on {
                if timed.fault.is_operator_request() {
                    return Err(format!("{path}.on: operator requests are sent at at_ms; a trigger applies to faults only"));
                }
                if !partmap::event::Event::NAMES.contains(&on.event.as_str()) {
                    return Err(format!(
                        "{path}.on.event: unknown event `{}`; accepted: {}",
                        on.event,
                        partmap::event::Event::NAMES.join(", ")
                    ));
                }
                self.known_node(&format!("{path}.on.node"), &on.node, &names)?;
                if crate::fault::aim::Aim::decode(&on.node).is_some_and(|a| a.role == crate::fault::aim::Role::TriggerNode) {
                    return Err(format!("{path}.on.node: role `trigger-node` names the emitter of this very trigger; name a node or another role"));
                }
                let (has_range, has_epoch) = Self::trigger_fields(&on.event);
                if on.range.is_some() && !has_range {
                    return Err(format!("{path}.on.range: event `{}` has no range field; events with one: {}", on.event, crate::fault::trigger::range_events().join(", ")));
                }
                if on.epoch.is_some() && !has_epoch {
                    return Err(format!("{path}.on.epoch: event `{}` has no range epoch field; events with one: {}", on.event, crate::fault::trigger::RANGE_EPOCH_EVENTS.join(", ")));
                }
                in_range(&format!("{path}.on.count"), on.count, 1, 1_000_000)?;
                in_range(&format!("{path}.on.delay_ms"), on.delay_ms, 0, FAULT_MS_MAX)?;
            }
        }
        Ok(())
    }

    fn validate_fault(
        &self,
        path: &str,
        fault: &FaultSpec,
        names: &[String],
    ) -> Result<(), String> {
        match fault {
            FaultSpec::SlowDisk { node, extra_ms } => {
                named_only(&format!("{path}.node"), node, "slow_disk", "only lock-1 and store-1 have disks")?;
                if node != "lock-1" && node != "store-1" {
                    return Err(format!("{path}.node: `{node}` has no disk; slow_disk applies to lock-1 or store-1"));
                }
                in_range(&format!("{path}.extra_ms"), *extra_ms, 1, 60_000)
            }
            FaultSpec::Crash { node } | FaultSpec::Isolate { node } | FaultSpec::Pause { node } => {
                self.known_node(&format!("{path}.node"), node, names)
            }
            FaultSpec::Drain { node } | FaultSpec::Move { to: node, .. } => {
                let field = if matches!(fault, FaultSpec::Drain { .. }) { "node" } else { "to" };
                named_only(&format!("{path}.{field}"), node, &fault_kind_name(fault), "operator requests are planned before the run and name their server")?;
                self.known_node(&format!("{path}.{field}"), node, names)?;
                if !node.starts_with("server-") {
                    return Err(format!("{path}.{field}: `{node}` is not a partition server"));
                }
                Ok(())
            }
            FaultSpec::SplitRange { at } => {
                let i = self.workload_key(&format!("{path}.at"), at)?;
                if let Some(j) = self.initial_split_points().iter().position(|p| p == at.as_bytes()) {
                    return Err(format!(
                        "{path}.at: `{at}` is where initial range {} starts (split points are keys number keys * j / initial_ranges), so it splits nothing; pick a key inside a range",
                        j + 2
                    ));
                }
                if i == 0 {
                    return Err(format!("{path}.at: `{at}` is the first key, where the first range starts, so it splits nothing; pick a key inside a range"));
                }
                Ok(())
            }
            FaultSpec::LeaderTransfer {} => Ok(()),
            FaultSpec::MergeRanges { left, right } => {
                let l = self.workload_key(&format!("{path}.left"), left)?;
                let r = self.workload_key(&format!("{path}.right"), right)?;
                if l >= r {
                    return Err(format!("{path}.right: must be a key after left (`{left}`), got `{right}`"));
                }
                Ok(())
            }
            FaultSpec::Split { side } => {
                if side.is_empty() {
                    return Err(format!("{path}.side: must name at least one node"));
                }
                for (j, node) in side.iter().enumerate() {
                    let node_path = format!("{path}.side[{j}]");
                    named_only(&node_path, node, "split", "a side lists node names")?;
                    self.known_node(&node_path, node, names)?;
                    if side[..j].contains(node) {
                        return Err(format!("{node_path}: `{node}` is listed twice"));
                    }
                }
                if side.len() == names.len() {
                    return Err(format!(
                        "{path}.side: names every node, so nothing is cut; leave at least one \
                         node on the other side"
                    ));
                }
                Ok(())
            }
            FaultSpec::DelayNext { from, to, message } => {
                if !partmap::msg::Msg::KIND_NAMES.contains(&message.as_str()) {
                    return Err(format!("{path}.message: unknown message kind `{message}`; accepted: {}", partmap::msg::Msg::KIND_NAMES.join(", ")));
                }
                self.known_node(&format!("{path}.from"), from, names)?;
                self.known_node(&format!("{path}.to"), to, names)?;
                if from == to {
                    return Err(format!("{path}.to: must differ from {path}.from (`{from}`)"));
                }
                Ok(())
            }
            FaultSpec::OneWay { from, to } | FaultSpec::Delay { from, to } | FaultSpec::Duplicate { from, to } | FaultSpec::Corrupt { from, to } | FaultSpec::Reorder { from, to } => {
                if let (FaultSpec::Corrupt { .. }, Some(aim)) = (fault, crate::fault::aim::Aim::decode(to)) {
                    if !aim.role.is_server() {
                        return Err(format!("{path}.to: role `{}` cannot receive a corrupted copy; corrupt applies to pre-copy chunks a server reads (e.g. role move-target)", aim.role.name()));
                    }
                }
                self.known_node(&format!("{path}.from"), from, names)?;
                self.known_node(&format!("{path}.to"), to, names)?;
                if from == to {
                    return Err(format!("{path}.to: must differ from {path}.from (`{from}`)"));
                }
                Ok(())
            }
        }
    }

    /// The fields an `on` filter may name for `event`: `(range, epoch)`.
    fn trigger_fields(event: &str) -> (bool, bool) {
        let with_both = crate::fault::trigger::RANGE_EPOCH_EVENTS.contains(&event);
        let range_only = crate::fault::trigger::RANGE_ONLY_EVENTS.contains(&event);
        (with_both || range_only, with_both)
    }

    /// The index of `key`, a key of the workload (`k` and six digits, below `workload.keys`).
    fn workload_key(&self, path: &str, key: &str) -> Result<u32, String> {
        let digits = key.strip_prefix('k').filter(|d| d.len() == 6 && d.bytes().all(|b| b.is_ascii_digit()));
        let Some(i) = digits.and_then(|d| d.parse::<u32>().ok()) else {
            return Err(format!("{path}: `{key}` is not a workload key (`k` and six digits, such as k000042)"));
        };
        if i >= self.workload.keys {
            return Err(format!("{path}: `{key}` is past the key space (workload.keys = {}: k000000 to {})", self.workload.keys, String::from_utf8_lossy(&key_name(self.workload.keys - 1))));
        }
        Ok(i)
    }

    fn known_node(&self, path: &str, node: &str, names: &[String]) -> Result<(), String> {
        if let Some(aim) = crate::fault::aim::Aim::decode(node) {
            return aim.validate(path);
        }
        if names.iter().any(|n| n == node) {
            return Ok(());
        }
        let t = &self.topology;
        Err(format!(
            "{path}: no node `{node}` (topology has lock-1, store-1, {}, {}, {})",
            numbered("manager", t.managers),
            numbered("server", t.servers),
            numbered("frontend", t.frontends),
        ))
    }

    /// A scenario with every optional section and list present (one entry each), so its JSON
    /// form shows where the format has objects; see `check_objects`.
    fn shape_template() -> Scenario {
        let mut s = Scenario { swarm: Some(Swarm { servers: [1, 1], frontends: [1, 1], initial_ranges: [1, 1] }), ..Scenario::default() };
        s.workload.script.push(ScriptedAppend { at_ms: 0, key: "k".into(), bytes: 6, frontend: 1 });
        s.faults.schedule.push(TimedFault {
            at_ms: 0,
            on: Some(Trigger { event: "paused".into(), node: "server-1".into(), range: None, epoch: None, count: 1, delay_ms: 1 }),
            duration_ms: Some(1),
            fault: FaultSpec::Crash { node: "server-1".into() },
        });
        s
    }

    /// The built-in default scenario, `scenarios/swarm.json` compiled in: every flow under every
    /// fault kind, topology and rates drawn per seed. Panics only if the shipped file is broken,
    /// which `sim/tests/all/scenario_errors.rs` guards against.
    pub fn default_swarm() -> Scenario {
        Scenario::parse(include_str!("../../../scenarios/swarm.json"), "scenarios/swarm.json")
            .unwrap_or_else(|e| panic!("the built-in scenario is broken: {e}"))
    }

    /// `scenarios/failover.json` compiled in (the failover flow alone, every field written out). Panics only if the
    /// shipped file is broken, which `sim/tests/all/scenario_errors.rs` guards against.
    pub fn default_failover() -> Scenario {
        Scenario::parse(include_str!("../../../scenarios/failover.json"), "scenarios/failover.json")
            .unwrap_or_else(|e| panic!("the built-in scenario is broken: {e}"))
    }

    /// The largest record (payload plus bulk, bytes) the store's smallest read chunk carries:
    /// what one node's link sends in a twentieth of the store timeout
    /// (`partmap::store::chunk_budget` with a full backlog). Appends and preload records must fit
    /// it, so every transfer of a range is a sequence of chunks each within its timeout.
    pub fn max_record_bytes(&self) -> u64 {
        partmap::store::chunk_budget(self.knobs.bandwidth_bytes_per_s, self.knobs.store_timeout_ms, u64::MAX)
    }

    /// The knobs the nodes run with: `self.knobs`, `topology.servers`, and the split points of
    /// `topology.initial_ranges` equal ranges over `workload.keys` keys. No mutation.
    pub fn node_knobs(&self) -> partmap::config::Knobs {
        let k = &self.knobs;
        partmap::config::Knobs {
            lease_ms: k.lease_ms,
            lease_margin_ms: k.lease_margin_ms,
            renew_interval_ms: k.renew_interval_ms,
            rpc_timeout_ms: k.rpc_timeout_ms,
            store_timeout_ms: k.store_timeout_ms,
            manager_tick_ms: k.manager_tick_ms,
            frontend_attempts: k.frontend_attempts,
            frontend_backoff_ms: k.frontend_backoff_ms,
            frontend_backoff_ms_max: k.frontend_backoff_ms_max,
            bandwidth_bytes_per_s: k.bandwidth_bytes_per_s,
            disk_sync_ms: k.disk_sync_ms,
            initial_split_points: self.initial_split_points(),
            servers: self.topology.servers,
            strategy: partmap::map::Strategy::parse(&self.moves.strategy).unwrap_or(partmap::map::Strategy::PreCopy),
            precopy_threshold_bytes: self.moves.precopy_threshold_bytes,
            precopy_max_rounds: self.moves.precopy_max_rounds,
            cutover_budget_ms: self.moves.cutover_budget_ms,
            cutover_timeout_ms: self.moves.cutover_timeout_ms,
            balance: self.moves.balance,
            max_concurrent_moves: self.moves.max_concurrent,
            split_ops_per_s: self.splits.split_ops_per_s,
            merge_ops_per_s: self.splits.merge_ops_per_s,
            merge_hysteresis_ms: self.splits.merge_hysteresis_ms,
            max_ranges: self.splits.max_ranges,
            min_ranges: self.splits.min_ranges,
            map_staleness_ms: k.map_staleness_ms,
            mutation: None,
        }
    }

    /// `key_name(keys * j / initial_ranges)` for `j` in `1..initial_ranges`, strictly increasing.
    fn initial_split_points(&self) -> Vec<Vec<u8>> {
        let keys = u64::from(self.workload.keys);
        let ranges = u64::from(self.topology.initial_ranges);
        let mut points: Vec<Vec<u8>> = Vec::new();
        for j in 1..ranges {
            let index = u32::try_from(keys * j / ranges).expect("below keys, which is a u32");
            let point = key_name(index);
            // With fewer keys than ranges two split points could coincide; keep one.
            if points.last() != Some(&point) {
                points.push(point);
            }
        }
        assert!(points.windows(2).all(|w| w[0] < w[1]), "split points must strictly increase");
        assert!(points.len() < self.topology.initial_ranges.max(1) as usize);
        points
    }

    /// This scenario with its topology drawn from `swarm` (if any) and its move strategy drawn
    /// if it is `per-seed`, using `rng`; the result has no `swarm` section. Without either, an
    /// unchanged copy (and nothing is drawn).
    pub fn draw_swarm(&self, rng: &mut impl madsim::rand::Rng) -> Scenario {
        let mut s = self.clone();
        if let Some(sw) = s.swarm.take() {
            let mut pick = |r: [u32; 2]| rng.gen_range(r[0]..=r[1]);
            s.topology.servers = pick(sw.servers);
            s.topology.frontends = pick(sw.frontends);
            s.topology.initial_ranges = pick(sw.initial_ranges);
        }
        if s.moves.strategy == "per-seed" {
            let names = partmap::map::Strategy::ALL;
            s.moves.strategy = names[rng.gen_range(0..names.len())].1.to_string();
        }
        s
    }

    /// Every node of this topology: `lock-1`, `store-1`, `manager-1..M`, `server-1..N`,
    /// `frontend-1..F`, in that order. Clients are not nodes and cannot be fault targets.
    pub fn node_names(&self) -> Vec<String> {
        let t = &self.topology;
        let mut names = vec!["lock-1".to_string(), "store-1".to_string()];
        names.extend((1..=t.managers).map(|n| format!("manager-{n}")));
        names.extend((1..=t.servers).map(|n| format!("server-{n}")));
        names.extend((1..=t.frontends).map(|n| format!("frontend-{n}")));
        names
    }
}

/// The name of key number `i`: `k` and six digits, e.g. `k000042`. Zero-padded so byte order
/// equals numeric order; `i` must be below 1000000 (the largest `workload.keys`).
pub fn key_name(i: u32) -> Vec<u8> {
    assert!(i < 1_000_000, "key index {i} has more than six digits");
    format!("k{i:06}").into_bytes()
}

/// `<origin>: <path>: <problem> (line L, column C)`, or for a syntax error
/// `<origin>: [<path>: ]line L, column C: invalid JSON: <problem>`. serde_json appends the
/// position to its message; it is moved so the path comes first.
fn describe_json_error(origin: &str, path: &str, err: &serde_json::Error) -> String {
    let (line, column) = (err.line(), err.column());
    let message = err.to_string();
    let message =
        message.strip_suffix(&format!(" at line {line} column {column}")).unwrap_or(&message);
    // serde_path_to_error writes `?` for a key it has not read yet (a syntax error inside an
    // object); the containing object's path is what helps.
    let path = path.trim_end_matches(".?");
    let at_root = path == "." || path == "?" || path.is_empty();
    match err.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof if at_root => {
            format!("{origin}: line {line}, column {column}: invalid JSON: {message}")
        }
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            // serde_json reports an over-long fixed-size array such as `[1, 2, 3]` for a
            // `[min, max]` pair as trailing characters; say what most likely happened.
            let hint = if message == "trailing characters" {
                " (more elements than the array takes?)"
            } else {
                ""
            };
            format!("{origin}: {path}: line {line}, column {column}: invalid JSON: {message}{hint}")
        }
        serde_json::error::Category::Io => format!("{origin}: cannot read: {message}"),
        serde_json::error::Category::Data if at_root => {
            format!("{origin}: {message} (line {line}, column {column})")
        }
        serde_json::error::Category::Data => {
            let message = reword_type_error(path, message);
            format!("{origin}: {path}: {message} (line {line}, column {column})")
        }
    }
}

/// serde's wrong-type and wrong-value messages in the format's words:
/// `invalid value: integer `-5`, expected u64` becomes `must be a non-negative integer, got -5`,
/// `invalid type: string "none", expected struct RandomFaults` becomes `must be an object (or
/// null: no random faults), got the string "none"`. Other messages (unknown fields, unknown
/// variants, wrong array lengths) already say what is wrong and are kept.
fn reword_type_error(path: &str, message: &str) -> String {
    let Some((got, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
    else {
        return message.to_string();
    };
    // What was found: serde writes `integer `-5``, `floating point `1.5``, `string "x"`,
    // `boolean `true``, `null`, `map`, `sequence`.
    let number = |prefix: &str| got.strip_prefix(prefix).map(|v| v.trim_matches('`').to_string());
    let found = number("integer ")
        .or_else(|| number("floating point "))
        .or_else(|| number("boolean "))
        .or_else(|| got.starts_with("string ").then(|| format!("the {got}")))
        .unwrap_or_else(|| match got {
            "map" => "an object".to_string(),
            "sequence" => "an array".to_string(),
            other => other.to_string(),
        });
    let unsigned_max = match expected {
        "u8" => Some(u64::from(u8::MAX)),
        "u16" => Some(u64::from(u16::MAX)),
        "u32" => Some(u64::from(u32::MAX)),
        "u64" => Some(u64::MAX),
        _ => None,
    };
    let wanted = match (expected, unsigned_max) {
        // An integer too large for the field's type.
        (_, Some(max)) if got.starts_with("integer ") && !found.starts_with('-') => {
            return format!("must be at most {max}, got {found}");
        }
        (_, Some(_)) => "a non-negative integer".to_string(),
        ("f64" | "f32", _) => "a number".to_string(),
        ("a sequence", _) => "an array".to_string(),
        (e, _) if e.starts_with("struct ") => "an object".to_string(),
        (e, _) if e.starts_with("a ") || e.starts_with("an ") => e.to_string(),
        _ => return message.to_string(),
    };
    let or_null = if path == "faults.random" { " (or null: no random faults)" } else { "" };
    format!("must be {wanted}{or_null}, got {found}")
}

/// Every place where `template` (a scenario with every optional section present) has an object
/// must not be an array in `value`: an array there is reported as
/// `<path>: expected an object, got an array`. Array elements are checked against the
/// template's first element. Other mismatches (wrong types, unknown fields) are left to the
/// typed read, which reports them with their position.
fn check_objects(value: &serde_json::Value, template: &serde_json::Value, path: &str) -> Result<(), String> {
    use serde_json::Value;
    let shown = if path.is_empty() { "the scenario" } else { path };
    match (value, template) {
        (Value::Array(items), Value::Object(fields)) => {
            let names: Vec<&str> = fields.keys().map(String::as_str).collect();
            Err(format!(
                "{shown}: expected an object, got an array of {} element(s) (write the fields by name: {})",
                items.len(),
                names.join(", ")
            ))
        }
        (Value::Object(fields), Value::Object(template_fields)) => {
            for (name, field) in fields {
                if let Some(t) = template_fields.get(name) {
                    let inner = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                    check_objects(field, t, &inner)?;
                }
            }
            Ok(())
        }
        (Value::Array(items), Value::Array(template_items)) => {
            let Some(t) = template_items.first() else { return Ok(()) };
            for (i, item) in items.iter().enumerate() {
                check_objects(item, t, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A file with a `swarm` section must not also write the `topology` fields swarm draws per
/// seed (`servers`, `frontends`, `initial_ranges`): the written value would be ignored.
fn check_swarm_topology(value: &serde_json::Value) -> Result<(), String> {
    if !value.get("swarm").is_some_and(serde_json::Value::is_object) {
        return Ok(());
    }
    let Some(topology) = value.get("topology").and_then(serde_json::Value::as_object) else { return Ok(()) };
    for field in ["servers", "frontends", "initial_ranges"] {
        if let Some(written) = topology.get(field) {
            return Err(format!(
                "topology.{field}: {written} would be ignored: the swarm section draws it per seed from swarm.{field}; remove topology.{field} or drop `swarm`"
            ));
        }
    }
    Ok(())
}

/// `<path>: must be in lo..=hi, got v` unless `lo <= v <= hi`.
fn in_range<T: PartialOrd + Display>(path: &str, value: T, lo: T, hi: T) -> Result<(), String> {
    if lo <= value && value <= hi {
        Ok(())
    } else {
        Err(format!("{path}: must be in {lo}..={hi}, got {value}"))
    }
}

/// A `[min, max]` range: both ends within `lo..=hi` and `min <= max`.
fn ordered_pair<T: PartialOrd + Display + Copy>(
    path: &str,
    pair: [T; 2],
    lo: T,
    hi: T,
) -> Result<(), String> {
    in_range(&format!("{path}[0]"), pair[0], lo, hi)?;
    in_range(&format!("{path}[1]"), pair[1], lo, hi)?;
    if pair[0] > pair[1] {
        return Err(format!(
            "{path}: must be [min, max] with min <= max, got [{}, {}]",
            pair[0], pair[1]
        ));
    }
    Ok(())
}

/// `kind-1` or `kind-1..kind-N`.
fn numbered(kind: &str, count: u32) -> String {
    if count == 1 {
        format!("{kind}-1")
    } else {
        format!("{kind}-1..{kind}-{count}")
    }
}

/// The `kind` a fault has in the file (`crash`, `one_way`, ...).
fn fault_kind_name(fault: &FaultSpec) -> String {
    serde_json::to_value(fault).ok().and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string)).unwrap_or_default()
}

fn node_kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Server => "server",
        NodeKind::Manager => "manager",
        NodeKind::Store => "store",
        NodeKind::Lock => "lock",
    }
}
