//! The unit tests of `partmap_sim::run` (formerly in `sim/src/run/mod.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

pub mod nemesis;

mod tests {
    use partmap_sim::run::*;
    use partmap_sim::check::no_lost_append::Content;
    use partmap::ids::{Epoch, OpId, RangeId};
    use partmap::msg::Record;
    use partmap::store::StoreRecord;

    fn append(stream: u64, seq: u64, key: &str, bytes: &str) -> StoreRecord {
        let record = Record { epoch: Epoch(1), id: OpId { client: 1, seq }, key: key.as_bytes().to_vec(), bytes: bytes.as_bytes().to_vec().into(), bulk: 0 };
        StoreRecord::Append { stream: RangeId(stream), record }
    }

    /// The stored view: streams in id order, each in append order (as the store recovers
    /// them), whatever the order the log interleaves them in; fences carry no content.
    #[test]
    fn run_final_content_is_every_stream_in_order_as_the_store_recovers_it() {
        let disk = partmap::seam::Disk::new(1);
        let log = vec![
            append(2, 1, "k1", "c;"),
            append(1, 2, "k1", "a;"),
            StoreRecord::Fence { stream: RangeId(1), epoch: Epoch(3) },
            append(1, 3, "k2", "b;"),
            append(1, 4, "k1", "d;"),
            append(2, 5, "k3", ""),
        ];
        disk.preload(log.clone());
        let content = final_content(&disk);
        let expected: Content = [(b"k1".to_vec(), b"a;d;c;".to_vec()), (b"k2".to_vec(), b"b;".to_vec()), (b"k3".to_vec(), Vec::new())].into_iter().collect();
        assert_eq!(content, expected);
        let mut recovered = Content::new();
        for stream in partmap::store::Streams::recover(&log).streams.values() {
            for rec in &stream.records {
                recovered.entry(rec.key.clone()).or_default().extend_from_slice(&rec.bytes);
            }
        }
        assert_eq!(content, recovered, "the same as replaying the store's recovery");
    }
}
