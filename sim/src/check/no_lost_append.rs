//! `no_lost_append` (always): against the final content of every key (read after the heal):
//! every acknowledged append is there exactly once; nothing that definitely failed is there; an
//! append with an unknown outcome is there at most once; nothing is there that no client ever
//! appended; and if one append was acknowledged before another was invoked, on the same key,
//! it comes first. And the final reads the probe makes through the frontends after the heal
//! (`client 0`) return exactly the final content of their key.

use super::secs;
use crate::events::Event;
use crate::workload::parse_content;
use partmap::ids::{show_key, OpId};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
struct Op {
    key: String,
    invoke_us: u64,
    complete_us: Option<u64>,
    outcome: String,
}

/// Check the history in `events` against `finals` (key, final content), which holds every key
/// with content; a key that is absent has none.
///
/// Errors: the first violation, naming the key, the append, its outcome and times.
pub fn check(events: &[Event], finals: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
    let mut ops: BTreeMap<OpId, Op> = BTreeMap::new();
    for ev in events.iter().filter(|e| e.s("op") == "append") {
        let id = OpId { client: ev.u("client") as u32, seq: ev.u("seq") };
        match ev.kind.as_str() {
            "invoke" => {
                ops.insert(id, Op { key: ev.s("key").to_string(), invoke_us: ev.t_us, complete_us: None, outcome: "unknown".into() });
            }
            "complete" => {
                let op = ops.get_mut(&id).ok_or_else(|| format!("complete without invoke for {id}"))?;
                op.complete_us = Some(ev.t_us);
                op.outcome = ev.s("outcome").to_string();
            }
            _ => {}
        }
    }
    let mut judged: BTreeMap<String, Vec<OpId>> = BTreeMap::new();
    for key in ops.values().map(|op| op.key.clone()) {
        judged.entry(key).or_default();
    }
    let final_of: BTreeMap<String, &Vec<u8>> = finals.iter().map(|(k, c)| (show_key(k), c)).collect();
    for ev in events.iter().filter(|e| e.kind == "complete" && e.s("op") == "read" && e.u("client") == 0 && e.s("outcome") == "ok") {
        let key = ev.s("key");
        let empty = Vec::new();
        let content = final_of.get(key).copied().unwrap_or(&empty);
        let (len, hash) = (content.len() as u64, crate::workload::content_hash(content));
        if ev.u("value_len") != len || ev.u("value_hash") != hash {
            return Err(format!(
                "key {key}: the final read at {} returned {} bytes (hash {:016x}) but the final content is {len} bytes (hash {hash:016x})",
                secs(ev.t_us), ev.u("value_len"), ev.u("value_hash")
            ));
        }
    }
    for (key, content) in finals {
        let k = show_key(key);
        let ids = parse_content(content).map_err(|e| format!("key {k}: {e}"))?;
        judged.insert(k, ids);
    }
    let mut by_key: BTreeMap<&str, Vec<(&OpId, &Op)>> = BTreeMap::new();
    for (id, op) in &ops {
        by_key.entry(op.key.as_str()).or_default().push((id, op));
    }
    for (key, ids) in &judged {
        let mut position: BTreeMap<OpId, usize> = BTreeMap::new();
        for (i, id) in ids.iter().enumerate() {
            let Some(op) = ops.get(id) else {
                return Err(format!("key {key}: holds {id}, which no client appended"));
            };
            if &op.key != key {
                return Err(format!("key {key}: holds {id}, which was appended to key {}", op.key));
            }
            if let Some(first) = position.insert(*id, i) {
                return Err(format!("key {key}: {id} ({} outcome, invoked {}) is there twice, at positions {first} and {i}", op.outcome, secs(op.invoke_us)));
            }
            if op.outcome == "fail" || op.outcome == "unavailable" {
                return Err(format!("key {key}: {id} definitely failed (completed {}) but is in the final content at position {i}", secs(op.complete_us.unwrap_or(0))));
            }
        }
        let on_key: &[(&OpId, &Op)] = by_key.get(key.as_str()).map_or(&[], |v| v.as_slice());
        for (id, op) in on_key {
            if op.outcome == "ok" && !position.contains_key(id) {
                return Err(format!(
                    "key {key}: {id} was acknowledged (invoked {}, completed {}) but is not in the final content ({} records)",
                    secs(op.invoke_us), secs(op.complete_us.unwrap_or(0)), ids.len()
                ));
            }
        }
        // Real-time order: every append acknowledged before `b` was invoked precedes `b`.
        let acked: Vec<(u64, &OpId)> = on_key.iter().filter(|(_, op)| op.outcome == "ok").map(|(id, op)| (op.complete_us.unwrap_or(0), *id)).collect();
        for (b, op) in on_key {
            let Some(&pos_b) = position.get(b) else { continue };
            for (done, a) in acked.iter().filter(|(done, _)| *done < op.invoke_us) {
                let pos_a = position[a];
                if pos_a > pos_b {
                    return Err(format!(
                        "key {key}: {a} was acknowledged at {} before {b} was invoked at {}, but comes after it (positions {pos_a} and {pos_b})",
                        secs(*done), secs(op.invoke_us)
                    ));
                }
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

    fn ev(kind: &str, t_us: u64, client: u64, seq: u64, outcome: &str) -> Event {
        let mut fields = vec![("op", Val::S("append".into())), ("client", Val::U(client)), ("seq", Val::U(seq)), ("key", Val::S("k1".into()))];
        if kind == "complete" {
            fields.push(("outcome", Val::S(outcome.into())));
        }
        Event { t_us, kind: kind.into(), fields }
    }

    fn content(ids: &[(u32, u64)]) -> Vec<u8> {
        ids.iter().flat_map(|&(client, seq)| payload(OpId { client, seq }, 16)).collect()
    }

    fn history() -> Vec<Event> {
        vec![ev("invoke", 1, 1, 1, ""), ev("complete", 2, 1, 1, "ok"), ev("invoke", 3, 1, 2, ""), ev("complete", 4, 1, 2, "unknown"), ev("invoke", 5, 2, 1, ""), ev("complete", 6, 2, 1, "fail")]
    }

    #[test]
    fn no_lost_append_accepts_a_correct_history() {
        check(&history(), &[(b"k1".to_vec(), content(&[(1, 1), (1, 2)]))]).unwrap();
        check(&history(), &[(b"k1".to_vec(), content(&[(1, 1)]))]).unwrap();
    }

    #[test]
    fn no_lost_append_flags_lost_duplicate_failed_and_reordered() {
        let h = history();
        let lost = check(&h, &[(b"k1".to_vec(), content(&[(1, 2)]))]).unwrap_err();
        assert!(lost.contains("acknowledged"), "{lost}");
        let dup = check(&h, &[(b"k1".to_vec(), content(&[(1, 1), (1, 2), (1, 2)]))]).unwrap_err();
        assert!(dup.contains("twice"), "{dup}");
        let failed = check(&h, &[(b"k1".to_vec(), content(&[(1, 1), (2, 1)]))]).unwrap_err();
        assert!(failed.contains("definitely failed"), "{failed}");
        let order = check(&h, &[(b"k1".to_vec(), content(&[(1, 2), (1, 1)]))]).unwrap_err();
        assert!(order.contains("before"), "{order}");
        let phantom = check(&h, &[(b"k1".to_vec(), content(&[(1, 1), (9, 9)]))]).unwrap_err();
        assert!(phantom.contains("no client appended"), "{phantom}");
    }
}
