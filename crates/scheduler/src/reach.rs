//! Reachability within one stage: a square bit matrix over the stage's scheduled systems.
//!
//! Invariant: rows and columns are local positions (index in the stage's order), and bit
//! `(i, j)` is set iff a path of declared edges leads from position `i` to position `j`. Since
//! every edge goes forward in the order, only bits with `i < j` are ever set.

/// Reachability of one stage's scheduled systems.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reach {
    n: usize,
    words_per_row: usize,
    bits: Vec<u64>,
}

impl Reach {
    /// The closure of the edges of `n` systems given in compressed rows: the successors of
    /// local position `i` are `targets[offsets[i]..offsets[i + 1]]`, and every successor comes
    /// later than its predecessor.
    pub(crate) fn from_rows(n: usize, offsets: &[usize], targets: &[usize]) -> Reach {
        let words_per_row = n.div_ceil(64);
        let mut bits = vec![0_u64; n * words_per_row];
        // Later rows are complete before earlier ones read them, because edges point forward.
        for from in (0..n).rev() {
            for &to in &targets[offsets[from]..offsets[from + 1]] {
                debug_assert!(to > from, "edges point forward in the order");
                let (head, tail) = bits.split_at_mut(to * words_per_row);
                let row = &mut head[from * words_per_row..(from + 1) * words_per_row];
                let reached = &tail[..words_per_row];
                for (word, more) in row.iter_mut().zip(reached) {
                    *word |= more;
                }
                row[to / 64] |= 1 << (to % 64);
            }
        }
        Reach {
            n,
            words_per_row,
            bits,
        }
    }

    /// Whether a path leads from local position `from` to local position `to`.
    pub(crate) fn reaches(&self, from: usize, to: usize) -> bool {
        if from >= self.n || to >= self.n {
            return false;
        }
        self.bits[from * self.words_per_row + to / 64] & (1 << (to % 64)) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closure_is_transitive_and_forward_only() {
        // 0 -> 1 -> 2, 3 alone, 0 -> 70 across a word boundary.
        let mut offsets = vec![0, 2, 3];
        offsets.resize(72, 3);
        let reach = Reach::from_rows(71, &offsets, &[1, 70, 2]);
        assert!(reach.reaches(0, 1));
        assert!(reach.reaches(0, 2));
        assert!(reach.reaches(0, 70));
        assert!(reach.reaches(1, 2));
        assert!(!reach.reaches(2, 0));
        assert!(!reach.reaches(1, 70));
        assert!(!reach.reaches(3, 4));
        assert!(!reach.reaches(0, 71));
    }
}
