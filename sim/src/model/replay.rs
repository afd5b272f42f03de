//! A counterexample as a simulator scenario: an explicit schedule, in the scenario format
//! (`scenarios/README.md`), that `partmap-sim run --seed N --scenario FILE --mutation M`
//! replays. The simulator has real time and a real network, so the translation is not step by
//! step; it keeps what the counterexample chose, each relative to the protocol event that came
//! just before it (a trigger, `on`):
//!
//! - the cluster of the configuration (2 servers, 1 manager, 1 frontend, 1 range, the model's
//!   knobs and copy strategy, no random fault), and its operator request (the move);
//! - each client append, sent (a scripted append with `on`) right after the last event before
//!   the step that delivered it to its server;
//! - each message the counterexample left in flight at the violation, or that a client append
//!   overtook, held (`delay_next`, armed on the last event before the step that sent it) for
//!   as long as it stayed in flight, counted in steps (each worth two maximum latencies);
//! - each message it dropped, held (`delay_next`) to the workload's end;
//! - each crash (`crash` for the model's restart time) and each cut (`one_way` both ways to
//!   the workload's end), on the last event before it;
//! - an append sent to an owner older than the authority's current map at its delivery: the
//!   frontend's map answers are held (`delay` from `lock-1`) from the last event before the map
//!   changed, so the frontend still routes on the map the model's client used.
//!
//! A trigger names the event, its emitter, its range and epoch filters, and its count among
//! such events since the point the schedule arms (the move request, or the end of the
//! failover's setup), as the model's history has them. Steps with no event before them arm at
//! that point.

use super::world::Node;
use super::{Action, Config, Counterexample, Setup, World};
use crate::events::What;
use partmap::config::Mutation;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// When the schedule arms, ms after the workload starts: the simulated cluster has registered,
/// bootstrapped and activated its range by then (the manager ticks every 200 ms).
pub const ARM_MS: u64 = 1_000;
/// The replay's workload, s.
pub const DURATION_S: u64 = 10;
/// `move-corrupt`: when (ms) the setup's append is sent, before the move request
/// ([`ARM_MS`]): the range is active by then, and the append is in the stream before the
/// move's first pre-copy chunk is read.
pub const SETUP_APPEND_MS: u64 = 800;
/// `depose`: how long (ms) a message of `manager-1` in flight across the model's deposition
/// (the clock moved past the end of its lease) is held: past a lease (900 ms) from the cut and
/// a standby's tick (200 ms), so that it arrives once `manager-2` holds term 2.
pub const DEPOSE_HOLD_MS: u64 = 1_600;
/// `depose`: from the event before the first message of `manager-1` that the deposition
/// held, this long (ms) until `manager-1`'s link to `lock-1` is cut (its lease renewals
/// lost): past the simulator's next round start (a tick, 200 ms), whose own lease request must
/// get through for the round to send its commit.
pub const DEPOSE_CUT_DELAY_MS: u64 = 300;
/// `depose`: how long (ms) the cut lasts: its lease (900 ms) runs out and `manager-2` is
/// elected at its next tick; it ends before the held messages are released.
pub const DEPOSE_CUT_MS: u64 = 1_200;
/// A message the model delayed ([`Action::Delay`], marked slow) is held for as long as it
/// stayed in flight in model time, plus this (ms): two manager ticks (200 ms each) and some
/// latency, as the simulator's leader rounds only on its tick where the model's (in
/// `stale-owner`) may round at once, so the simulator's failover comes up to two ticks later.
pub const SLOW_SLACK_MS: u64 = 600;

/// `merge-move`: when (ms) the operator's move of the left parent's key is sent if the model's
/// request had no event before it to trigger on (it has: the merge's `BeginMerge` commit):
/// after the simulator's leader journaled the merge (its split at [`ARM_MS`], three rounds of
/// it, then the merge's `BeginMerge`, at about 1,650 ms on seeds 0 and 1) and before its next
/// round plans (about 1,870 ms), the window where the model's request lands.
pub const MERGE_MOVE_REQUEST_MS: u64 = 1_750;

/// A trigger: the last event before a step, as the scenario's `on` names it.
type Anchor = Option<Value>;

/// What one step did, as the translation reads it.
struct Step {
    action: Action,
    /// The last event before the step (or `None`: none since the arming point).
    anchor: Anchor,
    /// Its history index.
    anchor_at: Option<usize>,
    /// Packets it sent: (from, to, kind).
    sent: Vec<(Node, Node, &'static str, u64, bool)>,
    /// The manager that held the latest leader term before the step (its `leader` event).
    leader: u32,
    /// The model's clock after the step (µs).
    now_us: u64,
    /// For a corrupt step: the chunk's link (from, to).
    corrupted: Option<(Node, Node)>,
}

/// A node of the model as a scenario names it: with two managers, a manager by its role when
/// the entry arms (`leader` if it held the latest term before the step, else
/// `standby-manager`), since which candidate wins the simulator's first term is a race; any
/// other node by its name ([`sim_name`]).
fn sim_node(n: Node, leader: u32, managers: u32) -> Value {
    match n {
        Node::Manager(c) if managers > 1 => json!({ "role": if c == leader { "leader" } else { "standby-manager" } }),
        other => json!(sim_name(other)),
    }
}

/// The sim's name of a model node: the model's client is the frontend that carries its
/// appends.
fn sim_name(n: Node) -> String {
    match n {
        Node::Client => "frontend-1".to_string(),
        other => other.to_string(),
    }
}

/// The simulator's name of a model key: `k` and the model key's number in six digits (`k2`
/// → `k000002`), so keys keep their order and their side of a split key; any other key as it
/// is.
fn sim_key(key: &[u8]) -> String {
    let text = String::from_utf8_lossy(key);
    match text.strip_prefix('k').and_then(|n| n.parse::<u64>().ok()) {
        Some(n) => format!("k{n:06}"),
        None => text.into_owned(),
    }
}

/// The trigger for "after the history's event `i`" (counted among events of the same name,
/// emitter, range and epoch since `from`).
fn anchor_of(w: &World, i: usize, from: usize) -> Anchor {
    if w.unanchored.contains(&i) {
        return None;
    }
    let What::Sys(ev) = &w.history[i].what else { return None };
    let by = w.emitters[i]?;
    let (range, epoch) = crate::fault::trigger::range_epoch(ev);
    let same = |j: usize| matches!(&w.history[j].what, What::Sys(e) if e.name() == ev.name() && crate::fault::trigger::range_epoch(e) == (range, epoch)) && w.emitters[j] == Some(by);
    let count = (from..=i).filter(|&j| same(j)).count();
    let mut on = json!({ "event": ev.name(), "node": sim_name(by), "count": count });
    if let Some(r) = range {
        on["range"] = json!(r);
    }
    if let Some(e) = epoch {
        on["epoch"] = json!(e);
    }
    Some(on)
}

/// The last event before history index `end` that a trigger can name (one with an emitter),
/// at or after `from`.
fn last_anchor(w: &World, end: usize, from: usize) -> Anchor {
    last_anchor_at(w, end, from).and_then(|i| anchor_of(w, i, from))
}

/// The history index of [`last_anchor`]'s event.
fn last_anchor_at(w: &World, end: usize, from: usize) -> Option<usize> {
    (from..end).rev().find(|&i| anchor_of(w, i, from).is_some())
}

/// An `until` trigger: the event at history index `release` (the last one before the step
/// that delivered a held message), counted among its like from just after `armed` (the event
/// the hold was armed on; `None`: the arming point `from`), as the simulator counts an
/// `until` from the moment its fault starts. `None` when no event came between the two.
fn until_of(w: &World, release: usize, armed: Option<usize>, from: usize) -> Anchor {
    // No event between the arming and the delivery: nothing to release on (the hold's time
    // stands).
    if armed.is_some_and(|a| release <= a) {
        return None;
    }
    anchor_of(w, release, armed.map_or(from, |a| a + 1))
}

/// A schedule entry at the arming point, or on `anchor`.
fn entry(anchor: &Anchor, duration_ms: u64, fault: Value) -> Value {
    let mut e = json!({ "at_ms": ARM_MS, "duration_ms": duration_ms, "fault": fault });
    if let Some(on) = anchor {
        e["on"] = on.clone();
    }
    e
}

/// The counterexample's path played again from the setup (its recorded prefix first), with
/// what the translation reads of each step. Errors: the setup failed.
fn walk(config: &Config, mutation: Option<Mutation>, also: Option<Mutation>, bounds: super::Bounds, cx: &Counterexample) -> Result<Walk, String> {
    let _forget = super::ForgetReshapes::new(&super::knobs_with(config, mutation, also));
    let mut w = super::initial_world_with(config, mutation, also, bounds, true)?;
    // A setup's recorded prefix (`stale-owner`'s cut, append, delay, clock and failover
    // round; `move-abort`'s two rounds, the delay and the drop) is replayed as steps of its
    // own, from the setup before it (the failover's; the move's).
    let prefix = std::mem::take(&mut w.prefix);
    // Where the search starts: each manager's round budget and the fault counts the setup
    // left (a setup sets them apart from its steps), restored once the prefix is played.
    let searched = (w.managers.iter().map(|m| m.rounds_left).collect::<Vec<_>>(), w.drops, w.dups, w.crashes);
    if !prefix.is_empty() {
        w = super::base_world(config, mutation, also, bounds, true)?;
        // As in the setup: the prefix's clock is not bounded by the search's horizon.
        w.bounds.horizon_ms = super::world::PREFIX_HORIZON_MS;
    }
    // The world the path starts from (`merge-move`: its operator request is read from it).
    let base = w.clone();
    let path: Vec<Action> = prefix.iter().chain(&cx.path).cloned().collect();
    let label = |k: usize| step_label(k, prefix.len());
    let from = w.armed_from;
    // The model's clock after each step, and the packets marked slow (by their ids).
    let mut times: Vec<u64> = Vec::new();
    let mut slowed: Vec<PacketId> = Vec::new();
    let mut steps = Vec::new();
    // Per packet (from, to, token, answer): the step that sent it and the step that ended it
    // (delivered or dropped), and whether it was dropped.
    let mut sent_at: BTreeMap<PacketId, usize> = BTreeMap::new();
    let mut ended: BTreeMap<PacketId, (usize, bool)> = BTreeMap::new();
    let mut appends: Vec<(usize, Anchor, String)> = Vec::new();
    let mut stale_routes: Vec<Anchor> = Vec::new();
    let mut notes = Vec::new();
    // `depose`: the step that moved the clock past the end of manager-1's lease (granted in
    // the setup, `renew_interval_ms` before the search starts).
    let lease_end_us = w.start_us + (super::DEPOSE_LEASE_MS - super::DEPOSE_RENEW_MS) * 1000;
    let mut deposed_at: Option<usize> = None;
    let managers = w.managers.len() as u32;
    for (k, a) in path.iter().enumerate() {
        if k == prefix.len() && k > 0 {
            // The search starts here, as after the setup.
            w.bounds.horizon_ms = bounds.horizon_ms;
            w.start_us = w.now_us;
            for (m, rounds) in w.managers.iter_mut().zip(&searched.0) {
                m.rounds_left = *rounds;
            }
            (w.drops, w.dups, w.crashes) = (searched.1, searched.2, searched.3);
        }
        let anchor_at = last_anchor_at(&w, w.history.len(), from);
        let anchor = anchor_at.and_then(|i| anchor_of(&w, i, from));
        let leader = w.history.iter().rev().find_map(|e| match &e.what {
            What::Sys(partmap::event::Event::Leader { manager, .. }) => Some(*manager),
            _ => None,
        });
        let leader = leader.unwrap_or(1);
        let before: Vec<PacketId> = w.net.iter().map(|p| (p.from, p.to, p.token, p.answer)).collect();
        if let Action::Deliver(i) | Action::Drop(i) = a {
            let p = &w.net[*i];
            let id = (p.from, p.to, p.token, p.answer);
            ended.insert(id, (k, matches!(a, Action::Drop(_))));
            if p.from == Node::Client && matches!(a, Action::Deliver(_)) {
                // A split's or merge's appends keep their keys (each side of the split key matters); a
                // move's are named in delivery order.
                let key = match (config.setup, &p.msg) {
                    (Setup::Split(_) | Setup::Merge(_) | Setup::MergeMove(_), partmap::msg::Msg::Append { key, .. }) => sim_key(key),
                    _ => format!("k{:06}", appends.len() + 1),
                };
                appends.push((k, anchor.clone(), key));
                if let (Node::Server(s), partmap::msg::Msg::Append { epoch, range, .. }) = (p.to, &p.msg) {
                    let row = w.authority.map().rows.get(range).cloned();
                    if row.is_none() {
                        notes.push(format!("{}: the model's client sent to server-{s} for {range} before the map had it (a split's child: a route the simulator's frontend takes only once the map or a hint names it)", label(k)));
                    }
                    if row.as_ref().is_some_and(|r| r.epoch > *epoch) {
                        // The model's client used an older map: keep the frontend on it from
                        // the last map commit that changed the row.
                        let commit_at = (from..w.history.len()).rev().find(|&j| matches!(&w.history[j].what, What::Sys(partmap::event::Event::MapCommit { .. })));
                        stale_routes.push(commit_at.and_then(|j| last_anchor(&w, j, from)));
                    } else if row.as_ref().is_some_and(|r| r.epoch < *epoch || r.owner != Some(partmap::ids::ServerId(s))) {
                        notes.push(format!("{}: the model's client sent to server-{s} at {epoch} ahead of the map (a route the simulator's frontend takes only once the map or a hint names it)", label(k)));
                    }
                }
            }
        }
        let corrupted = match a {
            Action::Corrupt(i) => Some((w.net[*i].from, w.net[*i].to)),
            _ => None,
        };
        if let Action::Duplicate(i) = a {
            let p = &w.net[*i];
            notes.push(format!("{}: the model duplicated {} {} -> {}; not scheduled (the simulator duplicates a whole link, each copy at most 10 ms late), so the replay may not reproduce", label(k), p.msg.kind_name(), sim_name(p.from), sim_name(p.to)));
        }
        if let Action::Delay(i) = a {
            let p = &w.net[*i];
            slowed.push((p.from, p.to, p.token, p.answer));
        }
        w.apply(a);
        times.push(w.now_us);
        if config.setup == Setup::Depose && matches!(a, Action::Advance) && w.now_us >= lease_end_us && deposed_at.is_none() {
            deposed_at = Some(k);
        }
        let mut sent = Vec::new();
        for p in &w.net {
            let id = (p.from, p.to, p.token, p.answer);
            if !before.contains(&id) && !sent_at.contains_key(&id) {
                sent_at.insert(id, k);
                sent.push((p.from, p.to, p.msg.kind_name(), p.token, p.answer));
            }
        }
        steps.push(Step { action: a.clone(), anchor, anchor_at, sent, leader, now_us: w.now_us, corrupted });
    }
    Ok(Walk { prefix_len: prefix.len(), from, base, steps, times, slowed, ended, appends, stale_routes, notes, deposed_at, managers, w })
}

/// A step's name in the notes: `setup step K` within a recorded prefix of `prefix_len`
/// steps, `step K` after it.
fn step_label(k: usize, prefix_len: usize) -> String {
    if k < prefix_len {
        format!("setup step {}", k + 1)
    } else {
        format!("step {}", k + 1 - prefix_len)
    }
}

/// What [`walk`] read of the counterexample.
struct Walk {
    /// Steps of the setup's recorded prefix at the path's start.
    prefix_len: usize,
    /// The history index the schedule arms at (triggers count from it).
    from: usize,
    /// The world the path starts from.
    base: World,
    /// Each step of the path.
    steps: Vec<Step>,
    /// The model's clock after each step, µs.
    times: Vec<u64>,
    /// The packets the model marked slow.
    slowed: Vec<PacketId>,
    /// Per packet: the step that ended it (delivered or dropped) and whether it was dropped.
    ended: BTreeMap<PacketId, (usize, bool)>,
    /// Each client append delivered: its step, the event before it, its key in the simulator.
    appends: Vec<(usize, Anchor, String)>,
    /// Anchors from which the frontend's map answers are held (an append to an old owner).
    stale_routes: Vec<Anchor>,
    /// What the translation approximated so far.
    notes: Vec<String>,
    /// `depose`: the step that moved the clock past the end of manager-1's lease.
    deposed_at: Option<usize>,
    /// Managers in the configuration.
    managers: u32,
    /// The world after the whole path.
    w: World,
}

/// A packet of the model network by its identity: (from, to, token, answer).
type PacketId = (Node, Node, u64, bool);

/// The scenario's `faults.schedule` for the walked counterexample: the configuration's
/// operator requests, the deposition's cut, each step's crash, cut or corruption, each message
/// held (`delay_next`, `until` the event the model delivered it after where that is known),
/// and the frontend's map answers held where an append went to an older owner; each noted in
/// `walk.notes`.
fn schedule(config: &Config, walk: &mut Walk) -> Vec<Value> {
    let Walk { prefix_len, from, ref base, ref steps, ref times, ref slowed, ref ended, ref appends, ref stale_routes, ref mut notes, deposed_at, managers, ref w } = *walk;
    let label = |k: usize| step_label(k, prefix_len);
    let n = steps.len();
    let latency_max_ms = 5u64;
    let step_ms = 2 * latency_max_ms;
    let mut schedule: Vec<Value> = Vec::new();
    match config.setup {
        Setup::Move(_) | Setup::Depose | Setup::PreCopyChunk | Setup::MoveAbort => schedule.push(json!({ "at_ms": ARM_MS, "fault": { "kind": "move", "key": "k000001", "to": "server-2" } })),
        // A merge's setup is a split first; the simulator's leader then merges the two cold
        // children itself, as the model's does (the scenario's `splits` below).
        Setup::Split(at) | Setup::Merge(at) => schedule.push(json!({ "at_ms": ARM_MS, "fault": { "kind": "split_range", "at": sim_key(at) } })),
        // The merge's split, then the operator's move of the left parent's key once the merge
        // is journaled: on the last event before the model's request (the merge's map commit).
        Setup::MergeMove(at) => {
            schedule.push(json!({ "at_ms": ARM_MS, "fault": { "kind": "split_range", "at": sim_key(at) } }));
            let to = base.authority.map().move_requests.values().next().map_or(2, |s| s.0);
            // On the last event before the model's request (the merge's `BeginMerge` commit):
            // between the simulator's merge journaled and its leader's next plan, as the
            // model's request is. With no such event, at `MERGE_MOVE_REQUEST_MS`.
            let after = base.move_requested_at.and_then(|i| last_anchor(base, i, base.armed_from));
            let mut e = json!({ "at_ms": MERGE_MOVE_REQUEST_MS, "fault": { "kind": "move", "key": "k000001", "to": format!("server-{to}") } });
            match &after {
                Some(on) => {
                    e["at_ms"] = json!(ARM_MS);
                    e["on"] = on.clone();
                    notes.push(format!("the operator's move of k000001 to server-{to}, sent after {on}"));
                }
                None => notes.push(format!("the operator's move of k000001 to server-{to} at {MERGE_MOVE_REQUEST_MS} ms (no event before the model's request)")),
            }
            schedule.push(e);
        }
        Setup::Failover | Setup::StoreCrash | Setup::StaleOwner => {}
    }
    let end_ms = DURATION_S * 1000;
    let first_append = appends.first().map_or(n, |a| a.0);
    // `depose`: the first step (before the deposition) that sent a message of manager-1 still
    // in flight at it; the cut of manager-1's link to lock-1 is armed on the event before it.
    let crosses = |k: usize, id: &PacketId| deposed_at.is_some_and(|d| k < d && ended.get(id).is_none_or(|(j, _)| *j > d));
    if let Some(d) = deposed_at {
        let first = steps.iter().enumerate().find_map(|(k, s)| s.sent.iter().any(|&(a, b, _, t, ans)| a == Node::Manager(1) && crosses(k, &(a, b, t, ans))).then_some(k));
        let at = &steps[first.unwrap_or(d)];
        let mut e = entry(&at.anchor, DEPOSE_CUT_MS, json!({ "kind": "one_way", "from": sim_node(Node::Manager(1), at.leader, managers), "to": "lock-1" }));
        match e.get_mut("on") {
            Some(on) => on["delay_ms"] = json!(DEPOSE_CUT_DELAY_MS),
            None => e["at_ms"] = json!(ARM_MS + DEPOSE_CUT_DELAY_MS),
        }
        // The cut ends where the first held message of manager-1 is released (below), so
        // that the release is not lost to it.
        let released = depose_release(steps, ended, &crosses);
        if let Some(until) = released.and_then(|r| until_of(w, r, at.anchor_at, from)) {
            e["until"] = until.clone();
            notes.push(format!("{}: the cut ends on {until} (else after {DEPOSE_CUT_MS} ms)", label(d)));
        }
        schedule.push(e);
        notes.push(format!("{}: the clock passed the end of manager-1's lease: cut manager-1 -> lock-1 for {DEPOSE_CUT_MS} ms, {DEPOSE_CUT_DELAY_MS} ms after the event before {} (its renewals lost)", label(d), label(first.unwrap_or(d))));
    }
    for (k, s) in steps.iter().enumerate() {
        match &s.action {
            Action::Crash(m) => schedule.push(entry(&s.anchor, super::world::RESTART_US / 1000, json!({ "kind": "crash", "node": format!("server-{m}") }))),
            Action::StoreCrash { keep } => {
                // Down for as many steps as the model kept it down (each worth two maximum
                // latencies), at least one: requests that reach it meanwhile are lost, as the
                // model's are.
                let restart = steps.iter().skip(k + 1).position(|t| t.action == Action::StoreRestart).map_or(n - k, |j| j + 1);
                let down_ms = restart as u64 * step_ms;
                schedule.push(entry(&s.anchor, down_ms, json!({ "kind": "crash", "node": "store-1" })));
                notes.push(format!("step {}: crash store-1 for {down_ms} ms after {}", k + 1, s.anchor.as_ref().map_or("the arming point".to_string(), |a| a.to_string())));
                if *keep > 0 {
                    notes.push(format!("step {}: the model's store crash kept {keep} unsynced records (a torn write); the simulator's torn crash draws how many it keeps, and the replay runs with torn writes off (every unsynced record lost), so it may not reproduce", k + 1));
                }
            }
            // The simulator's `corrupt` fault on the chunk's link, from the arming point (the
            // move request: every pre-copy chunk of the move comes after it) to the workload's
            // end: it flips a bit of every pre-copy chunk on that link, as the model's action
            // does to this one. Not on the event before the step: in `move-corrupt` that is
            // the setup's append, which the replay sends before the arming point.
            Action::Corrupt(_) => {
                let (from, to) = s.corrupted.unwrap_or((Node::Store, Node::Server(2)));
                schedule.push(entry(&None, end_ms - ARM_MS, json!({ "kind": "corrupt", "from": sim_name(from), "to": sim_name(to) })));
                notes.push(format!("step {}: corrupt {} -> {} from the move request to the workload's end (every pre-copy chunk on it)", k + 1, sim_name(from), sim_name(to)));
            }
            Action::Cut(m) => {
                for (a, b) in [(format!("server-{m}"), "lock-1".to_string()), ("lock-1".to_string(), format!("server-{m}"))] {
                    schedule.push(entry(&s.anchor, end_ms - ARM_MS, json!({ "kind": "one_way", "from": a, "to": b })));
                }
            }
            _ => {}
        }
        for &(a, b, kind, token, answer) in &s.sent {
            // The client's appends are scripted; what the violating step sent comes after it.
            if a == Node::Client || k + 1 == n {
                continue;
            }
            let id = (a, b, token, answer);
            let (held, why) = match ended.get(&id) {
                Some((_, true)) => (end_ms, "dropped"),
                // Delayed in the model: held for the model time it stayed in flight, and a slack.
                end if slowed.contains(&id) => {
                    let until = times[end.map_or(n - 1, |e| e.0)];
                    ((until - times[k]) / 1000 + SLOW_SLACK_MS, "delayed in the model: its time in flight and a slack")
                }
                _ if a == Node::Manager(1) && crosses(k, &(a, b, token, answer)) => (DEPOSE_HOLD_MS, "in flight across manager-1's deposition"),
                // The append's two hops overtake it (`step_ms`), plus the time the model's
                // clock moved meanwhile: not a step count, which in the model is instantaneous
                // and in the simulator would push the message past the server's timers (a
                // 10 ms admission sleep: 3 steps held it 30 ms, after the sleep ended).
                Some((j, false)) if *j > first_append && k < first_append => (step_ms + (steps[*j].now_us - s.now_us) / 1000, "overtaken by a client append"),
                None => ((n - k) as u64 * step_ms, "in flight at the violation"),
                _ => continue,
            };
            let mut e = entry(&s.anchor, held, json!({ "kind": "delay_next", "from": sim_node(a, s.leader, managers), "to": sim_node(b, s.leader, managers), "message": kind }));
            // A message the model delayed (marked slow), or a message of manager-1 held across
            // its deposition, and delivered in the counterexample: released on the event the
            // model delivered it after (the new owner's activation, the new leader's
            // election), the time above its cap; not after a fixed time, by which the
            // simulator may have gone past that point (the new leader written the map itself).
            let delivered = ended.get(&id).filter(|(_, dropped)| !dropped).map(|(j, _)| *j);
            let on_event = slowed.contains(&id) || (a == Node::Manager(1) && crosses(k, &id));
            let release = delivered.filter(|_| on_event).and_then(|j| steps[j].anchor_at).and_then(|r| until_of(w, r, s.anchor_at, from));
            match release {
                Some(until) => {
                    notes.push(format!("{}: hold {kind} {} -> {} until {until} (else {held} ms; {why})", label(k), sim_name(a), sim_name(b)));
                    e["until"] = until;
                }
                None => notes.push(format!("{}: hold {kind} {} -> {} for {held} ms ({why})", label(k), sim_name(a), sim_name(b))),
            }
            schedule.push(e);
        }
    }
    for anchor in stale_routes {
        schedule.push(entry(anchor, 2 * 400, json!({ "kind": "delay", "from": "lock-1", "to": "frontend-1" })));
        notes.push("a client append went to an owner older than the current map: hold the frontend's map answers for 800 ms".to_string());
    }
    schedule
}

/// The counterexample `cx` of `config` under `mutation` (and `also`, a second one on at once)
/// as a scenario (JSON), with the notes on what it approximates. Errors: the setup failed, or
/// the scenario does not parse (a bug here).
pub fn scenario(config: &Config, mutation: Option<Mutation>, also: Option<Mutation>, bounds: super::Bounds, cx: &Counterexample, commit: &str) -> Result<(crate::scenario::Scenario, Vec<String>), String> {
    let walk = walk(config, mutation, also, bounds, cx)?;
    let mut walk = walk;
    let schedule = schedule(config, &mut walk);
    let Walk { prefix_len, appends, mut notes, .. } = walk;
    let label = |k: usize| step_label(k, prefix_len);
    let end_ms = DURATION_S * 1000;
    let mut script: Vec<Value> = appends
        .iter()
        .map(|(k, anchor, key)| {
            notes.push(format!("{}: append {key}, sent after {}", label(*k), anchor.as_ref().map_or("the arming point".to_string(), |a| a.to_string())));
            let mut e = json!({ "at_ms": ARM_MS, "key": key, "bytes": 16 });
            if let Some(on) = anchor {
                e["on"] = on.clone();
            }
            e
        })
        .collect();
    if config.setup == Setup::PreCopyChunk {
        // The setup's append, acknowledged by the source before the leader's round that
        // pre-copies it: sent before the move request arms the schedule.
        script.insert(0, json!({ "at_ms": SETUP_APPEND_MS, "key": "k000001", "bytes": 16 }));
        notes.push(format!("the setup's append of k000001 at {SETUP_APPEND_MS} ms, before the move request"));
    }
    if script.is_empty() {
        // A counterexample with no client append (a split's map commit): the workload still
        // needs one (a scenario with no rate and no script is refused); one append, late.
        script.push(json!({ "at_ms": end_ms / 2, "key": "k000001", "bytes": 16 }));
        notes.push(format!("no client append in the counterexample: one append of k000001 at {} ms, after the schedule", end_ms / 2));
    }
    let strategy = match config.setup {
        Setup::Move(s) => s,
        Setup::PreCopyChunk => partmap::map::Strategy::PreCopy,
        Setup::Failover | Setup::StaleOwner | Setup::Split(_) | Setup::Merge(_) | Setup::Depose | Setup::StoreCrash | Setup::MoveAbort => partmap::map::Strategy::StopAndCopy,
        // Its move is the planner's, with the knobs' strategy.
        Setup::MergeMove(_) => super::knobs(config, mutation).strategy,
    };
    let strategy = partmap::map::Strategy::ALL.iter().find(|(x, _)| *x == strategy).map_or("pre-copy", |(_, name)| *name);
    let m = mutation.map_or(String::new(), |m| format!(" --mutation {}", crate::run::mutation_names(m, also)));
    let mut doc = json!({
        "description": format!("Replay of a model counterexample: `partmap-sim model --config {}{m}` at commit {commit} found a {}-step {} violation; this schedule was derived from it (appends and held messages on the events before them), not written by hand.", config.name, cx.path.len(), cx.property),
        "topology": { "servers": 2, "managers": if config.setup == Setup::Depose { 2 } else { 1 }, "frontends": 1, "clients": 1, "initial_ranges": 1 },
        // The model's client is open loop unless the configuration's bounds say closed.
        "workload": { "duration_s": DURATION_S, "ops_per_s": 0.0, "keys": 1000, "script": script, "script_open_loop": !bounds.closed_loop },
        "moves": { "strategy": strategy },
        "faults": { "random": null, "schedule": schedule },
    });
    if let Some(knobs) = knobs_doc(config, mutation, bounds, &mut notes) {
        doc["knobs"] = knobs;
    }
    if let Setup::Merge(_) | Setup::MergeMove(_) = config.setup {
        let k = super::knobs(config, mutation);
        doc["splits"] = json!({ "merge_ops_per_s": k.merge_ops_per_s, "merge_hysteresis_ms": k.merge_hysteresis_ms });
    }
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    let s = crate::scenario::Scenario::parse(&text, "model-replay.json")?;
    Ok((s, notes))
}

/// The scenario's `knobs` for `config`, where it needs the model's: `depose`'s and
/// `move-abort`'s leases; `stale-owner`'s leases, its clocks pinned at the drift bound's corner
/// (noted in `notes`) and one attempt per append. `None`: the defaults.
fn knobs_doc(config: &Config, mutation: Option<Mutation>, bounds: super::Bounds, notes: &mut Vec<String>) -> Option<Value> {
    let k = super::knobs(config, mutation);
    if matches!(config.setup, Setup::Depose | Setup::MoveAbort) {
        return Some(json!({ "lease_ms": k.lease_ms, "renew_interval_ms": k.renew_interval_ms }));
    }
    if config.setup == Setup::StaleOwner {
        // The model's lease knobs, its clocks at the drift bound's corner, pinned (the
        // authority fast, the servers slow, every other node exact, as the model's), and one
        // attempt per append, as the model's client sends each once: a frontend's retry of
        // the delayed append at the new owner would land first, and the store would then
        // deduplicate the delayed write by its id instead of judging its epoch.
        let mut knobs = json!({ "lease_ms": k.lease_ms, "renew_interval_ms": k.renew_interval_ms, "lease_margin_ms": k.lease_margin_ms, "frontend_attempts": 1 });
        if bounds.drift_ppm > 0 {
            let mut pinned = serde_json::Map::new();
            for node in [Node::Authority, Node::Store, Node::Server(1), Node::Server(2), Node::Manager(1), Node::Client] {
                pinned.insert(sim_name(node), json!(super::world::drift_of(node, bounds.drift_ppm)));
            }
            knobs["clock_drift_ppm"] = json!(bounds.drift_ppm);
            knobs["clock_drift_pinned_ppm"] = Value::Object(pinned);
            notes.push(format!("clocks pinned at the drift bound's corner: lock-1 +{0} ppm, the servers -{0} ppm, the others exact", bounds.drift_ppm));
        }
        return Some(knobs);
    }
    None
}

/// `depose`: the history index of the event before the step that delivered the first message
/// of manager-1 held across its deposition (`crosses`), if the counterexample delivered one.
fn depose_release(steps: &[Step], ended: &BTreeMap<PacketId, (usize, bool)>, crosses: &dyn Fn(usize, &PacketId) -> bool) -> Option<usize> {
    let mut delivered: Vec<usize> = Vec::new();
    for (k, s) in steps.iter().enumerate() {
        for &(a, b, _, token, answer) in &s.sent {
            let id = (a, b, token, answer);
            if a == Node::Manager(1) && crosses(k, &id) {
                delivered.extend(ended.get(&id).filter(|(_, dropped)| !dropped).map(|(j, _)| *j));
            }
        }
    }
    delivered.into_iter().min().and_then(|j| steps[j].anchor_at)
}

/// Whether the simulator's violated property `found` is the model's `property`: the
/// same name, or for the model's `liveness` (no live state reachable once the faults heal) the
/// simulator's `liveness` (no append taken after its heal) or `no_stuck_range` (a range held
/// paused with no flow of it, the same stuck state seen in the history).
pub fn same_failure(property: &str, found: &str) -> bool {
    property == found || (property == "liveness" && found == "no_stuck_range")
}

/// What [`write_and_replay`] did.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The scenario file written.
    pub path: std::path::PathBuf,
    /// The first seed (of those tried) whose run violated the counterexample's property
    /// ([`same_failure`]), whatever else it violated: the simulator judges more properties
    /// than the model, and its report lists them in a fixed order, not the order they broke
    /// (`move-abort`'s late pause breaks `handoff_in_order`, listed first, and `liveness`:
    /// one stuck range seen by both).
    pub seed: Option<u64>,
    /// Seeds tried.
    pub tried: u64,
    /// The properties each tried seed violated, in the report's order (empty: it passed), in
    /// seed order.
    pub found: Vec<Vec<String>>,
    /// What the translation approximated.
    pub notes: Vec<String>,
}

/// Write `cx` as a scenario (its description naming `commit`) under `dir` (`model-<config>-<mutation>[+<also>].json`; `also`, the pair's second, a second mutation on at once) and run it in the
/// simulator on seeds `0..seeds` until one violates the counterexample's property (among
/// others, if the simulator's other checkers see the same bug too). Errors: the
/// scenario cannot be built or written.
pub fn write_and_replay(config: &Config, (mutation, also): (Option<Mutation>, Option<Mutation>), bounds: super::Bounds, cx: &Counterexample, dir: &std::path::Path, seeds: u64, commit: &str) -> Result<Replayed, String> {
    let (s, notes) = scenario(config, mutation, also, bounds, cx, commit)?;
    let name = format!("model-{}-{}.json", config.name, mutation.map_or("none".to_string(), |m| crate::run::mutation_names(m, also).replace(',', "+")));
    let path = dir.join(name);
    crate::search::schedule::write(&path, &s)?;
    let mut out = Replayed { path: path.clone(), seed: None, tried: 0, found: Vec::new(), notes };
    for seed in 0..seeds {
        let opts = crate::run::RunOptions { seed, scenario: s.clone(), scenario_label: path.display().to_string(), mutation, also_mutation: also, trace: false, echo_header: false };
        let r = crate::run::run_seed(&opts);
        out.tried += 1;
        let violated: Vec<String> = r.verdicts.iter().filter(|v| v.violation.is_some()).map(|v| v.property.to_string()).collect();
        let hit = violated.iter().any(|p| same_failure(cx.property, p));
        out.found.push(violated);
        if hit {
            out.seed = Some(seed);
            break;
        }
    }
    Ok(out)
}
