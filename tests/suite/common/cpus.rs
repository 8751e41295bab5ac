//! Who has the machine's CPUs: the suite's one lock, held by every test that
//! runs a scenario, in one of three ways.
//!
//! - [`cpus_shared`]: beside the binary's other shared tests (libtest runs
//!   several at once): the scenario's shape does not depend on the CPUs.
//! - [`cpus_quiet`]: beside other quiet tests only. A bound in wall time
//!   (an exit within seconds of a signal, a schedule's lag) that a light
//!   neighbour cannot move, but four busy ones can.
//! - [`cpus_alone`]: no other test of the binary runs meanwhile: a figure
//!   that another test's work changes (one server's WAL or sessions, two
//!   rewrites' times compared, an index build that must end in time).
//!
//! A test waiting to go quiet or alone keeps new shared tests out, so the
//! `alone/` tests, which libtest starts first, run before the shared ones
//! fill the threads. std's `RwLock` has two of the three ways; this is a
//! mutex and a condition variable.

use std::cell::Cell;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// How a test holds the CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Shared,
    Quiet,
    Alone,
}

/// The tests holding the CPUs now, and those waiting to hold them apart
/// (quiet or alone).
struct Holders {
    shared: usize,
    quiet: usize,
    alone: bool,
    waiting_apart: usize,
}

impl Holders {
    /// Whether a test may start holding the CPUs `way` now.
    fn admits(&self, way: Way) -> bool {
        match way {
            Way::Shared => !self.alone && self.quiet == 0 && self.waiting_apart == 0,
            Way::Quiet => !self.alone && self.shared == 0,
            Way::Alone => !self.alone && self.shared == 0 && self.quiet == 0,
        }
    }

    fn count(&mut self, way: Way, holding: bool) {
        match way {
            Way::Shared if holding => self.shared += 1,
            Way::Shared => self.shared -= 1,
            Way::Quiet if holding => self.quiet += 1,
            Way::Quiet => self.quiet -= 1,
            Way::Alone => self.alone = holding,
        }
    }
}

static HOLDERS: Mutex<Holders> = Mutex::new(Holders {
    shared: 0,
    quiet: 0,
    alone: false,
    waiting_apart: 0,
});
static RELEASED: Condvar = Condvar::new();

thread_local! {
    /// Whether this thread holds the CPUs already (in any way).
    static HOLDS_CPUS: Cell<bool> = const { Cell::new(false) };
}

/// The test's hold on the CPUs; released on drop.
pub struct CpuHold {
    way: Way,
}

impl Drop for CpuHold {
    fn drop(&mut self) {
        let mut holders = lock_holders();
        holders.count(self.way, false);
        drop(holders);
        RELEASED.notify_all();
        HOLDS_CPUS.with(|holds| holds.set(false));
    }
}

fn lock_holders() -> MutexGuard<'static, Holders> {
    HOLDERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits until the CPUs may be held `way`, and holds them.
fn hold(way: Way) -> CpuHold {
    mark_held();
    let mut holders = lock_holders();
    let apart = way != Way::Shared;
    if apart {
        holders.waiting_apart += 1;
    }
    while !holders.admits(way) {
        holders = RELEASED
            .wait(holders)
            .unwrap_or_else(PoisonError::into_inner);
    }
    if apart {
        holders.waiting_apart -= 1;
    }
    holders.count(way, true);
    CpuHold { way }
}

/// Marks this thread as holding the CPUs. A second hold on one thread waits
/// for itself whenever a quiet or alone test queues between the two: it
/// fails at once here, naming the fix, instead of hanging one run in fifty.
fn mark_held() {
    HOLDS_CPUS.with(|holds| {
        assert!(
            !holds.replace(true),
            "this test takes the CPU lock twice (cpus_shared/cpus_quiet/cpus_alone): \
             take it once per test path, in the test or in its helper, not both"
        );
    });
}

/// For a test that may run beside the binary's other tests (libtest runs
/// several at once): its scenario's shape does not depend on having the CPUs.
pub fn cpus_shared() -> CpuHold {
    hold(Way::Shared)
}

/// For a test whose bound in wall time (an exit within seconds of a signal,
/// a schedule's lag) holds beside the other quiet tests of `alone/`, but
/// not beside the shared ones: only quiet tests run meanwhile.
pub fn cpus_quiet() -> CpuHold {
    hold(Way::Quiet)
}

/// For a test whose figures another test's work would change (one server's
/// WAL or sessions, times compared, a build that must end in time): no other
/// test of the binary runs meanwhile.
pub fn cpus_alone() -> CpuHold {
    hold(Way::Alone)
}

#[test]
fn taking_the_cpu_lock_twice_on_one_thread_fails_at_once() {
    let _cpus = cpus_shared();
    let again = std::panic::catch_unwind(|| drop(cpus_shared())).unwrap_err();
    let message = again
        .downcast_ref::<&str>()
        .expect("a panic with a message");
    assert!(message.contains("takes the CPU lock twice"), "{message}");
}

#[test]
fn each_way_admits_only_its_neighbours() {
    let holders = |shared, quiet, alone, waiting_apart| Holders {
        shared,
        quiet,
        alone,
        waiting_apart,
    };
    // Shared beside shared, unless a quiet or alone test waits.
    assert!(holders(3, 0, false, 0).admits(Way::Shared));
    assert!(!holders(3, 0, false, 1).admits(Way::Shared));
    assert!(!holders(0, 1, false, 0).admits(Way::Shared));
    // Quiet beside quiet only.
    assert!(holders(0, 2, false, 1).admits(Way::Quiet));
    assert!(!holders(1, 0, false, 0).admits(Way::Quiet));
    assert!(!holders(0, 0, true, 0).admits(Way::Quiet));
    // Alone beside nothing.
    assert!(holders(0, 0, false, 3).admits(Way::Alone));
    assert!(!holders(0, 1, false, 0).admits(Way::Alone));
    assert!(!holders(1, 0, false, 0).admits(Way::Alone));
    assert!(!holders(0, 0, true, 0).admits(Way::Alone));
}
