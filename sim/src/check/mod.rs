//! The named properties. Each checker matches on the run's typed history (and on what the
//! system durably holds and serves: the authority's log, the store's streams, the final strong
//! reads) and returns the smallest evidence of a violation: the key, the conflicting effects
//! with their times, epochs and nodes.
//!
//! | property | kind | module | views |
//! |---|---|---|---|
//! | `single_writer` | always | [`single_writer`] | history |
//! | `no_lost_append` | always | [`no_lost_append`], [`acked_durable`] | synced (each acknowledgement against the store's sync events), served (final strong reads of every appended key), stored (the store's streams) |
//! | `reads_consistent` | always | [`reads_consistent`] | reads against the served content |
//! | `map_tiles` | always | [`map_tiles`] | durable (the authority's log), announced (commit and restore events) |
//! | `manager_exclusive` | always | [`manager_exclusive`] | durable, announced |
//! | `handoff_in_order` | always | [`handoff_order`] | history (a pause, commit or release out of its flow's order) |
//! | `no_stuck_range` | eventually | [`stuck_range`] | history (a pause outlives every flow of its range) |
//! | `liveness` | eventually | the probe in [`crate::workload::probe`] | every range takes an append, every appended key is read |
//!
//! Every clause of every property, with its one-line definition and its views, is listed once
//! in [`clauses::CLAUSES`]; the README's definitions are written from it ([`clauses::markdown`]).

pub mod acked_durable;
pub mod availability;
pub mod clauses;
pub mod handoff_order;
pub mod index;
pub mod judge;
pub mod manager_exclusive;
pub mod map_tiles;
pub mod no_lost_append;
pub mod pool;
pub mod reads_consistent;
pub mod single_writer;
pub mod stuck_range;

use partmap::ids::{Key, OpId};

pub use judge::{checker_cpu_by_view, checker_cpu_ns, judge, legacy_violation, LEGACY_VIEWS};


/// Whether a property must hold at every step or eventually.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A safety property.
    Always,
    /// A liveness property.
    Eventually,
}

impl Kind {
    /// `always` or `eventually`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Always => "always",
            Kind::Eventually => "eventually",
        }
    }
}

/// Every property with its kind, in report order: the one list the run's verdicts, the summary
/// and the sweep's table follow.
pub const PROPERTIES: [(&str, Kind); 8] = [
    ("single_writer", Kind::Always),
    ("no_lost_append", Kind::Always),
    ("reads_consistent", Kind::Always),
    ("map_tiles", Kind::Always),
    ("manager_exclusive", Kind::Always),
    ("handoff_in_order", Kind::Always),
    ("no_stuck_range", Kind::Eventually),
    ("liveness", Kind::Eventually),
];

/// One property's verdict.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Its name.
    pub property: &'static str,
    /// Safety or liveness.
    pub kind: Kind,
    /// `None` = holds; `Some(evidence)` = violated.
    pub violation: Option<String>,
    /// The violation's evidence as values (empty when it holds).
    pub evidence: Evidence,
}

/// The evidence of a violation as values, for tools that point at it (the timeline highlights
/// these times, keys, servers, ranges, map versions and client operations): everything the
/// message cites, in the order it cites them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Simulated times the violation cites, µs since the run started.
    pub times_us: Vec<u64>,
    /// Keys it names.
    pub keys: Vec<Key>,
    /// Servers it names (`server-N` numbers).
    pub servers: Vec<u32>,
    /// Ranges or streams it names (`rN` numbers).
    pub ranges: Vec<u64>,
    /// Map versions it names.
    pub versions: Vec<u64>,
    /// Client operations (appends and reads) it names.
    pub ops: Vec<OpId>,
}

/// A checker's finding: the message a reader starts debugging from, and the same evidence as
/// values. Derefs to the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The smallest evidence, in words.
    pub message: String,
    /// What the message cites, as values (boxed: a checker's `Result` stays small).
    pub evidence: Box<Evidence>,
}

impl Violation {
    /// A violation with `message` and no evidence values yet.
    pub fn new(message: impl Into<String>) -> Violation {
        Violation { message: message.into(), evidence: Box::default() }
    }

    /// Cite simulated time `t_us` (µs).
    pub fn at(mut self, t_us: u64) -> Violation {
        self.evidence.times_us.push(t_us);
        self
    }

    /// Cite `key`.
    pub fn key(mut self, key: &[u8]) -> Violation {
        if !self.evidence.keys.iter().any(|k| k == key) {
            self.evidence.keys.push(key.to_vec());
        }
        self
    }

    /// Cite `server-N`.
    pub fn server(mut self, n: u32) -> Violation {
        if !self.evidence.servers.contains(&n) {
            self.evidence.servers.push(n);
        }
        self
    }

    /// Cite range (stream) `rN`.
    pub fn range(mut self, n: u64) -> Violation {
        if !self.evidence.ranges.contains(&n) {
            self.evidence.ranges.push(n);
        }
        self
    }

    /// Cite map version `v`.
    pub fn version(mut self, v: u64) -> Violation {
        self.evidence.versions.push(v);
        self
    }

    /// Cite client operation `id`.
    pub fn op(mut self, id: OpId) -> Violation {
        if !self.evidence.ops.contains(&id) {
            self.evidence.ops.push(id);
        }
        self
    }

    /// The same evidence behind `prefix: ` in the message.
    pub fn context(mut self, prefix: &str) -> Violation {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

impl From<String> for Violation {
    fn from(message: String) -> Violation {
        Violation::new(message)
    }
}

impl std::ops::Deref for Violation {
    type Target = str;
    fn deref(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Render a simulated time in µs as seconds.
pub fn secs(t_us: u64) -> String {
    format!("{}.{:06}s", t_us / 1_000_000, t_us % 1_000_000)
}

/// One view of a property: a name (`served`, `stored`, `durable`, `announced`, `history`) and
/// its finding. A property is violated when any of its views is; views that disagree are
/// reported (a sweep counts them).
#[derive(Clone, Debug)]
pub struct View {
    /// The property.
    pub property: &'static str,
    /// The view's name.
    pub view: &'static str,
    /// `None` = holds in this view.
    pub violation: Option<String>,
    /// The violation's evidence as values (empty when it holds).
    pub evidence: Evidence,
}

impl View {
    /// The view `view` of `property` with the checker's `finding`.
    pub fn of(property: &'static str, view: &'static str, finding: Result<(), Violation>) -> View {
        match finding {
            Ok(()) => View { property, view, violation: None, evidence: Evidence::default() },
            Err(v) => View { property, view, violation: Some(v.message), evidence: *v.evidence },
        }
    }
}
