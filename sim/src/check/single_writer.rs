//! `single_writer` (always):
//! 1. per stream, the effects at the store carry non-decreasing epochs (in stream order);
//! 2. each effect's epoch was given by the map to the server that wrote it;
//! 3. no two servers hold valid authority over a key at the same instant: once a server
//!    activated a range at epoch `e`, no other server admits an append, or answers a strong
//!    read, for a key in it at an older epoch (a bounded-staleness read may be answered by a
//!    just-deposed owner: `reads_consistent` judges it against its bound);
//! 4. no effect lands in a stream below a fence raised before it: an effect at an offset at or
//!    past a fence's sealed length carries at least that fence's epoch;
//! 5. no effect at an epoch below `e` lands past the stream prefix a server loaded when it
//!    activated the range at `e`, after that activation (a new owner serves only once its fence
//!    keeps older writers out; an effect inside the loaded prefix was in the stream before,
//!    whenever its `effect` event, which follows the store's fsync, comes);
//! 6. a paused range reports itself drained only once every append it admitted at that epoch
//!    has landed or been refused at the store, or the server reloaded the range since (the
//!    outcome was unknown): DESIGN.md's "pausing a range waits for every admitted effect";
//! 7. no server admits an append or answers a strong read after the authority expired its
//!    session, until it registers anew: its lease, by its own clock and with the safety
//!    margin, must run out first (DESIGN.md: "a server serves only while its session lease at
//!    the lock service is valid by its own clock").
//!
//! Read from the store's `effect`, the servers' `admit` / `activated` and the authority's
//! `map_row` and `map_transfer` (a move's target and its new epoch) events.

use super::secs;
use crate::events::Event;
use std::collections::BTreeMap;

/// One effect at the store, as the checker keeps it.
struct Effect {
    epoch: u64,
    server: u64,
    t_us: u64,
    /// `c1.7 on key k000042`, for messages.
    what: String,
}

struct Activation {
    server: u64,
    epoch: u64,
    t_us: u64,
}

/// Whether rendered `key` falls in rendered `[start, end)` (`""` = the empty key, `~` = no end).
pub(crate) fn contains(bounds: &(String, String), key: &str) -> bool {
    let start = if bounds.0 == "\"\"" { "" } else { bounds.0.as_str() };
    let key = if key == "\"\"" { "" } else { key };
    key >= start && (bounds.1 == "~" || key < bounds.1.as_str())
}

/// Check all three clauses. Errors: the first violation, with both sides.
pub fn check(events: &[Event]) -> Result<(), String> {
    // (range, epoch) -> owner, from the map.
    let mut owner_of: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut bounds: BTreeMap<u64, (String, String)> = BTreeMap::new();
    // stream -> offset -> effect
    let mut streams: BTreeMap<u64, BTreeMap<u64, Effect>> = BTreeMap::new();
    let mut activations: BTreeMap<u64, Activation> = BTreeMap::new();
    // stream -> fences as (sealed length, epoch, time)
    let mut fences: BTreeMap<u64, Vec<(u64, u64, u64)>> = BTreeMap::new();
    // stream -> the newest activation (epoch, server, time, stream records loaded), for clause 5
    let mut newest: BTreeMap<u64, (u64, u64, u64, u64)> = BTreeMap::new();
    // Clause 6: appends admitted and not yet landed or refused, by (range, client, seq), as
    // (server, epoch, time of admission); and the (stream, client, seq) that landed.
    let mut open: BTreeMap<(u64, u64, u64), (u64, u64, u64)> = BTreeMap::new();
    let mut landed: std::collections::BTreeSet<(u64, u64, u64)> = Default::default();
    // Clause 7: server -> (session the authority expired, when), until a newer session renews.
    let mut expired: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    // server -> its newest session (from its renewals and registrations).
    let mut current_session: BTreeMap<u64, u64> = BTreeMap::new();
    for ev in events {
        match ev.kind.as_str() {
            "map_row" => {
                let (range, epoch, owner) = (ev.u("range"), ev.u("epoch"), ev.u("owner"));
                bounds.insert(range, (ev.s("start").to_string(), ev.s("end").to_string()));
                if epoch == 0 || owner == 0 {
                    continue;
                }
                if let Some(prev) = owner_of.insert((range, epoch), owner) {
                    if prev != owner {
                        return Err(format!("epoch {epoch} of r{range} was given to server-{prev} and later to server-{owner} (map version {}, {})", ev.u("version"), secs(ev.t_us)));
                    }
                }
            }
            "map_child" => {
                // A split or merge gives its children's epochs when it is journaled.
                let (range, epoch, owner) = (ev.u("range"), ev.u("epoch"), ev.u("owner"));
                if let Some(prev) = owner_of.insert((range, epoch), owner) {
                    if prev != owner {
                        return Err(format!("epoch {epoch} of r{range} was given to server-{prev} and later to server-{owner} (map version {}, {})", ev.u("version"), secs(ev.t_us)));
                    }
                }
            }
            "map_transfer" => {
                // The journal gives the transfer's new epoch to its target before the target
                // fences and serves; the row gets it only at the commit.
                let (range, epoch, to) = (ev.u("range"), ev.u("epoch"), ev.u("to"));
                if let Some(prev) = owner_of.insert((range, epoch), to) {
                    if prev != to {
                        return Err(format!("epoch {epoch} of r{range} was given to server-{prev} and later to move target server-{to} (map version {}, {})", ev.u("version"), secs(ev.t_us)));
                    }
                }
            }
            "activated" => {
                let (server, range, epoch) = (ev.u("server"), ev.u("range"), ev.u("epoch"));
                activations.insert(range, Activation { server, epoch, t_us: ev.t_us });
                if newest.get(&range).is_none_or(|n| n.0 < epoch) {
                    newest.insert(range, (epoch, server, ev.t_us, ev.u("stream")));
                }
                // A (re)load settles every outcome it was started for.
                open.retain(|(r, _, _), (s, e, _)| !(*r == range && *s == server && *e == epoch));
            }
            "drained" => {
                let (server, range, epoch) = (ev.u("server"), ev.u("range"), ev.u("epoch"));
                let pending = open.range((range, 0, 0)..=(range, u64::MAX, u64::MAX)).find(|(_, (s, e, _))| *s == server && *e == epoch);
                if let Some(((_, client, seq), (_, _, t_admit))) = pending {
                    return Err(format!(
                        "server-{server} reported r{range} drained at epoch {epoch} at {} while c{client}.{seq}, admitted at {}, had neither landed nor been refused at the store",
                        secs(ev.t_us), secs(*t_admit)
                    ));
                }
            }
            "lease_expired" => {
                // An expiry the authority records after the server moved on to a newer session
                // (it restarted and registered again) concerns an incarnation that is gone.
                let (server, session) = (ev.u("server"), ev.u("session"));
                if current_session.get(&server).is_none_or(|c| *c <= session) {
                    expired.insert(server, (session, ev.t_us));
                }
            }
            "renewed" if ev.get("ok") == Some(&crate::events::Val::B(true)) => {
                let (server, session) = (ev.u("server"), ev.u("session"));
                current_session.insert(server, session);
                if expired.get(&server).is_some_and(|(s, _)| session > *s) {
                    expired.remove(&server);
                }
            }
            "read_served" if ev.s("level") == "bounded" => {}
            "admit" | "read_served" => {
                if let Some(&(session, t_exp)) = expired.get(&ev.u("server")) {
                    let what = if ev.kind == "admit" { format!("admitted c{}.{}", ev.u("client"), ev.u("seq")) } else { "answered a strong read".to_string() };
                    return Err(format!(
                        "server-{} {what} on key {} (r{} at epoch {}) at {}, after the authority expired its session {session} at {}",
                        ev.u("server"), ev.s("key"), ev.u("range"), ev.u("epoch"), secs(ev.t_us), secs(t_exp)
                    ));
                }
                let (server, epoch, key) = (ev.u("server"), ev.u("epoch"), ev.s("key"));
                if ev.kind == "admit" {
                    let op = (ev.u("range"), ev.u("client"), ev.u("seq"));
                    if !landed.contains(&op) {
                        open.entry(op).or_insert((server, epoch, ev.t_us));
                    }
                }
                for (range, a) in &activations {
                    let covers = bounds.get(range).is_some_and(|b| contains(b, key));
                    if covers && a.server != server && a.epoch > epoch {
                        let what = if ev.kind == "admit" { format!("admitted c{}.{}", ev.u("client"), ev.u("seq")) } else { "answered a read".to_string() };
                        return Err(format!(
                            "two servers with authority over key {key}: server-{server} {what} at epoch {epoch} (r{}) at {}, after server-{} activated r{range} at epoch {} at {}",
                            ev.u("range"), secs(ev.t_us), a.server, a.epoch, secs(a.t_us)
                        ));
                    }
                }
            }
            "fence" => fences.entry(ev.u("stream")).or_default().push((ev.u("length"), ev.u("epoch"), ev.t_us)),
            "fenced" => {
                open.remove(&(ev.u("stream"), ev.u("client"), ev.u("seq")));
            }
            "deduplicated" => {
                let op = (ev.u("stream"), ev.u("client"), ev.u("seq"));
                open.remove(&op);
                landed.insert(op);
            }
            "effect" => {
                let (stream, epoch, server) = (ev.u("stream"), ev.u("epoch"), ev.u("server"));
                let id = format!("c{}.{} on key {}", ev.u("client"), ev.u("seq"), ev.s("key"));
                let op = (stream, ev.u("client"), ev.u("seq"));
                open.remove(&op);
                landed.insert(op);
                let offset = ev.u("offset");
                if let Some(&(newer, by, t_act, loaded)) = newest.get(&stream).filter(|n| n.0 > epoch && offset >= n.3) {
                    return Err(format!(
                        "effect {id} at {} in stream r{stream} by server-{server} at epoch {epoch} landed at offset {offset}, past the {loaded} records server-{by} loaded when it activated r{stream} at epoch {newer} at {}",
                        secs(ev.t_us), secs(t_act)
                    ));
                }
                match owner_of.get(&(stream, epoch)) {
                    Some(&owner) if owner == server => {}
                    Some(&owner) => {
                        return Err(format!("effect {id} at {} in stream r{stream} written by server-{server} at epoch {epoch}, which the map gave to server-{owner}", secs(ev.t_us)));
                    }
                    None => return Err(format!("effect {id} at {} in stream r{stream} by server-{server} at epoch {epoch}, which the map never gave out", secs(ev.t_us))),
                }
                streams.entry(stream).or_default().insert(ev.u("offset"), Effect { epoch, server, t_us: ev.t_us, what: id });
            }
            _ => {}
        }
    }
    for (stream, effects) in &streams {
        for &(length, fence, t_fence) in fences.get(stream).map_or(&[][..], |v| v.as_slice()) {
            if let Some((offset, e)) = effects.range(length..).find(|(_, e)| e.epoch < fence) {
                return Err(format!(
                    "stream r{stream}: offset {offset} = {} by server-{} at epoch {} ({}) landed past the fence raised to epoch {fence} at length {length} ({})",
                    e.what, e.server, e.epoch, secs(e.t_us), secs(t_fence)
                ));
            }
        }
        let mut prev: Option<(&u64, &Effect)> = None;
        for (offset, e) in effects {
            if let Some((po, p)) = prev {
                if e.epoch < p.epoch {
                    return Err(format!(
                        "stream r{stream}: epochs go down: offset {po} = {} by server-{} at epoch {} ({}), then offset {offset} = {} by server-{} at epoch {} ({})",
                        p.what, p.server, p.epoch, secs(p.t_us), e.what, e.server, e.epoch, secs(e.t_us)
                    ));
                }
            }
            prev = Some((offset, e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Val;

    fn ev(kind: &str, t_us: u64, fields: &[(&'static str, Val)]) -> Event {
        Event { t_us, kind: kind.into(), fields: fields.to_vec() }
    }

    fn row(range: u64, epoch: u64, owner: u64) -> Event {
        ev("map_row", 0, &[("range", Val::U(range)), ("start", Val::S("\"\"".into())), ("end", Val::S("~".into())), ("owner", Val::U(owner)), ("epoch", Val::U(epoch))])
    }

    fn effect(offset: u64, epoch: u64, server: u64) -> Event {
        ev("effect", offset, &[("stream", Val::U(1)), ("server", Val::U(server)), ("epoch", Val::U(epoch)), ("key", Val::S("k1".into())), ("offset", Val::U(offset))])
    }

    #[test]
    fn single_writer_flags_a_stale_epoch_after_a_newer_one() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), effect(0, 1, 1), effect(1, 2, 2), effect(2, 1, 1)];
        let err = check(&evs).unwrap_err();
        assert!(err.contains("epochs go down"), "{err}");
        check(&evs[..4]).unwrap();
    }

    #[test]
    fn single_writer_flags_an_effect_below_the_fence_even_without_a_later_write() {
        let fence = ev("fence", 5, &[("stream", Val::U(1)), ("epoch", Val::U(2)), ("length", Val::U(1))]);
        let evs = vec![row(1, 1, 1), row(1, 2, 2), effect(0, 1, 1), fence, effect(1, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("past the fence"));
    }

    #[test]
    fn single_writer_flags_a_writer_the_map_did_not_choose() {
        let evs = vec![row(1, 1, 1), effect(0, 1, 2)];
        assert!(check(&evs).unwrap_err().contains("gave to server-1"));
    }

    fn op(kind: &str, t_us: u64, server: u64, epoch: u64) -> Event {
        let stream = if kind == "admit" { "range" } else { "stream" };
        ev(kind, t_us, &[(stream, Val::U(1)), ("server", Val::U(server)), ("epoch", Val::U(epoch)), ("key", Val::S("k1".into())), ("client", Val::U(1)), ("seq", Val::U(7)), ("offset", Val::U(0))])
    }

    fn at(kind: &str, t_us: u64, server: u64, epoch: u64) -> Event {
        ev(kind, t_us, &[("server", Val::U(server)), ("range", Val::U(1)), ("epoch", Val::U(epoch)), ("stream", Val::U(0))])
    }

    #[test]
    fn single_writer_flags_an_old_effect_landing_after_a_newer_activation() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), at("activated", 1, 1, 1), op("admit", 2, 1, 1), at("activated", 3, 2, 2), op("effect", 4, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("past the 0 records server-2 loaded"));
        let mut before = evs.clone();
        before.swap(4, 5);
        check(&before).unwrap();
        // Inside the prefix the new owner loaded: it was in the stream before the fence, and
        // only its event (after the store's fsync) comes late.
        let mut inside = evs.clone();
        inside[4] = ev("activated", 3, &[("server", Val::U(2)), ("range", Val::U(1)), ("epoch", Val::U(2)), ("stream", Val::U(1))]);
        check(&inside).unwrap();
    }

    #[test]
    fn single_writer_flags_a_drain_reported_with_an_append_still_on_its_way() {
        let evs = vec![row(1, 1, 1), at("activated", 1, 1, 1), op("admit", 2, 1, 1), at("drained", 3, 1, 1), op("effect", 4, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("had neither landed nor been refused"));
        // Landed first, or the outcome was unknown and the range reloaded: fine.
        check(&[evs[0].clone(), evs[1].clone(), evs[2].clone(), evs[4].clone(), evs[3].clone()]).unwrap();
        check(&[evs[0].clone(), evs[1].clone(), evs[2].clone(), at("activated", 3, 1, 1), at("drained", 4, 1, 1), op("effect", 5, 1, 1)]).unwrap();
        // A duplicate's deduplicated answer can come before the original's effect event.
        check(&[evs[0].clone(), evs[1].clone(), evs[2].clone(), op("deduplicated", 3, 1, 1), at("drained", 4, 1, 1), op("effect", 5, 1, 1)]).unwrap();
    }

    #[test]
    fn single_writer_flags_serving_after_the_authority_expired_the_session() {
        let expired = ev("lease_expired", 5, &[("server", Val::U(1)), ("session", Val::U(3))]);
        let renewed = ev("renewed", 7, &[("server", Val::U(1)), ("session", Val::U(4)), ("ok", Val::B(true))]);
        let evs = vec![row(1, 1, 1), op("admit", 2, 1, 1), expired.clone(), op("admit", 6, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("after the authority expired its session 3"));
        // Registered anew (a newer session): serving again is fine, and so is an expiry of the
        // old session recorded after that.
        check(&[row(1, 1, 1), expired.clone(), renewed.clone(), op("admit", 8, 1, 1)]).unwrap();
        check(&[row(1, 1, 1), renewed, expired, op("admit", 8, 1, 1)]).unwrap();
    }

    #[test]
    fn single_writer_flags_an_admission_after_a_newer_activation() {
        let act = ev("activated", 5, &[("server", Val::U(2)), ("range", Val::U(1)), ("epoch", Val::U(2))]);
        let admit = ev("admit", 6, &[("server", Val::U(1)), ("range", Val::U(1)), ("epoch", Val::U(1)), ("key", Val::S("k1".into()))]);
        let evs = vec![row(1, 1, 1), row(1, 2, 2), act, admit];
        assert!(check(&evs).unwrap_err().contains("two servers with authority"));
    }
}
