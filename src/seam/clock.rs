//! The seam's clock (a driver: runs on madsim's clock): every node reads time only through
//! [`now_us`] and waits only through [`sleep_ms`], [`sleep_us`] and [`timeout_ms`], on a local
//! clock that may drift from simulated time ([`clocked`]); tasks it spawns through [`spawn`]
//! keep the node's rate.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

thread_local! {
    /// The clock rate of the node whose task is being polled (1.0 outside any node).
    pub(super) static CLOCK_RATE: Cell<f64> = const { Cell::new(1.0) };
}

/// A future that runs with its node's clock rate: every [`now_us`], [`sleep_ms`] and timeout
/// inside it reads the node's local, drifting clock.
pub(super) struct Clocked<F> {
    pub(super) rate: f64,
    pub(super) inner: Pin<Box<F>>,
}

impl<F: Future> Future for Clocked<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let prev = CLOCK_RATE.with(|r| r.replace(self.rate));
        let out = self.inner.as_mut().poll(cx);
        CLOCK_RATE.with(|r| r.set(prev));
        out
    }
}

/// Run `future` (a node's task) on a local clock that runs at `rate` times simulated time
/// (`1.0 + drift_ppm / 1e6`). Tasks it spawns through [`spawn`] inherit the rate.
pub fn clocked<F: Future>(rate: f64, future: F) -> impl Future<Output = F::Output> {
    assert!(rate > 0.5 && rate < 2.0, "clock rate {rate} out of bounds");
    Clocked { rate, inner: Box::pin(future) }
}

/// Spawn a task of the current node; it keeps the node's clock rate.
pub fn spawn<F: Future + 'static>(future: F) -> madsim::task::JoinHandle<F::Output> {
    let rate = CLOCK_RATE.with(|r| r.get());
    madsim::task::spawn_local(Clocked { rate, inner: Box::pin(future) })
}

fn rate() -> f64 {
    CLOCK_RATE.with(|r| r.get())
}

/// Microseconds since the run started, by the current node's local clock (simulated time
/// scaled by its drift; exact simulated time for a node without drift).
pub fn now_us() -> u64 {
    scaled_us(madsim::time::TimeHandle::current_elapsed())
}

/// [`now_us`] read from `time`, the current runtime's clock (a node's seam keeps its own handle:
/// looking the handle up costs a thread-local access and two reference counts per read).
pub(super) fn local_us(time: &madsim::time::TimeHandle) -> u64 {
    scaled_us(time.elapsed())
}

/// `elapsed` simulated time as µs of the current node's local clock.
fn scaled_us(elapsed: Duration) -> u64 {
    let global = elapsed.as_micros() as u64;
    let r = rate();
    if r == 1.0 { global } else { (global as f64 * r) as u64 }
}

/// Milliseconds since the run started, by the current node's local clock.
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// `local_us` of the current node's clock in simulated time.
pub(super) fn to_global(local_us: u64) -> Duration {
    let r = rate();
    Duration::from_micros(if r == 1.0 { local_us } else { (local_us as f64 / r) as u64 })
}

/// Sleep for `ms` milliseconds of the node's local clock (madsim rounds anything below 1 ms up
/// to 1 ms). Its timer is registered once, however often the sleep is polled (see
/// `OnceSleep`), so it can be raced against another future in a `select`.
pub async fn sleep_ms(ms: u64) {
    OnceSleep::new(madsim::time::sleep(to_global(ms * 1000))).await;
}

/// Sleep for `us` microseconds of the node's local clock (at least 1 ms, as madsim rounds up).
/// Its timer is registered once, however often the sleep is polled (see `OnceSleep`).
pub async fn sleep_us(us: u64) {
    OnceSleep::new(madsim::time::sleep(to_global(us))).await;
}

/// Run `future` for at most `ms` milliseconds of the node's local clock; `None` on timeout.
///
/// The deadline's timer is registered once, however often `future` wakes the task (madsim's
/// own `timeout` registers another timer every time its sleep is polled again).
pub async fn timeout_ms<F: Future>(ms: u64, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut deadline = std::pin::pin!(OnceSleep::new(madsim::time::sleep(to_global(ms * 1000))));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        deadline.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// Whether a timer fired, and whom to wake when it does.
#[derive(Default)]
struct Alarm {
    fired: std::sync::atomic::AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Wake for Alarm {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(w) = self.waker.lock().expect("alarm").take() {
            w.wake();
        }
    }
}

/// A madsim sleep that registers its timer once: madsim's `Sleep` adds a timer to the heap on
/// every pending poll, so a sleep raced against another future (a timeout) registers one
/// for every wake of that future. This polls the inner sleep once with a waker of its own,
/// and again only after that timer fired.
///
/// The sleep is held in place, not boxed: madsim's `Sleep` (a time handle and a deadline) is
/// `Unpin` and small, and a box per sleep was one allocation of every timeout.
struct OnceSleep {
    sleep: madsim::time::Sleep,
    alarm: Option<Arc<Alarm>>,
}

impl OnceSleep {
    fn new(sleep: madsim::time::Sleep) -> Self {
        OnceSleep { sleep, alarm: None }
    }
}

impl Future for OnceSleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let alarm = match &self.alarm {
            Some(a) if !a.fired.load(std::sync::atomic::Ordering::Relaxed) => {
                *a.waker.lock().expect("alarm") = Some(cx.waker().clone());
                return Poll::Pending;
            }
            Some(_) => None,
            None => {
                let a = Arc::new(Alarm::default());
                *a.waker.lock().expect("alarm") = Some(cx.waker().clone());
                Some(a)
            }
        };
        let waker = match &alarm {
            Some(a) => Waker::from(a.clone()),
            None => cx.waker().clone(),
        };
        let out = Pin::new(&mut self.sleep).poll(&mut std::task::Context::from_waker(&waker));
        if alarm.is_some() {
            self.alarm = alarm;
        }
        out
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    /// The fifth madsim patch (PATCHES.md): [`now_us`] reads the runtime's clock in place
    /// (`TimeHandle::current_elapsed`): the same reading as through a cloned handle, on a node
    /// without drift and on one whose clock runs 1.5 times fast.
    #[test]
    fn now_us_reads_the_runtime_clock_in_place() {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        rt.block_on(async {
            for ms in [0u64, 3, 1_501] {
                madsim::time::sleep(Duration::from_millis(ms)).await;
                let handle = madsim::time::TimeHandle::current();
                let us = handle.elapsed().as_micros() as u64;
                assert_eq!(madsim::time::TimeHandle::current_elapsed(), handle.elapsed());
                assert_eq!(now_us(), us);
                assert_eq!(clocked(1.5, async { now_us() }).await, us * 3 / 2, "a fast clock at {us} us");
            }
        });
    }}
