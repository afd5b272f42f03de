//! Driver (runtime: network, clock, tasks): the partition server's node task. It holds a
//! [`ServerCore`] and performs the steps [`ServerCore::handle`] returns, and nothing else: it
//! emits the events in the order the core made them before any await, sends the calls, sleeps,
//! waits on a held range's progress, and spawns the flows the core starts. Every rule (what to
//! answer, what to wait for, when to retry) is in the core ([`super::flow`]).

use super::core::{Effect, Notifier, ServerCore};
use super::flow::{Input, Next, Peer, Step, Then};
use crate::config::{lock_addr, server_addr, store_addr, Knobs};
use crate::event::emit;
use crate::ids::ServerId;
use crate::msg::Msg;
use crate::seam::{now_us, sleep_ms, timeout_ms, Rpc};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// One server incarnation: its core, its endpoint, and whom to wake on a held range's
/// progress.
pub(crate) struct Node {
    pub(crate) core: RefCell<ServerCore>,
    rpc: Rc<Rpc>,
    /// The waits on each held range, made when the first one waits.
    waits: RefCell<BTreeMap<Notifier, Rc<tokio::sync::Notify>>>,
}

/// Run server `id` forever: session upkeep plus request handling.
pub async fn run(id: ServerId, knobs: Knobs, net: crate::seam::Net) {
    let rpc = Rpc::bind(server_addr(id), &net).await;
    let node = Node::new(ServerCore::with_knobs(id, knobs), rpc.clone());
    {
        let node = node.clone();
        rpc.serve(move |msg, _from| {
            let node = node.clone();
            async move {
                let link_backlog_us = node.rpc.link_backlog_us();
                let step = node.handle(Input::Request { msg, link_backlog_us });
                node.drive(step).await
            }
        });
    }
    let step = node.handle(Input::Start);
    node.drive(step).await;
}

impl Node {
    pub(crate) fn new(core: ServerCore, rpc: Rc<Rpc>) -> Rc<Node> {
        Rc::new(Node { core: RefCell::new(core), rpc, waits: RefCell::new(BTreeMap::new()) })
    }

    /// Feed `input` to the core now.
    pub(crate) fn handle(&self, input: Input) -> Step {
        self.core.borrow_mut().handle(input, now_us())
    }

    /// Perform `effects` in order.
    pub(crate) fn perform(self: &Rc<Self>, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Event(event) => emit(event),
                Effect::Goal(goal) => crate::goal::reach(goal),
                Effect::Progress(notifier) => {
                    let mut waits = self.waits.borrow_mut();
                    if let Some(notify) = waits.get(&notifier) {
                        notify.notify_waiters();
                        if Rc::strong_count(notify) == 1 {
                            waits.remove(&notifier);
                        }
                    }
                }
                Effect::Spawn(then) => drop(crate::seam::spawn(self.flow(then))),
            }
        }
    }

    /// A flow as a task of its own: started by [`Input::Resume`] when the task first runs.
    fn flow(self: &Rc<Self>, then: Then) -> Pin<Box<dyn Future<Output = Option<Msg>>>> {
        let node = self.clone();
        Box::pin(async move {
            let step = node.handle(Input::Resume(then));
            node.drive(step).await
        })
    }

    /// The wakeup of the waits on `notifier`'s held range.
    fn notify(&self, notifier: Notifier) -> Rc<tokio::sync::Notify> {
        self.waits.borrow_mut().entry(notifier).or_default().clone()
    }

    /// Perform a flow's steps until it ends; its reply.
    pub(crate) async fn drive(self: &Rc<Self>, mut step: Step) -> Option<Msg> {
        loop {
            self.perform(std::mem::take(&mut step.effects));
            let input = match step.next {
                Next::Done(reply) => return reply,
                Next::Call { to, msg, timeout_ms, then } => {
                    let addr = match to {
                        Peer::Store => store_addr(),
                        Peer::Authority => lock_addr(),
                    };
                    let answer = self.rpc.call(addr, msg, timeout_ms).await.ok();
                    Input::Answered { then, answer }
                }
                Next::Sleep { ms, then } => {
                    sleep_ms(ms).await;
                    Input::Resume(then)
                }
                Next::Wait { wait, timeout_ms: bound } => {
                    let looking = async {
                        loop {
                            let Some(notifier) = self.core.borrow().poll(&wait) else { return };
                            let notify = self.notify(notifier);
                            let notified = notify.notified();
                            notified.await;
                        }
                    };
                    let timed_out = match bound {
                        Some(ms) => timeout_ms(ms, looking).await.is_none(),
                        None => {
                            looking.await;
                            false
                        }
                    };
                    // Forget the wakeups no one waits on any more (a range dropped meanwhile).
                    self.waits.borrow_mut().retain(|_, notify| Rc::strong_count(notify) > 1);
                    Input::Waited { wait, timed_out }
                }
                Next::Detach { flow, patience_ms, otherwise } => {
                    let task = crate::seam::spawn(self.flow(flow));
                    return match timeout_ms(patience_ms, task).await {
                        Some(Ok(Some(reply))) => Some(reply),
                        _ => Some(otherwise),
                    };
                }
            };
            step = self.handle(input);
        }
    }
}
