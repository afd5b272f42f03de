//! The named properties. Each checker matches on the run's typed history (and on what the
//! system durably holds and serves: the authority's log, the store's streams, the final strong
//! reads) and returns the smallest evidence of a violation: the key, the conflicting effects
//! with their times, epochs and nodes.
//!
//! | property | kind | module | views |
//! |---|---|---|---|
//! | `single_writer` | always | [`single_writer`] | history |
//! | `no_lost_append` | always | [`no_lost_append`] | served (final strong reads of every appended key), stored (the store's streams) |
//! | `reads_consistent` | always | [`reads_consistent`] | reads against the served content |
//! | `map_tiles` | always | [`map_tiles`] | durable (the authority's log), announced (commit and restore events) |
//! | `manager_exclusive` | always | [`manager_exclusive`] | durable, announced |
//! | `liveness` | eventually | the probe in [`crate::workload::probe`] | every range takes an append, every appended key is read |

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
}

/// Builders of histories for the checkers' unit tests.
#[cfg(test)]
pub mod testkit {
    use crate::events::{Event, Sys, What};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::{PartitionMap, RangeRow, RangeState};

    /// A control-plane event at `t_us`.
    pub fn at(t_us: u64, sys: Sys) -> Event {
        Event { t_us, what: What::Sys(sys) }
    }

    /// A row for [`map_of`]: `(id, start, end, owner, epoch, state)`.
    pub type RowSpec<'a> = (u64, &'a str, Option<&'a str>, u32, u64, &'a str);

    /// A map at `version` with rows `(id, start, end, owner, epoch, state)`.
    pub fn map_of(version: u64, rows: &[RowSpec<'_>]) -> PartitionMap {
        let mut m = PartitionMap { version, ..PartitionMap::default() };
        for &(id, start, end, owner, epoch, state) in rows {
            let state = match state {
                "preparing" => RangeState::Preparing,
                "paused" => RangeState::Paused,
                "retired" => RangeState::Retired,
                _ => RangeState::Active,
            };
            let row = RangeRow {
                id: RangeId(id),
                start: start.as_bytes().to_vec(),
                end: end.map(|e| e.as_bytes().to_vec()),
                owner: Some(ServerId(owner)),
                owner_session: 1,
                epoch: Epoch(epoch),
                state,
                sources: Vec::new(),
                sealed: 0,
                born_ms: 0,
            };
            m.rows.insert(RangeId(id), row);
            m.last_epoch = m.last_epoch.max(epoch);
        }
        m
    }

    /// `map` committed by term `leader_epoch` at `t_us`.
    pub fn commit(leader_epoch: u64, t_us: u64, map: PartitionMap) -> Event {
        at(t_us, Sys::MapCommit { leader_epoch, map })
    }

    /// `map` restored by the authority (term `leader_epoch`).
    pub fn restored(leader_epoch: u64, map: PartitionMap) -> Event {
        at(0, Sys::MapRestored { leader_epoch, map })
    }
}
