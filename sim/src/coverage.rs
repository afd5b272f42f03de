//! Coverage: which fault met which step of a flow, counted per run from the event stream, so a
//! sweep can say which combinations it exercised and which it never hit.
//!
//! The situations are read off the events after the run (no hooks in the system): the map's
//! `Preparing` rows say a failover is in flight, `activated` / `dropped` say which server holds
//! which range, and the nemesis's `fault` / `fault_end` events say what is broken.

use crate::events::Event;
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

fn server_of(name: &str) -> Option<u64> {
    name.strip_prefix("server-").and_then(|n| n.parse().ok())
}

/// The flows a fault can meet, in report order.
pub const FLOWS: [&str; 4] = ["failover", "move", "split", "merge"];

/// The fault kind of a nemesis `fault` event's text, as the sweep's fault table names it
/// (`crash_server`, `isolate`, `delay`, ...).
pub fn fault_kind(text: &str) -> String {
    let (verb, rest) = text.split_once(' ').unwrap_or((text, ""));
    if verb == "crash" {
        let target = rest.split_whitespace().next().unwrap_or("");
        let role = target.split('-').next().unwrap_or(target);
        return format!("crash_{}", if role == "lock" { "lock" } else { role });
    }
    if verb == "move" {
        return "move_request".to_string();
    }
    verb.to_string()
}

/// Which fault kinds were injected while which flow was in flight: `(fault kind, flow)` pairs.
/// A failover is in flight while some row is `Preparing`; a move, split or merge while its
/// journal entry exists.
pub fn fault_flows(events: &[Event]) -> BTreeSet<(String, &'static str)> {
    let mut out = BTreeSet::new();
    let mut preparing = false;
    let mut rows_preparing = false;
    let mut moving = false;
    let mut journal_moving = false;
    let mut kinds: BTreeSet<&str> = BTreeSet::new();
    let mut journal_kinds: BTreeSet<&str> = BTreeSet::new();
    for ev in events {
        match ev.kind.as_str() {
            "map_row" => rows_preparing |= ev.s("state") == "preparing",
            "map_transfer" => journal_moving = true,
            "map_child" => {
                journal_kinds.insert(if ev.s("reshape") == "split" { "split" } else { "merge" });
            }
            "map_commit" => {
                preparing = std::mem::take(&mut rows_preparing);
                moving = std::mem::take(&mut journal_moving);
                kinds = std::mem::take(&mut journal_kinds);
            }
            "fault" => {
                let kind = fault_kind(ev.s("fault"));
                if preparing {
                    out.insert((kind.clone(), "failover"));
                }
                if moving {
                    out.insert((kind.clone(), "move"));
                }
                for k in &kinds {
                    out.insert((kind.clone(), if *k == "split" { "split" } else { "merge" }));
                }
            }
            _ => {}
        }
    }
    out
}

/// Count each situation in one run's events.
pub fn situations(events: &[Event]) -> BTreeMap<&'static str, u64> {
    let mut hit: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut bump = |s: &'static str| *hit.entry(s).or_default() += 1;
    let mut rows: BTreeMap<u64, (String, u64)> = BTreeMap::new(); // range -> (state, owner)
    let mut preparing: BTreeMap<u64, u64> = BTreeMap::new(); // range -> owner
    let mut holds: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new(); // server -> ranges
    let mut activated: BTreeSet<(u64, u64, u64)> = BTreeSet::new();
    let mut active: BTreeSet<String> = BTreeSet::new();
    let mut paused: BTreeSet<u64> = BTreeSet::new();
    let mut released_to_store: BTreeMap<u64, u64> = BTreeMap::new(); // server -> release time
    // Moves in flight: range -> (from, to, epoch); the journal rows of the commit being read.
    let mut moving: BTreeMap<u64, (u64, u64, u64)> = BTreeMap::new();
    let mut journal: BTreeMap<u64, (u64, u64, u64)> = BTreeMap::new();
    let mut aborted: BTreeSet<(u64, u64)> = BTreeSet::new();
    // (range, transfer epoch) -> leader term that journaled it.
    let mut begun_by: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut new_rows: BTreeMap<u64, (u64, String)> = BTreeMap::new(); // range -> (epoch, state)
    // Splits and merges in flight (by first parent) -> leader term that journaled them.
    let mut reshaping: BTreeMap<u64, u64> = BTreeMap::new();
    let mut reshape_rows: BTreeSet<u64> = BTreeSet::new();
    let mut committed_now: Vec<u64> = Vec::new();
    // server -> until when a targeted hold of one of its store appends may still land.
    let mut held_until: BTreeMap<u64, u64> = BTreeMap::new();
    for ev in events {
        match ev.kind.as_str() {
            "map_child" => {
                reshape_rows.insert(ev.u("first"));
            }
            "reshaped" => {
                let first: u64 = ev.s("parents").split(',').next().and_then(|p| p.strip_prefix('r')).and_then(|p| p.parse().ok()).unwrap_or(0);
                if ev.s("outcome") == "aborted" && ev.get("paused") == Some(&crate::events::Val::B(true)) {
                    bump("reshape_aborted_while_paused");
                }
                if ev.s("outcome") == "committed" {
                    committed_now.push(first); // judged at this commit's map_commit
                }
            }
            "map_transfer" => {
                let (range, epoch) = (ev.u("range"), ev.u("epoch"));
                journal.insert(range, (ev.u("from"), ev.u("to"), epoch));
                if ev.s("phase") == "aborted" && aborted.insert((range, epoch)) {
                    bump("move_aborted_while_paused");
                }
            }
            "map_row" => {
                rows.insert(ev.u("range"), (ev.s("state").to_string(), ev.u("owner")));
                new_rows.insert(ev.u("range"), (ev.u("epoch"), ev.s("state").to_string()));
            }
            "map_commit" => {
                let term = ev.u("leader_epoch");
                for first in std::mem::take(&mut committed_now) {
                    if reshaping.get(&first).is_some_and(|t| *t != term) {
                        bump("reshape_finished_by_new_leader");
                    }
                }
                let journaled = std::mem::take(&mut reshape_rows);
                reshaping.retain(|first, _| journaled.contains(first));
                for first in journaled {
                    reshaping.entry(first).or_insert(term);
                }
                preparing = rows.iter().filter(|(_, (s, _))| s == "preparing").map(|(r, (_, o))| (*r, *o)).collect();
                rows.clear();
                let term = ev.u("leader_epoch");
                for (range, (_, _, epoch)) in &journal {
                    begun_by.entry((*range, *epoch)).or_insert(term);
                }
                for (range, (_, _, epoch)) in &moving {
                    let committed = new_rows.get(range).is_some_and(|(e, s)| e == epoch && s == "active");
                    if committed && begun_by.get(&(*range, *epoch)).is_some_and(|t| *t != term) {
                        bump("move_finished_by_new_leader");
                    }
                }
                moving = std::mem::take(&mut journal);
                new_rows.clear();
            }
            "redirected" => bump("request_redirected_after_move"),
            "activated" => {
                let key = (ev.u("server"), ev.u("range"), ev.u("epoch"));
                if !activated.insert(key) {
                    bump("reload_after_unknown_outcome");
                }
                holds.entry(key.0).or_default().insert(key.1);
            }
            "dropped" => {
                holds.entry(ev.u("server")).or_default().remove(&ev.u("range"));
            }
            "lease_expired" => {
                let s = ev.u("server");
                if paused.contains(&s) && holds.get(&s).is_some_and(|h| !h.is_empty()) {
                    bump("pause_owner_past_lease");
                }
            }
            "fenced" => {
                bump("stale_write_fenced");
                let s = ev.u("server");
                let during = active.contains(&format!("delay server-{s}->store-1")) || held_until.get(&s).is_some_and(|t| ev.t_us <= *t);
                let just_after = released_to_store.get(&s).is_some_and(|t| ev.t_us <= t + 100_000);
                if during || just_after {
                    bump("delayed_write_after_fence");
                }
            }
            "stale_command" => bump("stale_command_refused"),
            "complete" if ev.s("outcome") == "unavailable" => bump("map_unavailable"),
            "fault" => {
                let f = ev.s("fault").to_string();
                if ev.u("torn") > 0 {
                    bump("torn_write_on_crash");
                }
                if let Some(rest) = f.strip_prefix("delay_next ").and_then(|r| r.strip_suffix(" store_append")) {
                    if let Some(s) = rest.strip_suffix("->store-1").and_then(server_of) {
                        held_until.insert(s, ev.t_us + ev.u("duration_ms") * 1000 + 100_000);
                    }
                }
                if let Some(rest) = f.strip_prefix("reorder ") {
                    if rest.ends_with("->store-1") && rest.split("->").next().and_then(server_of).is_some() {
                        bump("reordered_messages_to_store");
                    }
                }
                let failover = !preparing.is_empty();
                let (verb, rest) = f.split_once(' ').unwrap_or((f.as_str(), ""));
                let holders: Vec<u64> = holds.iter().filter(|(_, h)| !h.is_empty()).map(|(s, _)| *s).collect();
                let parties: BTreeSet<u64> = moving.values().flat_map(|(a, b, _)| [*a, *b]).collect();
                let names_party = rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '-').any(|n| server_of(n).is_some_and(|s| parties.contains(&s)));
                if !reshaping.is_empty() && verb == "crash" {
                    if server_of(rest).is_some() {
                        bump("crash_server_during_reshape");
                    } else if rest.starts_with("manager-") {
                        bump("crash_manager_during_reshape");
                    }
                }
                if !moving.is_empty() {
                    match verb {
                        "crash" if server_of(rest).is_some_and(|s| moving.values().any(|m| m.0 == s)) => bump("crash_source_during_move"),
                        "crash" if server_of(rest).is_some_and(|s| moving.values().any(|m| m.1 == s)) => bump("crash_target_during_move"),
                        "crash" if rest.starts_with("manager-") => bump("crash_manager_during_move"),
                        "crash" if rest == "lock-1" || rest == "store-1" => bump("crash_lock_or_store_during_move"),
                        "isolate" | "split" | "one_way" | "delay" | "pause" | "duplicate" if names_party => bump("fault_on_move_party"),
                        _ => {}
                    }
                }
                match verb {
                    "crash" => {
                        if let Some(s) = server_of(rest) {
                            if holders.contains(&s) {
                                bump("crash_owner");
                            }
                            if preparing.values().any(|o| *o == s) {
                                bump("crash_owner_while_opening");
                            }
                            holds.remove(&s);
                        } else if failover {
                            match rest {
                                "store-1" => bump("crash_store_during_failover"),
                                "lock-1" => bump("crash_lock_during_failover"),
                                _ => bump("crash_manager_during_failover"),
                            }
                        }
                    }
                    "pause" => {
                        if let Some(s) = server_of(rest) {
                            paused.insert(s);
                        }
                    }
                    "isolate" | "split" | "one_way" | "delay"
                        if holders.iter().any(|s| rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '-').any(|n| n == format!("server-{s}"))) => {
                            bump("partition_owner");
                        }
                    "duplicate" => {
                        if let Some((from, to)) = rest.split_once("->") {
                            if to == "store-1" && server_of(from).is_some_and(|s| holders.contains(&s)) {
                                bump("duplicate_on_store_link");
                            }
                        }
                    }
                    "slow_disk" if failover => bump("slow_disk_during_failover"),
                    _ => {}
                }
                active.insert(f);
            }
            "fault_end" => {
                let f = ev.s("fault");
                if let Some(rest) = f.strip_prefix("pause ") {
                    if let Some(s) = server_of(rest) {
                        paused.remove(&s);
                    }
                }
                if let Some((from, to)) = f.strip_prefix("delay ").and_then(|r| r.split_once("->")) {
                    if to == "store-1" {
                        if let Some(s) = server_of(from) {
                            released_to_store.insert(s, ev.t_us);
                        }
                    }
                }
                active.remove(f);
            }
            _ => {}
        }
    }
    hit
}
