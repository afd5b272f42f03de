//! A sweep summary as a JUnit XML report, for CI systems that display JUnit (GitHub Actions
//! through a reporter action, GitLab, Jenkins, Buildkite): one test suite per summary, one test
//! case per seed (`seed N`), a `<failure>` for a seed that did not end as the scenario expects
//! (with each violation's evidence and the repro command), an `<error>` for a harness crash,
//! and a skipped case for each seed abandoned on a second signal.

use crate::sweep::summary::{SeedRecord, Summary};
use quick_xml::events::BytesText;
use quick_xml::Writer;
use std::io;
use std::path::Path;

/// XML 1.0 admits no control characters but tab, newline and carriage return.
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() && !matches!(c, '\t' | '\n' | '\r') { '?' } else { c }).collect()
}

/// Element text: control characters replaced, `<`, `>` and `&` escaped (quotes stay readable).
fn text(s: &str) -> BytesText<'static> {
    BytesText::from_escaped(quick_xml::escape::partial_escape(clean(s)).into_owned())
}

/// The JUnit XML of `s`.
pub fn render(s: &Summary) -> String {
    let t = &s.totals;
    let stem = crate::run::scenario_stem(&s.build.scenario);
    let suite = match &s.build.mutation {
        Some(m) => format!("partmap-sim {stem} --mutation {m}"),
        None => format!("partmap-sim {stem}"),
    };
    let class = format!("partmap-sim.{stem}");
    let tests = (t.seeds + s.stopped.abandoned.len() as u64).to_string();
    let failures = (t.failing - t.crashed).to_string();
    let errors = t.crashed.to_string();
    let skipped = s.stopped.abandoned.len().to_string();
    let time = format!("{:.3}", s.measured.wall_s);
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let result: io::Result<()> = (|| {
        w.write_event(quick_xml::events::Event::Decl(quick_xml::events::BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        let counts = [("tests", tests.as_str()), ("failures", failures.as_str()), ("errors", errors.as_str()), ("skipped", skipped.as_str()), ("time", time.as_str())];
        w.create_element("testsuites").with_attribute(("name", "partmap-sim")).with_attributes(counts).write_inner_content(|w| {
            w.create_element("testsuite").with_attribute(("name", suite.as_str())).with_attributes(counts).write_inner_content(|w| {
                w.create_element("properties").write_inner_content(|w| write_properties(w, s))?;
                write_seed_cases(w, s, &class)?;
                write_abandoned(w, s, &class)
            })?;
            Ok(())
        })?;
        Ok(())
    })();
    result.expect("writing XML to memory cannot fail");
    let mut xml = String::from_utf8(w.into_inner()).expect("the writer was given UTF-8 only");
    xml.push('\n');
    xml
}

/// The suite's properties: the build, the selection and whether a signal stopped the sweep.
fn write_properties(w: &mut Writer<Vec<u8>>, s: &Summary) -> io::Result<()> {
    let b = &s.build;
    let props = [
        ("version", b.version.clone()),
        ("commit", b.commit.clone().unwrap_or_else(|| "unknown".into())),
        ("scenario", b.scenario.clone()),
        ("scenario_hash", b.scenario_hash.clone()),
        ("mutation", b.mutation.clone().unwrap_or_else(|| "none".into())),
        ("seeds", s.selection.seeds.clone()),
        ("shard", s.selection.shard.clone().unwrap_or_else(|| "none".into())),
        ("interrupted", s.stopped.interrupted.clone().unwrap_or_else(|| "no".into())),
    ];
    for (name, value) in &props {
        w.create_element("property").with_attribute(("name", *name)).with_attribute(("value", clean(value).as_str())).write_empty()?;
    }
    Ok(())
}

/// A test case per seed, in seed order, over the records held and the seeds a sweep held out
/// (as expected): empty for a seed as expected, else its failure or error.
fn write_seed_cases(w: &mut Writer<Vec<u8>>, s: &Summary, class: &str) -> io::Result<()> {
    let mut held = s.records.iter().peekable();
    let mut out = s.held_out.iter().peekable();
    loop {
        let r = match (held.peek(), out.peek()) {
            (None, None) => break,
            (Some(r), Some(&&seed)) if seed < r.seed => Err(*out.next().expect("peeked")),
            (None, Some(_)) => Err(*out.next().expect("peeked")),
            _ => Ok(held.next().expect("peeked")),
        };
        let seed = match &r {
            Ok(r) => r.seed,
            Err(seed) => *seed,
        };
        let name = format!("seed {seed}");
        let case = w.create_element("testcase").with_attribute(("classname", class)).with_attribute(("name", name.as_str()));
        let r = match r {
            Ok(r) if !r.as_expected => r,
            _ => {
                case.write_empty()?;
                continue;
            }
        };
        case.write_inner_content(|w| write_failure(w, s, r))?;
    }
    Ok(())
}

/// The body of the case of seed record `r`, which did not end as expected: an `<error>` for a
/// harness crash, else a `<failure>` with the violated properties, their evidence, the repro
/// command and the trace hash.
fn write_failure(w: &mut Writer<Vec<u8>>, s: &Summary, r: &SeedRecord) -> io::Result<()> {
    if let Some(panic) = &r.panic {
        let body = format!("{panic}\nrepro: {}", r.repro);
        w.create_element("error").with_attribute(("message", "harness crash")).with_attribute(("type", "harness_crash")).write_text_content(text(&body))?;
        return Ok(());
    }
    let props: Vec<&str> = r.violations().map(|(p, _)| p).collect();
    let message = if props.is_empty() {
        format!("expected {:?}, every property held", s.build.expected)
    } else {
        format!("{:?}: {}", r.outcome, props.join(", "))
    };
    let mut body: String = r.violations().map(|(p, e)| format!("{p}: {e}\n")).collect();
    body.push_str(&format!("repro: {}\ntrace_hash: {}", r.repro, r.trace_hash));
    let kind = serde_json::to_value(r.outcome).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    w.create_element("failure")
        .with_attribute(("message", clean(&message).as_str()))
        .with_attribute(("type", kind.as_str()))
        .write_text_content(text(&body))?;
    Ok(())
}

/// A skipped case for each seed abandoned on a second signal.
fn write_abandoned(w: &mut Writer<Vec<u8>>, s: &Summary, class: &str) -> io::Result<()> {
    for seed in &s.stopped.abandoned {
        let name = format!("seed {seed}");
        let signal = s.stopped.interrupted.as_deref().unwrap_or("a signal");
        w.create_element("testcase").with_attribute(("classname", class)).with_attribute(("name", name.as_str())).write_inner_content(|w| {
            w.create_element("skipped").with_attribute(("message", format!("abandoned while running on a second {signal}").as_str())).write_empty()?;
            Ok::<(), io::Error>(())
        })?;
    }
    Ok(())
}

/// Write the JUnit XML of `s` to `path`.
///
/// Errors: `<path>: <io error>`.
pub fn write(s: &Summary, path: &Path) -> Result<(), String> {
    let fail = |e: io::Error| format!("{}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, render(s)).map_err(fail)
}
