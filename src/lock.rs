//! The coordination authority node (`lock-1`): the driver around [`AuthorityCore`]. It reads
//! its disk on start, then for each request asks the core what to do, takes the writers' lock
//! when the core needs it, makes the records the core returns durable before applying them, and
//! answers. The rules themselves (leases, sessions, compare-and-set) are in
//! [`crate::authority`], tested without a runtime.

pub use crate::authority::LockRecord;
use crate::authority::{Action, AuthorityCore};
use crate::config::Knobs;
use crate::event::emit;
use crate::msg::Msg;
use crate::seam::{now_us, Disk, Net, Rpc};
use std::cell::RefCell;
use std::rc::Rc;

/// Run the authority node forever. `disk` survives restarts of the node (the harness owns it);
/// `net` is its network seam's bandwidth and link faults.
pub async fn run(knobs: Knobs, disk: Disk<LockRecord>, net: Net) {
    let (core, events) = AuthorityCore::recover(&knobs, &disk.read_all(), now_us());
    for e in events {
        emit(e);
    }
    let core = Rc::new(RefCell::new(core));
    // Serializes everything that writes the disk, so a reply never reveals undurable state.
    let durable = Rc::new(tokio::sync::Mutex::new(()));
    let rpc = Rpc::bind(crate::config::lock_addr(), &net).await;
    rpc.serve(move |msg, _from| {
        let (core, disk, durable) = (core.clone(), disk.clone(), durable.clone());
        async move { Some(handle(&core, &disk, &durable, msg).await) }
    });
    std::future::pending::<()>().await;
}

/// Perform the core's actions for `msg` until it answers.
async fn handle(core: &RefCell<AuthorityCore>, disk: &Disk<LockRecord>, durable: &tokio::sync::Mutex<()>, msg: Msg) -> Msg {
    let mut action = core.borrow_mut().handle(&msg, now_us(), false);
    let _writer = if matches!(action, Action::NeedLock) {
        let guard = durable.lock().await;
        action = core.borrow_mut().handle(&msg, now_us(), true);
        Some(guard)
    } else {
        None
    };
    loop {
        match action {
            Action::NeedLock => unreachable!("the core asks for the lock only once"),
            Action::Reply { msg, events } => {
                events.into_iter().for_each(emit);
                return msg;
            }
            Action::Persist { records, after, events } => {
                events.into_iter().for_each(emit);
                for r in records {
                    disk.append(r);
                }
                disk.sync().await;
                action = core.borrow_mut().apply(after, now_us());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The node task on a madsim runtime: every answer comes after the records it depends on
    //! are durable, and a restarted node recovers from them.
    use super::*;
    use crate::config::manager_addr;
    use crate::ids::ServerId;
    use crate::map::MapOp;
    use crate::seam::sleep_ms;
    use crate::testkit::block_on;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn net() -> Net {
        Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() }
    }

    #[test]
    fn lock_node_answers_only_what_is_durable() {
        let disk: Disk<LockRecord> = Disk::new(5);
        let done = Arc::new(AtomicBool::new(false));
        let (d, flag) = (disk.clone(), done.clone());
        block_on(async move {
            let h = madsim::runtime::Handle::current();
            let d2 = d.clone();
            h.create_node().name("lock-1").ip(crate::config::lock_addr().ip()).init(move || run(Knobs::default(), d2.clone(), net())).build();
            h.create_node().name("manager-1").ip(manager_addr(1).ip()).init(move || {
                let (d, flag) = (d.clone(), flag.clone());
                async move {
                    let rpc = Rpc::bind(manager_addr(1), &net()).await;
                    let lock = crate::config::lock_addr();
                    let Ok(Msg::Registered { session }) = rpc.call(lock, Msg::RegisterServer { server: ServerId(1), incarnation: 1 }, 1_000).await else { panic!() };
                    assert!(matches!(d.read_durable().last(), Some(LockRecord::Session { session: s, .. }) if *s == session), "durable before it is answered");
                    let Ok(Msg::LeaderLease { epoch: Some(term), .. }) = rpc.call(lock, Msg::AcquireLeader { candidate: 1 }, 1_000).await else { panic!() };
                    assert!(matches!(d.read_durable().last(), Some(LockRecord::LeaderTerm { epoch, .. }) if *epoch == term));
                    let cas = Msg::CasMap { expected_version: 0, leader_epoch: term, candidate: 1, ops: vec![MapOp::Bootstrap { split_points: vec![] }] };
                    let Ok(Msg::CasResult { error: None, map }) = rpc.call(lock, cas, 1_000).await else { panic!() };
                    assert!(matches!(d.read_durable().last(), Some(LockRecord::Map { map: m, .. }) if m.version == map.version));
                    let Ok(Msg::Map { map: read }) = rpc.call(lock, Msg::GetMap, 1_000).await else { panic!() };
                    assert_eq!(read.version, 1);
                    // The session lapses: the state request persists the expiry first.
                    sleep_ms(Knobs::default().lease_ms + 100).await;
                    let Ok(Msg::State { sessions, .. }) = rpc.call(lock, Msg::GetState, 1_000).await else { panic!() };
                    assert!(!sessions[0].live);
                    assert!(matches!(d.read_durable().last(), Some(LockRecord::SessionExpired { .. })));
                    flag.store(true, Ordering::SeqCst);
                }
            }).build();
            while !done.load(Ordering::SeqCst) {
                sleep_ms(100).await;
            }
        });
        let (core, _) = AuthorityCore::recover(&Knobs::default(), &disk.read_durable(), 0);
        assert_eq!(core.map().version, 1, "a restart finds the committed map");
    }
}

