//! Reading fuzz input as a stream of small choices.
//!
//! Invariant: every read succeeds; past the end of the input, reads give zero, so any input,
//! however short, decodes to some sequence of choices.

/// A cursor over fuzz input.
pub(crate) struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data, at: 0 }
    }

    /// Whether input is left.
    pub(crate) fn more(&self) -> bool {
        self.at < self.data.len()
    }

    /// The next byte (zero past the end).
    pub(crate) fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// A number below `n` (zero for `n == 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let v = (usize::from(self.byte()) << 8) | usize::from(self.byte());
        v % n
    }

    /// A small signed number.
    pub(crate) fn small(&mut self) -> f64 {
        f64::from(self.byte() as i8)
    }
}
