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
use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// One armed watch.
struct Watch {
    event: &'static str,
    node: NodeId,
    left: u32,
    state: Rc<RefCell<State>>,
}

#[derive(Default)]
struct State {
    fired: bool,
    waker: Option<Waker>,
}

thread_local! {
    static WATCHES: RefCell<Vec<Watch>> = const { RefCell::new(Vec::new()) };
}

/// Drop every watch of this thread (a new run starts).
pub fn reset() {
    WATCHES.with(|w| w.borrow_mut().clear());
}

/// Count the event `name` just emitted by the current task's node against every watch; wake
/// the waiters whose count is reached. Called for every control-plane event; costs one check
/// when nothing is armed.
pub fn observe(name: &'static str) {
    let woken: Vec<Waker> = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        if watches.is_empty() {
            return Vec::new();
        }
        let node = madsim::plugin::node();
        let mut woken = Vec::new();
        for watch in watches.iter_mut().filter(|x| x.event == name && x.node == node) {
            watch.left -= 1;
            if watch.left == 0 {
                let mut state = watch.state.borrow_mut();
                state.fired = true;
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

/// Wait until `node` has emitted `event` `count` times from now on (`count` at least 1). Never
/// returns if it does not happen; the caller's task is dropped at the end of the run.
pub async fn fired(event: &'static str, node: NodeId, count: u32) {
    assert!(count >= 1, "a trigger fires on the first event at the earliest");
    let state = Rc::new(RefCell::new(State::default()));
    WATCHES.with(|w| w.borrow_mut().push(Watch { event, node, left: count, state: state.clone() }));
    std::future::poll_fn(|cx| {
        let mut s = state.borrow_mut();
        if s.fired {
            Poll::Ready(())
        } else {
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    })
    .await
}
