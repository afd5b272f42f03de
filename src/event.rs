//! The structured events the system reports, one function per kind.
//!
//! Each is a `tracing` event at target `partmap` with a `kind` field and flat, primitive fields
//! (numbers and strings), so the harness can collect them with a tracing layer into one stream
//! that feeds the checkers, the trace hash and the readable trace. Keys are rendered with
//! [`show_key`]; ranges, epochs and servers as plain numbers; "none" as 0.

use crate::ids::{show_key, Epoch, OpId, RangeId, ServerId};
use crate::map::{MapOp, PartitionMap, RangeState, TransferPhase};
use crate::msg::StreamDigest;
use tracing::info;

/// A map mutation became durable at the authority: one `map_row` per row (retired included),
/// one `map_transfer` per entry of the transfer journal, then `map_commit`. `leader_epoch` is 0
/// for an operator's request.
pub fn map_commit(map: &PartitionMap, leader_epoch: u64) {
    for t in map.transfers.values() {
        let (phase, error) = match &t.phase {
            TransferPhase::Copying => ("copying", ""),
            TransferPhase::Paused => ("paused", ""),
            TransferPhase::Aborted(e) => ("aborted", e.as_str()),
        };
        info!(target: "partmap", kind = "map_transfer", version = map.version, range = t.range.0, from = t.from.0 .0,
            from_epoch = t.from_epoch.0, to = t.to.0 .0, epoch = t.epoch.0, strategy = t.strategy.name(), phase, error);
    }
    for (first, r) in &map.reshapes {
        let phase = match &r.phase {
            TransferPhase::Copying => "copying",
            TransferPhase::Paused => "paused",
            TransferPhase::Aborted(_) => "aborted",
        };
        for c in &r.children {
            info!(target: "partmap", kind = "map_child", version = map.version, first = first.0, reshape = r.kind.name(),
                range = c.id.0, owner = c.owner.0 .0, epoch = c.epoch.0, phase);
        }
    }
    for row in map.rows.values() {
        let state = match row.state {
            RangeState::Preparing => "preparing",
            RangeState::Active => "active",
            RangeState::Paused => "paused",
            RangeState::Retired => "retired",
        };
        info!(target: "partmap", kind = "map_row", version = map.version, range = row.id.0,
            start = show_key(&row.start).as_str(),
            end = row.end.as_ref().map_or("~".to_string(), |e| show_key(e)).as_str(),
            owner = row.owner.map_or(0, |s| s.0), epoch = row.epoch.0, state);
    }
    let by = if leader_epoch == 0 { "operator" } else { "leader" };
    info!(target: "partmap", kind = "map_commit", version = map.version, leader_epoch, by,
        rows = map.rows.len(), last_epoch = map.last_epoch);
}

/// A committed batch finished or aborted a split or merge (`before` is the map it applied to).
pub fn reshape_outcomes(before: &PartitionMap, ops: &[MapOp]) {
    let mut seen = Vec::new();
    for op in ops {
        let (r, outcome, error) = match op {
            MapOp::CommitReshape { first, .. } => (before.reshapes.get(first), "committed", String::new()),
            MapOp::AbortReshape { first, error } => (before.reshapes.get(first), "aborted", error.clone()),
            MapOp::Assign { range, .. } => {
                // A failover or rollback of a parent drops its split or merge.
                let r = before.reshape_of(*range).filter(|r| !matches!(r.phase, TransferPhase::Aborted(_)));
                (r, "aborted", format!("{range} reassigned"))
            }
            _ => continue,
        };
        let Some(r) = r.filter(|r| !seen.contains(&r.parents[0].0)) else { continue };
        seen.push(r.parents[0].0);
        let parents: Vec<String> = r.parents.iter().map(|(p, _)| p.to_string()).collect();
        let children: Vec<String> = r.children.iter().map(|c| c.id.to_string()).collect();
        info!(target: "partmap", kind = "reshaped", reshape = r.kind.name(), outcome, paused = r.phase == TransferPhase::Paused,
            parents = parents.join(",").as_str(), children = children.join(",").as_str(), error = error.as_str());
    }
}

/// A manager candidate got (or renewed into a new term of) the leader lease.
pub fn leader_elected(candidate: u32, leader_epoch: u64) {
    info!(target: "partmap", kind = "leader", manager = candidate, leader_epoch);
}

/// The authority recovered from its disk with `leader_epoch` as the latest leader term, held by
/// `candidate` (its lease restarts from the recovery).
pub fn leader_recovered(candidate: u32, leader_epoch: u64) {
    info!(target: "partmap", kind = "leader_recovered", manager = candidate, leader_epoch);
}

/// A server fenced the stream, loaded it and serves `range` at `epoch` from now on: `records`
/// in all (lineage included), `stream` of them from the range's own stream.
pub fn range_activated(server: ServerId, range: RangeId, epoch: Epoch, records: usize, stream: usize) {
    info!(target: "partmap", kind = "activated", server = server.0, range = range.0, epoch = epoch.0, records, stream);
}

/// A server stopped serving `range` (`reason`: session_expired, fenced, restart...).
pub fn range_dropped(server: ServerId, range: RangeId, epoch: Epoch, reason: &str) {
    info!(target: "partmap", kind = "dropped", server = server.0, range = range.0, epoch = epoch.0, reason);
}

/// A server passed the authority check for an append and admitted its effect.
pub fn admitted(server: ServerId, range: RangeId, epoch: Epoch, key: &[u8], id: OpId) {
    info!(target: "partmap", kind = "admit", server = server.0, range = range.0, epoch = epoch.0,
        key = show_key(key).as_str(), client = id.client, seq = id.seq);
}

/// The store made an append durable at `offset` of `stream`.
pub fn effect(stream: RangeId, server: ServerId, epoch: Epoch, key: &[u8], id: OpId, offset: u64, bytes: usize) {
    info!(target: "partmap", kind = "effect", stream = stream.0, server = server.0, epoch = epoch.0,
        key = show_key(key).as_str(), client = id.client, seq = id.seq, offset, bytes);
}

/// A server refused a request for `range` at `epoch` because the range moved to `to` at
/// `new_epoch` (the refusal names them).
pub fn redirected(server: ServerId, range: RangeId, epoch: Epoch, key: &[u8], to: ServerId, new_epoch: Epoch) {
    info!(target: "partmap", kind = "redirected", server = server.0, range = range.0, epoch = epoch.0,
        key = show_key(key).as_str(), to = to.0, new_epoch = new_epoch.0);
}

/// The source of a move stopped admitting appends to `range` (the pause starts).
pub fn range_paused(server: ServerId, range: RangeId, epoch: Epoch) {
    info!(target: "partmap", kind = "paused", server = server.0, range = range.0, epoch = epoch.0);
}

/// The paused source of a move drained every admitted effect; `digest` is its final length.
pub fn drained(server: ServerId, range: RangeId, epoch: Epoch, digest: &StreamDigest) {
    info!(target: "partmap", kind = "drained", server = server.0, range = range.0, epoch = epoch.0,
        records = digest.records, bytes = digest.bytes, checksum = digest.checksum);
}

/// A move target finished pre-copy round `round` of `range`, copying `bytes` payload bytes.
pub fn precopied(server: ServerId, range: RangeId, epoch: Epoch, round: u32, bytes: u64) {
    info!(target: "partmap", kind = "precopied", server = server.0, range = range.0, epoch = epoch.0, round, bytes);
}

/// A move target's copy did not match the source's digest (it will not serve).
pub fn move_diverged(server: ServerId, range: RangeId, epoch: Epoch, error: &str) {
    info!(target: "partmap", kind = "diverged", server = server.0, range = range.0, epoch = epoch.0, error);
}

/// A move target verified its copy, fenced the stream and serves `range` at `epoch`:
/// `precopy_bytes` were copied before the pause, `tail_bytes` during it, `bytes` in all.
pub fn handoff(server: ServerId, range: RangeId, epoch: Epoch, strategy: &str, precopy_bytes: u64, tail_bytes: u64, bytes: u64) {
    info!(target: "partmap", kind = "handoff", server = server.0, range = range.0, epoch = epoch.0, strategy,
        precopy_bytes, tail_bytes, bytes);
}

/// A server refused a client's `op` (`append` or `read`) on `range` at `epoch` before admitting
/// it, for `reason`.
pub fn refused(server: ServerId, range: RangeId, epoch: Epoch, key: &[u8], op: &str, reason: &crate::msg::Refusal) {
    info!(target: "partmap", kind = "refused", server = server.0, range = range.0, epoch = epoch.0, key = show_key(key).as_str(), op,
        reason = format!("{reason:?}").as_str());
}

/// A server refused a manager's command carrying leader epoch `leader_epoch`, older than the
/// newest it has seen (`seen`): a deposed leader's command, late or replayed.
pub fn stale_command_refused(server: ServerId, command: &str, leader_epoch: u64, seen: u64) {
    info!(target: "partmap", kind = "stale_command", server = server.0, command, leader_epoch, seen);
}

/// The store answered an append whose id was already in `stream` (a retry, or a duplicate):
/// no new record; the earlier one's offset is the answer.
pub fn effect_deduplicated(stream: RangeId, server: ServerId, epoch: Epoch, id: OpId, offset: u64) {
    info!(target: "partmap", kind = "deduplicated", stream = stream.0, server = server.0, epoch = epoch.0, client = id.client, seq = id.seq, offset);
}

/// The store refused an append: the stream's fence is above the record's epoch.
pub fn effect_fenced(stream: RangeId, server: ServerId, epoch: Epoch, fence: Epoch, id: OpId) {
    info!(target: "partmap", kind = "fenced", stream = stream.0, server = server.0, epoch = epoch.0,
        fence = fence.0, client = id.client, seq = id.seq);
}

/// The store raised the fence of `stream` to `epoch`; `length` records are sealed below it.
pub fn fence_raised(stream: RangeId, epoch: Epoch, length: usize) {
    info!(target: "partmap", kind = "fence", stream = stream.0, epoch = epoch.0, length);
}

/// A node recovered its durable state after a (re)start.
pub fn recovered(node: &str, records: usize) {
    info!(target: "partmap", kind = "recovered", node, records);
}

/// A server's session ended at the authority (it must drop everything and re-register).
pub fn session_expired(server: ServerId, session: u64) {
    info!(target: "partmap", kind = "session_expired", server = server.0, session);
}

/// A server's session renewal was answered: `ok` = extended, and the lease is now trusted until
/// `valid_until_ms` (local clock).
pub fn lease_renewed(server: ServerId, session: u64, ok: bool, valid_until_ms: u64) {
    info!(target: "partmap", kind = "renewed", server = server.0, session, ok, valid_until_ms);
}

/// A server passed the authority check for a (strong) read and answered it.
pub fn read_served(server: ServerId, range: RangeId, epoch: Epoch, key: &[u8], bounded: bool) {
    let level = if bounded { "bounded" } else { "strong" };
    info!(target: "partmap", kind = "read_served", server = server.0, range = range.0, epoch = epoch.0, key = show_key(key).as_str(), level);
}

/// The authority expired a server's session (made durable; the manager may now move its ranges).
pub fn session_expired_at_authority(server: ServerId, session: u64) {
    info!(target: "partmap", kind = "lease_expired", server = server.0, session);
}
