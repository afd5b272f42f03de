//! The event stream: a tracing layer that collects the system's structured events (target
//! `partmap`) and the harness's own (target `partmap_sim`) into one ordered list, with simulated
//! timestamps. The checkers, the trace hash and the readable trace all read this one list.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// One field value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// Unsigned number.
    U(u64),
    /// Signed number.
    I(i64),
    /// Float.
    F(f64),
    /// Boolean.
    B(bool),
    /// Text.
    S(String),
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::U(v) => write!(f, "{v}"),
            Val::I(v) => write!(f, "{v}"),
            Val::F(v) => write!(f, "{v}"),
            Val::B(v) => write!(f, "{v}"),
            Val::S(v) => write!(f, "{v}"),
        }
    }
}

/// One collected event.
#[derive(Clone, Debug)]
pub struct Event {
    /// Simulated time since the run started, microseconds.
    pub t_us: u64,
    /// The `kind` field (`effect`, `admit`, `map_row`, `invoke`, ...).
    pub kind: String,
    /// The other fields, in emission order.
    pub fields: Vec<(&'static str, Val)>,
}

impl Event {
    /// Field `name` as a number; 0 if absent or not a number.
    pub fn u(&self, name: &str) -> u64 {
        match self.get(name) {
            Some(Val::U(v)) => *v,
            Some(Val::I(v)) => *v as u64,
            _ => 0,
        }
    }

    /// Field `name` as text; "" if absent or not text.
    pub fn s(&self, name: &str) -> &str {
        match self.get(name) {
            Some(Val::S(v)) => v,
            _ => "",
        }
    }

    /// Field `name`.
    pub fn get(&self, name: &str) -> Option<&Val> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// `[   12.345678s] kind a=1 b=x`
    pub fn render(&self) -> String {
        let mut s = format!("[{:>5}.{:06}s] {}", self.t_us / 1_000_000, self.t_us % 1_000_000, self.kind);
        for (n, v) in &self.fields {
            let _ = write!(s, " {n}={v}");
        }
        s
    }
}

/// The shared, ordered event list of one run.
pub type EventLog = Arc<Mutex<Vec<Event>>>;

/// Simulated microseconds since the run started (0 outside a runtime).
pub fn sim_now_us() -> u64 {
    madsim::time::TimeHandle::try_current().map_or(0, |h| h.elapsed().as_micros() as u64)
}

fn ours(meta: &Metadata<'_>) -> bool {
    meta.target().starts_with("partmap")
}

/// The tracing layer that fills an [`EventLog`], and with `print` also streams each event as it
/// happens (the `--trace` output).
pub struct Collector {
    /// Where events go.
    pub log: EventLog,
    /// Print every event to stdout with its simulated time.
    pub print: bool,
}

struct Visitor {
    kind: String,
    fields: Vec<(&'static str, Val)>,
}

impl Visit for Visitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields.push((field.name(), Val::U(value)));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fields.push((field.name(), Val::I(value)));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.fields.push((field.name(), Val::F(value)));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fields.push((field.name(), Val::B(value)));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "kind" {
            self.kind = value.to_string();
        } else {
            self.fields.push((field.name(), Val::S(value.to_string())));
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.fields.push((field.name(), Val::S(format!("{value:?}"))));
    }
}

impl<S: Subscriber> Layer<S> for Collector {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if ours(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        ours(meta)
    }

    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if !ours(event.metadata()) {
            return;
        }
        let mut v = Visitor { kind: String::new(), fields: Vec::with_capacity(8) };
        event.record(&mut v);
        let ev = Event { t_us: sim_now_us(), kind: v.kind, fields: v.fields };
        if self.print {
            println!("{}", ev.render());
        }
        self.log.lock().expect("event log").push(ev);
    }
}

/// The hash of an empty trace.
pub const HASH_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Fold one event (time, kind, fields) into a running hash. Word-at-a-time multiply-rotate
/// (FxHash's step): stable across platforms and builds, and cheap enough for every event.
pub fn hash_event(mut h: u64, ev: &Event) -> u64 {
    let mut word = |w: u64| h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    let bytes = |b: &[u8], word: &mut dyn FnMut(u64)| {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        word(u64::from_le_bytes(last) ^ ((b.len() as u64) << 56));
    };
    word(ev.t_us);
    bytes(ev.kind.as_bytes(), &mut word);
    for (n, v) in &ev.fields {
        bytes(n.as_bytes(), &mut word);
        match v {
            Val::U(x) => word(*x),
            Val::I(x) => word(*x as u64),
            Val::F(x) => word(x.to_bits()),
            Val::B(x) => word(*x as u64),
            Val::S(x) => bytes(x.as_bytes(), &mut word),
        }
    }
    h
}

/// The trace hash of a whole event list: equal for equal runs, and different as soon as one
/// event, value or timestamp differs.
pub fn trace_hash(events: &[Event]) -> u64 {
    events.iter().fold(HASH_START, hash_event)
}
