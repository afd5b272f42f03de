//! Knobs of the control plane and the fixed node addresses.

use crate::ids::ServerId;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Every timing and sizing knob the nodes use. The harness fills it from a scenario file; all
/// durations are milliseconds of simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    /// Session and leader lease length at the authority.
    pub lease_ms: u64,
    /// A lease holder stops trusting its lease this long before `send time of the renewal +
    /// lease_ms` (covers clock drift between holder and authority).
    pub lease_margin_ms: u64,
    /// How often servers renew their session and managers their leader lease.
    pub renew_interval_ms: u64,
    /// Timeout of one request between nodes.
    pub rpc_timeout_ms: u64,
    /// Timeout of an append at the store, as the server waits for it.
    pub store_timeout_ms: u64,
    /// How often the leader manager looks at the map and sessions.
    pub manager_tick_ms: u64,
    /// Attempts a frontend makes for one client operation before giving up.
    pub frontend_attempts: u32,
    /// First backoff of a frontend retry; doubles per attempt up to `frontend_backoff_ms_max`.
    pub frontend_backoff_ms: u64,
    /// Cap of the frontend backoff.
    pub frontend_backoff_ms_max: u64,
    /// Outgoing bandwidth of every node, bytes per second.
    pub bandwidth_bytes_per_s: u64,
    /// Duration of one fsync on the authority's and the store's disks.
    pub disk_sync_ms: u64,
    /// Split points of the initial ranges (`initial_ranges - 1` keys, increasing).
    pub initial_split_points: Vec<Vec<u8>>,
    /// Number of partition servers (`server-1..=servers`).
    pub servers: u32,
    /// How planned moves copy a range.
    pub strategy: crate::map::Strategy,
    /// Pre-copy stops once a round copied at most this many payload bytes.
    pub precopy_threshold_bytes: u64,
    /// Pre-copy stops after this many rounds (at least 1), whatever the tail.
    pub precopy_max_rounds: u32,
    /// The cutover rule's pause budget, ms (0: no budget). Pre-copy pauses the source only
    /// when the tail it predicts (the last round's bytes over the bandwidth) fits in it; it
    /// keeps copying while a round is over it, up to `precopy_max_rounds`, and otherwise
    /// aborts the move without pausing (see DESIGN.md, the cutover rule).
    pub cutover_budget_ms: u64,
    /// A move whose source this leader has seen paused for longer than this, ms, is rolled
    /// back (aborted, the range reopened at the source); 0: never. Counted from the first
    /// round of this leader's term that found it paused.
    pub cutover_timeout_ms: u64,
    /// Move ranges from the server with the most to the one with the fewest when they differ
    /// by two or more.
    pub balance: bool,
    /// Planned moves in flight at once (0: the manager starts none).
    pub max_concurrent_moves: u32,
    /// Split a range whose load report shows at least this many operations per second (0: never
    /// split).
    pub split_ops_per_s: f64,
    /// Merge two adjacent ranges when both show at most this many operations per second (0:
    /// never merge).
    pub merge_ops_per_s: f64,
    /// No merge of a range made by a split or merge less than this long ago.
    pub merge_hysteresis_ms: u64,
    /// No split once this many ranges are live.
    pub max_ranges: u32,
    /// No merge once only this many ranges are live.
    pub min_ranges: u32,
    /// A frontend routes on its cached map only while its last successful read of the map is
    /// at most this old (ms); beyond it, operations fail at once with `MapUnavailable`
    /// (0: no bound).
    pub map_staleness_ms: u64,
    /// A deliberately broken safety mechanism, for proving the checkers; `None` in normal runs.
    pub mutation: Option<Mutation>,
    /// A second mutation on at once, with `mutation` (`None` in normal runs): the model checker
    /// runs a defence-in-depth mutation with the layer that masks it also broken
    /// (`partmap-sim model --mutation A,B`). Read by [`Knobs::mutated`] and the cores'
    /// own checks; the simulator's runs leave it `None`.
    pub also_mutation: Option<Mutation>,
}

pub use crate::mutation::Mutation;

impl Knobs {
    /// Whether mutation `m` is on in this run.
    pub fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m) || self.also_mutation == Some(m)
    }

    /// The store's mutation: of the two on (`mutation`, `also_mutation`), the one that lives in
    /// the store's core (`store-ignores-fence`, `store-acks-before-sync`), which takes one.
    pub fn store_mutation(&self) -> Option<Mutation> {
        [self.mutation, self.also_mutation].into_iter().flatten().find(|m| m.lives_in_store())
    }

    /// The lease safety margin in force, ms (0 under [`Mutation::ZeroLeaseMargin`]).
    pub fn lease_margin(&self) -> u64 {
        if self.mutated(Mutation::ZeroLeaseMargin) {
            0
        } else {
            self.lease_margin_ms
        }
    }
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
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
            initial_split_points: Vec::new(),
            servers: 3,
            strategy: crate::map::Strategy::PreCopy,
            precopy_threshold_bytes: 4096,
            precopy_max_rounds: 4,
            cutover_budget_ms: 2000,
            cutover_timeout_ms: 120_000,
            balance: false,
            max_concurrent_moves: 1,
            split_ops_per_s: 0.0,
            merge_ops_per_s: 0.0,
            merge_hysteresis_ms: 10_000,
            max_ranges: 64,
            min_ranges: 1,
            map_staleness_ms: 5000,
            mutation: None,
            also_mutation: None,
        }
    }
}

fn addr(net: u8, host: u32) -> SocketAddr {
    assert!(host > 0 && host < 255, "host number {host} out of range");
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, net, host as u8)), 1)
}

/// `lock-1`, the coordination authority: 10.0.1.1:1.
pub fn lock_addr() -> SocketAddr {
    addr(1, 1)
}

/// `store-1`, the stream store: 10.0.2.1:1.
pub fn store_addr() -> SocketAddr {
    addr(2, 1)
}

/// `manager-N`: 10.0.3.N:1.
pub fn manager_addr(n: u32) -> SocketAddr {
    addr(3, n)
}

/// `server-N`: 10.0.4.N:1.
pub fn server_addr(id: ServerId) -> SocketAddr {
    addr(4, id.0)
}

/// `frontend-N`: 10.0.5.N:1.
pub fn frontend_addr(n: u32) -> SocketAddr {
    addr(5, n)
}

/// The harness's `operator` (sends drain and move requests to the authority): 10.0.7.1:1.
pub fn operator_addr() -> SocketAddr {
    addr(7, 1)
}

/// `client-N`: 10.0.6.(N+1):1 (`client-0` is the harness's probe client).
pub fn client_addr(n: u32) -> SocketAddr {
    addr(6, n + 1)
}
