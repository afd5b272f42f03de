//! Merging the summaries of several sweeps (the shards of one) into the summary one sweep of
//! all their seeds writes, and checking that a set of shards is whole.

use super::{Measured, Selection, Stopped, Summary};
use std::collections::{BTreeMap, BTreeSet};

/// How a set of sweep summaries covers the shards it was swept in ([`check_shards`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardCheck {
    /// Shards (`K/N`, with ` of <seeds>` when the summaries come from several selections) that
    /// no summary holds, in order.
    pub missing: Vec<String>,
    /// Shards given by more than one summary: `K/N` (`a.json` and `b.json`).
    pub duplicate: Vec<String>,
    /// Shards expected in all: the sum of `N` over the sharded selections.
    pub expected: u64,
}

impl ShardCheck {
    /// Whether every shard is there exactly once (or no summary is a shard).
    pub fn complete(&self) -> bool {
        self.missing.is_empty() && self.duplicate.is_empty()
    }

    /// The refusal of an incomplete set: `missing shards: 3/3 (2 of 3 shards given)` and/or
    /// `duplicate shards: 1/3 (a.json and b.json)`, `; `-separated. Empty when complete.
    pub fn problem(&self) -> String {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            let given = self.expected - self.missing.len() as u64;
            parts.push(format!("missing shards: {} ({given} of {} shards given)", self.missing.join(", "), self.expected));
        }
        if !self.duplicate.is_empty() {
            parts.push(format!("duplicate shards: {}", self.duplicate.join(", ")));
        }
        parts.join("; ")
    }
}

/// Check that the sharded summaries among `inputs` (`(path, summary)`) make up whole
/// selections: for each selection (`seeds`) swept in `N` shards, every shard `1/N` to `N/N`
/// given once. Summaries of unsharded sweeps are whole by themselves and not checked. A set in
/// which one selection was sharded two ways (`1/2` and `1/3` of `0..8`) lacks shards of both.
///
/// A missing shard is one whose upload failed or that never ran: merging without it would
/// report its seeds neither passed nor failed.
pub fn check_shards(inputs: &[(String, Summary)]) -> ShardCheck {
    let mut groups: BTreeMap<(&str, u64), BTreeMap<u64, Vec<&str>>> = BTreeMap::new();
    for (path, s) in inputs {
        let Some(shard) = s.selection.shard.as_deref().and_then(|k| crate::sweep::seeds::Shard::parse(k).ok()) else { continue };
        groups.entry((s.selection.seeds.as_str(), shard.count)).or_default().entry(shard.index).or_default().push(path);
    }
    let several = groups.keys().map(|(seeds, _)| *seeds).collect::<BTreeSet<_>>().len() > 1;
    let mut check = ShardCheck::default();
    for ((seeds, n), given) in &groups {
        let of = if several { format!(" of {seeds}") } else { String::new() };
        check.expected += n;
        check.missing.extend((1..=*n).filter(|k| !given.contains_key(k)).map(|k| format!("{k}/{n}{of}")));
        check.duplicate.extend(given.iter().filter(|(_, paths)| paths.len() > 1).map(|(k, paths)| format!("{k}/{n}{of} ({})", paths.join(" and "))));
    }
    check
}

/// Merge summaries (`(path, summary)`, paths for messages) into the summary one sweep of the
/// union of their seeds would write. When they are every shard of one selection (`1/N` to
/// `N/N`), the merged selection is that selection, unsharded.
///
/// Errors: no summary; summaries of different builds or scenarios ([`Build::mismatch`](super::Build::mismatch)); a seed
/// in two summaries.
pub fn merge(inputs: Vec<(String, Summary)>) -> Result<Summary, String> {
    let Some((first_path, first)) = inputs.first() else { return Err("merge: no summary given".into()) };
    for (path, s) in &inputs[1..] {
        if let Some(why) = first.build.mismatch(&s.build) {
            return Err(format!("cannot merge {path} with {first_path}: {why}"));
        }
    }
    let mut owner: BTreeMap<u64, &str> = BTreeMap::new();
    let mut records = Vec::new();
    for (path, s) in &inputs {
        for r in &s.records {
            if let Some(other) = owner.insert(r.seed, path) {
                return Err(format!("seed {} is in both {other} and {path}: each seed must come from one summary (the same shard, or overlapping ranges, given twice?)", r.seed));
            }
            records.push(r.clone());
        }
    }
    records.sort_by_key(|r| r.seed);
    let sels: Vec<&Selection> = inputs.iter().map(|(_, s)| &s.selection).collect();
    let planned = sels.iter().map(|s| s.planned).sum();
    let budgets: BTreeSet<Option<&str>> = sels.iter().map(|s| s.time_budget.as_deref()).collect();
    let time_budget = if budgets.len() == 1 {
        budgets.into_iter().next().flatten().map(str::to_string)
    } else {
        Some(budgets.into_iter().map(|b| b.unwrap_or("none")).collect::<Vec<_>>().join(", "))
    };
    let same_seeds = sels.iter().all(|s| s.seeds == first.selection.seeds);
    let shards: Vec<&str> = sels.iter().filter_map(|s| s.shard.as_deref()).collect();
    let complete = same_seeds && shards.len() == sels.len() && {
        let parsed: Option<Vec<crate::sweep::seeds::Shard>> = shards.iter().map(|s| crate::sweep::seeds::Shard::parse(s).ok()).collect();
        parsed.is_some_and(|p| {
            let n = p[0].count;
            let indexes: BTreeSet<u64> = p.iter().map(|s| s.index).collect();
            p.iter().all(|s| s.count == n) && p.len() as u64 == n && indexes.len() as u64 == n
        })
    };
    let selection = Selection {
        seeds: if same_seeds { first.selection.seeds.clone() } else { sels.iter().map(|s| s.seeds.as_str()).collect::<Vec<_>>().join(" + ") },
        shard: if complete || shards.is_empty() { None } else { Some(shards.join(", ")) },
        time_budget,
        planned,
    };
    let mut abandoned: Vec<u64> = inputs.iter().flat_map(|(_, s)| s.stopped.abandoned.iter().copied()).collect();
    abandoned.sort_unstable();
    let mut missing_shards: Vec<String> = inputs.iter().flat_map(|(_, s)| s.stopped.missing_shards.iter().cloned()).collect();
    missing_shards.extend(check_shards(&inputs).missing);
    let stopped = Stopped {
        interrupted: inputs.iter().find_map(|(_, s)| s.stopped.interrupted.clone()),
        time_budget_spent: inputs.iter().any(|(_, s)| s.stopped.time_budget_spent),
        abandoned,
        missing_shards,
    };
    let measured = Measured {
        jobs: inputs.iter().map(|(_, s)| s.measured.jobs).sum(),
        wall_s: inputs.iter().map(|(_, s)| s.measured.wall_s).fold(0.0, f64::max),
        seeds_per_s: inputs.iter().map(|(_, s)| s.measured.seeds_per_s).sum(),
        merged_from: inputs.iter().map(|(p, _)| p.clone()).collect(),
    };
    Ok(Summary::new(first.build.clone(), selection, stopped, measured, records))
}
