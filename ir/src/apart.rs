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
//! [`spawn_scoped`] gives the two threads disjoint halves of the CPUs the calling thread may
//! run on: it keeps the half holding its CPU, the thread it starts moves to the other half
//! first thing. Each gives every CPU back when its [`Held`]
//! is dropped or, checked batch by batch, once [`HOLD`] has passed since the split: by then the
//! kernel sees the threads' load and spreads them itself, and it balances a longer job's
//! other threads (sorter, exporter, writer) better than fixed halves did (Chrome 2M → JSON
//! held for the whole import: 5% more time).
//!
//! Nothing changes where the thread may use a single CPU, where the kernel refuses, or when
//! [`set_enabled`] turned it off (`TRACEX_APART=0`).

use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Builder, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use sys::Cpus;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// How long the threads keep to their halves.
pub const HOLD: Duration = Duration::from_millis(50);

/// Turns the splitting on or off for the whole process (on by default).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Starts `f` on a thread of `scope` (as `builder` makes it) and splits the CPUs the calling
/// thread may use between the two: the calling thread keeps the half of the CPU it runs on
/// (the [`Held`] returned), the new one moves to the other half before `f` runs (the [`Held`]
/// `f` gets). The calling thread is held only once the new one is started, as a thread starts
/// with the CPUs of the one that started it.
pub fn spawn_scoped<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    builder: Builder,
    f: impl FnOnce(Held) -> T + Send + 'scope,
) -> io::Result<(ScopedJoinHandle<'scope, T>, Held)> {
    let split = split();
    let theirs = split.map(|s| Hold {
        half: s.theirs,
        ..s.mine
    });
    let handle = builder.spawn_scoped(scope, move || f(Held::to(theirs)))?;
    Ok((handle, Held::to(split.map(|s| s.mine))))
}

/// A thread's half of the CPUs, what it had, and until when it keeps to the half.
#[derive(Clone, Copy)]
struct Hold {
    half: Cpus,
    all: Cpus,
    until: Instant,
}

/// The two halves of a split, the calling thread's and the started thread's.
#[derive(Clone, Copy)]
struct Split {
    mine: Hold,
    theirs: Cpus,
}

/// Splits the CPUs the calling thread may use in two: the half of the CPU it runs on, and the
/// other. None where it may use one CPU, or the splitting is off.
fn split() -> Option<Split> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    let all = sys::mine()?;
    let (mine, theirs) = halves(sys::list(&all).into_iter(), sys::current())?;
    Some(Split {
        mine: Hold {
            half: sys::set_of(&mine),
            all,
            until: Instant::now() + HOLD,
        },
        theirs: sys::set_of(&theirs),
    })
}

/// A thread held to a half of its CPUs. Not `Send`: the CPUs are the thread's own, and are
/// given back on it.
pub struct Held {
    /// Every CPU the thread had, and when to give them back.
    back: Option<(Cpus, Instant)>,
    _thread: PhantomData<*const ()>,
}

impl Held {
    /// Holds the calling thread to `hold`'s half.
    fn to(hold: Option<Hold>) -> Held {
        // a refusal leaves the thread where it is, which is only slower
        let back = hold.and_then(|h| sys::pin(&h.half).then_some((h.all, h.until)));
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

    /// The CPUs of `cpus`, ascending.
    pub fn list(cpus: &Cpus) -> Vec<usize> {
        (0..CpuSet::MAX_CPU).filter(|&c| cpus.is_set(c)).collect()
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
    pub fn list(_: &Cpus) -> Vec<usize> {
        Vec::new()
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
            let split = split();
            let mut guard = Held::to(split.map(|s| s.mine));
            let during = sched_getaffinity(None).unwrap();
            if before.count() >= 2 {
                let theirs = split.expect("two CPUs or more").theirs;
                assert_eq!(during.count() + theirs.count(), before.count());
                for c in 0..rustix::thread::CpuSet::MAX_CPU {
                    assert!(!(during.is_set(c) && theirs.is_set(c)), "cpu {c} in both");
                }
            } else {
                assert!(during == before && split.is_none());
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
            let (here, there, theirs, their_cpu) = std::thread::scope(|scope| {
                let (started, _held) = spawn_scoped(scope, Builder::new(), |_held| {
                    (sched_getaffinity(None).unwrap(), sys::current())
                })
                .unwrap();
                let (here, there) = (sched_getaffinity(None).unwrap(), sys::current());
                let (theirs, their_cpu) = started.join().unwrap();
                (here, there, theirs, their_cpu)
            });
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
