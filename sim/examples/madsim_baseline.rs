//! Baseline: how fast madsim alone moves small request/response messages on this machine, with
//! no partmap code in the way. `cargo run --release -p partmap-sim --example madsim_baseline`.
//! The sweep's cost per seed is judged against this.

use madsim::net::Endpoint;
use madsim::runtime::{Handle, Runtime};
use std::net::SocketAddr;
use std::time::Instant;

fn main() {
    let pairs: u64 = 4;
    let round_trips: u64 = 5_000;
    let started = Instant::now();
    let seeds = 5;
    for seed in 0..seeds {
        let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
        rt.block_on(async move {
            let h = Handle::current();
            let mut joins = Vec::new();
            for p in 0..pairs {
                let server: SocketAddr = format!("10.1.0.{}:1", p + 1).parse().unwrap();
                let client: SocketAddr = format!("10.2.0.{}:1", p + 1).parse().unwrap();
                h.create_node().ip(server.ip()).init(move || async move {
                    let ep = Endpoint::bind(server).await.unwrap();
                    loop {
                        let (msg, from) = ep.recv_from_raw(1).await.unwrap();
                        ep.send_to_raw(from, 2, msg).await.unwrap();
                    }
                }).build();
                let node = h.create_node().ip(client.ip()).build();
                joins.push(node.spawn(async move {
                    madsim::time::sleep(std::time::Duration::from_millis(10)).await;
                    let ep = Endpoint::bind(client).await.unwrap();
                    for i in 0..round_trips {
                        ep.send_to_raw(server, 1, Box::new(i)).await.unwrap();
                        ep.recv_from_raw(2).await.unwrap();
                    }
                }));
            }
            for j in joins {
                j.await.unwrap();
            }
        });
    }
    let msgs = seeds * pairs * round_trips * 2;
    let s = started.elapsed().as_secs_f64();
    println!("madsim raw: {msgs} messages in {s:.2}s = {:.0} messages/s", msgs as f64 / s);
}
