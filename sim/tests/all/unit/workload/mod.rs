//! The unit tests of `partmap_sim::workload` (formerly in `sim/src/workload/mod.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).



mod tests {
    use partmap_sim::workload::*;
    use partmap_sim::scenario::key_name;
    use partmap::ids::OpId;
    use proptest::prelude::*;

    proptest! {
        /// The hash of a content does not depend on how it was cut into pieces: the checkers
        /// extend record by record, the clients hash whole reads.
        #[test]
        fn content_hash_is_split_invariant(bytes in proptest::collection::vec(any::<u8>(), 0..200), cuts in proptest::collection::vec(0usize..200, 0..6)) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut h = ContentHasher::new();
            let mut at = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                h.extend(&bytes[at..c]);
                at = c;
            }
            prop_assert_eq!(h.finish(), content_hash(&bytes));
        }

        /// Contents that differ in one byte, or only in length, hash apart.
        #[test]
        fn content_hash_tells_one_byte_and_the_length(bytes in proptest::collection::vec(any::<u8>(), 1..100), at in 0usize..100, flip in 1u8..=255) {
            let mut other = bytes.clone();
            let at = at % bytes.len();
            other[at] ^= flip;
            prop_assert_ne!(content_hash(&bytes), content_hash(&other));
            prop_assert_ne!(content_hash(&bytes), content_hash(&bytes[..bytes.len() - 1]));
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert_ne!(content_hash(&bytes), content_hash(&longer));
        }
    }

    #[test]
    fn workload_flux_key_falls_in_a_span_in_flux() {
        use madsim::rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let (k250, k260, k990, k5000) = (key_name(250), key_name(260), key_name(990), key_name(5000));
        let spans: Vec<(&[u8], Option<&[u8]>)> = vec![(&k250, Some(&k260)), (&k990, None), (&k5000, None)];
        for _ in 0..200 {
            let i = flux_key(1000, &spans, &mut rng).expect("two spans hold keys");
            assert!((250..254).contains(&i) || (990..994).contains(&i), "key {i} is not one of the first keys of a span");
        }
        assert_eq!(flux_key(1000, &[], &mut rng), None, "nothing in flux");
        assert_eq!(flux_key(1000, &[(&k5000, None)], &mut rng), None, "a span past the workload's keys");
        let k1 = key_name(1);
        assert_eq!(flux_key(1000, &[(b"", Some(&k1))], &mut rng), Some(0), "the first range starts at the empty key");
    }

    #[test]
    fn payloads_parse_back_to_their_ids() {
        let a = OpId { client: 3, seq: 17 };
        let b = OpId { client: 12, seq: 1 };
        let content = [payload(a, 16), payload(b, 4)].concat();
        assert_eq!(parse_content(&content).unwrap(), vec![a, b]);
        assert!(parse_content(b"x1.2;").is_err());
    }
}
