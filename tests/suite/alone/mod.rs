//! The tests that need the shared tests out of the way: with no other test
//! at all ([`cpus_alone`]: a count of one server's sessions or of its WAL over
//! a try, two rewrites' times compared, a 500,000-row index build that must
//! end before its run does), or beside each other only ([`cpus_quiet`]:
//! bounds in milliseconds on a light load, a kill or an interrupt at a
//! planned second, each on a server or a database of its own). Their helpers
//! stay in the topic's module beside the topic's other tests.
//!
//! They live in this module, named `alone`, because libtest starts a
//! binary's tests in the order of their names: these come first, the quiet
//! ones together, the others one at a time, before the shared tests fill
//! the threads. Scattered among the shared tests, each waited for its
//! running neighbours to end while the other threads sat idle: 331 s of a
//! 611 s suite ran a single test. Were the order ever to change, the suite
//! would be slower, not wrong.
//!
//! [`cpus_alone`]: crate::common::cpus_alone
//! [`cpus_quiet`]: crate::common::cpus_quiet

mod bundled;
mod connections;
mod faults;
mod interrupt;
mod openloop;
mod pool;
mod sizes;
mod wait_hold;
mod wal;
