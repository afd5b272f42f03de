//! Which seeds a sweep runs: a range `A..B` or the seeds of a file, optionally one shard `K/N`
//! of them, in a fixed order.
//!
//! Shards are strided: shard K of N takes the K-th, (K+N)-th, (K+2N)-th, ... seed of the
//! selection (K counts from 1, as in `cargo nextest --partition count:K/N` and Playwright's
//! `--shard K/N`). The N shards together run every seed exactly once, and under a time budget
//! each shard advances through the whole range at the same pace, so what N budgeted shards ran
//! together is close to a prefix of the range.

use std::collections::BTreeMap;
use std::path::Path;

/// Shard `index` of `count` (`index` in `1..=count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: u64,
    /// How many shards the selection is split into.
    pub count: u64,
}

impl Shard {
    /// Parse `K/N` (`1 <= K <= N`).
    ///
    /// Errors: text that is not two positive integers around a `/`, N = 0, K = 0 or K > N, each
    /// naming the problem.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (k, n) = s.split_once('/').ok_or_else(|| format!("`{s}` is not a shard; write K/N, e.g. 2/4 (shard 2 of 4)"))?;
        let index: u64 = k.trim().parse().map_err(|_| format!("`{k}` in `{s}` is not a shard number (1 to N)"))?;
        let count: u64 = n.trim().parse().map_err(|_| format!("`{n}` in `{s}` is not a shard count (a positive integer)"))?;
        if count == 0 {
            return Err(format!("`{s}`: the shard count must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(format!("`{s}`: shards count from 1, so K must be between 1 and {count}"));
        }
        Ok(Shard { index, count })
    }

    /// `K/N`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }

    /// Whether position `i` (from 0) of the whole selection belongs to this shard.
    fn has_position(&self, i: u64) -> bool {
        i % self.count == self.index - 1
    }

    /// How many of `total` positions belong to this shard.
    fn len_of(&self, total: u64) -> u64 {
        let skip = self.index - 1;
        if total <= skip {
            0
        } else {
            (total - skip).div_ceil(self.count)
        }
    }
}

/// Where the seeds come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Seeds `first..end` (end excluded), in order.
    Range {
        /// First seed.
        first: u64,
        /// One past the last seed.
        end: u64,
    },
    /// Seeds read from a file, in the file's order.
    File {
        /// The file as given on the command line.
        path: String,
        /// Its seeds.
        seeds: Vec<u64>,
    },
}

/// The seeds of a sweep, in the order they are started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedSelection {
    /// The whole selection.
    pub source: Source,
    /// Only this shard of it, if any.
    pub shard: Option<Shard>,
}

impl SeedSelection {
    /// Seeds `first..end`, unsharded.
    pub fn range(first: u64, end: u64) -> SeedSelection {
        SeedSelection { source: Source::Range { first, end }, shard: None }
    }

    fn source_len(&self) -> u64 {
        match &self.source {
            Source::Range { first, end } => end.saturating_sub(*first),
            Source::File { seeds, .. } => seeds.len() as u64,
        }
    }

    fn source_get(&self, i: u64) -> Option<u64> {
        match &self.source {
            Source::Range { first, end } => first.checked_add(i).filter(|s| s < end),
            Source::File { seeds, .. } => usize::try_from(i).ok().and_then(|i| seeds.get(i).copied()),
        }
    }

    /// How many seeds this selection (this shard of it) holds.
    pub fn len(&self) -> u64 {
        let total = self.source_len();
        self.shard.map_or(total, |s| s.len_of(total))
    }

    /// Whether it holds no seed (a shard of a selection smaller than the shard count).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th seed (from 0) of this selection, `None` past its end.
    pub fn get(&self, i: u64) -> Option<u64> {
        match self.shard {
            None => self.source_get(i),
            Some(s) => i.checked_mul(s.count).and_then(|p| p.checked_add(s.index - 1)).and_then(|p| self.source_get(p)),
        }
    }

    /// Whether `seed` is one of this selection's seeds.
    pub fn contains(&self, seed: u64) -> bool {
        match &self.source {
            Source::Range { first, end } => (*first..*end).contains(&seed) && self.shard.is_none_or(|s| s.has_position(seed - first)),
            Source::File { seeds, .. } => seeds.iter().enumerate().any(|(i, s)| *s == seed && self.shard.is_none_or(|sh| sh.has_position(i as u64))),
        }
    }

    /// The whole selection as the command line gave it: `A..B` or `file PATH`.
    pub fn describe_source(&self) -> String {
        match &self.source {
            Source::Range { first, end } => format!("{first}..{end}"),
            Source::File { path, .. } => format!("file {path}"),
        }
    }
}

/// Parse a seed range `A..B` (B excluded, so B > A).
///
/// Errors: no `..`, an end that is not a non-negative integer, or an empty range.
pub fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("`{s}` is not a seed range; write A..B, e.g. 0..2000"))?;
    let a: u64 = a.trim().parse().map_err(|_| format!("`{a}` is not a seed (a non-negative integer)"))?;
    let b: u64 = b.trim().parse().map_err(|_| format!("`{b}` is not a seed (a non-negative integer)"))?;
    if b <= a {
        return Err(format!("empty seed range {a}..{b}: the end is excluded, so it must be greater than the start"));
    }
    Ok((a, b))
}

/// Parse a seeds file: one seed (a non-negative integer) per line; blank lines and text after
/// `#` are ignored. `origin` names the file in errors.
///
/// Errors: `<origin>:<line>: ...` for a line that is not a seed or repeats an earlier seed, and
/// `<origin>: no seeds ...` for a file without any.
pub fn parse_seeds_file(text: &str, origin: &str) -> Result<Vec<u64>, String> {
    let mut seeds = Vec::new();
    let mut first_line: BTreeMap<u64, usize> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let body = line.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let seed: u64 = body.parse().map_err(|_| format!("{origin}:{n}: `{body}` is not a seed (a non-negative integer, one per line)"))?;
        if let Some(earlier) = first_line.insert(seed, n) {
            return Err(format!("{origin}:{n}: seed {seed} is already on line {earlier}; list each seed once"));
        }
        seeds.push(seed);
    }
    if seeds.is_empty() {
        return Err(format!("{origin}: no seeds (write one seed per line; `#` starts a comment)"));
    }
    Ok(seeds)
}

/// Read a seeds file (see [`parse_seeds_file`]).
///
/// Errors: the file cannot be read (`<path>: cannot read: ...`), or those of
/// [`parse_seeds_file`].
pub fn read_seeds_file(path: &Path) -> Result<Vec<u64>, String> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
    parse_seeds_file(&text, &origin)
}
