//! Reading a scenario's text: the typed read, and errors that name the field and the problem.

use super::*;
use std::path::Path;

impl Scenario {
    /// Parse and validate a scenario. `origin` (usually the file name) prefixes every error.
    ///
    /// Errors are one line, `<origin>: <path>: <problem>`: JSON syntax errors give line and
    /// column; unknown fields give the containing object's path, the field and the accepted
    /// names; wrong types give the field's path; out-of-range values come from [`validate`].
    ///
    /// [`validate`]: Scenario::validate
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, String> {
        // serde reads a struct from a JSON array too, field by field in declaration order
        // (`"topology": [5, 3]` would be 5 servers and 3 managers): refuse arrays where the
        // format has objects before the typed read. Text that is not JSON at all gets its
        // syntax error from the typed read below, which knows the line and column.
        let value = serde_json::from_str::<serde_json::Value>(text).ok();
        if let Some(value) = &value {
            let template = serde_json::to_value(Scenario::shape_template()).expect("serializable");
            check_objects(value, &template, "").map_err(|e| format!("{origin}: {e}"))?;
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let scenario: Scenario = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| describe_json_error(origin, &e.path().to_string(), e.inner()))?;
        // Trailing text after the top-level object is a mistake too (e.g. two objects pasted).
        de.end().map_err(|e| describe_json_error(origin, ".", &e))?;
        // Whether a topology field was written (not defaulted) shows only in the text.
        if let Some(value) = &value {
            check_swarm_topology(value).map_err(|e| format!("{origin}: {e}"))?;
        }
        scenario.validate().map_err(|e| format!("{origin}: {e}"))?;
        Ok(scenario)
    }

    /// Read and parse a scenario file. Errors: `<path>: cannot read: <io error>`, or those of
    /// [`Scenario::parse`] with the path as origin.
    pub fn load(path: &Path) -> Result<Scenario, String> {
        let origin = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
        Scenario::parse(&text, &origin)
    }

    /// A scenario with every optional section and list present (one entry each), so its JSON
    /// form shows where the format has objects; see `check_objects`.
    fn shape_template() -> Scenario {
        let mut s = Scenario { swarm: Some(Swarm { servers: [1, 1], frontends: [1, 1], initial_ranges: [1, 1] }), ..Scenario::default() };
        s.workload.script.push(ScriptedAppend { at_ms: 0, key: "k".into(), bytes: 6, frontend: 1, on: Some(Trigger { event: "paused".into(), node: "server-1".into(), range: None, epoch: None, count: 1, delay_ms: 1 }) });
        s.faults.schedule.push(TimedFault {
            at_ms: 0,
            on: Some(Trigger { event: "paused".into(), node: "server-1".into(), range: None, epoch: None, count: 1, delay_ms: 1 }),
            until: Some(Trigger { event: "activated".into(), node: "server-1".into(), range: None, epoch: None, count: 1, delay_ms: 1 }),
            duration_ms: Some(1),
            fault: FaultSpec::Crash { node: "server-1".into() },
        });
        s
    }
}

/// `<origin>: <path>: <problem> (line L, column C)`, or for a syntax error
/// `<origin>: [<path>: ]line L, column C: invalid JSON: <problem>`. serde_json appends the
/// position to its message; it is moved so the path comes first.
fn describe_json_error(origin: &str, path: &str, err: &serde_json::Error) -> String {
    let (line, column) = (err.line(), err.column());
    let message = err.to_string();
    let message =
        message.strip_suffix(&format!(" at line {line} column {column}")).unwrap_or(&message);
    // serde_path_to_error writes `?` for a key it has not read yet (a syntax error inside an
    // object); the containing object's path is what helps.
    let path = path.trim_end_matches(".?");
    let at_root = path == "." || path == "?" || path.is_empty();
    match err.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof if at_root => {
            format!("{origin}: line {line}, column {column}: invalid JSON: {message}")
        }
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            // serde_json reports an over-long fixed-size array such as `[1, 2, 3]` for a
            // `[min, max]` pair as trailing characters; say what most likely happened.
            let hint = if message == "trailing characters" {
                " (more elements than the array takes?)"
            } else {
                ""
            };
            format!("{origin}: {path}: line {line}, column {column}: invalid JSON: {message}{hint}")
        }
        serde_json::error::Category::Io => format!("{origin}: cannot read: {message}"),
        serde_json::error::Category::Data if at_root => {
            format!("{origin}: {message} (line {line}, column {column})")
        }
        serde_json::error::Category::Data => {
            let message = reword_type_error(path, message);
            format!("{origin}: {path}: {message} (line {line}, column {column})")
        }
    }
}

/// serde's wrong-type and wrong-value messages in the format's words:
/// `invalid value: integer `-5`, expected u64` becomes `must be a non-negative integer, got -5`,
/// `invalid type: string "none", expected struct RandomFaults` becomes `must be an object (or
/// null: no random faults), got the string "none"`. Other messages (unknown fields, unknown
/// variants, wrong array lengths) already say what is wrong and are kept.
fn reword_type_error(path: &str, message: &str) -> String {
    let Some((got, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
    else {
        return message.to_string();
    };
    // What was found: serde writes `integer `-5``, `floating point `1.5``, `string "x"`,
    // `boolean `true``, `null`, `map`, `sequence`.
    let number = |prefix: &str| got.strip_prefix(prefix).map(|v| v.trim_matches('`').to_string());
    let found = number("integer ")
        .or_else(|| number("floating point "))
        .or_else(|| number("boolean "))
        .or_else(|| got.starts_with("string ").then(|| format!("the {got}")))
        .unwrap_or_else(|| match got {
            "map" => "an object".to_string(),
            "sequence" => "an array".to_string(),
            other => other.to_string(),
        });
    let unsigned_max = match expected {
        "u8" => Some(u64::from(u8::MAX)),
        "u16" => Some(u64::from(u16::MAX)),
        "u32" => Some(u64::from(u32::MAX)),
        "u64" => Some(u64::MAX),
        _ => None,
    };
    let wanted = match (expected, unsigned_max) {
        // An integer too large for the field's type.
        (_, Some(max)) if got.starts_with("integer ") && !found.starts_with('-') => {
            return format!("must be at most {max}, got {found}");
        }
        (_, Some(_)) => "a non-negative integer".to_string(),
        ("f64" | "f32", _) => "a number".to_string(),
        ("a sequence", _) => "an array".to_string(),
        (e, _) if e.starts_with("struct ") => "an object".to_string(),
        (e, _) if e.starts_with("a ") || e.starts_with("an ") => e.to_string(),
        _ => return message.to_string(),
    };
    let or_null = if path == "faults.random" { " (or null: no random faults)" } else { "" };
    format!("must be {wanted}{or_null}, got {found}")
}

/// Every place where `template` (a scenario with every optional section present) has an object
/// must not be an array in `value`: an array there is reported as
/// `<path>: expected an object, got an array`. Array elements are checked against the
/// template's first element. Other mismatches (wrong types, unknown fields) are left to the
/// typed read, which reports them with their position.
fn check_objects(value: &serde_json::Value, template: &serde_json::Value, path: &str) -> Result<(), String> {
    use serde_json::Value;
    let shown = if path.is_empty() { "the scenario" } else { path };
    match (value, template) {
        (Value::Array(items), Value::Object(fields)) => {
            let names: Vec<&str> = fields.keys().map(String::as_str).collect();
            Err(format!(
                "{shown}: expected an object, got an array of {} element(s) (write the fields by name: {})",
                items.len(),
                names.join(", ")
            ))
        }
        (Value::Object(fields), Value::Object(template_fields)) => {
            for (name, field) in fields {
                if let Some(t) = template_fields.get(name) {
                    let inner = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                    check_objects(field, t, &inner)?;
                }
            }
            Ok(())
        }
        (Value::Array(items), Value::Array(template_items)) => {
            let Some(t) = template_items.first() else { return Ok(()) };
            for (i, item) in items.iter().enumerate() {
                check_objects(item, t, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A file with a `swarm` section must not also write the `topology` fields swarm draws per
/// seed (`servers`, `frontends`, `initial_ranges`): the written value would be ignored.
fn check_swarm_topology(value: &serde_json::Value) -> Result<(), String> {
    if !value.get("swarm").is_some_and(serde_json::Value::is_object) {
        return Ok(());
    }
    let Some(topology) = value.get("topology").and_then(serde_json::Value::as_object) else { return Ok(()) };
    for field in ["servers", "frontends", "initial_ranges"] {
        if let Some(written) = topology.get(field) {
            return Err(format!(
                "topology.{field}: {written} would be ignored: the swarm section draws it per seed from swarm.{field}; remove topology.{field} or drop `swarm`"
            ));
        }
    }
    Ok(())
}
