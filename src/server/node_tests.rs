//! The server node task against a real store: open by fence-and-load, appends
//! acknowledged once durable and visible, deduplicated retries, a newer owner's fence, a
//! planned move between two real servers, lineage loads, session loss and an authority that
//! goes silent. The authority is scripted (sessions 1, 2, ... in registration order; renewals
//! answered while `renew` says so); every request comes from a test node standing in for the
//! leader and clients.

use crate::config::{lock_addr, manager_addr, server_addr, store_addr, Knobs};
use crate::ids::{Epoch, OpId, RangeId, ServerId};
use crate::map::{RangeRow, RangeState, Strategy};
use crate::msg::{Msg, ReadLevel, Record, Refusal, Source};
use crate::mutation::Mutation;
use crate::seam::{now_us, sleep_ms, Disk, LinkFault, LinkFaults, Net, Rpc};
use crate::store::StoreRecord;
use crate::testkit::block_on;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const R: RangeId = RangeId(1);

fn net() -> Net {
    Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }
}

/// The directed link from the store to server-`n` (`to_store`: from server-`n` to the store),
/// for [`LinkFaults`].
fn store_link(n: u32, to_store: bool) -> (std::net::IpAddr, std::net::IpAddr) {
    let (store, server) = (store_addr().ip(), server_addr(ServerId(n)).ip());
    if to_store {
        (server, store)
    } else {
        (store, server)
    }
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
    world_on(net(), knobs, disk, authority, body)
}

/// [`world_on`] with the default knobs, store and authority, on a network of
/// `bandwidth_bytes_per_s` whose link faults the body sets (holds of the next message of a kind).
fn world_with_faults<F: Future<Output = ()> + 'static>(bandwidth_bytes_per_s: u64, body: impl Fn(Rc2, LinkFaults) -> F + Send + Sync + 'static) {
    let faults = LinkFaults::default();
    let f = faults.clone();
    world_on(Net { bandwidth_bytes_per_s, faults }, Knobs::default(), Disk::new(2), Arc::default(), move |rpc| body(rpc, f.clone()));
}

/// [`world`] on network `net` (every node's link bandwidth, and the link faults the test sets).
fn world_on<F: Future<Output = ()> + 'static>(net: Net, knobs: Knobs, disk: Disk<StoreRecord>, authority: Arc<Authority>, body: impl Fn(Rc2) -> F + Send + Sync + 'static) {
    let net = Arc::new(net);
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    block_on(async move {
        let h = madsim::runtime::Handle::current();
        let (a, n1) = (authority.clone(), net.clone());
        h.create_node().name("lock-1").ip(lock_addr().ip()).init(move || {
            let (a, n1) = (a.clone(), n1.clone());
            async move {
                let rpc = Rpc::bind(lock_addr(), &n1).await;
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
        let (k, dk, n1) = (knobs.clone(), disk.clone(), net.clone());
        h.create_node().name("store-1").ip(store_addr().ip()).init(move || crate::store::run(k.clone(), dk.clone(), (*n1).clone())).build();
        for n in 1..=2u32 {
            let (k, n1) = (knobs.clone(), net.clone());
            h.create_node().name(format!("server-{n}")).ip(server_addr(ServerId(n)).ip()).init(move || {
                let (k, n1) = (k.clone(), n1.clone());
                async move {
                    sleep_ms(u64::from(n) * 20).await; // register in order
                    crate::server::run(ServerId(n), k, (*n1).clone()).await
                }
            }).build();
        }
        let body = Arc::new(body);
        h.create_node().name("manager-1").ip(manager_addr(1).ip()).init(move || {
            let (body, done, n1) = (body.clone(), d2.clone(), net.clone());
            async move {
                let rpc = Rpc::bind(manager_addr(1), &n1).await;
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
        match self.call(server, Msg::Open { row: Box::new(row.clone()), leader_epoch, lineage }).await {
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
            assert!(matches!(rpc.call(0, Msg::Fence { stream: R, epoch: Epoch(3), from: 0, bar: vec![] }).await, Msg::FenceResult { result: Ok(_), .. }));
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
        let Msg::PreCopied { result: Ok(p) } = rpc.call(2, Msg::PreCopy { row: Box::new(target.clone()), threshold_bytes: 0, max_rounds: 2, leader_epoch: 1 }).await else { panic!() };
        assert_eq!((p.rounds, p.bytes), (1, 2));
        assert!(ok(&rpc.append(1, 2, "c", 2).await), "the source serves during pre-copy");
        assert!(matches!(rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 0 }).await, Msg::PausedAt { result: Err(_) }), "a deposed leader cannot pause");
        assert!(matches!(rpc.call(1, Msg::Pause { range: R, epoch: Epoch(1), leader_epoch: 1 }).await, Msg::PausedAt { result: Err(_) }), "nor can a pause for another epoch");
        let Msg::PausedAt { result: Ok(digest) } = rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 1 }).await else { panic!() };
        assert_eq!((digest.records, digest.bytes), (2, 4));
        assert_eq!(served(rpc.append(1, 2, "b", 3).await), Err(Refusal::NotReady), "paused");
        assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::NotReady));
        let finish = Msg::FinishMove { row: Box::new(target.clone()), digest, strategy: Strategy::PreCopy, lineage: vec![], leader_epoch: 1 };
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
        let stale = Msg::FinishMove { row: Box::new(row(2, 3)), digest, strategy: Strategy::StopAndCopy, lineage: vec![], leader_epoch: 3 };
        rpc.call(2, Msg::GetLoad { leader_epoch: 4 }).await;
        assert!(matches!(rpc.call(2, stale).await, Msg::MoveFinished { result: Err(crate::msg::FinishError::NotNow(_)) }));
        digest.checksum ^= 1;
        let wrong = Msg::FinishMove { row: Box::new(row(2, 3)), digest, strategy: Strategy::StopAndCopy, lineage: vec![], leader_epoch: 4 };
        assert!(matches!(rpc.call(2, wrong).await, Msg::MoveFinished { result: Err(crate::msg::FinishError::Diverged(_)) }));
        assert_eq!(rpc.read(2, 3, "b").await, Err(Refusal::NotOwner), "the target does not serve");
    });
}

/// A split child opens from its parent's sealed stream, filtered to its keys; a lineage the
/// store cannot serve in full fails the open. Drained and reopened at a newer epoch over the
/// content it holds, the child loads only its own stream past that content, not the lineage
/// again.
#[test]
fn server_node_opens_a_child_from_its_parents_sealed_prefix() {
    world_with_faults(net().bandwidth_bytes_per_s, move |rpc, f| {
        async move {
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
        let append = |epoch: u64| Msg::Append { range: RangeId(2), epoch: Epoch(epoch), key: b"d".to_vec(), id: OpId { client: 1, seq: 9 + epoch }, bytes: format!("{epoch};").into_bytes().into(), bulk: 0 };
        assert!(ok(&rpc.call(2, append(4)).await));
        assert!(matches!(rpc.call(2, Msg::Pause { range: RangeId(2), epoch: Epoch(4), leader_epoch: 1 }).await, Msg::PausedAt { result: Ok(_) }));
        // The lineage's next read is held 3 s: a reopen that read it again would wait a store
        // timeout at least.
        f.hold_next(store_link(2, true), "read_stream", 3_000);
        let sent = now_us();
        assert_eq!(rpc.open(2, &RangeRow { epoch: Epoch(5), ..child.clone() }, 1, src(2)).await, Ok(()));
        assert!(now_us() - sent < 100_000, "reopened in {} µs", now_us() - sent);
        assert!(ok(&rpc.call(2, append(5)).await));
        let read = |key: &str| Msg::Read { range: RangeId(2), epoch: Epoch(5), key: key.as_bytes().to_vec(), level: ReadLevel::Strong };
        assert_eq!(served(rpc.call(2, read("b")).await), Ok(b"1;".to_vec()), "the parent's records kept");
        assert_eq!(served(rpc.call(2, read("d")).await), Ok(b"4;5;".to_vec()));
        }
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

/// An append is acknowledged only once reads at its server see it. The first append's store
/// answer is held 300 ms, so the second's (the next offset) comes back first: the second waits
/// for the first to be applied (offsets apply in order), and when it is acknowledged both are
/// visible.
#[test]
fn server_node_acknowledges_an_append_only_once_reads_there_see_it() {
    world_with_faults(net().bandwidth_bytes_per_s, move |rpc, f| {
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            f.hold_next(store_link(1, false), "store_appended", 300);
            let r = rpc.clone();
            let first = crate::seam::spawn(async move { r.append(1, 2, "b", 1).await });
            sleep_ms(5).await;
            let sent = now_us();
            assert!(ok(&rpc.append(1, 2, "c", 2).await));
            assert!(now_us() - sent >= 250_000, "answered {} µs after it was sent: before the first append was applied", now_us() - sent);
            assert_eq!(rpc.read(1, 2, "c").await, Ok(b"2;".to_vec()), "visible when acknowledged");
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "and the earlier offset too");
            assert!(ok(&first.await.expect("the first append's task")));
        }
    });
}

/// A pause answers once the range has drained: here an append whose store answer is lost
/// (the server's wait ends at the store timeout, 1 s, the outcome unknown) and the reload that
/// follows (its fence answer held 600 ms). The drain takes about 1.6 s, within its bound of
/// twice the store timeout (nothing queued on the server's link), and the digest counts the
/// append (durable at the store). A drain that would outlast the bound fails at it, 2 s.
#[test]
fn server_node_pause_waits_for_an_unknown_append_and_its_reload_within_the_drain_bound() {
    world_with_faults(net().bandwidth_bytes_per_s, move |rpc, f| {
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            f.hold_next(store_link(1, false), "store_appended", 1_500);
            f.hold_next(store_link(1, false), "fence_result", 600);
            let r = rpc.clone();
            let append = crate::seam::spawn(async move { r.append(1, 2, "b", 1).await });
            sleep_ms(10).await;
            let paused = now_us();
            let Msg::PausedAt { result: Ok(digest) } = rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 1 }).await else { panic!("the drain failed") };
            let took_ms = (now_us() - paused) / 1000;
            assert!((1_500..2_000).contains(&took_ms), "drained in {took_ms} ms");
            assert_eq!((digest.records, digest.bytes), (1, 2), "the reload found the append");
            assert!(matches!(append.await.expect("the append's task"), Msg::ServedUnknown));
            // r1 again at epoch 3 (reopened over its content), and an append whose answer and
            // reload take 2.5 s: the pause gives up at 2 s.
            assert_eq!(rpc.open(1, &row(1, 3), 1, vec![]).await, Ok(()));
            f.hold_next(store_link(1, false), "store_appended", 3_000);
            f.hold_next(store_link(1, false), "fence_result", 1_500);
            let r = rpc.clone();
            let append = crate::seam::spawn(async move { r.append(1, 3, "b", 2).await });
            sleep_ms(10).await;
            let paused = now_us();
            let Msg::PausedAt { result: Err(e) } = rpc.call(1, Msg::Pause { range: R, epoch: Epoch(3), leader_epoch: 1 }).await else { panic!("drained past its bound") };
            assert!(e.contains("did not drain in time"), "{e}");
            let took_ms = (now_us() - paused) / 1000;
            assert!((1_990..2_100).contains(&took_ms), "gave up after {took_ms} ms");
            assert!(matches!(append.await.expect("the append's task"), Msg::ServedUnknown));
        }
    });
}

/// The drain's bound grows with the transfers queued on the server's link when it begins: on
/// 10 MB/s links, an append carrying 6 MB of bulk reaches the server 0.6 s after it is sent and
/// leaves it for the store over the next 0.6 s; its store answer is lost (the wait ends 1 s after
/// it left) and the reload brings the 6 MB back (0.6 s). The pause, sent 0.65 s after the
/// append (about 0.55 s still queued on the server's link), drains in about 2.15 s: past twice
/// the store timeout, within it plus what was queued.
#[test]
fn server_node_drain_bound_grows_with_the_link_backlog() {
    world_with_faults(10_000_000, move |rpc, f| {
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            f.hold_next(store_link(1, false), "store_appended", 1_500);
            let r = rpc.clone();
            let append = crate::seam::spawn(async move {
                let msg = Msg::Append { range: R, epoch: Epoch(2), key: b"b".to_vec(), id: OpId { client: 1, seq: 1 }, bytes: b"1;".to_vec().into(), bulk: 6_000_000 };
                r.call(1, msg).await
            });
            sleep_ms(650).await;
            let paused = now_us();
            let Msg::PausedAt { result: Ok(digest) } = rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 1 }).await else { panic!("the drain failed") };
            let took_ms = (now_us() - paused) / 1000;
            assert!((2_050..2_550).contains(&took_ms), "drained in {took_ms} ms");
            assert_eq!(digest.records, 1);
            assert!(matches!(append.await.expect("the append's task"), Msg::ServedUnknown));
        }
    });
}

/// An append whose outcome at the store is unknown (its answer lost) makes the server reload
/// the range at once from the stream: it serves again, with the append (durable at the store),
/// a fence round trip later.
#[test]
fn server_node_reloads_a_range_after_an_unknown_append() {
    world_with_faults(net().bandwidth_bytes_per_s, move |rpc, f| {
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            f.hold_next(store_link(1, false), "store_appended", 1_500);
            f.hold_next(store_link(1, false), "fence_result", 300);
            assert!(matches!(rpc.append(1, 2, "b", 1).await, Msg::ServedUnknown));
            assert_eq!(rpc.read(1, 2, "b").await, Err(Refusal::NotReady), "reloading");
            sleep_ms(400).await;
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;".to_vec()), "reloaded, with the append");
            assert!(ok(&rpc.append(1, 2, "b", 2).await));
            assert_eq!(rpc.read(1, 2, "b").await, Ok(b"1;2;".to_vec()));
        }
    });
}

/// Content larger than one store answer is loaded a chunk at a time, by an open (fence, then
/// the rest) and by a move's finish (the tail past the pre-copy): on 10 MB/s links a chunk
/// carries 50 ms of the link, 500 kB, and each record here carries 400 kB of bulk.
#[test]
fn server_node_loads_content_larger_than_one_chunk() {
    world_on(Net { bandwidth_bytes_per_s: 10_000_000, ..net() }, Knobs::default(), Disk::new(2), Arc::default(), move |rpc| async move {
        let append = |epoch: u64, seq: u64| Msg::Append { range: R, epoch: Epoch(epoch), key: b"b".to_vec(), id: OpId { client: 1, seq }, bytes: format!("{seq};").into_bytes().into(), bulk: 400_000 };
        assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
        for seq in 1..=3 {
            assert!(ok(&rpc.call(1, append(2, seq)).await));
        }
        assert_eq!(rpc.open(2, &row(2, 3), 1, vec![]).await, Ok(()), "an open over three chunks");
        assert_eq!(rpc.read(2, 3, "b").await, Ok(b"1;2;3;".to_vec()));
        // A move back to server-1: pre-copy (one record), then three more, then the finish's
        // fence and tail.
        let back = row(1, 4);
        assert!(matches!(rpc.call(1, Msg::PreCopy { row: Box::new(back.clone()), threshold_bytes: 0, max_rounds: 1, leader_epoch: 1 }).await, Msg::PreCopied { result: Ok(_) }));
        for seq in 4..=6 {
            assert!(ok(&rpc.call(2, append(3, seq)).await));
        }
        let Msg::PausedAt { result: Ok(digest) } = rpc.call(2, Msg::Pause { range: R, epoch: Epoch(3), leader_epoch: 1 }).await else { panic!() };
        assert_eq!(digest.records, 6);
        let finish = Msg::FinishMove { row: Box::new(back), digest, strategy: Strategy::PreCopy, lineage: vec![], leader_epoch: 1 };
        assert!(matches!(rpc.call(1, finish).await, Msg::MoveFinished { result: Ok(()) }));
        assert_eq!(rpc.read(1, 4, "b").await, Ok(b"1;2;3;4;5;6;".to_vec()));
    });
}

/// A transfer asks again for a chunk left unanswered, up to three times in a row: a pre-copy
/// whose first chunk's answer is held past the store timeout gets it on the second try; a
/// pre-copy from a store that does not answer at all gives up after three store timeouts (3 s),
/// with nothing copied. A pre-copy of an empty range completes its round.
#[test]
fn server_node_transfer_asks_again_for_an_unanswered_chunk_three_times() {
    world_with_faults(net().bandwidth_bytes_per_s, move |rpc, f| {
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            let pre_copy = |epoch: u64| Msg::PreCopy { row: Box::new(row(2, epoch)), threshold_bytes: 0, max_rounds: 3, leader_epoch: 1 };
            let Msg::PreCopied { result: Ok(p) } = rpc.call(2, pre_copy(3)).await else { panic!() };
            assert_eq!((p.rounds, p.bytes), (1, 0), "an empty range: a round of nothing");
            assert!(ok(&rpc.append(1, 2, "b", 1).await));
            f.hold_next(store_link(2, false), "stream_read", 1_500);
            let sent = now_us();
            let Msg::PreCopied { result: Ok(p) } = rpc.call(2, pre_copy(4)).await else { panic!() };
            assert_eq!((p.rounds, p.bytes), (1, 2), "copied on the second try");
            assert!(now_us() - sent >= 1_000_000);
            f.add(store_link(2, false), LinkFault::Hold);
            let sent = now_us();
            let Msg::PreCopied { result: Ok(p) } = rpc.call(2, pre_copy(5)).await else { panic!() };
            let took_ms = (now_us() - sent) / 1000;
            f.remove(store_link(2, false), LinkFault::Hold);
            assert_eq!(p.rounds, 0, "nothing copied");
            assert!((2_990..3_100).contains(&took_ms), "gave up after {took_ms} ms");
        }
    });
}

/// Under mutation `publish-before-fence` a range is read before its fence is raised; it is
/// still loaded, so the named mutation changes only the order (what its scenario catches).
#[test]
fn server_node_publish_before_fence_still_loads_the_stream() {
    let knobs = Knobs { mutation: Some(Mutation::PublishBeforeFence), ..Knobs::default() };
    let disk = Disk::new(2);
    let d = disk.clone();
    world(knobs, disk, Arc::default(), move |rpc| {
        let d = d.clone();
        async move {
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            assert!(ok(&rpc.append(1, 2, "b", 1).await));
            assert_eq!(rpc.open(2, &row(2, 3), 1, vec![]).await, Ok(()));
            assert_eq!(rpc.read(2, 3, "b").await, Ok(b"1;".to_vec()), "loaded");
            sleep_ms(100).await;
            assert!(d.read_durable().iter().any(|r| matches!(r, StoreRecord::Fence { stream: R, epoch: Epoch(3) })), "fenced afterwards");
        }
    });
}

/// A drained range reopened at a newer epoch over the content it holds loads only the stream
/// past that content (here a record a newer owner appended meanwhile) and goes on from the
/// stream's end: its next append is applied at the right offset and acknowledged, and the
/// activation names the two records it serves.
#[test]
fn server_node_reopen_over_kept_content_goes_on_from_the_streams_end() {
    use crate::event::{set_sink, Event};
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let sink = seen.clone();
    let previous = set_sink(Some(Box::new(move |e| sink.borrow_mut().push(e))));
    world(Knobs::default(), Disk::new(2), Arc::default(), move |rpc| async move {
        assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
        assert!(ok(&rpc.append(1, 2, "b", 1).await));
        assert!(matches!(rpc.call(1, Msg::Pause { range: R, epoch: Epoch(2), leader_epoch: 1 }).await, Msg::PausedAt { result: Ok(_) }));
        assert_eq!(rpc.open(2, &row(2, 3), 1, vec![]).await, Ok(()));
        assert!(ok(&rpc.append(2, 3, "b", 2).await));
        assert_eq!(rpc.open(1, &row(1, 4), 1, vec![]).await, Ok(()), "server-1 again, over the record it kept");
        assert_eq!(rpc.read(1, 4, "b").await, Ok(b"1;2;".to_vec()));
        assert!(ok(&rpc.append(1, 4, "b", 3).await), "applied at offset 2 and acknowledged");
        assert_eq!(rpc.read(1, 4, "b").await, Ok(b"1;2;3;".to_vec()));
    });
    set_sink(previous);
    let activated: Vec<(usize, usize)> = seen.borrow().iter().filter_map(|e| match e {
        Event::Activated { server: ServerId(1), epoch: Epoch(4), records, stream, .. } => Some((*records, *stream)),
        _ => None,
    }).collect();
    assert_eq!(activated, vec![(2, 2)]);
}

/// A load or pre-copy whose purpose is gone stops reading the stream at its next chunk, so it
/// does not take the store's link from the transfer that matters (loads of epochs already
/// dropped would otherwise keep reading the whole stream each, ahead of the load that
/// matters). The stream is 40 records of 400 kB on 10 MB/s links, a chunk each: one load takes
/// 2.17 s. An open reopened at a newer epoch 300 ms into its load answers within 200 ms (42 ms
/// measured; 2.77 s without the check), and the newer load takes under 2.5 s (2.17 s; 3.10 s
/// with the old load still reading); a pre-copy round whose copy a newer transfer's replaced
/// likewise (stops after 42 ms, not 2.75 s; the newer round 2.18 s, not 3.07 s); an open whose
/// server loses its session answers within 700 ms of the refused renewal (renewals every
/// 400 ms; 202 ms measured, 1.83 s without the check).
#[test]
fn server_node_abandoned_load_stops_reading_the_stream() {
    let authority = Arc::new(Authority::default());
    let a = authority.clone();
    world_on(Net { bandwidth_bytes_per_s: 10_000_000, ..net() }, Knobs::default(), Disk::new(2), authority, move |rpc| {
        let a = a.clone();
        async move {
            let append = |seq: u64| Msg::Append { range: R, epoch: Epoch(2), key: b"b".to_vec(), id: OpId { client: 1, seq }, bytes: format!("{seq};").into_bytes().into(), bulk: 400_000 };
            assert_eq!(rpc.open(1, &row(1, 2), 1, vec![]).await, Ok(()));
            for seq in 1..=40 {
                assert!(ok(&rpc.call(1, append(seq)).await));
            }
            // An open reopened at a newer epoch while it loads.
            let r = rpc.clone();
            let first = crate::seam::spawn(async move { (r.open(2, &row(2, 3), 1, vec![]).await, now_us()) });
            sleep_ms(300).await;
            let reopened = now_us();
            assert_eq!(rpc.open(2, &row(2, 4), 1, vec![]).await, Ok(()));
            let took_ms = (now_us() - reopened) / 1000;
            let (result, answered) = first.await.expect("joined");
            assert!(result.is_err(), "{result:?}");
            let stopped_ms = (answered - reopened) / 1000;
            assert!(stopped_ms < 200, "the load of e3 went on for {stopped_ms} ms");
            assert!(took_ms < 2_500, "the load of e4 took {took_ms} ms");
            // A pre-copy round whose copy a newer transfer of the range replaced.
            let pre_copy = |epoch: u64| Msg::PreCopy { row: Box::new(row(1, epoch)), threshold_bytes: 0, max_rounds: 1, leader_epoch: 1 };
            let r = rpc.clone();
            let first = crate::seam::spawn(async move { (r.call(1, pre_copy(5)).await, now_us()) });
            sleep_ms(300).await;
            let replaced = now_us();
            let Msg::PreCopied { result: Ok(p) } = rpc.call(1, pre_copy(6)).await else { panic!() };
            let took_ms = (now_us() - replaced) / 1000;
            assert_eq!(p.rounds, 1);
            let (answer, answered) = first.await.expect("joined");
            assert!(matches!(answer, Msg::PreCopied { result: Ok(p) } if p.rounds == 0), "{answer:?}");
            let stopped_ms = (answered - replaced) / 1000;

            assert!(stopped_ms < 200, "the pre-copy of e5 went on for {stopped_ms} ms");
            assert!(took_ms < 2_500, "the pre-copy of e6 took {took_ms} ms");
            // An open whose server loses its session while it loads.
            assert!(matches!(rpc.call(2, Msg::Release { range: R, epoch: Epoch(4), to: ServerId(1), new_epoch: Epoch(7), leader_epoch: 1 }).await, Msg::Released));
            let r = rpc.clone();
            let first = crate::seam::spawn(async move { (r.open(2, &row(2, 8), 1, vec![]).await, now_us()) });
            sleep_ms(300).await;
            let refused = now_us();
            a.refuse.store(true, Ordering::SeqCst);
            let (result, answered) = first.await.expect("joined");
            a.refuse.store(false, Ordering::SeqCst);
            assert!(result.is_err(), "{result:?}");
            let stopped_ms = (answered - refused) / 1000;
            assert!(stopped_ms < 700, "the load of e8 went on for {stopped_ms} ms after its session ended");
        }
    });
}

/// A repeated finish on a real node task, against a first attempt the test ends by hand.
mod repeated_finish {
    use crate::config::{server_addr, Knobs};
    use crate::ids::{Epoch, RangeId, ServerId};
    use crate::map::{RangeRow, RangeState, Strategy};
    use crate::msg::{FinishError, Msg, StreamDigest};
    use crate::seam::{now_us, sleep_ms, Rpc};
    use crate::server::flow::Input;
    use crate::server::node::Node;
    use crate::server::ServerCore;

    /// A move target asked to finish again while its first finish still fences and copies:
    /// the repeated ask waits for that attempt (within the patience the handler gives it) and
    /// answers with its outcome, `Ok` once the range serves, `NotNow` once it failed, instead
    /// of `InProgress` at once (the leader's repeated asks would all be spent within a few ms and
    /// the round would leave the move just before the copy was done). Returns, per case, the
    /// repeated ask's answer and when it came (ms after the ask).
    fn repeated_finish(first_succeeds: bool) -> (Result<(), FinishError>, u64) {
        let out = std::sync::Arc::new(std::sync::Mutex::new(None));
        let (o, waiting) = (out.clone(), out.clone());
        crate::testkit::block_on(async move {
            let h = madsim::runtime::Handle::current();
            h.create_node().name("server-1").ip(server_addr(ServerId(1)).ip()).init(move || {
                let o = o.clone();
                async move {
                    let net = crate::seam::Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() };
                    let rpc = Rpc::bind(server_addr(ServerId(1)), &net).await;
                    let knobs = Knobs::default();
                    let row = RangeRow { id: RangeId(1), start: vec![], end: None, owner: Some(ServerId(1)), owner_session: 7, epoch: Epoch(3), state: RangeState::Preparing, sources: vec![], sealed: 0, born_ms: 0 };
                    let node = Node::new(ServerCore::with_knobs(ServerId(1), knobs), rpc);
                    node.core.borrow_mut().session = Some(7);
                    // The first finish is running: the range is held, loading.
                    assert_eq!(node.core.borrow_mut().begin_finish(&row).map_err(|e| format!("{e:?}")), Ok(Some(vec![])));
                    let (n, r) = (node.clone(), row.clone());
                    crate::seam::spawn(async move {
                        sleep_ms(100).await;
                        let loaded = if first_succeeds { Ok(vec![]) } else { Err("the store did not answer".to_string()) };
                        let effects = {
                            let mut core = n.core.borrow_mut();
                            let _ = core.finish_open(&r, None, loaded);
                            core.take_effects()
                        };
                        n.perform(effects);
                    });
                    let start = now_us();
                    let msg = Msg::FinishMove { row: Box::new(row), digest: StreamDigest::of(&[]), strategy: Strategy::StopAndCopy, lineage: vec![], leader_epoch: 0 };
                    let step = node.handle(Input::Request { msg, link_backlog_us: 0 });
                    let answer = match node.drive(step).await {
                        Some(Msg::MoveFinished { result }) => result,
                        other => panic!("{other:?}"),
                    };
                    *o.lock().unwrap() = Some((answer, (now_us() - start) / 1000));
                }
            }).build();
            while waiting.lock().unwrap().is_none() {
                sleep_ms(10).await;
            }
        });
        let answer = out.lock().unwrap().take().expect("answered");
        answer
    }

    #[test]
    fn server_repeated_finish_waits_for_the_running_one() {
        let (answer, after_ms) = repeated_finish(true);
        assert_eq!(answer, Ok(()), "the copy finished within the patience: the repeated ask says so");
        assert!((100..150).contains(&after_ms), "answered when the first attempt ended, not at once: {after_ms} ms");
        let (answer, after_ms) = repeated_finish(false);
        assert!(matches!(answer, Err(FinishError::NotNow(_))), "the first attempt failed: {answer:?}");
        assert!((100..150).contains(&after_ms), "woken by the failure, not by the patience: {after_ms} ms");
    }
}
