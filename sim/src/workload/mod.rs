//! The workload: clients that append unique records to keys drawn from a skewed distribution and
//! read them back through the frontends, recording a history of `invoke` and `complete` events
//! (simulated times, outcomes ok / fail / unknown); and the probe client of the heal phase, which
//! proves every range takes an append again.
//!
//! Every append's payload is its idempotency id, `c<client>.<seq>`, padded with `-` to the
//! scenario's record size and ended by `;`, so the final content of a key says which appends it
//! holds and in what order.

use crate::scenario::{key_name, Scenario};
use madsim::rand::Rng;
use partmap::config::{client_addr, frontend_addr, lock_addr, Knobs};
use partmap::ids::{show_key, OpId};
use partmap::map::RangeState;
use partmap::msg::{Msg, Outcome, ReadLevel};
use partmap::seam::{now_us, sleep_ms, sleep_us, Rpc};
use std::sync::{Arc, Mutex};
use crate::events::{record, Outcome as Ended, What};
use partmap::event::ClientOp;

/// The payload of append `id`: `c1.17---…;`, `len` bytes long (at least the id and `;`).
pub fn payload(id: OpId, len: usize) -> Vec<u8> {
    let mut v = format!("{id}").into_bytes();
    if v.len() + 1 < len {
        v.resize(len - 1, b'-');
    }
    v.push(b';');
    v
}

/// Split a key's content back into the ids of the appends it holds, in order.
///
/// Errors: a piece that is not a payload of [`payload`]'s shape.
pub fn parse_content(content: &[u8]) -> Result<Vec<OpId>, String> {
    let text = std::str::from_utf8(content).map_err(|e| format!("content is not UTF-8: {e}"))?;
    let mut out = Vec::new();
    for piece in text.split_terminator(';') {
        let id = piece.trim_end_matches('-');
        let parsed = id.strip_prefix('c').and_then(|rest| rest.split_once('.')).and_then(|(c, s)| Some(OpId { client: c.parse().ok()?, seq: s.parse().ok()? }));
        out.push(parsed.ok_or_else(|| format!("malformed record `{piece}`"))?);
    }
    Ok(out)
}

/// A stable 64-bit hash of a key's content, for read results in the history
/// ([`ContentHasher`] over the whole content).
pub fn content_hash(content: &[u8]) -> u64 {
    let mut h = ContentHasher::new();
    h.extend(content);
    h.finish()
}

/// The running state of [`content_hash`] over a content read front to back: the hash of any
/// prefix is [`ContentHasher::finish`] after extending by that prefix's bytes, in pieces of any
/// size (split-invariant). The checkers walk a key's final content record by record this way
/// and compare every record-boundary prefix with the reads' hashes.
///
/// Eight bytes a step (FxHash's multiply-rotate step, as [`partmap::ids::mix_words`]); the
/// unfinished last word waits in `tail`. [`ContentHasher::finish`] folds the tail tagged with
/// the total length, then a 64-bit finalizer (MurmurHash3's `fmix64`). Each step is a bijection
/// of the state for a given word, so two contents of one length that differ in one word always
/// hash apart. Issue 13: the byte-at-a-time FNV-1a it replaced was 7% of `moves.json`'s CPU in
/// the clients' reads and 3% in the checkers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentHasher {
    /// The state after every whole word so far.
    h: u64,
    /// The bytes after the last whole word, little-endian, low bytes first.
    tail: u64,
    /// Bytes taken so far.
    len: u64,
}

impl Default for ContentHasher {
    fn default() -> Self {
        ContentHasher::new()
    }
}

impl ContentHasher {
    /// The state of the empty content.
    pub const fn new() -> Self {
        ContentHasher { h: partmap::ids::FNV_OFFSET, tail: 0, len: 0 }
    }

    fn word(&mut self, w: u64) {
        self.h = partmap::ids::mix_word(self.h, w);
    }

    /// Take the next `bytes` of the content.
    pub fn extend(&mut self, mut bytes: &[u8]) {
        let used = (self.len % 8) as usize;
        self.len += bytes.len() as u64;
        if used > 0 {
            let take = (8 - used).min(bytes.len());
            for (i, b) in bytes[..take].iter().enumerate() {
                self.tail |= (*b as u64) << (8 * (used + i));
            }
            bytes = &bytes[take..];
            if used + take < 8 {
                return;
            }
            let w = std::mem::take(&mut self.tail);
            self.word(w);
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for (i, b) in chunks.remainder().iter().enumerate() {
            self.tail |= (*b as u64) << (8 * i);
        }
    }

    /// The hash of the content taken so far.
    pub fn finish(&self) -> u64 {
        let mut h = partmap::ids::mix_word(self.h, self.tail) ^ self.len;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A client's network seam: the scenario's bandwidth, and no link faults (clients stand for
/// the users; the nemesis never faults their links).
pub fn client_net(knobs: &Knobs) -> partmap::seam::Net {
    partmap::seam::Net { bandwidth_bytes_per_s: knobs.bandwidth_bytes_per_s, faults: Default::default() }
}

/// How long a client waits for its frontend: longer than the frontend's whole retry budget.
pub fn client_timeout_ms(k: &Knobs) -> u64 {
    k.frontend_attempts as u64 * (k.rpc_timeout_ms + k.store_timeout_ms + k.frontend_backoff_ms_max) + 1000
}

fn ended(o: &Outcome) -> (Ended, String) {
    match o {
        Outcome::Ok => (Ended::Ok, String::new()),
        Outcome::Failed(r) => (Ended::Fail, r.clone()),
        Outcome::Unknown(r) => (Ended::Unknown, r.clone()),
        Outcome::MapUnavailable(r) => (Ended::Unavailable, r.clone()),
    }
}

/// One append through `frontend` (`len` payload bytes and `bulk` simulated ones), recorded as
/// `invoke` + `complete`. Returns the outcome.
pub async fn append(rpc: &Rpc, knobs: &Knobs, frontend: u32, key: Vec<u8>, id: OpId, len: usize, bulk: u64) -> Outcome {
    record(What::Invoke { op: ClientOp::Append, id, key: key.clone(), bound_ms: None });
    let msg = Msg::ClientAppend { key: key.clone(), id, bytes: payload(id, len).into(), bulk };
    let outcome = match rpc.call(frontend_addr(frontend), msg, client_timeout_ms(knobs)).await {
        Ok(Msg::ClientResult { outcome, .. }) => outcome,
        _ => Outcome::Unknown("frontend did not answer".into()),
    };
    let (ended, reason) = ended(&outcome);
    record(What::Complete { op: ClientOp::Append, id, key, outcome: ended, reason, value_len: 0, value_hash: 0 });
    outcome
}

/// One read at `level` through `frontend`, recorded as `invoke` (with the level and, for a
/// bounded read, its bound in ms) + `complete` (with the content).
pub async fn read(rpc: &Rpc, knobs: &Knobs, frontend: u32, client: u32, seq: u64, key: Vec<u8>, level: ReadLevel) -> (Outcome, bytes::Bytes) {
    let bound_ms = match level {
        ReadLevel::Strong => None,
        ReadLevel::Bounded { ms } => Some(ms),
    };
    let id = OpId { client, seq };
    record(What::Invoke { op: ClientOp::Read, id, key: key.clone(), bound_ms });
    let (outcome, value) = match rpc.call(frontend_addr(frontend), Msg::ClientRead { key: key.clone(), level }, client_timeout_ms(knobs)).await {
        Ok(Msg::ClientResult { outcome, value }) => (outcome, value),
        _ => (Outcome::Failed("frontend did not answer".into()), bytes::Bytes::new()),
    };
    let (ended, reason) = ended(&outcome);
    // The content as its length and hash: enough to tell whether it is a prefix of the final
    // content, at a fraction of the cost of logging it.
    let value_hash = content_hash(&value);
    record(What::Complete { op: ClientOp::Read, id, key, outcome: ended, reason, value_len: value.len() as u64, value_hash });
    (outcome, value)
}

/// Client `n` (1-based): operations arrive at its share of the rate (exponential gaps) until
/// `duration_s`, reads with probability `read_fraction`, keys skewed. At most
/// `in_flight_per_client` are in flight at once; an arrival that finds no free slot by
/// `shed_after_ms` after it (or by the window's end) is shed: traced as [`What::Shed`] and never
/// sent, so the client builds no backlog and starts nothing after the window (issue 13).
pub async fn client(n: u32, scenario: Scenario, knobs: Knobs) {
    use futures_util::future::{select, Either};
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let w = &scenario.workload;
    if w.ops_per_s <= 0.0 {
        return;
    }
    let rpc = Rpc::bind(client_addr(n), &client_net(&knobs)).await;
    let frontend = (n - 1) % scenario.topology.frontends + 1;
    let end_us = w.duration_s * 1_000_000;
    let mean_gap_us = 1e6 * scenario.topology.clients as f64 / w.ops_per_s;
    let in_flight_max = w.in_flight_per_client.max(1) as usize;
    if w.start_s > 0 {
        sleep_us((w.start_s * 1_000_000).saturating_sub(now_us())).await;
    }
    let mut in_flight = FuturesUnordered::new();
    let mut next_us = now_us();
    let mut seq = 0;
    loop {
        let (gap_us, is_read, u) = {
            let mut rng = madsim::rand::thread_rng();
            let u: f64 = rng.gen_range(f64::EPSILON..1.0);
            (-u.ln() * mean_gap_us, rng.gen_bool(w.read_fraction), rng.gen_range(0.0..1.0f64))
        };
        // `as` saturates a huge gap (a tiny rate) at u64::MAX; adding it must not wrap.
        next_us = next_us.saturating_add(gap_us as u64);
        if next_us >= end_us {
            break;
        }
        // Until the arrival, let the operations in flight complete. One sleep (one timer) per
        // arrival, however many operations complete before it.
        let now = now_us();
        if next_us > now {
            let mut arrival = std::pin::pin!(sleep_us(next_us - now));
            loop {
                if in_flight.is_empty() {
                    arrival.await;
                    break;
                }
                if let Either::Left(_) = select(arrival.as_mut(), in_flight.next()).await {
                    break;
                }
            }
        }
        // A free slot by the start deadline, or the operation is shed.
        let deadline_us = next_us.saturating_add(w.shed_after_ms * 1000).min(end_us);
        let now = now_us();
        if in_flight.len() >= in_flight_max && now < deadline_us {
            let mut deadline = std::pin::pin!(sleep_us(deadline_us - now));
            while in_flight.len() >= in_flight_max {
                if let Either::Left(_) = select(deadline.as_mut(), in_flight.next()).await {
                    break;
                }
            }
        }
        assert!(in_flight.len() <= in_flight_max, "client {n}: {} operations in flight, bound {in_flight_max}", in_flight.len());
        let op = if is_read { ClientOp::Read } else { ClientOp::Append };
        if in_flight.len() >= in_flight_max || now_us() >= end_us || now_us() > deadline_us {
            record(What::Shed { client: n, op, arrived_us: next_us });
            continue;
        }
        let mut index = (((w.keys as f64) * u.powf(1.0 + w.key_skew)) as u32).min(w.keys - 1);
        if w.hot_shift_s > 0 {
            // Every client computes the same offsets from the period number (no shared RNG
            // draw, so the shift does not depend on the order clients run in).
            let period = now_us() / (w.hot_shift_s * 1_000_000);
            let offset = (period.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33) as u32 % w.keys;
            index = (index + offset) % w.keys;
        }
        // Drawn only when asked for, so scenarios without it draw as before.
        if w.flux_fraction > 0.0 && madsim::rand::thread_rng().gen_bool(w.flux_fraction) {
            if let Some(i) = crate::fault::aim::with_flux(|spans| flux_key(w.keys, spans, &mut madsim::rand::thread_rng())) {
                index = i;
            }
        }
        let key = key_name(index);
        seq += 1;
        let (rpc, knobs) = (&rpc, &knobs);
        let started: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>> = if is_read {
            // Drawn only when asked for, so scenarios without bounded reads draw as before.
            let bounded = w.bounded_read_fraction > 0.0 && madsim::rand::thread_rng().gen_bool(w.bounded_read_fraction);
            let level = if bounded { ReadLevel::Bounded { ms: w.read_bound_ms } } else { ReadLevel::Strong };
            Box::pin(async move {
                read(rpc, knobs, frontend, n, seq, key, level).await;
            })
        } else {
            let id = OpId { client: n, seq };
            Box::pin(async move {
                append(rpc, knobs, frontend, key, id, w.record_bytes as usize, w.bulk_bytes).await;
            })
        };
        in_flight.push(started);
    }
    // The window is over: the operations in flight complete; nothing new starts.
    while in_flight.next().await.is_some() {}
}

/// How many keys of a range in flux the workload aims at: its first ones.
pub const FLUX_KEYS: u32 = 4;

/// A workload key index (below `keys`) in one of the key spans `spans` (`(start, end)`, end
/// exclusive, `None` the end of the key space): a span drawn uniformly (the next one on when it
/// holds no workload key), the key uniform among its first [`FLUX_KEYS`] workload keys; `None`
/// when no span holds a workload key.
pub fn flux_key(keys: u32, spans: &[(&[u8], Option<&[u8]>)], rng: &mut impl Rng) -> Option<u32> {
    // Key names are zero-padded, so their byte order is their index order.
    let first_at_or_after = |bound: &[u8]| {
        let (mut lo, mut hi) = (0u32, keys);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key_name(mid).as_slice() < bound { lo = mid + 1 } else { hi = mid }
        }
        lo
    };
    if spans.is_empty() {
        return None;
    }
    let first = rng.gen_range(0..spans.len());
    for k in 0..spans.len() {
        let (start, end) = spans[(first + k) % spans.len()];
        let (a, b) = (first_at_or_after(start), end.map_or(keys, first_at_or_after));
        if a < b {
            // A few keys of the range, so that a key written across the handoff is also read
            // across it (a stale read shows only on a key someone wrote since).
            return Some(a + rng.gen_range(0..(b - a).min(FLUX_KEYS)));
        }
    }
    None
}

/// The script client (`client-<clients+1>`): each append of `workload.script` at its time, one
/// at a time, recorded like any other client's; with `workload.script_open_loop`, every append
/// on its own from the start (none waits for the ones before it). An append waiting on a
/// trigger that has not fired by the end of the workload (`workload.duration_s`) ends the
/// script there (one at a time), or is never sent (open loop).
pub async fn script(n: u32, scenario: Scenario, knobs: Knobs) {
    let rpc = Rpc::bind(client_addr(n), &client_net(&knobs)).await;
    let w = &scenario.workload;
    if w.script_open_loop {
        let mut all: futures_util::stream::FuturesUnordered<_> = w.script.iter().enumerate().map(|(i, a)| scripted(&rpc, &knobs, w.duration_s, n, i, a)).collect();
        while futures_util::StreamExt::next(&mut all).await.is_some() {}
        return;
    }
    for (i, a) in w.script.iter().enumerate() {
        if !scripted(&rpc, &knobs, w.duration_s, n, i, a).await {
            return;
        }
    }
}

/// Scripted append `i` (`a`) of client `n`: wait for its time and its trigger, then send it and
/// wait for its outcome. Returns false when its trigger had not fired by the workload's end
/// (`duration_s`): it was never sent.
async fn scripted(rpc: &Rpc, knobs: &Knobs, duration_s: u64, n: u32, i: usize, a: &crate::scenario::ScriptedAppend) -> bool {
    let now = now_us();
    if a.at_ms * 1000 > now {
        sleep_us(a.at_ms * 1000 - now).await;
    }
    if let Some(on) = &a.on {
        let event = partmap::event::Event::NAMES.iter().find(|n| **n == on.event).expect("validated event name");
        let node = if crate::fault::aim::is_aimed(&on.node) { Err(on.node.as_str()) } else { Ok(crate::fault::trigger::id_of(&on.node).expect("validated node name")) };
        let what = format!("append {} on {} by {} #{}", a.key, on.event, on.node, on.count);
        let wait = crate::fault::trigger::fired(crate::fault::trigger::Wait { event, node, range: on.range, epoch: on.epoch, count: on.count, what });
        // A trigger that has not fired when the workload ends never sends its append (nor,
        // one at a time, the ones after it), and the run's end lists it as unfired: waiting
        // on past the end would keep the run from ever finishing.
        let left_us = (duration_s * 1_000_000).saturating_sub(now_us());
        if madsim::time::timeout(std::time::Duration::from_micros(left_us), wait).await.is_err() {
            return false;
        }
        if on.delay_ms > 0 {
            sleep_us(on.delay_ms * 1000).await;
        }
    }
    append(rpc, knobs, a.frontend, a.key.clone().into_bytes(), OpId { client: n, seq: i as u64 + 1 }, a.bytes as usize, 0).await;
    true
}

/// What the probe found in the heal phase.
#[derive(Clone, Debug, Default)]
pub struct ProbeReport {
    /// Whether every range became active and took an append before the deadline.
    pub live: bool,
    /// Why not, when not: the ranges still failing.
    pub detail: String,
    /// Simulated ms from the heal to the last range's first successful probe append.
    pub recovery_ms: u64,
    /// Set when the probe finished.
    pub done: bool,
    /// The served view: what a final strong read through the frontends returned for every key
    /// any client tried to append to (keys with no content included, as empty).
    pub served: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
}

/// The probe client (`client-0`), started at the heal: until the liveness deadline, check that
/// every range in the map is active and that an append to each succeeds through a frontend; then
/// read `final_keys` (every key a client tried to append to) and every probed key through the
/// frontends with strong reads, retrying each until it is answered or the deadline passes: the
/// served view that `no_lost_append` and `reads_consistent` judge. A key that cannot be read
/// fails liveness. Writes its findings into `report`.
pub async fn probe(scenario: Scenario, knobs: Knobs, final_keys: Vec<Vec<u8>>, report: Arc<Mutex<ProbeReport>>) {
    let rpc = Rpc::bind(client_addr(0), &client_net(&knobs)).await;
    let start = now_us();
    let deadline_us = start + scenario.heal.liveness_deadline_s * 1_000_000;
    let mut seq = 0;
    let mut detail = String::from("map never read");
    let mut proven: std::collections::BTreeSet<Vec<u8>> = Default::default();
    // Every key the probe appended to, answered or not: the final reads cover them all (an
    // unknown outcome may have landed).
    let mut attempted: std::collections::BTreeSet<Vec<u8>> = Default::default();
    let live = loop {
        if now_us() >= deadline_us {
            break false;
        }
        let Ok(Msg::Map { map }) = rpc.call(lock_addr(), Msg::GetMap, knobs.rpc_timeout_ms).await else {
            detail = "the authority did not answer".into();
            sleep_ms(200).await;
            continue;
        };
        let rows = map.live_rows();
        let inactive: Vec<String> = rows.iter().filter(|r| r.state != RangeState::Active).map(|r| format!("{}({:?})", r.id, r.state)).collect();
        if rows.is_empty() || !inactive.is_empty() {
            detail = format!("ranges not active: {}", if rows.is_empty() { "map empty".to_string() } else { inactive.join(", ") });
            sleep_ms(200).await;
            continue;
        }
        let mut failing = Vec::new();
        for row in &rows {
            if proven.contains(&row.start) {
                continue;
            }
            seq += 1;
            let frontend = (seq as u32 - 1) % scenario.topology.frontends + 1;
            attempted.insert(row.start.clone());
            let outcome = append(&rpc, &knobs, frontend, row.start.clone(), OpId { client: 0, seq }, 16, 0).await;
            if outcome == Outcome::Ok {
                proven.insert(row.start.clone());
            } else {
                failing.push(format!("{} [{}..): {:?}", row.id, show_key(&row.start), outcome));
            }
        }
        if failing.is_empty() && rows.iter().all(|r| proven.contains(&r.start)) {
            break true;
        }
        detail = format!("appends failing: {}", failing.join("; "));
        sleep_ms(200).await;
    };
    let recovery_ms = (now_us() - start) / 1000;
    // The deadline holds for the last proof too, not only between passes (found in review: 256
    // ranges proven one by one ran 8 s past a 1 s deadline).
    let live = if live && now_us() > deadline_us {
        detail = format!("every range took an append only {recovery_ms} ms after the heal");
        false
    } else {
        live
    };
    let mut served = std::collections::BTreeMap::new();
    let mut unread = Vec::new();
    if live {
        let mut keys: Vec<Vec<u8>> = final_keys.into_iter().chain(attempted).collect();
        keys.sort();
        keys.dedup();
        for (i, key) in keys.into_iter().enumerate() {
            let mut frontend = i as u32 % scenario.topology.frontends + 1;
            loop {
                seq += 1;
                let (outcome, value) = read(&rpc, &knobs, frontend, 0, seq, key.clone(), ReadLevel::Strong).await;
                if outcome == Outcome::Ok {
                    served.insert(key, value.to_vec());
                    break;
                }
                if now_us() >= deadline_us {
                    unread.push(format!("{} ({outcome:?})", show_key(&key)));
                    break;
                }
                frontend = frontend % scenario.topology.frontends + 1;
                sleep_ms(200).await;
            }
        }
    }
    if !unread.is_empty() {
        detail = format!("final strong reads failing for {} keys: {}", unread.len(), unread.join(", "));
    }
    let live = live && unread.is_empty();
    let mut r = report.lock().expect("probe report");
    *r = ProbeReport { live, detail: if live { String::new() } else { detail }, recovery_ms, done: true, served };
}

/// The records the loader (`client-<clients+2>`) holds in every initial range before the run
/// (`workload.preload_bytes`, issue 15's range size): per range, its first key gets records of
/// 16 real bytes and simulated bulk, each at most `max_record` bytes in all, at epoch 0. The
/// stream of initial range `j` is `RangeId(j + 1)` (the bootstrap numbers ranges in key order).
/// Returns (stream, record) pairs in order.
pub fn preload(scenario: &Scenario, max_record: u64) -> Vec<(partmap::ids::RangeId, partmap::msg::Record)> {
    let w = &scenario.workload;
    let mut out = Vec::new();
    if w.preload_bytes == 0 {
        return out;
    }
    let loader = scenario.topology.clients + 2;
    let n = scenario.topology.initial_ranges;
    let per = max_record.max(32);
    let mut seq = 0;
    for j in 0..n {
        let key = key_name((w.keys as u64 * j as u64 / n as u64) as u32);
        let mut left = w.preload_bytes;
        while left > 0 {
            let take = left.min(per);
            left -= take;
            seq += 1;
            let id = OpId { client: loader, seq };
            let bytes = payload(id, 16);
            let bulk = take.saturating_sub(bytes.len() as u64);
            out.push((partmap::ids::RangeId(j as u64 + 1), partmap::msg::Record { epoch: partmap::ids::Epoch(0), id, key: key.clone(), bytes: bytes.into(), bulk }));
        }
    }
    out
}
