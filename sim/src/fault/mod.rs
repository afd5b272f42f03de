//! One fault the nemesis injects, as a value: what the scenario's schedule names, what the
//! history records (`What::Fault`), what coverage and the timeline read. Its own room so that the
//! history (`events`), the world and the nemesis can all name it without importing each other.

pub mod aim;
pub mod request;
pub mod trigger;

pub use request::Request;

/// One fault to inject.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// Kill the node, restart it after the duration.
    Crash(String),
    /// Cut every link to and from the node.
    Isolate(String),
    /// Cut the cluster between these nodes and all others.
    Split(Vec<String>),
    /// Drop messages from the first node to the second.
    OneWay(String, String),
    /// Hold messages from the first node to the second; deliver them after the duration.
    Delay(String, String),
    /// Deliver every message from the first node to the second twice.
    Duplicate(String, String),
    /// Freeze the node's process, resume it after the duration.
    Pause(String),
    /// Slow every fsync of the node's disk by this many ms for the duration.
    SlowDisk(String, u64),
    /// Flip a bit of every pre-copy chunk from the first node to the second.
    Corrupt(String, String),
    /// Reorder the messages from the first node to the second.
    Reorder(String, String),
    /// Hold the next message of the kind from the first node to the second for the duration.
    DelayNext(String, String, &'static str),
    /// An operator request ([`Request`]): nothing breaks.
    Request(Request),
}

impl std::fmt::Display for Fault {
    /// `isolate server-2`, `split lock-1,server-1 | rest`, `one_way server-1->lock-1`, ...
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Crash(n) => write!(f, "crash {n}"),
            Fault::Isolate(n) => write!(f, "isolate {n}"),
            Fault::Split(side) => write!(f, "split {} | rest", side.join(",")),
            Fault::OneWay(a, b) => write!(f, "one_way {a}->{b}"),
            Fault::Delay(a, b) => write!(f, "delay {a}->{b}"),
            Fault::Duplicate(a, b) => write!(f, "duplicate {a}->{b}"),
            Fault::Pause(n) => write!(f, "pause {n}"),
            Fault::SlowDisk(n, ms) => write!(f, "slow_disk {n} +{ms}ms"),
            Fault::Corrupt(a, b) => write!(f, "corrupt {a}->{b}"),
            Fault::Reorder(a, b) => write!(f, "reorder {a}->{b}"),
            Fault::DelayNext(a, b, m) => write!(f, "delay_next {a}->{b} {m}"),
            Fault::Request(r) => r.fmt(f),
        }
    }
}

impl Fault {
    /// The fault's kind as the sweep's fault table and coverage name it: `crash_server`,
    /// `crash_manager`, `crash_store`, `crash_lock`, `crash_frontend` (from the node's name,
    /// `role-N`), `isolate`, `split`, `one_way`, `delay`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash(n) => match n.split('-').next().unwrap_or("") {
                "server" => "crash_server",
                "manager" => "crash_manager",
                "store" => "crash_store",
                "lock" => "crash_lock",
                _ => "crash_frontend",
            },
            Fault::Isolate(_) => "isolate",
            Fault::Split(_) => "split",
            Fault::OneWay(..) => "one_way",
            Fault::Delay(..) => "delay",
            Fault::Duplicate(..) => "duplicate",
            Fault::Pause(_) => "pause",
            Fault::SlowDisk(..) => "slow_disk",
            Fault::Corrupt(..) => "corrupt",
            Fault::Reorder(..) => "reorder",
            Fault::DelayNext(..) => "delay_next",
            Fault::Request(r) => r.kind(),
        }
    }
}
