//! Handoff figures: for every planned move whose target the map published, how long writes to
//! the range were unavailable and how many bytes were copied before and during the pause. A
//! handoff the target reported but the map never published (superseded by a failover or a
//! rollback) is marked and counted apart.
//!
//! The write-unavailable interval is measured two ways (the design review of pause lengths,
//! one of the three jobs DESIGN.md names):
//! - as the servers see it: from the source's `paused` event to the target's `handoff` event
//!   (the target serves from then on);
//! - as clients see it: the longest gap between consecutive acknowledged appends to the range
//!   that overlaps the servers' pause, counted only when some client invoked an append to the
//!   range inside that gap (it kept trying). Acknowledgements of appends admitted before the
//!   pause arrive during the drain, so the gap is not simply "last ack before, first after".
//!
//! The clients' figure has a baseline from the same run: the longest gap between consecutive
//! acknowledged appends to the same keys with no handoff's pause (of any range) inside it, what
//! clients of the range saw away from the moves (failovers, cuts, the load's own gaps).

use crate::events::{Event, Outcome, Sys, What};
use partmap::event::ClientOp;
use partmap::ids::{Key, RangeId};
use partmap::map::PartitionMap;
use std::collections::BTreeMap;

/// One handoff a move's target reported.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Handoff {
    /// The range, `rN`.
    pub range: u64,
    /// Source and target servers (`server-N` numbers).
    pub from: u64,
    /// Target server.
    pub to: u64,
    /// Epoch at the source, and the new one at the target.
    pub from_epoch: u64,
    /// New epoch.
    pub epoch: u64,
    /// `pre-copy` or `stop-and-copy`.
    pub strategy: String,
    /// When the source paused, µs of simulated time.
    pub paused_at_us: u64,
    /// Pause start at the source until the target serves, ms.
    pub server_pause_ms: f64,
    /// The longest gap between acknowledged appends to the range around the pause, ms; `None`
    /// when no client tried to append to it during the pause.
    pub client_gap_ms: Option<f64>,
    /// The baseline of `client_gap_ms`: the longest gap between consecutive acknowledged
    /// appends to the same keys, ms, that no handoff's pause (from its source's pause until
    /// its target served, any range) overlaps. `None` with no such gap.
    #[serde(default)]
    pub client_baseline_ms: Option<f64>,
    /// Payload bytes the target copied before the pause.
    pub precopy_bytes: u64,
    /// Payload bytes copied during the pause (the tail).
    pub tail_bytes: u64,
    /// The range's payload bytes at the cutover.
    pub bytes: u64,
    /// Whether a map version (committed or restored by the authority) published the target as
    /// the range's owner at the move's epoch. A handoff whose commit never landed (the range
    /// failed over, or the move was rolled back) is superseded: it is counted on its own row
    /// and kept out of the pause figures (issue 12).
    pub committed: bool,
}

/// Every handoff a target reported in `events`, in the order the targets started serving, each
/// marked committed or superseded by what the map published.
pub fn handoffs(events: &[Event]) -> Vec<Handoff> {
    // Every map version committed or restored, in order. A handoff's range bounds and whether
    // a map published its target are looked up in them for the few handoffs there are, not
    // noted for every row of every version (issue 13).
    let mut maps: Vec<&PartitionMap> = Vec::new();
    // (range, new epoch) -> (from, from_epoch), from the journal.
    let mut journal: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    // (range, epoch) -> first pause time at the source.
    let mut paused: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    // Per key, the times of client appends acknowledged and invoked (in time order).
    let mut times = KeyTimes::default();
    // Each handoff with the number of map versions before it.
    let mut pending: Vec<(Handoff, usize)> = Vec::new();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) => {
                maps.push(map);
                for t in map.transfers.values() {
                    journal.insert((t.range.0, t.epoch.0), (t.from.0 .0 as u64, t.from_epoch.0));
                }
            }
            What::Sys(Sys::Paused { range, epoch, .. }) => {
                paused.entry((range.0, epoch.0)).or_insert(ev.t_us);
            }
            What::Invoke { op: ClientOp::Append, id, key, .. } if id.client > 0 => times.of(key).1.push(ev.t_us),
            What::Complete { op: ClientOp::Append, id, key, outcome: Outcome::Ok, .. } if id.client > 0 => times.of(key).0.push(ev.t_us),
            What::Sys(Sys::Handoff { server, range, epoch, strategy, precopy_bytes, tail_bytes, bytes }) => {
                let (range, epoch) = (range.0, epoch.0);
                // One handoff per move: a target that reports it again (it restarted and
                // finished the same move) is the same handoff.
                if pending.iter().any(|(h, _)| h.range == range && h.epoch == epoch) {
                    continue;
                }
                let Some(&(from, from_epoch)) = journal.get(&(range, epoch)) else { continue };
                let Some(&paused_at_us) = paused.get(&(range, from_epoch)) else { continue };
                let h = Handoff {
                    range,
                    from,
                    to: server.0 as u64,
                    from_epoch,
                    epoch,
                    strategy: strategy.name().to_string(),
                    paused_at_us,
                    server_pause_ms: ev.t_us.saturating_sub(paused_at_us) as f64 / 1000.0,
                    client_gap_ms: None,
                    client_baseline_ms: None,
                    precopy_bytes: *precopy_bytes,
                    tail_bytes: *tail_bytes,
                    bytes: *bytes,
                    committed: false,
                };
                pending.push((h, maps.len()));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let order = if pending.is_empty() { Vec::new() } else { times.sorted() };
    // Every handoff's pause at the servers, for the baselines: sorted, overlapping ones joined,
    // so starts and ends both grow and one binary search finds the pause nearest a gap.
    let mut spans: Vec<(u64, u64)> = pending.iter().map(|(h, _)| (h.paused_at_us, h.paused_at_us + (h.server_pause_ms * 1000.0) as u64)).collect();
    spans.sort_unstable();
    let mut pauses: Vec<(u64, u64)> = Vec::new();
    for (p0, p1) in spans {
        match pauses.last_mut() {
            Some(last) if p0 <= last.1 => last.1 = last.1.max(p1),
            _ => pauses.push((p0, p1)),
        }
    }
    for (mut h, seen) in pending {
        let range = RangeId(h.range);
        // Published: some map version (any, to the end) has the target as the range's owner at
        // the move's epoch; the versions after the handoff first, where its commit usually is.
        h.committed = maps[seen..].iter().chain(&maps[..seen]).any(|m| m.rows.get(&range).is_some_and(|r| r.epoch.0 == h.epoch && r.owner.is_some_and(|o| o.0 as u64 == h.to)));
        // The range's bounds in the last map version before the handoff that has it.
        let b: (Key, Option<Key>) = maps[..seen].iter().rev().find_map(|m| m.rows.get(&range)).map(|r| (r.start.clone(), r.end.clone())).unwrap_or_default();
        // The longest gap between consecutive acknowledged appends to the range that overlaps
        // the pause at the servers (acks of appends admitted before the pause land during the
        // drain, so the first ack after the pause began is not yet the end of the gap).
        let (from, to) = (h.paused_at_us, h.paused_at_us + (h.server_pause_ms * 1000.0) as u64);
        let keys_in = times.keys_in(&order, &b);
        let mut acked_in: Vec<u64> = keys_in.iter().flat_map(|k| times.acked[*k as usize].iter().copied()).collect();
        acked_in.sort_unstable();
        let mut best: Option<(u64, u64)> = None;
        let mut baseline: Option<u64> = None;
        for w in acked_in.windows(2) {
            let (a0, a1) = (w[0], w[1]);
            if a1 > from && a0 <= to && best.is_none_or(|(b0, b1)| a1 - a0 > b1 - b0) {
                best = Some((a0, a1));
            }
            // A pause overlaps [a0, a1] when it ends after a0 and starts before a1: the first
            // pause ending after a0 is the only candidate.
            let moved = pauses.get(pauses.partition_point(|(_, p1)| *p1 <= a0)).is_some_and(|(p0, _)| *p0 < a1);
            if !moved && baseline.is_none_or(|g| a1 - a0 > g) {
                baseline = Some(a1 - a0);
            }
        }
        h.client_baseline_ms = baseline.map(|g| g as f64 / 1000.0);
        if let Some((b0, a0)) = best {
            let tried = keys_in.iter().map(|k| &times.invoked[*k as usize]).any(|t| t.get(t.partition_point(|x| *x <= b0)).is_some_and(|x| *x < a0));
            if tried {
                h.client_gap_ms = Some((a0 - b0) as f64 / 1000.0);
            }
        }
        out.push(h);
    }
    out
}

/// Per key, the times of client appends acknowledged and invoked, each in time order: keys
/// numbered once by hash, then put in key order for the range queries of the handoffs (a
/// range's keys are a run of that order), instead of a B-tree of byte-string keys searched per
/// event and filtered whole per handoff (issue 13).
#[derive(Default)]
struct KeyTimes<'a> {
    number: rustc_hash::FxHashMap<&'a [u8], u32>,
    names: Vec<&'a [u8]>,
    acked: Vec<Vec<u64>>,
    invoked: Vec<Vec<u64>>,
}

impl<'a> KeyTimes<'a> {
    /// The (acknowledged, invoked) time lists of `key`.
    fn of(&mut self, key: &'a Key) -> (&mut Vec<u64>, &mut Vec<u64>) {
        let next = self.names.len() as u32;
        let n = *self.number.entry(key.as_slice()).or_insert(next) as usize;
        if n == self.names.len() {
            self.names.push(key);
            self.acked.push(Vec::new());
            self.invoked.push(Vec::new());
        }
        (&mut self.acked[n], &mut self.invoked[n])
    }

    /// Every key's number, in key order.
    fn sorted(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.names.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.names[*a as usize].cmp(self.names[*b as usize]));
        order
    }

    /// The numbers of the keys in `bounds` (`order` is [`KeyTimes::sorted`]).
    fn keys_in<'o>(&self, order: &'o [u32], bounds: &(Key, Option<Key>)) -> &'o [u32] {
        let below = |b: &[u8]| order.partition_point(|k| self.names[*k as usize] < b);
        let lo = below(&bounds.0);
        let hi = bounds.1.as_ref().map_or(order.len(), |e| below(e)).max(lo);
        debug_assert!(order[lo..hi].iter().all(|k| partmap::ids::in_range(self.names[*k as usize], &bounds.0, bounds.1.as_ref())));
        &order[lo..hi]
    }
}

/// `p` (0..=1) percentile of `values` by nearest rank; `None` when empty.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}
