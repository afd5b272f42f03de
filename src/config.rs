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
    /// Faults the harness currently puts on links (shared by all nodes of a run).
    pub link_faults: crate::seam::LinkFaults,
}

/// A named mutation: one safety mechanism switched off, so a checker must catch the result.
/// Selected only with `partmap-sim --mutation NAME` (or a test's `RunOptions`); scenario files
/// cannot set it, and it is never on by default. `partmap-sim mutants` runs each on the
/// scenario where it applies and requires a checker to catch it (FoundationDB's negative tests
/// with a deliberately broken resolver, TigerBeetle's fuzzer that must fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutation {
    /// The store appends whatever the fence says (a stale owner's delayed write lands).
    StoreIgnoresFence,
    /// The server ignores the epochs a request or command names: it admits at whatever epoch it
    /// holds, and a manager's pause or release names a range epoch, and a leader epoch, it no
    /// longer checks. Alone,
    /// the request side is covered by the fence (a record at a stale epoch is refused at the
    /// store); the command side is not: a pause delayed in the network from an aborted move
    /// pauses the range at its new epoch, and nothing ever resumes it.
    ServerSkipsEpochCheck,
    /// The server admits appends whatever epoch the request carries and whatever its lease says
    /// (the whole authority check off: epoch, lease, state).
    ServerSkipsAuthorityCheck,
    /// The server keeps serving after its lease has run out by its own clock, as long as it
    /// has a session (tarantool/cartridge#2342, HBASE-2231): only the lease check is off.
    ServerIgnoresLeaseExpiry,
    /// The authority check happens outside the guarded section: the server checks, awaits
    /// (10 ms, as a handler that reads or locks something first), then admits without checking
    /// again. MongoDB SERVER-26885 is this race.
    CheckThenAwaitThenAdmit,
    /// A pause does not wait for admitted effects: the source reports its digest at once, with
    /// appends still on their way to the store. No data is lost in this design: the target
    /// fences before it copies and checks the copy against the digest, so the move aborts
    /// instead (verify masks it). `single_writer` checks the rule itself from the trace (a
    /// `drained` event while an admitted append has neither landed nor been refused).
    PauseSkipsDrain,
    /// A move's source keeps admitting appends after it is paused (no cooperative pause; only
    /// the store's fence stops its writes once the target fenced).
    SourceIgnoresPause,
    /// A move's target serves its copy without checking it against the source's digest.
    TargetSkipsVerify,
    /// A new owner is published (answers the open, serves) before its fence is raised: it loads
    /// the stream with a plain read and sends the fence without waiting for it.
    PublishBeforeFence,
    /// A split or merge retires its parents in one map commit and publishes the children in a
    /// second: between the two the map has a hole.
    RetireParentsFirst,
    /// A frontend retries an append with a fresh idempotency id instead of the same one.
    FreshIdOnRetry,
    /// Servers trust their lease until send time + lease, with no safety margin; clock drift
    /// then lets a server serve after the authority expired it.
    ZeroLeaseMargin,
    /// The leader-epoch check at the map write is gone: the authority applies a compare-and-set
    /// whatever leader epoch it carries (only the map version is compared), and a deposed leader
    /// keeps acting on its old term (as KAFKA-6082's old controller did). Skipping only the
    /// authority's comparison would be covered here by the leader's own lease check, which
    /// stops a round before it writes on an expired lease; that check is "before the write",
    /// which a paused or slow leader can outlive, so the mutation removes both.
    AuthoritySkipsLeaderEpoch,
    /// A new leader ignores the transfer journal it inherited: it does not drive the moves,
    /// splits and merges begun under an earlier term, so one paused in the journal stays paused
    /// (an entry already journaled as aborted is still rolled back: that is a map op the
    /// planner derives from the rows, not a step of the journal's flow).
    NewLeaderIgnoresJournal,
    /// The store acknowledges an append before syncing it to its disk.
    StoreAcksBeforeSync,
    /// A merge commits from a stale view of a parent: the parent's length from the load report
    /// the round began with, not the length the seal returned.
    MergeFromStaleView,
    /// A split commits its parent's sealed length one record short: every child, and every
    /// range later made from them, inherits the parent's stream without its last record, while
    /// the stream at the store keeps it. The store-side view of `no_lost_append` (the only one
    /// before issue 12) passes; the served view (final strong reads of every appended key)
    /// fails on every run; client reads catch it only when some client reads that key again.
    SplitSealsOneShort,
    /// The authority writes a compare-and-set's result to its log before validating it and
    /// never takes a refused one back: refused map versions (a deposed leader's, or one built
    /// on an old version) are durable though never announced, and a restart may restore one.
    /// Only the replay of the authority's durable log (issue 12) judges them.
    AuthorityLogsRefusedCas,
}

impl Mutation {
    /// Every mutation with its CLI name.
    pub const ALL: [(Mutation, &'static str); 18] = [
        (Mutation::StoreIgnoresFence, "store-ignores-fence"),
        (Mutation::ServerSkipsEpochCheck, "server-skips-epoch-check"),
        (Mutation::ServerSkipsAuthorityCheck, "server-skips-authority-check"),
        (Mutation::ServerIgnoresLeaseExpiry, "server-ignores-lease-expiry"),
        (Mutation::CheckThenAwaitThenAdmit, "check-then-await-then-admit"),
        (Mutation::PauseSkipsDrain, "pause-skips-drain"),
        (Mutation::SourceIgnoresPause, "source-ignores-pause"),
        (Mutation::TargetSkipsVerify, "target-skips-verify"),
        (Mutation::PublishBeforeFence, "publish-before-fence"),
        (Mutation::RetireParentsFirst, "retire-parents-first"),
        (Mutation::FreshIdOnRetry, "fresh-id-on-retry"),
        (Mutation::ZeroLeaseMargin, "zero-lease-margin"),
        (Mutation::AuthoritySkipsLeaderEpoch, "authority-skips-leader-epoch"),
        (Mutation::NewLeaderIgnoresJournal, "new-leader-ignores-journal"),
        (Mutation::StoreAcksBeforeSync, "store-acks-before-sync"),
        (Mutation::MergeFromStaleView, "merge-from-stale-view"),
        (Mutation::SplitSealsOneShort, "split-seals-one-short"),
        (Mutation::AuthorityLogsRefusedCas, "authority-logs-refused-cas"),
    ];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(m, _)| *m == self).map(|(_, n)| *n).expect("listed")
    }

    /// Parse a CLI name. Errors: a message listing the accepted names.
    pub fn parse(name: &str) -> Result<Mutation, String> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(m, _)| *m).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
            format!("unknown mutation `{name}`; accepted: {}", names.join(", "))
        })
    }
}

impl Knobs {
    /// Whether mutation `m` is on in this run.
    pub fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m)
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
            balance: false,
            max_concurrent_moves: 1,
            split_ops_per_s: 0.0,
            merge_ops_per_s: 0.0,
            merge_hysteresis_ms: 10_000,
            max_ranges: 64,
            min_ranges: 1,
            map_staleness_ms: 5000,
            mutation: None,
            link_faults: Default::default(),
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
