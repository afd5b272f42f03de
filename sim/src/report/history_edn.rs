//! `run --history FILE`: the run's client operations as a Jepsen history in EDN, one operation
//! map per line, for external checkers (Elle's list-append checker reads it; Kingsbury and
//! Alvaro, "Elle: Inferring Isolation Anomalies from Experimental Observations", VLDB 2021).
//!
//! Each append is a one-operation list-append transaction and each strong read a one-operation
//! read transaction:
//!
//! ```text
//! {:index 0, :type :invoke, :f :txn, :process 64, :time 1012000, :value [[:append "k000012" 4294967303]]}
//! {:index 1, :type :ok, :f :txn, :process 64, :time 1041000, :value [[:append "k000012" 4294967303]]}
//! {:index 2, :type :invoke, :f :txn, :process 65, :time 1050000, :value [[:r "k000012" nil]]}
//! {:index 3, :type :ok, :f :txn, :process 65, :time 1062000, :value [[:r "k000012" [4294967303]]]}
//! ```
//!
//! - `:type`: `:invoke` when a client invokes; then `:ok` (acknowledged, or a read answered),
//!   `:fail` (an append that definitely failed, `fail` or `unavailable`; a read that failed) or
//!   `:info` (an append whose outcome is unknown: it may have landed).
//! - `:process`: one per client and in-flight slot, `client * 64 + slot` (a Jepsen process has at
//!   most one operation in flight; a client may have up to 64), the slot being the lowest one free
//!   at the invocation.
//! - `:time`: simulated nanoseconds since the run started.
//! - `:value`: an append's value is its idempotency id as one integer, `client * 2^32 + seq`
//!   (unique per key, as list-append requires); a read's is the list of the values its content
//!   held, in order.
//!
//! The history records a read's result as its length and hash, not its records; the list is the
//! prefix of the key's final content (the served view, what the final strong reads returned)
//! with that length and hash. A read whose result is no such prefix (a `reads_consistent`
//! violation, which the run reports) cannot be written as a list: it is written `:info` with
//! `:error :unmatched-read`. Bounded-staleness reads are left out: they promise freshness only
//! within their bound, which a linearizability checker would judge as stale reads.

use crate::check::no_lost_append::Content;
use crate::events::{Event, Outcome, What};
use crate::workload::{content_hash, parse_content};
use partmap::event::ClientOp;
use partmap::ids::{show_key, OpId};
use std::collections::BTreeMap;

/// In-flight slots per client in `:process` numbers.
pub const SLOTS: u64 = 64;

/// An append's value in the history: `client * 2^32 + seq`.
pub fn value_of(id: OpId) -> u64 {
    (u64::from(id.client) << 32) | (id.seq & 0xffff_ffff)
}

/// A key as an EDN string (keys are the workload's ASCII names; anything else is escaped).
fn edn_string(key: &[u8]) -> String {
    let text = show_key(key);
    let text = text.trim_matches('"');
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The list of values of the prefix of `content` that is `len` bytes long and hashes to `hash`,
/// if there is one.
fn read_list(content: Option<&Vec<u8>>, len: u64, hash: u64) -> Option<Vec<u64>> {
    let empty = Vec::new();
    let content = content.unwrap_or(&empty);
    let prefix = content.get(..len as usize)?;
    if content_hash(prefix) != hash {
        return None;
    }
    parse_content(prefix).ok().map(|ids| ids.into_iter().map(value_of).collect())
}

/// The history of `events` as EDN lines (no newline at their ends), reads listed from `served`
/// (the final strong reads' content by key).
pub fn lines(events: &[Event], served: &Content) -> Vec<String> {
    let mut out = Vec::new();
    // (client, seq, op) -> (process, the invocation's value text), for the completion.
    let mut open: BTreeMap<(u32, u64, bool), (u64, String)> = BTreeMap::new();
    // client -> its busy slots.
    let mut busy: BTreeMap<u32, Vec<bool>> = BTreeMap::new();
    for ev in events {
        let time = ev.t_us * 1000;
        match &ev.what {
            What::Invoke { op, id, key, bound_ms } => {
                if bound_ms.is_some() {
                    continue;
                }
                let slots = busy.entry(id.client).or_default();
                let slot = slots.iter().position(|b| !b).unwrap_or(slots.len());
                if slot == slots.len() {
                    slots.push(true);
                } else {
                    slots[slot] = true;
                }
                let process = u64::from(id.client) * SLOTS + slot as u64;
                let read = *op == ClientOp::Read;
                let value = if read { format!("[[:r {} nil]]", edn_string(key)) } else { format!("[[:append {} {}]]", edn_string(key), value_of(*id)) };
                out.push(format!("{{:index {}, :type :invoke, :f :txn, :process {process}, :time {time}, :value {value}}}", out.len()));
                open.insert((id.client, id.seq, read), (process, value));
            }
            What::Complete { op, id, key, outcome, value_len, value_hash, .. } => {
                let read = *op == ClientOp::Read;
                let Some((process, invoked)) = open.remove(&(id.client, id.seq, read)) else { continue };
                if let Some(slots) = busy.get_mut(&id.client) {
                    slots[(process % SLOTS) as usize] = false;
                }
                let (kind, value, error) = match (read, outcome) {
                    (false, Outcome::Ok) => (":ok", invoked, ""),
                    (false, Outcome::Fail | Outcome::Unavailable) | (true, Outcome::Fail | Outcome::Unavailable | Outcome::Unknown) => (":fail", invoked, ""),
                    (false, Outcome::Unknown) => (":info", invoked, ""),
                    (true, Outcome::Ok) => match read_list(served.get(key), *value_len, *value_hash) {
                        Some(list) => {
                            let list: Vec<String> = list.iter().map(u64::to_string).collect();
                            (":ok", format!("[[:r {} [{}]]]", edn_string(key), list.join(" ")), "")
                        }
                        None => (":info", invoked, ", :error :unmatched-read"),
                    },
                };
                out.push(format!("{{:index {}, :type {kind}, :f :txn, :process {process}, :time {time}, :value {value}{error}}}", out.len()));
            }
            _ => {}
        }
    }
    out
}

/// Write [`lines`] of `events` to `path`, one per line. Returns how many lines were written.
///
/// Errors: the file cannot be written (the path and the system's reason).
pub fn write(path: &std::path::Path, events: &[Event], served: &Content) -> Result<usize, String> {
    let lines = lines(events, served);
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(lines.len())
}
