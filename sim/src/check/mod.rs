//! The named properties. Each checker reads the run's event list (and, for `no_lost_append`, the
//! final content read in the heal phase) and returns the smallest evidence of a violation: the
//! key, the conflicting effects with their times, epochs and nodes.
//!
//! | property | kind | module |
//! |---|---|---|
//! | `single_writer` | always | [`single_writer`] |
//! | `no_lost_append` | always | [`no_lost_append`] |
//! | `reads_consistent` | always | [`reads_consistent`] (strong reads) |
//! | `map_tiles` | always | [`map_tiles`] |
//! | `manager_exclusive` | always | [`manager_exclusive`] |
//! | `liveness` | eventually | checked by the probe in [`crate::workload::probe`] |

pub mod manager_exclusive;
pub mod map_tiles;
pub mod no_lost_append;
pub mod reads_consistent;
pub mod single_writer;


/// Whether a property must hold at every step or eventually.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A safety property.
    Always,
    /// A liveness property.
    Eventually,
}

/// One property's verdict.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Its name.
    pub property: &'static str,
    /// Safety or liveness.
    pub kind: Kind,
    /// `None` = holds; `Some(evidence)` = violated.
    pub violation: Option<String>,
}

/// Render a simulated time in µs as seconds.
pub fn secs(t_us: u64) -> String {
    format!("{}.{:06}s", t_us / 1_000_000, t_us % 1_000_000)
}
