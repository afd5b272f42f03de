//! Utilities for tracking time.

pub use tokio::time::{error, sleep, sleep_until, timeout, Duration, Instant};
