//! The tests that need the machine to themselves ([`cpus_alone`]): timing
//! bounds in milliseconds, a kill or an interrupt at a planned second, a
//! count of one server's sessions or of its WAL over a try, a 500,000-row
//! index build that must end before its run does. Their helpers stay in the
//! topic's module beside the topic's other tests.
//!
//! They live in this module, named `alone`, because libtest starts a
//! binary's tests in the order of their names: these come first and run one
//! after another before the shared tests fill the threads. Scattered among
//! the shared tests, each waited for its running neighbours to end while the
//! other threads sat idle: 331 s of a 611 s suite ran a single test.
//! Were the order ever to change, the suite would be slower, not wrong.
//!
//! [`cpus_alone`]: crate::common::cpus_alone

mod bundled;
mod connections;
mod faults;
mod interrupt;
mod openloop;
mod pool;
mod sizes;
mod wait_hold;
mod wal;
