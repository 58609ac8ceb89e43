//! Turns the slices of one location into Enter now and Leave later.
//!
//! The exporter receives slices in start order with every track properly nested
//! (`nest::OverlapRouter`, invariant N1), so the slices still open on a location form a stack:
//! the innermost ends first. A stack is the pending-leave heap keyed by (end, innermost first)
//! for nested input, in O(1). Before each later event on the location the leaves due by then are
//! written, so at equal timestamps Leaves come before Enters, innermost first; open slices
//! (`dur: None`) stay until the end of the trace. Memory: nesting depth per location.

/// A slice whose Leave is still to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// End time; `i64::MAX` for a slice that never ended.
    pub end: i64,
    pub region: u32,
}

impl Pending {
    pub fn is_open(&self) -> bool {
        self.end == i64::MAX
    }
}

/// A slice that ends after the slice it started in: the input was not nested.
#[derive(Debug, PartialEq, Eq)]
pub struct NotNested {
    pub end: i64,
    pub enclosing_end: i64,
}

#[derive(Debug, Default)]
pub struct OpenSlices {
    stack: Vec<Pending>,
}

impl OpenSlices {
    /// The innermost slice if it ends at or before `t`.
    pub fn pop_due(&mut self, t: i64) -> Option<Pending> {
        if self.stack.last().is_some_and(|p| p.end <= t) {
            self.stack.pop()
        } else {
            None
        }
    }

    /// The innermost slice, whatever its end (at the end of the trace).
    pub fn pop(&mut self) -> Option<Pending> {
        self.stack.pop()
    }

    /// Opens a slice that starts after every due Leave was popped.
    pub fn push(&mut self, p: Pending) -> Result<(), NotNested> {
        if let Some(top) = self.stack.last() {
            if p.end > top.end {
                return Err(NotNested {
                    end: p.end,
                    enclosing_end: top.end,
                });
            }
        }
        self.stack.push(p);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays (start, end) slices in start order (longer first at equal starts) and returns
    /// the Enter/Leave sequence the exporter writes.
    fn split(slices: &[(i64, i64)]) -> Vec<(char, i64, u32)> {
        let mut open = OpenSlices::default();
        let mut out = Vec::new();
        for (i, &(s, e)) in slices.iter().enumerate() {
            while let Some(p) = open.pop_due(s) {
                out.push(('L', p.end, p.region));
            }
            out.push(('E', s, i as u32));
            open.push(Pending {
                end: e,
                region: i as u32,
            })
            .unwrap();
        }
        while let Some(p) = open.pop() {
            out.push(('L', p.end, p.region));
        }
        out
    }

    #[test]
    fn equal_timestamps_leave_first_innermost_first() {
        // parent [0,10] with child [0,10] and grandchild [0,0]; then a sibling starting at 10
        let seq = split(&[(0, 10), (0, 10), (0, 0), (10, 12)]);
        assert_eq!(
            seq,
            vec![
                ('E', 0, 0),
                ('E', 0, 1),
                ('E', 0, 2),
                ('L', 0, 2),
                ('L', 10, 1),
                ('L', 10, 0),
                ('E', 10, 3),
                ('L', 12, 3)
            ]
        );
        // timestamps never go backwards
        assert!(seq.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn open_slices_close_last_and_overlap_is_refused() {
        let mut open = OpenSlices::default();
        open.push(Pending {
            end: i64::MAX,
            region: 0,
        })
        .unwrap();
        open.push(Pending { end: 5, region: 1 }).unwrap();
        assert_eq!(open.pop_due(100).map(|p| p.region), Some(1));
        assert_eq!(open.pop_due(100), None);
        assert!(open.pop().unwrap().is_open());
        open.push(Pending { end: 5, region: 0 }).unwrap();
        assert_eq!(
            open.push(Pending { end: 6, region: 1 }),
            Err(NotNested {
                end: 6,
                enclosing_end: 5
            })
        );
    }
}
