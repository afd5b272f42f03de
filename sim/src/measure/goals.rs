//! The goals registry: every named situation a run can reach ("sometimes" assertions, as
//! Antithesis's `sometimes` and TigerBeetle's coverage marks use them). Three sources, one
//! list ([`registry`]): the protocol-step goals the control plane declares where the step
//! happens ([`partmap::goal::Goal`], reported through a sink, outside the history), goals read
//! off the history here ([`DERIVED`]), and the coverage situations
//! ([`crate::measure::coverage::SITUATIONS`]). Each is reported per run with how often and when first
//! reached, per sweep with on how many seeds and the first seed; a sweep can require goals
//! (`sweep --require-goal NAME`), and `explore` steers toward the rare ones.

use crate::events::{Event, What};
use crate::fault::Fault;
use partmap::map::RangeState;
use partmap::msg::Refusal;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// Goals read off the history, with what each means.
pub const DERIVED: [(&str, &str); 8] = [
    ("stale_epoch_at_holder", "a request at an older epoch reached a server that still holds the range"),
    ("command_missed", "a manager's pause or release reached a server that held the range at neither that epoch nor a newer one"),
    ("copy_diverged", "a move target's copy diverged from its source and the target said so"),
    ("stale_write_fenced_after_publish", "the store fenced a write at an epoch older than one the map had already published for that range"),
    ("leader_restarted_within_lease", "the leader crashed and restarted before its lease ran out"),
    ("two_moves_in_flight", "two moves were in the journal at once"),
    ("move_during_reshape", "a move and a split or merge were in the journal at once"),
    ("aimed_fault_injected", "a fault aimed at a role was injected at the role's holder"),
];

/// Every goal's name and meaning: the control plane's, the derived ones, the coverage
/// situations, in report order.
pub fn registry() -> Vec<(&'static str, &'static str)> {
    let declared = partmap::goal::Goal::ALL.iter().map(|(_, n, d)| (*n, *d));
    declared.chain(DERIVED.iter().copied()).chain(crate::measure::coverage::SITUATIONS.iter().copied()).collect()
}

/// Whether `name` is a registered goal.
pub fn is_goal(name: &str) -> bool {
    registry().iter().any(|(n, _)| *n == name)
}

pub use crate::measure::coverage::Reached;

thread_local! {
    static DECLARED: RefCell<Vec<(&'static str, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Start collecting the control plane's goals on this thread (a run starts).
pub fn start() {
    DECLARED.with(|d| d.borrow_mut().clear());
    partmap::goal::set_sink(Some(Box::new(|g| {
        let t = crate::events::sim_now_us();
        DECLARED.with(|d| d.borrow_mut().push((g.name(), t)));
    })));
}

/// Stop collecting; the declared goals reached, in order.
pub fn finish() -> Vec<(&'static str, u64)> {
    partmap::goal::set_sink(None);
    DECLARED.with(|d| std::mem::take(&mut *d.borrow_mut()))
}

fn bump(out: &mut BTreeMap<&'static str, Reached>, name: &'static str, t_us: u64) {
    let r = out.entry(name).or_insert(Reached { count: 0, first_us: t_us });
    r.count += 1;
}

/// Every goal a run reached: `declared` (from [`finish`]), the derived ones read off
/// `events`, and `coverage` (with first times from [`crate::measure::coverage::situations_timed`]).
/// `lease_ms` is the run's lease.
pub fn reached(events: &[Event], declared: &[(&'static str, u64)], lease_ms: u64) -> BTreeMap<&'static str, Reached> {
    let mut out = BTreeMap::new();
    for (name, t) in declared {
        bump(&mut out, name, *t);
    }
    for (name, r) in crate::measure::coverage::situations_timed(events) {
        out.insert(name, r);
    }
    let mut map: Option<&partmap::map::PartitionMap> = None;
    let mut leader: Option<u32> = None;
    let mut leader_crashed: BTreeMap<String, u64> = BTreeMap::new();
    for ev in events {
        let t = ev.t_us;
        match &ev.what {
            What::Sys(partmap::event::Event::MapCommit { map: m, .. } | partmap::event::Event::MapRestored { map: m, .. }) => {
                map = Some(m);
                if m.transfers.len() >= 2 {
                    bump(&mut out, "two_moves_in_flight", t);
                }
                if !m.transfers.is_empty() && !m.reshapes.is_empty() {
                    bump(&mut out, "move_during_reshape", t);
                }
            }
            What::Sys(partmap::event::Event::Leader { manager, .. }) => leader = Some(*manager),
            What::Sys(partmap::event::Event::Refused { reason: Refusal::StaleEpoch { .. }, .. }) => bump(&mut out, "stale_epoch_at_holder", t),
            What::Sys(partmap::event::Event::Diverged { .. }) => bump(&mut out, "copy_diverged", t),
            What::Sys(partmap::event::Event::CommandMissed { .. }) => bump(&mut out, "command_missed", t),
            What::Sys(partmap::event::Event::Fenced { stream, epoch, .. }) => {
                let published = map.and_then(|m| m.rows.get(stream)).is_some_and(|r| r.epoch > *epoch && r.state == RangeState::Active);
                if published {
                    bump(&mut out, "stale_write_fenced_after_publish", t);
                }
            }
            What::Fault { fault, .. } => {
                if let Fault::Crash(n) = &**fault {
                    if leader.is_some_and(|l| *n == format!("manager-{l}")) {
                        leader_crashed.insert(n.clone(), t);
                    }
                }
            }
            What::FaultEnd { fault } => {
                if let Fault::Crash(n) = &**fault {
                    if leader_crashed.remove(n).is_some_and(|at| t < at + lease_ms * 1000) {
                        bump(&mut out, "leader_restarted_within_lease", t);
                    }
                }
            }
            What::Triggered { .. } => {}
            _ => {}
        }
    }
    out
}

/// Mark `aimed_fault_injected` in `goals` with the run's tally of aimed faults that took
/// effect (`injected`: how many, first at µs, from [`crate::fault::aim::injected`]): a skipped one (its
/// role was empty), one whose trigger never fired, and a crash of a node already down are not
/// counted.
pub fn count_aimed(goals: &mut BTreeMap<&'static str, Reached>, injected: (u64, u64)) {
    let (count, first_us) = injected;
    if count > 0 {
        goals.insert("aimed_fault_injected", Reached { count, first_us });
    }
}

/// Near misses: for each race the protocol must win, the run's smallest gap, µs, between the
/// two steps whose order it relies on. A search that sees a gap shrink is getting closer to
/// the window where the order flips (the explorer turns the gap's log2 bucket into a feature).
/// Each is measured on a correct system, where the order holds:
/// - `stale_write_after_fence`: a stale write refused at the store, after the fence of its
///   stream (a held write that just lost the race to the fence);
/// - `old_write_before_fence`: a write at an older epoch that landed at the store before the
///   fence of a newer epoch of its stream, the old owner having drained at that epoch (a
///   move, split or merge: a late write that just won the race);
/// - `old_write_before_takeover_fence`: the same where the old owner never drained at that
///   epoch (a takeover of a lost owner's range: a stale owner's late write that just won the
///   race against the new owner's fence);
/// - `admit_before_expiry`: an admission before the authority expired that server's session;
/// - `read_before_owner_change`: a strong read served on a range before a map commit gave it
///   another owner or epoch (a frontend still routing on the old map is close behind).
/// - `missed_command_before_reopen`: a manager's pause or release that missed its range at a
///   server (`command_missed`) before that server activated the range again at a newer epoch
///   (arriving after, it would have been a stale command at a holder);
/// - `corrupt_missed_copy`: a `corrupt` fault's window on a link into a server and the
///   nearest pre-copy round that server finished, before or after the window, or inside it
///   (its reads may have been sent before the window opened): a window over a round's reads
///   makes the copy diverge. (A `corrupt` flips bits in pre-copy reads only, not in the tail
///   read during the pause nor in a load: `partmap::seam::net`.)
///
/// Each race keeps its smallest gap with the times of its two steps and, for the races whose
/// first step is a message's arrival (an old write, a missed command), that message
/// ([`NearMiss::lever`]); for a
/// fault that missed its step, the fault's start and the step ([`NearMiss::cover`]); for the
/// races between a lease its holder trusts and the authority's end of it (an admission or a
/// strong read at the holder, then the expiry or the owner change), the two clocks whose
/// drift moves the steps toward each other ([`NearMiss::clocks`]).
pub fn near_misses(events: &[Event]) -> BTreeMap<&'static str, NearMiss> {
    use partmap::event::Event as Sys;
    let mut out: BTreeMap<&'static str, NearMiss> = BTreeMap::new();
    for (race, m) in missed_steps(events).into_iter().chain(missed_commands(events)) {
        keep_closest(&mut out, race, m);
    }
    let mut note = |name: &'static str, first_us: u64, second_us: u64, lever: Option<Lever>| {
        keep_closest(&mut out, name, NearMiss { gap_us: second_us - first_us, first_us, second_us, lever, cover: None, clocks: None });
    };
    // A lease race's clocks: the holder's slow, the authority's fast.
    let lease_race = |name: &'static str, first_us: u64, second_us: u64, server: u32, out: &mut BTreeMap<&'static str, NearMiss>| {
        let clocks = Some(Clocks { slow: format!("server-{server}"), fast: "lock-1".into() });
        keep_closest(out, name, NearMiss { gap_us: second_us - first_us, first_us, second_us, lever: None, cover: None, clocks });
    };
    let append = |server: u32| Some(Lever { from: format!("server-{server}"), to: "store-1".into(), kind: "store_append".into() });
    let mut last_fence: BTreeMap<u64, (u64, u64)> = BTreeMap::new(); // stream -> (t, epoch)
    let mut last_effect: BTreeMap<u64, (u64, u64, u32)> = BTreeMap::new(); // stream -> (t, epoch, server)
    let mut last_admit: BTreeMap<u32, u64> = BTreeMap::new(); // server -> t
    let mut last_read: BTreeMap<u64, (u64, u32)> = BTreeMap::new(); // range -> (t, server)
    let mut lease_races: Vec<(&'static str, u64, u64, u32)> = Vec::new();
    let mut owners: BTreeMap<u64, (Option<u32>, u64)> = BTreeMap::new(); // range -> (owner, epoch)
    let mut drained: BTreeSet<(u64, u64)> = BTreeSet::new(); // (range, epoch) drained by a pause
    for ev in events {
        let t = ev.t_us;
        let What::Sys(sys) = &ev.what else { continue };
        match sys {
            Sys::Fence { stream, epoch, .. } => {
                if let Some((te, e, server)) = last_effect.get(&stream.0) {
                    if *e < epoch.0 {
                        // A handoff the old owner took part in (it drained at that epoch), or a
                        // takeover of a range whose owner was lost.
                        let race = if drained.contains(&(stream.0, *e)) { "old_write_before_fence" } else { "old_write_before_takeover_fence" };
                        note(race, *te, t, append(*server));
                    }
                }
                last_fence.insert(stream.0, (t, epoch.0));
            }
            Sys::Fenced { stream, .. } => {
                if let Some((tf, _)) = last_fence.get(&stream.0) {
                    note("stale_write_after_fence", *tf, t, None);
                }
            }
            Sys::Effect { stream, epoch, server, .. } => {
                last_effect.insert(stream.0, (t, epoch.0, server.0));
            }
            Sys::Drained { range, epoch, .. } => {
                drained.insert((range.0, epoch.0));
            }
            Sys::Admit { server, .. } => {
                last_admit.insert(server.0, t);
            }
            Sys::LeaseExpired { server, .. } => {
                if let Some(ta) = last_admit.get(&server.0) {
                    lease_races.push(("admit_before_expiry", *ta, t, server.0));
                }
            }
            Sys::ReadServed { range, server, bounded: false, .. } => {
                last_read.insert(range.0, (t, server.0));
            }
            Sys::MapCommit { map, .. } => {
                for row in map.rows.live().values() {
                    let now = (row.owner.map(|o| o.0), row.epoch.0);
                    if owners.insert(row.id.0, now).is_some_and(|before| before != now) {
                        if let Some((tr, server)) = last_read.get(&row.id.0) {
                            lease_races.push(("read_before_owner_change", *tr, t, *server));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (race, first_us, second_us, server) in lease_races {
        lease_race(race, first_us, second_us, server, &mut out);
    }
    out
}

/// One race's closest call in a run: the gap, µs, between the step that came first and the
/// step the protocol needs to come second, and the simulated times (µs) of both. A fault whose
/// window ends near one of the two steps is the likeliest lever on the gap
/// ([`crate::search::explore`]'s gap-closing mutation).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NearMiss {
    /// `second_us - first_us`.
    pub gap_us: u64,
    /// When the first step happened.
    pub first_us: u64,
    /// When the second step happened.
    pub second_us: u64,
    /// Where the first step was a message's arrival: that message, whose hold past the gap
    /// would flip the order (`None`: no single message to hold).
    #[serde(default)]
    pub lever: Option<Lever>,
    /// Where a fault's window missed the step it acts on: the fault and the step (a fault
    /// moved to cover the step reaches the situation).
    #[serde(default)]
    pub cover: Option<Cover>,
    /// Where the race is between a lease its holder trusts and the authority's end of it: the
    /// node whose clock, run slow, and the node whose clock, run fast, bring the two steps
    /// together (a drift pinned at the bound, `knobs.clock_drift_pinned_ppm`, stretches the
    /// holder's lease past the authority's by up to twice the bound).
    #[serde(default)]
    pub clocks: Option<Clocks>,
}

/// The two clocks of a lease race ([`NearMiss::clocks`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Clocks {
    /// The lease's holder.
    pub slow: String,
    /// The authority.
    pub fast: String,
}

/// A fault whose window missed the protocol step it acts on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cover {
    /// When the fault started, ms.
    pub fault_at_ms: u64,
    /// When the step happened, ms.
    pub step_ms: u64,
    /// The node the fault acted on as it resolved then (a role's holder then): a fault moved
    /// elsewhere in time must name it, as the role may resolve to another node by then.
    pub node: String,
}

/// Keep `m` as `race`'s near miss in `out` when it is the first or closer than the one kept.
fn keep_closest(out: &mut BTreeMap<&'static str, NearMiss>, race: &'static str, m: NearMiss) {
    if out.get(race).is_none_or(|e| m.gap_us < e.gap_us) {
        out.insert(race, m);
    }
}

/// The `missed_command_before_reopen` race (see [`near_misses`]): each command a server missed
/// (`command_missed`) and that server's next activation of the range at a newer epoch, with
/// the leader's next such command to the server as the lever.
fn missed_commands(events: &[Event]) -> Vec<(&'static str, NearMiss)> {
    use partmap::event::Event as Sys;
    let mut missed: BTreeMap<(u32, u64), (u64, u64, &'static str)> = BTreeMap::new(); // (server, range) -> (t, epoch, command) of the last missed command
    let mut out = Vec::new();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::CommandMissed { server, range, epoch, command }) => {
                missed.insert((server.0, range.0), (ev.t_us, epoch.0, *command));
            }
            What::Sys(Sys::Activated { server, range, epoch, .. }) => {
                if let Some((tm, _, command)) = missed.remove(&(server.0, range.0)).filter(|(_, e, _)| *e < epoch.0) {
                    let lever = Lever { from: "@leader".into(), to: format!("server-{}", server.0), kind: command.into() };
                    out.push(("missed_command_before_reopen", NearMiss { gap_us: ev.t_us - tm, first_us: tm, second_us: ev.t_us, lever: Some(lever), cover: None, clocks: None }));
                }
            }
            _ => {}
        }
    }
    out
}

/// The faults that missed the protocol step they act on (see [`near_misses`]): for each race,
/// every fault window and every step at the fault's node outside it, with the gap between
/// them. A window is `[start, start + duration]` as the `fault` event gives it.
fn missed_steps(events: &[Event]) -> Vec<(&'static str, NearMiss)> {
    use partmap::event::Event as Sys;
    let mut windows: Vec<(&'static str, String, u64, u64)> = Vec::new(); // (race, node, start, end), µs
    let mut steps: Vec<(&'static str, String, u64)> = Vec::new(); // (race, node, t)
    for ev in events {
        let t = ev.t_us;
        match &ev.what {
            What::Fault { fault, duration_ms, .. } => {
                let end = t + duration_ms * 1000;
                if let Fault::Corrupt(_, to) = &**fault {
                    windows.push(("corrupt_missed_copy", to.clone(), t, end));
                }
            }
            What::Sys(Sys::Precopied { server, .. }) => steps.push(("corrupt_missed_copy", format!("server-{}", server.0), t)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (race, node, start, end) in &windows {
        // A step inside the window may still have missed it (a round's reads sent before the
        // window opened): its distance is from the window's start.
        let dist = |t: u64| if t < *start { start - t } else if t > *end { t - end } else { t - start };
        let nearest = steps.iter().filter(|(r, n, _)| r == race && n == node).map(|(_, _, t)| *t).min_by_key(|t| dist(*t));
        if let Some(t) = nearest {
            let (first_us, second_us) = if t > *end { (*end, t) } else { (t.min(*start), t.max(*start)) };
            out.push((*race, NearMiss { gap_us: second_us - first_us, first_us, second_us, lever: None, cover: Some(Cover { fault_at_ms: start / 1000, step_ms: t / 1000, node: node.clone() }), clocks: None }));
        }
    }
    out
}

/// A message whose hold can flip a race: the next `kind` message on the link `from` -> `to`
/// (node names, or a role such as `@leader`, as a `delay_next` fault names them).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lever {
    /// The sender.
    pub from: String,
    /// The receiver.
    pub to: String,
    /// The message kind (`release`, `store_append`, ...).
    pub kind: String,
}
