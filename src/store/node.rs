//! Driver (runtime: network, disk): the store's node task. It holds a [`StoreCore`] and
//! performs the steps [`StoreCore::handle`] returns, and nothing else: it appends the records
//! to the disk, emits the events in order before any await, syncs the disk when asked, and
//! sends the reply. Every rule (fencing, seal, append acceptance) is in the core.

use super::core::{chunk_budget, Input, Next, Step, StoreCore, StoreRecord};
use crate::config::Knobs;
use crate::event::emit;
use crate::msg::Msg;
use crate::seam::{Disk, Rpc};
use std::cell::RefCell;
use std::rc::Rc;

/// Run the store node forever. `disk` survives restarts (the harness owns it).
pub async fn run(knobs: Knobs, disk: Disk<StoreRecord>, net: crate::seam::Net) {
    let (core, events) = StoreCore::recover(&disk.read_all(), knobs.store_mutation());
    events.into_iter().for_each(emit);
    let core = Rc::new(RefCell::new(core));
    let rpc = Rpc::bind(crate::config::store_addr(), &net).await;
    let link = rpc.clone();
    rpc.serve(move |msg, _from| {
        let (core, disk) = (core.clone(), disk.clone());
        // Each read answer is one chunk, sized when the request arrives so that it leaves the
        // link within half the store timeout after what is already queued.
        let budget = chunk_budget(link.bandwidth_bytes_per_s(), knobs.store_timeout_ms, link.link_backlog_us());
        async move { Some(answer(&core, &disk, msg, budget).await) }
    });
    std::future::pending::<()>().await;
}

/// Answer one request: feed it to the core and perform its steps.
pub(super) async fn answer(core: &RefCell<StoreCore>, disk: &Disk<StoreRecord>, msg: Msg, budget: u64) -> Msg {
    let mut step = core.borrow_mut().handle(Input::Request { msg, budget });
    loop {
        let Step { writes, events, next } = step;
        writes.into_iter().for_each(|r| disk.append(r));
        events.into_iter().for_each(emit);
        match next {
            Next::Reply(msg) => return msg,
            Next::Sync(then) => {
                disk.sync().await;
                step = core.borrow_mut().handle(Input::Synced(then));
            }
        }
    }
}
