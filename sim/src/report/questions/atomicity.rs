//! Question 4, atomicity of a move's switch: a move is not one instant but three, the target
//! serving (`handoff`), the map commit publishing it (`map_commit` whose row has the target at
//! the move's epoch) and the last frontend caching that version (`map_cached`). In between,
//! clients' attempts still go to the source (refused `NotReady` while paused, `Moved` once
//! released) or find no owner. Measured per published handoff: the two gaps, and, in the window
//! from the source's pause to the last frontend caching the commit, the servers' refusals on
//! the range by kind and the client latency of the appends routed to it.

use super::staleness::Caches;
use crate::events::{Event, Outcome, Sys, What};
use partmap::event::{ClientOp, Retry};
use partmap::ids::{Epoch, RangeId, ServerId};
use std::collections::BTreeMap;

/// One published handoff's switch.
#[derive(Clone, Debug, PartialEq)]
pub struct Switch {
    /// The range.
    pub range: u64,
    /// The source paused it, µs.
    pub paused_us: u64,
    /// The target served, µs.
    pub served_us: u64,
    /// The map version publishing the target, and when it became current, µs.
    pub version: u64,
    /// When it became current.
    pub committed_us: u64,
    /// When the last frontend held it (or newer), µs; `None`: some never did.
    pub all_cached_us: Option<u64>,
    /// Servers' refusals of requests for the range in the window, by kind.
    pub refusals: BTreeMap<&'static str, u64>,
    /// Client latency of the appends routed to the range in the window (acknowledged), ms.
    pub latency_ms: Vec<f64>,
}

struct Open {
    range: RangeId,
    epoch: Epoch,
    to: ServerId,
    paused_us: u64,
    served_us: u64,
    committed: Option<(u64, u64)>,
}

/// The switches of `events`, and the latency of every acknowledged client append of the run
/// (ms), for comparison.
pub fn measure(events: &[Event], caches: &Caches) -> (Vec<Switch>, Vec<f64>) {
    let mut paused: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut from_epoch: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut open: Vec<Open> = Vec::new();
    for ev in events {
        match ev.sys() {
            Some(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) => {
                for t in map.transfers.values() {
                    from_epoch.insert((t.range.0, t.epoch.0), t.from_epoch.0);
                }
                for o in open.iter_mut().filter(|o| o.committed.is_none()) {
                    if map.rows.get(&o.range).is_some_and(|r| r.epoch == o.epoch && r.owner == Some(o.to)) {
                        o.committed = Some((map.version, ev.t_us));
                    }
                }
            }
            Some(Sys::Paused { range, epoch, .. }) => {
                paused.entry((range.0, epoch.0)).or_insert(ev.t_us);
            }
            Some(Sys::Handoff { server, range, epoch, .. }) if !open.iter().any(|o| o.range == *range && o.epoch == *epoch) => {
                let Some(p) = from_epoch.get(&(range.0, epoch.0)).and_then(|fe| paused.get(&(range.0, *fe))) else { continue };
                open.push(Open { range: *range, epoch: *epoch, to: *server, paused_us: *p, served_us: ev.t_us, committed: None });
            }
            _ => {}
        }
    }
    let mut switches: Vec<Switch> = open
        .into_iter()
        .filter_map(|o| {
            let (version, committed_us) = o.committed?;
            Some(Switch { range: o.range.0, paused_us: o.paused_us, served_us: o.served_us, version, committed_us, all_cached_us: caches.all_reached(version), refusals: BTreeMap::new(), latency_ms: Vec::new() })
        })
        .collect();
    let window = |s: &Switch, t: u64| t >= s.paused_us && t <= s.all_cached_us.unwrap_or(u64::MAX);
    let mut invoked: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    // (client, seq) -> the switches it was routed into.
    let mut routed_in: BTreeMap<(u32, u64), Vec<usize>> = BTreeMap::new();
    let mut all = Vec::new();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::Refused { range, reason, .. }) => {
                for s in switches.iter_mut().filter(|s| s.range == range.0 && window(s, ev.t_us)) {
                    *s.refusals.entry(Retry::Refused(reason.clone()).kind()).or_default() += 1;
                }
            }
            What::Sys(Sys::Redirected { range, .. }) => {
                for s in switches.iter_mut().filter(|s| s.range == range.0 && window(s, ev.t_us)) {
                    *s.refusals.entry("moved").or_default() += 1;
                }
            }
            What::Sys(Sys::Routed { op: ClientOp::Append, id: Some(id), range, .. }) => {
                for (i, _) in switches.iter().enumerate().filter(|(_, s)| s.range == range.0 && window(s, ev.t_us)) {
                    let v = routed_in.entry((id.client, id.seq)).or_default();
                    if !v.contains(&i) {
                        v.push(i);
                    }
                }
            }
            What::Invoke { op: ClientOp::Append, id, .. } if id.client > 0 => {
                invoked.insert((id.client, id.seq), ev.t_us);
            }
            What::Complete { op: ClientOp::Append, id, outcome: Outcome::Ok, .. } if id.client > 0 => {
                let Some(t0) = invoked.remove(&(id.client, id.seq)) else { continue };
                let ms = ev.t_us.saturating_sub(t0) as f64 / 1000.0;
                all.push(ms);
                for i in routed_in.remove(&(id.client, id.seq)).unwrap_or_default() {
                    switches[i].latency_ms.push(ms);
                }
            }
            _ => {}
        }
    }
    (switches, all)
}
