//! The partition manager (`manager-N`): at most one candidate acts, under the leader lease whose
//! epoch fences every map write it makes. It bootstraps the initial ranges, assigns unowned
//! ranges, and fails over the ranges of servers whose session expired at the authority.
//!
//! [`plan`] is the decision, a pure function of the map and the session table; the node task
//! around it holds the lease, reads the state, commits the plan by compare-and-set and tells the
//! chosen servers to open their ranges. The manager is off the request path.

use crate::config::{lock_addr, manager_addr, server_addr, Knobs};
use crate::ids::{RangeId, ServerId};
use crate::map::{MapOp, PartitionMap, RangeRow, RangeState};
use crate::msg::{Msg, SessionView};
use crate::seam::{now_us, sleep_ms, Rpc};
use std::collections::BTreeMap;
use std::rc::Rc;

/// What the leader should do next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Map ops to commit in one compare-and-set (empty: nothing to change).
    pub ops: Vec<MapOp>,
    /// `Preparing` rows whose owner is live: tell the owner to open them.
    pub opens: Vec<RangeRow>,
}

/// Decide the next step from the map and the session table.
///
/// - An empty map is bootstrapped with `split_points`.
/// - A live range with no owner, or whose owner's session (the one it was assigned under) is not
///   live, is assigned to the live server holding the fewest ranges (ties: lowest id), at a new
///   epoch. Nothing is assigned while no server is live.
/// - A `Preparing` range whose owner's session is live is to be opened by that owner.
pub fn plan(map: &PartitionMap, sessions: &[SessionView], split_points: &[Vec<u8>]) -> Plan {
    if map.rows.is_empty() {
        return Plan { ops: vec![MapOp::Bootstrap { split_points: split_points.to_vec() }], opens: Vec::new() };
    }
    let live: BTreeMap<ServerId, u64> = sessions.iter().filter(|s| s.live).map(|s| (s.server, s.session)).collect();
    let owner_live = |row: &RangeRow| row.owner.is_some_and(|o| live.get(&o) == Some(&row.owner_session));
    let mut load: BTreeMap<ServerId, usize> = live.keys().map(|s| (*s, 0)).collect();
    for row in map.live_rows() {
        if owner_live(row) {
            *load.get_mut(&row.owner.expect("live owner")).expect("live") += 1;
        }
    }
    let mut out = Plan::default();
    for row in map.live_rows() {
        if owner_live(row) {
            if row.state == RangeState::Preparing {
                out.opens.push(row.clone());
            }
            continue;
        }
        let Some((&target, _)) = load.iter().min_by_key(|(s, n)| (**n, **s)) else { break };
        *load.get_mut(&target).expect("present") += 1;
        out.ops.push(MapOp::Assign { range: row.id, owner: target, owner_session: live[&target] });
    }
    out
}

/// Run manager candidate `n` forever.
pub async fn run(n: u32, knobs: Knobs) {
    let rpc = Rpc::bind(manager_addr(n), &knobs).await;
    let knobs = Rc::new(knobs);
    loop {
        let sent = now_us();
        let lease = rpc.call(lock_addr(), Msg::AcquireLeader { candidate: n }, knobs.rpc_timeout_ms).await;
        if let Ok(Msg::LeaderLease { epoch: Some(leader_epoch), .. }) = lease {
            let valid_until = sent + (knobs.lease_ms - knobs.lease_margin_ms) * 1000;
            lead_once(&rpc, &knobs, leader_epoch, valid_until).await;
        }
        sleep_ms(knobs.manager_tick_ms).await;
    }
}

/// One round as leader: read, plan, commit, open. Stops early once the lease is no longer
/// trusted; anything it writes carries `leader_epoch`, which the authority checks.
async fn lead_once(rpc: &Rc<Rpc>, knobs: &Rc<Knobs>, leader_epoch: u64, valid_until_us: u64) {
    let Ok(Msg::State { map, sessions }) = rpc.call(lock_addr(), Msg::GetState, knobs.rpc_timeout_ms).await else { return };
    let p = plan(&map, &sessions, &knobs.initial_split_points);
    if now_us() >= valid_until_us {
        return;
    }
    if !p.ops.is_empty() {
        let cas = Msg::CasMap { expected_version: map.version, leader_epoch, ops: p.ops };
        let _ = rpc.call(lock_addr(), cas, knobs.rpc_timeout_ms).await;
        return; // the next round sees the result and opens the new assignments
    }
    // Open concurrently: one slow or dead server must not hold up the others.
    let mut tasks = Vec::new();
    for row in p.opens {
        let (rpc, knobs) = (rpc.clone(), knobs.clone());
        tasks.push(crate::seam::spawn(async move {
            let owner = row.owner.expect("preparing rows have an owner");
            let open = Msg::Open { row: row.clone(), leader_epoch };
            match rpc.call(server_addr(owner), open, knobs.store_timeout_ms + knobs.rpc_timeout_ms).await {
                Ok(Msg::Opened { result: Ok(()) }) => Some((row.id, row.epoch)),
                _ => None,
            }
        }));
    }
    let mut activate = Vec::new();
    for t in tasks {
        if let Ok(Some((range, epoch))) = t.await {
            activate.push(MapOp::Activate { range, epoch });
        }
    }
    if activate.is_empty() || now_us() >= valid_until_us {
        return;
    }
    // Activations are committed one by one: one that went stale must not block the rest.
    let mut version = map.version;
    for op in activate {
        let cas = Msg::CasMap { expected_version: version, leader_epoch, ops: vec![op] };
        match rpc.call(lock_addr(), cas, knobs.rpc_timeout_ms).await {
            Ok(Msg::CasResult { map, .. }) => version = map.version,
            _ => return,
        }
    }
}

/// The ranges `server` owns in `map` (for reports and tests).
pub fn owned_by(map: &PartitionMap, server: ServerId) -> Vec<RangeId> {
    map.live_rows().into_iter().filter(|r| r.owner == Some(server)).map(|r| r.id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(live: &[(u32, u64, bool)]) -> Vec<SessionView> {
        live.iter().map(|&(s, session, live)| SessionView { server: ServerId(s), session, live }).collect()
    }

    fn booted(n: usize) -> PartitionMap {
        let mut map = PartitionMap::default();
        let points = (1..n).map(|i| format!("k{i}").into_bytes()).collect();
        map.apply_batch(&[MapOp::Bootstrap { split_points: points }]).unwrap();
        map
    }

    #[test]
    fn plan_bootstraps_empty_map() {
        let p = plan(&PartitionMap::default(), &[], &[b"m".to_vec()]);
        assert_eq!(p.ops, vec![MapOp::Bootstrap { split_points: vec![b"m".to_vec()] }]);
    }

    #[test]
    fn plan_spreads_initial_ranges_evenly() {
        let map = booted(8);
        let p = plan(&map, &sessions(&[(1, 1, true), (2, 2, true), (3, 3, true)]), &[]);
        let mut per: BTreeMap<ServerId, usize> = BTreeMap::new();
        for op in &p.ops {
            let MapOp::Assign { owner, .. } = op else { panic!("{op:?}") };
            *per.entry(*owner).or_default() += 1;
        }
        assert_eq!(p.ops.len(), 8);
        assert_eq!(per.values().copied().collect::<Vec<_>>(), vec![3, 3, 2]);
    }

    #[test]
    fn plan_fails_over_only_ranges_of_expired_sessions() {
        let mut map = booted(4);
        let ops: Vec<MapOp> = (1..=4).map(|r| MapOp::Assign { range: RangeId(r), owner: ServerId(1 + (r as u32 % 2)), owner_session: 1 + (r % 2) }).collect();
        map.apply_batch(&ops).unwrap();
        let acts: Vec<MapOp> = map.rows.values().map(|r| MapOp::Activate { range: r.id, epoch: r.epoch }).collect();
        map.apply_batch(&acts).unwrap();
        // server-1 (session 1) live; server-2 (session 2) expired; server-3 live and empty.
        let p = plan(&map, &sessions(&[(1, 1, true), (2, 2, false), (3, 3, true)]), &[]);
        let moved: Vec<RangeId> = p.ops.iter().map(|op| match op { MapOp::Assign { range, owner, .. } => { assert_ne!(*owner, ServerId(2)); *range } _ => panic!() }).collect();
        assert_eq!(moved, owned_by(&map, ServerId(2)));
        assert!(p.opens.is_empty());
    }

    #[test]
    fn plan_reassigns_range_of_restarted_server() {
        let mut map = booted(1);
        map.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
        // Same server, new session (it restarted): the old assignment is void.
        let p = plan(&map, &sessions(&[(1, 5, true)]), &[]);
        assert_eq!(p.ops, vec![MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 5 }]);
    }
}
