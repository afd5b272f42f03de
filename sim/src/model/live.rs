//! Bounded liveness (issue 32: "from every reachable state, once the faults heal, a state
//! where every range is active and accepts an append is reachable"). For a state the search
//! reached, the faults heal ([`healed`]: no more drops, duplications, crashes or cuts; a cut
//! link is restored, a crashed server restarts when its restart time comes; time may move
//! [`HEAL_MS`] past the state's clock, over the horizon; every manager may start a round on
//! each tick, without the round budget), then:
//!
//! 1. a deterministic fair schedule ([`heal_step`]: deliver the oldest message, else run a
//!    server task that can go on (or end the store's pending sync), restart a server (or the
//!    store), start a leader round on its tick, time out
//!    a call, then move the clock to the next deadline) runs until a state is live
//!    ([`not_live`] is `None`), for at most [`HEAL_MS`] of simulated time and [`HEAL_STEPS`]
//!    steps; the states it passes are memoized by key, so trajectories from different states
//!    that merge are run once (a memoized live outcome is a witness; a memoized failure only
//!    sends the state to step 2);
//! 2. when the schedule did not reach a live state, a breadth-first search of the healed
//!    system from the state ([`confirm`]: every interleaving of the same actions, no fault,
//!    within the same time, at most [`CONFIRM_STATES`] states) looks for one. Only when that
//!    search is exhausted with none is the state reported (`liveness`), so a reported
//!    violation is never an artefact of one schedule. A search cut at its state bound leaves
//!    the state undecided (counted, and the model's search is then not exhausted).
//!
//! "Live" is judged as the issue words it ([`not_live`]): every live row of the authority's
//! map is active with no transfer or reshape naming it in the journal, and its owner's real
//! [`partmap::server::ServerCore`], up, holds it active at the row's epoch, unpaused, with a
//! valid session lease, and admits an append at that epoch (asked of the core itself, on a
//! clone). Idea: a bounded form of TLA+'s `<>` under weak fairness of the healed system's
//! actions, checked as reachability (a "possibility" property, as TLC checks `[]<>` only on
//! finite graphs); the heal schedule first, the search as the proof of a failure.

use super::world::{Action, World};
use partmap::ids::OpId;
use partmap::map::RangeState;
use std::collections::{HashMap, HashSet, VecDeque};

/// How far past the state's clock the heal may move time (ms of simulated time): past the
/// default lease (2 s) and the failover's, a few leader ticks, request timeouts and renewals.
pub const HEAL_MS: u64 = 10_000;
/// The most steps one heal schedule takes.
pub const HEAL_STEPS: usize = 5_000;
/// The most states [`confirm`]'s search of the healed system keeps.
pub const CONFIRM_STATES: u64 = 200_000;
/// The round budget a healed manager has (reset after every step, so it is not a difference
/// between states): rounds are bounded by the tick and the time the heal has.
const HEAL_ROUNDS: u32 = 1 << 20;

/// The probe append's id: the harness's probe client (0), a sequence no client uses.
const PROBE: OpId = OpId { client: 0, seq: u64::MAX };

/// Why `w` is not live, naming the first live range (in key order) that does not accept an
/// append, its owner and the state it is in; `None` when every live range does.
pub fn not_live(w: &World) -> Option<String> {
    let map = w.authority.map();
    let rows = map.live_rows();
    if rows.is_empty() {
        return Some("the map has no live range".to_string());
    }
    for row in rows {
        let r = row.id;
        if row.state != RangeState::Active {
            return Some(format!("range {r}: {:?} at {} in the map (version {})", row.state, row.epoch, map.version));
        }
        if map.transfers.contains_key(&r) {
            return Some(format!("range {r}: a move of it is still in the journal (map version {})", map.version));
        }
        if map.reshapes.values().any(|x| x.parents.iter().any(|(p, _)| *p == r)) {
            return Some(format!("range {r}: a split or merge of it is still in the journal (map version {})", map.version));
        }
        let Some(owner) = row.owner else { return Some(format!("range {r}: active with no owner in the map")) };
        let Some(slot) = w.servers.get(owner.0 as usize - 1) else { return Some(format!("range {r}: owner {owner} is not a server of the model")) };
        if slot.down_until.is_some() {
            return Some(format!("range {r}: owner {owner} is down"));
        }
        let core = &slot.core;
        let Some(held) = core.ranges.get(&r) else { return Some(format!("range {r}: owner {owner} does not hold it (map: {} active)", row.epoch)) };
        if held.row.epoch != row.epoch {
            return Some(format!("range {r}: owner {owner} holds it at {}, the map at {}", held.row.epoch, row.epoch));
        }
        if held.state != partmap::server::HeldState::Active {
            return Some(format!("range {r}: owner {owner} holds it {:?} at {}", held.state, row.epoch));
        }
        if held.paused {
            return Some(format!("range {r}: owner {owner} holds it paused at {} (since {:.3}s)", row.epoch, held.paused_at_us.saturating_sub(w.start_us) as f64 / 1e6));
        }
        if core.session.is_none() || w.now_us >= core.lease_valid_until_us {
            return Some(format!("range {r}: owner {owner} has no valid session lease (session {:?})", core.session));
        }
        let mut probe = core.clone();
        if let Err(refusal) = probe.admit(r, row.epoch, &row.start, PROBE, w.now_us) {
            return Some(format!("range {r}: owner {owner} refuses an append at {}: {refusal:?}", row.epoch));
        }
    }
    None
}

/// `w` with its faults healed: no more drops, duplications, crashes or cuts (the bounds' fault
/// budgets set to 0), every cut link restored, time free to move [`HEAL_MS`] past now (over
/// the horizon), each manager rounding on its tick (as `manager::run` does) with no round
/// budget. A crashed server stays down until its restart time, as before.
pub fn healed(w: &World) -> World {
    let mut h = w.clone();
    h.cut.clear();
    let b = &mut h.bounds;
    b.max_drops = 0;
    b.max_dups = 0;
    b.max_delays = 0;
    b.max_corrupts = 0;
    b.max_crashes = 0;
    b.max_cuts = 0;
    b.ticked = true;
    b.horizon_ms = (w.now_us - w.start_us).div_ceil(1000) + HEAL_MS;
    normalize(&mut h);
    h
}

/// Give every manager the heal's round budget again.
fn normalize(h: &mut World) {
    for m in &mut h.managers {
        m.rounds_left = HEAL_ROUNDS;
    }
}

/// The healed system's actions: every enabled one but the client's appends (the client has
/// stopped; the check is whether the system would take one) and store crashes (a fault: the
/// store's crash budget is left as it is, since it also says whether the store's sync is a
/// step of its own, which a pending sync needs).
fn healed_actions(h: &World) -> Vec<Action> {
    h.enabled().into_iter().filter(|a| !matches!(a, Action::SendAppend { .. } | Action::StoreCrash { .. })).collect()
}

/// The heal schedule's next action in `h`, deterministic and fair: deliver the oldest message
/// in flight; else end the store's oldest pending sync or run a server task that can go on
/// (the store first, then the lowest server, then task id); else restart the store or a
/// server; else start a round (lowest manager); else time out a manager's call or a
/// server's call or wait; else move the clock to the next deadline. `None`: nothing is
/// enabled (within the heal's time).
pub fn heal_step(h: &World) -> Option<Action> {
    let rank = |a: &Action| -> Option<(u8, u64, u64)> {
        Some(match a {
            Action::Deliver(0) => (0, 0, 0),
            Action::StoreSync => (1, 0, 0),
            Action::Task { server, task, timed_out: false } => (1, u64::from(*server), *task),
            Action::StoreRestart => (2, 0, 0),
            Action::Restart(s) => (2, u64::from(*s), 0),
            Action::StartRound(c) => (3, u64::from(*c), 0),
            Action::LeaderTimeout(c) => (4, u64::from(*c), 0),
            Action::Task { server, task, timed_out: true } => (5, u64::from(*server), *task),
            Action::Advance => (6, 0, 0),
            _ => return None,
        })
    };
    healed_actions(h).into_iter().filter_map(|a| rank(&a).map(|r| (r, a))).min_by_key(|(r, _)| *r).map(|(_, a)| a)
}

/// One run of the heal schedule from `w`.
pub struct HealRun {
    /// It reached a live state (or a state memoized as reaching one).
    pub live: bool,
    /// Steps it took.
    pub steps: usize,
    /// The state it ended in.
    pub end: World,
    /// With `record`: the steps, as the transcript shows them (node, input, outputs).
    pub transcript: Vec<(String, String, Vec<String>)>,
    /// It ended on a memoized state.
    pub memo_hit: bool,
}

/// Run the heal schedule from `w` (healed first). With `memo`, each state's key is looked up
/// (an outcome found ends the run with it) and every state passed is recorded with the
/// outcome. With `record`, the transcript is kept.
pub fn heal(w: &World, memo: Option<&mut HashMap<u128, bool>>, record: bool) -> HealRun {
    let mut h = healed(w);
    let mut keys = Vec::new();
    let mut transcript = Vec::new();
    let (mut steps, mut live, mut memo_hit) = (0, false, false);
    loop {
        if not_live(&h).is_none() {
            live = true;
            break;
        }
        if let Some(m) = memo.as_deref() {
            let k = h.key();
            if let Some(&known) = m.get(&k) {
                live = known;
                memo_hit = true;
                break;
            }
            keys.push(k);
        }
        if steps >= HEAL_STEPS {
            break;
        }
        let Some(a) = heal_step(&h) else { break };
        let line = h.apply(&a);
        normalize(&mut h);
        if record {
            transcript.push(line);
        }
        steps += 1;
    }
    if let Some(m) = memo {
        for k in keys {
            m.insert(k, live);
        }
    }
    HealRun { live, steps, end: h, transcript, memo_hit }
}

/// What [`confirm`]'s search of the healed system found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmed {
    /// A live state is reachable (after this many states).
    Reachable(u64),
    /// The search was exhausted (this many states) with no live state.
    Unreachable(u64),
    /// The search stopped at [`CONFIRM_STATES`] with no live state found.
    Undecided(u64),
}

/// Breadth-first search of the healed system from `w`: every interleaving of the healed
/// actions (no fault, no client append, time within [`HEAL_MS`] of `w`'s clock), with no
/// bound on messages in flight or depth, at most `max_states` states, for a live state.
pub fn confirm(w: &World, max_states: u64) -> Confirmed {
    let h = healed(w);
    let mut seen: HashSet<u128> = HashSet::new();
    seen.insert(h.key());
    let mut queue = VecDeque::from([h]);
    while let Some(s) = queue.pop_front() {
        if not_live(&s).is_none() {
            return Confirmed::Reachable(seen.len() as u64);
        }
        for a in healed_actions(&s) {
            let mut n = s.clone();
            n.apply(&a);
            normalize(&mut n);
            if !seen.insert(n.key()) {
                continue;
            }
            if not_live(&n).is_none() {
                return Confirmed::Reachable(seen.len() as u64);
            }
            if seen.len() as u64 >= max_states {
                return Confirmed::Undecided(seen.len() as u64);
            }
            queue.push_back(n);
        }
    }
    Confirmed::Unreachable(seen.len() as u64)
}

/// The liveness check's figures for one search.
#[derive(Clone, Debug, Default)]
pub struct LiveStats {
    /// States judged (healed).
    pub judged: u64,
    /// Of those, live by the heal schedule (or a memoized outcome of it).
    pub live_by_schedule: u64,
    /// Of those, not by the schedule but by [`confirm`]'s search.
    pub live_by_search: u64,
    /// Left undecided: the confirming search stopped at its state bound.
    pub undecided: u64,
    /// Steps the heal schedules took (memoized states not rerun).
    pub heal_steps: u64,
    /// Heal runs that ended on a memoized state.
    pub memo_hits: u64,
    /// States the confirming searches kept.
    pub confirm_states: u64,
    /// CPU seconds of the liveness check (this thread).
    pub cpu_s: f64,
}

/// A liveness violation's detail: what the heal did and where it stuck.
#[derive(Clone, Debug)]
pub struct Stuck {
    /// The heal schedule's steps from the stuck state (node, input, outputs).
    pub heal: Vec<(String, String, Vec<String>)>,
    /// Where the heal schedule ended: which range, which server, in which state.
    pub at_end: String,
    /// Simulated time the heal schedule took (ms).
    pub heal_ms: u64,
    /// States the confirming search of the healed system exhausted.
    pub searched: u64,
}

/// The liveness judge of one search: its memo and figures.
#[derive(Default)]
pub struct Judge {
    memo: HashMap<u128, bool>,
    /// The figures.
    pub stats: LiveStats,
}

impl Judge {
    /// Judge `w`: `None` when a live state is reachable from it once the faults heal (or the
    /// confirming search was cut: counted undecided), else the violation's message and detail.
    pub fn judge(&mut self, w: &World) -> Option<(String, Stuck)> {
        let cpu0 = crate::cpu::thread_cpu_ns();
        let out = self.judge_inner(w);
        self.stats.cpu_s += (crate::cpu::thread_cpu_ns() - cpu0) as f64 / 1e9;
        out
    }

    fn judge_inner(&mut self, w: &World) -> Option<(String, Stuck)> {
        self.stats.judged += 1;
        let run = heal(w, Some(&mut self.memo), false);
        self.stats.heal_steps += run.steps as u64;
        self.stats.memo_hits += u64::from(run.memo_hit);
        if run.live {
            self.stats.live_by_schedule += 1;
            return None;
        }
        match confirm(w, CONFIRM_STATES) {
            Confirmed::Reachable(n) => {
                self.stats.confirm_states += n;
                self.stats.live_by_search += 1;
                None
            }
            Confirmed::Undecided(n) => {
                self.stats.confirm_states += n;
                self.stats.undecided += 1;
                None
            }
            Confirmed::Unreachable(n) => {
                self.stats.confirm_states += n;
                let run = heal(w, None, true);
                let at_end = not_live(&run.end).unwrap_or_else(|| "live".to_string());
                let heal_ms = (run.end.now_us - w.now_us) / 1000;
                let message = format!("no state where every range is active and accepts an append is reachable once the faults heal (within {HEAL_MS} ms: the heal schedule's {} steps and a search of {n} healed states); the heal ends with {at_end}", run.steps);
                Some((message, Stuck { heal: run.transcript, at_end, heal_ms, searched: n }))
            }
        }
    }
}
