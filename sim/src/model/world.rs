//! The model's world: the real cores ([`AuthorityCore`], [`StoreCore`], two [`ServerCore`]s, the
//! leader's [`MoveFlow`] and [`ReshapeFlow`], and [`manager::plan`]; in `depose` two manager
//! candidates, each driving them in its own rounds) wired to a model network, a discrete clock and a
//! client, with every step one [`Action`] the search picks. Nothing here decides a protocol
//! rule: each action feeds one input to one core and performs the outputs it returns, as the
//! drivers (`server/node.rs`, `store/node.rs`, `lock.rs`, `manager::lead_once`) do.
//!
//! What the model simplifies, against the simulator:
//! - without store crashes in the bounds ([`Bounds::max_store_crashes`] 0, every
//!   configuration but `store-crash`) the store syncs in the request's step; with them its
//!   sync is a step of its own ([`Action::StoreSync`], the oldest pending sync first, as the
//!   simulator's equal-length syncs end), its disk is kept as `seam::Disk` keeps it (durable
//!   records, unsynced ones, each sync's mark) and a crash ([`Action::StoreCrash`]) loses the
//!   unsynced writes or, torn, keeps a prefix of them; the authority applies its durable
//!   records at once (no authority crash);
//! - the leader's round is sequential (opens, then the moves, one call at a time; the real
//!   round opens concurrently), starts any time it is idle (not on the manager's tick), and
//!   renews its lease once at the start of each round (no background `Renewer`: a round that
//!   outlives its lease had its renewals lost). With one manager it does not check its own
//!   lease before a commit (`manager_exclusive` is not at stake); with a standby
//!   (`depose`) every round does, as `lead_once` and `Leader::commit` do;
//! - a call's timeout, a sleep, a wait's bound and a detached flow's patience are deadlines on
//!   one global clock; time moves only by [`Action::Advance`], to the next deadline. With a
//!   drift bound ([`Bounds::drift_ppm`]) each server's core and the authority's read their own
//!   local clock (`World::local_us`), its timers set in local time and kept as global
//!   deadlines; the managers' clocks stay exact;
//! - the client sends each append once, to the old owner at the old epoch or the new owner at
//!   the transfer's epoch (the two routes a frontend's map or a `Moved` hint gives), or for a
//!   split to the parent at its epoch or the child that will hold the key at the child's
//!   epoch; no reads;
//! - the leader collects load reports only when the knobs reshape by load (`merge`; a split
//!   is the operator's request), one server at a time, and does not release the children of
//!   a split or merge a failover dropped (`lead_once`'s `release_abandoned_children`:
//!   unreached, as no configuration drops one).

use crate::events::{Event, Outcome, Sys, What};
use partmap::authority::{Action as AuthorityAction, AuthorityCore};
use partmap::config::Knobs;
use partmap::event::ClientOp;
use partmap::handoff::{Flow, MoveFlow, Peer as LeaderPeer, Reply, ReshapeFlow, Step as FlowStep};
use partmap::ids::{show_key, Epoch, OpId, RangeId, ServerId};
use partmap::manager;
use partmap::map::{MapOp, PartitionMap, Reshape, Transfer};
use partmap::msg::Msg;
use partmap::server::{Effect, Input, Next, Peer, ServerCore};
use partmap::store::core::{chunk_budget, Input as StoreInput, Next as StoreNext, StoreCore};
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

pub use super::parts::{Action, Awaiting, Bounds, ClientAppend, Leader, LeaderFlow, Liveness, Node, Packet, PendingSync, Reductions, ReplyTo, Route, ServerSlot, StoreDisk, Task, TaskSlot};
use super::parts::{judged, name};

/// The whole model state.
#[derive(Clone)]
pub struct World {
    /// The clock (µs).
    pub now_us: u64,
    /// The time the exploration started (µs).
    pub start_us: u64,
    knobs: Knobs,
    /// The authority's core.
    pub authority: AuthorityCore,
    /// The store's core (its memory: lost in a store crash).
    pub store: StoreCore,
    /// The store's disk and pending syncs (kept only with [`Bounds::max_store_crashes`] > 0:
    /// without store crashes the store syncs in the request's step and nothing is lost).
    pub disk: StoreDisk,
    /// The servers (`servers[0]` is server-1).
    pub servers: Vec<ServerSlot>,
    /// The manager candidates (`managers[0]` is `manager-1`, the leader after the setup;
    /// `managers[1]`, with [`Bounds::standby_rounds`] > 0, the standby `manager-2`).
    pub managers: Vec<Leader>,
    /// The authority's durable log, every record its core asked to persist, in order (the
    /// model applies each at once: no torn write, no authority crash).
    pub lock_log: Vec<partmap::authority::LockRecord>,
    /// A fold of `lock_log` (each record's text, in order), in the key when `judge_managers`.
    log_hash: u64,
    /// The configuration has more than one manager: `manager_exclusive` judges each state
    /// (announced and durable) and `map_tiles` the durable view, so the key also holds the
    /// fold of the `leader` events and of `lock_log`.
    pub judge_managers: bool,
    /// The client's appends, sent in order.
    pub client: Vec<ClientAppend>,
    /// Where the client may send (each route for the keys of its range).
    pub routes: Vec<Route>,
    /// Messages in flight.
    pub net: Vec<Packet>,
    /// The history, as the simulator's checkers read it.
    pub history: Vec<Event>,
    history_hash: u64,
    /// Per server (`session_hash[0]` is server-1), the fold of its session events.
    session_hash: Vec<u64>,
    /// Drops so far.
    pub drops: u32,
    /// Duplications so far.
    pub dups: u32,
    /// Delays so far ([`Action::Delay`]).
    pub delays: u32,
    /// Crashes so far.
    pub crashes: u32,
    /// Pre-copy chunks corrupted so far ([`Action::Corrupt`]).
    pub corrupts: u32,
    /// The corrupted chunks still in flight, by (to, token, copy): one is not flipped twice
    /// (sorted; in the key through the packets themselves, whose bytes it changed).
    corrupted: Vec<(Node, u64, u32)>,
    /// The servers cut off from the authority (in the order cut).
    pub cut: Vec<u32>,
    /// Record who emitted each history event (`emitters`), for the replay's triggers.
    pub track: bool,
    /// With `track`: per history event, the node whose core emitted it (`None`: the client's
    /// invocations and completions).
    pub emitters: Vec<Option<Node>>,
    /// The node whose core is taking the step being applied.
    emitting: Option<Node>,
    /// History indices the replay's triggers do not name: the depose setup's session renewals,
    /// which the simulator's servers make on their own clock, not at a step of the move.
    pub unanchored: std::ops::Range<usize>,
    /// The history index where the replay's triggers are armed: the operator's move request
    /// (move configurations) or the end of the setup (failover).
    pub armed_from: usize,
    /// `merge-move`: the history's length when the operator's move request was sent (after
    /// the merge was journaled), whose last event before it the replay arms the request on.
    /// Fixed for the search: not in the key.
    pub move_requested_at: Option<usize>,
    /// The client may also send to the owner, at its epoch, of the range holding the key in
    /// the authority's current map (a frontend's fresh map), besides `routes`.
    pub current_route: bool,
    /// The bounds.
    pub bounds: Bounds,
    /// The actions a setup played after the failover's (`stale-owner`'s forced prefix, see
    /// [`World::setup_stale_owner`]), in order: the replay plays them as steps of its own.
    pub prefix: Vec<Action>,
    /// The outputs of the action being applied (not part of the state).
    outputs: Vec<String>,
}

/// Clock at the start of the setup (µs): a restart's incarnation is always above 0.
const T0_US: u64 = 1_000_000;
/// The horizon (ms) of a setup's recorded prefix ([`World::prefix`]), whose clock moves to a
/// lease's end: past any the configurations reach.
pub(super) const PREFIX_HORIZON_MS: u64 = 60_000;
/// How long a crashed server stays down (µs).
pub(super) const RESTART_US: u64 = 100_000;

impl World {
    /// A world of `servers` servers, the authority, the store, a leader and a client with
    /// `appends` appends, all at rest at time `T0_US`.
    pub fn new(knobs: Knobs, servers: u32, appends: u64, bounds: Bounds) -> World {
        let servers_n = servers;
        let (authority, _) = AuthorityCore::recover(&knobs, &[], to_local(T0_US, drift_of(Node::Authority, bounds.drift_ppm)));
        let (store, _) = StoreCore::recover(&[], knobs.store_mutation());
        let servers = (1..=servers).map(|n| ServerSlot { core: ServerCore::with_knobs(ServerId(n), knobs.clone()), tasks: Vec::new(), down_until: None, starts: 0 }).collect();
        let client = (1..=appends).map(|seq| ClientAppend { id: OpId { client: 1, seq }, key: format!("k{seq}").into_bytes(), sent: None }).collect();
        let managers_n = if bounds.standby_rounds > 0 { 2 } else { 1 };
        let managers = (1..=managers_n).map(|candidate| Leader { candidate, epoch: 0, last_term: 0, valid_until_us: 0, lease_sent_us: 0, version: 0, rounds_left: 0, busy: false, pending: None, map: None, opens: VecDeque::new(), moves: VecDeque::new(), reshapes: VecDeque::new(), flow: None, calls: 0, next_round_us: 0, planning: None, load_asks: VecDeque::new(), loads: BTreeMap::new() }).collect();
        World { now_us: T0_US, start_us: T0_US, knobs, authority, store, disk: StoreDisk::default(), servers, managers, lock_log: Vec::new(), log_hash: 0, judge_managers: managers_n > 1, client, routes: Vec::new(), net: Vec::new(), history: Vec::new(), history_hash: 0, session_hash: vec![0; servers_n as usize], drops: 0, dups: 0, delays: 0, crashes: 0, corrupts: 0, corrupted: Vec::new(), cut: Vec::new(), current_route: false, track: false, emitters: Vec::new(), emitting: None, armed_from: 0, move_requested_at: None, unanchored: 0..0, bounds, prefix: Vec::new(), outputs: Vec::new() }
    }

    /// The state's 128-bit fingerprint: the parts [`World::hash_parts`] feeds, as bytes into a
    /// buffer this thread reuses ([`KeyBytes`]), then two SipHash-1-3 digests of the buffer (one
    /// keyed by a leading byte). Structural hashing (`#[derive(Hash)]` on the cores' types),
    /// not their `Debug` text: formatting the key was 57% of the search's CPU. Tokens and task
    /// ids are named by their makers' own steps (`name`), so they do not depend on the
    /// interleaving. Two states have one key exactly when they have one [`World::key_text`]
    /// (test `model_key_and_key_text_tell_the_same_states_apart`).
    pub fn key(&self) -> u128 {
        thread_local! {
            static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BYTES.with(|b| {
            let mut buf = b.borrow_mut();
            buf.clear();
            let mut bytes = KeyBytes(std::mem::take(&mut *buf));
            self.hash_parts(&mut bytes);
            let fingerprint = fingerprint(&bytes.0);
            *buf = bytes.0;
            fingerprint
        })
    }

    /// Feed the parts of the key to `h`, in [`World::write_key`]'s order and with its
    /// reductions: the clock, the authority, the store, each server (its core without the
    /// fields fixed for the search, its tasks as a set by id, down until, incarnations), the
    /// managers, the client, the network (each message's own fingerprint, sorted with
    /// [`Reductions::multiset`]), the fault counts and cuts, and the history's folds.
    fn hash_parts(&self, h: &mut KeyBytes) {
        self.now_us.hash(h);
        self.authority.hash(h);
        self.store.hash(h);
        for s in &self.servers {
            hash_server_core(&s.core, h);
            let mut tasks: Vec<&TaskSlot> = s.tasks.iter().collect();
            if self.bounds.reduce.multiset {
                tasks.sort_by_key(|t| t.id);
            }
            tasks.hash(h);
            s.down_until.hash(h);
            s.starts.hash(h);
        }
        self.managers.hash(h);
        self.client.hash(h);
        let mut net: Vec<u128> = self
            .net
            .iter()
            .map(|p| {
                let mut one = KeyBytes(Vec::new());
                p.hash(&mut one);
                fingerprint(&one.0)
            })
            .collect();
        if self.bounds.reduce.multiset {
            net.sort_unstable();
        }
        net.hash(h);
        (self.drops, self.dups, self.delays, self.crashes, &self.cut, self.history_hash, &self.session_hash).hash(h);
        if self.store_syncs_apart() {
            // As in `write_key`: each pending sync's mark as the records it still covers.
            let d = &self.disk;
            let syncs = d.pending_syncs();
            (&d.durable, &d.unsynced, syncs, d.down, d.crashes).hash(h);
        }
        (self.corrupts, &self.corrupted).hash(h);
        if self.judge_managers {
            self.log_hash.hash(h);
        }
    }

    /// The canonical encoding as text (the parts [`World::key`] hashes, as `Debug` text), for
    /// looking at a state.
    pub fn key_text(&self) -> String {
        let mut s = String::new();
        self.write_key(&mut s).expect("a String takes any text");
        s
    }

    /// Write the canonical encoding, part by part, `|` between parts: the clock, the
    /// authority, the store, each server (core, tasks as a set by id, down until,
    /// incarnations), the leader, the client, the network as a multiset (sorted), the fault
    /// counts (drops, duplications, crashes) and cuts, the history's two folds, and with
    /// store crashes in the bounds the store's disk (durable and unsynced records, pending
    /// syncs, down, crashes) (see
    /// `push_history`: the judged events other than session events, in order and without
    /// their times; per server, its session events in order). With [`Reductions::multiset`]
    /// off the network and the tasks are in the order sent and made; with
    /// [`Reductions::fold`] off the first fold is of the whole history.
    pub fn write_key(&self, out: &mut dyn std::fmt::Write) -> std::fmt::Result {
        let mut net: Vec<String> = self.net.iter().map(|p| format!("{p:?}")).collect();
        if self.bounds.reduce.multiset {
            net.sort();
        }
        write!(out, "{}|{:?}|{:?}", self.now_us, self.authority, self.store)?;
        for s in &self.servers {
            let mut tasks: Vec<&TaskSlot> = s.tasks.iter().collect();
            if self.bounds.reduce.multiset {
                tasks.sort_by_key(|t| t.id);
            }
            out.write_char('|')?;
            write_server_core(out, &s.core)?;
            write!(out, "|{tasks:?}|{:?}|{}", s.down_until, s.starts)?;
        }
        // One manager is written as it was before the standby (a lone `Leader`).
        match self.managers.as_slice() {
            [one] => write!(out, "|{one:?}")?,
            many => write!(out, "|{many:?}")?,
        }
        write!(out, "|{:?}|{}|{}|{}|{}|{}|{:?}|{}|{:?}", self.client, net.join(";"), self.drops, self.dups, self.delays, self.crashes, self.cut, self.history_hash, self.session_hash)?;
        write!(out, "|{}|{:?}", self.corrupts, self.corrupted)?;
        if self.judge_managers {
            write!(out, "|{}", self.log_hash)?;
        }
        if self.store_syncs_apart() {
            // The disk: durable and unsynced records, the pending syncs (each mark as the
            // records it still covers, not the disk's lifetime count), down, crashes.
            let d = &self.disk;
            let syncs = d.pending_syncs();
            write!(out, "|{:?}|{:?}|{syncs:?}|{}|{}", d.durable, d.unsynced, d.down, d.crashes)?;
        }
        Ok(())
    }

    fn emit(&mut self, sys: Sys) {
        let by = self.emitting;
        self.push_history(What::Sys(sys));
        if self.track {
            *self.emitters.last_mut().expect("pushed") = by;
        }
    }

    /// Append an event to the history and fold it into the state's key. Only the kinds
    /// `single_writer` reads are folded (`judged`), without their times (`t_us`, and a
    /// renewal's `valid_until_ms`: the checker puts times only into its messages, never into a
    /// verdict), and in two folds: a server's session events (`renewed`, `lease_expired`) into
    /// that server's own fold, every other judged event into one fold in history order. Sound
    /// because the checker's state is two disjoint parts: per server, the session it last
    /// renewed and the session the authority expired (read from that server's session events
    /// only); and the rest, read from the other events only. The only cross-read is clause 7,
    /// an `admit` or strong `read_served` looking up the server's expired session, and it
    /// changes no state: it either passes or is the violation that ends the search. So two
    /// violation-free histories with equal folds leave the checker in the same state, and
    /// every extension gets the same verdict; what the fold forgets is the interleaving of one
    /// server's renewals with another's and with the range's events, and when each happened.
    ///
    /// With [`Reductions::fold`] off, every event, of any kind and with its time, goes into
    /// the one fold in history order: the key then tells apart every two histories.
    fn push_history(&mut self, what: What) {
        let ev = Event { t_us: self.now_us, what };
        self.outputs.push(format!("{}", ev.what));
        if !self.bounds.reduce.fold {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (ev.t_us, &ev.what, self.history_hash).hash(&mut h);
            self.history_hash = h.finish();
        } else if judged(&ev.what) || (self.judge_managers && matches!(ev.what, What::Sys(Sys::Leader { .. } | Sys::LeaderRecovered { .. }))) {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let fold = match &ev.what {
                What::Sys(Sys::Renewed { server, session, ok, .. }) => {
                    (server.0, session, ok).hash(&mut h);
                    &mut self.session_hash[server.0 as usize - 1]
                }
                What::Sys(Sys::LeaseExpired { server, session }) => {
                    (u32::MAX, server.0, session).hash(&mut h);
                    &mut self.session_hash[server.0 as usize - 1]
                }
                what => {
                    what.hash(&mut h);
                    &mut self.history_hash
                }
            };
            fold.hash(&mut h);
            *fold = h.finish();
        }
        self.history.push(ev);
        if self.track {
            self.emitters.push(None);
        }
    }

    /// Whether the link between `a` and `b` is cut.
    fn is_cut(&self, a: Node, b: Node) -> bool {
        match (a, b) {
            (Node::Server(n), Node::Authority) | (Node::Authority, Node::Server(n)) => self.cut.contains(&n),
            _ => false,
        }
    }

    fn send(&mut self, from: Node, to: Node, token: u64, msg: Msg, answer: bool) {
        if self.is_cut(from, to) {
            self.outputs.push(format!("{} {} -> {to} lost (cut)", if answer { "answer" } else { "send" }, msg.kind_name()));
            return;
        }
        self.outputs.push(format!("{} {} -> {to}", if answer { "answer" } else { "send" }, msg.kind_name()));
        self.net.push(Packet { to, from, token, answer, msg, copy: 0, slow: false });
    }

    /// `node`'s clock now (µs): the global clock scaled by its drift ([`drift_of`]), as the
    /// simulator's clocks read `rate × elapsed` (`seam::clock`); the global clock itself
    /// without drift.
    pub fn local_us(&self, node: Node) -> u64 {
        to_local(self.now_us, drift_of(node, self.bounds.drift_ppm))
    }

    /// The global instant (µs) at which `node`'s clock first reads `local_us` or more.
    pub fn global_at(&self, node: Node, local_us: u64) -> u64 {
        to_global(local_us, drift_of(node, self.bounds.drift_ppm))
    }

    fn server(&mut self, n: u32) -> &mut ServerSlot {
        &mut self.servers[n as usize - 1]
    }

    // ---- servers -------------------------------------------------------------------------

    /// Feed `input` to server `n`'s core for task `id` (at its step `steps`) and perform the
    /// step.
    fn server_input(&mut self, n: u32, id: u64, steps: u32, reply_to: ReplyTo, input: Input) {
        // The core reads its own clock; its timers are kept as global deadlines.
        let me = Node::Server(n);
        let now = self.local_us(me);
        let at = |w: &World, ms: u64| w.global_at(me, now + ms * 1000);
        self.emitting = Some(me);
        let step = self.server(n).core.handle(input, now);
        let steps = steps + 1;
        let mut spawned = 0;
        for effect in step.effects {
            match effect {
                Effect::Event(ev) => self.emit(ev),
                Effect::Goal(_) | Effect::Progress(_) => {}
                Effect::Spawn(then) => {
                    spawned += 1;
                    let task = TaskSlot { id: name(&[id, u64::from(steps), spawned]), task: Task::Ready(then), reply_to: ReplyTo::Nobody, steps: 0 };
                    self.server(n).tasks.push(task);
                }
            }
        }
        match step.next {
            Next::Done(reply) => self.finish_task(n, id, reply_to, reply),
            Next::Call { to, msg, timeout_ms, then } => {
                let token = name(&[u64::from(n), id, u64::from(steps)]);
                let to = match to {
                    Peer::Store => Node::Store,
                    Peer::Authority => Node::Authority,
                };
                self.send(Node::Server(n), to, token, msg, false);
                let deadline_us = at(self, timeout_ms);
                self.server(n).tasks.push(TaskSlot { id, task: Task::Call { token, then, deadline_us }, reply_to, steps });
            }
            Next::Sleep { ms, then } => {
                let until_us = at(self, ms);
                self.server(n).tasks.push(TaskSlot { id, task: Task::Sleep { then, until_us }, reply_to, steps })
            }
            Next::Wait { wait, timeout_ms } => {
                let deadline_us = timeout_ms.map(|ms| at(self, ms));
                self.server(n).tasks.push(TaskSlot { id, task: Task::Wait { wait, deadline_us }, reply_to, steps })
            }
            Next::Detach { flow, patience_ms, otherwise } => {
                let child = name(&[id, u64::from(steps), 0]);
                let until_us = at(self, patience_ms);
                let s = self.server(n);
                s.tasks.push(TaskSlot { id: child, task: Task::Ready(flow), reply_to: ReplyTo::Parent(id), steps: 0 });
                s.tasks.push(TaskSlot { id, task: Task::Detached { child, until_us, otherwise }, reply_to, steps });
            }
        }
    }

    /// Task `id` of server `n` ended with `reply`: answer whom it answers.
    fn finish_task(&mut self, n: u32, id: u64, reply_to: ReplyTo, reply: Option<Msg>) {
        match reply_to {
            ReplyTo::Nobody => {}
            ReplyTo::Net { to, token } => {
                if let Some(msg) = reply {
                    self.send(Node::Server(n), to, token, msg, true);
                }
            }
            ReplyTo::Parent(parent) => {
                let s = self.server(n);
                let Some(i) = s.tasks.iter().position(|t| t.id == parent && matches!(&t.task, Task::Detached { child, .. } if *child == id)) else { return };
                let p = s.tasks.remove(i);
                let Task::Detached { otherwise, .. } = p.task else { unreachable!("matched") };
                self.finish_task(n, parent, p.reply_to, Some(reply.unwrap_or(otherwise)));
            }
        }
    }

    // ---- the managers ---------------------------------------------------------------------

    /// Whether the rounds check their own lease before they write (`lead_once`'s
    /// `valid_until`): only with a standby. With one manager the check guards nothing the
    /// model judges, and the figures of the configurations measured without it stay theirs.
    fn checks_lease(&self) -> bool {
        self.managers.len() > 1
    }

    /// Manager `m` (index: 0 is `manager-1`) calls `to`; its calls are named by its own count.
    fn leader_call(&mut self, m: usize, to: Node, msg: Msg, timeout_ms: u64, what: Awaiting) {
        let l = &mut self.managers[m];
        l.calls += 1;
        // `manager-1`'s tokens as they were with one manager; another's name it too.
        let token = if m == 0 { name(&[u64::MAX, u64::from(l.calls)]) } else { name(&[u64::MAX, m as u64, u64::from(l.calls)]) };
        let from = Node::Manager(l.candidate);
        self.send(from, to, token, msg, false);
        self.managers[m].pending = Some((token, self.now_us + timeout_ms * 1000, what));
    }

    /// Whether manager `m`'s round still trusts its lease now (always, without a standby).
    fn trusts_lease(&self, m: usize) -> bool {
        !self.checks_lease() || self.now_us < self.managers[m].valid_until_us
    }

    /// Commit `op` as `manager::Leader::commit` does: not once the lease is no longer trusted
    /// (the round stops; an activation's open just ends, as its task does in `lead_once`).
    fn leader_commit(&mut self, m: usize, op: MapOp, what: Awaiting) {
        if !self.trusts_lease(m) {
            self.outputs.push("lease no longer trusted: no commit".into());
            return match what {
                Awaiting::Activate => self.leader_go_on(m, None),
                _ => self.end_round(m),
            };
        }
        let l = &self.managers[m];
        let cas = Msg::CasMap { expected_version: l.version, leader_epoch: l.epoch, candidate: l.candidate, ops: vec![op] };
        self.leader_call(m, Node::Authority, cas, self.knobs.rpc_timeout_ms, what);
    }

    fn end_round(&mut self, m: usize) {
        let l = &mut self.managers[m];
        l.busy = false;
        l.pending = None;
        l.flow = None;
        l.opens.clear();
        l.moves.clear();
        l.reshapes.clear();
        l.map = None;
        l.planning = None;
        l.load_asks.clear();
        l.loads.clear();
        l.valid_until_us = 0;
        l.lease_sent_us = 0;
        l.next_round_us = self.now_us + self.knobs.manager_tick_ms * 1000;
        self.outputs.push("round ends".into());
    }

    /// Go on with manager `m`'s round: the flow's next step given `reply`, or the next open or
    /// move.
    fn leader_go_on(&mut self, m: usize, mut reply: Option<Reply>) {
        loop {
            if let Some(flow) = self.managers[m].flow.as_mut() {
                match flow.next(reply.take(), self.now_us / 1000) {
                    FlowStep::Done => self.managers[m].flow = None,
                    FlowStep::StopRound => return self.end_round(m),
                    FlowStep::Commit(op) => return self.leader_commit(m, op, Awaiting::FlowCommit),
                    FlowStep::Call { to, msg, timeout_ms } => {
                        let to = match to {
                            LeaderPeer::Server(s) => Node::Server(s.0),
                            LeaderPeer::Store => Node::Store,
                        };
                        return self.leader_call(m, to, msg, timeout_ms, Awaiting::FlowCall);
                    }
                }
                continue;
            }
            let l = &mut self.managers[m];
            if let Some(row) = l.opens.pop_front() {
                let map = l.map.as_ref().expect("a round's map");
                let lineage = manager::row_lineage(map, &row);
                let owner = row.owner.expect("preparing rows have an owner");
                let open = Msg::Open { row: Box::new(row.clone()), leader_epoch: l.epoch, lineage };
                return self.leader_call(m, Node::Server(owner.0), open, self.knobs.store_timeout_ms + self.knobs.rpc_timeout_ms, Awaiting::Open(Box::new(row)));
            }
            if let Some(t) = l.moves.pop_front() {
                let map = l.map.as_ref().expect("a round's map");
                let Some(row) = map.rows.get(&t.range) else { continue };
                l.flow = Some(LeaderFlow::Move(MoveFlow::new(&t, row, map, l.epoch, &self.knobs)));
                continue;
            }
            if let Some(r) = l.reshapes.pop_front() {
                let map = l.map.as_ref().expect("a round's map");
                // The round's load reports (none unless the knobs reshape by load).
                l.flow = Some(LeaderFlow::Reshape(ReshapeFlow::new(&r, map, &l.loads, l.epoch, &self.knobs)));
                continue;
            }
            return self.end_round(m);
        }
    }

    /// Manager `m` asks the next server for its load report, or, with every report in, plans
    /// the round.
    fn ask_load(&mut self, m: usize) {
        if let Some(server) = self.managers[m].load_asks.pop_front() {
            let msg = Msg::GetLoad { leader_epoch: self.managers[m].epoch };
            return self.leader_call(m, Node::Server(server), msg, self.knobs.rpc_timeout_ms, Awaiting::Load);
        }
        let (map, sessions) = self.managers[m].planning.take().expect("a round's state while it collects loads");
        self.leader_plan(m, map, &sessions);
    }

    /// Manager `m` plans the round on `map` and `sessions` (and the round's load reports):
    /// commit the planner's ops (the round then ends), or go on with its opens, moves and
    /// reshapes. As `lead_once`, a round that no longer trusts its lease stops here, before
    /// any write.
    fn leader_plan(&mut self, m: usize, map: PartitionMap, sessions: &[partmap::msg::SessionView]) {
        let p = manager::plan(&map, sessions, &self.managers[m].loads, self.now_us / 1000, &self.knobs);
        if !self.trusts_lease(m) {
            self.outputs.push("lease no longer trusted: the round stops".into());
            return self.end_round(m);
        }
        if !p.ops.is_empty() {
            let l = &self.managers[m];
            let cas = Msg::CasMap { expected_version: map.version, leader_epoch: l.epoch, candidate: l.candidate, ops: p.ops };
            return self.leader_call(m, Node::Authority, cas, self.knobs.rpc_timeout_ms, Awaiting::PlanCas);
        }
        let l = &mut self.managers[m];
        l.map = Some(map);
        l.opens = p.opens.into();
        l.moves = p.moves.into();
        l.reshapes = p.reshapes.into();
        self.leader_go_on(m, None);
    }

    /// Manager `m`'s pending call was answered (`Some`) or timed out.
    fn leader_answered(&mut self, m: usize, answer: Option<Msg>) {
        let Some((_, _, what)) = self.managers[m].pending.take() else { return };
        let candidate = self.managers[m].candidate;
        match (what, answer) {
            (Awaiting::Lease, Some(Msg::LeaderLease { epoch: Some(e), holder: Some(h) })) if h == candidate => {
                let trusted_ms = self.knobs.lease_ms.saturating_sub(self.knobs.lease_margin());
                let two = self.checks_lease();
                let l = &mut self.managers[m];
                l.epoch = e;
                if two {
                    l.last_term = e;
                    l.valid_until_us = l.lease_sent_us + trusted_ms * 1000;
                }
                self.leader_call(m, Node::Authority, Msg::GetState, self.knobs.rpc_timeout_ms, Awaiting::State);
            }
            // Mutation `authority-skips-leader-epoch`, as `manager::run`: refused the lease, a
            // manager that led before leads on at its last term, trusting it without end.
            (Awaiting::Lease, Some(Msg::LeaderLease { epoch: None, .. })) if self.managers[m].last_term > 0 && self.knobs.mutated(partmap::config::Mutation::AuthoritySkipsLeaderEpoch) => {
                let l = &mut self.managers[m];
                l.epoch = l.last_term;
                l.valid_until_us = u64::MAX;
                self.outputs.push(format!("refused the lease: leads on at its last term {}", l.last_term));
                self.leader_call(m, Node::Authority, Msg::GetState, self.knobs.rpc_timeout_ms, Awaiting::State);
            }
            (Awaiting::State, Some(Msg::State { map, sessions })) => {
                self.managers[m].version = map.version;
                if self.knobs.split_ops_per_s > 0.0 || self.knobs.merge_ops_per_s > 0.0 {
                    // As `lead_once`: reshaping by load, ask every live server for its report.
                    self.managers[m].load_asks = sessions.iter().filter(|s| s.live).map(|s| s.server.0).collect();
                    self.managers[m].planning = Some((PartitionMap::clone(&map), sessions));
                    return self.ask_load(m);
                }
                self.leader_plan(m, PartitionMap::clone(&map), &sessions);
            }
            (Awaiting::Load, answer) => {
                // Only the report of the range's owner at the map's epoch, as `collect_loads`.
                let l = &mut self.managers[m];
                if let (Some(Msg::Load { ranges }), Some((map, _))) = (answer, l.planning.as_ref()) {
                    for r in ranges.into_iter().filter(|r| map.rows.get(&r.range).is_some_and(|row| row.epoch == r.epoch)) {
                        l.loads.insert(r.range, r);
                    }
                }
                self.ask_load(m);
            }
            (Awaiting::Open(row), Some(Msg::Opened { result: Ok(()) })) => self.leader_commit(m, MapOp::Activate { range: row.id, epoch: row.epoch }, Awaiting::Activate),
            (Awaiting::Open(_), _) => self.leader_go_on(m, None),
            (Awaiting::Activate, Some(Msg::CasResult { map, .. })) => {
                self.managers[m].version = map.version;
                self.leader_go_on(m, None);
            }
            (Awaiting::FlowCall, answer) => self.leader_go_on(m, Some(answer.map_or(Reply::NoAnswer, Reply::Answer))),
            (Awaiting::FlowCommit, Some(Msg::CasResult { map, error })) => {
                self.managers[m].version = map.version;
                self.leader_go_on(m, Some(Reply::Committed(error.is_none())));
            }
            // The lease refused, the plan's commit answered or not, a commit unanswered.
            _ => self.end_round(m),
        }
    }

    // ---- the authority and the store -----------------------------------------------------

    fn authority_request(&mut self, p: Packet) {
        let now = self.local_us(Node::Authority);
        self.emitting = Some(Node::Authority);
        let mut action = self.authority.handle(&p.msg, now, false);
        loop {
            match action {
                AuthorityAction::NeedLock => action = self.authority.handle(&p.msg, now, true),
                AuthorityAction::Persist { after, events, records } => {
                    events.into_iter().for_each(|e| self.emit(e));
                    for r in records.into_iter().filter(|_| self.judge_managers) {
                        let mut h = std::collections::hash_map::DefaultHasher::new();
                        (format!("{r:?}"), self.log_hash).hash(&mut h);
                        self.log_hash = h.finish();
                        self.lock_log.push(r);
                    }
                    action = self.authority.apply(after, now);
                }
                AuthorityAction::Reply { msg, events } => {
                    events.into_iter().for_each(|e| self.emit(e));
                    return self.send(Node::Authority, p.from, p.token, msg, true);
                }
            }
        }
    }

    /// Whether the store's sync is a step of its own ([`Action::StoreSync`]) and its disk is
    /// kept: only when a store crash is within the bounds.
    pub fn store_syncs_apart(&self) -> bool {
        self.bounds.max_store_crashes > 0
    }

    fn store_request(&mut self, p: Packet) {
        if self.disk.down {
            self.outputs.push(format!("lost: store-1 is down ({} from {})", p.msg.kind_name(), p.from));
            return;
        }
        let budget = chunk_budget(self.knobs.bandwidth_bytes_per_s, self.knobs.store_timeout_ms, 0);
        self.emitting = Some(Node::Store);
        let step = self.store.handle(StoreInput::Request { msg: p.msg, budget });
        self.store_step(p.from, p.token, step);
    }

    /// Perform a store step as `store/node.rs`'s `answer` does: write its records to the disk
    /// (unsynced), emit its events, then answer `to`, or begin a sync (its mark: every record
    /// written so far) that [`Action::StoreSync`] ends later. Without store crashes in the
    /// bounds the sync ends in this step and the disk is not kept.
    fn store_step(&mut self, to: Node, token: u64, mut step: partmap::store::core::Step) {
        let apart = self.store_syncs_apart();
        loop {
            if apart {
                self.disk.written += step.writes.len() as u64;
                self.disk.unsynced.extend(step.writes);
            }
            step.events.into_iter().for_each(|e| self.emit(e));
            match step.next {
                StoreNext::Reply(msg) => return self.send(Node::Store, to, token, msg, true),
                StoreNext::Sync(then) if apart => {
                    let mark = self.disk.written;
                    self.outputs.push(format!("sync begins ({} unsynced)", self.disk.unsynced.len()));
                    self.disk.syncs.push_back(PendingSync { to, token, then, mark });
                    return;
                }
                StoreNext::Sync(then) => step = self.store.handle(StoreInput::Synced(then)),
            }
        }
    }

    /// End the store's oldest pending sync: the records written before it began are durable
    /// (`Disk::sync`), and its request goes on.
    fn store_sync(&mut self) {
        let s = self.disk.syncs.pop_front().expect("enabled: a pending sync");
        let d = &mut self.disk;
        let n = (s.mark.saturating_sub(d.settled) as usize).min(d.unsynced.len());
        d.durable.extend(d.unsynced.drain(..n));
        d.settled += n as u64;
        self.outputs.push(format!("{n} records durable"));
        self.emitting = Some(Node::Store);
        let step = self.store.handle(StoreInput::Synced(s.then));
        self.store_step(s.to, s.token, step);
    }

    /// Crash the store: the first `keep` unsynced records survive (`Disk::crash_torn`; 0:
    /// `Disk::crash`), the rest are lost (the one after the survivors torn), pending syncs and
    /// memory lost. The core is the one the durable records recover, from now (it answers
    /// nothing until [`Action::StoreRestart`]).
    fn store_crash(&mut self, keep: usize) -> String {
        let d = &mut self.disk;
        let keep = keep.min(d.unsynced.len());
        d.durable.extend(d.unsynced.drain(..keep));
        let lost = d.unsynced.len();
        d.unsynced.clear();
        d.settled += (keep + lost) as u64;
        let syncs = d.syncs.len();
        d.syncs.clear();
        d.down = true;
        d.crashes += 1;
        self.store = StoreCore::recover(&self.disk.durable, self.knobs.store_mutation()).0;
        let torn = keep > 0 && lost > 0;
        format!("crash (memory lost, {syncs} pending syncs lost; unsynced: {lost} lost, {keep} kept{})", if torn { ", the next torn" } else { "" })
    }

    /// Restart the store: its core recovered from the durable records (`store/node.rs`'s
    /// `run`), and its `recovered` event.
    fn store_restart(&mut self) {
        self.disk.down = false;
        let (core, events) = StoreCore::recover(&self.disk.durable, self.knobs.store_mutation());
        self.store = core;
        self.emitting = Some(Node::Store);
        events.into_iter().for_each(|e| self.emit(e));
    }

    // ---- actions -------------------------------------------------------------------------

    /// Every action enabled now, in a fixed order.
    pub fn enabled(&self) -> Vec<Action> {
        let mut out = Vec::new();
        for i in 0..self.net.len() {
            out.push(Action::Deliver(i));
            if self.drops < self.bounds.max_drops {
                out.push(Action::Drop(i));
            }
            if self.dups < self.bounds.max_dups && !self.net[i].answer {
                out.push(Action::Duplicate(i));
            }
            // Only with urgent time: without it any message may already stay in flight while
            // the clock moves, and the mark would change nothing but the state's key.
            if self.bounds.urgent && self.delays < self.bounds.max_delays && !self.net[i].slow {
                out.push(Action::Delay(i));
            }
            if self.corrupts < self.bounds.max_corrupts && self.corruptible(i) {
                out.push(Action::Corrupt(i));
            }
        }
        let now = self.now_us;
        for (i, s) in self.servers.iter().enumerate() {
            let server = i as u32 + 1;
            if let Some(until) = s.down_until {
                if until <= now {
                    out.push(Action::Restart(server));
                }
                continue;
            }
            for t in &s.tasks {
                let task = t.id;
                match &t.task {
                    Task::Ready(_) => out.push(Action::Task { server, task, timed_out: false }),
                    Task::Sleep { until_us, .. } | Task::Detached { until_us, .. } if *until_us <= now => out.push(Action::Task { server, task, timed_out: false }),
                    Task::Call { deadline_us, .. } if *deadline_us <= now => out.push(Action::Task { server, task, timed_out: true }),
                    Task::Wait { wait, deadline_us } => {
                        if s.core.poll(wait).is_none() {
                            out.push(Action::Task { server, task, timed_out: false });
                        }
                        if deadline_us.is_some_and(|d| d <= now) {
                            out.push(Action::Task { server, task, timed_out: true });
                        }
                    }
                    _ => {}
                }
            }
            if self.crashes < self.bounds.max_crashes {
                out.push(Action::Crash(server));
            }
            let owns = self.authority.map().rows.values().any(|r| r.owner == Some(ServerId(server)));
            if (self.cut.len() as u32) < self.bounds.max_cuts && !self.cut.contains(&server) && owns {
                out.push(Action::Cut(server));
            }
        }
        if self.store_syncs_apart() {
            if self.disk.down {
                out.push(Action::StoreRestart);
            } else {
                if !self.disk.syncs.is_empty() {
                    out.push(Action::StoreSync);
                }
                if self.disk.crashes < self.bounds.max_store_crashes {
                    // As the simulator's torn crash draws it: 0 to 8 unsynced records kept.
                    let most = if self.bounds.torn_writes { self.disk.unsynced.len().min(8) } else { 0 };
                    out.extend((0..=most).map(|keep| Action::StoreCrash { keep }));
                }
            }
        }
        for l in &self.managers {
            if !l.busy && l.rounds_left > 0 && (!self.bounds.ticked || l.next_round_us <= now) {
                out.push(Action::StartRound(l.candidate));
            }
            if l.pending.as_ref().is_some_and(|(_, d, _)| *d <= now) {
                out.push(Action::LeaderTimeout(l.candidate));
            }
        }
        if let Some(i) = self.client.iter().position(|a| a.sent.is_none()) {
            if i == 0 || (self.client[i - 1].sent.is_some() && (!self.bounds.closed_loop || matches!(self.client[i - 1].sent, Some((_, Some(_)))))) {
                for r in self.routes(&self.client[i].key) {
                    out.push(Action::SendAppend { server: r.server, range: r.range, epoch: r.epoch });
                }
            }
        }
        // Urgent: time waits for every message in flight and every server step that can go
        // on without it (messages are faster than any timer, as the simulator's 1 to 5 ms
        // latencies are; a slower message is a drop, a cut, or one marked slow by a delay).
        let settled = !self.bounds.urgent || (self.net.iter().all(|p| p.slow) && !out.iter().any(|a| matches!(a, Action::Task { timed_out: false, .. } | Action::Restart(_) | Action::StoreSync | Action::StoreRestart) || (self.bounds.ticked && matches!(a, Action::StartRound(_)))));
        if settled && self.next_deadline().is_some() {
            out.push(Action::Advance);
        }
        out
    }

    /// The next instant after now at which something can change by time alone (a timer, a
    /// call's timeout, a lease's end), within the horizon.
    fn next_deadline(&self) -> Option<u64> {
        let now = self.now_us;
        let mut ds: Vec<u64> = self.authority.lease_deadlines_us().into_iter().map(|d| self.global_at(Node::Authority, d)).collect();
        for (i, s) in self.servers.iter().enumerate() {
            if let Some(d) = s.down_until {
                ds.push(d);
                continue;
            }
            if s.core.session.is_some() {
                ds.push(self.global_at(Node::Server(i as u32 + 1), s.core.lease_valid_until_us));
            }
            for t in &s.tasks {
                match &t.task {
                    Task::Call { deadline_us, .. } => ds.push(*deadline_us),
                    Task::Sleep { until_us, .. } | Task::Detached { until_us, .. } => ds.push(*until_us),
                    Task::Wait { deadline_us: Some(d), .. } => ds.push(*d),
                    _ => {}
                }
            }
        }
        for l in &self.managers {
            if let Some((_, d, _)) = &l.pending {
                ds.push(*d);
            }
            if self.bounds.ticked && !l.busy && l.rounds_left > 0 {
                ds.push(l.next_round_us);
            }
        }
        let horizon = self.start_us + self.bounds.horizon_ms * 1000;
        ds.into_iter().filter(|d| *d > now && *d <= horizon).min()
    }

    /// Where the client may send an append to `key`: the `routes` whose range holds it, and
    /// with `current_route` the owner, at its epoch, of the live row holding it in the
    /// authority's current map.
    pub fn routes(&self, key: &[u8]) -> Vec<Route> {
        let mut out: Vec<Route> = self.routes.iter().filter(|r| r.holds(key)).cloned().collect();
        if self.current_route {
            if let Some(row) = self.authority.map().live_rows().into_iter().find(|r| r.contains(key)) {
                if let Some(o) = row.owner {
                    if !out.iter().any(|r| (r.server, r.range, r.epoch) == (o.0, row.id.0, row.epoch.0)) {
                        out.push(Route { server: o.0, range: row.id.0, epoch: row.epoch.0, start: row.start.clone(), end: row.end.clone() });
                    }
                }
            }
        }
        out
    }

    /// Apply `action`; returns the transcript line's node, input and outputs.
    pub fn apply(&mut self, action: &Action) -> (String, String, Vec<String>) {
        self.outputs.clear();
        let (node, input) = match action {
            Action::Deliver(i) => {
                let p = self.net.remove(*i);
                let (node, input) = (p.to.to_string(), format!("{} {} from {}", if p.answer { "answer" } else { "request" }, describe(&p.msg), p.from));
                self.deliver(p);
                (node, input)
            }
            Action::Drop(i) => {
                let p = self.net.remove(*i);
                self.drops += 1;
                ("network".to_string(), format!("drop {} {} -> {}", describe(&p.msg), p.from, p.to))
            }
            Action::Duplicate(i) => {
                self.dups += 1;
                let copy = Packet { copy: self.dups, slow: false, ..self.net[*i].clone() };
                let input = format!("duplicate {} {} -> {} (copy {})", describe(&copy.msg), copy.from, copy.to, copy.copy);
                self.net.push(copy);
                ("network".to_string(), input)
            }
            Action::Delay(i) => {
                self.delays += 1;
                let p = &mut self.net[*i];
                p.slow = true;
                ("network".to_string(), format!("delay {} {} -> {} (slow: time may move while it is in flight)", describe(&p.msg), p.from, p.to))
            }
            Action::Corrupt(i) => {
                self.corrupts += 1;
                let p = &mut self.net[*i];
                let flipped = partmap::seam::net::corrupt_precopy(&mut p.msg);
                debug_assert!(flipped, "enabled only on a corruptible chunk");
                let (to, token, copy) = (p.to, p.token, p.copy);
                let input = format!("corrupt {} {} -> {to} (one bit flipped)", describe(&p.msg), p.from);
                self.corrupted.push((to, token, copy));
                self.corrupted.sort_unstable();
                ("network".to_string(), input)
            }
            Action::Task { server, task, timed_out } => {
                let input = self.run_task(*server, *task, *timed_out);
                (format!("server-{server}"), input)
            }
            Action::StartRound(c) => {
                let m = *c as usize - 1;
                let now = self.now_us;
                let l = &mut self.managers[m];
                l.busy = true;
                l.rounds_left -= 1;
                if self.managers.len() > 1 {
                    self.managers[m].lease_sent_us = now;
                }
                self.leader_call(m, Node::Authority, Msg::AcquireLeader { candidate: *c }, self.knobs.rpc_timeout_ms, Awaiting::Lease);
                (format!("manager-{c}"), "start a round".to_string())
            }
            Action::LeaderTimeout(c) => {
                self.leader_answered(*c as usize - 1, None);
                (format!("manager-{c}"), "call timed out".to_string())
            }
            Action::SendAppend { server, range, epoch } => {
                let i = self.client.iter().position(|a| a.sent.is_none()).expect("enabled");
                let (id, key) = (self.client[i].id, self.client[i].key.clone());
                let token = name(&[u64::MAX - 1, id.seq]);
                self.client[i].sent = Some((token, None));
                self.push_history(What::Invoke { op: ClientOp::Append, id, key: key.clone(), bound_ms: None });
                let msg = Msg::Append { range: RangeId(*range), epoch: Epoch(*epoch), key, id, bytes: crate::workload::payload(id, 0).into(), bulk: 0 };
                self.send(Node::Client, Node::Server(*server), token, msg, false);
                ("client-1".to_string(), format!("append {}.{} to server-{server} for r{range} at e{epoch}", id.client, id.seq))
            }
            Action::Crash(n) => {
                let knobs = self.knobs.clone();
                let until = self.now_us + RESTART_US;
                let s = self.server(*n);
                s.core = ServerCore::with_knobs(ServerId(*n), knobs);
                s.tasks.clear();
                s.down_until = Some(until);
                self.crashes += 1;
                (format!("server-{n}"), "crash (memory lost)".to_string())
            }
            Action::Restart(n) => {
                self.server(*n).down_until = None;
                self.start_server(*n);
                (format!("server-{n}"), "restart".to_string())
            }
            Action::Cut(n) => {
                self.cut.push(*n);
                let before = self.net.len();
                let me = Node::Server(*n);
                self.net.retain(|p| !((p.from == me && p.to == Node::Authority) || (p.to == me && p.from == Node::Authority)));
                let lost = before - self.net.len();
                (format!("server-{n}"), format!("cut from lock-1 ({lost} in flight lost)"))
            }
            Action::StoreSync => {
                self.store_sync();
                ("store-1".to_string(), "sync ends".to_string())
            }
            Action::StoreCrash { keep } => {
                let input = self.store_crash(*keep);
                ("store-1".to_string(), input)
            }
            Action::StoreRestart => {
                self.store_restart();
                ("store-1".to_string(), "restart (recovered from the durable records)".to_string())
            }
            Action::Advance => {
                let to = self.next_deadline().expect("enabled");
                let from = self.now_us;
                self.now_us = to;
                ("clock".to_string(), format!("advance {:.3}s -> {:.3}s", (from - self.start_us) as f64 / 1e6, (to - self.start_us) as f64 / 1e6))
            }
        };
        self.collect_stale_answers();
        (node, input, std::mem::take(&mut self.outputs))
    }

    /// Start server `n`'s session upkeep (a fresh incarnation).
    pub fn start_server(&mut self, n: u32) {
        let s = self.server(n);
        s.starts += 1;
        let id = name(&[u64::from(n), u64::from(s.starts)]);
        self.server_input(n, id, 0, ReplyTo::Nobody, Input::Start);
    }

    fn deliver(&mut self, p: Packet) {
        match (p.to, p.answer) {
            (Node::Authority, false) => self.authority_request(p),
            (Node::Store, false) => self.store_request(p),
            (Node::Server(n), false) => {
                if self.server(n).down_until.is_some() {
                    return;
                }
                let id = name(&[u64::from(n), p.token, (1 << 40) + u64::from(p.copy)]);
                self.server_input(n, id, 0, ReplyTo::Net { to: p.from, token: p.token }, Input::Request { msg: p.msg, link_backlog_us: 0 });
            }
            (Node::Server(n), true) => {
                let s = self.server(n);
                let Some(i) = s.tasks.iter().position(|t| matches!(&t.task, Task::Call { token, .. } if *token == p.token)) else { return };
                let t = s.tasks.remove(i);
                let Task::Call { then, .. } = t.task else { unreachable!("matched") };
                self.server_input(n, t.id, t.steps, t.reply_to, Input::Answered { then, answer: Some(p.msg) });
            }
            (Node::Manager(c), true) if self.managers[c as usize - 1].pending.as_ref().is_some_and(|(t, _, _)| *t == p.token) => self.leader_answered(c as usize - 1, Some(p.msg)),
            (Node::Client, true) => {
                let Some(i) = self.client.iter().position(|a| matches!(a.sent, Some((t, None)) if t == p.token)) else { return };
                let (outcome, reason) = match &p.msg {
                    Msg::Served { result: Ok(_) } => (Outcome::Ok, String::new()),
                    Msg::Served { result: Err(r) } => (Outcome::Fail, format!("{r:?}")),
                    _ => (Outcome::Unknown, p.msg.kind_name().to_string()),
                };
                let a = &mut self.client[i];
                a.sent = Some((p.token, Some(outcome)));
                let (id, key) = (a.id, a.key.clone());
                self.push_history(What::Complete { op: ClientOp::Append, id, key, outcome, reason, value_len: 0, value_hash: 0 });
            }
            _ => {}
        }
    }

    /// Run server `n`'s task `id`: the input its state gives.
    fn run_task(&mut self, n: u32, id: u64, timed_out: bool) -> String {
        let s = self.server(n);
        let i = s.tasks.iter().position(|t| t.id == id).expect("enabled");
        let t = s.tasks.remove(i);
        let (input, text) = match t.task {
            Task::Ready(then) => (Input::Resume(then), "start a spawned flow".to_string()),
            Task::Sleep { then, .. } => (Input::Resume(then), "sleep ends".to_string()),
            Task::Call { then, .. } => (Input::Answered { then, answer: None }, "call times out".to_string()),
            Task::Wait { wait, .. } => (Input::Waited { wait: wait.clone(), timed_out }, format!("wait {} {wait:?}", if timed_out { "times out" } else { "ends" })),
            Task::Detached { otherwise, .. } => {
                self.finish_task(n, id, t.reply_to, Some(otherwise));
                return "patience ends".to_string();
            }
        };
        self.server_input(n, id, t.steps, t.reply_to, input);
        text
    }

    /// Whether the message at index `i` of the network is one the simulator's `corrupt` fault
    /// would change: a pre-copy chunk from the store to a server
    /// ([`partmap::seam::net::corruptible`]), not corrupted already.
    fn corruptible(&self, i: usize) -> bool {
        let p = &self.net[i];
        p.answer && p.from == Node::Store && matches!(p.to, Node::Server(_)) && partmap::seam::net::corruptible(&p.msg) && !self.corrupted.contains(&(p.to, p.token, p.copy))
    }

    /// Drop the answers no one waits for any more (their delivery would change nothing).
    fn collect_stale_answers(&mut self) {
        let servers = &self.servers;
        let managers = &self.managers;
        let client = &self.client;
        self.net.retain(|p| {
            if !p.answer {
                return true;
            }
            match p.to {
                Node::Server(n) => servers[n as usize - 1].tasks.iter().any(|t| matches!(&t.task, Task::Call { token, .. } if *token == p.token)),
                Node::Manager(c) => managers[c as usize - 1].pending.as_ref().is_some_and(|(t, _, _)| *t == p.token),
                Node::Client => client.iter().any(|a| matches!(a.sent, Some((t, None)) if t == p.token)),
                _ => false,
            }
        });
        if !self.corrupted.is_empty() {
            let net = &self.net;
            self.corrupted.retain(|(to, token, copy)| net.iter().any(|p| p.answer && p.to == *to && p.token == *token && p.copy == *copy));
        }
    }

    // ---- the setup -----------------------------------------------------------------------

    /// The failover configuration's setup, with no choice made: the servers register, the
    /// leader bootstraps the map, assigns range 1 to server-1, opens and activates it. Then
    /// `rounds` more rounds; the client's routes are server-1 at the range's epoch and the
    /// owner in the current map. Errors: the setup did not reach the active range.
    pub fn setup_failover(&mut self) -> Result<(), String> {
        for n in 1..=self.servers.len() as u32 {
            self.start_server(n);
        }
        self.run_fifo();
        for _ in 0..8 {
            let map = self.authority.map();
            if let Some(row) = map.rows.get(&RangeId(1)).filter(|r| r.state == partmap::map::RangeState::Active && r.owner == Some(ServerId(1))) {
                self.routes = vec![Route { server: 1, range: 1, epoch: row.epoch.0, start: row.start.clone(), end: row.end.clone() }];
                self.current_route = true;
                self.armed_from = self.history.len();
                self.managers[0].rounds_left = self.bounds.rounds;
                self.start_us = self.now_us;
                self.drops = 0;
                self.dups = 0;
                self.crashes = 0;
                return Ok(());
            }
            self.managers[0].rounds_left = 1;
            self.apply(&Action::StartRound(1));
            self.run_fifo();
        }
        Err(format!("the setup did not activate range 1 at server-1; map: {:?}", self.authority.map()))
    }

    /// The stale-owner configuration's setup, after [`World::setup_failover`] (range 1 active
    /// at server-1), with no choice made, each step an action recorded in [`World::prefix`]:
    /// server-1 is cut off from the authority; the client's first append goes to server-1,
    /// which admits it and sends it to the store; that `store_append` is delayed (marked slow,
    /// the run's one delay in the setup). The clock then moves from deadline to deadline (every
    /// other message delivered in order, every server step run, no leader round) until the
    /// authority's clock is past the end of server-1's session; at that instant the leader
    /// starts a round (with rounds not ticked, as the configuration's, a round may start at
    /// any instant), which finds the session expired and reassigns range 1 to server-2: the
    /// earliest failover, where a stale owner's lease and its delayed write race the new owner.
    /// The search starts there, with its drop, duplication and crash counts at 0, server-1
    /// still cut, and the setup's delay counted against [`Bounds::max_delays`]. Errors: the
    /// delay bound is 0 (naming `--max-delays`), or a step of the prefix did not happen as
    /// described.
    pub fn setup_stale_owner(&mut self) -> Result<(), String> {
        if self.bounds.max_delays == 0 {
            return Err("--max-delays: stale-owner's setup delays one message; give at least 1".to_string());
        }
        let rounds = self.managers[0].rounds_left;
        self.managers[0].rounds_left = 0;
        // The prefix's clock is not bounded by the search's horizon (which starts after it).
        let horizon_ms = self.bounds.horizon_ms;
        self.bounds.horizon_ms = PREFIX_HORIZON_MS;
        self.play(Action::Cut(1));
        let route = self.routes.iter().find(|r| r.server == 1).cloned().ok_or("stale-owner: no route to server-1")?;
        self.play(Action::SendAppend { server: 1, range: route.range, epoch: route.epoch });
        let i = self.net.iter().position(|p| p.from == Node::Client).ok_or("stale-owner: the client's append is not in flight")?;
        self.play(Action::Deliver(i));
        // Until server-1's write is in flight: every other message delivered in order, every
        // ready step run, the clock moved when nothing else can happen (a flow may sleep
        // before it admits).
        let store_append = |w: &World| w.net.iter().position(|p| p.from == Node::Server(1) && matches!(p.msg, Msg::StoreAppend { .. }));
        for _ in 0..1_000 {
            if store_append(self).is_some() {
                break;
            }
            let enabled = self.enabled();
            let next = match self.net.iter().position(|p| !p.slow) {
                Some(i) => Action::Deliver(i),
                None => match enabled.into_iter().find(|a| matches!(a, Action::Task { .. } | Action::Restart(_))) {
                    Some(a) => a,
                    None if self.enabled().contains(&Action::Advance) => Action::Advance,
                    None => break,
                },
            };
            self.play(next);
        }
        let i = store_append(self).ok_or("stale-owner: server-1 sent no store_append for the client's append")?;
        self.play(Action::Delay(i));
        self.settle();
        for _ in 0..1_000 {
            let expires = self.authority.session_expires_us(ServerId(1)).ok_or("stale-owner: server-1's session is not live at the authority")?;
            if self.local_us(Node::Authority) > expires {
                break;
            }
            if !self.enabled().contains(&Action::Advance) {
                return Err(format!("stale-owner: the clock cannot move before server-1's session ends (now {} µs)", self.now_us));
            }
            self.play(Action::Advance);
            self.settle();
        }
        self.bounds.horizon_ms = horizon_ms;
        self.managers[0].rounds_left = 1;
        self.play(Action::StartRound(1));
        self.settle();
        let row = self.authority.map().rows.get(&RangeId(1)).cloned().ok_or("stale-owner: range 1 is not in the map")?;
        if row.owner != Some(ServerId(2)) {
            return Err(format!("stale-owner: the leader's round at the session's end did not reassign range 1 to server-2: {row:?}"));
        }
        self.managers[0].rounds_left = rounds;
        self.start_us = self.now_us;
        // The setup's delay counts against the run's bound (`Bounds::max_delays`).
        self.drops = 0;
        self.dups = 0;
        self.crashes = 0;
        Ok(())
    }

    /// Apply `a` as a step of the setup's recorded prefix.
    fn play(&mut self, a: Action) {
        self.apply(&a);
        self.prefix.push(a);
    }

    /// Deliver every message not marked slow, in order, and run every ready server task, each a
    /// step of the prefix, until nothing is left to do without time passing.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            if let Some(i) = self.net.iter().position(|p| !p.slow) {
                self.play(Action::Deliver(i));
                continue;
            }
            // A timer that has fired runs (a call's timeout too, as the driver's would).
            match self.enabled().into_iter().find(|a| matches!(a, Action::Task { .. } | Action::Restart(_))) {
                Some(a) => self.play(a),
                None => return,
            }
        }
        panic!("the setup did not come to rest");
    }

    /// Deliver every message in order, and run every ready task, until nothing is left to do
    /// without time passing or a fault.
    fn run_fifo(&mut self) {
        for _ in 0..10_000 {
            if !self.net.is_empty() {
                self.apply(&Action::Deliver(0));
                continue;
            }
            if !self.disk.syncs.is_empty() {
                self.apply(&Action::StoreSync);
                continue;
            }
            let ready = self.enabled().into_iter().find(|a| matches!(a, Action::Task { timed_out: false, .. }));
            match ready {
                Some(a) => {
                    self.apply(&a);
                }
                None => return,
            }
        }
        panic!("the setup did not come to rest");
    }

    /// The move configuration's setup, with no choice made: the servers register, the leader
    /// bootstraps the map, assigns range 1 to server-1, opens and activates it; the operator
    /// asks to move it to server-2; the leader begins the move (the transfer is journaled).
    /// Then `rounds` more rounds, with the client's routes: the source at the old epoch and
    /// the target at the transfer's epoch. Errors: the setup did not reach the journaled move.
    pub fn setup_move(&mut self) -> Result<Transfer, String> {
        let request = MapOp::RequestMove { range: RangeId(1), to: ServerId(2) };
        self.setup_until(request, "move", |map| map.move_requests.is_empty(), |map| {
            let Some(t) = map.transfers.values().next() else { return Ok(None) };
            let row = map.rows.get(&t.range).ok_or("the move's range is not in the map")?;
            let route = |server: u32, epoch: u64| Route { server, range: t.range.0, epoch, start: row.start.clone(), end: row.end.clone() };
            Ok(Some((t.clone(), vec![route(t.from.0 .0, t.from_epoch.0), route(t.to.0 .0, t.epoch.0)])))
        })
    }

    /// The `move-corrupt` configuration's setup, with no choice made: [`World::setup_move`]
    /// (the pre-copy move of range 1 to server-2 journaled), the client's first append sent
    /// to the source at the old epoch and played in order (the clock moved to the next
    /// deadline if the admission sleeps) until acknowledged, then the
    /// leader's next round (the first of its [`Bounds::rounds`]) played in order until the
    /// store's first pre-copy chunk holding a record is in flight to a server, where the search
    /// starts. Errors: the setup did not reach the journaled move, the append was not
    /// acknowledged, or no such chunk was sent.
    pub fn setup_precopy_chunk(&mut self) -> Result<Transfer, String> {
        let t = self.setup_move()?;
        let source = self.routes.first().cloned().ok_or("the move setup gave no route")?;
        if self.client.is_empty() {
            return Err("the move-corrupt setup needs a client append (appends at least 1)".to_string());
        }
        self.apply(&Action::SendAppend { server: source.server, range: source.range, epoch: source.epoch });
        self.run_fifo();
        // A server's admission may sleep (mutation `check-then-await-then-admit`): time moves
        // to its end.
        for _ in 0..8 {
            if self.client[0].sent.as_ref().is_some_and(|s| s.1.is_some()) || self.next_deadline().is_none() {
                break;
            }
            self.apply(&Action::Advance);
            self.run_fifo();
        }
        if !matches!(self.client[0].sent, Some((_, Some(Outcome::Ok)))) {
            return Err(format!("the move-corrupt setup's append was not acknowledged: {:?}", self.client[0].sent));
        }
        let rounds = self.managers[0].rounds_left;
        self.managers[0].rounds_left = 1;
        self.apply(&Action::StartRound(1));
        self.managers[0].rounds_left = rounds.saturating_sub(1);
        let chunk = |w: &World| (0..w.net.len()).any(|i| w.corruptible(i));
        for _ in 0..10_000 {
            if chunk(self) {
                self.start_us = self.now_us;
                self.drops = 0;
                self.dups = 0;
                self.crashes = 0;
                self.corrupts = 0;
                return Ok(t);
            }
            if !self.net.is_empty() {
                self.apply(&Action::Deliver(0));
                continue;
            }
            match self.enabled().into_iter().find(|a| matches!(a, Action::Task { timed_out: false, .. })) {
                Some(a) => {
                    self.apply(&a);
                }
                None => break,
            }
        }
        Err("the move-corrupt setup's round sent no pre-copy chunk holding a record".to_string())
    }

    /// The `move-abort` configuration's setup, after [`World::setup_move`] (the stop-and-copy
    /// move of range 1 from server-1 to server-2 journaled), with no choice made, each step an
    /// action recorded in [`World::prefix`]: the leader's next round runs in order (its lease,
    /// the state, the target's check, `PauseMove` journaled) until its pause of range 1 at the
    /// old epoch is in flight to server-1; that pause is delayed (marked slow, the run's one
    /// delay in the setup); the clock moves to the call's timeout and the round ends with the
    /// pause unanswered (the flow tries again next round). On the leader's next tick its next
    /// round pauses the source again (paused and drained: answered) and sends the target the
    /// finish, which the network drops; the clock moves to the finish's timeout, the flow aborts
    /// the move (the target did not answer: `AbortMove` journaled) and the round ends. The
    /// search starts there, as the simulator's `stale-pause.json` stands before its rollback:
    /// the move aborted and not yet rolled back (the planner's `Assign` back to the source, at
    /// a newer epoch, then its open), the first pause still in flight; its drop, duplication
    /// and crash counts at 0, the setup's delay counted against [`Bounds::max_delays`]; the
    /// client's routes are the move's (the source at the old epoch, the target at the
    /// transfer's) and the owner in the current map. Errors: the delay bound is 0 (naming
    /// `--max-delays`), or a step of the prefix did not happen as described.
    pub fn setup_move_abort(&mut self) -> Result<(), String> {
        if self.bounds.max_delays == 0 {
            return Err("--max-delays: move-abort's setup delays one message (the leader's first pause); give at least 1".to_string());
        }
        let rounds = self.managers[0].rounds_left;
        // The prefix's clock is not bounded by the search's horizon (which starts after it).
        let horizon_ms = self.bounds.horizon_ms;
        self.bounds.horizon_ms = PREFIX_HORIZON_MS;
        self.managers[0].rounds_left = 1;
        self.play(Action::StartRound(1));
        let to = |server: u32, kind: &'static str| move |w: &World| w.net.iter().position(|p| p.from == Node::Manager(1) && p.to == Node::Server(server) && !p.slow && p.msg.kind_name() == kind);
        let pause = self.play_until("the leader's pause of range 1 in flight to server-1", to(1, "pause"))?;
        self.play(Action::Delay(pause));
        self.play_until("the end of the leader's first round (its pause timed out)", |w| (!w.managers[0].busy).then_some(0))?;
        self.managers[0].rounds_left = 1;
        for _ in 0..100 {
            if self.enabled().contains(&Action::StartRound(1)) {
                break;
            }
            if !self.enabled().contains(&Action::Advance) {
                return Err(format!("move-abort: the clock cannot move to the leader's next tick (now {} µs)", self.now_us));
            }
            self.play(Action::Advance);
        }
        self.play(Action::StartRound(1));
        let finish = self.play_until("the leader's finish of the move in flight to server-2", to(2, "finish_move"))?;
        self.play(Action::Drop(finish));
        self.play_until("the end of the leader's second round (its finish timed out)", |w| (!w.managers[0].busy).then_some(0))?;
        let t = self.authority.map().transfers.get(&RangeId(1)).cloned().ok_or("move-abort: the move of range 1 is not in the journal")?;
        if !matches!(t.phase, partmap::map::TransferPhase::Aborted(_)) {
            return Err(format!("move-abort: the leader's second round did not abort the move: {t:?}"));
        }
        if !self.net.iter().any(|p| p.slow && p.to == Node::Server(1) && matches!(p.msg, Msg::Pause { .. })) {
            return Err("move-abort: the leader's first pause is no longer in flight".to_string());
        }
        self.bounds.horizon_ms = horizon_ms;
        self.managers[0].rounds_left = rounds;
        // The client may also use a fresh map: after the rollback, the source at its new epoch.
        self.current_route = true;
        self.start_us = self.now_us;
        // The setup's delay counts against the run's bound (`Bounds::max_delays`).
        self.drops = 0;
        self.dups = 0;
        self.crashes = 0;
        Ok(())
    }

    /// Play steps of the setup's recorded prefix until `found` names something (returned):
    /// deliver the first message not marked slow, else run a server task that can go on, else
    /// time out the leader's call, else a server's call or wait, else move the clock. Errors:
    /// nothing is left to do (naming `what`).
    fn play_until(&mut self, what: &str, found: impl Fn(&World) -> Option<usize>) -> Result<usize, String> {
        for _ in 0..10_000 {
            if let Some(i) = found(self) {
                return Ok(i);
            }
            if let Some(i) = self.net.iter().position(|p| !p.slow) {
                self.play(Action::Deliver(i));
                continue;
            }
            let enabled = self.enabled();
            let pick = |want: fn(&Action) -> bool| enabled.iter().find(|a| want(a)).cloned();
            let next = pick(|a| matches!(a, Action::Task { timed_out: false, .. }))
                .or_else(|| pick(|a| matches!(a, Action::LeaderTimeout(_))))
                .or_else(|| pick(|a| matches!(a, Action::Task { timed_out: true, .. })))
                .or_else(|| pick(|a| matches!(a, Action::Advance)));
            match next {
                Some(a) => self.play(a),
                None => return Err(format!("move-abort's setup: nothing left to do before {what} (now {} µs)", self.now_us)),
            }
        }
        Err(format!("move-abort's setup did not reach {what}"))
    }

    /// The depose configuration's setup, with no choice made: [`World::setup_move`] (the move
    /// of range 1 to server-2 journaled by `manager-1` at leader term 1, at time 0), then
    /// `manager-1` starts its next round at time 0 (the first of its [`Bounds::rounds`]): the
    /// authority renews its lease (to
    /// `lease_ms`), it sends `GetState`, and that request stays in flight while the clock moves
    /// to the servers' first session renewal (`renew_interval_ms`, under `rpc_timeout_ms`), which
    /// the servers send and the authority answers. So each server's session now outlasts the
    /// leader's lease by `renew_interval_ms`, and the search starts with the round in flight: it
    /// may move the clock past the lease's end (its renewals lost: the model's rounds renew
    /// only at their start), after which the standby `manager-2` is granted term 2, reads the
    /// journal and drives the inherited move (`manager::plan`, `MoveFlow`), while
    /// `manager-1`'s round goes on with its calls and stops at its next commit (its own lease
    /// check). Errors: the setup did not reach the journaled move, or the leader's request was
    /// not the one left in flight.
    pub fn setup_depose(&mut self) -> Result<Transfer, String> {
        if self.managers.len() < 2 {
            return Err("the depose setup needs a standby manager (standby rounds at least 1)".to_string());
        }
        let t = self.setup_move()?;
        // `rounds` counts the round the setup starts.
        let rounds = self.managers[0].rounds_left.saturating_sub(1);
        self.managers[0].rounds_left = 1;
        self.apply(&Action::StartRound(1));
        // The lease request and its answer; the state request is then the one in flight.
        for _ in 0..2 {
            self.apply(&Action::Deliver(0));
        }
        if !(self.net.len() == 1 && matches!(self.net[0].msg, Msg::GetState)) {
            return Err(format!("the depose setup expected manager-1's GetState in flight, found {:?}", self.net.iter().map(|p| describe(&p.msg)).collect::<Vec<_>>()));
        }
        self.managers[0].rounds_left = rounds;
        let renewals = self.history.len();
        self.advance_and_settle_servers();
        self.unanchored = renewals..self.history.len();
        if self.now_us >= self.managers[0].pending.as_ref().map_or(0, |p| p.1) {
            return Err("the depose setup's clock passed the leader's call timeout".to_string());
        }
        self.managers[1].rounds_left = self.bounds.standby_rounds;
        self.start_us = self.now_us;
        self.drops = 0;
        self.dups = 0;
        self.crashes = 0;
        Ok(t)
    }

    /// Move the clock to the servers' next timer (their sessions' renewal) and let the
    /// servers' steps and their exchanges with the authority run (in order), leaving every
    /// manager's message in flight.
    fn advance_and_settle_servers(&mut self) {
        let timers = self.servers.iter().flat_map(|s| s.tasks.iter()).filter_map(|t| match &t.task {
            Task::Sleep { until_us, .. } => Some(*until_us),
            _ => None,
        });
        if let Some(to) = timers.min() {
            self.now_us = self.now_us.max(to);
        }
        let of_manager = |p: &Packet| matches!(p.from, Node::Manager(_)) || matches!(p.to, Node::Manager(_));
        for _ in 0..10_000 {
            if let Some(i) = self.net.iter().position(|p| !of_manager(p)) {
                self.apply(&Action::Deliver(i));
                continue;
            }
            if !self.disk.syncs.is_empty() {
                self.apply(&Action::StoreSync);
                continue;
            }
            match self.enabled().into_iter().find(|a| matches!(a, Action::Task { timed_out: false, .. })) {
                Some(a) => {
                    self.apply(&a);
                }
                None => return,
            }
        }
        panic!("the depose setup did not come to rest");
    }

    /// The split configuration's setup, with no choice made: the servers register, the
    /// leader bootstraps the map, assigns range 1 to server-1, opens and activates it; the
    /// operator asks to split it at `at`; the leader begins the split (`BeginSplit`: the
    /// reshape is journaled, its left child to stay at server-1, its right child to go to
    /// server-2). Then `rounds` more rounds, with the client's routes ([`reshape_routes`]).
    /// Errors: the setup did not reach the journaled split.
    pub fn setup_split(&mut self, at: &[u8]) -> Result<Reshape, String> {
        self.setup_reshape(at, partmap::map::ReshapeKind::Split)
    }

    /// The merge configuration's setup, with no choice made: as [`World::setup_split`], then
    /// the split runs to its end (its children active, the left at server-1, the right at
    /// server-2), and the leader's planner, reading the servers' load reports, merges the two
    /// cold neighbours onto the left one's owner (`BeginMerge` journaled). Then `rounds` more
    /// rounds, with the client's routes ([`reshape_routes`]). Errors: the setup did not reach
    /// the journaled merge.
    pub fn setup_merge(&mut self, at: &[u8]) -> Result<Reshape, String> {
        self.setup_reshape(at, partmap::map::ReshapeKind::Merge)
    }

    /// The `merge-move` configuration's setup up to its recorded prefix, with no choice made:
    /// [`World::setup_merge`] (the merge journaled, not yet paused), then the operator asks
    /// the authority to move the merge's left parent (holding the client's first key) to the
    /// other server (`RequestMove`), played in order with no leader round. Errors: the setup
    /// did not reach the journaled merge, or the authority did not take the request.
    pub fn setup_merge_request_move(&mut self, at: &[u8]) -> Result<Reshape, String> {
        let r = self.setup_merge(at)?;
        let (left, _) = *r.parents.first().ok_or("the merge has no parent")?;
        let owner = self.authority.map().rows.get(&left).and_then(|row| row.owner).ok_or("the merge's left parent has no owner")?;
        let to = ServerId(if owner.0 == 1 { 2 } else { 1 });
        self.move_requested_at = Some(self.history.len());
        let token = name(&[u64::MAX - 3]);
        self.send(Node::Operator, Node::Authority, token, Msg::Admin { ops: vec![MapOp::RequestMove { range: left, to }] }, false);
        self.run_fifo();
        let map = self.authority.map();
        if map.move_requests.get(&left) != Some(&to) || !map.reshapes.values().any(|x| x.phase == partmap::map::TransferPhase::Copying) {
            return Err(format!("the merge-move setup: the move request of {left} to {to} was not taken with the merge journaled; map: {map:?}"));
        }
        self.start_us = self.now_us;
        Ok(r)
    }

    /// The `merge-move` configuration's forced prefix, after
    /// [`World::setup_merge_request_move`], each step an action recorded in [`World::prefix`]:
    /// the leader starts its next round (the first of its [`Bounds::rounds`]) and it is played
    /// in order (its lease, its state, each server's load report) until the last load report's
    /// answer is in flight to the leader, whose delivery makes the round plan on a map with the
    /// merge journaled and the move requested. With no choice made in it the prefix is the same
    /// under every mutation; the search starts there. Errors: the round did not get there.
    pub fn setup_merge_move(&mut self) -> Result<(), String> {
        let rounds = self.managers[0].rounds_left;
        if rounds == 0 {
            return Err("--rounds: merge-move's setup starts a leader round; give at least 1".to_string());
        }
        self.play(Action::StartRound(1));
        let last_report = |w: &World| {
            let l = &w.managers[0];
            l.load_asks.is_empty() && matches!(l.pending, Some((_, _, Awaiting::Load))) && w.net.len() == 1 && w.net[0].to == Node::Manager(1)
        };
        for _ in 0..100 {
            if last_report(self) {
                self.start_us = self.now_us;
                return Ok(());
            }
            if self.net.is_empty() {
                break;
            }
            self.play(Action::Deliver(0));
        }
        Err(format!("the merge-move setup's round did not reach its last load report (in flight: {:?})", self.net.iter().map(|p| describe(&p.msg)).collect::<Vec<_>>()))
    }

    /// The split's and merge's setup: the operator's split of range 1 at `at`, until a
    /// reshape of `kind` is journaled.
    fn setup_reshape(&mut self, at: &[u8], kind: partmap::map::ReshapeKind) -> Result<Reshape, String> {
        let request = MapOp::RequestSplit { range: RangeId(1), at: at.to_vec() };
        let what = format!("{kind:?}").to_lowercase();
        self.setup_until(request, &what, |map| map.reshape_requests.is_empty() && map.reshapes.is_empty(), |map| {
            let Some(r) = map.reshapes.values().find(|r| r.kind == kind) else { return Ok(None) };
            Ok(Some((r.clone(), reshape_routes(map, r)?)))
        })
    }

    /// The setups' common loop: start the servers, then up to 8 leader rounds, the operator's
    /// `request` sent once range 1 is active at server-1 and `not_requested` holds, until
    /// `journaled` finds the journaled flow in the map (with the client's routes for it). Then
    /// the search's counters start from there. Errors: `journaled`'s, or the `what` (a move, a
    /// split) never journaled.
    fn setup_until<T>(&mut self, request: MapOp, what: &str, not_requested: impl Fn(&partmap::map::PartitionMap) -> bool, journaled: impl Fn(&partmap::map::PartitionMap) -> Result<Option<(T, Vec<Route>)>, String>) -> Result<T, String> {
        for n in 1..=self.servers.len() as u32 {
            self.start_server(n);
        }
        self.run_fifo();
        for _ in 0..8 {
            let map = self.authority.map();
            if let Some((found, routes)) = journaled(map)? {
                self.routes = routes;
                self.managers[0].rounds_left = self.bounds.rounds;
                self.start_us = self.now_us;
                self.drops = 0;
                self.dups = 0;
                self.crashes = 0;
                return Ok(found);
            }
            let active = map.rows.get(&RangeId(1)).is_some_and(|r| r.state == partmap::map::RangeState::Active && r.owner == Some(ServerId(1)));
            if active && not_requested(map) {
                self.armed_from = self.history.len();
                let token = name(&[u64::MAX - 2]);
                self.send(Node::Operator, Node::Authority, token, Msg::Admin { ops: vec![request.clone()] }, false);
                self.run_fifo();
            }
            self.managers[0].rounds_left = 1;
            self.apply(&Action::StartRound(1));
            self.run_fifo();
        }
        Err(format!("the setup did not reach a journaled {what}; map: {:?}", self.authority.map()))
    }
}

/// The client's routes for a journaled split or merge `r` in `map`: each parent at its owner
/// and epoch for the keys it holds, and each child at its owner and epoch for the keys it will
/// hold. Errors: a parent not in the map, or with no owner.
fn reshape_routes(map: &PartitionMap, r: &Reshape) -> Result<Vec<Route>, String> {
    let mut routes = Vec::new();
    for &(parent, parent_epoch) in &r.parents {
        let row = map.rows.get(&parent).ok_or_else(|| format!("the reshape's parent {parent} is not in the map"))?;
        let owner = row.owner.ok_or_else(|| format!("the reshape's parent {parent} has no owner"))?;
        routes.push(Route { server: owner.0, range: parent.0, epoch: parent_epoch.0, start: row.start.clone(), end: row.end.clone() });
    }
    routes.extend(r.children.iter().map(|c| Route { server: c.owner.0 .0, range: c.id.0, epoch: c.epoch.0, start: c.start.clone(), end: c.end.clone() }));
    Ok(routes)
}

/// `node`'s drift (ppm) under the bound `bound_ppm`: the authority fast by the bound, every
/// server slow by it, the others exact (the bound's corner for leases, see [`Bounds::drift_ppm`]).
pub fn drift_of(node: Node, bound_ppm: u64) -> i64 {
    match node {
        Node::Authority => bound_ppm as i64,
        Node::Server(_) => -(bound_ppm as i64),
        _ => 0,
    }
}

/// A clock of drift `ppm` at global instant `global_us`: `global × (1 + ppm / 10⁶)`, rounded
/// down (exactly `global_us` without drift).
pub fn to_local(global_us: u64, ppm: i64) -> u64 {
    if ppm == 0 {
        return global_us;
    }
    let rate = (1_000_000 + ppm) as u128;
    (u128::from(global_us) * rate / 1_000_000) as u64
}

/// The first global instant at which a clock of drift `ppm` reads `local_us` or more (the
/// inverse of [`to_local`], rounded up).
pub fn to_global(local_us: u64, ppm: i64) -> u64 {
    if ppm == 0 {
        return local_us;
    }
    let rate = (1_000_000 + ppm) as u128;
    (u128::from(local_us) * 1_000_000).div_ceil(rate) as u64
}

/// A message in a line: its kind and the fields that tell apart its instances in a transcript.
pub fn describe(msg: &Msg) -> String {
    match msg {
        Msg::Append { epoch, key, id, .. } => format!("append({}.{} key={} {epoch})", id.client, id.seq, show_key(key)),
        Msg::StoreAppend { record, server, .. } => format!("store_append({}.{} {} from {server})", record.id.client, record.id.seq, record.epoch),
        Msg::StoreAppended { result } => format!("store_appended({result:?})"),
        Msg::Served { result } => format!("served({:?})", result.as_ref().map(|_| ())),
        Msg::Fence { epoch, from, .. } => format!("fence({epoch} from {from})"),
        Msg::FenceResult { result, length, .. } => format!("fence_result({:?} length {length})", result.as_ref().map(|r| r.len())),
        Msg::ReadStream { from, upto, .. } => format!("read_stream(from {from} upto {upto:?})"),
        Msg::StreamRead { records, length, .. } => format!("stream_read({} records, length {length})", records.len()),
        Msg::Pause { epoch, leader_epoch, .. } => format!("pause({epoch}, leader {leader_epoch})"),
        Msg::PausedAt { result } => format!("paused_at({:?})", result.as_ref().map(|d| d.records)),
        Msg::CasMap { ops, .. } => {
            let mut s = String::from("cas_map(");
            for op in ops {
                let _ = write!(s, "{} ", format!("{op:?}").split([' ', '{']).next().unwrap_or(""));
            }
            s.pop();
            s + ")"
        }
        Msg::CasResult { map, error } => format!("cas_result(v{} {})", map.version, if error.is_some() { "refused" } else { "ok" }),
        Msg::RenewSession { session, .. } => format!("renew_session({session})"),
        Msg::SessionRenewed { ok } => format!("session_renewed({ok})"),
        Msg::MoveFinished { result } => format!("move_finished({result:?})"),
        Msg::PreCopied { result } => format!("pre_copied({:?})", result.as_ref().map(|p| (p.rounds, p.ready))),
        other => other.kind_name().to_string(),
    }
}


/// A server core's part of the key: every field but those fixed for the whole search (the
/// knobs, the mutation and the drift allowance, all from the configuration), which the derived
/// `Debug` would write for each server in every state (a third of the key's text). The
/// destructuring names every field, so a field added to [`ServerCore`] does not compile here
/// until it is written or said to be fixed.
fn write_server_core(out: &mut dyn std::fmt::Write, core: &ServerCore) -> std::fmt::Result {
    let ServerCore { id, session, lease_valid_until_us, ranges, mutation: _, copies, moved, leader_epoch_seen, drift_ppm: _, knobs: _, incarnation, held_serial, out: effects } = core;
    write!(out, "{id:?} {session:?} {lease_valid_until_us} {ranges:?} {copies:?} {moved:?} {leader_epoch_seen} {incarnation} {held_serial} {effects:?}")
}

/// A server core's part of [`World::key`]: [`write_server_core`]'s fields, hashed.
fn hash_server_core(core: &ServerCore, h: &mut KeyBytes) {
    let ServerCore { id, session, lease_valid_until_us, ranges, mutation: _, copies, moved, leader_epoch_seen, drift_ppm: _, knobs: _, incarnation, held_serial, out: effects } = core;
    (id, session, lease_valid_until_us, ranges, copies, moved, leader_epoch_seen, incarnation, held_serial, effects).hash(h);
}

/// A [`Hasher`] that keeps the bytes it is fed, for [`fingerprint`]: the std `Hash` impls
/// prefix what has a length with it, so the bytes are an unambiguous encoding of the parts.
pub struct KeyBytes(pub Vec<u8>);

impl Hasher for KeyBytes {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn finish(&self) -> u64 {
        fingerprint(&self.0) as u64
    }
}

/// 128 bits of `bytes`: two SipHash-1-3 digests (std's `DefaultHasher`, fixed keys), the
/// second keyed by a leading byte. Equal bytes, equal fingerprints, in every run.
fn fingerprint(bytes: &[u8]) -> u128 {
    let mut a = std::collections::hash_map::DefaultHasher::new();
    a.write(bytes);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    b.write_u8(0xb5);
    b.write(bytes);
    ((a.finish() as u128) << 64) | b.finish() as u128
}
