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
