//! Question 1, cache staleness: how old the frontends' cached maps are when they route, and how
//! long a committed map version takes to reach every frontend. Both come from the history: the
//! authority's `map_commit` / `map_restored` events (the version current at the authority and
//! when it became current), the frontends' `map_cached` events (the version each frontend
//! holds) and `routed` events (the version a frontend held when it sent an attempt).

use crate::events::{Event, Sys, What};
use std::collections::BTreeMap;

/// The map versions made current at the authority, in history order, with a running maximum so
/// that "when did a version above `v` first become current" is one binary search.
#[derive(Default, Debug)]
pub struct Commits {
    /// When each version became current, µs.
    t_us: Vec<u64>,
    /// The version.
    version: Vec<u64>,
    /// The largest version up to and including each entry.
    max: Vec<u64>,
}

impl Commits {
    /// Note that `version` became current at `t_us` (events come in time order).
    pub fn push(&mut self, t_us: u64, version: u64) {
        let max = self.max.last().copied().unwrap_or(0).max(version);
        self.t_us.push(t_us);
        self.version.push(version);
        self.max.push(max);
    }

    /// The version current now (the last one made current; 0 before any).
    pub fn current(&self) -> u64 {
        self.version.last().copied().unwrap_or(0)
    }

    /// When a version above `v` first became current, µs (`None`: none has yet).
    pub fn first_above(&self, v: u64) -> Option<u64> {
        let i = self.max.partition_point(|m| *m <= v);
        self.t_us.get(i).copied()
    }

    /// Every (time µs, version) in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.t_us.iter().copied().zip(self.version.iter().copied())
    }
}

/// When each frontend's cache first held a version at least `v`: per frontend the
/// `map_cached` events as (time µs, running maximum of the version).
#[derive(Default, Debug)]
pub struct Caches {
    by_frontend: BTreeMap<u32, (Vec<u64>, Vec<u64>)>,
}

impl Caches {
    /// Frontend `frontend` cached `version` at `t_us`.
    pub fn push(&mut self, frontend: u32, t_us: u64, version: u64) {
        let (t, max) = self.by_frontend.entry(frontend).or_default();
        let m = max.last().copied().unwrap_or(0).max(version);
        t.push(t_us);
        max.push(m);
    }

    /// The frontends that cached any map.
    pub fn frontends(&self) -> usize {
        self.by_frontend.len()
    }

    /// When every frontend first held a version at least `v`, µs; `None` when some never did.
    pub fn all_reached(&self, v: u64) -> Option<u64> {
        let mut latest = 0;
        for (t, max) in self.by_frontend.values() {
            let i = max.partition_point(|m| *m < v);
            latest = latest.max(*t.get(i)?);
        }
        Some(latest)
    }
}

/// The authority's versions and the frontends' caches of a whole history.
pub fn timelines(events: &[Event]) -> (Commits, Caches) {
    let (mut commits, mut caches) = (Commits::default(), Caches::default());
    for ev in events {
        match ev.sys() {
            Some(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) => commits.push(ev.t_us, map.version),
            Some(Sys::MapCached { frontend, version }) => caches.push(*frontend, ev.t_us, *version),
            _ => {}
        }
    }
    (commits, caches)
}

/// The staleness figures of one run.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct Staleness {
    /// Per routed attempt: versions the cached map was behind the authority's current one.
    pub behind_versions: Vec<f64>,
    /// Per routed attempt: ms since the first version newer than the cached one became current
    /// (0 when the cache was current).
    pub behind_ms: Vec<f64>,
    /// Per committed version that every frontend came to hold: ms from the commit until the
    /// last frontend held it (or a newer one).
    pub propagation_ms: Vec<f64>,
    /// Committed versions some frontend never held by the end of the run.
    pub never_reached: u64,
}

/// The staleness figures of `events` (a run's history).
pub fn measure(events: &[Event]) -> Staleness {
    let mut out = Staleness::default();
    let mut commits = Commits::default();
    let mut caches = Caches::default();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) => commits.push(ev.t_us, map.version),
            What::Sys(Sys::MapCached { frontend, version }) => caches.push(*frontend, ev.t_us, *version),
            What::Sys(Sys::Routed { version, .. }) => {
                out.behind_versions.push(commits.current().saturating_sub(*version) as f64);
                let since = commits.first_above(*version).map_or(0, |t| ev.t_us.saturating_sub(t));
                out.behind_ms.push(since as f64 / 1000.0);
            }
            _ => {}
        }
    }
    if caches.frontends() == 0 {
        return out;
    }
    for (t, v) in commits.iter() {
        match caches.all_reached(v) {
            Some(reached) => out.propagation_ms.push(reached.saturating_sub(t) as f64 / 1000.0),
            None => out.never_reached += 1,
        }
    }
    out
}
