//! The unit tests of `partmap_sim::report::history_edn` (formerly in `sim/src/report/history_edn.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::history_edn::*;
    use partmap_sim::check::no_lost_append::Content;
    use partmap_sim::events::{Event, Outcome, What};
    use partmap_sim::workload::content_hash;
    use partmap::event::ClientOp;
    use partmap::ids::OpId;
    use std::collections::BTreeMap;
    use partmap_sim::workload::payload;

    /// A small EDN reader, written apart from the writer above, for the values the history
    /// uses: maps, vectors, keywords, strings, integers and nil.
    #[derive(Clone, Debug, PartialEq)]
    enum Edn {
        Nil,
        Int(i128),
        Str(String),
        Keyword(String),
        Vector(Vec<Edn>),
        Map(Vec<(Edn, Edn)>),
    }

    fn parse(text: &str) -> Result<Edn, String> {
        let chars: Vec<char> = text.chars().collect();
        let mut at = 0;
        let v = value(&chars, &mut at)?;
        skip(&chars, &mut at);
        if at != chars.len() {
            return Err(format!("trailing text at {at}"));
        }
        Ok(v)
    }

    fn skip(c: &[char], at: &mut usize) {
        while *at < c.len() && (c[*at].is_whitespace() || c[*at] == ',') {
            *at += 1;
        }
    }

    fn value(c: &[char], at: &mut usize) -> Result<Edn, String> {
        skip(c, at);
        let Some(&first) = c.get(*at) else { return Err("end of input".into()) };
        match first {
            '{' | '[' => {
                let close = if first == '{' { '}' } else { ']' };
                *at += 1;
                let mut items = Vec::new();
                loop {
                    skip(c, at);
                    if c.get(*at) == Some(&close) {
                        *at += 1;
                        break;
                    }
                    items.push(value(c, at)?);
                }
                if first == '[' {
                    return Ok(Edn::Vector(items));
                }
                if items.len() % 2 != 0 {
                    return Err("a map with an odd number of forms".into());
                }
                let mut pairs = Vec::new();
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                Ok(Edn::Map(pairs))
            }
            '"' => {
                *at += 1;
                let mut s = String::new();
                loop {
                    match c.get(*at) {
                        None => return Err("unterminated string".into()),
                        Some('"') => {
                            *at += 1;
                            return Ok(Edn::Str(s));
                        }
                        Some('\\') => {
                            s.push(*c.get(*at + 1).ok_or("dangling escape")?);
                            *at += 2;
                        }
                        Some(&ch) => {
                            s.push(ch);
                            *at += 1;
                        }
                    }
                }
            }
            _ => {
                let start = *at;
                while *at < c.len() && !c[*at].is_whitespace() && !matches!(c[*at], ',' | '}' | ']' | '{' | '[') {
                    *at += 1;
                }
                let token: String = c[start..*at].iter().collect();
                if token == "nil" {
                    Ok(Edn::Nil)
                } else if let Some(k) = token.strip_prefix(':') {
                    Ok(Edn::Keyword(k.to_string()))
                } else {
                    token.parse::<i128>().map(Edn::Int).map_err(|_| format!("unknown token `{token}`"))
                }
            }
        }
    }

    fn get<'a>(m: &'a Edn, key: &str) -> Option<&'a Edn> {
        let Edn::Map(pairs) = m else { return None };
        pairs.iter().find(|(k, _)| *k == Edn::Keyword(key.into())).map(|(_, v)| v)
    }

    fn invoke(t_us: u64, op: ClientOp, client: u32, seq: u64, bound_ms: Option<u64>) -> Event {
        Event { t_us, what: What::Invoke { op, id: OpId { client, seq }, key: b"k1".to_vec(), bound_ms } }
    }

    fn complete(t_us: u64, op: ClientOp, client: u32, seq: u64, outcome: Outcome, read: &[u8]) -> Event {
        Event { t_us, what: What::Complete { op, id: OpId { client, seq }, key: b"k1".to_vec(), outcome, reason: String::new(), value_len: read.len() as u64, value_hash: content_hash(read) } }
    }

    /// Every line is one EDN map with the fields of a Jepsen operation, invocations and
    /// completions pair up per process, values are list-append micro-operations, an unknown
    /// append is `:info`, and a read lists the values of the prefix it returned.
    #[test]
    fn history_edn_lines_are_jepsen_operations() {
        use ClientOp::{Append, Read};
        let one: Vec<u8> = payload(OpId { client: 1, seq: 1 }, 16);
        let mut both = one.clone();
        both.extend(payload(OpId { client: 2, seq: 1 }, 16));
        let served = Content::from([(b"k1".to_vec(), both.clone())]);
        let evs = vec![
            invoke(1, Append, 1, 1, None),
            invoke(2, Append, 1, 2, None),
            complete(3, Append, 1, 1, Outcome::Ok, b""),
            invoke(4, Append, 2, 1, None),
            complete(5, Append, 1, 2, Outcome::Unknown, b""),
            complete(6, Append, 2, 1, Outcome::Fail, b""),
            invoke(7, Read, 3, 1, None),
            complete(8, Read, 3, 1, Outcome::Ok, &one),
            invoke(9, Read, 3, 2, Some(1000)),
            complete(10, Read, 3, 2, Outcome::Ok, &one),
            invoke(11, Read, 3, 3, None),
            complete(12, Read, 3, 3, Outcome::Ok, b"c9.9-;"),
        ];
        let lines = lines(&evs, &served);
        assert_eq!(lines.len(), 10, "the bounded read is left out: {lines:#?}");
        let ops: Vec<Edn> = lines.iter().map(|l| parse(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect();
        let kw = |s: &str| Edn::Keyword(s.into());
        let mut in_flight: BTreeMap<i128, bool> = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            assert_eq!(get(op, "index"), Some(&Edn::Int(i as i128)));
            assert_eq!(get(op, "f"), Some(&kw("txn")));
            let Some(Edn::Int(process)) = get(op, "process") else { panic!("{op:?}") };
            let Some(Edn::Int(time)) = get(op, "time") else { panic!("{op:?}") };
            assert_eq!(*time % 1000, 0, "ns from µs");
            let Some(Edn::Keyword(kind)) = get(op, "type") else { panic!("{op:?}") };
            let was = in_flight.insert(*process, kind == "invoke").unwrap_or(false);
            assert_eq!(was, kind != "invoke", "line {i}: one operation in flight per process");
            let Some(Edn::Vector(txn)) = get(op, "value") else { panic!("{op:?}") };
            let Edn::Vector(mop) = &txn[0] else { panic!("{op:?}") };
            assert!(mop[0] == kw("append") || mop[0] == kw("r"), "{op:?}");
            assert_eq!(mop[1], Edn::Str("k1".into()));
        }
        let kinds: Vec<&Edn> = ops.iter().map(|o| get(o, "type").unwrap()).collect();
        assert_eq!(kinds, [":invoke", ":invoke", ":ok", ":invoke", ":info", ":fail", ":invoke", ":ok", ":invoke", ":info"].map(|k| kw(&k[1..])).iter().collect::<Vec<_>>());
        // Two appends of client 1 in flight at once: two processes.
        assert_eq!((get(&ops[0], "process"), get(&ops[1], "process")), (Some(&Edn::Int(64)), Some(&Edn::Int(65))));
        let v11 = Edn::Int(value_of(OpId { client: 1, seq: 1 }) as i128);
        assert_eq!(get(&ops[0], "value"), Some(&Edn::Vector(vec![Edn::Vector(vec![kw("append"), Edn::Str("k1".into()), v11.clone()])])));
        assert_eq!(get(&ops[7], "value"), Some(&Edn::Vector(vec![Edn::Vector(vec![kw("r"), Edn::Str("k1".into()), Edn::Vector(vec![v11])])])));
        assert_eq!(get(&ops[6], "value"), Some(&Edn::Vector(vec![Edn::Vector(vec![kw("r"), Edn::Str("k1".into()), Edn::Nil])])));
        assert_eq!(get(&ops[9], "error"), Some(&kw("unmatched-read")));
        assert!(parse("{:a [1 2}").is_err() && parse("{:a}").is_err(), "the reader refuses what is not EDN");
    }

    /// A whole run's history: every line parses, every completion follows its invocation on
    /// the same process, and acknowledged appends and answered reads are there.
    #[test]
    fn history_edn_of_a_run_parses_line_by_line() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/split-late-append.json");
        let scenario = partmap_sim::scenario::Scenario::load(std::path::Path::new(path)).expect("scenario");
        let report = partmap_sim::run::run_seed(&partmap_sim::run::RunOptions { seed: 0, scenario, scenario_label: path.into(), mutation: None, also_mutation: None, trace: false, echo_header: false });
        let lines = lines(&report.events, &report.served);
        let mut open: BTreeMap<i128, bool> = BTreeMap::new();
        let (mut ok_appends, mut ok_reads) = (0, 0);
        for l in &lines {
            let op = parse(l).unwrap_or_else(|e| panic!("{l}: {e}"));
            let (Some(Edn::Int(p)), Some(Edn::Keyword(kind))) = (get(&op, "process"), get(&op, "type")) else { panic!("{l}") };
            assert_eq!(open.insert(*p, kind == "invoke").unwrap_or(false), kind != "invoke", "{l}");
            assert!(get(&op, "error").is_none(), "a read of this passing run that is no prefix of the final content: {l}");
            if kind == "ok" {
                if l.contains("[[:append ") { ok_appends += 1 } else { ok_reads += 1 }
            }
        }
        let acked = report.events.iter().filter(|e| matches!(&e.what, What::Complete { op: ClientOp::Append, outcome: Outcome::Ok, .. })).count();
        assert!(acked > 0 && ok_appends == acked, "{ok_appends} :ok appends, {acked} acknowledged");
        assert!(ok_reads > 0, "answered strong reads");
    }
}
