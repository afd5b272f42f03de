//! The timeline page in a real browser: headless Chromium (Debian's `chromium`) loads the page
//! of a failing seed; its script must run without a single console message, and the page must
//! open zoomed on the violation's evidence. Ignored in the ordinary test run, which must not
//! need a browser; `.ci/run` installs Chromium when it is absent and runs it with
//! `cargo test --profile tests -p partmap-sim --test all -- --ignored timeline_browser::`.

use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions};
use partmap_sim::scenario::Scenario;
use std::process::Command;

#[test]
#[ignore = "needs headless Chromium (Debian's chromium); .ci/run installs and runs it"]
fn timeline_browser_page_runs_without_console_messages_and_opens_on_the_evidence() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/cut-off-owner.json");
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions { seed: 0, scenario, scenario_label: "scenarios/cut-off-owner.json".into(), mutation: Some(Mutation::ServerIgnoresLeaseExpiry), also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let evidence_s: Vec<f64> = report.verdicts.iter().filter(|v| v.violation.is_some()).flat_map(|v| v.evidence.times_us.iter().map(|t| *t as f64 / 1e6)).collect();
    assert!(!evidence_s.is_empty(), "seed 0 under the lease mutation violates a property with evidence times");
    let dir = std::env::temp_dir().join(format!("partmap-timeline-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("page.html");
    std::fs::write(&page, partmap_sim::report::timeline::render(&report, &opts)).unwrap();

    let browser = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("headless Chromium: Debian's `chromium` (apt-get install chromium; .ci/run installs it)");
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let (dom, log) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "chromium failed: {log}");
    // Every console message (an uncaught exception is one) is logged as `...:CONSOLE:...`.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the page's script logged: {console:#?}");
    // The script ran (it writes the window it shows) and opened on the evidence, not the run.
    let window = dom.split("<span id=\"window\">").nth(1).and_then(|s| s.split('<').next()).unwrap_or_default();
    let bounds: Vec<f64> = window.strip_prefix("window ").unwrap_or_default().split(" to ").filter_map(|s| s.trim_end_matches('s').parse().ok()).collect();
    assert_eq!(bounds.len(), 2, "the script did not write its window: `{window}`");
    let (a, b) = (bounds[0], bounds[1]);
    assert!(evidence_s.iter().all(|t| a < *t && *t < b) && b - a < 10.0, "opened on {a}..{b} s, evidence at {evidence_s:?}");

    // The whole-run view: the phase lines' labels ("workload ends", "heal") sit inside the plot
    // (x 190..1550 px), none running past its right edge into the clip.
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("file://{}#view=all", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let labels: Vec<&str> = dom.split("<text ").skip(1).filter(|t| t.contains("class=\"phase-label\"")).collect();
    assert_eq!(labels.len(), 2, "two phase labels in the whole-run view");
    let attr = |t: &str, name: &str| t.split(&format!("{name}=\"")).nth(1).and_then(|v| v.split('"').next()).map(str::to_string);
    for t in labels {
        let x: f64 = attr(t, "x").and_then(|v| v.parse().ok()).expect("a label's x");
        let len: f64 = attr(t, "data-len").and_then(|v| v.parse().ok()).expect("a label's data-len");
        let (left, right) = if attr(t, "text-anchor").as_deref() == Some("end") { (x - len * 6.2, x) } else { (x, x + len * 6.2) };
        assert!(left >= 190.0 && right <= 1550.0, "a phase label spans {left:.1}..{right:.1} px, outside the plot: <text {}", &t[..t.len().min(200)]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
