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
//!
//! The format's types are in `format`, their defaults in `defaults`, reading the text in
//! `parse` and the range and cross-field rules in `validate`; every item is re-exported here,
//! so callers name them `crate::scenario::X`.

mod defaults;
mod format;
mod parse;
mod validate;

pub use format::*;

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

impl Scenario {
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
            also_mutation: None,
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
