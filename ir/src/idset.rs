//! [`IdSet`]: a set of `u64` ids that are mostly counters, such as the flow ids a trace hands
//! out (correlation ids from 1, renumbered ids from 2^32). Those live in bitmaps; any other id
//! in a hash set. A hash set of every id was a tenth of an nsys import's main thread: a million
//! launches make a 32 MB table whose every insert misses the cache.

use rustc_hash::FxHashSet;

/// Ids below this, and in `[RENUMBERED, RENUMBERED + DENSE)`, are bits (2 MiB each at most).
const DENSE: u64 = 1 << 24;
/// Where [`crate::Defs::flow_id`] starts renumbering.
const RENUMBERED: u64 = 1 << 32;

#[derive(Debug, Default, Clone)]
pub struct IdSet {
    low: Bits,
    high: Bits,
    other: FxHashSet<u64>,
}

impl IdSet {
    /// Adds `id`; false when it was already there.
    pub fn insert(&mut self, id: u64) -> bool {
        if id < DENSE {
            self.low.insert(id)
        } else if (RENUMBERED..RENUMBERED + DENSE).contains(&id) {
            self.high.insert(id - RENUMBERED)
        } else {
            self.other.insert(id)
        }
    }

    pub fn contains(&self, id: u64) -> bool {
        if id < DENSE {
            self.low.contains(id)
        } else if (RENUMBERED..RENUMBERED + DENSE).contains(&id) {
            self.high.contains(id - RENUMBERED)
        } else {
            self.other.contains(&id)
        }
    }
}

/// Bits grown to the largest id set so far.
#[derive(Debug, Default, Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn insert(&mut self, i: u64) -> bool {
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if word >= self.0.len() {
            // double, so that ids counting up cost amortised O(1)
            let len = (word + 1).max(self.0.len() * 2).min((DENSE / 64) as usize);
            self.0.resize(len, 0);
        }
        let was = self.0[word] & bit != 0;
        self.0[word] |= bit;
        !was
    }

    fn contains(&self, i: u64) -> bool {
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        self.0.get(word).is_some_and(|w| w & bit != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set answers as a hash set does, around every boundary between its parts.
    #[test]
    fn same_answers_as_a_hash_set() {
        let edges = [
            0,
            1,
            63,
            64,
            65,
            DENSE - 1,
            DENSE,
            DENSE + 1,
            RENUMBERED - 1,
        ];
        let edges = edges
            .into_iter()
            .chain([RENUMBERED, RENUMBERED + 1, RENUMBERED + DENSE - 1])
            .chain([RENUMBERED + DENSE, u64::MAX, 1 << 40]);
        let ids: Vec<u64> = edges.chain((0..5000).map(|i| i * 7919 % 100_003)).collect();
        let (mut set, mut want) = (IdSet::default(), FxHashSet::default());
        for pass in 0..2 {
            for &id in &ids {
                assert_eq!(set.insert(id), want.insert(id), "insert {id} (pass {pass})");
            }
        }
        for id in ids
            .iter()
            .flat_map(|&i| [i, i.wrapping_add(1), i.wrapping_sub(1)])
        {
            assert_eq!(set.contains(id), want.contains(&id), "contains {id}");
        }
    }
}
