//! The nemesis: crashes and restarts, network partitions and heals, from an explicit schedule in
//! the scenario or from a random schedule drawn from the seed.
//!
//! Swarm testing (Groce et al., ISSTA 2012): the fault rates themselves are drawn per seed from
//! the scenario's ranges, so some seeds are quiet and some are storms, and faults that mask each
//! other at one fixed mix get their turn at another.

use crate::scenario::{FaultSpec, NodeKind, Scenario};
use crate::run::world::{Role, World};
use madsim::rand::Rng;
use partmap::seam::{sleep_ms, LinkFault};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use crate::events::{record, What};

use crate::fault::{Fault, Request};

impl Fault {
    /// The fault a schedule entry names. `spec` must be validated ([`Scenario::validate`]):
    /// a `delay_next` of an unknown message kind panics.
    pub fn from_spec(spec: &FaultSpec) -> Fault {
        match spec {
            FaultSpec::Crash { node } => Fault::Crash(node.clone()),
            FaultSpec::Isolate { node } => Fault::Isolate(node.clone()),
            FaultSpec::Split { side } => Fault::Split(side.clone()),
            FaultSpec::OneWay { from, to } => Fault::OneWay(from.clone(), to.clone()),
            FaultSpec::Delay { from, to } => Fault::Delay(from.clone(), to.clone()),
            FaultSpec::Duplicate { from, to } => Fault::Duplicate(from.clone(), to.clone()),
            FaultSpec::Pause { node } => Fault::Pause(node.clone()),
            FaultSpec::SlowDisk { node, extra_ms } => Fault::SlowDisk(node.clone(), *extra_ms),
            FaultSpec::Corrupt { from, to } => Fault::Corrupt(from.clone(), to.clone()),
            FaultSpec::Reorder { from, to } => Fault::Reorder(from.clone(), to.clone()),
            FaultSpec::DelayNext { from, to, message } => {
                let kind = partmap::msg::Msg::KIND_NAMES.iter().find(|k| **k == message.as_str()).expect("validated");
                Fault::DelayNext(from.clone(), to.clone(), kind)
            }
            FaultSpec::Move { key, to } => Fault::Request(Request::Move(key.clone(), to.clone())),
            FaultSpec::Drain { node } => Fault::Request(Request::Drain(node.clone())),
            FaultSpec::SplitRange { at } => Fault::Request(Request::Split(at.clone())),
            FaultSpec::MergeRanges { left, right } => Fault::Request(Request::Merge(left.clone(), right.clone())),
            FaultSpec::LeaderTransfer {} => Fault::Request(Request::LeaderTransfer),
        }
    }

    /// The scenario-file form of this fault (`faults.schedule[i].fault`), the inverse of the
    /// conversion [`draw`] applies to a schedule entry.
    pub fn spec(&self) -> FaultSpec {
        match self {
            Fault::Crash(node) => FaultSpec::Crash { node: node.clone() },
            Fault::Isolate(node) => FaultSpec::Isolate { node: node.clone() },
            Fault::Split(side) => FaultSpec::Split { side: side.clone() },
            Fault::OneWay(from, to) => FaultSpec::OneWay { from: from.clone(), to: to.clone() },
            Fault::Delay(from, to) => FaultSpec::Delay { from: from.clone(), to: to.clone() },
            Fault::Duplicate(from, to) => FaultSpec::Duplicate { from: from.clone(), to: to.clone() },
            Fault::Pause(node) => FaultSpec::Pause { node: node.clone() },
            Fault::SlowDisk(node, extra_ms) => FaultSpec::SlowDisk { node: node.clone(), extra_ms: *extra_ms },
            Fault::Corrupt(from, to) => FaultSpec::Corrupt { from: from.clone(), to: to.clone() },
            Fault::Reorder(from, to) => FaultSpec::Reorder { from: from.clone(), to: to.clone() },
            Fault::DelayNext(from, to, kind) => FaultSpec::DelayNext { from: from.clone(), to: to.clone(), message: kind.to_string() },
            Fault::Request(Request::Move(key, to)) => FaultSpec::Move { key: key.clone(), to: to.clone() },
            Fault::Request(Request::Drain(node)) => FaultSpec::Drain { node: node.clone() },
            Fault::Request(Request::Split(at)) => FaultSpec::SplitRange { at: at.clone() },
            Fault::Request(Request::Merge(left, right)) => FaultSpec::MergeRanges { left: left.clone(), right: right.clone() },
            Fault::Request(Request::LeaderTransfer) => FaultSpec::LeaderTransfer {},
        }
    }
}

/// The nemesis's own random stream for a run of `seed`: the swarm topology, the per-seed rates
/// and every random fault and operator request are drawn from it, never from the run's
/// (madsim's) generator, which the workload, the network and the nodes draw from. So a run of
/// the same seed with the drawn faults written out as an explicit schedule
/// (`run --emit-schedule`) draws exactly what the random run drew and replays it bit for bit,
/// and removing a fault from that schedule does not reshuffle the others. Xoshiro256++, the
/// generator madsim uses, seeded with `seed` mixed with a constant that names the stream.
pub fn plan_rng(seed: u64) -> rand_xoshiro::Xoshiro256PlusPlus {
    use madsim::rand::SeedableRng;
    // "nemesis!" in ASCII: a fixed, documented stream apart from madsim's own seeding.
    rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321)
}

/// A fault at a time, for a duration.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// Start, ms of simulated time after the run began; with `on`, when the trigger is armed.
    pub at_ms: u64,
    /// The protocol event that starts the fault instead of `at_ms` (scheduled faults only).
    pub on: Option<crate::scenario::Trigger>,
    /// The protocol event that ends the fault before `duration_ms` (scheduled faults only).
    pub until: Option<crate::scenario::Trigger>,
    /// How long until restart or heal, ms (with `until`, the longest).
    pub duration_ms: u64,
    /// What.
    pub fault: Fault,
}

/// The faults of one run, with the rates drawn for it.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Drawn crash rate, per simulated minute (0 without random faults).
    pub crash_per_min: f64,
    /// Drawn partition rate, per simulated minute.
    pub partition_per_min: f64,
    /// Drawn process-pause rate, per simulated minute.
    pub pause_per_min: f64,
    /// Drawn slow-disk rate, per simulated minute.
    pub slow_disk_per_min: f64,
    /// Drawn rate of message faults (reorders and targeted holds), per simulated minute.
    pub message_faults_per_min: f64,
    /// Drawn rate of operator move requests, per simulated minute.
    pub move_requests_per_min: f64,
    /// Drawn rate of operator drains, per simulated minute.
    pub drains_per_min: f64,
    /// Drawn rate of faults aimed at protocol roles, per simulated minute ([`draw_aimed`]).
    pub aimed_per_min: f64,
    /// Every fault, sorted by start time.
    pub faults: Vec<Planned>,
}

fn uniform_f(rng: &mut impl Rng, r: [f64; 2]) -> f64 {
    if r[1] > r[0] { rng.gen_range(r[0]..=r[1]) } else { r[0] }
}

fn uniform_u(rng: &mut impl Rng, r: [u64; 2]) -> u64 {
    if r[1] > r[0] { rng.gen_range(r[0]..=r[1]) } else { r[0] }
}

/// Times of a Poisson process of `per_min` events per minute over `[0, duration_ms)`.
fn poisson_times(rng: &mut impl Rng, per_min: f64, duration_ms: u64) -> Vec<u64> {
    let mut out = Vec::new();
    if per_min <= 0.0 {
        return out;
    }
    let mean_gap_ms = 60_000.0 / per_min;
    let mut t = 0.0;
    loop {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        t += -u.ln() * mean_gap_ms;
        if t >= duration_ms as f64 {
            return out;
        }
        out.push(t as u64);
    }
}

/// Draw the fault plan of a run: the scenario's explicit schedule plus, if it has random faults,
/// rates drawn from its ranges and a Poisson schedule at those rates. `names_by_role` lists the
/// faultable nodes.
pub fn draw(scenario: &Scenario, names_by_role: &BTreeMap<Role, Vec<String>>, rng: &mut impl Rng) -> FaultPlan {
    let duration_ms = scenario.workload.duration_s * 1000;
    let mut plan = FaultPlan::default();
    for tf in &scenario.faults.schedule {
        plan.faults.push(Planned { on: tf.on.clone(), until: tf.until.clone(), at_ms: tf.at_ms, duration_ms: tf.lasts_ms(), fault: Fault::from_spec(&tf.fault) });
    }
    if let Some(random) = &scenario.faults.random {
        plan.crash_per_min = uniform_f(rng, random.crash_per_min);
        plan.partition_per_min = uniform_f(rng, random.partition_per_min);
        let targets: Vec<&String> = random
            .crash_targets
            .iter()
            .flat_map(|k| {
                let role = match k {
                    NodeKind::Server => Role::Server,
                    NodeKind::Manager => Role::Manager,
                    NodeKind::Store => Role::Store,
                    NodeKind::Lock => Role::Lock,
                };
                names_by_role.get(&role).into_iter().flatten()
            })
            .collect();
        // Every target node is equally likely, so servers (the most numerous) crash most.
        for at_ms in poisson_times(rng, plan.crash_per_min, duration_ms) {
            if targets.is_empty() {
                break;
            }
            let node = targets[rng.gen_range(0..targets.len())].clone();
            plan.faults.push(Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, random.down_ms), fault: Fault::Crash(node) });
        }
        let all: Vec<String> = names_by_role.values().flatten().cloned().collect();
        for at_ms in poisson_times(rng, plan.partition_per_min, duration_ms) {
            let fault = match rng.gen_range(0..5) {
                0 => Fault::Isolate(all[rng.gen_range(0..all.len())].clone()),
                1 => {
                    let mut side: Vec<String> = all.iter().filter(|_| rng.gen_bool(0.5)).cloned().collect();
                    if side.is_empty() || side.len() == all.len() {
                        side = vec![all[rng.gen_range(0..all.len())].clone()];
                    }
                    Fault::Split(side)
                }
                2 => {
                    let a = rng.gen_range(0..all.len());
                    let b = (a + rng.gen_range(1..all.len().max(2))) % all.len();
                    Fault::OneWay(all[a].clone(), all[b].clone())
                }
                3 => {
                    let a = rng.gen_range(0..all.len());
                    let b = (a + rng.gen_range(1..all.len().max(2))) % all.len();
                    Fault::Delay(all[a].clone(), all[b].clone())
                }
                _ => {
                    let a = rng.gen_range(0..all.len());
                    let b = (a + rng.gen_range(1..all.len().max(2))) % all.len();
                    Fault::Duplicate(all[a].clone(), all[b].clone())
                }
            };
            plan.faults.push(Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, random.partition_ms), fault });
        }
    }
    if let Some(random) = &scenario.faults.random {
        plan.pause_per_min = uniform_f(rng, random.pause_per_min);
        let all: Vec<String> = names_by_role.values().flatten().cloned().collect();
        for at_ms in poisson_times(rng, plan.pause_per_min, duration_ms) {
            let node = all[rng.gen_range(0..all.len())].clone();
            plan.faults.push(Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, random.pause_ms), fault: Fault::Pause(node) });
        }
    }
    if let Some(random) = &scenario.faults.random {
        plan.slow_disk_per_min = uniform_f(rng, random.slow_disk_per_min);
        for at_ms in poisson_times(rng, plan.slow_disk_per_min, duration_ms) {
            let node = if rng.gen_bool(0.5) { "store-1" } else { "lock-1" };
            let extra_ms = uniform_u(rng, random.slow_disk_extra_ms);
            plan.faults.push(Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, random.partition_ms), fault: Fault::SlowDisk(node.into(), extra_ms) });
        }
    }
    // Message faults, drawn only when the scenario asks for them (so other scenarios keep
    // their random streams).
    if let Some(random) = scenario.faults.random.as_ref().filter(|r| r.message_faults_per_min[1] > 0.0) {
        let all: Vec<String> = names_by_role.values().flatten().cloned().collect();
        let servers: Vec<String> = names_by_role.get(&Role::Server).cloned().unwrap_or_default();
        plan.message_faults_per_min = uniform_f(rng, random.message_faults_per_min);
        for at_ms in poisson_times(rng, plan.message_faults_per_min, duration_ms) {
            let a = rng.gen_range(0..all.len());
            let b = (a + rng.gen_range(1..all.len().max(2))) % all.len();
            let fault = if rng.gen_bool(0.5) || servers.is_empty() {
                Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, random.partition_ms), fault: Fault::Reorder(all[a].clone(), all[b].clone()) }
            } else {
                // The messages whose delay matters most: effects, fences, map writes, renewals.
                let (from, to, kind) = match rng.gen_range(0..4) {
                    0 => (servers[rng.gen_range(0..servers.len())].clone(), "store-1".to_string(), "store_append"),
                    1 => (servers[rng.gen_range(0..servers.len())].clone(), "store-1".to_string(), "fence"),
                    2 => (servers[rng.gen_range(0..servers.len())].clone(), "lock-1".to_string(), "renew_session"),
                    _ => (all[a].clone(), all[b].clone(), "append"),
                };
                Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, random.hold_ms), fault: Fault::DelayNext(from, to, kind) }
            };
            plan.faults.push(fault);
        }
    }
    // Operator requests, drawn only when the scenario asks for them (so other scenarios keep
    // their random streams).
    let m = &scenario.moves;
    let servers: Vec<String> = names_by_role.get(&Role::Server).cloned().unwrap_or_default();
    if m.requests_per_min[1] > 0.0 && !servers.is_empty() {
        plan.move_requests_per_min = uniform_f(rng, m.requests_per_min);
        for at_ms in poisson_times(rng, plan.move_requests_per_min, duration_ms) {
            let key = crate::scenario::key_name(rng.gen_range(0..scenario.workload.keys));
            let to = servers[rng.gen_range(0..servers.len())].clone();
            plan.faults.push(Planned { on: None, until: None, at_ms, duration_ms: 0, fault: Fault::Request(Request::Move(String::from_utf8(key).expect("ascii"), to)) });
        }
    }
    if m.drains_per_min[1] > 0.0 && !servers.is_empty() {
        plan.drains_per_min = uniform_f(rng, m.drains_per_min);
        for at_ms in poisson_times(rng, plan.drains_per_min, duration_ms) {
            let node = servers[rng.gen_range(0..servers.len())].clone();
            plan.faults.push(Planned { on: None, until: None, at_ms, duration_ms: uniform_u(rng, m.drain_ms), fault: Fault::Request(Request::Drain(node)) });
        }
    }
    if let Some(random) = scenario.faults.random.as_ref().filter(|r| r.aimed_per_min[1] > 0.0) {
        // Last, so that every draw above is what it was without aimed faults.
        plan.aimed_per_min = uniform_f(rng, random.aimed_per_min);
        let knobs = scenario.node_knobs();
        for at_ms in poisson_times(rng, plan.aimed_per_min, duration_ms) {
            plan.faults.extend(draw_aimed(rng, at_ms, scenario, &knobs, random));
        }
    }
    plan.faults.sort_by_key(|p| p.at_ms);
    plan
}

/// A length drawn around the protocol's own margins as often as in seconds: a quarter each
/// just under or over the lease margin, around the request timeout (between the margin and the
/// timeout: a renewal answer late past the margin but in time for its caller), around the
/// lease, and from `long` (the scenario's range). Below, near and above each margin, so a
/// fault lands on both sides of every timeout the protocol relies on.
pub fn margin_ms(rng: &mut impl Rng, knobs: &partmap::config::Knobs, long: [u64; 2]) -> u64 {
    fn around(rng: &mut impl Rng, x: u64) -> u64 {
        uniform_u(rng, [x.saturating_mul(6) / 10, x.saturating_mul(14) / 10]).max(1)
    }
    match uniform_u(rng, [0, 4]) {
        0 => around(rng, knobs.lease_margin_ms.max(10)),
        1 => {
            let (lo, hi) = (knobs.lease_margin_ms.max(1), knobs.rpc_timeout_ms.max(knobs.lease_margin_ms + 1));
            uniform_u(rng, [lo, hi + hi / 5])
        }
        2 => around(rng, knobs.lease_ms.max(10)),
        3 => around(rng, knobs.store_timeout_ms.max(10)),
        _ => uniform_u(rng, long),
    }
}

/// Uniform in `0..n`; 0 when `n` is at most 1.
fn below(rng: &mut impl Rng, n: u64) -> u64 {
    if n > 1 { rng.gen_range(0..n) } else { 0 }
}

/// Faults aimed at protocol roles ([`crate::fault::aim`]): who they hit is resolved when they start.
/// One draw in eight is a stale owner (`stale_owner`: several faults on one trigger), one a
/// frontend left on an old map (`stale_frontend`), one the leader's commands to a role held
/// (`late_commands`); the rest are one fault each. Of those, three in five wait for a
/// protocol event (a pause, a drain, a pre-copy round, a handoff, a fence, a map commit, a
/// lease expiry, an admission or a renewal, from the node that takes that step) and start up
/// to a lease margin after it; the rest start at `at_ms`. The fault crashes, pauses or isolates
/// a role's holder, cuts or holds one direction between it and the authority or the store,
/// holds its next message of a kind (a release among them), or corrupts the pre-copy chunks a
/// move's target reads. A crash of the leader is short enough, half the time, for the manager
/// to restart within its lease.
pub fn draw_aimed(rng: &mut impl Rng, at_ms: u64, scenario: &Scenario, knobs: &partmap::config::Knobs, random: &crate::scenario::RandomFaults) -> Vec<Planned> {
    let key = crate::scenario::key_name(below(rng, scenario.workload.keys as u64) as u32);
    let owner = format!("@owner?key={}", String::from_utf8(key).expect("ascii"));
    match below(rng, 8) {
        0 => stale_owner(rng, at_ms, scenario, knobs, &owner),
        1 => stale_frontend(rng, at_ms, scenario, knobs),
        2 => late_commands(rng, at_ms, knobs, random, &owner),
        _ => vec![draw_one_aimed(rng, at_ms, knobs, random, owner)],
    }
}

/// The protocol step an aimed fault waits for (three times in five), with the role of the
/// node that takes it, started up to a lease margin after it; `None`: start at `at_ms`.
fn aimed_trigger(rng: &mut impl Rng, knobs: &partmap::config::Knobs, owner: &str) -> Option<crate::scenario::Trigger> {
    // The events a step of a flow emits, with the role of the node that emits them.
    const STEPS: [(&str, &str); 12] = [
        ("paused", "@move-source"),
        ("drained", "@move-source"),
        ("precopied", "@move-target"),
        ("handoff", "@move-target"),
        ("paused", "@reshape-parent-owner"),
        ("fence", "store-1"),
        ("fenced", "store-1"),
        ("map_commit", "lock-1"),
        ("lease_expired", "lock-1"),
        ("leader", "lock-1"),
        ("admit", "@owner"),
        ("renewed", "@owner"),
    ];
    (below(rng, 5) < 3).then(|| {
        let (event, node) = STEPS[below(rng, STEPS.len() as u64) as usize];
        let node = if node == "@owner" { owner.to_string() } else { node.to_string() };
        let delay_ms = match below(rng, 3) {
            0 => 0,
            1 => below(rng, 20),
            _ => below(rng, knobs.lease_margin_ms.max(2)),
        };
        crate::scenario::Trigger { event: event.into(), node, range: None, epoch: None, count: 1 + below(rng, 3) as u32, delay_ms }
    })
}

/// A stale owner, the race every fencing scheme exists for (Chubby's sequencers, the GC-paused
/// lock holder whose write lands late): once the owner of `owner`'s range admits an append,
/// it loses the authority (its renewals are cut) while its messages to the store are held, so
/// the range fails over with the old owner's writes still in the network (the cut and the hold
/// last a lease up to a leader round and a request timeout more: they end between the session's
/// expiry and shortly after the new owner could have read the stream); and each server's next
/// fence is held for a lease up to two leases and a request timeout, so the new owner takes the
/// range over slowly and the late writes land in the takeover.
fn stale_owner(rng: &mut impl Rng, at_ms: u64, scenario: &Scenario, knobs: &partmap::config::Knobs, owner: &str) -> Vec<Planned> {
    let on = Some(crate::scenario::Trigger { event: "admit".into(), node: owner.to_string(), range: None, epoch: None, count: 1, delay_ms: 0 });
    // The cut and the hold end between the authority's expiry of the session (a lease after the
    // last renewal it got) and shortly after the leader's next round could have opened the
    // range elsewhere: the held writes land just after the new owner read the stream, before
    // the clients' retries (with the same ids) reach it.
    let cut_ms = uniform_u(rng, [knobs.lease_ms, knobs.lease_ms + knobs.manager_tick_ms + knobs.rpc_timeout_ms]);
    let mut out = vec![
        Planned { at_ms, on: on.clone(), until: None, duration_ms: cut_ms, fault: Fault::OneWay(owner.to_string(), "lock-1".into()) },
        Planned { at_ms, on: on.clone(), until: None, duration_ms: cut_ms, fault: Fault::Delay(owner.to_string(), "store-1".into()) },
    ];
    let fence_ms = uniform_u(rng, [knobs.lease_ms, 2 * knobs.lease_ms + knobs.rpc_timeout_ms]);
    for n in 1..=scenario.topology.servers {
        out.push(Planned { at_ms, on: on.clone(), until: None, duration_ms: fence_ms, fault: Fault::DelayNext(format!("server-{n}"), "store-1".into(), "fence") });
    }
    out
}

/// A frontend left on an old map across a handoff: every message from the authority to one
/// frontend (its map answers) is held, from a handoff step on, for a background refresh
/// (`renew_interval_ms`) up to the staleness limit past which it fails fast
/// (`map_staleness_ms`), so it routes on the map from before the handoff meanwhile.
fn stale_frontend(rng: &mut impl Rng, at_ms: u64, scenario: &Scenario, knobs: &partmap::config::Knobs) -> Vec<Planned> {
    const STEPS: [(&str, &str); 5] = [("paused", "@move-source"), ("paused", "@reshape-parent-owner"), ("drained", "@move-source"), ("map_commit", "lock-1"), ("lease_expired", "lock-1")];
    let (event, node) = STEPS[below(rng, STEPS.len() as u64) as usize];
    let on = (below(rng, 4) > 0).then(|| crate::scenario::Trigger { event: event.into(), node: node.into(), range: None, epoch: None, count: 1 + below(rng, 2) as u32, delay_ms: 0 });
    let frontend = format!("frontend-{}", 1 + below(rng, u64::from(scenario.topology.frontends.max(1))));
    let duration_ms = uniform_u(rng, [knobs.renew_interval_ms.max(1), knobs.map_staleness_ms.max(knobs.renew_interval_ms + 1)]);
    vec![Planned { at_ms, on, until: None, duration_ms, fault: Fault::Delay("lock-1".into(), frontend) }]
}

/// Commands that outlive their flow. Half the time every message from the leader to a role's
/// holder (a move's source or target, a split's or merge's parent owner, a failover target) is
/// held, for a length drawn around the protocol's margins. Otherwise one command is held past
/// the flow that sent it: the next pause to a move's source (half of these) or a reshape's parent
/// owner, the next release to a move's source, or the next open to a failover target, for two to two and a
/// half drain timeouts plus up to two leases (`2 * store_timeout + rpc_timeout` each: longer
/// than the leader's call, its retry and the flow's next steps), while newer commands pass;
/// and for a held pause to a move's source, the move's target crashes for a lease or two when
/// the source next pauses (the leader's retry, just before it asks the target to finish), so
/// the move aborts and the range is reopened at the source at a newer epoch before the old
/// pause arrives there.
fn late_commands(rng: &mut impl Rng, at_ms: u64, knobs: &partmap::config::Knobs, random: &crate::scenario::RandomFaults, owner: &str) -> Vec<Planned> {
    const ROLES: [&str; 4] = ["@move-source", "@move-target", "@reshape-parent-owner", "@failover-target"];
    if below(rng, 2) == 0 {
        let role = ROLES[below(rng, ROLES.len() as u64) as usize];
        let on = aimed_trigger(rng, knobs, owner);
        let duration_ms = margin_ms(rng, knobs, random.partition_ms);
        return vec![Planned { at_ms, on, until: None, duration_ms, fault: Fault::Delay("@leader".into(), role.into()) }];
    }
    // A held pause to a move's source half the time: the move is the flow with most steps after
    // its pause (drain, finish, commit, release or abort and rollback).
    const HELD: [(&str, &str); 3] = [("@reshape-parent-owner", "pause"), ("@move-source", "release"), ("@failover-target", "open")];
    let (role, kind) = if below(rng, 2) == 0 { ("@move-source", "pause") } else { HELD[below(rng, HELD.len() as u64) as usize] };
    // Armed once the flow is under way, before the command: a move's target finished a
    // pre-copy round, or a move's source (a reshape's parent owner) admitted an append while the
    // move (the reshape) is in flight, which covers stop-and-copy (the pause comes next); a
    // move's source paused (its release follows the commit); a map commit (a failover assigns
    // its target, and the open follows); or at `at_ms`.
    let step = match (role, kind) {
        ("@move-source", "pause") if below(rng, 2) == 0 => ("precopied", "@move-target"),
        ("@move-source", "pause") => ("admit", "@move-source"),
        ("@reshape-parent-owner", _) => ("admit", "@reshape-parent-owner"),
        ("@move-source", _) => ("paused", "@move-source"),
        _ => ("map_commit", "lock-1"),
    };
    let on = (below(rng, 4) > 0).then(|| crate::scenario::Trigger { event: step.0.into(), node: step.1.into(), range: None, epoch: None, count: 1, delay_ms: 0 });
    let drain_ms = 2 * knobs.store_timeout_ms + knobs.rpc_timeout_ms;
    let hold_ms = uniform_u(rng, [2 * drain_ms, 2 * drain_ms + drain_ms / 2 + 2 * knobs.lease_ms]);
    let mut out = vec![Planned { at_ms, on: on.clone(), until: None, duration_ms: hold_ms, fault: Fault::DelayNext("@leader".into(), role.into(), kind) }];
    if (role, kind) == ("@move-source", "pause") {
        // Down when the leader, its held pause timed out, has paused the source again and asks
        // the target to finish: on the source's pause (the second one, the first being held),
        // so not before any pause left (a target lost then aborts the move with none).
        let down_ms = uniform_u(rng, [knobs.lease_ms, 2 * knobs.lease_ms]);
        let paused = crate::scenario::Trigger { event: "paused".into(), node: "@move-source".into(), range: None, epoch: None, count: 1, delay_ms: 0 };
        out.push(Planned { at_ms, on: Some(paused), until: None, duration_ms: down_ms, fault: Fault::Crash("@move-target".into()) });
    }
    out
}

fn draw_one_aimed(rng: &mut impl Rng, at_ms: u64, knobs: &partmap::config::Knobs, random: &crate::scenario::RandomFaults, owner: String) -> Planned {
    let on = aimed_trigger(rng, knobs, &owner);
    let triggered = on.is_some();
    const ROLES: [&str; 7] = ["@move-source", "@move-target", "@reshape-parent-owner", "@failover-target", "@leader", "@standby-manager", "@trigger-node"];
    let mut role = ROLES[below(rng, ROLES.len() as u64 - u64::from(!triggered)) as usize].to_string();
    if below(rng, 4) == 0 {
        role = owner.clone();
    }
    let other = if below(rng, 2) == 0 { "lock-1" } else { "store-1" }.to_string();
    let long = random.partition_ms;
    let mut duration_ms = margin_ms(rng, knobs, long);
    let fault = match below(rng, 10) {
        0 if role == "@leader" || below(rng, 2) == 0 => {
            // The leader crashes; half the time it is back before its lease ran out, and leads
            // again at the same term with an empty memory.
            if below(rng, 2) == 0 {
                duration_ms = 1 + below(rng, knobs.lease_ms.saturating_sub(knobs.lease_margin_ms).max(2));
            }
            Fault::Crash("@leader".into())
        }
        0 | 1 => Fault::Crash(role),
        2 => Fault::Pause(role),
        3 => Fault::Isolate(role),
        4 => Fault::OneWay(role, other),
        5 => Fault::OneWay(other, role),
        6 => Fault::Delay(role, other),
        7 => {
            // The pre-copy chunks a move's target reads diverge from the stream.
            Fault::Corrupt("store-1".into(), "@move-target".into())
        }
        _ => {
            // The next message whose delay matters most for the role's step.
            const HOLDS: [(&str, &str, &str); 11] = [
                ("@owner", "lock-1", "renew_session"),
                ("lock-1", "@owner", "session_renewed"),
                ("@owner", "store-1", "store_append"),
                ("@move-target", "store-1", "fence"),
                ("@failover-target", "store-1", "fence"),
                ("@leader", "@move-source", "pause"),
                ("@move-source", "@leader", "paused_at"),
                ("@leader", "lock-1", "cas_map"),
                ("@leader", "@reshape-parent-owner", "pause"),
                ("@leader", "@move-source", "release"),
                ("@leader", "@reshape-parent-owner", "release"),
            ];
            let (from, to, kind) = HOLDS[below(rng, HOLDS.len() as u64) as usize];
            let name = |n: &str| if n == "@owner" { owner.clone() } else { n.to_string() };
            Fault::DelayNext(name(from), name(to), kind)
        }
    };
    Planned { at_ms, on, until: None, duration_ms, fault }
}

/// One request for the operator node: sent at `at_ms` or, with `on`, once that trigger
/// (armed at `at_ms`) fires.
#[derive(Clone, Debug)]
pub struct OperatorStep {
    /// When it is sent (with `on`: when the trigger is armed), ms of simulated time.
    pub at_ms: u64,
    /// The protocol event it waits for, if any (a scenario entry's `on`).
    pub on: Option<crate::scenario::Trigger>,
    /// What it asks.
    pub action: OperatorAction,
    /// The schedule entry's request, for the history.
    pub request: Fault,
}

/// An operator request at a time, for the operator node to send to the authority.
#[derive(Clone, Debug, PartialEq)]
pub enum OperatorAction {
    /// Move the range holding `key` to `server-N`.
    Move {
        /// A key of the range to move; the operator looks up its range in the current map.
        key: Vec<u8>,
        /// The target server's number N (`server-N`).
        to: u32,
    },
    /// Split the range holding `at` at `at`.
    Split {
        /// The split key; the operator looks up its range in the current map.
        at: Vec<u8>,
    },
    /// Merge the range holding `left` with the range holding `right`.
    Merge {
        /// A key of the left range.
        left: Vec<u8>,
        /// A key of the right range.
        right: Vec<u8>,
    },
    /// Drain `server-N` (`on`), or stop draining it.
    Drain {
        /// The server's number N (`server-N`).
        server: u32,
        /// `true`: start draining it; `false`: stop.
        on: bool,
    },
    /// Ask the leader to step down and hand over to a standby.
    LeaderTransfer,
}

impl FaultPlan {
    /// The operator requests of the plan, sorted by `at_ms`: a drain becomes a start and an
    /// end.
    pub fn operator_actions(&self) -> Vec<OperatorStep> {
        let server = |name: &str| name.strip_prefix("server-").and_then(|n| n.parse().ok()).expect("validated server name");
        let mut out = Vec::new();
        for p in &self.faults {
            let step = |at_ms: u64, action: OperatorAction| OperatorStep { at_ms, on: p.on.clone(), action, request: p.fault.clone() };
            match &p.fault {
                Fault::Request(Request::Move(key, to)) => out.push(step(p.at_ms, OperatorAction::Move { key: key.clone().into_bytes(), to: server(to) })),
                Fault::Request(Request::Split(at)) => out.push(step(p.at_ms, OperatorAction::Split { at: at.clone().into_bytes() })),
                Fault::Request(Request::Merge(left, right)) => out.push(step(p.at_ms, OperatorAction::Merge { left: left.clone().into_bytes(), right: right.clone().into_bytes() })),
                Fault::Request(Request::LeaderTransfer) => out.push(step(p.at_ms, OperatorAction::LeaderTransfer)),
                // A drain takes no trigger (validated): it ends `duration_ms` after `at_ms`.
                Fault::Request(Request::Drain(node)) => {
                    out.push(step(p.at_ms, OperatorAction::Drain { server: server(node), on: true }));
                    out.push(step(p.at_ms + p.duration_ms, OperatorAction::Drain { server: server(node), on: false }));
                }
                _ => {}
            }
        }
        out.sort_by_key(|o| o.at_ms);
        out
    }
}

fn links(world: &World, fault: &Fault) -> Vec<(String, String)> {
    match fault {
        Fault::Crash(_) | Fault::Pause(_) | Fault::Delay(..) | Fault::Duplicate(..) | Fault::SlowDisk(..) | Fault::Corrupt(..) | Fault::Reorder(..) | Fault::DelayNext(..) | Fault::Request(_) => Vec::new(),
        Fault::Isolate(n) => world.links_across(std::slice::from_ref(n)),
        Fault::Split(side) => world.links_across(side),
        Fault::OneWay(a, b) => vec![(a.clone(), b.clone())],
    }
}

/// The operator node (`operator`, not faulted): send each request of `actions` to the authority
/// at its time, one after another in the order of their times (a request with a trigger is
/// sent once its trigger fires, armed at its time, apart from the others), retrying (500 ms apart, at most [`OPERATOR_ATTEMPTS`] attempts) while the
/// authority does not answer or refuses the request (e.g. before the leader bootstrapped the
/// map, or while a range is busy). A move, split or merge names keys; the operator looks up
/// their ranges in the map first, at every attempt. Each request's verdict goes into the
/// history ([`What::OperatorVerdict`]): accepted, or refused with the last reason.
pub async fn operator(actions: Vec<OperatorStep>, knobs: partmap::config::Knobs) {
    let rpc = partmap::seam::Rpc::bind(partmap::config::operator_addr(), &crate::workload::client_net(&knobs)).await;
    // A request with a trigger: armed at its own time and sent when the trigger fires,
    // whatever the requests before it are doing (a task of its own, spawned first; only for
    // these: a run without triggered requests spawns nothing new, and keeps its trace).
    let (triggered, timed): (Vec<OperatorStep>, Vec<OperatorStep>) = actions.into_iter().partition(|a| a.on.is_some());
    let triggered: Vec<_> = triggered.into_iter().map(|step| partmap::seam::spawn(triggered_request(rpc.clone(), knobs.clone(), step))).collect();
    for step in timed {
        let now = partmap::seam::now_ms();
        if step.at_ms > now {
            sleep_ms(step.at_ms - now).await;
        }
        send_request(&rpc, &knobs, step.action, step.request).await;
    }
    // The node's tasks live as long as this one: wait for the triggered requests.
    for t in triggered {
        let _ = t.await;
    }
}

/// An operator request with a trigger (`on`): armed at its `at_ms`, sent once the trigger fires
/// (and its `delay_ms`).
async fn triggered_request(rpc: std::rc::Rc<partmap::seam::Rpc>, knobs: partmap::config::Knobs, step: OperatorStep) {
    let OperatorStep { at_ms, on, action, request } = step;
    let Some(on) = on else { return };
    let now = partmap::seam::now_ms();
    if at_ms > now {
        sleep_ms(at_ms - now).await;
    }
    let what = format!("{request} on {} by {} #{}, armed at {at_ms} ms", on.event, on.node, on.count);
    fired_on(&on, what).await;
    if on.delay_ms > 0 {
        sleep_ms(on.delay_ms).await;
    }
    send_request(&rpc, &knobs, action, request).await;
}

/// Send `action` (see [`operator_request`]) and put its verdict in the history.
async fn send_request(rpc: &partmap::seam::Rpc, knobs: &partmap::config::Knobs, action: OperatorAction, request: Fault) {
    let (attempts, verdict) = operator_request(rpc, knobs, &action).await;
    let (op, refused) = match verdict {
        Ok(op) => (op, None),
        Err(reason) => (String::new(), Some(reason)),
    };
    record(What::OperatorVerdict { request: Box::new(request), op, attempts, refused });
}

/// Send one operator request (see [`operator`]): `(attempts, Ok(the op sent, readable))` once
/// the authority took it, or `Err(the last reason)`.
async fn operator_request(rpc: &partmap::seam::Rpc, knobs: &partmap::config::Knobs, action: &OperatorAction) -> (u32, Result<String, String>) {
    use partmap::ids::ServerId;
    use partmap::map::MapOp;
    use partmap::msg::{CasRefusal, Msg};
    let lock = partmap::config::lock_addr();
    let mut refused = String::from("the authority did not answer");
    for attempt in 1..=OPERATOR_ATTEMPTS {
        if attempt > 1 {
            sleep_ms(500).await;
        }
        let op = match action {
            OperatorAction::LeaderTransfer => match rpc.call(lock, Msg::TransferLeader, knobs.rpc_timeout_ms).await {
                Ok(Msg::TransferAsked { holder: Some(m) }) => return (attempt, Ok(format!("leader transfer asked of manager-{m}"))),
                Ok(Msg::TransferAsked { holder: None }) => {
                    refused = String::from("no manager holds the leader lease");
                    continue;
                }
                _ => {
                    refused = String::from("the authority did not answer");
                    continue;
                }
            },
            OperatorAction::Drain { server, on } => MapOp::Drain { server: ServerId(*server), on: *on },
            OperatorAction::Move { .. } | OperatorAction::Split { .. } | OperatorAction::Merge { .. } => {
                let Ok(Msg::Map { map }) = rpc.call(lock, Msg::GetMap, knobs.rpc_timeout_ms).await else {
                    refused = String::from("the authority did not answer a map read");
                    continue;
                };
                let range = |key: &[u8]| map.lookup(key).map(|r| r.id);
                let (a, b) = match action {
                    OperatorAction::Move { key, .. } | OperatorAction::Split { at: key } => (range(key), None),
                    OperatorAction::Merge { left, right } => (range(left), range(right)),
                    OperatorAction::Drain { .. } | OperatorAction::LeaderTransfer => unreachable!("matched above"),
                };
                let Some(a) = a else {
                    refused = String::from("no range holds the key (the map has no rows yet)");
                    continue;
                };
                match action {
                    OperatorAction::Move { to, .. } => MapOp::RequestMove { range: a, to: ServerId(*to) },
                    OperatorAction::Split { at } => MapOp::RequestSplit { range: a, at: at.clone() },
                    _ => MapOp::RequestMerge { left: a, right: b.expect("the map has rows") },
                }
            }
        };
        match rpc.call(lock, Msg::Admin { ops: vec![op.clone()] }, knobs.rpc_timeout_ms).await {
            Ok(Msg::CasResult { error: None, .. }) => return (attempt, Ok(op_text(&op))),
            Ok(Msg::CasResult { error: Some(e), .. }) => {
                refused = format!("{e} (sent as {})", op_text(&op));
                // Only a state that passes (no map yet, a range busy or not yet active) is
                // worth asking again; a bad key or a pair that is not adjacent stays so.
                if !matches!(&e, CasRefusal::Map(m) if m.may_pass()) {
                    return (attempt, Err(refused));
                }
            }
            _ => refused = String::from("the authority did not answer"),
        }
    }
    (OPERATOR_ATTEMPTS, Err(refused))
}

/// A map op of the operator, readable: `split r1 at k000250`, `merge r3 r4`, `move r2 to
/// server-3`, `drain server-2 on`.
fn op_text(op: &partmap::map::MapOp) -> String {
    use partmap::map::MapOp;
    match op {
        MapOp::RequestSplit { range, at } => format!("split {range} at {}", partmap::ids::show_key(at)),
        MapOp::RequestMerge { left, right } => format!("merge {left} {right}"),
        MapOp::RequestMove { range, to } => format!("move {range} to server-{}", to.0),
        MapOp::Drain { server, on } => format!("drain server-{} {}", server.0, if *on { "on" } else { "off" }),
        other => format!("{other:?}"),
    }
}

/// A triggered entry, readable, for the list of triggers that never fired: `crash @leader on
/// paused by @move-source (range 3) #2, armed at 1200 ms`.
fn trigger_text(p: &Planned) -> String {
    let Some(on) = &p.on else { return p.fault.to_string() };
    let mut filter = String::new();
    if let Some(r) = on.range {
        filter.push_str(&format!(" range {r}"));
    }
    if let Some(e) = on.epoch {
        filter.push_str(&format!(" epoch {e}"));
    }
    format!("{} on {} by {}{filter} #{}, armed at {} ms", p.fault, on.event, on.node, on.count, p.at_ms)
}

/// Wait for trigger `on` (armed now): the event's name and the node whose event fired it.
/// `what` names the schedule entry for the list of watches that never fired.
async fn fired_on(on: &crate::scenario::Trigger, what: String) -> (&'static str, madsim::task::NodeId) {
    let event = partmap::event::Event::NAMES.iter().find(|n| **n == on.event).expect("validated event name");
    let node = if crate::fault::aim::is_aimed(&on.node) { Err(on.node.as_str()) } else { Ok(crate::fault::trigger::id_of(&on.node).expect("validated node name")) };
    let by = crate::fault::trigger::fired(crate::fault::trigger::Wait { event, node, range: on.range, epoch: on.epoch, count: on.count, what }).await;
    (event, by)
}

/// Wait as long as fault `p` lasts once applied: `duration_ms`, or with `until`, until its
/// trigger fires (counted from now; then its `delay_ms`), if that comes first.
async fn heal_wait(p: &Planned) {
    let Some(until) = &p.until else { return sleep_ms(p.duration_ms).await };
    let what = format!("{} until {} by {} #{} (else {} ms)", p.fault, until.event, until.node, until.count, p.duration_ms);
    if let Some((event, by)) = partmap::seam::timeout_ms(p.duration_ms, fired_on(until, what)).await {
        let node = crate::fault::trigger::name_of(by).unwrap_or_else(|| until.node.clone());
        record(What::Triggered { event, node, count: until.count, delay_ms: until.delay_ms });
        if until.delay_ms > 0 {
            sleep_ms(until.delay_ms).await;
        }
    }
}

/// Count a fault of kind `counter` that took effect, and note it as an aimed one if its plan
/// entry named a role.
fn took_effect(counts: &RefCell<BTreeMap<&'static str, u64>>, counter: &'static str, aimed: bool) {
    *counts.borrow_mut().entry(counter).or_default() += 1;
    if aimed {
        crate::fault::aim::note_injected(partmap::seam::now_us());
    }
}

/// How many times the operator sends one request before it records it as refused.
pub const OPERATOR_ATTEMPTS: u32 = 5;

/// Inject every fault of `plan` at its time and undo it after its duration. Counts injected
/// faults by kind into `counts` (a crash of a node that is already down is skipped).
///
/// The tasks run on `node`, a node of the harness's that the run kills at its end: a fault
/// whose trigger never fired waits forever, and a task left waiting on the supervisor's node
/// would outlive the runtime with the world it holds (a leak per seed).
///
/// One driver task walks the plan in time order and starts each fault's own task at its
/// `at_ms` (at 1 ms at the earliest, as madsim rounds a sleep up), so the run up to a fault's
/// start does not depend on the faults after it: adding, moving or dropping a fault at `t`
/// leaves the run before `t` bit for bit the same (the explorer's checkpoint-and-branch by
/// re-execution relies on it). Spawning a task per fault at the start would change madsim's
/// random task order from the first millisecond on.
pub fn spawn(node: &madsim::runtime::NodeHandle, world: Rc<RefCell<World>>, plan: &FaultPlan, counts: Rc<RefCell<BTreeMap<&'static str, u64>>>) {
    let mut faults = plan.faults.clone();
    faults.sort_by_key(|p| p.at_ms);
    let handle = node.clone();
    node.spawn_local(async move {
        let start = madsim::time::Instant::now();
        for p in faults {
            let due = start + std::time::Duration::from_millis(p.at_ms.max(1));
            if madsim::time::Instant::now() < due {
                madsim::time::sleep_until(due).await;
            }
            handle.spawn_local(inject(p, world.clone(), counts.clone()));
        }
    });
}

/// Inject one planned fault, from its start on: wait for its trigger, if any, resolve its
/// roles, apply it and, for a fault with a length, heal it.
async fn inject(p: Planned, world: Rc<RefCell<World>>, counts: Rc<RefCell<BTreeMap<&'static str, u64>>>) {
    let mut emitter = None;
    if let Some(on) = &p.on {
        let (event, by) = fired_on(on, trigger_text(&p)).await;
        let by = crate::fault::trigger::name_of(by).unwrap_or_else(|| on.node.clone());
        record(What::Triggered { event, node: by.clone(), count: on.count, delay_ms: on.delay_ms });
        emitter = Some(by);
        if on.delay_ms > 0 {
            sleep_ms(on.delay_ms).await;
        }
    }
    // Roles resolve now, to whoever holds them at this moment.
    let aimed = p.fault.nodes().iter().any(|n| crate::fault::aim::is_aimed(n));
    let p = match crate::fault::aim::resolve_fault(&p.fault, emitter.as_deref()) {
        Ok(fault) => Planned { fault, ..p },
        Err(reason) => {
            record(What::FaultSkipped { fault: Box::new(p.fault.clone()), reason });
            return;
        }
    };
    let counter = p.fault.kind();
    match &p.fault {
        Fault::Crash(node) => {
            if !world.borrow_mut().kill(node, p.duration_ms) {
                return;
            }
            took_effect(&counts, counter, aimed);
            heal_wait(&p).await;
            world.borrow_mut().restart(node);
        }
        Fault::Request(_) => {
            // Sent by the operator node (see `operator`); only logged and counted here.
            record(What::Fault { fault: Box::new(p.fault.clone()), duration_ms: p.duration_ms, crash: None });
            took_effect(&counts, counter, aimed);
        }
        Fault::DelayNext(from, to, kind) => {
            record(What::Fault { fault: Box::new(p.fault.clone()), duration_ms: p.duration_ms, crash: None });
            if p.until.is_none() {
                world.borrow_mut().hold_next(from, to, kind, p.duration_ms);
                took_effect(&counts, counter, aimed);
                return;
            }
            // Held until the event (or `duration_ms`): the release ends the hold, whether
            // the message is already held or not yet sent.
            let release = partmap::seam::Release::default();
            world.borrow_mut().hold_next_until(from, to, kind, p.duration_ms, release.clone());
            took_effect(&counts, counter, aimed);
            heal_wait(&p).await;
            release.release();
        }
        Fault::Delay(from, to) | Fault::Duplicate(from, to) | Fault::Corrupt(from, to) | Fault::Reorder(from, to) => {
            let kind = match p.fault {
                Fault::Delay(..) => LinkFault::Hold,
                Fault::Duplicate(..) => LinkFault::Duplicate,
                Fault::Reorder(..) => LinkFault::Reorder,
                _ => LinkFault::Corrupt,
            };
            record(What::Fault { fault: Box::new(p.fault.clone()), duration_ms: p.duration_ms, crash: None });
            world.borrow_mut().fault_link(from, to, kind);
            took_effect(&counts, counter, aimed);
            heal_wait(&p).await;
            world.borrow_mut().unfault_link(from, to, kind);
            record(What::FaultEnd { fault: Box::new(p.fault.clone()) });
        }
        Fault::SlowDisk(node, extra_ms) => {
            record(What::Fault { fault: Box::new(p.fault.clone()), duration_ms: p.duration_ms, crash: None });
            world.borrow_mut().slow_disk(node, *extra_ms);
            took_effect(&counts, counter, aimed);
            heal_wait(&p).await;
            world.borrow_mut().slow_disk(node, 0);
            record(What::FaultEnd { fault: Box::new(p.fault.clone()) });
        }
        Fault::Pause(node) => {
            if !world.borrow_mut().pause(node, p.duration_ms) {
                return;
            }
            took_effect(&counts, counter, aimed);
            heal_wait(&p).await;
            world.borrow_mut().resume(node);
        }
        fault => {
            let cut = links(&world.borrow(), fault);
            record(What::Fault { fault: Box::new(fault.clone()), duration_ms: p.duration_ms, crash: None });
            for (a, b) in &cut {
                world.borrow_mut().cut(a, b);
            }
            took_effect(&counts, counter, aimed);
            heal_wait(&p).await;
            for (a, b) in &cut {
                world.borrow_mut().uncut(a, b);
            }
            record(What::FaultEnd { fault: Box::new(fault.clone()) });
        }
    }
}
