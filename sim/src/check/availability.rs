//! Availability as measured figures, and the bounds a scenario's `expect` puts on them.
//!
//! Safety properties say nothing about how long the service stalls; these figures do, from the
//! history alone (no extra instrumentation of the nodes):
//!
//! | figure | what |
//! |---|---|
//! | `write_pause_ms` | the longest write pause at the servers of any planned move the map published ([`crate::measure::handoff`]) |
//! | `unavailable_ms` | client-visible unavailability of the whole service ([`unavailable_ms`]) |
//! | `range_unavailable_ms` | the longest time any single range took no append while clients tried |
//! | `recovery_after_fault_ms` | the longest time from a fault's end to a range that clients were waiting on serving again |
//! | `leader_terms_without_manager_fault` | leader terms started (after the first) with no fault near a manager or the authority |

use crate::events::{Event, Outcome, Sys, What};
use crate::fault::{Fault, Request};
use crate::scenario::Expect;
use partmap::event::ClientOp;
use partmap::ids::{OpId, RangeId};
use partmap::map::{PartitionMap, RangeRow, RangeState};
use std::collections::BTreeMap;

/// The availability figures of one run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Availability {
    /// Longest write pause at the servers of a published planned move, ms (0 without moves).
    pub write_pause_ms: f64,
    /// Client-visible unavailability of the whole service, ms.
    pub unavailable_ms: u64,
    /// The longest time one range took no client append while clients tried, ms: from the
    /// first append to it that was not yet answered by an acknowledgement on it, to the next
    /// acknowledgement on it (or the range's retirement by a split or merge, or the workload's
    /// end). An append counts on the range that held its key when it was invoked.
    pub range_unavailable_ms: u64,
    /// The range of `range_unavailable_ms` (None when no client appended).
    pub range_unavailable_range: Option<u64>,
    /// The longest time from the end of a fault (a restart, a heal, a resume) to the next
    /// acknowledgement on a range whose clients were waiting across that end, ms.
    pub recovery_after_fault_ms: u64,
    /// Leader terms started after the first with no fault touching a manager or `lock-1`
    /// active within two leases before (`2 * knobs.lease_ms`).
    pub leader_terms_without_manager_fault: u64,
    /// Leader terms started in all.
    pub leader_terms: u64,
}

/// Compute the figures from a run's history. `start_us..=end_us`: the workload's window (µs of
/// simulated time); `lease_ms`: the knob; `write_pause_ms`: from the handoffs.
pub fn measure(events: &[Event], start_us: u64, end_us: u64, lease_ms: u64, write_pause_ms: f64) -> Availability {
    let unavailable_ms = unavailable_ms(events, start_us, end_us);
    let (range_unavailable_ms, range_unavailable_range, recovery_after_fault_ms) = ranges(events, end_us);
    let (leader_terms, leader_terms_without_manager_fault) = leader_terms(events, lease_ms);
    Availability { write_pause_ms, unavailable_ms, range_unavailable_ms, range_unavailable_range, recovery_after_fault_ms, leader_terms_without_manager_fault, leader_terms }
}

/// One line per bound of `expect` that `measured` exceeds: `expect.<bound> = <limit>, measured <value>`.
pub fn exceeded(expect: &Expect, measured: &Availability) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, limit: Option<u64>, value: f64, detail: String| {
        if let Some(limit) = limit {
            if value > limit as f64 {
                out.push(format!("expect.{name} = {limit}, measured {value}{detail}"));
            }
        }
    };
    let m = measured;
    check("max_write_pause_ms", expect.max_write_pause_ms, m.write_pause_ms, String::new());
    check("max_unavailable_ms", expect.max_unavailable_ms, m.unavailable_ms as f64, String::new());
    let range = m.range_unavailable_range.map_or(String::new(), |r| format!(" (range r{r})"));
    check("max_range_unavailable_ms", expect.max_range_unavailable_ms, m.range_unavailable_ms as f64, range);
    check("max_recovery_after_fault_ms", expect.max_recovery_after_fault_ms, m.recovery_after_fault_ms as f64, String::new());
    let terms = format!(" (of {} terms)", m.leader_terms);
    check("max_leader_terms_without_manager_fault", expect.max_leader_terms_without_manager_fault, m.leader_terms_without_manager_fault as f64, terms);
    out
}

/// The longest stretch, ms, between consecutive acknowledgements of client appends (the probe
/// client excluded) within the workload's window `start_us..=end_us`, from the first
/// acknowledgement in it to `end_us`: how long the service as a whole took no write. With no
/// acknowledgement in the window, the whole window (`end_us - start_us`): the service never took
/// a write. Acknowledgements before `start_us` (a preload's, at 0) do not count, so the idle
/// time before a delayed workload starts is not an outage. An outage of a few ranges shows in the
/// handoff and recovery figures instead; this one shows an authority outage or a cut-off
/// frontend.
pub fn unavailable_ms(events: &[Event], start_us: u64, end_us: u64) -> u64 {
    let acks = events
        .iter()
        .filter(|e| matches!(&e.what, What::Complete { op: ClientOp::Append, id, outcome: Outcome::Ok, .. } if id.client > 0))
        .map(|e| e.t_us)
        .filter(|t| (start_us..=end_us).contains(t));
    let mut last: Option<u64> = None;
    let mut worst = 0;
    for t in acks {
        if let Some(l) = last {
            worst = worst.max(t - l);
        }
        last = Some(t);
    }
    match last {
        Some(l) => worst = worst.max(end_us.saturating_sub(l)),
        None => worst = end_us.saturating_sub(start_us),
    }
    worst / 1000
}

/// Per range: the waits of clients (first unanswered append to the next acknowledgement), and
/// the longest stretch of such a wait after a fault's end.
fn ranges(events: &[Event], end_us: u64) -> (u64, Option<u64>, u64) {
    let (waits, fault_ends) = waits_and_fault_ends(events, end_us);
    let longest = waits.iter().max_by_key(|(r, s, e)| (e - s, std::cmp::Reverse(*r)));
    let recovery = waits
        .iter()
        .filter_map(|(_, s, e)| fault_ends.iter().find(|t| **t > *s && **t < *e).map(|t| e - t))
        .max()
        .unwrap_or(0);
    (longest.map_or(0, |(_, s, e)| (e - s) / 1000), longest.map(|(r, ..)| r.0), recovery / 1000)
}

/// Every wait of clients on one range in `events` (workload end `end_us`): `(range, since,
/// until)` in µs, from the first append to the range not yet followed by an acknowledgement on
/// it to the next one (or the range's retirement, or `end_us`). The longest is
/// `range_unavailable_ms`; a report can take the longest in a span of the run.
pub fn range_waits(events: &[Event], end_us: u64) -> Vec<(RangeId, u64, u64)> {
    waits_and_fault_ends(events, end_us).0
}

/// [`range_waits`] and the times faults ended (restarts, heals, resumes) up to `end_us`.
fn waits_and_fault_ends(events: &[Event], end_us: u64) -> (Vec<(RangeId, u64, u64)>, Vec<u64>) {
    let mut map: Option<&PartitionMap> = None;
    let mut live = LiveRows::default();
    let mut retired_at: BTreeMap<RangeId, u64> = BTreeMap::new();
    let mut pending: BTreeMap<OpId, RangeId> = BTreeMap::new();
    // Per range: when the oldest unanswered append was invoked.
    let mut waiting_since: BTreeMap<RangeId, Option<u64>> = BTreeMap::new();
    let mut waits: Vec<(RangeId, u64, u64)> = Vec::new();
    let mut fault_ends: Vec<u64> = Vec::new();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::MapCommit { map: m, .. } | Sys::MapRestored { map: m, .. }) => {
                // The retired rows again only when this map has other ones than the last.
                if map.is_none_or(|prev| !prev.rows.same_lineage(&m.rows)) {
                    for row in m.rows.retired().values() {
                        retired_at.entry(row.id).or_insert(ev.t_us);
                    }
                }
                map = Some(m);
                live.index(m);
            }
            What::FaultEnd { .. } | What::Heal if ev.t_us <= end_us => fault_ends.push(ev.t_us),
            What::Invoke { op: ClientOp::Append, id, key, .. } if id.client > 0 && ev.t_us <= end_us => {
                let Some(row) = map.and_then(|m| live.lookup(m, key)) else { continue };
                pending.insert(*id, row.id);
                waiting_since.entry(row.id).or_default().get_or_insert(ev.t_us);
            }
            What::Complete { op: ClientOp::Append, id, outcome, .. } if id.client > 0 => {
                let Some(range) = pending.remove(id) else { continue };
                if *outcome != Outcome::Ok {
                    continue;
                }
                if let Some(since) = waiting_since.get_mut(&range).and_then(Option::take) {
                    waits.push((range, since, ev.t_us.min(end_us)));
                }
            }
            _ => {}
        }
    }
    for (range, since) in waiting_since {
        if let Some(since) = since {
            let until = retired_at.get(&range).copied().unwrap_or(end_us).min(end_us).max(since);
            waits.push((range, since, until));
        }
    }
    (waits, fault_ends)
}

/// The live rows of one map sorted by start, for [`PartitionMap::lookup`] by binary search
/// instead of a walk over every row (retired ones included) per append.
#[derive(Default)]
pub struct LiveRows<'m> {
    /// Live rows by start.
    rows: Vec<&'m RangeRow>,
    /// Whether no two live rows overlap (each one ends at or before the next one starts): then
    /// the one row that can hold a key is the last starting at or before it. Otherwise the
    /// lookup walks the map as [`PartitionMap::lookup`] does.
    pub disjoint: bool,
}

impl<'m> LiveRows<'m> {
    /// Index `map`'s live rows.
    pub fn index(&mut self, map: &'m PartitionMap) {
        self.rows.clear();
        self.rows.extend(map.rows.live().values().map(|r| &**r).filter(|r| r.state != RangeState::Retired));
        self.rows.sort_by(|a, b| a.start.cmp(&b.start));
        self.disjoint = self.rows.windows(2).all(|w| w[0].end.as_ref().is_some_and(|e| *e <= w[1].start));
    }

    /// [`PartitionMap::lookup`] of `key` in `map` (the map last indexed).
    pub fn lookup(&self, map: &'m PartitionMap, key: &[u8]) -> Option<&'m RangeRow> {
        if !self.disjoint {
            return map.lookup(key);
        }
        let below = self.rows.partition_point(|r| r.start.as_slice() <= key);
        below.checked_sub(1).map(|i| self.rows[i]).filter(|r| r.contains(key))
    }
}

/// The nodes a fault touches (its target, or both ends of a link, or one side of a cut).
pub(crate) fn touches(fault: &Fault) -> Vec<&str> {
    match fault {
        Fault::Crash(n) | Fault::Isolate(n) | Fault::Pause(n) | Fault::SlowDisk(n, _) => vec![n.as_str()],
        Fault::Split(side) => side.iter().map(String::as_str).collect(),
        Fault::OneWay(a, b) | Fault::Delay(a, b) | Fault::Duplicate(a, b) | Fault::Corrupt(a, b) | Fault::Reorder(a, b) | Fault::DelayNext(a, b, _) => vec![a.as_str(), b.as_str()],
        // A drain touches its server; a move's target is not broken by being asked to take a range.
        Fault::Request(Request::Drain(n)) => vec![n.as_str()],
        Fault::Request(_) => Vec::new(),
    }
}

/// `(terms, terms after the first with no manager or authority fault, nor a leader's release
/// of its lease, within 2 leases before)`.
fn leader_terms(events: &[Event], lease_ms: u64) -> (u64, u64) {
    let window_us = 2 * lease_ms * 1000;
    // Faults touching a manager or the authority, as [start, end] in µs.
    let mut manager_faults: Vec<(u64, u64)> = Vec::new();
    let mut terms = 0;
    let mut unprovoked = 0;
    for ev in events {
        match &ev.what {
            // A cut matters when a manager or lock-1 is on its named side (the rest of the
            // cluster is on the other).
            What::Fault { fault, duration_ms, .. } if touches(fault).iter().any(|n| n.starts_with("manager-") || *n == "lock-1") => {
                manager_faults.push((ev.t_us, ev.t_us + duration_ms * 1000));
            }
            // A leader that released its lease (an operator's leader transfer) provoked the
            // next term as a fault would.
            What::Sys(Sys::LeaderReleased { .. }) => manager_faults.push((ev.t_us, ev.t_us)),
            What::Sys(Sys::Leader { .. }) => {
                terms += 1;
                if terms == 1 {
                    continue;
                }
                let t = ev.t_us;
                let provoked = manager_faults.iter().any(|(s, e)| *s <= t && *e + window_us >= t);
                if !provoked {
                    unprovoked += 1;
                }
            }
            _ => {}
        }
    }
    (terms, unprovoked)
}
