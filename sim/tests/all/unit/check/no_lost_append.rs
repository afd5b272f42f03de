//! The unit tests of `partmap_sim::check::no_lost_append` (formerly in `sim/src/check/no_lost_append.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::no_lost_append::*;
    use partmap_sim::check::index::{Clients, Finals};
    use partmap_sim::events::{Event, Outcome};
    use partmap::ids::{Key, OpId};
    use partmap_sim::events::What;
    use partmap_sim::workload::payload;
    use partmap::event::ClientOp;

    fn invoke(t_us: u64, client: u32, seq: u64) -> Event {
        Event { t_us, what: What::Invoke { op: ClientOp::Append, id: OpId { client, seq }, key: b"k1".to_vec(), bound_ms: None } }
    }

    fn complete(t_us: u64, client: u32, seq: u64, outcome: Outcome) -> Event {
        Event { t_us, what: What::Complete { op: ClientOp::Append, id: OpId { client, seq }, key: b"k1".to_vec(), outcome, reason: String::new(), value_len: 0, value_hash: 0 } }
    }

    fn content(ids: &[(u32, u64)]) -> Content {
        Content::from([(b"k1".to_vec(), ids.iter().flat_map(|&(client, seq)| payload(OpId { client, seq }, 16)).collect())])
    }

    fn history() -> Vec<Event> {
        vec![invoke(1, 1, 1), complete(2, 1, 1, Outcome::Ok), invoke(3, 1, 2), complete(4, 1, 2, Outcome::Unknown), invoke(5, 2, 1), complete(6, 2, 1, Outcome::Fail)]
    }

    #[test]
    fn no_lost_append_accepts_a_correct_history() {
        check(&history(), &content(&[(1, 1), (1, 2)]), "served", None).unwrap();
        check(&history(), &content(&[(1, 1)]), "served", None).unwrap();
    }

    #[test]
    fn no_lost_append_flags_lost_duplicate_failed_and_reordered() {
        let h = history();
        let lost = check(&h, &content(&[(1, 2)]), "served", None).unwrap_err();
        assert!(lost.contains("acknowledged") && lost.starts_with("served"), "{lost}");
        let dup = check(&h, &content(&[(1, 1), (1, 2), (1, 2)]), "served", None).unwrap_err();
        assert!(dup.contains("twice"), "{dup}");
        let failed = check(&h, &content(&[(1, 1), (2, 1)]), "served", None).unwrap_err();
        assert!(failed.contains("definitely failed"), "{failed}");
        let order = check(&h, &content(&[(1, 2), (1, 1)]), "served", None).unwrap_err();
        assert!(order.contains("before"), "{order}");
        let phantom = check(&h, &content(&[(1, 1), (9, 9)]), "served", None).unwrap_err();
        assert!(phantom.contains("no client appended"), "{phantom}");
        // An acknowledged append on a key with no content at all.
        assert!(check(&h, &Content::new(), "served", None).unwrap_err().contains("not in the final content"));
        // A key the final reads could not answer is left to liveness, not judged as empty.
        let read: std::collections::BTreeSet<Key> = Default::default();
        check(&h, &Content::new(), "served", Some(&read)).unwrap();
    }

    /// Issue 12: the record sits in a stream, the live system does not serve it.
    #[test]
    fn no_lost_append_judges_what_is_served_and_reports_a_disagreement() {
        let h = history();
        let (served, stored) = (content(&[(1, 2)]), content(&[(1, 1), (1, 2)]));
        check(&h, &stored, "stored", None).unwrap();
        assert!(check(&h, &served, "served", None).is_err());
        assert!(disagreement(&served, &stored).unwrap().contains("serves 1 records, the store's streams hold 2"));
        assert!(disagreement(&stored, &stored).is_none());
        // The indexed form says the same, on equal copies, different bytes, and a key the
        // streams lack or only they hold.
        let mut only_served = stored.clone();
        only_served.insert(b"k2".to_vec(), payload(OpId { client: 1, seq: 5 }, 16));
        let pairs = [(&served, &stored), (&stored, &served), (&stored, &stored.clone()), (&only_served, &stored), (&stored, &only_served)];
        for (a, b) in pairs {
            let mut clients = Clients::of(&h);
            let finals = Finals::of(&[a, b], &mut clients);
            assert_eq!(disagreement_indexed(&finals, &clients.keys), disagreement(a, b));
        }
        assert!(disagreement(&only_served, &stored).is_some() && disagreement(&stored, &only_served).is_none());
    }

    /// Issue 13: the stored view skips a key only when the served view passed and holds the
    /// same bytes for it. A lost append shows in both views when both hold the same bytes, and
    /// in the stored view alone when only the streams lost it.
    #[test]
    fn the_stored_view_skips_only_keys_the_served_view_passed_on_the_same_bytes() {
        let h = history();
        let of = |views: &[partmap_sim::check::View], property: &str, view: &str| views.iter().find(|v| v.property == property && v.view == view).and_then(|v| v.violation.clone());
        // Both lost c1.1 (the same bytes): both views say so.
        let lost = content(&[(1, 2)]);
        let views = partmap_sim::check::judge(&h, &lost, &lost, &[], &Default::default());
        assert!(of(&views, "no_lost_append", "served").is_some_and(|v| v.starts_with("served")));
        assert!(of(&views, "no_lost_append", "stored").is_some_and(|v| v.starts_with("stored")), "{views:?}");
        // The live system serves it, the streams lost it: the stored view alone.
        let views = partmap_sim::check::judge(&h, &content(&[(1, 1), (1, 2)]), &lost, &[], &Default::default());
        assert!(of(&views, "no_lost_append", "served").is_none());
        assert!(of(&views, "no_lost_append", "stored").is_some_and(|v| v.contains("c1.1")), "{views:?}");
        // Both sound: both pass.
        let good = content(&[(1, 1), (1, 2)]);
        let views = partmap_sim::check::judge(&h, &good, &good, &[], &Default::default());
        assert!(of(&views, "no_lost_append", "stored").is_none() && of(&views, "reads_consistent", "stored").is_none());
    }
}
