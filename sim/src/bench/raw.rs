//! madsim alone, for the `bench` subcommand (issue 13): the raw request/response loop that
//! partmap's costs are measured against, and the thread CPU clock that measures it.
//!
//! This file uses nothing but `madsim`, `std` and `libc`, so that two builds run the very same
//! loop: `partmap-sim bench` links it against the madsim the project runs on (the crates.io
//! release with the patches of `PATCHES.md`), and `bench/raw-madsim` (a crate of its own, its
//! own process) includes this file by path and links it against madsim 0.2.34 as published.
//! The baseline ("madsim alone costs about 1 us per request/response message") was
//! measured on the published release; the patches make madsim itself cheaper, so both floors
//! are printed.

use madsim::net::Endpoint;
use madsim::runtime::{Handle, Runtime};
use std::net::SocketAddr;

pub use crate::cpu::thread_cpu_ns;

/// Messages moved and the CPU time it took.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cost {
    /// Messages sent.
    pub messages: u64,
    /// CPU time, nanoseconds.
    pub cpu_ns: u64,
}

impl Cost {
    /// CPU microseconds per message.
    pub fn us_per_message(&self) -> f64 {
        self.cpu_ns as f64 / 1000.0 / self.messages.max(1) as f64
    }
}

/// The (server, client) addresses of node pair `p` (0-based) in the bench's exchanges.
pub fn pair_addrs(p: u64) -> (SocketAddr, SocketAddr) {
    let at = |net: u8| format!("10.{net}.0.{}:1", p + 1).parse().expect("address");
    (at(1), at(2))
}

/// madsim alone: `runs` runtimes (seeds 0..runs), each with `pairs` client/server node pairs
/// doing `round_trips` request/response exchanges of a boxed integer over `send_to_raw` /
/// `recv_from_raw`, the calls the seam uses. Every message counts (a round trip is two).
pub fn raw_madsim(runs: u64, pairs: u64, round_trips: u64) -> Cost {
    let started = thread_cpu_ns();
    for seed in 0..runs {
        let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
        rt.block_on(async move {
            let h = Handle::current();
            let mut joins = Vec::new();
            for p in 0..pairs {
                let (server, client) = pair_addrs(p);
                h.create_node()
                    .ip(server.ip())
                    .init(move || async move {
                        let ep = Endpoint::bind(server).await.expect("bind");
                        loop {
                            let (msg, from) = ep.recv_from_raw(1).await.expect("recv");
                            ep.send_to_raw(from, 2, msg).await.expect("send");
                        }
                    })
                    .build();
                let node = h.create_node().ip(client.ip()).build();
                joins.push(node.spawn(async move {
                    madsim::time::sleep(std::time::Duration::from_millis(10)).await;
                    let ep = Endpoint::bind(client).await.expect("bind");
                    for i in 0..round_trips {
                        ep.send_to_raw(server, 1, Box::new(i)).await.expect("send");
                        ep.recv_from_raw(2).await.expect("recv");
                    }
                }));
            }
            for j in joins {
                j.await.expect("client task");
            }
        });
    }
    Cost { messages: runs * pairs * round_trips * 2, cpu_ns: thread_cpu_ns() - started }
}
