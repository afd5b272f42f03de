//! The server node task against a real store (issue 19): open by fence-and-load, appends
//! acknowledged once durable and visible, deduplicated retries, a newer owner's fence, a
//! planned move between two real servers, lineage loads, session loss and an authority that
//! goes silent. The authority is scripted (sessions 1, 2, ... in registration order; renewals
//! answered while `renew` says so); every request comes from a test node standing in for the
//! leader and clients.

use crate::config::{lock_addr, manager_addr, server_addr, store_addr, Knobs};
use crate::ids::{Epoch, OpId, RangeId, ServerId};
use crate::map::{RangeRow, RangeState, Strategy};
use crate::msg::{Msg, ReadLevel, Record, Refusal, Source};
use crate::seam::{now_us, sleep_ms, Disk, Net, Rpc};
use crate::store::StoreRecord;
use crate::testkit::block_on;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const R: RangeId = RangeId(1);

fn net() -> Net {
    Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }
}

/// What the scripted authority does.
#[derive(Default)]
struct Authority {
    /// The last session handed out.
    sessions: AtomicU64,
    /// Renewals are refused (the session expired) when set.
    refuse: AtomicBool,
    /// The authority does not answer at all when set.
    silent: AtomicBool,
    /// Renewals go unanswered (registrations are still answered) when set.
    renewals_silent: AtomicBool,
}

/// Start the scripted authority, a real store on `disk`, and real servers 1 and 2 (registering
/// in that order, so server-n gets session n); then run `body` on a leader node and wait for
/// it to finish.
fn world<F: Future<Output = ()> + 'static>(knobs: Knobs, disk: Disk<StoreRecord>, authority: Arc<Authority>, body: impl Fn(Rc2) -> F + Send + Sync + 'static) {
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    block_on(async move {
        let h = madsim::runtime::Handle::current();
        let a = authority.clone();
        h.create_node().name("lock-1").ip(lock_addr().ip()).init(move || {
            let a = a.clone();
            async move {
                let rpc = Rpc::bind(lock_addr(), &net()).await;
                rpc.serve(move |msg, _| {
                    let a = a.clone();
                    async move {
                        if a.silent.load(Ordering::SeqCst) {
                            return None;
                        }
                        match msg {
                            Msg::RegisterServer { .. } => Some(Msg::Registered { session: a.sessions.fetch_add(1, Ordering::SeqCst) + 1 }),
                            Msg::RenewSession { .. } if a.renewals_silent.load(Ordering::SeqCst) => None,
                            Msg::RenewSession { .. } => Some(Msg::SessionRenewed { ok: !a.refuse.load(Ordering::SeqCst) }),
                            other => panic!("scripted authority: {other:?}"),
                        }
                    }
                });
                std::future::pending::<()>().await
            }
        }).build();
        let (k, dk) = (knobs.clone(), disk.clone());
        h.create_node().name("store-1").ip(store_addr().ip()).init(move || crate::store::run(k.clone(), dk.clone(), net())).build();
        for n in 1..=2u32 {
            let k = knobs.clone();
            h.create_node().name(format!("server-{n}")).ip(server_addr(ServerId(n)).ip()).init(move || {
                let k = k.clone();
                async move {
                    sleep_ms(u64::from(n) * 20).await; // register in order
                    crate::server::run(ServerId(n), k, net()).await
                }
            }).build();
        }
        let body = Arc::new(body);
        h.create_node().name("manager-1").ip(manager_addr(1).ip()).init(move || {
            let (body, done) = (body.clone(), d2.clone());
            async move {
                let rpc = Rpc::bind(manager_addr(1), &net()).await;
                sleep_ms(200).await; // both servers registered
                body(Rc2(rpc)).await;
                done.store(true, Ordering::SeqCst);
            }
        }).build();
        while !done.load(Ordering::SeqCst) {
            sleep_ms(100).await;
        }
    });
}

/// The test node's connection, with helpers for the requests.
#[derive(Clone)]
struct Rc2(std::rc::Rc<Rpc>);

impl Rc2 {
    async fn call(&self, to: u32, msg: Msg) -> Msg {
        let addr = if to == 0 { store_addr() } else { server_addr(ServerId(to)) };
        self.0.call(addr, msg, 5_000).await.expect("answered")
    }

    async fn open(&self, server: u32, row: &RangeRow, leader_epoch: u64, lineage: Vec<Source>) -> Result<(), String> {
        match self.call(server, Msg::Open { row: row.clone(), leader_epoch, lineage }).await {
            Msg::Opened { result } => result,
            other => panic!("{other:?}"),
        }
    }

    async fn append(&self, server: u32, epoch: u64, key: &str, seq: u64) -> Msg {
        let msg = Msg::Append { range: R, epoch: Epoch(epoch), key: key.as_bytes().to_vec(), id: OpId { client: 1, seq }, bytes: format!("{seq};").into_bytes().into(), bulk: 0 };
        self.call(server, msg).await
    }

    async fn read(&self, server: u32, epoch: u64, key: &str) -> Result<Vec<u8>, Refusal> {
        match self.call(server, Msg::Read { range: R, epoch: Epoch(epoch), key: key.as_bytes().to_vec(), level: ReadLevel::Strong }).await {
            Msg::Served { result } => result.map(|v| v.to_vec()),
            other => panic!("{other:?}"),
        }
    }
}

/// r1 `[a, m)` owned by server-`owner` (session `owner`) at `epoch`.
fn row(owner: u32, epoch: u64) -> RangeRow {
    RangeRow {
        id: R,
        start: b"a".to_vec(),
        end: Some(b"m".to_vec()),
        owner: Some(ServerId(owner)),
        owner_session: u64::from(owner),
        epoch: Epoch(epoch),
        state: RangeState::Preparing,
        sources: vec![],
        sealed: 0,
        born_ms: 0,
    }
}

fn served(msg: Msg) -> Result<Vec<u8>, Refusal> {
    match msg {
        Msg::Served { result } => result.map(|v| v.to_vec()),
        other => panic!("{other:?}"),
    }
}

fn ok(msg: &Msg) -> bool {
    matches!(msg, Msg::Served { result: Ok(v) } if v.is_empty())
}

fn stream(disk: &Disk<StoreRecord>, durable: bool) -> Vec<Record> {
    let all = if durable { disk.read_durable() } else { disk.read_all() };
    all.into_iter().filter_map(|r| if let StoreRecord::Append { stream: R, record } = r { Some(record) } else { None }).collect()
}

#[test]
fn server_node_opens_appends_deduplicates_and_yields_to_a_newer_fence() {
    let disk = Disk::new(2);
    let d = disk.clone();
    world(Knobs::default(), disk.clone(), Arc::default(), move |rpc| {
        let d = d.clone();
        async move {
            assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::NotOwner), "nothing held yet");
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            assert!(matches!(d.read_durable().last(), Some(StoreRecord::Fence { stream: R, epoch: Epoch(2) })), "fenced before it serves");
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()), "a repeated open");
            assert!(ok(&rpc.append(1, 2, "b", 1).await));
            assert_eq!(stream(&d, true).len(), 1, "durable when acknowledged");
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "visible when acknowledged");
            assert!(ok(&rpc.append(1, 2, "b", 1).await), "a retry");
            assert_eq!(stream(&d, false).len(), 1, "applied once");
            assert!(matches!(rpc.append(1, 2, "z", 2).await, Msg::Served { result: Err(Refusal::KeyOutOfRange) }));
            // A deposed leader's commands do nothing.
            rpc_load_of(&rpc).await;
            assert!(rpc.open(1, &row(1, 9), 2, vec![]).await.unwrap_err().contains("stale leader epoch 2"));
            assert!(matches!(rpc.call(1, Msg::GetLoad { leader_epoch: 2 }).await, Msg::Load { ranges } if ranges.is_empty()));
            assert!(matches!(rpc.call(1, Msg::Release { range: R, epoch: Epoch(2), to: ServerId(2), new_epoch: Epoch(3), leader_epoch: 2 }).await, Msg::Released));
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "the stale release was ignored");
            // A newer owner fences the stream: the next append is refused there and the range
            // is dropped here.
            assert!(matches!(rpc.call(0, Msg::Fence { stream: R, epoch: Epoch(3), from: 0 }).await, Msg::FenceResult { result: Ok(_), .. }));
            assert_eq!(served(rpc.append(1, 2, "b", 3).await), Err(Refusal::Fenced { fence: Epoch(3) }));
            assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::NotOwner));
            // An open below the store's fence fails.
            assert!(rpc.open(1, &row(1, 2), 3, vec![]).await.unwrap_err().contains("fence already at e3"));
        }
    });
    assert_eq!(stream(&disk, true).len(), 1);
}

/// A load report from leader term 3 (raising server-1's bar to 3): r1 with its one record.
async fn rpc_load_of(rpc: &Rc2) {
    match rpc.call(1, Msg::GetLoad { leader_epoch: 3 }).await {
        Msg::Load { ranges } => {
            assert_eq!(ranges.len(), 1);
            assert_eq!((ranges[0].range, ranges[0].records), (R, 1));
        }
        other => panic!("{other:?}"),
    }
}

/// The worked move between two real servers: pre-copy, pause (the source drains), finish at
/// the target (fence, tail, verify), release; the old owner names the new one.
#[test]
fn server_node_planned_move_between_two_servers() {
    let disk = Disk::new(2);
    world(Knobs::default(), disk, Arc::default(), move |rpc| async move {
        assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
        assert!(ok(&rpc.append(1, 2, "b", 1).await));
        let target = row(2, 3);
        let Msg::PreCopied { result: Ok(p) } = rpc.call(2, Msg::PreCopy { row: target.clone(), threshold_bytes: 0, max_rounds: 2, leader_epoch: 1 }).await else { panic!() };
        assert_eq!((p.rounds, p.bytes), (1, 2));
        assert!(ok(&rpc.append(1, 2, "c", 2).await), "the source serves during pre-copy");
        assert!(matches!(rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 0 }).await, Msg::PausedAt { result: Err(_) }), "a deposed leader cannot pause");
        assert!(matches!(rpc.call(1, Msg::Pause { range: R, epoch: Epoch(1), leader_epoch: 1 }).await, Msg::PausedAt { result: Err(_) }), "nor can a pause for another epoch");
        let Msg::PausedAt { result: Ok(digest) } = rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 1 }).await else { panic!() };
        assert_eq!((digest.records, digest.bytes), (2, 4));
        assert_eq!(served(rpc.append(1, 2, "b", 3).await), Err(Refusal::NotReady), "paused");
        assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::NotReady));
        let finish = Msg::FinishMove { row: target.clone(), digest, strategy: Strategy::PreCopy, lineage: vec![], leader_epoch: 1 };
        assert!(matches!(rpc.call(2, finish.clone()).await, Msg::MoveFinished { result: Ok(()) }));
        assert!(matches!(rpc.call(2, finish).await, Msg::MoveFinished { result: Ok(()) }), "repeated: already serving");
        assert_eq!(rpc.read(2, 3, "b").await, Ok(b"1;".to_vec()));
        assert_eq!(rpc.read(2, 3, "c").await, Ok(b"2;".to_vec()));
        assert!(matches!(rpc.call(1, Msg::Release { range: R, epoch: Epoch(2), to: ServerId(2), new_epoch: Epoch(3), leader_epoch: 1 }).await, Msg::Released));
        assert_eq!(served(rpc.append(1, 2, "b", 3).await), Err(Refusal::Moved { owner: ServerId(2), epoch: Epoch(3) }));
        assert!(ok(&rpc.append(2, 3, "b", 3).await));
        assert_eq!(rpc.read(2, 3, "b").await, Ok(b"1;3;".to_vec()));
    });
}

/// A finish whose digest does not match the stream is refused (diverged), and a deposed
/// leader's finish does nothing.
#[test]
fn server_node_move_finish_refuses_a_wrong_digest_and_a_stale_leader() {
    world(Knobs::default(), Disk::new(2), Arc::default(), move |rpc| async move {
        assert_eq!(rpc.open(1, &row(1, 2), 4, vec![]).await, Ok(()));
        assert!(ok(&rpc.append(1, 2, "b", 1).await));
        let Msg::PausedAt { result: Ok(mut digest) } = rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 4 }).await else { panic!() };
        let stale = Msg::FinishMove { row: row(2, 3), digest, strategy: Strategy::StopAndCopy, lineage: vec![], leader_epoch: 3 };
        rpc.call(2, Msg::GetLoad { leader_epoch: 4 }).await;
        assert!(matches!(rpc.call(2, stale).await, Msg::MoveFinished { result: Err(crate::msg::FinishError::NotNow(_)) }));
        digest.checksum ^= 1;
        let wrong = Msg::FinishMove { row: row(2, 3), digest, strategy: Strategy::StopAndCopy, lineage: vec![], leader_epoch: 4 };
        assert!(matches!(rpc.call(2, wrong).await, Msg::MoveFinished { result: Err(crate::msg::FinishError::Diverged(_)) }));
        assert_eq!(rpc.read(2, 3, "b").await, Err(Refusal::NotOwner), "the target does not serve");
    });
}

/// A split child opens from its parent's sealed stream, filtered to its keys; a lineage the
/// store cannot serve in full fails the open.
#[test]
fn server_node_opens_a_child_from_its_parents_sealed_prefix() {
    world(Knobs::default(), Disk::new(2), Arc::default(), move |rpc| async move {
        let parent = RangeRow { start: vec![], end: None, ..row(1, 2) };
        assert_eq!(rpc.open(1, &parent, 1, vec![]).await, Ok(()));
        for (seq, key) in [(1, "b"), (2, "x"), (3, "c")] {
            let msg = Msg::Append { range: R, epoch: Epoch(2), key: key.as_bytes().to_vec(), id: OpId { client: 1, seq }, bytes: format!("{seq};").into_bytes().into(), bulk: 0 };
            assert!(ok(&rpc.call(1, msg).await));
        }
        assert!(matches!(rpc.call(0, Msg::Seal { stream: R, epoch: Epoch(4) }).await, Msg::Sealed { result: Ok(3) }));
        let child = RangeRow { id: RangeId(2), sources: vec![R], ..row(2, 4) }; // [a, m)
        let src = |upto| vec![Source { stream: R, upto, start: b"a".to_vec(), end: Some(b"m".to_vec()) }];
        assert!(rpc.open(2, &child, 1, src(4)).await.is_err(), "the parent has only 3 records");
        assert_eq!(rpc.open(2, &child, 1, src(2)).await, Ok(()), "the first 2 records of the parent");
        let read = |key: &str| Msg::Read { range: RangeId(2), epoch: Epoch(4), key: key.as_bytes().to_vec(), level: ReadLevel::Strong };
        assert_eq!(served(rpc.call(2, read("b")).await), Ok(b"1;".to_vec()));
        assert_eq!(served(rpc.call(2, read("c")).await), Ok(vec![]), "past the sealed length");
    });
}

/// A refused renewal drops every range and the server registers anew; an authority that goes
/// silent lets the lease run out, and the server stops serving by its own clock.
#[test]
fn server_node_stops_serving_when_its_session_ends_or_its_lease_runs_out() {
    let a = Arc::new(Authority::default());
    let a2 = a.clone();
    world(Knobs::default(), Disk::new(2), a.clone(), move |rpc| {
        let a = a2.clone();
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            assert!(ok(&rpc.append(1, 2, "b", 1).await));
            sleep_ms(3_000).await;
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "renewals keep the lease");
            a.silent.store(true, Ordering::SeqCst);
            let silent_at = now_us();
            let knobs = Knobs::default();
            sleep_ms(knobs.lease_ms - knobs.lease_margin() - knobs.renew_interval_ms - 50).await;
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "still within the lease");
            sleep_ms(knobs.renew_interval_ms + 100).await;
            assert!(now_us() - silent_at < knobs.lease_ms * 1000);
            assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::LeaseExpired), "before the authority's lease can end");
            a.silent.store(false, Ordering::SeqCst);
            sleep_ms(1_000).await;
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "renewed again");
            a.refuse.store(true, Ordering::SeqCst);
            sleep_ms(1_000).await;
            assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::NotOwner), "session over: everything dropped");
            a.refuse.store(false, Ordering::SeqCst);
            sleep_ms(1_000).await;
            assert!(a.sessions.load(Ordering::SeqCst) > 2, "server-1 registered anew");
            assert!(rpc.open(1, &row(1, 5), 1, vec![]).await.unwrap_err().contains("assigned to session 1"), "the old session's ranges are not its");
        }
    });
}

/// A registration alone grants the lease from its send time (server-1 registers at 20 ms):
/// with no renewal ever answered, the server serves until 20 ms + lease - margin (1.82 s) by
/// its own clock and refuses strong reads after it. A bounded read then measures its age
/// from that end, inflated by the drift the margin is sized for (margin / (2 * lease) = 5%):
/// about 1 s after the end the age is 1050 ms (a few ms of latency more), over a 1030 ms
/// bound and within a 1100 ms one.
#[test]
fn server_node_lease_from_registration_and_bounded_read_drift() {
    let a = Arc::new(Authority { renewals_silent: AtomicBool::new(true), ..Authority::default() });
    world(Knobs::default(), Disk::new(2), a, move |rpc| async move {
        let knobs = Knobs::default();
        assert_eq!((knobs.lease_ms, knobs.lease_margin()), (2_000, 200), "the figures below assume the defaults");
        assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
        assert!(ok(&rpc.append(1, 2, "b", 1).await));
        sleep_ms(1_700 - now_us() / 1000).await;
        assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "within the lease of the registration");
        sleep_ms(1_850 - now_us() / 1000).await;
        assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::LeaseExpired), "past 20 ms + 1.8 s");
        sleep_ms(2_820 - now_us() / 1000).await;
        let bounded = |ms| Msg::Read { range: R, epoch: Epoch(2), key: b"b".to_vec(), level: ReadLevel::Bounded { ms } };
        assert!(matches!(served(rpc.call(1, bounded(1_030)).await), Err(Refusal::TooStale { age_ms }) if (1_050..1_070).contains(&age_ms)));
        assert_eq!(served(rpc.call(1, bounded(1_100)).await), Ok(b"1;".to_vec()));
    });
}

/// Every lease a server trusts, from its registration and from each renewal, ends lease -
/// margin (1.8 s) after the request's send time: the `renewed` event, emitted when the answer
/// arrives (a round trip after the send, under 50 ms here), names an end between 1.75 s and
/// 1.8 s later.
#[test]
fn server_node_trusts_each_lease_for_lease_minus_margin_from_its_send() {
    use crate::event::{set_sink, Event};
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let sink = seen.clone();
    let previous = set_sink(Some(Box::new(move |e| sink.borrow_mut().push((now_us(), e)))));
    world(Knobs::default(), Disk::new(2), Arc::default(), move |_rpc| async move { sleep_ms(2_000).await });
    set_sink(previous);
    let renewed: Vec<(u64, u64)> = seen.borrow().iter().filter_map(|(t, e)| match e {
        Event::Renewed { server: ServerId(1), ok: true, valid_until_ms, .. } => Some((*t, *valid_until_ms)),
        _ => None,
    }).collect();
    assert!(renewed.len() >= 5, "a registration and renewals every 400 ms: {renewed:?}");
    for (t_us, until_ms) in renewed {
        let ahead_ms = until_ms as i64 - (t_us / 1000) as i64;
        assert!((1_750..=1_800).contains(&ahead_ms), "renewed at {t_us} µs, trusted until {until_ms} ms");
    }
}
