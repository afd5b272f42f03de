//! The unit tests of the checkers (`partmap_sim::check::*`), and their shared test kit
//! (formerly the test-only `partmap_sim::check::testkit` in `sim/src/check/mod.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

pub mod acked_durable;
pub mod availability;
pub mod clauses;
pub mod handoff_order;
pub mod index;
pub mod manager_exclusive;
pub mod map_tiles;
pub mod no_lost_append;
pub mod pool;
pub mod reads_consistent;
pub mod single_writer;
pub mod stuck_range;

/// Builders of histories for the checkers' unit tests.
pub mod testkit {
    use partmap_sim::events::{Event, Sys, What};
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

    /// `map` committed by term `leader_epoch` at `t_us` (by manager-1, or the operator at term 0).
    pub fn commit(leader_epoch: u64, t_us: u64, map: PartitionMap) -> Event {
        commit_by(leader_epoch, u32::from(leader_epoch > 0), t_us, map)
    }

    /// `map` committed by `manager` at term `leader_epoch` at `t_us`.
    pub fn commit_by(leader_epoch: u64, manager: u32, t_us: u64, map: PartitionMap) -> Event {
        at(t_us, Sys::MapCommit { leader_epoch, manager, map: map.into() })
    }

    /// `map` restored by the authority (term `leader_epoch`).
    pub fn restored(leader_epoch: u64, map: PartitionMap) -> Event {
        at(0, Sys::MapRestored { leader_epoch, map: map.into() })
    }
}
