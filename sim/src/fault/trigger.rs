//! Faults on protocol events: a schedule entry with `on` waits for the `count`-th event of a
//! given name emitted by a given node, instead of a fixed time, so a fault lands in the window a
//! scenario is about (after a seal, during a pause) whatever the timing of the run. The idea is
//! FoundationDB's fault injection at named points in the code; here the points are the typed
//! events of `partmap::event::Event`, which every step of the protocol already emits.
//!
//! The watches live on the thread that runs the simulation, like the history
//! ([`crate::events`]): the event sink calls [`observe`] for every control-plane event, and a
//! waiting nemesis task ([`fired`]) is woken when its watch reaches its count. The wake-up is
//! scheduled by madsim like any other, so a triggered run is as deterministic as a timed one.

use madsim::task::NodeId;
use partmap::event::Event;
use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// Which emitters a watch counts.
enum Emitter {
    /// This node.
    Node(NodeId),
    /// Whichever node holds the role (`@...`, [`crate::fault::aim`]) when the event comes.
    Role(String),
}

/// One armed watch.
struct Watch {
    event: &'static str,
    node: Emitter,
    range: Option<u64>,
    epoch: Option<u64>,
    left: u32,
    /// What the schedule entry said, for the list of watches that never fired.
    what: String,
    state: Rc<RefCell<State>>,
}

#[derive(Default)]
struct State {
    fired: bool,
    /// The node whose event fired the watch.
    by: Option<NodeId>,
    waker: Option<Waker>,
}

thread_local! {
    static WATCHES: RefCell<Vec<Watch>> = const { RefCell::new(Vec::new()) };
    /// The run's node names by id (set by the world builder), for roles and emitters.
    static NAMES: RefCell<crate::fault::aim::NodeNames> = const { RefCell::new(std::collections::BTreeMap::new()) };
}

/// Events with a range and a range epoch, as a trigger's `range` / `epoch` filter reads them
/// ([`range_epoch`]); a test pins the table against the function.
pub const RANGE_EPOCH_EVENTS: [&str; 16] = [
    "activated", "dropped", "admit", "effect", "redirected", "paused", "drained", "precopied", "diverged", "handoff", "refused", "deduplicated", "fenced", "read_served", "prefix_diverged", "command_missed",
];

/// Events with a range but no range epoch of their own (a fence's epoch is the new fence).
pub const RANGE_ONLY_EVENTS: [&str; 1] = ["fence"];

/// Every event a `range` filter may name.
pub fn range_events() -> Vec<&'static str> {
    RANGE_EPOCH_EVENTS.iter().chain(RANGE_ONLY_EVENTS.iter()).copied().collect()
}

/// The range and range epoch an event concerns, as trigger filters read them.
pub fn range_epoch(e: &Event) -> (Option<u64>, Option<u64>) {
    match e {
        Event::Activated { range, epoch, .. }
        | Event::Dropped { range, epoch, .. }
        | Event::Admit { range, epoch, .. }
        | Event::Redirected { range, epoch, .. }
        | Event::Paused { range, epoch, .. }
        | Event::Drained { range, epoch, .. }
        | Event::Precopied { range, epoch, .. }
        | Event::Diverged { range, epoch, .. }
        | Event::Handoff { range, epoch, .. }
        | Event::Refused { range, epoch, .. }
        | Event::ReadServed { range, epoch, .. }
        | Event::PrefixDiverged { range, epoch, .. }
        | Event::CommandMissed { range, epoch, .. }
        | Event::Routed { range, epoch, .. } => (Some(range.0), Some(epoch.0)),
        Event::Effect { stream, epoch, .. } | Event::Deduplicated { stream, epoch, .. } | Event::Fenced { stream, epoch, .. } => (Some(stream.0), Some(epoch.0)),
        Event::Fence { stream, .. } => (Some(stream.0), None),
        _ => (None, None),
    }
}

/// Drop every watch of this thread (a run starts or ended). Each watch's waker is dropped
/// first: the waiting task holds the watch's state, and the state holds the task's waker, a
/// cycle that would keep a never-fired trigger's task (and the world it holds) alive forever.
pub fn reset() {
    let watches = WATCHES.with(|w| std::mem::take(&mut *w.borrow_mut()));
    for w in watches {
        w.state.borrow_mut().waker.take();
    }
}

/// The run's nodes by id, for roles and for naming a trigger's emitter.
pub fn set_names(names: crate::fault::aim::NodeNames) {
    NAMES.with(|n| *n.borrow_mut() = names);
}

/// The id of the node named `name` in this run.
pub fn id_of(name: &str) -> Option<NodeId> {
    NAMES.with(|n| n.borrow().iter().find(|(_, v)| v.as_str() == name).map(|(k, _)| *k))
}

/// The name of node `id` in this run.
pub fn name_of(id: NodeId) -> Option<String> {
    NAMES.with(|n| n.borrow().get(&id).cloned())
}

/// Count the event just emitted by the current task's node against every watch; wake the
/// waiters whose count is reached. Called for every control-plane event; costs one check when
/// nothing is armed.
pub fn observe(e: &Event) {
    let woken: Vec<Waker> = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        if watches.is_empty() {
            return Vec::new();
        }
        let name = e.name();
        let node = madsim::plugin::node();
        let (range, epoch) = range_epoch(e);
        let mut woken = Vec::new();
        for watch in watches.iter_mut().filter(|x| x.event == name) {
            let by_node = match &watch.node {
                Emitter::Node(id) => *id == node,
                Emitter::Role(role) => crate::fault::aim::resolve(role, None).ok().zip(name_of(node)).is_some_and(|(a, b)| a == b),
            };
            if !by_node || watch.range.is_some_and(|r| range != Some(r)) || watch.epoch.is_some_and(|x| epoch != Some(x)) {
                continue;
            }
            watch.left -= 1;
            if watch.left == 0 {
                let mut state = watch.state.borrow_mut();
                state.fired = true;
                state.by = Some(node);
                woken.extend(state.waker.take());
            }
        }
        watches.retain(|x| x.left > 0);
        woken
    });
    for waker in woken {
        waker.wake();
    }
}

/// What a trigger waits for: the `count`-th `event` from now on emitted by `node` (a node's id),
/// or by whoever holds `role` at that moment, optionally only events of `range` and `epoch`.
pub struct Wait<'a> {
    /// The event's name, one of `partmap::event::Event::NAMES`.
    pub event: &'static str,
    /// The emitter: `Ok(id)` of a node or `Err(role)` in the `@` form.
    pub node: Result<NodeId, &'a str>,
    /// Only events of this range id.
    pub range: Option<u64>,
    /// Only events at this range epoch.
    pub epoch: Option<u64>,
    /// Which occurrence fires (at least 1).
    pub count: u32,
    /// The schedule entry, readable, for the end-of-run list of watches that never fired.
    pub what: String,
}

/// Wait until the watch described by `w` fires; returns the node whose event fired it. Never
/// returns if it does not happen; the caller's task is dropped at the end of the run, and
/// [`unfired`] lists the watch.
pub async fn fired(w: Wait<'_>) -> NodeId {
    assert!(w.count >= 1, "a trigger fires on the first event at the earliest");
    let state = Rc::new(RefCell::new(State::default()));
    let node = match w.node {
        Ok(id) => Emitter::Node(id),
        Err(role) => Emitter::Role(role.to_string()),
    };
    WATCHES.with(|ws| ws.borrow_mut().push(Watch { event: w.event, node, range: w.range, epoch: w.epoch, left: w.count, what: w.what, state: state.clone() }));
    std::future::poll_fn(|cx| {
        let mut s = state.borrow_mut();
        if s.fired {
            Poll::Ready(s.by.expect("set when fired"))
        } else {
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    })
    .await
}

/// The watches armed in this run that never fired, readable (`crash @leader on paused by
/// server-1 #2: 1 of 2 seen`), in arming order. Read at the end of a run.
pub fn unfired() -> Vec<String> {
    WATCHES.with(|w| w.borrow().iter().map(|x| x.what.clone()).collect())
}
