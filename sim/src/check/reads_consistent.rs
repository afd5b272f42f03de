//! `reads_consistent` (always): a read returns a prefix of the key's final content (at a record
//! boundary). A strong read's prefix holds every append to the key acknowledged before the read
//! was invoked; a bounded-staleness read's, every append acknowledged before (invocation −
//! bound). Reads are recorded as length and hash of the returned content; the invocation
//! carries the level (`strong` or `bounded`) and the bound in ms.

use super::secs;
use crate::events::Event;
use crate::workload::{content_hash, parse_content};
use partmap::ids::{show_key, OpId};
use std::collections::{BTreeMap, BTreeSet};

struct KeyFinal {
    /// (length, hash) of every record-boundary prefix, the empty one included.
    prefixes: BTreeSet<(u64, u64)>,
    /// Where each append's record ends in the final content.
    end_of: BTreeMap<OpId, u64>,
}

fn index(content: &[u8]) -> Result<KeyFinal, String> {
    let ids = parse_content(content)?;
    let mut prefixes = BTreeSet::from([(0, content_hash(&[]))]);
    let mut end_of = BTreeMap::new();
    let mut end = 0usize;
    let mut hash = content_hash(&[]);
    for (id, piece) in ids.into_iter().zip(content.split_inclusive(|b| *b == b';')) {
        end += piece.len();
        hash = crate::workload::content_hash_extend(hash, piece);
        prefixes.insert((end as u64, hash));
        end_of.insert(id, end as u64);
    }
    Ok(KeyFinal { prefixes, end_of })
}

/// Check every successful read in `events` against `finals` (key, final content).
///
/// Errors: the first read that is not a prefix of the final content, or misses an append that
/// was acknowledged before it began; with the key, the client, times and lengths.
pub fn check(events: &[Event], finals: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
    let mut index_of: BTreeMap<String, KeyFinal> = BTreeMap::new();
    for (key, content) in finals {
        index_of.insert(show_key(key), index(content).map_err(|e| format!("key {}: {e}", show_key(key)))?);
    }
    let empty = KeyFinal { prefixes: BTreeSet::from([(0, content_hash(&[]))]), end_of: BTreeMap::new() };
    // Acknowledged appends per key: (completion time, id).
    let mut acked: BTreeMap<&str, Vec<(u64, OpId)>> = BTreeMap::new();
    // Read (client, seq) -> (invocation time, bound in µs: 0 for a strong read).
    let mut invoked: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    for ev in events {
        match (ev.kind.as_str(), ev.s("op")) {
            ("invoke", "read") => {
                let bound_us = if ev.s("level") == "bounded" { ev.u("bound_ms") * 1000 } else { 0 };
                invoked.insert((ev.u("client"), ev.u("seq")), (ev.t_us, bound_us));
            }
            ("complete", "append") if ev.s("outcome") == "ok" => {
                acked.entry(ev.s("key")).or_default().push((ev.t_us, OpId { client: ev.u("client") as u32, seq: ev.u("seq") }));
            }
            _ => {}
        }
    }
    for ev in events.iter().filter(|e| e.kind == "complete" && e.s("op") == "read" && e.s("outcome") == "ok") {
        let key = ev.s("key");
        let fin = index_of.get(key).unwrap_or(&empty);
        let (len, hash) = (ev.u("value_len"), ev.u("value_hash"));
        let (client, seq) = (ev.u("client"), ev.u("seq"));
        let (began, bound_us) = invoked.get(&(client, seq)).copied().unwrap_or((0, 0));
        // Everything acknowledged before this instant must be in the answer.
        let horizon = began.saturating_sub(bound_us);
        let level = if bound_us > 0 { format!("bounded({} ms) ", bound_us / 1000) } else { String::new() };
        if !fin.prefixes.contains(&(len, hash)) {
            return Err(format!(
                "key {key}: {level}read c{client}.{seq} (invoked {}, answered {}) returned {len} bytes that are not a prefix of the final content",
                secs(began), secs(ev.t_us)
            ));
        }
        for (done, id) in acked.get(key).map_or(&[][..], |v| v.as_slice()) {
            if *done >= horizon {
                continue;
            }
            let end = fin.end_of.get(id).copied().unwrap_or(u64::MAX);
            if end > len {
                return Err(format!(
                    "key {key}: {level}read c{client}.{seq} (invoked {}) returned {len} bytes, missing {id}, acknowledged at {} (ends at byte {})",
                    secs(began), secs(*done), if end == u64::MAX { "?".to_string() } else { end.to_string() }
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Val;
    use crate::workload::payload;

    fn ev(kind: &str, t_us: u64, op: &str, seq: u64, extra: &[(&'static str, Val)]) -> Event {
        let mut fields = vec![("op", Val::S(op.into())), ("client", Val::U(1)), ("seq", Val::U(seq)), ("key", Val::S("k1".into()))];
        fields.extend_from_slice(extra);
        Event { t_us, kind: kind.into(), fields }
    }

    fn read_done(t: u64, seq: u64, value: &[u8]) -> Event {
        let extra = [("outcome", Val::S("ok".into())), ("value_len", Val::U(value.len() as u64)), ("value_hash", Val::U(content_hash(value)))];
        ev("complete", t, "read", seq, &extra)
    }

    #[test]
    fn reads_consistent_flags_a_stale_and_a_foreign_read() {
        let a = payload(OpId { client: 1, seq: 1 }, 16);
        let b = payload(OpId { client: 1, seq: 2 }, 16);
        let fin = vec![(b"k1".to_vec(), [a.clone(), b.clone()].concat())];
        let ok = [("outcome", Val::S("ok".into()))];
        let mut evs = vec![ev("invoke", 1, "append", 1, &[]), ev("complete", 2, "append", 1, &ok), ev("invoke", 3, "read", 3, &[]), read_done(4, 3, &a)];
        check(&evs, &fin).unwrap();
        // A read that began after the ack must see it.
        evs.push(ev("invoke", 5, "read", 4, &[]));
        evs.push(read_done(6, 4, &[]));
        assert!(check(&evs, &fin).unwrap_err().contains("missing c1.1"));
        evs.pop();
        evs.push(read_done(6, 4, &b));
        assert!(check(&evs, &fin).unwrap_err().contains("not a prefix"));
    }

    #[test]
    fn reads_consistent_lets_a_bounded_read_miss_only_what_is_newer_than_its_bound() {
        let a = payload(OpId { client: 1, seq: 1 }, 16);
        let fin = vec![(b"k1".to_vec(), a.clone())];
        let ok = [("outcome", Val::S("ok".into()))];
        let bounded = [("level", Val::S("bounded".into())), ("bound_ms", Val::U(1))];
        // Acknowledged at 2 ms; a bounded(1 ms) read invoked at 2.5 ms may miss it ...
        let mut evs = vec![ev("invoke", 1_000, "append", 1, &[]), ev("complete", 2_000, "append", 1, &ok), ev("invoke", 2_500, "read", 3, &bounded), read_done(2_600, 3, &[])];
        check(&evs, &fin).unwrap();
        // ... one invoked at 3.5 ms may not.
        evs.push(ev("invoke", 3_500, "read", 4, &bounded));
        evs.push(read_done(3_600, 4, &[]));
        assert!(check(&evs, &fin).unwrap_err().contains("bounded(1 ms) read c1.4"));
    }
}
