//! Faults aimed at protocol roles: a schedule entry may name a role (`{"role": "leader"}`,
//! `{"role": "owner", "key": "k000042"}`, `{"role": "move-source"}`) where it names a node, and
//! the nemesis resolves the role to a node at the moment the fault starts, from what the run has
//! shown so far: the last map the authority committed or restored (owners, the transfer journal,
//! the splits and merges in flight) and the last leader term it granted. A schedule no longer has
//! to predict who will own what. Jepsen's nemeses target "the primary" the same way; here the
//! roles are the partition control plane's own.
//!
//! Inside the harness an aimed node is carried as a string that starts with `@` (the role's
//! canonical form, [`Aim::encode`]), so that [`crate::fault::Fault`] keeps one shape for the
//! schedule, the plan and the history; the history only ever holds resolved names. The scenario
//! file writes the role as an object ([`node_field`]).

use partmap::event::Event;
use partmap::map::SharedMap;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// A protocol role a fault can be aimed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// The manager holding the leader lease: the last leader term the authority granted.
    Leader,
    /// The lowest-numbered manager that is not the leader.
    StandbyManager,
    /// The source server of the move in flight (of `range`, or the lowest range id moving).
    MoveSource,
    /// The target server of the move in flight (of `range`, or the lowest range id moving).
    MoveTarget,
    /// The server that owns the range holding `key`, or range `range`, in the current map.
    Owner,
    /// The owner of the first parent of the split or merge in flight (of the one whose parents
    /// include `range`, or the lowest first parent).
    ReshapeParentOwner,
    /// The node that emitted the event that fired this entry's trigger (`on`).
    TriggerNode,
    /// The server a range in failover is being opened on (a `preparing` row's owner): of the
    /// range holding `key`, of `range`, or of the lowest range id preparing.
    FailoverTarget,
}

/// Every role with its scenario-file name and what it resolves to.
pub const ROLES: [(Role, &str, &str); 8] = [
    (Role::Leader, "leader", "the manager holding the leader lease (the last term the authority granted)"),
    (Role::StandbyManager, "standby-manager", "the lowest-numbered manager that is not the leader"),
    (Role::MoveSource, "move-source", "the source of the move in flight (of `range`, else the lowest range id moving)"),
    (Role::MoveTarget, "move-target", "the target of the move in flight (of `range`, else the lowest range id moving)"),
    (Role::Owner, "owner", "the owner of the range holding `key`, or of range `range` (one of the two is required)"),
    (Role::ReshapeParentOwner, "reshape-parent-owner", "the owner of the first parent of the split or merge in flight (of `range`'s, else the lowest)"),
    (Role::TriggerNode, "trigger-node", "the node whose event fired the entry's trigger (`on` required)"),
    (Role::FailoverTarget, "failover-target", "the server a preparing range is being opened on (of `key`'s or `range`'s range, else the lowest range id preparing)"),
];

impl Role {
    /// The scenario-file name (`leader`, `move-source`, ...).
    pub fn name(self) -> &'static str {
        ROLES.iter().find(|(r, ..)| *r == self).map(|(_, n, _)| *n).expect("listed")
    }

    /// Parse a scenario-file name. Errors: the accepted names.
    pub fn parse(name: &str) -> Result<Role, String> {
        ROLES.iter().find(|(_, n, _)| *n == name).map(|(r, ..)| *r).ok_or_else(|| {
            format!("unknown role `{name}`; accepted: {}", ROLES.iter().map(|(_, n, _)| *n).collect::<Vec<_>>().join(", "))
        })
    }

    /// Whether the role always resolves to a partition server (`server-N`).
    pub fn is_server(self) -> bool {
        !matches!(self, Role::Leader | Role::StandbyManager | Role::TriggerNode)
    }
}

/// A role with its selector: `key` (a workload key) or `range` (a range id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aim {
    /// The role.
    pub role: Role,
    /// For `owner`: the key whose range's owner is meant.
    pub key: Option<String>,
    /// For `owner`, `move-source`, `move-target`, `reshape-parent-owner`: the range id.
    pub range: Option<u64>,
}

impl Aim {
    /// The harness's form: `@leader`, `@owner?key=k000042`, `@move-source?range=2`.
    pub fn encode(&self) -> String {
        let mut s = format!("@{}", self.role.name());
        if let Some(k) = &self.key {
            s.push_str("?key=");
            s.push_str(k);
        } else if let Some(r) = self.range {
            s.push_str(&format!("?range={r}"));
        }
        s
    }

    /// The inverse of [`Aim::encode`]; `None` for a plain node name.
    pub fn decode(s: &str) -> Option<Aim> {
        let rest = s.strip_prefix('@')?;
        let (name, sel) = rest.split_once('?').map_or((rest, None), |(n, q)| (n, Some(q)));
        let role = Role::parse(name).ok()?;
        let mut aim = Aim { role, key: None, range: None };
        match sel.and_then(|q| q.split_once('=')) {
            Some(("key", k)) => aim.key = Some(k.to_string()),
            Some(("range", r)) => aim.range = Some(r.parse().ok()?),
            _ => {}
        }
        Some(aim)
    }

    /// Check the selector against the role. Errors name `path` and the problem.
    pub fn validate(&self, path: &str) -> Result<(), String> {
        let name = self.role.name();
        match self.role {
            Role::Owner if self.key.is_some() == self.range.is_some() => {
                Err(format!("{path}: role `owner` needs exactly one of `key` or `range`"))
            }
            Role::Leader | Role::StandbyManager | Role::TriggerNode if self.key.is_some() || self.range.is_some() => {
                Err(format!("{path}: role `{name}` takes no `key` or `range`"))
            }
            Role::MoveSource | Role::MoveTarget | Role::ReshapeParentOwner if self.key.is_some() => {
                Err(format!("{path}: role `{name}` takes `range`, not `key`"))
            }
            _ => Ok(()),
        }
    }
}

/// Whether a node field of a fault holds a role rather than a name.
pub fn is_aimed(node: &str) -> bool {
    node.starts_with('@')
}

/// What the run has shown so far that roles resolve against.
#[derive(Default)]
struct View {
    map: Option<SharedMap>,
    leader: Option<u32>,
    managers: u32,
    /// Aimed faults injected so far, and the simulated time of the first, µs.
    injected: (u64, u64),
    /// Key spans of ranges in flux ([`with_flux`]): `(start, end, until_us)`.
    flux: Vec<(Vec<u8>, Option<Vec<u8>>, u64)>,
}

/// How long a range stays "in flux" for the workload after a map commit changed its owner,
/// epoch or state (or made it), µs: longer than a frontend's background map refresh
/// (`renew_interval_ms`, 400 ms at the defaults) and the retries around it, so that clients
/// still reach it while some frontend routes on the old map.
pub const FLUX_US: u64 = 2_000_000;

thread_local! {
    static VIEW: RefCell<View> = RefCell::new(View::default());
}

/// Start a run's view: `managers` managers, no map, no leader yet, no aimed fault injected.
pub fn reset(managers: u32) {
    VIEW.with(|v| *v.borrow_mut() = View { map: None, leader: None, managers, injected: (0, 0), flux: Vec::new() });
}

/// Count one aimed fault as injected now (the nemesis calls this once the role resolved and
/// the fault took effect: not for a skipped one, one whose trigger never fired, or a crash of a
/// node already down).
pub fn note_injected(now_us: u64) {
    VIEW.with(|v| {
        let mut v = v.borrow_mut();
        if v.injected.0 == 0 {
            v.injected.1 = now_us;
        }
        v.injected.0 += 1;
    });
}

/// The aimed faults injected in this run: how many, and when the first was, µs.
pub fn injected() -> (u64, u64) {
    VIEW.with(|v| v.borrow().injected)
}

/// Fold one control-plane event into the view (the event sink calls this for every event).
pub fn observe(e: &Event) {
    match e {
        Event::MapCommit { map, .. } | Event::MapRestored { map, .. } => VIEW.with(|v| {
            let mut v = v.borrow_mut();
            let now = partmap::seam::now_us();
            let changed = flux_spans(v.map.as_ref(), map);
            v.flux.retain(|(.., until)| *until > now);
            for (a, b) in changed {
                // One entry a span: a range busy over many commits stays once, until its last.
                match v.flux.iter_mut().find(|(x, y, _)| *x == a && *y == b) {
                    Some(entry) => entry.2 = now + FLUX_US,
                    None => v.flux.push((a, b, now + FLUX_US)),
                }
            }
            v.map = Some(map.clone());
        }),
        Event::Leader { manager, .. } | Event::LeaderRecovered { manager, .. } if *manager > 0 => VIEW.with(|v| v.borrow_mut().leader = Some(*manager)),
        Event::LeaderReleased { .. } => VIEW.with(|v| v.borrow_mut().leader = None),
        _ => {}
    }
}

/// The key spans of `map` in flux against `before`, the map the view held: every live row
/// that is new, or whose owner, epoch or state changed, and every row in a move, split or merge
/// in flight or not active (preparing, paused, sealed).
fn flux_spans(before: Option<&SharedMap>, map: &SharedMap) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for row in map.rows.live().values() {
        let old = before.and_then(|b| b.rows.get(&row.id));
        let changed = old.is_none_or(|o| o.owner != row.owner || o.epoch != row.epoch || o.state != row.state);
        let busy = row.state != partmap::map::RangeState::Active || map.transfers.contains_key(&row.id) || map.reshapes.values().any(|x| x.parents.iter().any(|(p, _)| *p == row.id));
        if changed || busy {
            out.push((row.start.to_vec(), row.end.as_ref().map(|e| e.to_vec())));
        }
    }
    out
}

/// The key spans in flux now, handed to `f`: ranges a map commit made or changed (owner,
/// epoch, state) in the last [`FLUX_US`], and ranges in a move, split or merge then, each span
/// once, as `(start, end)`. The workload aims a share of its operations at them
/// (`workload.flux_fraction`), so that a handoff has clients there to see it go wrong. Empty
/// before the first map. The view is borrowed while `f` runs.
pub fn with_flux<T>(f: impl FnOnce(&[(&[u8], Option<&[u8]>)]) -> T) -> T {
    let now = partmap::seam::now_us();
    VIEW.with(|v| {
        let mut v = v.borrow_mut();
        v.flux.retain(|(.., until)| *until > now);
        let spans: Vec<(&[u8], Option<&[u8]>)> = v.flux.iter().map(|(a, b, _)| (a.as_slice(), b.as_deref())).collect();
        f(&spans)
    })
}

/// The node `node` names now: itself for a plain name, or the role's holder. `trigger_node` is
/// the emitter of the event that fired the entry's trigger, if it had one.
///
/// Errors: why the role is empty at this moment (`no move in flight`, `no leader yet`, ...);
/// the nemesis then skips the fault and the history says why.
pub fn resolve(node: &str, trigger_node: Option<&str>) -> Result<String, String> {
    let Some(aim) = Aim::decode(node) else { return Ok(node.to_string()) };
    VIEW.with(|v| {
        let v = v.borrow();
        let server = |s: Option<partmap::ids::ServerId>, what: String| s.map(|s| format!("server-{}", s.0)).ok_or(what);
        let map = || v.map.as_ref().ok_or_else(|| "no map yet".to_string());
        match aim.role {
            Role::Leader => v.leader.map(|m| format!("manager-{m}")).ok_or_else(|| "no leader yet".into()),
            Role::StandbyManager => {
                let standby = (1..=v.managers).find(|m| Some(*m) != v.leader);
                standby.map(|m| format!("manager-{m}")).ok_or_else(|| "no manager besides the leader".into())
            }
            Role::TriggerNode => trigger_node.map(str::to_string).ok_or_else(|| "the entry has no trigger".into()),
            Role::MoveSource | Role::MoveTarget => {
                let map = map()?;
                let t = match aim.range {
                    Some(r) => map.transfers.get(&partmap::ids::RangeId(r)),
                    None => map.transfers.values().next(),
                };
                let t = t.ok_or_else(|| match aim.range {
                    Some(r) => format!("no move of r{r} in flight"),
                    None => "no move in flight".to_string(),
                })?;
                let s = if aim.role == Role::MoveSource { t.from.0 } else { t.to.0 };
                Ok(format!("server-{}", s.0))
            }
            Role::Owner => {
                let map = map()?;
                let row = match (&aim.key, aim.range) {
                    (Some(k), _) => map.lookup(k.as_bytes()),
                    (None, Some(r)) => map.rows.get(&partmap::ids::RangeId(r)).filter(|r| r.state != partmap::map::RangeState::Retired),
                    (None, None) => None,
                };
                let row = row.ok_or_else(|| format!("no live range for {}", aim.encode()))?;
                server(row.owner, format!("r{} has no owner", row.id.0))
            }
            Role::FailoverTarget => {
                let map = map()?;
                let preparing = |r: &&partmap::map::RangeRow| r.state == partmap::map::RangeState::Preparing && r.owner.is_some();
                let row = match (&aim.key, aim.range) {
                    (Some(k), _) => map.lookup(k.as_bytes()).filter(preparing),
                    (None, Some(r)) => map.rows.get(&partmap::ids::RangeId(r)).filter(preparing),
                    (None, None) => map.rows.live().values().map(|r| &**r).find(preparing),
                };
                let row = row.ok_or_else(|| "no range in failover (preparing with an owner)".to_string())?;
                server(row.owner, format!("r{} has no owner", row.id.0))
            }
            Role::ReshapeParentOwner => {
                let map = map()?;
                let reshape = match aim.range {
                    Some(r) => map.reshapes.values().find(|x| x.parents.iter().any(|(p, _)| p.0 == r)),
                    None => map.reshapes.values().next(),
                };
                let reshape = reshape.ok_or_else(|| "no split or merge in flight".to_string())?;
                let first = reshape.parents[0].0;
                server(map.rows.get(&first).and_then(|r| r.owner), format!("parent r{} has no owner", first.0))
            }
        }
    })
}

/// The scenario-file form of a node field that may hold a role: a node name (`"server-2"`)
/// or an object `{"role": NAME, "key": KEY}` / `{"role": NAME, "range": ID}`; read into the
/// harness's `@` form and written back as the object. Use with `#[serde(with = ...)]`.
pub mod node_field {
    use super::{Aim, Role};
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Write a name as a string, a role as its object.
    pub fn serialize<S: Serializer>(node: &str, ser: S) -> Result<S::Ok, S::Error> {
        match Aim::decode(node) {
            None => node.serialize(ser),
            Some(aim) => {
                let mut m = serde_json::Map::new();
                m.insert("role".into(), aim.role.name().into());
                if let Some(k) = aim.key {
                    m.insert("key".into(), k.into());
                }
                if let Some(r) = aim.range {
                    m.insert("range".into(), r.into());
                }
                serde_json::Value::Object(m).serialize(ser)
            }
        }
    }

    /// Read a name or a role object. Errors: a name starting with `@`, an object with an unknown
    /// role, an unknown field, or a selector of the wrong type.
    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<String, D::Error> {
        match serde_json::Value::deserialize(de)? {
            serde_json::Value::String(s) if s.starts_with('@') => Err(D::Error::custom(format!("`{s}`: node names do not start with `@`; aim at a role with {{\"role\": NAME}}"))),
            serde_json::Value::String(s) => Ok(s),
            serde_json::Value::Object(m) => {
                let mut aim = Aim { role: Role::Leader, key: None, range: None };
                let mut role = None;
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("role", serde_json::Value::String(r)) => role = Some(Role::parse(&r).map_err(D::Error::custom)?),
                        ("key", serde_json::Value::String(s)) => aim.key = Some(s),
                        ("range", v) if v.as_u64().is_some() => aim.range = v.as_u64(),
                        ("role" | "key" | "range", v) => return Err(D::Error::custom(format!("`{k}`: wrong type ({v}); role and key are strings, range a range id"))),
                        (other, _) => return Err(D::Error::custom(format!("unknown field `{other}` of a role; accepted: role, key, range"))),
                    }
                }
                aim.role = role.ok_or_else(|| D::Error::custom("a role object needs `role`"))?;
                Ok(aim.encode())
            }
            other => Err(D::Error::custom(format!("expected a node name or a role object, got {other}"))),
        }
    }
}

/// The nodes of `fault` resolved ([`resolve`]); `Err(why)` when a role is empty now or two
/// ends of a link resolve to the same node.
pub fn resolve_fault(fault: &crate::fault::Fault, trigger_node: Option<&str>) -> Result<crate::fault::Fault, String> {
    use crate::fault::Fault;
    let r = |n: &String| resolve(n, trigger_node);
    let pair = |a: &String, b: &String| -> Result<(String, String), String> {
        let (a2, b2) = (r(a)?, r(b)?);
        if a2 == b2 {
            return Err(format!("{a} and {b} are both {a2}"));
        }
        Ok((a2, b2))
    };
    Ok(match fault {
        Fault::Crash(n) => Fault::Crash(r(n)?),
        Fault::Isolate(n) => Fault::Isolate(r(n)?),
        Fault::Pause(n) => Fault::Pause(r(n)?),
        Fault::OneWay(a, b) => pair(a, b).map(|(a, b)| Fault::OneWay(a, b))?,
        Fault::Delay(a, b) => pair(a, b).map(|(a, b)| Fault::Delay(a, b))?,
        Fault::Duplicate(a, b) => pair(a, b).map(|(a, b)| Fault::Duplicate(a, b))?,
        Fault::Corrupt(a, b) => pair(a, b).map(|(a, b)| Fault::Corrupt(a, b))?,
        Fault::Reorder(a, b) => pair(a, b).map(|(a, b)| Fault::Reorder(a, b))?,
        Fault::DelayNext(a, b, m) => pair(a, b).map(|(a, b)| Fault::DelayNext(a, b, m))?,
        other => other.clone(),
    })
}

/// A map of node ids to names for the run, so a trigger can name its event's emitter.
pub type NodeNames = BTreeMap<madsim::task::NodeId, String>;
