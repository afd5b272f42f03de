//! Many seeds of one scenario, run in parallel (one madsim runtime per seed per worker thread),
//! with a progress bar, a JSON summary ([`crate::sweep::summary`]) and optionally a JUnit report, the
//! log of every failing seed, and the exact command that reproduces each failure.
//!
//! A sweep runs a [`SeedSelection`] (a range or a seeds file, optionally one shard of it) in
//! order. Three things stop it early, and each still writes the summary of what completed:
//! - a time budget: no seed starts once it is spent (the wall clock is read between seeds,
//!   never inside a run), so the seeds run are a prefix of the selection;
//! - a first SIGINT or SIGTERM ([`Stop`]): no seed starts after it, and the running ones
//!   finish; the summary is marked interrupted;
//! - a second signal: the running seeds are abandoned (listed in the summary, no record).
//!
//! Reports are checked writable before any seed runs.

pub mod junit;
pub mod seeds;
pub mod summary;

use crate::run::{run_seed, RunOptions};
use crate::sweep::seeds::SeedSelection;
use crate::sweep::summary::{Build, Measured, SeedRecord, Selection, Stopped, Summary};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request to stop a sweep, set by a signal handler ([`Stop::on_signals`]) or by a caller
/// ([`Stop::request`]). The first request stops starting seeds; the second abandons the running
/// ones.
#[derive(Debug, Default)]
pub struct Stop {
    /// The first signal's number (0: none yet).
    signal: AtomicUsize,
    /// Requests so far.
    requests: AtomicUsize,
}

impl Stop {
    /// No request yet.
    pub fn new() -> Arc<Stop> {
        Arc::new(Stop::default())
    }

    /// Ask the sweep to stop, as signal `signal` (a `libc::SIG*` number) would. Only atomic
    /// stores: safe inside a signal handler.
    pub fn request(&self, signal: i32) {
        let _ = self.signal.compare_exchange(0, signal as usize, Ordering::SeqCst, Ordering::SeqCst);
        self.requests.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether a stop was requested (start no more seeds).
    pub fn stopping(&self) -> bool {
        self.requests.load(Ordering::SeqCst) >= 1
    }

    /// Whether a second stop was requested (abandon the running seeds).
    pub fn abandoning(&self) -> bool {
        self.requests.load(Ordering::SeqCst) >= 2
    }

    /// The first signal's name (`SIGINT`, `SIGTERM`, or `signal N`), if a stop was requested.
    pub fn signal_name(&self) -> Option<String> {
        match self.signal.load(Ordering::SeqCst) as i32 {
            0 => None,
            libc::SIGINT => Some("SIGINT".into()),
            libc::SIGTERM => Some("SIGTERM".into()),
            n => Some(format!("signal {n}")),
        }
    }

    /// Route SIGINT and SIGTERM to [`Stop::request`] instead of ending the process, until the
    /// returned guard is dropped.
    ///
    /// Errors: the operating system refused to install a handler.
    pub fn on_signals(self: &Arc<Self>) -> Result<SignalGuard, String> {
        let mut ids = Vec::new();
        for signal in [libc::SIGINT, libc::SIGTERM] {
            let stop = Arc::clone(self);
            // SAFETY: the handler only performs atomic operations (Stop::request), which are
            // async-signal-safe; it allocates nothing and takes no lock.
            let id = unsafe { signal_hook::low_level::register(signal, move || stop.request(signal)) }.map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
            ids.push(id);
        }
        Ok(SignalGuard { ids })
    }
}

/// Keeps the signal handlers of [`Stop::on_signals`] installed; dropping it restores the
/// previous handling.
#[derive(Debug)]
pub struct SignalGuard {
    ids: Vec<signal_hook::SigId>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Worker threads, each running whole seeds (at least 1).
    pub jobs: usize,
    /// Where the JSON summary (`sweep-<name>.json`) and failing seeds' logs (`failing/`) go.
    pub report_dir: PathBuf,
    /// Where to write a JUnit report, if anywhere.
    pub junit: Option<PathBuf>,
    /// Start no seed after this much wall-clock time.
    pub time_budget: Option<Duration>,
    /// Show progress on stderr: a bar on a terminal, else a line every tenth of the seeds (or
    /// of the time budget).
    pub progress: bool,
}

impl SweepConfig {
    /// `jobs` workers, reports under `report_dir`, no JUnit, no budget, no progress.
    pub fn new(jobs: usize, report_dir: &Path) -> SweepConfig {
        SweepConfig { jobs, report_dir: report_dir.to_path_buf(), junit: None, time_budget: None, progress: false }
    }
}

pub use crate::run::scenario_stem;

/// The name failing logs of this sweep go under: the scenario's stem, plus the mutation if any.
pub fn report_stem(base: &RunOptions) -> String {
    let stem = scenario_stem(&base.scenario_label);
    match base.mutation {
        Some(m) => format!("{stem}-{}", crate::run::mutation_names(m, base.also_mutation).replace(',', "+")),
        None => stem,
    }
}

/// The file stem of one seed's report (a timeline): `<scenario>[-<mutation>]-seed-N`, or just
/// the scenario's stem when it already ends with `-<mutation>-seed-N` (a kept shrunk scenario,
/// `cut-off-owner-server-ignores-lease-expiry-seed-0.json`, run with its own mutation and seed;
/// newcomer pass: the name repeated both).
pub fn seed_stem(base: &RunOptions, seed: u64) -> String {
    let scenario = scenario_stem(&base.scenario_label);
    if base.mutation.is_some_and(|m| scenario.ends_with(&format!("-{}-seed-{seed}", m.name()))) {
        scenario
    } else {
        format!("{}-seed-{seed}", report_stem(base))
    }
}

/// Where the JSON summary of a sweep of `base` over `seeds` goes:
/// `report_dir/sweep-<scenario>[-<mutation>][-shard-K-of-N].json`.
pub fn summary_path(base: &RunOptions, seeds: &SeedSelection, report_dir: &Path) -> PathBuf {
    let shard = seeds.shard.map_or(String::new(), |s| format!("-shard-{}-of-{}", s.index, s.count));
    report_dir.join(format!("sweep-{}{shard}.json", report_stem(base)))
}

/// Refuse a `--report-dir` that names an existing file, a mistake of usage caught before
/// anything runs (the CLI exits 64): `--report-dir <path>: is a file, not a folder; ...`. A
/// missing folder is fine (it is created when reports are written); a folder that cannot be
/// written is found by [`check_writable`].
pub fn check_report_dir(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(format!(
            "--report-dir {}: is a file, not a folder; give a folder (created if missing), e.g. reports",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// Check that every report of the sweep can be written: the report folder and its `failing/`
/// (created if missing) and the JUnit file's folder, by creating and removing a file in each.
///
/// Errors: `--report-dir <dir>: ...` or `--junit <file>: ...` with the operating system's
/// reason.
pub fn check_writable(cfg: &SweepConfig) -> Result<(), String> {
    check_report_dir(&cfg.report_dir)?;
    let probe = |dir: &Path, flag: &str, shown: &Path| -> Result<(), String> {
        let fail = |e: std::io::Error| format!("{flag} {}: cannot write there: {e}", shown.display());
        std::fs::create_dir_all(dir).map_err(fail)?;
        let file = dir.join(format!(".partmap-write-check-{}", std::process::id()));
        std::fs::write(&file, b"").map_err(fail)?;
        std::fs::remove_file(&file).map_err(fail)
    };
    probe(&cfg.report_dir, "--report-dir", &cfg.report_dir)?;
    probe(&cfg.report_dir.join("failing"), "--report-dir", &cfg.report_dir.join("failing"))?;
    if let Some(junit) = &cfg.junit {
        check_not_folder(junit, "--junit", "reports/junit.xml")?;
        check_file_writable(junit, "--junit")?;
    }
    Ok(())
}

/// Refuse a report file path that names a folder, a mistake of usage caught before any work
/// (the CLI exits 64): `<flag> <path>: is a folder; give a file name, e.g. <example>`.
pub fn check_not_folder(path: &Path, flag: &str, example: &str) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{flag} {}: is a folder; give a file name, e.g. {example}", path.display()));
    }
    Ok(())
}

/// Check that a report file can be written at `path` before any work: its folder (created if
/// missing) takes a file (one is created and removed there). Call [`check_not_folder`] first.
///
/// Errors: `<flag> <path>: cannot write there: <the operating system's reason>`.
pub fn check_file_writable(path: &Path, flag: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{flag} {}: cannot write there: {e}", path.display());
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let file = dir.join(format!(".partmap-write-check-{}", std::process::id()));
    std::fs::write(&file, b"").map_err(fail)?;
    std::fs::remove_file(&file).map_err(fail)
}

/// Write a failing seed's log: the outcome, each violation, the repro command and the path of
/// its timeline first, then its header (seed and knobs), then every event, then the violations
/// again (at the end of a file of megabytes, where a reader of its tail looks).
fn write_failing_log(path: &Path, report: &crate::run::RunReport, record: &SeedRecord, expected: crate::scenario::ExpectedOutcome, timeline: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let verdict = |f: &mut std::io::BufWriter<std::fs::File>| -> std::io::Result<()> {
        writeln!(f, "outcome={:?} expected={expected:?}", record.outcome)?;
        for (p, e) in record.violations() {
            writeln!(f, "VIOLATION {p}: {e}")?;
        }
        writeln!(f, "repro: {}", record.repro)?;
        writeln!(f, "timeline: {}", timeline.display())
    };
    verdict(&mut f)?;
    for line in &report.header {
        writeln!(f, "{line}")?;
    }
    writeln!(f, "--- events ({}) ---", report.events.len())?;
    for ev in &report.events {
        writeln!(f, "{}", ev.render())?;
    }
    writeln!(f, "--- end of events ---")?;
    verdict(&mut f)?;
    f.flush()
}

/// Where one finished seed's record is.
enum Spooled {
    /// In the spool file: byte offset and length of its JSON line (without the newline).
    Disk(u64, usize),
    /// In memory: the spool could not be written (the error is in the report errors).
    Memory(Box<SeedRecord>),
}

/// The records of a sweep's finished seeds (issue 13: a sweep's memory must not grow with its
/// seeds). Each record is appended as one JSON line to a temporary file in the report folder
/// as its seed finishes; memory keeps where each is, and the records of seeds that did not end
/// as expected (the summary lists those). The summary is then built by reading the records back
/// in seed order ([`finish_spool`]).
pub struct Spool {
    /// The temporary file, removed once the summary is written.
    pub path: PathBuf,
    /// Open for appending (`None` once a write failed, or when closed).
    file: Option<std::io::BufWriter<std::fs::File>>,
    /// Bytes written so far.
    end: u64,
    /// Per finished seed: the seed, whether it ended as expected, and where its record is.
    index: Vec<(u64, bool, Spooled)>,
    /// The records of the seeds that did not end as expected, in finishing order.
    failing: Vec<SeedRecord>,
    /// The first error writing the spool, if any.
    error: Option<String>,
    /// Whether the sweep has taken the records: a seed abandoned on a second signal that still
    /// finishes is dropped, as it was before.
    closed: bool,
}

impl Spool {
    /// An empty spool writing to `path` (created or truncated).
    ///
    /// Errors: `<path>: <io error>`.
    pub fn create(path: PathBuf) -> Result<Spool, String> {
        let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Spool { path, file: Some(std::io::BufWriter::new(file)), end: 0, index: Vec::new(), failing: Vec::new(), error: None, closed: false })
    }

    /// A spool that takes nothing more (what the workers see once the sweep took theirs).
    fn closed(path: PathBuf) -> Spool {
        Spool { path, file: None, end: 0, index: Vec::new(), failing: Vec::new(), error: None, closed: true }
    }

    /// Keep `record`: on disk, or in memory if the spool cannot be written.
    pub fn push(&mut self, record: SeedRecord) {
        use std::io::Write as _;
        if self.closed {
            return;
        }
        let at = match self.file.as_mut() {
            None => Spooled::Memory(Box::new(record.clone())),
            Some(file) => {
                let line = serde_json::to_string(&record).expect("a record serializes");
                match file.write_all(line.as_bytes()).and_then(|_| file.write_all(b"\n")) {
                    Ok(()) => {
                        let at = Spooled::Disk(self.end, line.len());
                        self.end += line.len() as u64 + 1;
                        at
                    }
                    Err(e) => {
                        self.error = Some(format!("{}: {e} (records kept in memory instead)", self.path.display()));
                        // Part of the line may be written: nothing more goes to the file.
                        self.file = None;
                        Spooled::Memory(Box::new(record.clone()))
                    }
                }
            }
        };
        self.index.push((record.seed, record.as_expected, at));
        if !record.as_expected {
            self.failing.push(record);
        }
    }
}

/// The summary of the spooled records: totals computed by reading every record back in seed
/// order, the JSON written to `json_path` by streaming them a second time (each record's line as
/// it was written: the same bytes `Summary::write` gives), then the spool removed. The returned
/// summary holds the failing records only (`held_out` lists the others). Errors writing the
/// summary or reading the spool go to its `report_errors`.
pub fn finish_spool(mut spool: Spool, build: Build, selection: Selection, stopped: Stopped, measured: Measured, json_path: &Path) -> Summary {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut errors: Vec<String> = spool.error.take().into_iter().collect();
    if let Some(mut f) = spool.file.take() {
        if let Err(e) = std::io::Write::flush(&mut f) {
            errors.push(format!("{}: {e}", spool.path.display()));
        }
    }
    spool.index.sort_by_key(|(seed, _, _)| *seed);
    let mut reader = std::fs::File::open(&spool.path).map_err(|e| format!("{}: {e}", spool.path.display()));
    // One record's line, read back from the spool (or serialized again from memory).
    let mut line = |at: &Spooled| -> std::io::Result<String> {
        match at {
            Spooled::Memory(r) => Ok(serde_json::to_string(r).expect("a record serializes")),
            Spooled::Disk(offset, len) => {
                let f = reader.as_mut().map_err(|e| std::io::Error::other(e.clone()))?;
                f.seek(SeekFrom::Start(*offset))?;
                let mut buf = vec![0; *len];
                f.read_exact(&mut buf)?;
                String::from_utf8(buf).map_err(std::io::Error::other)
            }
        }
    };
    let mut totals = crate::sweep::summary::TotalsBuilder::new();
    let mut unread = 0;
    for (seed, _, at) in &spool.index {
        match line(at).and_then(|l| serde_json::from_str::<SeedRecord>(&l).map_err(std::io::Error::other)) {
            Ok(r) => totals.add(&r),
            Err(e) => {
                unread += 1;
                errors.push(format!("{}: record of seed {seed}: {e}", spool.path.display()));
            }
        }
    }
    let mut failing = std::mem::take(&mut spool.failing);
    failing.sort_by_key(|r| r.seed);
    let held_out: Vec<u64> = spool.index.iter().filter(|(_, ok, _)| *ok).map(|(seed, _, _)| *seed).collect();
    let mut s = Summary::new(build, selection, stopped, measured, failing);
    s.totals = totals.finish();
    s.held_out = held_out;
    if unread == 0 {
        if let Err(e) = s.write_with(json_path, spool.index.iter().map(|(_, _, at)| line(at))) {
            errors.push(e);
        }
    } else {
        errors.push(format!("{}: not written: {unread} records could not be read back", json_path.display()));
    }
    let _ = std::fs::remove_file(&spool.path);
    s.report_errors = errors;
    s
}

/// Shared by the workers of one sweep (they outlive the sweep call when abandoned).
struct Shared {
    base: RunOptions,
    seeds: SeedSelection,
    next: AtomicU64,
    spool: Mutex<Spool>,
    running: Mutex<BTreeSet<u64>>,
    workers_done: AtomicUsize,
    budget_spent: AtomicBool,
    started: Instant,
    time_budget: Option<Duration>,
    stop: Arc<Stop>,
    failing_dir: PathBuf,
    stem: String,
    report_errors: Mutex<Vec<String>>,
    bar: indicatif::ProgressBar,
    lines: bool,
    done: AtomicU64,
    /// Tenths of the time budget spent, as last reported.
    budget_tenths: AtomicU64,
}

impl Shared {
    /// The next seed to run, or `None`: the selection is done, a stop was requested, or the
    /// time budget is spent.
    fn take(&self) -> Option<u64> {
        if self.stop.stopping() {
            return None;
        }
        if self.time_budget.is_some_and(|b| self.started.elapsed() >= b) {
            self.budget_spent.store(true, Ordering::SeqCst);
            return None;
        }
        let seed = self.seeds.get(self.next.fetch_add(1, Ordering::SeqCst))?;
        self.running.lock().expect("running").insert(seed);
        Some(seed)
    }

    fn run(&self, seed: u64) {
        let opts = RunOptions { seed, trace: false, echo_header: false, ..self.base.clone() };
        let record = match catch_unwind(AssertUnwindSafe(|| run_seed(&opts))) {
            Ok(report) => {
                let record = SeedRecord::of(&opts, &report);
                if !record.as_expected {
                    let path = self.failing_dir.join(format!("{}-seed-{seed}.log", self.stem));
                    let timeline = self.failing_dir.join(format!("{}-seed-{seed}.html", self.stem));
                    let written = std::fs::create_dir_all(&self.failing_dir)
                        .and_then(|_| write_failing_log(&path, &report, &record, opts.scenario.expect.outcome, &timeline))
                        .map_err(|e| format!("{}: {e}", path.display()))
                        .and_then(|_| std::fs::write(&timeline, crate::report::timeline::render(&report, &opts)).map_err(|e| format!("{}: {e}", timeline.display())));
                    if let Err(e) = written {
                        self.report_errors.lock().expect("report errors").push(e);
                    }
                    self.bar.set_message(format!("seed {seed} FAILED"));
                }
                crate::events::recycle(report.events);
                record
            }
            Err(p) => {
                let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "panic".into());
                SeedRecord::crashed(&opts, seed, msg)
            }
        };
        // Record and mark done under one lock order, so a snapshot never misses a seed.
        let mut spool = self.spool.lock().expect("spool");
        spool.push(record);
        self.running.lock().expect("running").remove(&seed);
        drop(spool);
        self.bar.inc(1);
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if self.lines {
            let total = self.seeds.len().max(1);
            if done * 10 / total != (done - 1) * 10 / total || done == total {
                eprintln!("{done}/{total} seeds");
            } else if let Some(budget) = self.time_budget {
                let spent = self.started.elapsed();
                let tenths = (spent.as_secs_f64() * 10.0 / budget.as_secs_f64()) as u64;
                if self.budget_tenths.fetch_max(tenths, Ordering::SeqCst) < tenths {
                    eprintln!("{done}/{total} seeds, {}s of the {} time budget", spent.as_secs(), humantime::format_duration(budget));
                }
            }
        }
    }
}

/// Remove the logs and timelines an earlier sweep of `stem` left in `failing_dir` for the
/// seeds `seeds` selects: all of them, unless it runs a shard.
fn remove_old_logs(failing_dir: &Path, stem: &str, seeds: &SeedSelection) {
    if let Ok(entries) = std::fs::read_dir(failing_dir) {
        let prefix = format!("{stem}-seed-");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let seed = name.strip_prefix(&prefix).and_then(|r| r.strip_suffix(".log").or_else(|| r.strip_suffix(".html"))).and_then(|s| s.parse::<u64>().ok());
            if seed.is_some_and(|s| seeds.shard.is_none() || seeds.contains(s)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The progress bar (shown only on a terminal, with `cfg.progress`), and whether stderr is
/// one; with `cfg.progress`, the sweep's opening line on stderr.
fn progress_bar(base: &RunOptions, seeds: &SeedSelection, cfg: &SweepConfig, jobs: usize) -> (indicatif::ProgressBar, bool) {
    use std::io::IsTerminal;
    let on_tty = cfg.progress && std::io::stderr().is_terminal();
    let bar = if on_tty { indicatif::ProgressBar::new(seeds.len()) } else { indicatif::ProgressBar::hidden() };
    let template = if cfg.time_budget.is_some() { "{pos}/{len} seeds {per_sec} {elapsed} of the time budget {msg}" } else { "{bar:40} {pos}/{len} seeds {per_sec} eta {eta} {msg}" };
    bar.set_style(indicatif::ProgressStyle::with_template(template).expect("template"));
    if cfg.progress {
        let budget = cfg.time_budget.map_or(String::new(), |b| format!(", time budget {}", humantime::format_duration(b)));
        let shard = seeds.shard.map_or(String::new(), |s| format!(" shard {}", s.label()));
        eprintln!("sweeping {} seeds ({}{shard}) of {} with {jobs} jobs{budget}", seeds.len(), seeds.describe_source(), base.scenario_label);
    }
    (bar, on_tty)
}

/// Run `jobs` detached worker threads over `shared`'s seeds and wait until they are done or a
/// second signal abandons them. Returns the spool of records and the seeds still running.
fn run_workers(shared: &Arc<Shared>, jobs: usize, stop: &Arc<Stop>) -> (Spool, Vec<u64>) {
    // Detached threads, so that a second signal can leave the running seeds behind.
    for _ in 0..jobs {
        let shared = Arc::clone(shared);
        std::thread::spawn(move || {
            while let Some(seed) = shared.take() {
                shared.run(seed);
            }
            shared.workers_done.fetch_add(1, Ordering::SeqCst);
        });
    }
    // The wall clock here only paces this wait; no run reads it.
    while shared.workers_done.load(Ordering::SeqCst) < jobs && !stop.abandoning() {
        std::thread::sleep(Duration::from_millis(20));
    }
    shared.bar.finish_and_clear();
    let mut spool = shared.spool.lock().expect("spool");
    let running = shared.running.lock().expect("running");
    let closed = Spool::closed(spool.path.clone());
    (std::mem::replace(&mut *spool, closed), running.iter().copied().collect::<Vec<u64>>())
}

/// Run `seeds` of `base`'s scenario and mutation (its seed is ignored) as `cfg` says, stopping
/// early on `stop` or the time budget. Writes the JSON summary to [`summary_path`], the JUnit
/// report if asked, and each failing seed's log to `report_dir/failing/<scenario>-seed-N.log`
/// (first removing the logs an earlier sweep of the same scenario left for the seeds this one
/// selects: all of them, unless it runs a shard). Report files that cannot be written at the end
/// are listed in the summary's `report_errors`.
///
/// Errors: the reports cannot be written ([`check_writable`]); then no seed was run.
pub fn run_sweep(base: &RunOptions, seeds: &SeedSelection, cfg: &SweepConfig, stop: &Arc<Stop>) -> Result<Summary, String> {
    check_writable(cfg)?;
    let started = Instant::now();
    let failing_dir = cfg.report_dir.join("failing");
    let stem = report_stem(base);
    remove_old_logs(&failing_dir, &stem, seeds);
    let jobs = cfg.jobs.max(1);
    let (bar, on_tty) = progress_bar(base, seeds, cfg, jobs);
    let json_path = summary_path(base, seeds, &cfg.report_dir);
    let spool_name = format!(".{}.{}.records.tmp", json_path.file_stem().map_or("sweep".into(), |s| s.to_string_lossy()), std::process::id());
    let spool = Spool::create(json_path.with_file_name(spool_name)).map_err(|e| format!("--report-dir {}: cannot write there: {e}", cfg.report_dir.display()))?;
    let shared = Arc::new(Shared {
        base: base.clone(),
        seeds: seeds.clone(),
        next: AtomicU64::new(0),
        spool: Mutex::new(spool),
        running: Mutex::new(BTreeSet::new()),
        workers_done: AtomicUsize::new(0),
        budget_spent: AtomicBool::new(false),
        started,
        time_budget: cfg.time_budget,
        stop: Arc::clone(stop),
        failing_dir: failing_dir.clone(),
        stem,
        report_errors: Mutex::new(Vec::new()),
        bar: bar.clone(),
        lines: cfg.progress && !on_tty,
        done: AtomicU64::new(0),
        budget_tenths: AtomicU64::new(0),
    });
    let (spool, abandoned) = run_workers(&shared, jobs, stop);
    let wall_s = started.elapsed().as_secs_f64();
    let selection = Selection {
        seeds: seeds.describe_source(),
        shard: seeds.shard.map(|s| s.label()),
        time_budget: cfg.time_budget.map(|b| humantime::format_duration(b).to_string()),
        planned: seeds.len(),
    };
    let stopped = Stopped { interrupted: stop.signal_name(), time_budget_spent: shared.budget_spent.load(Ordering::SeqCst), abandoned, missing_shards: Vec::new() };
    let measured = Measured { jobs: jobs as u64, wall_s, seeds_per_s: spool.index.len() as f64 / wall_s.max(1e-9), merged_from: Vec::new() };
    let mut s = finish_spool(spool, Build::of(base), selection, stopped, measured, &json_path);
    s.report_errors.extend(shared.report_errors.lock().expect("report errors").iter().cloned());
    s.logs_dir = Some(failing_dir);
    s.json_path = Some(json_path);
    if let Some(junit) = &cfg.junit {
        match crate::sweep::junit::write(&s, junit) {
            Ok(()) => s.junit_path = Some(junit.clone()),
            Err(e) => s.report_errors.push(e),
        }
    }
    Ok(s)
}

/// Run seeds `first..end` of `base` with `jobs` workers, reports under `report_dir`, no budget,
/// no signal handling: the short form tests use.
///
/// # Panics
/// If the reports cannot be written under `report_dir`.
pub fn sweep(base: &RunOptions, first: u64, end: u64, jobs: usize, report_dir: &Path, progress: bool) -> Summary {
    let cfg = SweepConfig { progress, ..SweepConfig::new(jobs, report_dir) };
    run_sweep(base, &SeedSelection::range(first, end), &cfg, &Stop::new()).unwrap_or_else(|e| panic!("{e}"))
}

/// The human summary of a sweep ([`crate::sweep::summary::render`]).
pub fn render(s: &Summary) -> String {
    crate::sweep::summary::render(s)
}
