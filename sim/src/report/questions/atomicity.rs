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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::questions::staleness::{tests::{cached, routed}, timelines};
    use partmap::ids::{Key, OpId};
    use partmap::map::{MapOp, PartitionMap, Strategy};
    use partmap::msg::Refusal;

    fn at(ms: u64, e: Sys) -> Event {
        Event { t_us: ms * 1000, what: What::Sys(e) }
    }

    fn append(ms: u64, seq: u64, done: bool) -> Event {
        let (id, key): (OpId, Key) = (OpId { client: 1, seq }, b"k".to_vec());
        let what = if done { What::Complete { op: ClientOp::Append, id, key, outcome: Outcome::Ok, reason: String::new(), value_len: 0, value_hash: 0 } } else { What::Invoke { op: ClientOp::Append, id, key, bound_ms: None } };
        Event { t_us: ms * 1000, what }
    }

    /// r1 on server-1 at epoch 1 with its move to server-2 journaled, the map that publishes
    /// the move, and the move's epoch.
    fn maps() -> (PartitionMap, PartitionMap, Epoch) {
        let mut m = PartitionMap::default();
        m.apply_batch(&[MapOp::Bootstrap { split_points: vec![] }]).unwrap();
        m.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
        m.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
        m.apply_batch(&[MapOp::BeginMove { range: RangeId(1), to: (ServerId(2), 2), strategy: Strategy::PreCopy }]).unwrap();
        m.apply_batch(&[MapOp::PauseMove { range: RangeId(1) }]).unwrap();
        let journaled = m.clone();
        let epoch = m.transfers.values().next().expect("journaled").epoch;
        m.apply_batch(&[MapOp::CommitMove { range: RangeId(1) }]).unwrap();
        (journaled, m, epoch)
    }

    #[test]
    fn questions_atomicity_measures_serve_commit_and_the_last_frontend() {
        let (journaled, published, e2) = maps();
        let v = published.version;
        let h = vec![
            at(0, Sys::MapCommit { leader_epoch: 1, manager: 1, map: journaled.into() }),
            append(90, 1, false),
            routed(95, 1, v - 1, 1, 1, 0, Retry::First),
            at(100, Sys::Paused { server: ServerId(1), range: RangeId(1), epoch: Epoch(1) }),
            at(101, Sys::Refused { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), key: b"k".to_vec(), op: ClientOp::Append, reason: Refusal::NotReady }),
            at(120, Sys::Handoff { server: ServerId(2), range: RangeId(1), epoch: e2, strategy: Strategy::PreCopy, precopy_bytes: 0, tail_bytes: 0, bytes: 0 }),
            at(150, Sys::MapCommit { leader_epoch: 1, manager: 1, map: published.into() }),
            routed(160, 1, v - 1, 1, 1, 1, Retry::Refused(Refusal::NotReady)),
            at(161, Sys::Redirected { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), key: b"k".to_vec(), to: ServerId(2), new_epoch: e2 }),
            cached(170, 1, v),
            append(180, 1, true),
            cached(400, 2, v),
            at(500, Sys::Redirected { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), key: b"k".to_vec(), to: ServerId(2), new_epoch: e2 }),
        ];
        let (_, caches) = timelines(&h);
        let (s, all) = measure(&h, &caches);
        assert_eq!(s, vec![Switch {
            range: 1,
            paused_us: 100_000,
            served_us: 120_000,
            version: v,
            committed_us: 150_000,
            all_cached_us: Some(400_000),
            refusals: BTreeMap::from([("moved", 1), ("not_ready", 1)]),
            latency_ms: vec![90.0],
        }], "the redirect at 500 ms is after every frontend had the map");
        assert_eq!(all, [90.0]);
    }
}
