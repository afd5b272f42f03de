//! Identifiers and small value types shared by every node.

use std::fmt;

/// A key: an arbitrary byte string, ordered bytewise.
pub type Key = Vec<u8>;

/// Identifier of a range (one row of the partition map). Allocated by the map, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RangeId(pub u64);

/// An ownership epoch: every owner change of a range gets a new, larger one from the map's global
/// counter. Epoch 0 means "never owned".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Epoch(pub u64);

/// A partition server, `server-N` (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId(pub u32);

/// The idempotency id of an append: `(client, seq)`. A retry reuses it, so it applies at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId {
    /// Client number (1-based); the harness's probe client is 0.
    pub client: u32,
    /// Sequence number within the client, starting at 1.
    pub seq: u64,
}

impl fmt::Display for RangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server-{}", self.0)
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}.{}", self.client, self.seq)
    }
}

/// Whether `key` falls in the key range `[start, end)` (`end` `None`: unbounded). The one
/// containment rule of rows, journaled children, lineage sources and the checkers.
pub fn in_range(key: &[u8], start: &[u8], end: Option<&Key>) -> bool {
    key >= start && end.is_none_or(|e| key < e.as_slice())
}

/// The FNV-1a 64-bit offset basis: the hash of nothing.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a (64-bit) of `bytes`, continuing from `h` (start from [`FNV_OFFSET`]): the stream
/// digests' checksum and the workload's content hash. Idea: Fowler, Noll and Vo's hash.
pub fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, b| (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Fold `bytes` into the running hash `h` eight bytes at a time (FxHash's multiply-rotate step),
/// the last word padded and tagged with the length. Each step is a bijection of the state for a
/// given input, so two inputs that differ in one word always end in different states. The
/// stream digests' checksum and the trace hash use it; it is not split-invariant (a record is
/// always folded whole). Issue 13: the byte-at-a-time FNV-1a it replaced in the digests was about
/// a third of `moves.json`'s time.
pub fn mix_words(mut h: u64, bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix_word(h, u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix_word(h, u64::from_le_bytes(last) ^ ((bytes.len() as u64) << 56))
}

/// One step of [`mix_words`]: fold the 8-byte word `w` into the state `h` (FxHash's
/// multiply-rotate step; for a given `h` a bijection of `w`, and for a given `w` of `h`).
pub fn mix_word(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// Render a key for humans: printable ASCII as is, anything else as `\xNN`.
pub fn show_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_graphic() {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    if s.is_empty() {
        s.push_str("\"\"");
    }
    s
}
