//! The world builder: named nodes at fixed addresses, their disks, and the handles the nemesis
//! uses to kill, restart and partition them.
//!
//! | node | address | disk | role |
//! |---|---|---|---|
//! | `lock-1` | 10.0.1.1:1 | yes | coordination authority |
//! | `store-1` | 10.0.2.1:1 | yes | stream store |
//! | `manager-N` | 10.0.3.N:1 | no | partition manager candidates |
//! | `server-N` | 10.0.4.N:1 | no (state comes from the store) | partition servers |
//! | `frontend-N` | 10.0.5.N:1 | no | routing frontends |
//! | `client-N` | 10.0.6.(N+1):1 | no | workload clients; `client-0` is the harness's probe |
//!
//! Clients are never crashed or partitioned: they stand for the users of the service.

use crate::scenario::Scenario;
use madsim::net::NetSim;
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::NodeId;
use partmap::config::{self, Knobs};
use partmap::ids::ServerId;
use partmap::lock::LockRecord;
use madsim::rand::Rng;
use partmap::seam::{clocked, CrashReport, Disk, LinkFault};
use crate::events::{record, What};
use partmap::event::ClientOp;
use crate::fault::Fault;
use partmap::store::StoreRecord;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// `lock-1`.
    Lock,
    /// `store-1`.
    Store,
    /// `manager-N`.
    Manager,
    /// `server-N`.
    Server,
    /// `frontend-N`.
    Frontend,
}

/// One faultable node.
pub struct Node {
    /// `server-2`, `lock-1`, ...
    pub name: String,
    /// What it is, for the nemesis's choice of targets.
    pub role: Role,
    /// madsim's handle.
    pub id: NodeId,
    /// Its address.
    pub addr: SocketAddr,
    /// Called when the node is killed: drops its unsynced disk writes; returns how many.
    crash_disk: Option<Box<dyn Fn() -> CrashReport>>,
}

/// All faultable nodes of a run, by name (sorted, so iteration is deterministic).
pub struct World {
    /// Nodes by name.
    pub nodes: BTreeMap<String, Node>,
    /// Links currently cut, directed `(from, to)`, with how many faults cut each.
    cuts: BTreeMap<(String, String), u32>,
    /// Names of nodes currently down.
    pub down: std::collections::BTreeSet<String>,
    /// Names of nodes currently paused.
    pub paused: std::collections::BTreeSet<String>,
    /// Faults on links (shared with every node's network seam).
    pub link_faults: partmap::seam::LinkFaults,
    /// The authority's disk.
    pub lock_disk: Disk<LockRecord>,
    /// The store's disk: after the heal, its synced streams are the final content.
    pub store_disk: Disk<StoreRecord>,
}

impl World {
    /// Create every node of `scenario` in the current runtime, running the control plane with
    /// `knobs`.
    ///
    /// The bring-up follows the services' dependencies, as a deployment's does: the authority
    /// (lock-1) and the store start first, and the servers, managers and frontends, which
    /// register with them on their first message, 1 ms later (madsim delivers a message only
    /// to a socket bound when it is sent, and a lost first registration costs a server its
    /// call timeout and a renewal interval). A node's restart does not wait.
    pub async fn build(scenario: &Scenario, knobs: &Knobs) -> World {
        let handle = Handle::current();
        let mut nodes = BTreeMap::new();
        // Each node's clock rate, drawn from the seed (only when the scenario asks for drift, so
        // runs without drift draw nothing and stay exactly as they were).
        let ppm = scenario.knobs.clock_drift_ppm as f64;
        let rate = |name: &str| -> f64 {
            if ppm == 0.0 {
                return 1.0;
            }
            let drawn: f64 = madsim::rand::thread_rng().gen_range(-ppm..=ppm);
            let worst = match name {
                _ if !scenario.knobs.clock_drift_worst_case => None,
                "lock-1" => Some(ppm),
                n if n.starts_with("server-") || n.starts_with("manager-") => Some(-ppm),
                _ => None,
            };
            let drift = scenario.knobs.clock_drift_pinned_ppm.get(name).map(|p| *p as f64).or(worst).unwrap_or(drawn);
            record(What::Clock { node: name.to_string(), drift_ppm: drift as i64 });
            1.0 + drift / 1e6
        };
        let mut add = |name: String, role: Role, addr: SocketAddr, node: NodeHandle, crash_disk: Option<Box<dyn Fn() -> CrashReport>>| {
            nodes.insert(name.clone(), Node { name, role, id: node.id(), addr, crash_disk });
        };
        // Every node's network seam: the scenario's bandwidth, and the link faults this world
        // puts on it (one set shared by all of them).
        let link_faults = partmap::seam::LinkFaults::default();
        let net = partmap::seam::Net { bandwidth_bytes_per_s: knobs.bandwidth_bytes_per_s, faults: link_faults.clone() };
        let lock_disk: Disk<LockRecord> = Disk::named("lock-1", knobs.disk_sync_ms);
        let store_disk: Disk<StoreRecord> = Disk::named("store-1", knobs.disk_sync_ms);
        preload_store(scenario, &store_disk);
        {
            let (k, d, r, n) = (knobs.clone(), lock_disk.clone(), rate("lock-1"), net.clone());
            let node = handle.create_node().name("lock-1").ip(config::lock_addr().ip()).init(move || clocked(r, partmap::lock::run(k.clone(), d.clone(), n.clone()))).build();
            let d = lock_disk.clone();
            add("lock-1".into(), Role::Lock, config::lock_addr(), node, Some(crash_fn(d, scenario.knobs.torn_writes)));
        }
        {
            let (k, d, r, n) = (knobs.clone(), store_disk.clone(), rate("store-1"), net.clone());
            let node = handle.create_node().name("store-1").ip(config::store_addr().ip()).init(move || clocked(r, partmap::store::run(k.clone(), d.clone(), n.clone()))).build();
            let d = store_disk.clone();
            add("store-1".into(), Role::Store, config::store_addr(), node, Some(crash_fn(d, scenario.knobs.torn_writes)));
        }
        partmap::seam::sleep_ms(1).await;
        for n in 1..=scenario.topology.servers {
            let (k, net) = (knobs.clone(), net.clone());
            let name = format!("server-{n}");
            let r = rate(&name);
            let addr = config::server_addr(ServerId(n));
            let node = handle.create_node().name(&name).ip(addr.ip()).init(move || clocked(r, partmap::server::run(ServerId(n), k.clone(), net.clone()))).build();
            add(name, Role::Server, addr, node, None);
        }
        for n in 1..=scenario.topology.managers {
            let (k, net) = (knobs.clone(), net.clone());
            let name = format!("manager-{n}");
            let r = rate(&name);
            let addr = config::manager_addr(n);
            let node = handle.create_node().name(&name).ip(addr.ip()).init(move || clocked(r, partmap::manager::run(n, k.clone(), net.clone()))).build();
            add(name, Role::Manager, addr, node, None);
        }
        for n in 1..=scenario.topology.frontends {
            let (k, net) = (knobs.clone(), net.clone());
            let name = format!("frontend-{n}");
            let r = rate(&name);
            let addr = config::frontend_addr(n);
            let node = handle.create_node().name(&name).ip(addr.ip()).init(move || clocked(r, partmap::frontend::run(n, k.clone(), net.clone()))).build();
            add(name, Role::Frontend, addr, node, None);
        }
        World { nodes, cuts: BTreeMap::new(), down: Default::default(), paused: Default::default(), store_disk, lock_disk, link_faults }
    }

    /// Kill `name` (memory lost, unsynced disk writes lost, or with `knobs.torn_writes` a torn
    /// last write). Returns false if already down.
    pub fn kill(&mut self, name: &str, duration_ms: u64) -> bool {
        if !self.down.insert(name.to_string()) {
            return false;
        }
        self.paused.remove(name); // a killed process is no longer paused; its restart runs
        let node = &self.nodes[name];
        Handle::current().kill(node.id);
        let crash = node.crash_disk.as_ref().map(|f| f());
        record(What::Fault { fault: Box::new(Fault::Crash(name.to_string())), duration_ms, crash });
        true
    }

    /// Put `fault` on the link `from → to` until [`World::unfault_link`] (counted).
    pub fn fault_link(&mut self, from: &str, to: &str, fault: LinkFault) {
        self.link_faults.add((self.nodes[from].addr.ip(), self.nodes[to].addr.ip()), fault);
    }

    /// Hold the next message of `kind` sent from `from` to `to` for `hold_ms`.
    pub fn hold_next(&mut self, from: &str, to: &str, kind: &'static str, hold_ms: u64) {
        self.link_faults.hold_next((self.nodes[from].addr.ip(), self.nodes[to].addr.ip()), kind, hold_ms);
    }

    /// Hold the next message of `kind` sent from `from` to `to` for at most `hold_ms`, or
    /// until `release` is released (a schedule entry's `until`).
    pub fn hold_next_until(&mut self, from: &str, to: &str, kind: &'static str, hold_ms: u64, release: partmap::seam::Release) {
        let hold = partmap::seam::Hold { ms: hold_ms, release: Some(release) };
        self.link_faults.hold_next_until((self.nodes[from].addr.ip(), self.nodes[to].addr.ip()), kind, hold);
    }

    /// Undo one [`World::fault_link`]; held messages go on their way once no hold is left.
    pub fn unfault_link(&mut self, from: &str, to: &str, fault: LinkFault) {
        self.link_faults.remove((self.nodes[from].addr.ip(), self.nodes[to].addr.ip()), fault);
    }

    /// Make every fsync of `name`'s disk (`lock-1` or `store-1`) take `extra_ms` longer; 0
    /// restores it.
    pub fn slow_disk(&mut self, name: &str, extra_ms: u64) {
        match name {
            "lock-1" => self.lock_disk.set_slow(extra_ms),
            "store-1" => self.store_disk.set_slow(extra_ms),
            other => panic!("{other} has no disk (the scenario validation rejects this)"),
        }
    }

    /// Freeze `name`'s process (its tasks stop; its memory stays). Returns false if it is down
    /// or already paused.
    pub fn pause(&mut self, name: &str, duration_ms: u64) -> bool {
        if self.down.contains(name) || !self.paused.insert(name.to_string()) {
            return false;
        }
        Handle::current().pause(self.nodes[name].id);
        record(What::Fault { fault: Box::new(Fault::Pause(name.to_string())), duration_ms, crash: None });
        true
    }

    /// Let a paused `name` run again.
    pub fn resume(&mut self, name: &str) {
        if self.paused.remove(name) {
            Handle::current().resume(self.nodes[name].id);
            record(What::FaultEnd { fault: Box::new(Fault::Pause(name.to_string())) });
        }
    }

    /// Restart `name` if it is down (its task starts afresh from its disk).
    pub fn restart(&mut self, name: &str) {
        if self.down.remove(name) {
            Handle::current().restart(self.nodes[name].id);
            record(What::FaultEnd { fault: Box::new(Fault::Crash(name.to_string())) });
        }
    }

    /// Cut the directed link `from → to` (counted: overlapping faults each need their heal).
    pub fn cut(&mut self, from: &str, to: &str) {
        let n = self.cuts.entry((from.to_string(), to.to_string())).or_insert(0);
        *n += 1;
        if *n == 1 {
            NetSim::current().clog_link(self.nodes[from].id, self.nodes[to].id);
        }
    }

    /// Undo one [`World::cut`] of `from → to`.
    pub fn uncut(&mut self, from: &str, to: &str) {
        let key = (from.to_string(), to.to_string());
        let Some(n) = self.cuts.get_mut(&key) else { return };
        *n -= 1;
        if *n == 0 {
            self.cuts.remove(&key);
            NetSim::current().unclog_link(self.nodes[from].id, self.nodes[to].id);
        }
    }

    /// Every directed link between the nodes of `side` and the other faultable nodes, both
    /// directions. Links to clients are never among them.
    pub fn links_across(&self, side: &[String]) -> Vec<(String, String)> {
        let mut links = Vec::new();
        for a in side {
            for b in self.nodes.keys().filter(|b| !side.contains(b)) {
                links.push((a.clone(), b.clone()));
                links.push((b.clone(), a.clone()));
            }
        }
        links
    }

    /// The heal phase: every link restored and every node up.
    pub fn heal_all(&mut self) {
        let cuts: Vec<(String, String)> = self.cuts.keys().cloned().collect();
        for (a, b) in cuts {
            NetSim::current().unclog_link(self.nodes[&a].id, self.nodes[&b].id);
        }
        self.cuts.clear();
        self.link_faults.clear();
        self.lock_disk.set_slow(0);
        self.store_disk.set_slow(0);
        let paused: Vec<String> = self.paused.iter().cloned().collect();
        for name in paused {
            self.resume(&name);
        }
        let down: Vec<String> = self.down.iter().cloned().collect();
        for name in down {
            self.restart(&name);
        }
        record(What::Heal);
    }
}

/// The harness's crash of a disk: everything unsynced is lost, or with `torn` a random prefix
/// (0 to 8 records) of it survives and the next record is torn.
/// Returns (records lost, records torn).
fn crash_fn<R: Clone + 'static>(d: partmap::seam::Disk<R>, torn: bool) -> Box<dyn Fn() -> CrashReport> {
    if torn {
        Box::new(move || d.crash_torn(madsim::rand::random::<usize>() % 9))
    } else {
        Box::new(move || CrashReport { lost: d.crash(), survived: 0, torn: false })
    }
}

/// The loader's records (`workload.preload_bytes`): durable in the store before it starts, and
/// in the history as appends acknowledged at time 0, so every checker judges them like any
/// other client's.
fn preload_store(scenario: &Scenario, store_disk: &Disk<StoreRecord>) {
    let preload = crate::workload::preload(scenario, scenario.max_record_bytes());
    for (_, rec) in &preload {
        record(What::Invoke { op: ClientOp::Append, id: rec.id, key: rec.key.clone(), bound_ms: None });
        record(What::Complete { op: ClientOp::Append, id: rec.id, key: rec.key.clone(), outcome: crate::events::Outcome::Ok, reason: String::new(), value_len: 0, value_hash: 0 });
    }
    if !preload.is_empty() {
        store_disk.preload(preload.into_iter().map(|(stream, record)| StoreRecord::Append { stream, record }).collect());
    }
}
