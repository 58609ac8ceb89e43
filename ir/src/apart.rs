//! Keeps the two busy threads of a short pipeline on different CPUs for its first
//! milliseconds.
//!
//! A reader thread that fills batches while the importing thread takes them only helps when
//! both run at once. Linux normally starts a new thread on an idle CPU and wakes a thread on
//! the CPU it last ran on, but some kernels pack threads onto as few CPUs as they can while
//! their load looks light (the virtual machines these figures come from boot with such a
//! scheduler option, so that an idle virtual CPU goes back to the host), and a new thread's
//! load looks light for its first tens of milliseconds. There a new thread was queued behind
//! the thread that started it about three times in four, and ran only when that one blocked
//! or its time slice ended, 1-3 ms later (measured with a C program); a reader and its
//! importing thread, woken by each other's hand-offs, then took turns on one CPU, and the
//! 20k-launch GPU merge took 30-33 ms instead of 26.
//!
//! [`split`] gives the two threads disjoint halves of the CPUs the calling thread may run on:
//! it keeps the half holding its CPU ([`Mine::hold`]), the thread it started moves to the
//! other half first thing ([`Other::enter`]). Each gives every CPU back when its [`Held`]
//! is dropped or, checked batch by batch, once [`HOLD`] has passed since the split: by then the
//! kernel sees the threads' load and spreads them itself, and it balances a longer job's
//! other threads (sorter, exporter, writer) better than fixed halves did (Chrome 2M → JSON
//! held for the whole import: 5% more time).
//!
//! Nothing changes where the thread may use a single CPU, where the kernel refuses, or when
//! [`set_enabled`] turned it off (`TRACEX_APART=0`).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sys::Cpus;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// How long the threads keep to their halves.
pub const HOLD: Duration = Duration::from_millis(50);

/// Turns the splitting on or off for the whole process (on by default).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Splits the CPUs the calling thread may use in two: the half of the CPU it runs on, for it
/// ([`Mine::hold`]), and the other half, for the thread it starts next ([`Other::enter`]).
/// Hold yours after starting that thread: a thread starts with the CPUs of the one that
/// started it.
pub fn split() -> (Mine, Other) {
    let until = Instant::now() + HOLD;
    let halves = ENABLED
        .load(Ordering::Relaxed)
        .then(sys::allowed)
        .flatten()
        .and_then(|cpus| halves(cpus.into_iter(), sys::current()));
    match halves {
        Some((mine, theirs)) => (
            Mine(Some((sys::set_of(&mine), until))),
            Other(Some((sys::set_of(&theirs), until))),
        ),
        None => (Mine(None), Other(None)),
    }
}

/// The half of the CPUs the calling thread keeps, and until when.
pub struct Mine(Option<(Cpus, Instant)>);

/// The half of the CPUs the started thread moves to, and until when.
pub struct Other(Option<(Cpus, Instant)>);

impl Mine {
    /// Holds the calling thread to its half.
    pub fn hold(self) -> Held {
        Held::to(self.0)
    }
}

impl Other {
    /// Moves the calling thread to its half; call first thing on the started thread.
    pub fn enter(self) -> Held {
        Held::to(self.0)
    }
}

/// A thread held to a half of its CPUs. Not `Send`: the CPUs are the thread's own, and are
/// given back on it.
pub struct Held {
    /// Every CPU the thread had, and when to give them back.
    back: Option<(Cpus, Instant)>,
    _thread: PhantomData<*const ()>,
}

impl Held {
    fn to(half: Option<(Cpus, Instant)>) -> Held {
        let back = half.and_then(|(half, until)| {
            let all = sys::mine()?;
            // a refusal leaves the thread where it is, which is only slower
            sys::pin(&half).then_some((all, until))
        });
        Held {
            back,
            _thread: PhantomData,
        }
    }

    /// Gives the CPUs back once [`HOLD`] has passed since the split; call now and then.
    pub fn check(&mut self) {
        if self
            .back
            .as_ref()
            .is_some_and(|(_, until)| Instant::now() >= *until)
        {
            self.give_back();
        }
    }

    fn give_back(&mut self) {
        if let Some((all, _)) = self.back.take() {
            sys::pin(&all);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

    pub type Cpus = CpuSet;

    /// The calling thread's CPUs.
    pub fn mine() -> Option<Cpus> {
        sched_getaffinity(None).ok()
    }

    /// The calling thread's CPUs, ascending.
    pub fn allowed() -> Option<Vec<usize>> {
        let all = mine()?;
        Some((0..CpuSet::MAX_CPU).filter(|&c| all.is_set(c)).collect())
    }

    /// The CPU the calling thread runs on (0 if unknown). glibc's `sched_getcpu`, not
    /// rustix's: rustix finds the vDSO through the auxiliary vector itself, and read out of
    /// bounds there under valgrind.
    pub fn current() -> usize {
        // SAFETY: `sched_getcpu` takes no arguments, touches no memory of the caller and
        // returns a CPU number or -1.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).unwrap_or(0)
    }

    pub fn set_of(cpus: &[usize]) -> Cpus {
        let mut s = CpuSet::new();
        cpus.iter().for_each(|&c| s.set(c));
        s
    }

    /// Keeps the calling thread to `cpus` (moving it there now); false if the kernel refused.
    pub fn pin(cpus: &Cpus) -> bool {
        sched_setaffinity(None, cpus).is_ok()
    }
}

/// Elsewhere the threads stay where the system puts them.
#[cfg(not(target_os = "linux"))]
mod sys {
    pub type Cpus = ();
    pub fn mine() -> Option<Cpus> {
        None
    }
    pub fn allowed() -> Option<Vec<usize>> {
        None
    }
    pub fn current() -> usize {
        0
    }
    pub fn set_of(_: &[usize]) -> Cpus {}
    pub fn pin(_: &Cpus) -> bool {
        false
    }
}

/// `cpus` (ascending) in two halves, the first holding `current` (or the first CPU, if
/// `current` is not among them); none with fewer than two CPUs.
fn halves(cpus: impl Iterator<Item = usize>, current: usize) -> Option<(Vec<usize>, Vec<usize>)> {
    let cpus: Vec<usize> = cpus.collect();
    if cpus.len() < 2 {
        return None;
    }
    let at = cpus.iter().position(|&c| c == current).unwrap_or(0);
    // every other CPU, the half of `current` first
    let (mine, theirs) = (0..cpus.len()).partition(|&i| i % 2 == at % 2);
    let pick = |places: Vec<usize>| places.into_iter().map(|i| cpus[i]).collect();
    Some((pick(mine), pick(theirs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_are_disjoint_and_hold_the_current_cpu() {
        assert_eq!(halves([3].into_iter(), 3), None);
        assert_eq!(halves([0, 1].into_iter(), 1), Some((vec![1], vec![0])));
        assert_eq!(
            halves([0, 2, 5, 7, 9].into_iter(), 5),
            Some((vec![0, 5, 9], vec![2, 7]))
        );
        // a current CPU outside the set (moved since): the first CPU's half
        assert_eq!(halves([4, 6].into_iter(), 1), Some((vec![4], vec![6])));
    }

    /// The guard holds this thread to its half and gives every CPU back once the time is up;
    /// the other half is the rest.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_guard_gives_the_cpus_back() {
        std::thread::spawn(|| {
            use rustix::thread::sched_getaffinity;
            let before = sched_getaffinity(None).unwrap();
            let (mine, other) = split();
            let mut guard = mine.hold();
            let during = sched_getaffinity(None).unwrap();
            if before.count() >= 2 {
                let theirs = other.0.expect("two CPUs or more").0;
                assert_eq!(during.count() + theirs.count(), before.count());
                for c in 0..rustix::thread::CpuSet::MAX_CPU {
                    assert!(!(during.is_set(c) && theirs.is_set(c)), "cpu {c} in both");
                }
            } else {
                assert!(during == before && other.0.is_none());
            }
            // held until the time is up
            guard.check();
            assert!(sched_getaffinity(None).unwrap() == during);
            std::thread::sleep(HOLD);
            guard.check();
            assert!(sched_getaffinity(None).unwrap() == before);
            drop(guard);
            assert!(sched_getaffinity(None).unwrap() == before);
        })
        .join()
        .unwrap();
    }

    /// Once held, the two threads run on CPUs of their own halves, whatever the kernel
    /// would have chosen.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_threads_run_apart() {
        use rustix::thread::sched_getaffinity;
        std::thread::spawn(|| {
            if sched_getaffinity(None).unwrap().count() < 2 {
                return;
            }
            let (mine, other) = split();
            let started = std::thread::spawn(move || {
                let _held = other.enter();
                (sched_getaffinity(None).unwrap(), sys::current())
            });
            let _held = mine.hold();
            let (here, there) = (sched_getaffinity(None).unwrap(), sys::current());
            let (theirs, their_cpu) = started.join().unwrap();
            assert!(
                here.is_set(there) && !theirs.is_set(there),
                "this thread on {there}"
            );
            assert!(
                theirs.is_set(their_cpu) && !here.is_set(their_cpu),
                "the other on {their_cpu}"
            );
        })
        .join()
        .unwrap();
    }
}
