//! Coverage: which fault met which step of a flow, counted per run from the event stream, so a
//! sweep can say which combinations it exercised and which it never hit.
//!
//! The situations are read off the typed history after the run (no hooks in the system): the
//! maps the authority committed or restored say which failovers (`Preparing` rows), moves and
//! splits or merges (journal entries) are in flight, `activated` / `dropped` say which server
//! holds which range, and the nemesis's `fault` / `fault_end` events say what is broken (every
//! node a fault names counts, the sender of a directed fault included).

use crate::events::{Event, Outcome, Sys, What};
use crate::fault::Fault;
use partmap::ids::{RangeId, ServerId};
use partmap::map::{RangeState, ReshapeKind, TransferPhase};
use std::collections::{BTreeMap, BTreeSet};

/// Every situation, with what it means. Report order.
pub const SITUATIONS: [(&str, &str); 28] = [
    ("crash_owner", "a server crashed while holding ranges"),
    ("crash_owner_while_opening", "a server crashed while a range assigned to it was still preparing"),
    ("crash_store_during_failover", "the store crashed while a failover was in flight"),
    ("crash_lock_during_failover", "the authority crashed while a failover was in flight"),
    ("crash_manager_during_failover", "a manager crashed while a failover was in flight"),
    ("partition_owner", "a network fault cut a server holding ranges"),
    ("pause_owner_past_lease", "a paused owner's session expired while it was frozen"),
    ("stale_write_fenced", "the store's fence refused a write from an old owner"),
    ("delayed_write_after_fence", "a write held in the network reached the store after a newer owner fenced it"),
    ("duplicate_on_store_link", "messages from an owner to the store were duplicated"),
    ("slow_disk_during_failover", "a disk was slow while a failover was in flight"),
    ("reload_after_unknown_outcome", "a server reloaded a range after losing track of an append's outcome"),
    ("crash_source_during_move", "a move's source crashed while the move was in flight"),
    ("crash_target_during_move", "a move's target crashed while the move was in flight"),
    ("crash_manager_during_move", "a manager crashed while a move was in flight"),
    ("crash_lock_or_store_during_move", "the authority or the store crashed while a move was in flight"),
    ("fault_on_move_party", "a network fault or a pause hit a move's source or target while it was in flight"),
    ("move_aborted_while_paused", "a paused move was aborted and its range rolled back to the source"),
    ("move_finished_by_new_leader", "a move journaled under one leader term committed under a later one"),
    ("request_redirected_after_move", "a request reached a move's old owner after the cutover and was pointed at the new one"),
    ("torn_write_on_crash", "the authority or the store crashed with unsynced writes, part of them on disk and the last one torn"),
    ("reordered_messages_to_store", "messages from an owner to the store overtook each other"),
    ("crash_server_during_reshape", "a server crashed while a split or merge was in flight"),
    ("crash_manager_during_reshape", "a manager crashed while a split or merge was in flight"),
    ("reshape_aborted_while_paused", "a split or merge was aborted after pausing its parents, and rolled back"),
    ("reshape_finished_by_new_leader", "a split or merge journaled under one leader term committed under a later one"),
    ("stale_command_refused", "a server refused a manager's command from an older leader term"),
    ("map_unavailable", "a frontend failed an operation at once because it could not read the map for longer than map_staleness_ms"),
];

fn server_of(name: &str) -> Option<u32> {
    name.strip_prefix("server-").and_then(|n| n.parse().ok())
}

/// The flows a fault can meet, in report order.
pub const FLOWS: [&str; 4] = ["failover", "move", "split", "merge"];

impl Fault {
    /// Every node the fault names (a directed fault names its sender and receiver), in order.
    pub fn nodes(&self) -> Vec<&str> {
        match self {
            Fault::Crash(n) | Fault::Isolate(n) | Fault::Pause(n) | Fault::SlowDisk(n, _) => vec![n],
            Fault::Split(side) => side.iter().map(|s| s.as_str()).collect(),
            Fault::OneWay(a, b) | Fault::Delay(a, b) | Fault::Duplicate(a, b) | Fault::Corrupt(a, b) | Fault::Reorder(a, b) | Fault::DelayNext(a, b, _) => vec![a, b],
            Fault::Request(r) => r.nodes(),
        }
    }

    /// Whether the fault cuts or holds traffic of the nodes it names (`isolate`, `split`,
    /// `one_way`, `delay`, `delay_next`).
    pub fn is_partition(&self) -> bool {
        matches!(self, Fault::Isolate(_) | Fault::Split(_) | Fault::OneWay(..) | Fault::Delay(..) | Fault::DelayNext(..))
    }
}

/// Which fault kinds were injected while which flow was in flight: `(fault kind, flow)` pairs.
/// A failover is in flight while some row of the current map is `Preparing`; a move, split or
/// merge while its journal entry exists. The current map is the last one committed or restored.
pub fn fault_flows(events: &[Event]) -> BTreeSet<(String, &'static str)> {
    let mut out = BTreeSet::new();
    let (mut preparing, mut moving) = (false, false);
    let mut kinds: BTreeSet<&'static str> = BTreeSet::new();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) => {
                preparing = map.rows.live().values().any(|r| r.state == RangeState::Preparing);
                moving = !map.transfers.is_empty();
                kinds = map.reshapes.values().map(|r| if r.kind == ReshapeKind::Split { "split" } else { "merge" }).collect();
            }
            What::Fault { fault, .. } => {
                let kind = fault.kind().to_string();
                if preparing {
                    out.insert((kind.clone(), "failover"));
                }
                if moving {
                    out.insert((kind.clone(), "move"));
                }
                for k in &kinds {
                    out.insert((kind.clone(), *k));
                }
            }
            _ => {}
        }
    }
    out
}

/// One goal's figures in a run: how often, and first reached at (µs of simulated time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    /// How often.
    pub count: u64,
    /// First time, µs.
    pub first_us: u64,
}

/// Count each situation in one run's events.
pub fn situations(events: &[Event]) -> BTreeMap<&'static str, u64> {
    situations_timed(events).into_iter().map(|(k, r)| (k, r.count)).collect()
}

/// Each situation in one run's events, with how often and when first hit.
pub fn situations_timed(events: &[Event]) -> BTreeMap<&'static str, Reached> {
    let mut hit: BTreeMap<&'static str, Reached> = BTreeMap::new();
    let now = std::cell::Cell::new(0u64);
    let mut bump = |s: &'static str| {
        let r = hit.entry(s).or_insert(Reached { count: 0, first_us: now.get() });
        r.count += 1;
    };
    let mut preparing: BTreeMap<u64, u32> = BTreeMap::new(); // range -> owner
    let mut holds: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new(); // server -> ranges
    let mut activated: BTreeSet<(u32, u64, u64)> = BTreeSet::new();
    let mut active: BTreeSet<Fault> = BTreeSet::new();
    let mut paused: BTreeSet<u32> = BTreeSet::new();
    let mut released_to_store: BTreeMap<u32, u64> = BTreeMap::new(); // server -> release time
    // Moves in flight: range -> (from, to, epoch), from the current map's journal.
    let mut moving: BTreeMap<u64, (u32, u32, u64)> = BTreeMap::new();
    let mut aborted: BTreeSet<(u64, u64)> = BTreeSet::new();
    // (range, transfer epoch) -> leader term that journaled it.
    let mut begun_by: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    // Splits and merges in flight (by first parent) -> leader term that journaled them.
    let mut reshaping: BTreeMap<u64, u64> = BTreeMap::new();
    // server -> until when a targeted hold of one of its store appends may still land.
    let mut held_until: BTreeMap<u32, u64> = BTreeMap::new();
    let mut last_term = 0;
    for ev in events {
        now.set(ev.t_us);
        match &ev.what {
            What::Sys(Sys::Reshaped { committed: false, paused: true, .. }) => bump("reshape_aborted_while_paused"),
            What::Sys(Sys::MapCommit { map, leader_epoch, .. } | Sys::MapRestored { map, leader_epoch }) => {
                // A restored map keeps the term of the commit that wrote it.
                let term = if *leader_epoch > 0 { *leader_epoch } else { last_term };
                last_term = term;
                // Reshapes that left the journal with their children live committed now.
                for (first, t) in &reshaping {
                    let gone = !map.reshapes.contains_key(&RangeId(*first));
                    let committed = gone && map.rows.get(&RangeId(*first)).is_some_and(|r| r.state == RangeState::Retired);
                    if committed && *t != term {
                        bump("reshape_finished_by_new_leader");
                    }
                }
                reshaping.retain(|first, _| map.reshapes.contains_key(&RangeId(*first)));
                for first in map.reshapes.keys() {
                    reshaping.entry(first.0).or_insert(term);
                }
                for t in map.transfers.values() {
                    if matches!(t.phase, TransferPhase::Aborted(_)) && aborted.insert((t.range.0, t.epoch.0)) {
                        bump("move_aborted_while_paused");
                    }
                    begun_by.entry((t.range.0, t.epoch.0)).or_insert(term);
                }
                for (range, (_, to, epoch)) in &moving {
                    let committed = map.rows.get(&RangeId(*range)).is_some_and(|r| r.epoch.0 == *epoch && r.owner == Some(ServerId(*to)) && r.state == RangeState::Active);
                    if committed && begun_by.get(&(*range, *epoch)).is_some_and(|t| *t != term) {
                        bump("move_finished_by_new_leader");
                    }
                }
                preparing = map.rows.live().values().filter(|r| r.state == RangeState::Preparing).map(|r| (r.id.0, r.owner.map_or(0, |o| o.0))).collect();
                moving = map.transfers.values().map(|t| (t.range.0, (t.from.0 .0, t.to.0 .0, t.epoch.0))).collect();
            }
            What::Sys(Sys::Redirected { .. }) => bump("request_redirected_after_move"),
            What::Sys(Sys::Activated { server, range, epoch, .. }) => {
                if !activated.insert((server.0, range.0, epoch.0)) {
                    bump("reload_after_unknown_outcome");
                }
                holds.entry(server.0).or_default().insert(range.0);
            }
            What::Sys(Sys::Dropped { server, range, .. }) => {
                holds.entry(server.0).or_default().remove(&range.0);
            }
            What::Sys(Sys::LeaseExpired { server, .. }) if paused.contains(&server.0) && holds.get(&server.0).is_some_and(|h| !h.is_empty()) => {
                bump("pause_owner_past_lease");
            }
            What::Sys(Sys::Fenced { server, .. }) => {
                bump("stale_write_fenced");
                let s = server.0;
                let to_store = |f: &Fault| matches!(f, Fault::Delay(a, b) if server_of(a) == Some(s) && b == "store-1");
                let during = active.iter().any(to_store) || held_until.get(&s).is_some_and(|t| ev.t_us <= *t);
                let just_after = released_to_store.get(&s).is_some_and(|t| ev.t_us <= t + 100_000);
                if during || just_after {
                    bump("delayed_write_after_fence");
                }
            }
            What::Sys(Sys::StaleCommand { .. }) => bump("stale_command_refused"),
            What::Complete { outcome: Outcome::Unavailable, .. } => bump("map_unavailable"),
            What::Fault { fault, duration_ms, crash } => {
                let fault: &Fault = fault;
                if crash.is_some_and(|c| c.torn) {
                    bump("torn_write_on_crash");
                }
                if let Fault::DelayNext(from, to, "store_append") = fault {
                    if let Some(s) = server_of(from).filter(|_| to == "store-1") {
                        held_until.insert(s, ev.t_us + duration_ms * 1000 + 100_000);
                    }
                }
                if let Fault::Reorder(from, to) = fault {
                    if to == "store-1" && server_of(from).is_some() {
                        bump("reordered_messages_to_store");
                    }
                }
                let failover = !preparing.is_empty();
                let holders: Vec<u32> = holds.iter().filter(|(_, h)| !h.is_empty()).map(|(s, _)| *s).collect();
                let parties: BTreeSet<u32> = moving.values().flat_map(|(a, b, _)| [*a, *b]).collect();
                let named: Vec<u32> = fault.nodes().into_iter().filter_map(server_of).collect();
                let crashed = if let Fault::Crash(n) = fault { Some(n.as_str()) } else { None };
                if let Some(n) = crashed.filter(|_| !reshaping.is_empty()) {
                    if server_of(n).is_some() {
                        bump("crash_server_during_reshape");
                    } else if n.starts_with("manager-") {
                        bump("crash_manager_during_reshape");
                    }
                }
                if !moving.is_empty() {
                    match crashed {
                        Some(n) if server_of(n).is_some_and(|s| moving.values().any(|m| m.0 == s)) => bump("crash_source_during_move"),
                        Some(n) if server_of(n).is_some_and(|s| moving.values().any(|m| m.1 == s)) => bump("crash_target_during_move"),
                        Some(n) if n.starts_with("manager-") => bump("crash_manager_during_move"),
                        Some("lock-1" | "store-1") => bump("crash_lock_or_store_during_move"),
                        None if (fault.is_partition() || matches!(fault, Fault::Pause(_) | Fault::Duplicate(..))) && named.iter().any(|s| parties.contains(s)) => {
                            bump("fault_on_move_party")
                        }
                        _ => {}
                    }
                }
                match fault {
                    Fault::Crash(n) => {
                        if let Some(s) = server_of(n) {
                            if holders.contains(&s) {
                                bump("crash_owner");
                            }
                            if preparing.values().any(|o| *o == s) {
                                bump("crash_owner_while_opening");
                            }
                            holds.remove(&s);
                        } else if failover {
                            match n.as_str() {
                                "store-1" => bump("crash_store_during_failover"),
                                "lock-1" => bump("crash_lock_during_failover"),
                                _ => bump("crash_manager_during_failover"),
                            }
                        }
                    }
                    Fault::Pause(n) => {
                        if let Some(s) = server_of(n) {
                            paused.insert(s);
                        }
                    }
                    f if f.is_partition() && named.iter().any(|s| holders.contains(s)) => bump("partition_owner"),
                    Fault::Duplicate(from, to) if to == "store-1" && server_of(from).is_some_and(|s| holders.contains(&s)) => {
                        bump("duplicate_on_store_link");
                    }
                    Fault::SlowDisk(..) if failover => bump("slow_disk_during_failover"),
                    _ => {}
                }
                active.insert(fault.clone());
            }
            What::FaultEnd { fault } => {
                let fault: &Fault = fault;
                if let Fault::Pause(n) = fault {
                    if let Some(s) = server_of(n) {
                        paused.remove(&s);
                    }
                }
                if let Fault::Delay(from, to) = fault {
                    if let Some(s) = server_of(from).filter(|_| to == "store-1") {
                        released_to_store.insert(s, ev.t_us);
                    }
                }
                active.remove(fault);
            }
            _ => {}
        }
    }
    hit
}
