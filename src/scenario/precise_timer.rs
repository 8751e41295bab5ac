//! The open-loop wake-up: a timer that fires within microseconds of an
//! arrival's scheduled instant.
//!
//! Tokio's timer wheel has millisecond resolution and rounds a deadline up,
//! so a worker that sleeps until an arrival wakes up to a millisecond late;
//! since open-loop latency counts from the scheduled instant, that lateness
//! would be reported as the database's slowness. Instead each
//! open-loop worker owns one Linux `timerfd` on `CLOCK_MONOTONIC` (the clock
//! of `std::time::Instant`), registered with the load runtime's epoll
//! reactor: the kernel's high-resolution timer makes the descriptor readable
//! on time and epoll wakes the load thread, with no busy loop between
//! arrivals. The thread's timer slack (`PR_SET_TIMERSLACK`, 50 us by default)
//! is left alone: it widens sleeps and poll timeouts, not timerfd expirations,
//! and setting it to 1 ns changed nothing measurable here (the wake-up's
//! lateness is the scheduler's: tens of microseconds on an idle machine).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// One worker's high-resolution timer; made once per worker, re-armed for
/// every arrival. Must be made and used on a runtime with I/O enabled.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    /// Creates the timerfd and registers it with the current runtime's reactor.
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: timerfd_create takes no pointers; a non-negative result is a
        // new descriptor that nothing else owns.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a valid descriptor owned by nobody else (above);
        // the OwnedFd keeps it open, unchanged, until the AsyncFd drops it.
        let fd = unsafe {
            let owned = OwnedFd::from_raw_fd(raw);
            AsyncFd::register_with_interest(owned, Interest::READABLE)?
        };
        Ok(PreciseTimer { fd })
    }

    /// Waits until `at`; returns at once when `at` has passed.
    pub async fn wait_until(&mut self, at: Instant) -> io::Result<()> {
        let wait = at.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            // A zero expiration would disarm the timer instead of firing it.
            return Ok(());
        }
        let expiration = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: wait.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: the descriptor is a timerfd we own; `expiration` outlives the
        // call; a null old value is allowed. Re-arming also resets the count
        // of expirations nobody read.
        let armed = unsafe {
            libc::timerfd_settime(self.fd.as_raw_fd(), 0, &expiration, std::ptr::null_mut())
        };
        if armed < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            let mut ready = self.fd.readable().await?;
            // A readiness left over from an earlier expiration reads as
            // WouldBlock: try_io clears it and the loop waits again.
            if let Ok(read) = ready.try_io(|fd| read_expirations(fd.get_ref())) {
                return read;
            }
        }
    }
}

/// Reads (and so resets) the count of expirations of a non-blocking timerfd.
fn read_expirations(fd: &OwnedFd) -> io::Result<()> {
    let mut expirations: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live u64, as timerfd requires.
    let read = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut expirations as *mut u64).cast(),
            std::mem::size_of::<u64>(),
        )
    };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn wakes_up_at_the_instant_and_not_before() {
        let mut timer = PreciseTimer::new().unwrap();
        for wait_us in [300, 1_500, 50] {
            let at = Instant::now() + Duration::from_micros(wait_us);
            timer.wait_until(at).await.unwrap();
            assert!(
                Instant::now() >= at,
                "woke before the instant ({wait_us} us)"
            );
        }
        // An instant in the past returns at once.
        timer.wait_until(Instant::now()).await.unwrap();
    }
}
