//! The process runs under Linux's `SCHED_BATCH` policy.
//!
//! A conversion is a pipeline of threads that hand batches to one another through bounded
//! channels (row readers → merge → export → writer). Under the default policy a thread woken
//! by a hand-off preempts the one that woke it: on a 2-core machine, nsys 1M → JSON had about
//! 8000 involuntary context switches, most of them the merge thread preempted right after it
//! took a batch and so woke the reader waiting to send the next one. `SCHED_BATCH` is the
//! same scheduler without that wake-up preemption (and mildly disfavoured against interactive
//! tasks, as a batch job should be): 550 involuntary switches, and 5-8% less wall time on the
//! nsys conversions; no change elsewhere (`docs/architecture.md`).
//!
//! `TRACEX_SCHED_BATCH=0` keeps the policy the process was started with. A process started
//! under another policy than the default (real-time, idle) keeps it too.
//!
//! The threads of a short pipeline also start on different CPUs ([`tracex_ir::apart`]);
//! `TRACEX_APART=0` leaves their placement to the kernel.

/// Switches the calling thread, and so every thread it starts later, to `SCHED_BATCH`, and sets
/// whether pipelines split the CPUs ([`tracex_ir::apart`]); call
/// first thing in `main`. Failure (a kernel or sandbox that refuses it) changes nothing.
pub fn init() {
    if wanted(std::env::var_os("TRACEX_SCHED_BATCH").as_deref()) {
        to_batch();
    }
    tracex_ir::apart::set_enabled(wanted(std::env::var_os("TRACEX_APART").as_deref()));
}

/// Whether a setting (`TRACEX_SCHED_BATCH`, `TRACEX_APART`: its value, if set) is on: anything
/// but `0`.
fn wanted(setting: Option<&std::ffi::OsStr>) -> bool {
    setting.is_none_or(|v| v != "0")
}

/// The calling thread to `SCHED_BATCH`, when it runs under the default policy.
#[cfg(target_os = "linux")]
fn to_batch() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `sched_getscheduler` and `sched_setscheduler` are plain syscalls; pid 0 is the
    // calling thread, and `param` is a valid `sched_param` that outlives the call (the kernel
    // only reads it). Neither touches memory of this process otherwise.
    unsafe {
        if libc::sched_getscheduler(0) == libc::SCHED_OTHER {
            libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn to_batch() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_zero_keeps_the_policy() {
        assert!(wanted(None));
        assert!(wanted(Some("1".as_ref())));
        assert!(!wanted(Some("0".as_ref())));
    }

    /// The thread that switches, and a thread it starts afterwards, run under `SCHED_BATCH`
    /// (on a thread of the test's own, as the policy is per thread).
    #[cfg(target_os = "linux")]
    #[test]
    fn threads_started_afterwards_inherit_batch() {
        let policies = std::thread::spawn(|| {
            // SAFETY: a plain syscall on the calling thread (pid 0)
            let get = || unsafe { libc::sched_getscheduler(0) };
            let before = get();
            to_batch();
            let child = std::thread::spawn(get).join().unwrap();
            (before, get(), child)
        })
        .join()
        .unwrap();
        // a test run started under another policy keeps it
        let want = match policies.0 {
            libc::SCHED_OTHER => libc::SCHED_BATCH,
            other => other,
        };
        assert_eq!((policies.1, policies.2), (want, want));
    }
}
