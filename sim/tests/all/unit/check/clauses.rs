//! The unit tests of `partmap_sim::check::clauses` (formerly in `sim/src/check/clauses.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::clauses::*;

    /// The list follows the properties, in order, each with at least one clause.
    #[test]
    fn clauses_follow_the_properties_in_order() {
        let mut order: Vec<&str> = CLAUSES.iter().map(|c| c.property).collect();
        order.dedup();
        let properties: Vec<&str> = partmap_sim::check::PROPERTIES.iter().map(|p| p.0).collect();
        assert_eq!(order, properties);
        let counts: Vec<usize> = properties.iter().map(|p| of(p).count()).collect();
        assert_eq!(counts, vec![8, 7, 3, 3, 2, 5, 1, 2], "clauses per property: a clause added to or removed from a checker is added to or removed from this list too");
    }

    /// `single_writer`'s module doc numbers its clauses: as many as the list has, and the
    /// expired-session clause among them.
    #[test]
    fn clauses_match_single_writer_s_numbered_list() {
        let doc = include_str!("../../../../src/check/single_writer.rs");
        let numbered = doc.lines().take_while(|l| l.starts_with("//!")).filter(|l| l.trim_start_matches("//!").trim_start().split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok())).count();
        assert_eq!(numbered, of("single_writer").count());
        assert!(of("single_writer").any(|c| c.definition.contains("expired the session")));
        assert!(doc.contains("after the authority expired its"), "the checker has the expired-session clause");
    }

    /// Every view the list names is one [`partmap_sim::check::judge()`] produces for that property.
    #[test]
    fn clauses_name_the_views_the_run_judges() {
        let views = partmap_sim::check::judge(&[], &Default::default(), &Default::default(), &[], &Default::default());
        for c in CLAUSES.iter().filter(|c| c.property != "liveness") {
            for v in c.views {
                assert!(views.iter().any(|w| w.property == c.property && w.view == *v), "{} names view {v}, which the run does not judge", c.property);
            }
        }
        for w in &views {
            assert!(of(w.property).any(|c| c.views.contains(&w.view)), "view {}/{} judges no listed clause", w.property, w.view);
        }
    }

    /// The README carries the generated section, exactly.
    #[test]
    fn clauses_readme_section_matches_the_checkers() {
        let readme = include_str!("../../../../../README.md");
        let (begin, end) = README_MARKERS;
        let at = readme.find(begin).expect("README.md carries the clauses between their markers");
        let rest = &readme[at + begin.len()..];
        let section = &rest[..rest.find(end).expect("the end marker after the begin marker")];
        assert_eq!(section.trim(), markdown().trim(), "README.md's property definitions differ from sim/src/check/clauses.rs");
        let text = markdown();
        assert!(text.contains("7. an expired session serves nothing: no server admits an append, or answers a strong read, after the authority expired the session its authority came from"), "{text}");
    }
}
