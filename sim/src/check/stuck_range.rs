//! `no_stuck_range` (eventually, judged from the history): a pause belongs to a flow. A range
//! that its owner holds paused refuses every append and strong read; in this design only a
//! move, split or merge of the leader pauses a range, and that flow (or its rollback) ends the
//! pause: a commit gives the range another owner or epoch (or retires it), an abort is rolled
//! back by reopening the range at a newer epoch. A pause that outlives every flow of its range
//! is a stuck range: the map says the owner serves it, the owner refuses everything, and nothing
//! in the control plane will ever look at it again (a stale or duplicated pause acting on a
//! newer epoch, a rollback that forgets to resume, a reopen that keeps the pause). Safety holds
//! throughout and the next move of the range may heal it before the run's liveness probe
//! looks, so only the history shows it.
//!
//! The clause: once server `S` paused range `r` at epoch `e` (a `paused` event) and while it
//! still holds it (no `dropped` of `r` by `S`, no crash of `S` since; an `activated` of `r` at
//! `e` does not end it: a pause that lands during an open survives the activation), the map current at the
//! authority must not, for longer than [`bound_ms`], name `S` the owner of live range `r` at
//! epoch `e` with no journal entry (a move, split or merge, in any phase) naming `r`. The time
//! counts only while no fault touches `S`, a manager or the authority (`lock-1`), and no leader
//! released its lease within a lease before ([`crate::check::availability`]'s `touches`); it
//! starts afresh when such a fault ends.
//!
//! On a correct system the clause can hold for a moment only after a failover of one parent of
//! a split or merge drops the journal entry while another parent is paused: the planner rolls
//! that parent back (a new epoch) on the leader's next round. [`bound_ms`] is sized for that.

use super::{secs, Violation};
use crate::events::{Event, Sys, What};
use crate::fault::Fault;
use partmap::map::{PartitionMap, RangeState};
use std::collections::BTreeMap;

/// The longest a pause may outlive every flow of its range, ms, from the knobs: the leader's
/// next round after the commit that left the pause without a flow starts within a tick (a
/// round that commits returns at once), and takes a lease renewal, a read of the state, a
/// collection of load reports and a compare-and-set, each bounded by the request timeout; a
/// leader change between (a lease that lapsed with no fault) adds up to a lease, and a refused
/// compare-and-set one more tick. At the defaults (lease 2000 ms, tick 200 ms, request timeout
/// 500 ms): 4400 ms.
pub fn bound_ms(lease_ms: u64, manager_tick_ms: u64, rpc_timeout_ms: u64) -> u64 {
    lease_ms + 2 * manager_tick_ms + 4 * rpc_timeout_ms
}

/// A pause a server holds, and since when the clause's condition holds for it.
struct Held {
    epoch: u64,
    paused_us: u64,
    /// Since when the map names this server the owner at `epoch` with no flow (None: it does not).
    flowless_since: Option<u64>,
}

/// One stretch in which a held pause had no flow: `(server, range, epoch, paused at, from, to)`, µs.
type Stretch = (u32, u64, u64, u64, u64, u64);

/// Whether `map` names `server` the owner of live `range` at `epoch` with no journal entry
/// naming `range`.
fn flowless(map: Option<&PartitionMap>, server: u32, range: u64, epoch: u64) -> bool {
    let Some(map) = map else { return false };
    let id = partmap::ids::RangeId(range);
    let Some(row) = map.rows.get(&id) else { return false };
    let owned = row.state != RangeState::Retired && row.owner.map(|o| o.0) == Some(server) && row.epoch.0 == epoch;
    let journaled = map.transfers.contains_key(&id) || map.reshapes.values().any(|r| r.parents.iter().any(|(p, _)| *p == id));
    owned && !journaled
}

/// The stretches of the history in which a held pause had no flow (see the module doc), in the
/// order they ended.
fn stretches(events: &[Event]) -> Vec<Stretch> {
    let mut map: Option<&PartitionMap> = None;
    let mut held: BTreeMap<(u32, u64), Held> = BTreeMap::new();
    let mut out = Vec::new();
    let close = |out: &mut Vec<Stretch>, (s, r): (u32, u64), h: &mut Held, t: u64| {
        if let Some(from) = h.flowless_since.take() {
            out.push((s, r, h.epoch, h.paused_us, from, t));
        }
    };
    for ev in events {
        let t = ev.t_us;
        match &ev.what {
            What::Sys(Sys::MapCommit { map: m, .. } | Sys::MapRestored { map: m, .. }) => {
                map = Some(m);
                for (&(s, r), h) in held.iter_mut() {
                    match (flowless(map, s, r, h.epoch), h.flowless_since) {
                        (true, None) => h.flowless_since = Some(t),
                        (false, Some(_)) => close(&mut out, (s, r), h, t),
                        _ => {}
                    }
                }
            }
            What::Sys(Sys::Paused { server, range, epoch }) => {
                let key = (server.0, range.0);
                if let Some(mut old) = held.remove(&key) {
                    close(&mut out, key, &mut old, t);
                }
                let since = flowless(map, server.0, range.0, epoch.0).then_some(t);
                held.insert(key, Held { epoch: epoch.0, paused_us: t, flowless_since: since });
            }
            // A pause ends only when the server lets the range go (a reopen, a commit, a
            // refused load or fence: each a `dropped`) or crashes. Not at an `activated`: a
            // pause that lands while the range is loading (between an open's fence and its
            // activation) stays on the row it activates (`ServerCore::pause` marks a loading
            // row paused, and only a reopen clears it), so the range activates paused.
            What::Sys(Sys::Dropped { server, range, .. }) => {
                if let Some(mut h) = held.remove(&(server.0, range.0)) {
                    close(&mut out, (server.0, range.0), &mut h, t);
                }
            }
            What::Fault { fault, .. } => {
                if let Fault::Crash(node) = &**fault {
                    let crashed: Vec<(u32, u64)> = held.keys().filter(|(s, _)| *node == format!("server-{s}")).copied().collect();
                    for key in crashed {
                        let mut h = held.remove(&key).expect("listed");
                        close(&mut out, key, &mut h, t);
                    }
                }
            }
            _ => {}
        }
    }
    let end = events.last().map_or(0, |e| e.t_us);
    for (key, mut h) in held {
        close(&mut out, key, &mut h, end);
    }
    out
}

/// The windows, µs, in which a fault touched `server-N`, a manager or `lock-1`, or a leader had
/// released its lease within `lease_us` before: `(start, end, node touched)`. A fault ends at its
/// `fault_end` or the heal (its planned end when neither follows).
fn excuses(events: &[Event], lease_us: u64) -> Vec<(u64, u64, Vec<String>)> {
    let mut out = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        match &ev.what {
            What::Fault { fault, duration_ms, .. } => {
                let nodes: Vec<String> = super::availability::touches(fault).into_iter().map(str::to_string).collect();
                if nodes.is_empty() {
                    continue;
                }
                // An instant request (a drain) has no end event.
                let planned = ev.t_us + duration_ms * 1000;
                let ended = if *duration_ms == 0 { planned } else { events[i + 1..].iter().find(|e| matches!(&e.what, What::FaultEnd { fault: f } if f == fault) || matches!(e.what, What::Heal)).map_or(planned, |e| e.t_us) };
                out.push((ev.t_us, ended, nodes));
            }
            What::Sys(Sys::LeaderReleased { manager, .. }) => out.push((ev.t_us, ev.t_us + lease_us, vec![format!("manager-{manager}")])),
            _ => {}
        }
    }
    out
}

/// The longest part of `[from, to)` that no window of `windows` (sorted by start) overlaps:
/// `(start, length)`, µs (`from`, `to` and the windows' `(start, end)` are µs too).
pub fn longest_clear(from: u64, to: u64, windows: &[(u64, u64)]) -> (u64, u64) {
    let mut best = (from, 0);
    let mut at = from;
    for &(s, e) in windows {
        if e <= at || s >= to {
            continue;
        }
        if s > at && s - at > best.1 {
            best = (at, s - at);
        }
        at = at.max(e);
        if at >= to {
            return best;
        }
    }
    if to > at && to - at > best.1 {
        best = (at, to - at);
    }
    best
}

/// The check over `events` with the bound `bound_ms` ([`bound_ms`]) and the run's lease
/// (`lease_ms`, how long a released leader lease excuses). Errors: the first pause (in the
/// order its flowless stretch ended) that outlived every flow of its range by more than the
/// bound with no fault to excuse it, with the server, range, epoch and times.
pub fn check(events: &[Event], bound_ms: u64, lease_ms: u64) -> Result<(), Violation> {
    let stretches = stretches(events);
    if stretches.is_empty() {
        return Ok(());
    }
    let excuses = excuses(events, lease_ms * 1000);
    for (s, r, e, paused_us, from, to) in stretches {
        let me = format!("server-{s}");
        let mut windows: Vec<(u64, u64)> = excuses.iter().filter(|(_, _, nodes)| nodes.iter().any(|n| *n == me || n.starts_with("manager-") || n == "lock-1")).map(|(a, b, _)| (*a, *b)).collect();
        windows.sort_unstable();
        let (start, len) = longest_clear(from, to, &windows);
        if len > bound_ms * 1000 {
            let until = if to == events.last().map_or(0, |ev| ev.t_us) { "the end of the history".to_string() } else { secs(to) };
            return Err(Violation::new(format!(
                "server-{s} paused r{r} at epoch {e} at {}; from {} the map named server-{s} its owner at epoch {e} with no move, split or merge of r{r} in the journal, and the range stayed paused until {until}: {} ms with no fault on server-{s}, a manager or lock-1 (bound {bound_ms} ms)",
                secs(paused_us), secs(from), len / 1000
            ))
            .at(paused_us)
            .at(start)
            .server(s)
            .range(r));
        }
    }
    Ok(())
}
