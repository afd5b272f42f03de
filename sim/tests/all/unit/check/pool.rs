//! The unit tests of `partmap_sim::check::pool` (formerly in `sim/src/check/pool.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::pool::*;

    /// A buffer given back is handed out again, empty, with its room; one too large is not kept.
    #[test]
    fn pooled_buffers_come_back_empty_with_their_room() {
        let mut a: Pooled<Vec<u128>> = Pooled::take();
        a.extend(0..1000);
        let room = a.capacity();
        drop(a);
        let b: Pooled<Vec<u128>> = Pooled::take();
        assert!(b.is_empty());
        assert_eq!(b.capacity(), room);
        // Two at once: the second is new.
        let c: Pooled<Vec<u128>> = Pooled::take();
        assert_eq!(c.capacity(), 0);
        drop((b, c));
        let mut big: Pooled<Vec<u8>> = Pooled::take();
        big.reserve(MAX_ITEMS + 1);
        drop(big);
        assert_eq!(Pooled::<Vec<u8>>::take().capacity(), 0);
    }
}
