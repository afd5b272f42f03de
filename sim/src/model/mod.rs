//! Bounded model checking of the cores: a breadth-first search over every interleaving, within
//! bounds, of the real pure cores ([`partmap::authority::AuthorityCore`],
//! [`partmap::store::core::StoreCore`], [`partmap::server::ServerCore`], the leader's
//! [`partmap::handoff::MoveFlow`] and [`partmap::handoff::ReshapeFlow`], and
//! [`partmap::manager::plan`]) wired by a model network ([`world`]). Each state is judged by
//! the simulator's own checkers on the model's history: `single_writer`
//! ([`crate::check::single_writer::check`]) and `map_tiles`' announced view
//! ([`crate::check::map_tiles::check_announced`]). Breadth first, so the first
//! violation found has a shortest counterexample (in actions after the setup). Idea: TLC's
//! breadth-first state enumeration with state fingerprints, and stateright's checking of actor
//! code; here on the cores the simulator runs.
//!
//! | file | what |
//! |---|---|
//! | [`world`] | the model's state, its actions, how each action drives a core |
//! | `mod.rs` | the configurations, the search, the report and the counterexample |

pub mod live;
pub mod parts;
pub mod replay;
pub mod world;

use partmap::config::{Knobs, Mutation};
use std::collections::{HashSet, VecDeque};
pub use world::{Action, Bounds, Liveness, Reductions, World};

/// What a configuration's setup plays before the search starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// A planned move of range 1 from server-1 to server-2 with this copy strategy, journaled
    /// (`BeginMove`) before the search.
    Move(partmap::map::Strategy),
    /// An operator's split of range 1 at this key, journaled (`BeginSplit`) before the search:
    /// the left child stays at server-1, the right child goes to server-2, and the leader
    /// drives the real [`partmap::handoff::ReshapeFlow`].
    Split(&'static [u8]),
    /// The split at this key played out in the setup, then the leader's own merge of the two
    /// cold children (the knobs reshape by load: [`Knobs::merge_ops_per_s`] 1,000 ops/s, no
    /// hysteresis), journaled (`BeginMerge`) before the search: the right child, at server-2,
    /// merges with the left, at server-1, into one range at server-1, by the real
    /// [`partmap::handoff::ReshapeFlow`].
    Merge(&'static [u8]),
    /// The stop-and-copy move of [`Setup::Move`] journaled at leader term 1, then `manager-1`'s
    /// next round started with its lease renewed, its state request in flight while the
    /// servers renew their sessions (`World::setup_depose`): the search may let the leader's
    /// lease end mid-flow, and the standby `manager-2` take term 2 and the journal.
    Depose,
    /// The pre-copy move of [`Setup::Move`] journaled, the client's first append played in
    /// order (admitted by server-1 at the old epoch, acknowledged), then the leader's next
    /// round played in order until the store's first pre-copy chunk holding a record is in
    /// flight to the move target (`World::setup_precopy_chunk`): the search starts where the
    /// simulator's `corrupt` fault (store-1 to the target) can act, so that its
    /// counterexamples stay short.
    PreCopyChunk,
    /// Range 1 active at server-1 with both sessions live; the search may cut server-1 off
    /// (drops, a crash) and move time to the lease deadlines, so the leader fails the range
    /// over to server-2 while server-1 may still believe it owns it.
    Failover,
    /// Range 1 active at server-1 (the failover's setup), no leader round after it: the
    /// client's appends go to server-1, whose store may crash (`Bounds::max_store_crashes`),
    /// losing or tearing what it had not synced.
    StoreCrash,
    /// [`Setup::Failover`], then the forced prefix of a stale owner
    /// ([`World::setup_stale_owner`]): server-1 cut off from the authority with the client's
    /// append admitted and its write to the store delayed, the clock moved to the end of
    /// server-1's session at the authority, and the leader's round there reassigning range 1
    /// to server-2. The search starts with the new owner not yet opened.
    StaleOwner,
    /// The stop-and-copy move of [`Setup::Move`] journaled, then the forced prefix of an
    /// aborted move ([`World::setup_move_abort`]): the leader's first pause of range 1 delayed
    /// in the network past its call's timeout, the next round's pause answered and its finish
    /// to the target dropped, the move aborted (`AbortMove` journaled). The search starts with
    /// the move not yet rolled back and the first pause still in flight to the source.
    MoveAbort,
    /// [`Setup::Merge`]'s merge journaled (`BeginMerge`, not yet paused), then an operator's
    /// request to move the left parent (the range holding `k1`) to server-2, taken by the
    /// authority (`RequestMove`), then the forced prefix of the leader's next round
    /// ([`World::setup_merge_move`]): its lease, its state and its load reports played in
    /// order up to the last report's answer, in flight. The search starts where the planner
    /// is about to read a map with the merge journaled and the move requested: the request must
    /// wait (the left parent is in flight) and end moot when the merge retires it.
    MergeMove(&'static [u8]),
}

/// A configuration the model checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Its name (`--config`).
    pub name: &'static str,
    /// What it is, in a line.
    pub about: &'static str,
    /// What the setup plays.
    pub setup: Setup,
    /// Its default bounds.
    pub bounds: Bounds,
    /// The fewest unique states its default bounds reach unmutated (measured, rounded down):
    /// the CI test fails when a change silently shrinks the model below it.
    pub min_unique: u64,
    /// The mutations it runs besides [`CORE_MUTATIONS`]: those that live in cores only it
    /// drives (the split's flow and the map's reshape journal).
    pub also_runs: &'static [Mutation],
    /// Its final states (no action enabled) are also judged by `no_lost_append` on the map's
    /// view of the content ([`map_content`]).
    pub judge_content: bool,
    /// Its final states are also judged by `no_lost_append` on the served view
    /// ([`served_content`]: what each key's owner answers to a strong read), as the
    /// simulator's final reads are.
    pub judge_served: bool,
}

/// Every configuration built.
pub const CONFIGS: [Config; 11] = [
    Config {
        name: "move",
        about: "1 range, 2 servers, the authority, the store, one leader driving a planned stop-and-copy move of the range from server-1 to server-2 (MoveFlow), 1 client with 2 appends",
        setup: Setup::Move(partmap::map::Strategy::StopAndCopy),
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 1, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 100, rounds: 3, standby_rounds: 0, appends: 2, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 120_000,
        also_runs: &[],
        judge_content: false,
        judge_served: false,
    },
    Config {
        name: "move-precopy",
        about: "as `move`, with a pre-copy move (two leader rounds of pre-copy before the pause)",
        setup: Setup::Move(partmap::map::Strategy::PreCopy),
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 1, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 100, rounds: 3, standby_rounds: 0, appends: 2, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 110_000,
        also_runs: &[],
        judge_content: false,
        judge_served: false,
    },
    Config {
        name: "failover",
        about: "1 range active at server-1, 2 servers, the authority, the store, one leader rounding on its 200 ms tick; server-1 may be cut off from the authority and a server may crash, and time moves to the next deadline, so the leader fails the range over to server-2 while server-1 may still believe it owns it; 1 closed-loop client with 2 appends",
        setup: Setup::Failover,
        bounds: Bounds { max_depth: 120, max_states: 2_000_000, max_in_flight: 6, max_drops: 0, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 1, max_store_crashes: 0, torn_writes: false, max_cuts: 1, horizon_ms: 1_500, rounds: 8, standby_rounds: 0, appends: 2, urgent: true, ticked: true, closed_loop: true, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 680_000,
        also_runs: &[],
        judge_content: false,
        judge_served: false,
    },
    Config {
        name: "split",
        about: "1 range at server-1, 2 servers, the authority, the store, one leader driving an operator's split of the range at key k2 (ReshapeFlow): the left child [.., k2) stays at server-1, the right child [k2, ..) goes to server-2; 1 client with 2 appends, to k1 and k2 (one on each side)",
        setup: Setup::Split(b"k2"),
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 1, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 100, rounds: 3, standby_rounds: 0, appends: 2, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 210_000,
        also_runs: &SPLIT_MUTATIONS,
        judge_content: true,
        judge_served: false,
    },
    Config {
        name: "merge",
        about: "2 adjacent ranges, the left [.., k2) at server-1 and the right [k2, ..) at server-2 (made by a split in the setup), 2 servers, the authority, the store, one leader that collects load reports every round and merges the two cold neighbours onto server-1 (ReshapeFlow); 1 client with 2 appends, to k1 and k2 (one in each parent)",
        setup: Setup::Merge(b"k2"),
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 1, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 100, rounds: 2, standby_rounds: 0, appends: 2, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 395_000,
        also_runs: &MERGE_MUTATIONS,
        judge_content: true,
        judge_served: false,
    },
    Config {
        name: "depose",
        about: "the move configuration's stop-and-copy move of range 1 from server-1 to server-2, journaled at leader term 1, with a standby manager: manager-1's round is in flight when its lease (900 ms) may end; manager-2 then takes term 2, reads the journal and drives the same move (MoveFlow) while manager-1's late calls and commits are still in flight or still sent; no client append (the data path is move's)",
        setup: Setup::Depose,
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 0, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 450, rounds: 2, standby_rounds: 2, appends: 0, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 150_000,
        also_runs: &[],
        judge_content: false,
        judge_served: false,
    },
    Config {
        name: "store-crash",
        about: "1 range active at server-1, 2 servers, the authority, the store, no leader round; the store syncs as a step of its own and may crash once (memory and pending syncs lost, unsynced writes lost or, torn, a prefix of them kept), restarting from its durable records; 1 client with 2 appends to server-1",
        setup: Setup::StoreCrash,
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 0, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 1, torn_writes: true, max_cuts: 0, horizon_ms: 100, rounds: 0, standby_rounds: 0, appends: 2, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 1_100,
        also_runs: &[],
        judge_content: true,
        judge_served: false,
    },
    Config {
        name: "stale-owner",
        about: "the failover's cluster and knobs (lease 1 s, renewal 700 ms, margin 200 ms) with clocks drifting at the 5% bound's corner (the authority's fast, the servers' slow); the setup cuts server-1 off from the authority with the client's first append admitted there and its write to the store delayed, moves the clock to the end of server-1's session at the authority and plays the leader's round that reassigns range 1 to server-2; the search goes on from there (the new owner's open and fence, the delayed write, the stale owner's lease, one more delay: 2 per run), a 300 ms horizon, 2 untimed leader rounds, 1 open-loop client with 2 appends",
        setup: Setup::StaleOwner,
        bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 0, max_dups: 0, max_delays: 2, drift_ppm: 50_000, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 300, rounds: 2, standby_rounds: 0, appends: 2, urgent: true, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
        min_unique: 190_000,
        also_runs: &[],
        judge_content: false,
        judge_served: false,
    },
    MOVE_CORRUPT,
    MOVE_ABORT,
    MERGE_MOVE,
];

/// `move-corrupt`: the configuration where the network may corrupt a pre-copy chunk.
pub const MOVE_CORRUPT: Config = Config {
    name: "move-corrupt",
    about: "the move-precopy configuration's pre-copy move of range 1 from server-1 to server-2, after the client's one append (k1) was acknowledged by server-1; the search starts with the store's first pre-copy chunk (holding that record) in flight to server-2, and the network may flip one bit of a pre-copy chunk (the simulator's `corrupt` fault, store-1 to the move target); final states are judged on the map's and the served view",
    setup: Setup::PreCopyChunk,
    bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 0, max_dups: 0, max_delays: 0, drift_ppm: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_corrupts: 1, max_cuts: 0, horizon_ms: 100, rounds: 2, standby_rounds: 0, appends: 1, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
    min_unique: 1,
    also_runs: &[],
    judge_content: true,
    judge_served: true,
};

/// `move-abort`: the configuration where a move aborts with its first pause still in flight.
/// Its leases are long (10 s, renewed every 4.4 s: [`MOVE_ABORT_LEASE_MS`]) so that no
/// session renewal comes within its prefix or its search: the setup's clock moves 3.45 s (the
/// pause's timeout, 2.5 s, a tick, the finish's timeout, 750 ms) and the search's horizon is
/// 900 ms (the rollback's rounds on the leader's 200 ms tick, as the simulator's, and a call's
/// timeout of 500 ms).
pub const MOVE_ABORT: Config = Config {
    name: "move-abort",
    about: "the move configuration's stop-and-copy move of range 1 from server-1 to server-2; the setup delays the leader's first pause to server-1 past its call's timeout (2.5 s), then the next round pauses the source again and its finish to the target is dropped, so the move aborts; the search starts there: 3 leader rounds on its 200 ms tick roll the move back (the planner reassigns range 1 to server-1 at a newer epoch, then opens it) while the first pause is still in flight (it may arrive at any step), a 900 ms horizon, one drop, one more delay; no client append (each would lengthen every path to a final state, where liveness is judged, by its send and answer; the liveness probe asks the owner's core for an append)",
    setup: Setup::MoveAbort,
    bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 1, max_dups: 0, max_delays: 2, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 900, rounds: 3, standby_rounds: 0, appends: 0, urgent: true, ticked: true, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
    min_unique: 1_700,
    also_runs: &[],
    judge_content: false,
    judge_served: false,
};

/// `move-abort`'s lease (ms): the leader's and the servers' sessions'.
pub const MOVE_ABORT_LEASE_MS: u64 = 10_000;
/// `move-abort`'s session renewal interval (ms): under the simulator's bound for it with
/// the default `map_staleness_ms` (5 s, less the request timeout).
pub const MOVE_ABORT_RENEW_MS: u64 = 4_400;

/// `merge-move`: a move requested while a merge is journaled (the simulator's
/// `scenarios/move-during-merge.json` in the model's shape).
pub const MERGE_MOVE: Config = Config {
    name: "merge-move",
    about: "the merge configuration's cluster and knobs, its merge of the two cold neighbours journaled (not yet paused), then an operator's request to move the left parent (holding k1) to server-2; the search starts in the leader's next round with its load reports in (the planner must leave the request waiting while the parent is in flight; the merge then retires it and the request is moot); 2 leader rounds in all, no drop, 1 client with 2 appends, to k1 and k2",
    setup: Setup::MergeMove(b"k2"),
    bounds: Bounds { max_depth: 60, max_states: 2_000_000, max_in_flight: 6, max_drops: 0, max_dups: 0, max_delays: 0, drift_ppm: 0, max_corrupts: 0, max_crashes: 0, max_store_crashes: 0, torn_writes: false, max_cuts: 0, horizon_ms: 100, rounds: 2, standby_rounds: 0, appends: 2, urgent: false, ticked: false, closed_loop: false, reduce: Reductions::ALL, liveness: Liveness::Ends },
    min_unique: 125_000,
    also_runs: &MERGE_MUTATIONS,
    judge_content: true,
    judge_served: false,
};

/// The mutations that act on merges, run by `merge` and `merge-move`.
pub const MERGE_MUTATIONS: [Mutation; 3] = [Mutation::MergeFromStaleView, Mutation::RetireParentsFirst, Mutation::MapForgetsReshapes];

/// The mutations that act on splits, run by `split` only.
pub const SPLIT_MUTATIONS: [Mutation; 3] = [Mutation::RetireParentsFirst, Mutation::SplitSealsOneShort, Mutation::MapForgetsReshapes];

/// The mutations every configuration runs: those that live in the cores they drive.
pub const CORE_MUTATIONS: [Mutation; 17] = [
    Mutation::StoreIgnoresFence,
    Mutation::ServerSkipsEpochCheck,
    Mutation::ServerSkipsAuthorityCheck,
    Mutation::ServerIgnoresLeaseExpiry,
    Mutation::CheckThenAwaitThenAdmit,
    Mutation::PauseSkipsDrain,
    Mutation::SourceIgnoresPause,
    Mutation::TargetSkipsVerify,
    Mutation::PublishBeforeFence,
    Mutation::ZeroLeaseMargin,
    Mutation::StoreAcksBeforeSync,
    Mutation::AuthoritySkipsLeaderEpoch,
    Mutation::AuthoritySharesLeaderTerm,
    Mutation::AuthorityLogsRefusedCas,
    Mutation::ServerObeysDeposedLeader,
    Mutation::ServerAdmitsNewerEpoch,
    Mutation::ServerKeepsFencedRange,
];

/// The configuration named `name`. Errors: unknown, with the names built.
pub fn config(name: &str) -> Result<Config, String> {
    CONFIGS.iter().find(|c| c.name == name).copied().ok_or_else(|| {
        let names: Vec<&str> = CONFIGS.iter().map(|c| c.name).collect();
        format!("--config: unknown configuration `{name}`; built: {}", names.join(", "))
    })
}

/// Whether `config`'s move copies by pre-copy (its target reads pre-copy chunks, the
/// messages [`Action::Corrupt`] changes): `move-precopy` and `move-corrupt`.
pub fn precopies(config: &Config) -> bool {
    matches!(config.setup, Setup::Move(partmap::map::Strategy::PreCopy) | Setup::PreCopyChunk)
}

/// Whether `config` runs `m`. Errors: why not (a mutation outside the cores, or in cores this
/// configuration does not drive).
pub fn runs(config: &Config, m: Mutation) -> Result<(), String> {
    if CORE_MUTATIONS.contains(&m) || config.also_runs.contains(&m) {
        return Ok(());
    }
    let why = match m {
        Mutation::NewLeaderIgnoresJournal => "it lives in the manager's async driver (`lead_once`), not in a core",
        Mutation::FreshIdOnRetry => "it lives in the frontend core, which no configuration built drives yet",
        Mutation::MergeFromStaleView => "it acts on merges: configurations `merge` and `merge-move` run it",
        Mutation::SplitSealsOneShort => "it acts on splits: configuration `split` runs it",
        Mutation::RetireParentsFirst | Mutation::MapForgetsReshapes => "it acts on splits and merges: configurations `split`, `merge` and `merge-move` run it",
        _ => "the configuration does not drive the core it lives in",
    };
    Err(format!("--mutation {}: not run by configuration `{}`: {why}", m.name(), config.name))
}

/// A violation's shortest counterexample.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The property.
    pub property: &'static str,
    /// The checker's message.
    pub message: String,
    /// The steps after the setup: (node, input, outputs).
    pub steps: Vec<(String, String, Vec<String>)>,
    /// The actions of those steps, from the initial state.
    pub path: Vec<Action>,
    /// For `liveness`: what the heal did from the last state and where it stuck.
    pub stuck: Option<live::Stuck>,
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Report {
    /// Transitions taken (successor states computed).
    pub explored: u64,
    /// Unique states kept (within the bounds).
    pub unique: u64,
    /// The deepest state kept (actions after the setup).
    pub depth: u32,
    /// States not expanded because they had more messages in flight than the bound.
    pub over_in_flight: u64,
    /// States at the depth bound that had actions left.
    pub cut_by_depth: u64,
    /// The search stopped at `max_states`.
    pub stopped_at_states: bool,
    /// Every state within the bounds was expanded.
    pub exhausted: bool,
    /// CPU seconds of the search (this thread).
    pub cpu_s: f64,
    /// The first violation, if any.
    pub violation: Option<Counterexample>,
    /// Steps in the setup before the search.
    pub setup_steps: usize,
    /// Unique states expanded at each depth (index: actions after the setup).
    pub per_depth: Vec<u64>,
    /// The liveness check's figures ([`Bounds::liveness`]).
    pub live: live::LiveStats,
}

impl Report {
    /// Unique states kept per CPU second of the search (0 when it took no measurable time).
    pub fn states_per_s(&self) -> f64 {
        if self.cpu_s > 0.0 {
            self.unique as f64 / self.cpu_s
        } else {
            0.0
        }
    }
}

/// The knobs `config` runs its cores with: the defaults, 2 servers, its copy strategy; the
/// failover's lease is 1 s with a renewal every 700 ms (the default 200 ms margin), so a cut
/// owner's session expires after one lost renewal, within a short horizon.
pub fn knobs(config: &Config, mutation: Option<Mutation>) -> Knobs {
    knobs_with(config, mutation, None)
}

/// [`knobs`] with a second mutation on at once (`also`, [`Knobs::also_mutation`]).
pub fn knobs_with(config: &Config, mutation: Option<Mutation>, also: Option<Mutation>) -> Knobs {
    let base = Knobs { servers: 2, mutation, also_mutation: also, ..Knobs::default() };
    match config.setup {
        Setup::Move(strategy) => Knobs { strategy, ..base },
        Setup::PreCopyChunk => Knobs { strategy: partmap::map::Strategy::PreCopy, ..base },
        Setup::Split(_) => base,
        Setup::Merge(_) | Setup::MergeMove(_) => Knobs { merge_ops_per_s: 1_000.0, merge_hysteresis_ms: 0, ..base },
        Setup::Failover | Setup::StaleOwner => Knobs { strategy: partmap::map::Strategy::StopAndCopy, lease_ms: 1_000, renew_interval_ms: 700, ..base },
        Setup::MoveAbort => Knobs { strategy: partmap::map::Strategy::StopAndCopy, lease_ms: MOVE_ABORT_LEASE_MS, renew_interval_ms: MOVE_ABORT_RENEW_MS, ..base },
        Setup::StoreCrash => base,
        // The lease (900 ms) ends before the servers' second renewal (960 ms), and their first
        // one (480 ms) comes before the leader's call in flight times out (500 ms).
        Setup::Depose => Knobs { strategy: partmap::map::Strategy::StopAndCopy, lease_ms: DEPOSE_LEASE_MS, renew_interval_ms: DEPOSE_RENEW_MS, ..base },
    }
}

/// `depose`'s lease (ms): the leader's and the servers' sessions'.
pub const DEPOSE_LEASE_MS: u64 = 900;
/// `depose`'s session renewal interval (ms).
pub const DEPOSE_RENEW_MS: u64 = 480;

/// The initial state of `config` under `mutation`: the setup played out.
pub fn initial(config: &Config, mutation: Option<Mutation>, bounds: Bounds) -> Result<World, String> {
    initial_world(config, mutation, bounds, false)
}

/// [`initial`], with `track` (who emitted each event) for the replay.
pub fn initial_world(config: &Config, mutation: Option<Mutation>, bounds: Bounds, track: bool) -> Result<World, String> {
    initial_world_with(config, mutation, None, bounds, track)
}

fn initial_world_with(config: &Config, mutation: Option<Mutation>, also: Option<Mutation>, bounds: Bounds, track: bool) -> Result<World, String> {
    let mut w = base_world(config, mutation, also, bounds, track)?;
    match config.setup {
        Setup::StaleOwner => w.setup_stale_owner()?,
        Setup::MergeMove(_) => w.setup_merge_move()?,
        Setup::MoveAbort => w.setup_move_abort()?,
        _ => {}
    }
    Ok(w)
}

/// The setup of `config` up to its recorded prefix ([`World::prefix`]): for `stale-owner`
/// the failover's setup, for `move-abort` the move's, for `merge-move` the merge journaled and
/// the move requested, which the replay starts from; for the others the whole setup.
pub(crate) fn base_world(config: &Config, mutation: Option<Mutation>, also: Option<Mutation>, bounds: Bounds, track: bool) -> Result<World, String> {
    let knobs = knobs_with(config, mutation, also);
    let mut w = World::new(knobs, 2, bounds.appends, bounds);
    w.track = track;
    match config.setup {
        Setup::Move(_) | Setup::MoveAbort => {
            w.setup_move()?;
        }
        Setup::Failover | Setup::StoreCrash | Setup::StaleOwner => w.setup_failover()?,
        Setup::PreCopyChunk => {
            w.setup_precopy_chunk()?;
        }
        Setup::Depose => {
            w.setup_depose()?;
        }
        Setup::Split(at) => {
            w.setup_split(at)?;
        }
        Setup::Merge(at) => {
            w.setup_merge(at)?;
        }
        Setup::MergeMove(at) => {
            w.setup_merge_request_move(at)?;
        }
    }
    Ok(w)
}

/// Mutation `map-forgets-reshapes` lives in the map's code behind a thread-local switch
/// ([`partmap::map::forget_reshapes`]), as in the simulator: on while the cores run, off while
/// the checkers judge (they read the journal as it is), and off again when this is dropped.
pub(crate) struct ForgetReshapes(bool);

impl ForgetReshapes {
    /// Switch it on for `mutation` (either of the two) until dropped.
    pub(crate) fn new(knobs: &Knobs) -> ForgetReshapes {
        let on = knobs.mutated(Mutation::MapForgetsReshapes);
        partmap::map::forget_reshapes(on);
        ForgetReshapes(on)
    }

    /// Run `f` with it off (the checkers), then back as it was.
    fn off<T>(&self, f: impl FnOnce() -> T) -> T {
        partmap::map::forget_reshapes(false);
        let out = f();
        partmap::map::forget_reshapes(self.0);
        out
    }
}

impl Drop for ForgetReshapes {
    fn drop(&mut self) {
        partmap::map::forget_reshapes(false);
    }
}

/// Judge `w`'s history: `single_writer`, then `map_tiles` on the announced maps (the
/// `map_commit` events; only when an event from `from` on is one, since its verdict reads no
/// other kind). With more than one manager ([`World::judge_managers`]) also, in the
/// simulator's report order, `map_tiles`' durable view (the authority's log, `lock_log`, from
/// `logged` on grown) and `manager_exclusive`, durable and announced (when the step logged a
/// record or announced a term or a commit). Without, the model keeps no authority log, so the
/// durable views are not judged.
fn judge(w: &World, from: usize, logged: usize, forget: &ForgetReshapes) -> Option<(&'static str, String)> {
    use crate::events::{Sys, What};
    forget.off(|| {
        if let Err(v) = crate::check::single_writer::check(&w.history) {
            return Some(("single_writer", v.message));
        }
        let maps_changed = w.history[from..].iter().any(|e| matches!(e.what, What::Sys(Sys::MapCommit { .. } | Sys::MapRestored { .. })));
        let log_grew = w.lock_log.len() > logged;
        if w.judge_managers && (log_grew || maps_changed) {
            if let Err(v) = crate::check::map_tiles::check_durable(&w.lock_log, &w.history) {
                return Some(("map_tiles", v.message));
            }
        }
        if maps_changed {
            if let Err(v) = crate::check::map_tiles::check_announced(&w.history) {
                return Some(("map_tiles", v.message));
            }
        }
        if w.judge_managers {
            if log_grew {
                if let Err(v) = crate::check::manager_exclusive::check_durable(&w.lock_log) {
                    return Some(("manager_exclusive", v.message));
                }
            }
            let terms_changed = w.history[from..].iter().any(|e| matches!(e.what, What::Sys(Sys::MapCommit { .. } | Sys::Leader { .. } | Sys::LeaderRecovered { .. })));
            if terms_changed {
                if let Err(v) = crate::check::manager_exclusive::check(&w.history) {
                    return Some(("manager_exclusive", v.message));
                }
            }
        }
        None
    })
}

/// The content the map says each key has, in `w`'s final state: per key some client appended
/// to, the live row holding it in the authority's map, if that row is active: the records of
/// that key in each stream of the row's lineage up to its sealed length
/// ([`partmap::handoff::row_lineage`], what an owner loads when it opens the row), then in the
/// row's own stream past what the lineage gave, in the workload's content format
/// (`c<client>.<seq>;`), as [`crate::workload::parse_content`] reads it. Returns the content
/// and the keys judged (those of an active row). A key whose row is not active (a split that
/// stopped paused) is not judged, as the simulator's served view judges only the keys its
/// final reads answered.
pub fn map_content(w: &World) -> (crate::check::no_lost_append::Content, std::collections::BTreeSet<partmap::ids::Key>) {
    let map = w.authority.map();
    let streams = &w.store.streams.streams;
    let mut content = crate::check::no_lost_append::Content::new();
    let mut judged = std::collections::BTreeSet::new();
    let keys: std::collections::BTreeSet<&Vec<u8>> = w.client.iter().filter(|a| a.sent.is_some()).map(|a| &a.key).collect();
    for key in keys {
        let Some(row) = map.live_rows().into_iter().find(|r| r.contains(key)) else { continue };
        if row.state != partmap::map::RangeState::Active {
            continue;
        }
        let mut text = String::new();
        let mut add = |stream: partmap::ids::RangeId, upto: Option<u64>| {
            let Some(s) = streams.get(&stream) else { return };
            let n = upto.map_or(s.records.len(), |u| (u as usize).min(s.records.len()));
            for r in s.records[..n].iter().filter(|r| r.key == *key) {
                text.push_str(&format!("c{}.{};", r.id.client, r.id.seq));
            }
        };
        for src in partmap::handoff::row_lineage(map, row).iter().filter(|s| s.contains(key)) {
            add(src.stream, Some(src.upto));
        }
        add(row.id, None);
        content.insert(key.clone(), text.into_bytes());
        judged.insert(key.clone());
    }
    (content, judged)
}

/// The content each key's owner serves in `w`'s final state: per key some client appended
/// to, the live row holding it in the authority's map, if that row is active and has an owner
/// that is up: what a strong read of the key at the row's epoch returns from that owner's core
/// now ([`partmap::server::ServerCore::read`] on a copy of the core: the read's own events are
/// not kept). A refused read leaves the key unjudged, as the simulator's served view judges
/// only the keys its final reads answered. Returns the content and the keys judged.
pub fn served_content(w: &World) -> (crate::check::no_lost_append::Content, std::collections::BTreeSet<partmap::ids::Key>) {
    let map = w.authority.map();
    let mut content = crate::check::no_lost_append::Content::new();
    let mut judged = std::collections::BTreeSet::new();
    let keys: std::collections::BTreeSet<&Vec<u8>> = w.client.iter().filter(|a| a.sent.is_some()).map(|a| &a.key).collect();
    for key in keys {
        let Some(row) = map.live_rows().into_iter().find(|r| r.contains(key)) else { continue };
        let Some(owner) = row.owner.filter(|_| row.state == partmap::map::RangeState::Active) else { continue };
        let Some(slot) = w.servers.get(owner.0 as usize - 1).filter(|s| s.down_until.is_none()) else { continue };
        let mut core = slot.core.clone();
        if let Ok(bytes) = core.read(row.id, row.epoch, key, partmap::msg::ReadLevel::Strong, w.now_us) {
            content.insert(key.clone(), bytes.to_vec());
            judged.insert(key.clone());
        }
    }
    (content, judged)
}

/// `no_lost_append` on [`map_content`] of a final state (the view named `map`), then, with
/// [`Config::judge_served`], on [`served_content`] (the view named `served`).
fn judge_final(w: &World, served: bool, forget: &ForgetReshapes) -> Option<(&'static str, String)> {
    forget.off(|| {
        let (content, judged) = map_content(w);
        if let Err(v) = crate::check::no_lost_append::check(&w.history, &content, "map", Some(&judged)) {
            return Some(("no_lost_append", v.message));
        }
        if served {
            let (content, judged) = served_content(w);
            if let Err(v) = crate::check::no_lost_append::check(&w.history, &content, "served", Some(&judged)) {
                return Some(("no_lost_append", v.message));
            }
        }
        None
    })
}

/// The counterexample that ends at state `idx` of the search `tree` (each state's parent and
/// the action that led to it; state 0 the initial one), then `last` if given: the actions
/// from `init`, and the steps they take replayed from it.
fn counterexample(init: &World, tree: &[(u32, Action)], idx: u32, last: Option<Action>, property: &'static str, message: String) -> Counterexample {
    let mut path: Vec<Action> = last.into_iter().collect();
    let mut at = idx;
    while at != 0 {
        let (parent, action) = &tree[at as usize];
        path.push(action.clone());
        at = *parent;
    }
    path.reverse();
    let mut replay = init.clone();
    let steps = path.iter().map(|a| replay.apply(a)).collect();
    Counterexample { property, message, steps, path, stuck: None }
}

/// Search `config` under `mutation` within `bounds`, breadth first. Errors: the setup failed.
pub fn check(config: &Config, mutation: Option<Mutation>, bounds: Bounds) -> Result<Report, String> {
    check_with(config, mutation, None, bounds)
}

/// [`check`] with a second mutation `also` on at once (a defence-in-depth mutation with the
/// layer that masks it). Errors: the setup failed, or both mutations live in the store's core
/// (it takes one).
pub fn check_with(config: &Config, mutation: Option<Mutation>, also: Option<Mutation>, bounds: Bounds) -> Result<Report, String> {
    if mutation.is_some_and(Mutation::lives_in_store) && also.is_some_and(Mutation::lives_in_store) {
        return Err("--mutation: two mutations of the store's core at once are not supported (it takes one)".to_string());
    }
    let cpu0 = crate::cpu::thread_cpu_ns();
    let forget = ForgetReshapes::new(&knobs_with(config, mutation, also));
    let init = initial_world_with(config, mutation, also, bounds, false)?;
    let setup_steps = init.history.len();
    let mut report = Report { explored: 0, unique: 1, depth: 0, over_in_flight: 0, cut_by_depth: 0, stopped_at_states: false, exhausted: false, cpu_s: 0.0, violation: None, setup_steps, per_depth: Vec::new(), live: live::LiveStats::default() };
    if let Some((property, message)) = judge(&init, 0, 0, &forget) {
        report.violation = Some(Counterexample { property, message, steps: Vec::new(), path: Vec::new(), stuck: None });
        report.cpu_s = (crate::cpu::thread_cpu_ns() - cpu0) as f64 / 1e9;
        return Ok(report);
    }
    // Looked up only, never iterated: no order leaks.
    let mut seen: HashSet<u128> = HashSet::new();
    seen.insert(init.key());
    // Per unique state: its parent and the action from it.
    let mut tree: Vec<(u32, Action)> = vec![(u32::MAX, Action::Advance)];
    let mut queue: VecDeque<(World, u32, u32)> = VecDeque::new();
    queue.push_back((init.clone(), 0, 0));
    let mut per_depth: Vec<u64> = Vec::new();
    let mut live_judge = live::Judge::default();
    'search: while let Some((w, idx, depth)) = queue.pop_front() {
        if per_depth.len() <= depth as usize {
            per_depth.push(0);
        }
        per_depth[depth as usize] += 1;
        let mut actions = w.enabled();
        // Not while a delay may still be taken: delaying the answer would let time move, and
        // another message's delay would spend the one the answer could take.
        if bounds.urgent && bounds.reduce.por && w.delays >= bounds.max_delays {
            if let Some(i) = w.net.iter().position(|p| p.answer && !p.slow && matches!(p.to, world::Node::Manager(_) | world::Node::Client)) {
                // A persistent set (Godefroid's partial-order reduction): an answer to the
                // leader or the client, delivered or dropped, and nothing else. Sound in urgent
                // mode: see DESIGN.md, "The model checker", Reductions.
                actions.retain(|a| matches!(a, Action::Deliver(j) | Action::Drop(j) if *j == i));
            }
        }
        if actions.is_empty() && config.judge_content {
            if let Some((property, message)) = judge_final(&w, config.judge_served, &forget) {
                report.violation = Some(counterexample(&init, &tree, idx, None, property, message));
                break 'search;
            }
        }
        let stops = actions.is_empty() || depth >= bounds.max_depth;
        if bounds.liveness == Liveness::Every || (bounds.liveness == Liveness::Ends && stops) {
            if let Some((message, stuck)) = live_judge.judge(&w) {
                let mut cx = counterexample(&init, &tree, idx, None, "liveness", message);
                cx.stuck = Some(stuck);
                report.violation = Some(cx);
                break 'search;
            }
        }
        if depth >= bounds.max_depth {
            report.cut_by_depth += u64::from(!actions.is_empty());
            continue;
        }
        for a in actions {
            let mut n = w.clone();
            let (grew, logged) = (n.history.len(), n.lock_log.len());
            n.apply(&a);
            report.explored += 1;
            if n.history.len() > grew || n.lock_log.len() > logged {
                if let Some((property, message)) = judge(&n, grew, logged, &forget) {
                    report.violation = Some(counterexample(&init, &tree, idx, Some(a), property, message));
                    break 'search;
                }
            }
            if n.net.len() > bounds.max_in_flight {
                report.over_in_flight += 1;
                continue;
            }
            if !seen.insert(n.key()) {
                continue;
            }
            tree.push((idx, a));
            report.unique += 1;
            report.depth = report.depth.max(depth + 1);
            if report.unique >= bounds.max_states {
                report.stopped_at_states = true;
                break 'search;
            }
            queue.push_back((n, tree.len() as u32 - 1, depth + 1));
        }
    }
    report.per_depth = per_depth;
    report.live = live_judge.stats;
    report.exhausted = report.violation.is_none() && !report.stopped_at_states && report.cut_by_depth == 0 && report.live.undecided == 0;
    report.cpu_s = (crate::cpu::thread_cpu_ns() - cpu0) as f64 / 1e9;
    Ok(report)
}
