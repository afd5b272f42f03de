//! Core (pure: no runtime, no I/O, no await): a partition server's requests as flows of steps.
//! [`ServerCore::handle`] takes an [`Input`] (a request, the answer of a call, a sleep or a wait
//! that ended) and the local time, and returns a [`Step`]: the effects to perform first, in
//! order, then what the flow waits for next ([`Next`]): a call to the store or the authority, a
//! sleep, a wait on a held range's progress, or the reply that ends it. What the flow does with
//! the answer is data ([`Then`]) the driver hands back with it, so the waiting rules (an append
//! answered once visible, a pause answered once drained, a repeated finish waiting for the
//! running one, a reload retried while the store is silent, a transfer read a chunk at a time)
//! live here, and the driver (`node`, [`super::run`]) only performs the steps. Idea: the sans-I/O
//! protocol cores of quinn-proto and raft-rs, here with the continuation returned to the caller
//! as the authority's [`crate::authority::Pending`] is.

use super::core::{HeldState, ServerCore};
use super::step::{Effect, Notifier, CHUNK_ATTEMPTS};
use crate::config::Mutation;
use crate::event::Event;
use crate::ids::RangeId;
use crate::map::RangeRow;
use crate::msg::{FinishError, Msg, Record, Refusal, Source};
use std::rc::Rc;
pub use super::step::{After, Chunks, FenceCall, FinishMove, Input, Lineage, LineageFor, LoadError, Next, Peer, Step, Tail, Then, Wait, Want};

impl ServerCore {
    /// Take one input at `now_us` (local clock) and return the next step of its flow. Panics
    /// on a message a server is never sent.
    pub fn handle(&mut self, input: Input, now_us: u64) -> Step {
        let next = match input {
            Input::Start => {
                self.incarnation = now_us;
                self.session_round(now_us)
            }
            Input::Request { msg, link_backlog_us } => self.request(msg, link_backlog_us, now_us),
            Input::Answered { then, answer } => self.answered(then, answer, now_us),
            Input::Resume(then) => self.resume(then, now_us),
            Input::Waited { wait, timed_out } => self.waited(wait, timed_out),
        };
        Step { effects: self.take_effects(), next }
    }

    /// Whether `wait` may go on: `None` when it may (look at it with [`Input::Waited`]), else
    /// the held range whose progress to wait for before asking again.
    pub fn poll(&self, wait: &Wait) -> Option<Notifier> {
        match wait {
            Wait::Applied { range, epoch, op } => {
                let held = self.ranges.get(range).filter(|h| h.row.epoch == *epoch)?;
                (!held.applied.contains(op)).then_some(held.progress)
            }
            Wait::Drained { range, epoch } => match self.drained(*range, *epoch) {
                Ok(None) => Some(self.ranges[range].progress),
                _ => None,
            },
            Wait::Finish { row } => self.ranges.get(&row.id).filter(|h| h.row.epoch == row.epoch && h.state == HeldState::Loading).map(|h| h.progress),
        }
    }

    fn request(&mut self, msg: Msg, link_backlog_us: u64, now_us: u64) -> Next {
        match msg {
            Msg::Append { range, epoch, key, id, bytes, bulk } => {
                let request = Record { epoch, id, key, bytes, bulk };
                if !self.mutated(Mutation::CheckThenAwaitThenAdmit) {
                    return self.append(range, request, now_us);
                }
                match self.check(range, epoch, &request.key, now_us) {
                    Err(refusal) => Next::Done(Some(Msg::Served { result: Err(refusal) })),
                    Ok(()) => Next::Sleep { ms: 10, then: Then::Admit { range, request: Box::new(request) } },
                }
            }
            Msg::Read { range, epoch, key, level } => Next::Done(Some(Msg::Served { result: self.read(range, epoch, &key, level, now_us) })),
            Msg::GetLoad { leader_epoch } => {
                let ranges = if self.command(leader_epoch, "get_load").is_ok() { self.load(now_us) } else { Vec::new() };
                Next::Done(Some(Msg::Load { ranges }))
            }
            Msg::Open { row, leader_epoch, lineage } => self.open(*row, leader_epoch, lineage),
            Msg::PreCopy { row, threshold_bytes, max_rounds, leader_epoch } => {
                let begin = self.command(leader_epoch, "pre_copy").and_then(|_| self.begin_copy_round(&row, threshold_bytes, max_rounds));
                match begin {
                    Err(e) => Next::Done(Some(Msg::PreCopied { result: Err(e) })),
                    Ok(Err(progress)) => Next::Done(Some(Msg::PreCopied { result: Ok(progress) })),
                    Ok(Ok(from)) => {
                        let row = *row;
                        let want = Want::Copying(row.clone());
                        self.chunks(Chunks { stream: row.id, from, out: Vec::new(), end: None, misses: 0, precopy: true, want, after: After::Precopied { row, from } })
                    }
                }
            }
            Msg::Pause { range, epoch, leader_epoch } => {
                if let Err(e) = self.command(leader_epoch, "pause").and_then(|_| self.pause(range, epoch, now_us)) {
                    return Next::Done(Some(Msg::PausedAt { result: Err(e) }));
                }
                // The drain's bound: twice the store timeout plus the transfers queued on this
                // server's link when it begins (the admitted appends still to leave it).
                let queued_ms = link_backlog_us.div_ceil(1000);
                Next::Wait { wait: Wait::Drained { range, epoch }, timeout_ms: Some(2 * self.knobs.store_timeout_ms + queued_ms) }
            }
            Msg::FinishMove { row, digest, strategy, lineage, leader_epoch } => {
                if let Err(e) = self.command(leader_epoch, "finish_move") {
                    return Next::Done(Some(Msg::MoveFinished { result: Err(FinishError::NotNow(e)) }));
                }
                let flow = Then::Finish(Box::new(FinishMove { row: *row, digest, strategy, lineage }));
                Next::Detach { flow, patience_ms: crate::msg::finish_patience_ms(self.knobs.rpc_timeout_ms), otherwise: Msg::MoveFinished { result: Err(FinishError::InProgress) } }
            }
            Msg::Release { range, epoch, to, new_epoch, leader_epoch } => {
                if self.command(leader_epoch, "release").is_ok() {
                    self.release(range, epoch, to, new_epoch);
                }
                Next::Done(Some(Msg::Released))
            }
            other => panic!("{}: unexpected message {other:?}", self.id),
        }
    }

    /// An append: admit it, and send the admitted effect to the store.
    fn append(&mut self, range: RangeId, request: Record, now_us: u64) -> Next {
        let Record { epoch, id: op, key, bytes, bulk } = request;
        match self.admit(range, epoch, &key, op, now_us) {
            Err(refusal) => Next::Done(Some(Msg::Served { result: Err(refusal) })),
            Ok(None) => Next::Done(Some(Msg::Served { result: Ok(bytes::Bytes::new()) })),
            Ok(Some(epoch)) => {
                let record = Record { epoch, id: op, key, bytes, bulk };
                let msg = Msg::StoreAppend { stream: range, server: self.id, record: record.clone() };
                Next::Call { to: Peer::Store, msg, timeout_ms: self.knobs.store_timeout_ms, then: Then::Appended { range, record } }
            }
        }
    }

    /// The store answered an admitted append: apply it, and answer once it is visible to reads
    /// here (earlier offsets may still be on their way back from the store).
    fn appended(&mut self, range: RangeId, record: Record, answer: Option<Msg>) -> Next {
        let result = match answer {
            Some(Msg::StoreAppended { result }) => Some(result),
            _ => None,
        };
        if let Some(row) = self.finish_append(range, &record, result) {
            self.out.push(Effect::Spawn(Then::Resync(row)));
        }
        match result {
            Some(Ok(_)) => Next::Wait { wait: Wait::Applied { range, epoch: record.epoch, op: record.id }, timeout_ms: Some(self.knobs.store_timeout_ms) },
            Some(Err(fence)) => Next::Done(Some(Msg::Served { result: Err(Refusal::Fenced { fence }) })),
            None => Next::Done(Some(Msg::ServedUnknown)),
        }
    }

    /// `Open`: fence the row's stream, load its lineage and content, and serve.
    fn open(&mut self, row: RangeRow, leader_epoch: u64, lineage: Vec<Source>) -> Next {
        match self.command(leader_epoch, "open").and_then(|_| self.begin_open(&row)) {
            Err(e) => Next::Done(Some(Msg::Opened { result: Err(e) })),
            Ok(None) => Next::Done(Some(Msg::Opened { result: Ok(()) })),
            // Content kept from an older epoch (from > 0) keeps its lineage too.
            Ok(Some(from)) if from > 0 => self.open_load(row, from, None),
            Ok(Some(from)) => self.lineage(Lineage { sources: lineage, next: 0, out: Vec::new(), then: LineageFor::Open { row, from } }),
        }
    }

    /// An open's load once its lineage is read: fence and reload (or, mutation
    /// `publish-before-fence`, read without fencing).
    fn open_load(&mut self, row: RangeRow, from: u64, base: Option<Rc<Vec<Record>>>) -> Next {
        if self.mutated(Mutation::PublishBeforeFence) {
            let want = Want::Loading(row.clone());
            return self.chunks(Chunks { stream: row.id, from, out: Vec::new(), end: None, misses: 0, precopy: false, want, after: After::OpenedUnfenced { row, base } });
        }
        self.reload(row.clone(), After::Opened { row, base })
    }

    /// Fence `row`'s stream and load what this server does not hold yet: from the prefix it
    /// keeps ([`ServerCore::load_from`]) when the store's digest of that prefix matches the
    /// content applied here ([`ServerCore::keep_prefix`]), else the whole stream from offset 0.
    /// The fence comes first either way: only records below its sealed length (durable, and
    /// final for every writer at an older epoch) are compared or loaded.
    fn reload(&mut self, row: RangeRow, after: After) -> Next {
        let (from, bar) = (self.load_from(&row), self.doubtful(&row));
        let msg = Msg::Fence { stream: row.id, epoch: row.epoch, from, bar: bar.clone() };
        Next::Call { to: Peer::Store, msg, timeout_ms: self.knobs.store_timeout_ms, then: Then::Fenced(Box::new(FenceCall { row, from, bar, reload: true, after })) }
    }

    /// The store answered a fence: read the rest of the sealed content past what it sent.
    fn fenced(&mut self, call: FenceCall, answer: Option<Msg>) -> Next {
        let FenceCall { row, from, bar, reload, after } = call;
        let (records, length, prefix) = match answer {
            Some(Msg::FenceResult { result: Ok(records), length, prefix }) => (records, length, prefix),
            Some(Msg::FenceResult { result: Err(fence), .. }) => return self.after(after, Err(LoadError::Fenced(fence))),
            _ => return self.after(after, Err(LoadError::NoAnswer)),
        };
        let (from, records) = if reload {
            self.settled(&row, &bar);
            let kept = self.keep_prefix(&row, from, prefix);
            (kept, if kept == from { records } else { Vec::new() })
        } else {
            (from, records)
        };
        self.chunks(Chunks { stream: row.id, from, out: records, end: Some(length), misses: 0, precopy: false, want: Want::Loading(row), after })
    }

    /// Read the next source of `lineage`, or go on with its records once all are read.
    fn lineage(&mut self, lineage: Lineage) -> Next {
        let Some(src) = lineage.sources.get(lineage.next) else {
            let Lineage { out, then, .. } = lineage;
            return self.lineage_read(then, Ok(out));
        };
        let (stream, upto) = (src.stream, src.upto);
        let want = match &lineage.then {
            LineageFor::Open { row, .. } => Want::Loading(row.clone()),
            LineageFor::Finish { finish, .. } => Want::Loading(finish.row.clone()),
        };
        self.chunks(Chunks { stream, from: 0, out: Vec::new(), end: Some(upto), misses: 0, precopy: false, want, after: After::Lineage(Box::new(lineage)) })
    }

    /// A lineage was read (`Ok`: its records) or could not be.
    fn lineage_read(&mut self, then: LineageFor, read: Result<Vec<Record>, LoadError>) -> Next {
        match (then, read) {
            (LineageFor::Open { row, from }, Ok(base)) => self.open_load(row, from, Some(Rc::new(base))),
            (LineageFor::Open { row, .. }, Err(e)) => Next::Done(Some(Msg::Opened { result: self.finish_open(&row, None, Err(e.to_string())) })),
            (LineageFor::Finish { finish, records }, Ok(base)) => {
                let (row, from) = (finish.row.clone(), records.len() as u64);
                let msg = Msg::Fence { stream: row.id, epoch: row.epoch, from, bar: Vec::new() };
                let after = After::Tail(Box::new(Tail { finish, base: Rc::new(base), records }));
                Next::Call { to: Peer::Store, msg, timeout_ms: self.knobs.store_timeout_ms, then: Then::Fenced(Box::new(FenceCall { row, from, bar: Vec::new(), reload: false, after })) }
            }
            (LineageFor::Finish { finish, records }, Err(e)) => self.finish_failed(&finish.row, records, e),
        }
    }

    /// The next chunk of a transfer, or what follows it once it is done.
    fn chunks(&mut self, read: Chunks) -> Next {
        let at = read.from + read.out.len() as u64;
        if read.end.is_some_and(|e| at >= e) {
            return self.after(read.after, Ok(read.out));
        }
        let wanted = match &read.want {
            Want::Loading(row) => self.loading(row),
            Want::Copying(row) => self.copying(row),
        };
        if !wanted {
            return self.after(read.after, Err(LoadError::Abandoned));
        }
        let msg = Msg::ReadStream { stream: read.stream, from: at, upto: read.end, precopy: read.precopy };
        Next::Call { to: Peer::Store, msg, timeout_ms: self.knobs.store_timeout_ms, then: Then::Chunk(Box::new(read)) }
    }

    /// The store answered a chunk of a transfer (or did not).
    fn chunk_read(&mut self, mut read: Chunks, answer: Option<Msg>) -> Next {
        let at = read.from + read.out.len() as u64;
        match answer {
            Some(Msg::StreamRead { records, length, .. }) => {
                read.misses = 0;
                let end = *read.end.get_or_insert(length);
                if records.is_empty() {
                    let done = if at >= end { Ok(read.out) } else { Err(LoadError::NoAnswer) };
                    return self.after(read.after, done);
                }
                read.out.extend(records);
            }
            _ => {
                read.misses += 1;
                if read.misses >= CHUNK_ATTEMPTS {
                    return self.after(read.after, Err(LoadError::NoAnswer));
                }
            }
        }
        self.chunks(read)
    }

    /// A transfer ended with `loaded`: go on with the flow it was for.
    fn after(&mut self, after: After, loaded: Result<Vec<Record>, LoadError>) -> Next {
        match after {
            After::Lineage(mut lineage) => match loaded {
                Err(e) => self.lineage_read(lineage.then, Err(e)),
                Ok(records) => {
                    let src = lineage.sources[lineage.next].clone();
                    if records.len() as u64 != src.upto {
                        return self.lineage_read(lineage.then, Err(LoadError::NoAnswer));
                    }
                    lineage.out.extend(records.into_iter().filter(|r| src.contains(&r.key)));
                    lineage.next += 1;
                    self.lineage(*lineage)
                }
            },
            After::Opened { row, base } => Next::Done(Some(Msg::Opened { result: self.finish_open(&row, base, loaded.map_err(|e| e.to_string())) })),
            After::OpenedUnfenced { row, base } => {
                if loaded.is_ok() {
                    self.out.push(Effect::Spawn(Then::LooseFence(row.clone())));
                }
                Next::Done(Some(Msg::Opened { result: self.finish_open(&row, base, loaded.map_err(|e| e.to_string())) }))
            }
            After::Resynced(row) => self.resynced(row, loaded),
            After::Precopied { row, from } => Next::Done(Some(Msg::PreCopied { result: Ok(self.finish_copy_round(&row, from, loaded.ok())) })),
            After::Tail(tail) => {
                let Tail { finish, base, records } = *tail;
                match loaded {
                    Ok(rest) => Next::Done(Some(Msg::MoveFinished { result: self.complete_move(&finish.row, base, records, rest, finish.digest, finish.strategy) })),
                    Err(e) => self.finish_failed(&finish.row, records, e),
                }
            }
        }
    }

    /// A background reload of `row` ended with `loaded`: serve, or try again after the renew
    /// interval while the store does not answer, for as long as the range is still loading here
    /// at that epoch.
    fn resynced(&mut self, row: RangeRow, loaded: Result<Vec<Record>, LoadError>) -> Next {
        if !self.loading(&row) {
            return Next::Done(None);
        }
        if loaded == Err(LoadError::NoAnswer) {
            return Next::Sleep { ms: self.knobs.renew_interval_ms, then: Then::Resync(row) };
        }
        let _ = self.finish_open(&row, None, loaded.map_err(|e| e.to_string()));
        Next::Done(None)
    }

    /// A move's cutover failed short of a verdict on the copy: give the pre-copied records
    /// back and answer `NotNow`.
    fn finish_failed(&mut self, row: &RangeRow, records: Vec<Record>, e: LoadError) -> Next {
        self.abandon_finish(row, records, &e.to_string());
        Next::Done(Some(Msg::MoveFinished { result: Err(FinishError::NotNow(e.to_string())) }))
    }

    /// The target's side of a move's cutover: fence the stream at the transfer's epoch (so
    /// nothing more from the source can land), copy the tail past what pre-copy brought, check
    /// the whole copy against the source's digest, and serve. A repeated request while an
    /// earlier one still fences and copies waits for that attempt (up to the request's
    /// patience) instead of answering `InProgress` at once: the leader's repeated asks would
    /// otherwise all be answered within a few ms, and the round would leave the move just
    /// before the copy was done.
    fn finish(&mut self, finish: FinishMove) -> Next {
        let records = match self.begin_finish(&finish.row) {
            Err(FinishError::InProgress) => return Next::Wait { wait: Wait::Finish { row: finish.row }, timeout_ms: None },
            Err(e) => return Next::Done(Some(Msg::MoveFinished { result: Err(e) })),
            Ok(None) => return Next::Done(Some(Msg::MoveFinished { result: Ok(()) })),
            Ok(Some(records)) => records,
        };
        let sources = finish.lineage.clone();
        self.lineage(Lineage { sources, next: 0, out: Vec::new(), then: LineageFor::Finish { finish, records } })
    }

    fn resume(&mut self, then: Then, now_us: u64) -> Next {
        match then {
            Then::Session => self.session_round(now_us),
            Then::Admit { range, request } => self.append(range, *request, now_us),
            Then::Resync(row) => self.reload(row.clone(), After::Resynced(row)),
            Then::LooseFence(row) => {
                let msg = Msg::Fence { stream: row.id, epoch: row.epoch, from: 0, bar: Vec::new() };
                Next::Call { to: Peer::Store, msg, timeout_ms: self.knobs.store_timeout_ms, then: Then::Ignore }
            }
            Then::Finish(finish) => self.finish(*finish),
            other => panic!("{}: {other:?} waits for an answer, not a resume", self.id),
        }
    }

    fn answered(&mut self, then: Then, answer: Option<Msg>, now_us: u64) -> Next {
        match then {
            Then::Registered { sent_us } => self.registered(sent_us, answer, now_us),
            Then::Renewed { session, sent_us } => self.renewed(session, sent_us, answer, now_us),
            Then::Appended { range, record } => self.appended(range, record, answer),
            Then::Chunk(read) => self.chunk_read(*read, answer),
            Then::Fenced(call) => self.fenced(*call, answer),
            Then::Ignore => Next::Done(None),
            other => panic!("{}: {other:?} is not an answer's continuation", self.id),
        }
    }

    fn waited(&mut self, wait: Wait, timed_out: bool) -> Next {
        match wait {
            Wait::Applied { range, epoch, op } => {
                let visible = !timed_out && self.ranges.get(&range).is_some_and(|h| h.row.epoch == epoch && h.applied.contains(&op));
                if visible {
                    return Next::Done(Some(Msg::Served { result: Ok(bytes::Bytes::new()) }));
                }
                if let Some(row) = self.suspect(range, epoch) {
                    self.out.push(Effect::Spawn(Then::Resync(row)));
                }
                Next::Done(Some(Msg::ServedUnknown))
            }
            Wait::Drained { range, epoch } => {
                let result = match self.drained(range, epoch) {
                    _ if timed_out => Err(format!("{}: {range} did not drain in time", self.id)),
                    Ok(Some(digest)) => {
                        self.out.event(Event::Drained { server: self.id, range, epoch, digest });
                        Ok(digest)
                    }
                    Ok(None) => unreachable!("polled drained"),
                    Err(e) => Err(e),
                };
                Next::Done(Some(Msg::PausedAt { result }))
            }
            Wait::Finish { row } => {
                let result = match self.ranges.get(&row.id).filter(|h| h.row.epoch == row.epoch) {
                    Some(held) if held.state == HeldState::Active => Ok(()),
                    _ => Err(FinishError::NotNow(format!("{}: the finish of {} at {} failed", self.id, row.id, row.epoch))),
                };
                Next::Done(Some(Msg::MoveFinished { result }))
            }
        }
    }

    /// The session upkeep's round: register when there is no session, else renew it.
    fn session_round(&mut self, now_us: u64) -> Next {
        let (msg, then) = match self.session {
            None => (Msg::RegisterServer { server: self.id, incarnation: self.incarnation }, Then::Registered { sent_us: now_us }),
            Some(session) => (Msg::RenewSession { server: self.id, session }, Then::Renewed { session, sent_us: now_us }),
        };
        Next::Call { to: Peer::Authority, msg, timeout_ms: self.knobs.rpc_timeout_ms, then }
    }

    /// The lease a renewal sent at `sent_us` grants: trusted until lease − margin after it.
    fn lease_from(&mut self, session: u64, sent_us: u64) {
        self.lease_valid_until_us = sent_us + (self.knobs.lease_ms - self.knobs.lease_margin()) * 1000;
        self.out.event(Event::Renewed { server: self.id, session, ok: true, valid_until_ms: self.lease_valid_until_us / 1000 });
    }

    fn registered(&mut self, sent_us: u64, answer: Option<Msg>, now_us: u64) -> Next {
        if let Some(Msg::Registered { session }) = answer {
            self.session = Some(session);
            self.lease_from(session, sent_us);
            return self.session_round(now_us);
        }
        Next::Sleep { ms: self.knobs.renew_interval_ms, then: Then::Session }
    }

    fn renewed(&mut self, session: u64, sent_us: u64, answer: Option<Msg>, now_us: u64) -> Next {
        match answer {
            Some(Msg::SessionRenewed { ok: true }) if self.session == Some(session) => self.lease_from(session, sent_us),
            Some(Msg::SessionRenewed { ok: false }) => {
                self.out.event(Event::SessionExpired { server: self.id, session });
                self.lose_session("session_expired");
                return self.session_round(now_us);
            }
            _ => {} // no answer: the lease runs out by itself
        }
        Next::Sleep { ms: self.knobs.renew_interval_ms, then: Then::Session }
    }
}
