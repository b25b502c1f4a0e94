//! Strata's bit mixers: streaming 64-bit FNV-1a ([`Fnv1a`]) and splitmix64 ([`splitmix64`],
//! its output function [`mix`], and its increment [`GAMMA`]).
//!
//! Every Strata crate that hashes bytes or derives ids from counters uses these, so a hash or
//! an id computed in one crate is computed the same way in every other, in every process and
//! build.
//!
//! Invariant: the outputs never change. World hashes, saved GUIDs and persistent ids, shuffle
//! orders and script random numbers are computed from them and pinned by determinism tests and
//! save files, so a change here is a change of save format. The unit tests pin published test
//! vectors of both functions.
//!
//! The crate depends on nothing, so any layer may use it without pulling in another: the arena
//! mixes GUIDs and persistent ids with it, the scheduler its shuffle ranks, and a crate that
//! hashes bytes or draws seeded numbers takes them from here rather than keeping a copy.
//!
//! # Example
//!
//! ```
//! use strata_mix::{Fnv1a, mix, splitmix64};
//!
//! // FNV-1a over bytes, fed in any number of pieces.
//! let mut hash = Fnv1a::new();
//! hash.bytes(b"foo");
//! hash.bytes(b"bar");
//! assert_eq!(hash.finish(), 0x8594_4171_f739_67e8);
//! assert_eq!(Fnv1a::hash(b"foobar"), hash.finish());
//!
//! // splitmix64: the first output of a generator seeded with 0.
//! assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
//! assert_eq!(mix(0), 0);
//! ```

#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

/// splitmix64's increment: 2^64 divided by the golden ratio, rounded to odd. Multiplying by it
/// spreads consecutive counters over the whole range (Fibonacci hashing), and splitmix64 adds it
/// to its state before each output.
pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// FNV-1a's 64-bit offset basis: the state of a hash that has seen no bytes.
pub const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a's 64-bit prime.
pub const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// A streaming 64-bit FNV-1a hash.
///
/// Each byte is xored into the state, which is then multiplied by [`FNV_PRIME`]. Feeding the
/// same bytes in any split gives the same hash. [`Fnv1a::u64`] and [`Fnv1a::text`] are
/// framings over [`Fnv1a::bytes`] (little-endian, and length-prefixed), so two streams hash
/// alike exactly when they feed the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv1a {
    /// A hash that has seen nothing, at the standard offset basis.
    #[must_use]
    pub const fn new() -> Self {
        Self(FNV_OFFSET_BASIS)
    }

    /// A hash starting from `basis` instead of the standard offset basis: a seeded hash, or
    /// one continuing from the [`Fnv1a::finish`] of an earlier one.
    #[must_use]
    pub const fn with_basis(basis: u64) -> Self {
        Self(basis)
    }

    /// The FNV-1a hash of `bytes`, from the standard offset basis.
    #[must_use]
    pub const fn hash(bytes: &[u8]) -> u64 {
        let mut hash = Self::new();
        let mut i = 0;
        while i < bytes.len() {
            hash.byte(bytes[i]);
            i += 1;
        }
        hash.finish()
    }

    /// Feeds one byte.
    #[inline]
    pub const fn byte(&mut self, byte: u8) {
        self.0 = (self.0 ^ byte as u64).wrapping_mul(FNV_PRIME);
    }

    /// Feeds bytes in order.
    #[inline]
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
        }
    }

    /// Feeds a `u64` as its eight little-endian bytes.
    #[inline]
    pub fn u64(&mut self, value: u64) {
        self.bytes(&value.to_le_bytes());
    }

    /// Feeds a text as its length in bytes ([`Fnv1a::u64`]) followed by its UTF-8 bytes, so
    /// consecutive texts cannot run into each other (`"ab", "c"` differs from `"a", "bc"`).
    /// Use [`Fnv1a::bytes`] for a text's bytes alone.
    #[inline]
    pub fn text(&mut self, text: &str) {
        self.u64(text.len() as u64);
        self.bytes(text.as_bytes());
    }

    /// The hash of everything fed so far. Feeding may continue afterwards.
    #[must_use]
    #[inline]
    pub const fn finish(&self) -> u64 {
        self.0
    }
}

/// splitmix64's output function: a bijective mixer (xor-shifts and multiplications by odd
/// constants) that turns structured input, such as a counter, into well-spread bits. `mix(0)`
/// is 0.
#[must_use]
#[inline]
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One splitmix64 step from `state`: the output of a splitmix64 generator whose state is
/// `state`, which is [`mix`] of `state + GAMMA`. A generator advances its state by [`GAMMA`]
/// per output; `splitmix64(state)` is then also a good one-shot mixer of any 64-bit value.
#[must_use]
#[inline]
pub const fn splitmix64(state: u64) -> u64 {
    mix(state.wrapping_add(GAMMA))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a 64 test vectors from the FNV reference (`test_fnv.c`).
    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(Fnv1a::hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv1a::hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv1a::hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn fnv1a_streams_in_any_split() {
        let mut split = Fnv1a::new();
        split.bytes(b"fo");
        split.byte(b'o');
        split.bytes(b"");
        split.bytes(b"bar");
        assert_eq!(split.finish(), Fnv1a::hash(b"foobar"));
        assert_eq!(Fnv1a::default(), Fnv1a::new());
    }

    #[test]
    fn fnv1a_framings_are_their_bytes() {
        let mut framed = Fnv1a::new();
        framed.u64(0x0102_0304_0506_0708);
        framed.text("hi");
        let mut raw = Fnv1a::new();
        raw.bytes(&[8, 7, 6, 5, 4, 3, 2, 1]);
        raw.bytes(&[2, 0, 0, 0, 0, 0, 0, 0]);
        raw.bytes(b"hi");
        assert_eq!(framed.finish(), raw.finish());

        let mut ab_c = Fnv1a::new();
        ab_c.text("ab");
        ab_c.text("c");
        let mut a_bc = Fnv1a::new();
        a_bc.text("a");
        a_bc.text("bc");
        assert_ne!(ab_c.finish(), a_bc.finish());
    }

    #[test]
    fn fnv1a_with_basis_continues_a_hash() {
        let mut first = Fnv1a::new();
        first.bytes(b"foo");
        let mut rest = Fnv1a::with_basis(first.finish());
        rest.bytes(b"bar");
        assert_eq!(rest.finish(), Fnv1a::hash(b"foobar"));
        // A zero basis is a plain xor-multiply fold.
        let mut zero = Fnv1a::with_basis(0);
        zero.bytes(b"a");
        assert_eq!(zero.finish(), 0x61 * FNV_PRIME);
    }

    /// The first outputs of Vigna's reference `splitmix64.c` seeded with 0.
    #[test]
    fn splitmix64_matches_the_reference_generator() {
        let mut state = 0_u64;
        let outputs: Vec<u64> = (0..3)
            .map(|_| {
                let out = splitmix64(state);
                state = state.wrapping_add(GAMMA);
                out
            })
            .collect();
        assert_eq!(
            outputs,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f
            ]
        );
    }

    #[test]
    fn mix_is_the_output_function() {
        assert_eq!(mix(0), 0);
        assert_eq!(mix(GAMMA), splitmix64(0));
        let mut seen: Vec<u64> = (0..10_000).map(mix).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10_000, "mix is injective on a sample");
    }
}
