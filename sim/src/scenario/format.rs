//! The scenario format's types: one struct or enum per section of the file, each field with
//! its accepted range and default.

use serde::{Deserialize, Serialize};

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
    /// Per node, a clock drift pinned in parts per million, instead of the seed's draw for that
    /// node (the draw is still made, so the other nodes' rates and the rest of the run stay the
    /// seed's): the corners of the drift bound, an owner's clock slow while the authority's is
    /// fast, that a uniform draw seldom gives (Jepsen's clock nemesis skews clocks on purpose).
    /// Keys are nodes of the topology, values within `±clock_drift_ppm`. Default: none.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub clock_drift_pinned_ppm: std::collections::BTreeMap<String, i64>,
    /// The worst case of the drift bound for leases: the authority's clock (lock-1) runs fast
    /// by the whole `clock_drift_ppm` and every lease holder's (servers and managers) slow by
    /// it, so each holder trusts its lease as long past the authority's end of it as the bound
    /// allows; the other nodes draw as usual, and `clock_drift_pinned_ppm` overrides it per
    /// node. A lease margin that covers the bound covers this; boundary values, as Jepsen's
    /// clock nemesis skews clocks on purpose, where a uniform draw seldom lands. Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clock_drift_worst_case: bool,
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
    /// The script client is open loop: each scripted append waits for its time and its
    /// trigger from the start of the run, and none waits for the appends before it (as the
    /// model checker's client, whose counterexamples a replay scenario carries; a trigger's
    /// count then runs from the append's `at_ms`, not from the previous append's end).
    /// Default false: one at a time, in order.
    pub script_open_loop: bool,
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
    /// Send it on a protocol event instead of at `at_ms`: the script waits, from `at_ms` on,
    /// for the trigger's event (as a fault's `on`), then `delay_ms`, then sends. Appends still
    /// go one at a time, in order, unless `workload.script_open_loop`. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<Trigger>,
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
    /// named points): see [`Trigger`]. An operator's move, split, merge or leader transfer
    /// is then sent when it fires (not a drain). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<Trigger>,
    /// End the fault on a protocol event instead of after `duration_ms`: the crashed node
    /// restarts, the network heals, or a `delay_next`'s held message goes on its way, when the
    /// trigger fires (counted from the moment the fault starts; its `delay_ms` after the
    /// event), or after `duration_ms` if that comes first. For "held until the new leader is
    /// elected": what a model counterexample's held message waited for. Not on the
    /// instantaneous requests. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Trigger>,
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
