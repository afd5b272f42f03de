//! The seam's network (a driver: runs on madsim's network and clock): request/response
//! messaging between nodes over madsim's network ([`Rpc`]), with a bandwidth-limited outgoing
//! link per node, the link faults the harness sets applied on the way out, and the wire node
//! that carries messages held in the network.
//!
//! madsim charges no time for message size; the link here charges `bytes / bandwidth` (a
//! transfer of a large range shows up in pause lengths).

use super::clock::{local_us, sleep_ms, spawn, to_global, Clocked, CLOCK_RATE};
use super::fault::{LinkFault, LinkFaults};
use crate::msg::Msg;
use madsim::net::Endpoint;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};
use std::time::Duration;

thread_local! {
    /// Messages put on the wire by this thread's runs, for the harness's cost figures.
    static MESSAGES_SENT: Cell<u64> = const { Cell::new(0) };
}

/// Messages the seam has put on the wire on this thread since it started (every run on it,
/// duplicates included; a held or reordered message counts when it is sent on). For cost
/// figures (messages per seed, CPU per message); nothing in a run reads it.
pub fn messages_sent() -> u64 {
    MESSAGES_SENT.with(|n| n.get())
}
thread_local! {
    /// The harness's node that carries messages in flight ([`set_wire`]); `None` outside the
    /// harness.
    static WIRE: RefCell<Option<madsim::runtime::NodeHandle>> = const { RefCell::new(None) };
}

/// Let `wire` (a node that is never crashed or paused) carry the messages held in the network
/// (`delay`, `delay_next`, `reorder`, duplicate copies), so that a message survives its
/// sender's crash or pause and still arrives, as on a real network; the sender's next
/// incarnation must cope with it. `None`: held messages wait on their sender's node and die
/// with it.
pub fn set_wire(wire: Option<madsim::runtime::NodeHandle>) {
    WIRE.with(|w| *w.borrow_mut() = wire);
}

/// Spawn a message in flight: on the wire node if there is one, else on the current node;
/// either way at the current node's clock rate.
fn spawn_in_flight<F: Future + 'static>(future: F) {
    let rate = CLOCK_RATE.with(|r| r.get());
    let task = Clocked { rate, inner: Box::pin(future) };
    match WIRE.with(|w| w.borrow().clone()) {
        Some(wire) => drop(wire.spawn_local(task)),
        None => drop(madsim::task::spawn_local(task)),
    }
}

/// Every this many messages sent on a thread, finished tasks' records are pruned from madsim's
/// nodes (see [`Rpc::put_on_wire`]).
const PRUNE_EVERY: u64 = 4096;

/// Tag of request messages; responses use [`TAG_RSP`].
const TAG_REQ: u64 = 1;
const TAG_RSP: u64 = 2;
/// Bytes of framing charged on top of every message's payload.
pub const HEADER_BYTES: u64 = 64;

/// Messages of at most this many bytes on the wire (framing included) are the link's control
/// class: they go out ahead of queued bulk transfers, as a real link interleaves a small
/// message with a long transfer packet by packet instead of holding it behind the whole
/// transfer (a strict-priority queue for control traffic, as switches and NICs keep for it).
/// They still use the link's bandwidth: the bulk queue behind them moves back by their
/// transmission time. Everything larger (data: appends carrying bulk, store read answers,
/// pre-copy chunks) queues first in, first out.
///
/// Why: with one FIFO queue, a server writing at 95% of its link held its lease renewals
/// behind seconds of appends and lost its session while alive.
/// 64 KiB is a TCP segment offload's largest unit: below it, a message is a few packets.
pub const CONTROL_BYTES: u64 = 64 * 1024;

/// Why a call got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpcError {
    /// No response within the timeout: the request may or may not have taken effect.
    Timeout,
}

/// A message on the wire with its request id, boxed once by the sender: the box is madsim's
/// payload, so the futures that carry a message hold a pointer, not the message.
type Envelope = Box<(u64, Msg)>;

/// Request/response messaging for one node over madsim's network, with a bandwidth-limited
/// outgoing link.
///
/// Messages travel as typed values (no serialization); their size for the bandwidth charge is
/// [`Msg::wire_bytes`] plus [`HEADER_BYTES`]. A node binds one `Rpc` at `ip:1`, answers requests
/// with [`Rpc::serve`] and sends its own with [`Rpc::call`].
pub struct Rpc {
    ep: Rc<Endpoint>,
    ip: std::net::IpAddr,
    link_faults: LinkFaults,
    next_id: Cell<u64>,
    /// Calls waiting for an answer, by request id: the response dispatcher fills the slot,
    /// the reaper fails it.
    waiters: RefCell<BTreeMap<u64, Rc<Reply>>>,
    /// Calls waiting for an answer, by (deadline, request id): a call's timeout is an entry
    /// here, failed by [`Rpc::reap`], not a timer of its own (madsim cannot cancel a timer, so
    /// a timer per call stays in its heap long after the answer came).
    deadlines: RefCell<BTreeSet<(madsim::time::Instant, u64)>>,
    /// The instants at which a reaper timer is armed; one is always armed at or before the
    /// earliest deadline.
    armed: RefCell<BTreeSet<madsim::time::Instant>>,
    /// This `Rpc`, for the reaper timers it spawns (they must not keep it alive).
    me: Weak<Rpc>,
    /// Outgoing link busy with bulk transfers until this many microseconds (simulated, since
    /// start): where the next bulk message starts.
    link_busy_until_us: Cell<u64>,
    /// Outgoing link busy with control messages ([`CONTROL_BYTES`]) until this many
    /// microseconds: where the next control message starts.
    control_busy_until_us: Cell<u64>,
    bandwidth_bytes_per_s: u64,
    /// The clock of the runtime this node runs in (a node's seam lives in one runtime).
    time: madsim::time::TimeHandle,
}

/// One call's answer, as the response dispatcher or the reaper settles it: the answer, or
/// `None` for a timeout. A single-task slot in place of a channel (no atomics, no second
/// allocation per call); it wakes the call exactly where a oneshot channel's send or drop would.
#[derive(Default)]
struct Reply {
    settled: RefCell<Option<Option<Msg>>>,
    waker: RefCell<Option<Waker>>,
}

impl Reply {
    /// Settle the call (`None`: timed out) and wake it.
    fn settle(&self, answer: Option<Msg>) {
        *self.settled.borrow_mut() = Some(answer);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    fn poll(&self, cx: &mut std::task::Context<'_>) -> Poll<Result<Msg, RpcError>> {
        if let Some(answer) = self.settled.borrow_mut().take() {
            return Poll::Ready(answer.ok_or(RpcError::Timeout));
        }
        let mut waker = self.waker.borrow_mut();
        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What one node's network seam needs, given to it explicitly: the bandwidth of its outgoing
/// link and the faults the harness puts on links (shared by every node of a run; empty for
/// nodes the harness never faults).
#[derive(Clone, Debug)]
pub struct Net {
    /// Outgoing link bandwidth, bytes per second (> 0).
    pub bandwidth_bytes_per_s: u64,
    /// The link faults in force, as the harness sets them.
    pub faults: LinkFaults,
}

impl Rpc {
    /// Bind at `addr` and start the response dispatcher; the outgoing link runs at
    /// `net.bandwidth_bytes_per_s` (> 0) and obeys `net.faults`.
    pub async fn bind(addr: SocketAddr, net: &Net) -> Rc<Rpc> {
        let bandwidth_bytes_per_s = net.bandwidth_bytes_per_s;
        assert!(bandwidth_bytes_per_s > 0);
        let ep = Rc::new(Endpoint::bind(addr).await.expect("bind: address in use"));
        // Request ids start at a random point (from the seeded RNG), so replies addressed to an
        // earlier incarnation of this node (held in the network) cannot match this one's calls.
        let first_id: u64 = madsim::rand::random::<u64>() >> 1;
        let rpc = Rc::new_cyclic(|me| Rpc {
            ep,
            ip: addr.ip(),
            deadlines: RefCell::default(),
            armed: RefCell::default(),
            me: me.clone(),
            link_faults: net.faults.clone(),
            next_id: Cell::new(first_id),
            waiters: RefCell::new(BTreeMap::new()),
            link_busy_until_us: Cell::new(0),
            control_busy_until_us: Cell::new(0),
            bandwidth_bytes_per_s,
            time: madsim::time::TimeHandle::current(),
        });
        let me = rpc.clone();
        spawn(async move {
            loop {
                let Ok((payload, _from)) = me.ep.recv_from_raw(TAG_RSP).await else { return };
                let (id, msg) = *payload.downcast::<(u64, Msg)>().expect("response payload");
                // A late response (its caller timed out) has no waiter and is dropped.
                let waiter = me.waiters.borrow_mut().remove(&id);
                if let Some(reply) = waiter {
                    reply.settle(Some(msg));
                }
            }
        });
        rpc
    }

    /// Charge `bytes` on the outgoing link: queue behind earlier transfers of the same class
    /// ([`CONTROL_BYTES`]: a control message only behind control messages, a bulk one behind
    /// both), then wait out this one's transmission time. A control message pushes the bulk
    /// queue back by its own transmission time. Waits under 1 ms are not slept (madsim's timer
    /// granularity) but still accumulate, so a run of small messages is charged once it adds up.
    async fn charge(&self, bytes: u64) {
        if let Some(wait) = self.reserve(bytes) {
            madsim::time::sleep(wait).await;
        }
    }

    /// Book `bytes` on the outgoing link; how long (simulated time) the sender must wait for
    /// its transmission to end, if 1 ms or more.
    fn reserve(&self, bytes: u64) -> Option<Duration> {
        let now = local_us(&self.time);
        let tx_us = bytes * 1_000_000 / self.bandwidth_bytes_per_s;
        let (control, bulk) = (self.control_busy_until_us.get(), self.link_busy_until_us.get());
        let done = if bytes <= CONTROL_BYTES {
            let done = control.max(now) + tx_us;
            self.control_busy_until_us.set(done);
            if bulk > now {
                self.link_busy_until_us.set(bulk + tx_us);
            }
            done
        } else {
            let done = bulk.max(control).max(now) + tx_us;
            self.link_busy_until_us.set(done);
            done
        };
        (done >= now + 1000).then(|| to_global(done - now))
    }

    /// How long (µs of simulated time) a bulk message sent now waits for the outgoing link: the
    /// transfers queued ahead of it. The store sizes its read answers by it.
    pub fn link_backlog_us(&self) -> u64 {
        self.link_busy_until_us.get().max(self.control_busy_until_us.get()).saturating_sub(local_us(&self.time))
    }

    /// Outgoing link bandwidth, bytes per second.
    pub fn bandwidth_bytes_per_s(&self) -> u64 {
        self.bandwidth_bytes_per_s
    }

    /// Send `envelope` (a response) once the link has carried it.
    async fn send(&self, dst: SocketAddr, tag: u64, envelope: Envelope) {
        self.charge(envelope.1.wire_bytes() + HEADER_BYTES).await;
        self.put_on_wire(dst, tag, envelope).await;
    }

    /// Hand `envelope` to the network once the link has carried it (after [`Rpc::charge`]), with
    /// the link faults in force.
    async fn put_on_wire(&self, dst: SocketAddr, tag: u64, envelope: Envelope) {
        let sent = MESSAGES_SENT.with(|n| {
            n.set(n.get() + 1);
            n.get()
        });
        if sent.is_multiple_of(PRUNE_EVERY) {
            // madsim keeps a weak reference to every task a node ever spawned (and with it the
            // task's info) until the node is killed; counting the tasks drops the finished
            // ones. A request is a task, so a node that lives for the whole run otherwise
            // grows by every request it answered (memory stays flat). Reads no random
            // number and polls nothing: the run is unchanged.
            madsim::runtime::Handle::current().metrics().num_tasks();
        }
        let envelope = if self.link_faults.any() { self.divert(dst, tag, envelope) } else { Some(envelope) };
        if let Some(envelope) = envelope {
            // A send to an unreachable or clogged destination is silently lost, like a datagram.
            let _ = self.ep.send_to_raw(dst, tag, envelope).await;
        }
    }

    /// The link faults in force on the way to `dst`: a copy sent later (duplicate), a flipped
    /// bit (corrupt), or the message itself held, reordered or stuck in a task of its own.
    /// Returns the message when it goes on the wire now. A plain function, so that
    /// [`Rpc::put_on_wire`]'s future, held by every send, stays small.
    fn divert(&self, dst: SocketAddr, tag: u64, mut envelope: Envelope) -> Option<Envelope> {
        let link = (self.ip, dst.ip());
        if self.link_faults.has(link, LinkFault::Corrupt) {
            corrupt_precopy(&mut envelope.1);
        }
        if self.link_faults.has(link, LinkFault::Duplicate) {
            let (ep, copy) = (self.ep.clone(), envelope.clone());
            spawn_in_flight(async move {
                sleep_ms(madsim::rand::random::<u64>() % 10).await;
                let _ = ep.send_to_raw(dst, tag, copy).await;
            });
        }
        if let Some(hold) = self.link_faults.take_hold(link, envelope.1.kind_name()) {
            let ep = self.ep.clone();
            spawn_in_flight(async move {
                hold.wait().await;
                crate::event::emit(crate::event::Event::HeldDelivered { from: link.0, to: link.1, msg: envelope.1.kind_name() });
                let _ = ep.send_to_raw(dst, tag, envelope).await;
            });
            return None;
        }
        if self.link_faults.has(link, LinkFault::Reorder) {
            let (ep, extra) = (self.ep.clone(), madsim::rand::random::<u64>() % 51);
            spawn_in_flight(async move {
                sleep_ms(extra).await;
                let _ = ep.send_to_raw(dst, tag, envelope).await;
            });
            return None;
        }
        if self.link_faults.has(link, LinkFault::Hold) {
            // The message is on its way but stuck: it arrives once the link is released,
            // whatever became of the sender's wait for it.
            let (ep, faults) = (self.ep.clone(), self.link_faults.clone());
            spawn_in_flight(async move {
                while faults.has(link, LinkFault::Hold) {
                    sleep_ms(10).await;
                }
                let _ = ep.send_to_raw(dst, tag, envelope).await;
            });
            return None;
        }
        Some(envelope)
    }

    /// Send `msg` to `dst` and wait up to `timeout_ms` for the answer, counted from the moment
    /// the request has left this node's outgoing link: the wait behind our own queued transfers
    /// is known to the sender and bounded by the backlog, and a deadline that spent itself
    /// there would time out requests the peer never saw (a server writing at 95% of its link
    /// would time out its own appends and reload its range).
    ///
    /// Errors: [`RpcError::Timeout`] when nothing came back in time (lost, partitioned, crashed or
    /// slow peer); the request may still take effect later.
    pub fn call(&self, dst: SocketAddr, msg: Msg, timeout_ms: u64) -> impl Future<Output = Result<Msg, RpcError>> + '_ {
        // Boxed before the first await: the call's future holds a pointer, not the message, and
        // the box is what goes on the wire (every await moves the futures it holds).
        self.call_boxed(dst, Box::new((0, msg)), timeout_ms)
    }

    /// [`Rpc::call`] with the message already in its envelope (the id is set here).
    async fn call_boxed(&self, dst: SocketAddr, mut envelope: Envelope, timeout_ms: u64) -> Result<Msg, RpcError> {
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        envelope.0 = id;
        let reply = Rc::new(Reply::default());
        self.waiters.borrow_mut().insert(id, reply.clone());
        // The deadline counts from the moment the request has left this node's link (issue
        // 15): the wait behind our own queued transfers is bounded by the backlog.
        self.charge(envelope.1.wire_bytes() + HEADER_BYTES).await;
        // As madsim's timers: a deadline less than 1 ms away counts as 1 ms away.
        let deadline = self.time.now_instant() + to_global(timeout_ms * 1000).max(Duration::from_millis(1));
        self.deadlines.borrow_mut().insert((deadline, id));
        if self.armed.borrow().first().is_none_or(|&at| at > deadline) {
            self.arm(deadline);
        }
        self.put_on_wire(dst, TAG_REQ, envelope).await;
        // The reaper fails the reply at the deadline.
        let answer = std::future::poll_fn(|cx| reply.poll(cx)).await;
        self.waiters.borrow_mut().remove(&id);
        self.deadlines.borrow_mut().remove(&(deadline, id));
        answer
    }

    /// Arm a reaper timer at `at`: then fail every call whose deadline has passed.
    fn arm(&self, at: madsim::time::Instant) {
        self.armed.borrow_mut().insert(at);
        let me = self.me.clone();
        spawn(async move {
            madsim::time::sleep_until(at).await;
            if let Some(rpc) = me.upgrade() {
                rpc.reap(at);
            }
        });
    }

    /// The reaper timer armed at `at` fired: fail the calls past their deadline (waking each
    /// with an error) and keep a timer armed at or before the
    /// earliest deadline left.
    fn reap(&self, at: madsim::time::Instant) {
        self.armed.borrow_mut().remove(&at);
        let now = self.time.now_instant();
        let mut deadlines = self.deadlines.borrow_mut();
        while let Some(&(deadline, id)) = deadlines.first().filter(|(d, _)| *d <= now) {
            deadlines.pop_first();
            let waiter = self.waiters.borrow_mut().remove(&id);
            if let Some(reply) = waiter {
                reply.settle(None);
            }
            debug_assert!(deadline <= now);
        }
        let next = deadlines.first().map(|&(d, _)| d);
        drop(deadlines);
        if let Some(next) = next.filter(|&n| self.armed.borrow().first().is_none_or(|&a| a > n)) {
            self.arm(next);
        }
    }

    /// Answer requests forever: each request runs `handler` in its own task; a `Some` result is
    /// sent back to the caller, `None` sends nothing (the caller times out).
    pub fn serve<F, Fut>(self: &Rc<Self>, handler: F)
    where
        F: Fn(Msg, SocketAddr) -> Fut + 'static,
        Fut: Future<Output = Option<Msg>> + 'static,
    {
        // The handler's future runs inline in the request's task (no box of its own).
        let handler = Rc::new(handler);
        let me = self.clone();
        spawn(async move {
            loop {
                let Ok((payload, from)) = me.ep.recv_from_raw(TAG_REQ).await else { return };
                let mut envelope = payload.downcast::<(u64, Msg)>().expect("request payload");
                // The request's box carries the answer back (same id): one allocation per
                // request instead of two. `GetMap` holds its place meanwhile.
                let msg = std::mem::replace(&mut envelope.1, Msg::GetMap);
                let (me2, handler) = (me.clone(), handler.clone());
                spawn(async move {
                    if let Some(rsp) = handler(msg, from).await {
                        envelope.1 = rsp;
                        me2.send(from, TAG_RSP, envelope).await;
                    }
                });
            }
        });
    }
}


/// The `corrupt` link fault's change to a message (scenario fault `corrupt`, applied by
/// [`Rpc`]'s sends on a link with [`LinkFault::Corrupt`]; the model checker's corrupt action
/// calls it too): in a pre-copy chunk (`StreamRead` flagged `precopy`), one bit (0x20) of the
/// first byte of the last record, when its payload is not empty, is flipped, in a buffer of its own
/// (the payload is shared with the sender's). Only the move target's final check of the copy
/// against the source's digest can tell. Returns whether a bit was flipped (`false`: not a
/// pre-copy chunk, or no record with a payload).
pub fn corrupt_precopy(msg: &mut Msg) -> bool {
    let Msg::StreamRead { records, precopy: true, .. } = msg else { return false };
    let Some(r) = records.last_mut().filter(|r| !r.bytes.is_empty()) else { return false };
    let mut bytes = r.bytes.to_vec();
    bytes[0] ^= 0x20;
    r.bytes = bytes.into();
    true
}

/// Whether [`corrupt_precopy`] would flip a bit of `msg`.
pub fn corruptible(msg: &Msg) -> bool {
    matches!(msg, Msg::StreamRead { records, precopy: true, .. } if records.last().is_some_and(|r| !r.bytes.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::now_us;
    use std::sync::{Arc, Mutex};

    /// A server writing at 95% of its link must not hold its lease renewal behind seconds of
    /// appends: a control message leaves ahead of a queued bulk transfer; the bulk transfer
    /// behind it is pushed back by the control message's own transmission time.
    #[test]
    fn link_sends_control_messages_ahead_of_queued_bulk() {
        use crate::ids::{Epoch, OpId, ServerId};
        use crate::msg::Record;
        let arrivals: Arc<Mutex<Vec<(&'static str, u64)>>> = Arc::default();
        let seen = arrivals.clone();
        crate::testkit::block_on(async move {
            let h = madsim::runtime::Handle::current();
            let (a, b): (SocketAddr, SocketAddr) = ("10.9.0.1:1".parse().unwrap(), "10.9.0.2:1".parse().unwrap());
            let net = || Net { bandwidth_bytes_per_s: 100 << 20, faults: Default::default() };
            h.create_node().name("b").ip(b.ip()).init(move || {
                let seen = seen.clone();
                async move {
                    let rpc = Rpc::bind(b, &Net { bandwidth_bytes_per_s: 100 << 20, faults: Default::default() }).await;
                    rpc.serve(move |m, _| {
                        seen.lock().unwrap().push((m.kind_name(), now_us()));
                        async move { Some(Msg::SessionRenewed { ok: true }) }
                    });
                    std::future::pending::<()>().await
                }
            }).build();
            let done = Arc::new(Mutex::new(false));
            let d2 = done.clone();
            h.create_node().name("a").ip(a.ip()).init(move || {
                let done = d2.clone();
                async move {
                    let rpc = Rc::new(Rpc::bind(a, &net()).await);
                    sleep_ms(10).await;
                    let bulk = Record { epoch: Epoch(1), id: OpId { client: 1, seq: 1 }, key: b"k".to_vec(), bytes: bytes::Bytes::new(), bulk: 10 << 20 };
                    let big = Msg::StreamRead { records: vec![bulk], length: 1, precopy: false };
                    let r2 = rpc.clone();
                    let first = spawn(async move { r2.call(b, big, 5_000).await });
                    // madsim polls ready tasks in a random order: yield until the bulk call
                    // has run far enough to book its transfer on the link.
                    for _ in 0..100 {
                        if rpc.link_backlog_us() > 0 {
                            break;
                        }
                        madsim::task::yield_now().await;
                    }
                    let backlog = rpc.link_backlog_us();
                    assert!(backlog >= 99_000, "10 MiB at 100 MiB/s queues 100 ms of bulk: {backlog} us");
                    let t0 = now_us();
                    rpc.call(b, Msg::RenewSession { server: ServerId(1), session: 1 }, 5_000).await.expect("renewal answered");
                    assert!(now_us() - t0 < 20_000, "the renewal's round trip does not wait for the bulk transfer");
                    assert!(rpc.link_backlog_us() > 0);
                    first.await.unwrap().expect("bulk answered");
                    *done.lock().unwrap() = true;
                    std::future::pending::<()>().await
                }
            }).build();
            while !*done.lock().unwrap() {
                madsim::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let seen = arrivals.lock().unwrap().clone();
        assert_eq!(seen.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec!["renew_session", "stream_read"], "{seen:?}");
    }

    /// A node at `addr` that answers every request with `SessionRenewed { ok: true }` at once.
    fn renewing_node(h: &madsim::runtime::Handle, addr: SocketAddr) {
        h.create_node().name("b").ip(addr.ip()).init(move || async move {
            let rpc = Rpc::bind(addr, &Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }).await;
            rpc.serve(|_, _| async { Some(Msg::SessionRenewed { ok: true }) });
            std::future::pending::<()>().await
        }).build();
    }

    /// A node at `addr` that binds its seam, waits 10 ms (the other nodes bind meanwhile), then
    /// runs `body` with it.
    fn calling_node<F, Fut>(h: &madsim::runtime::Handle, addr: SocketAddr, body: F)
    where
        F: Fn(Rc<Rpc>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let body = Arc::new(body);
        h.create_node().name("a").ip(addr.ip()).init(move || {
            let body = body.clone();
            async move {
                let rpc = Rpc::bind(addr, &Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }).await;
                sleep_ms(10).await;
                body(rpc).await
            }
        }).build();
    }

    /// Run `rt` for `run_for` with `renewing_node` at b = 10.9.0.2 and `calling_node` at
    /// 10.9.0.1 running `body(rpc, b, out)` (after `setup`, inside the runtime); returns what
    /// `body` pushed to `out`.
    fn against_renewing_node<T, F, Fut>(rt: madsim::runtime::Runtime, setup: impl FnOnce(), run_for: Duration, body: F) -> Vec<T>
    where
        T: Clone + Send + 'static,
        F: Fn(Rc<Rpc>, SocketAddr, Arc<Mutex<Vec<T>>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let took = Arc::new(Mutex::new(Vec::new()));
        let out = took.clone();
        rt.block_on(async move {
            setup();
            let h = madsim::runtime::Handle::current();
            let (a, b): (SocketAddr, SocketAddr) = ("10.9.0.1:1".parse().unwrap(), "10.9.0.2:1".parse().unwrap());
            renewing_node(&h, b);
            calling_node(&h, a, move |rpc| body(rpc, b, out.clone()));
            madsim::time::sleep(run_for).await;
        });
        let took = took.lock().unwrap().clone();
        took
    }

    /// The madsim patch (`vendor/madsim`, PATCHES.md): a message costs its latency draw and its
    /// link time, not a further millisecond on each of send and receive, and a node takes in
    /// requests that arrive together at once, not one per millisecond. Unpatched, ten requests
    /// sent together with a 2 ms latency are answered over 2 + 1 + 10 x 1 + 2 + 1 ms.
    #[test]
    fn a_message_costs_its_latency_and_a_node_receives_requests_together() {
        let mut cfg = madsim::Config::default();
        cfg.net.send_latency = Duration::from_millis(2)..Duration::from_micros(2001);
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, cfg);
        let took = against_renewing_node(rt, || {}, Duration::from_millis(100), |rpc, b, out| async move {
            let t0 = now_us();
            let calls: Vec<_> = (0..10u32).map(|i| {
                let rpc = rpc.clone();
                spawn(async move { rpc.call(b, Msg::RenewSession { server: crate::ids::ServerId(i), session: 1 }, 1_000).await.map(|_| now_us()) })
            }).collect();
            for c in calls {
                let at = c.await.unwrap().expect("answered");
                out.lock().unwrap().push(at - t0);
            }
        });
        assert_eq!(took.len(), 10, "every call answered: {took:?}");
        assert!(took.iter().all(|us| (4_000..4_100).contains(us)), "each round trip is two 2 ms latencies: {took:?} us");
    }

    /// The second madsim patch (PATCHES.md): a send skips madsim's virtual-server lookup only
    /// when no virtual service exists; with one registered, a call to the service's address
    /// still reaches its real server and is answered.
    #[test]
    fn a_send_to_a_virtual_service_still_reaches_its_server() {
        use madsim::net::ipvs::{Scheduler, ServiceAddr};
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        let answered = Arc::new(Mutex::new(None));
        let out = answered.clone();
        rt.block_on(async move {
            let h = madsim::runtime::Handle::current();
            let (a, b, service): (SocketAddr, SocketAddr, SocketAddr) =
                ("10.9.0.1:1".parse().unwrap(), "10.9.0.2:1".parse().unwrap(), "10.9.9.9:1".parse().unwrap());
            let ipvs = madsim::net::NetSim::current();
            ipvs.global_ipvs().add_service(ServiceAddr::Udp(service.to_string()), Scheduler::RoundRobin);
            ipvs.global_ipvs().add_server(ServiceAddr::Udp(service.to_string()), &b.to_string());
            renewing_node(&h, b);
            calling_node(&h, a, move |rpc| {
                let out = out.clone();
                async move {
                    let answer = rpc.call(service, Msg::RenewSession { server: crate::ids::ServerId(1), session: 1 }, 1_000).await;
                    *out.lock().unwrap() = Some(answer);
                }
            });
            madsim::time::sleep(Duration::from_millis(100)).await;
        });
        let answered = answered.lock().unwrap().take();
        assert!(matches!(answered, Some(Ok(Msg::SessionRenewed { ok: true }))), "{answered:?}");
    }

    /// The third madsim patch (PATCHES.md): madsim's network tables hash with fixed-key aHash
    /// instead of SipHash. Each of 16 nodes is still found at its own address, and a clogged
    /// link (a table lookup on every send) still loses what is sent over it, until unclogged.
    #[test]
    fn the_network_finds_every_node_and_loses_what_a_clogged_link_carries() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        let answers = Arc::new(Mutex::new(Vec::new()));
        let out = answers.clone();
        rt.block_on(async move {
            let h = madsim::runtime::Handle::current();
            let servers: Vec<SocketAddr> = (0..16u64).map(|i| format!("10.9.1.{}:1", i + 1).parse().unwrap()).collect();
            let mut ids = Vec::new();
            for (i, &addr) in servers.iter().enumerate() {
                let node = h.create_node().ip(addr.ip()).init(move || async move {
                    let rpc = Rpc::bind(addr, &Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }).await;
                    rpc.serve(move |_, _| async move { Some(Msg::Registered { session: i as u64 }) });
                    std::future::pending::<()>().await
                }).build();
                ids.push(node.id());
            }
            let caller: SocketAddr = "10.9.0.1:1".parse().unwrap();
            let net = madsim::net::NetSim::current();
            let (clogged, rounds) = (ids[3], Arc::new(Mutex::new(0)));
            let round = rounds.clone();
            let node = h.create_node().ip(caller.ip()).init(move || {
                let (servers, out, round) = (servers.clone(), out.clone(), round.clone());
                async move {
                    let rpc = Rpc::bind(caller, &Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }).await;
                    // Round 0 with the link clogged (step 0), round 1 once it is unclogged
                    // (step 2); each round ends a step.
                    for r in 0..2 {
                        while *round.lock().unwrap() < 2 * r {
                            sleep_ms(10).await;
                        }
                        sleep_ms(10).await;
                        for &s in &servers {
                            let answer = match rpc.call(s, Msg::RenewSession { server: crate::ids::ServerId(1), session: 1 }, 100).await {
                                Ok(Msg::Registered { session }) => Some(session),
                                _ => None,
                            };
                            out.lock().unwrap().push(answer);
                        }
                        *round.lock().unwrap() += 1;
                    }
                }
            }).build();
            net.clog_link(node.id(), clogged);
            while *rounds.lock().unwrap() < 1 {
                madsim::time::sleep(Duration::from_millis(10)).await;
            }
            net.unclog_link(node.id(), clogged);
            *rounds.lock().unwrap() += 1;
            while *rounds.lock().unwrap() < 3 {
                madsim::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let answers = answers.lock().unwrap().clone();
        let expect = |clogged: bool| (0..16u64).map(move |i| (!(clogged && i == 3)).then_some(i));
        assert_eq!(answers, expect(true).chain(expect(false)).collect::<Vec<_>>(), "each node answers at its own address; the clogged link's call times out");
    }

    /// The fourth madsim patch (PATCHES.md): a send or receive asks the network's own handle
    /// of the run's generator whether madsim's buggify delays it, instead of the thread's
    /// runtime context. With buggify on, some of twenty calls still wait 1 to 5 s on a send or
    /// receive (each of the four has a 10% chance); with it off, every call takes milliseconds.
    #[test]
    fn buggify_still_delays_some_messages_by_seconds() {
        for on in [false, true] {
            let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
            let buggify = move || if on { madsim::buggify::enable() };
            let took = against_renewing_node(rt, buggify, Duration::from_secs(700), |rpc, b, out| async move {
                // A bind, too, may wait 1 to 5 s under buggify: call once both listen.
                sleep_ms(6_000).await;
                for i in 0..20u32 {
                    let t0 = now_us();
                    let answer = rpc.call(b, Msg::RenewSession { server: crate::ids::ServerId(i), session: 1 }, 30_000).await;
                    out.lock().unwrap().push((answer.is_ok(), now_us() - t0));
                }
            });
            assert_eq!(took.len(), 20, "buggify {on}: every call ended: {took:?}");
            assert!(took.iter().all(|&(ok, _)| ok), "buggify {on}: every call answered: {took:?}");
            let slow = took.iter().filter(|&&(_, us)| us >= 1_000_000).count();
            if on {
                assert!(slow > 0 && slow < 20, "buggify on: some calls wait seconds, not all: {took:?}");
            } else {
                assert_eq!(slow, 0, "buggify off: no call waits a second: {took:?}");
            }
        }
    }
}
