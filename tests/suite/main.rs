//! The integration tests, one binary: every test file is a module, so the
//! tests share one server (`common::shared_server`) and one CPU lock
//! (`common::cpus`), and run four at a time across files
//! (`.cargo/config.toml` sets `RUST_TEST_THREADS`: the scenarios wait on
//! their clocks more than they compute) instead of one file after another.
//! The tests that need the shared tests out of the way are in `alone/`,
//! which runs first (libtest starts tests in the order of their names); the bundled
//! workloads' end-to-end runs (`bundled`, 35-50 s each) and the `check`
//! runs come next, so the longest tests start early and short ones fill the
//! end (last in the order, they left two threads idle for the suite's last
//! 30 s; the TLS outage test, 29 s, is in `managed` rather than `tls` for
//! that reason). `cargo test --test suite outage::` runs one file's
//! tests. `tests/hostile.rs` stays a binary of its own: it installs a bounded
//! global allocator.

mod common;

mod alone;
mod bundled;
mod capture;
mod check;
mod check_fill;
mod check_folders;
mod check_migrations;
mod check_replica;
mod check_rows;
mod check_sizes;
mod check_stop;
mod check_verdict;
mod check_workload;
mod ci;
mod cli;
mod concurrent;
mod connections;
mod ddl_outcomes;
mod download;
mod failures;
mod faults;
mod flags;
mod flaky_script;
mod inplace;
mod inplace_writes;
mod locks;
mod majors;
mod managed;
mod mariadb;
mod openloop;
mod outage;
mod pool;
mod preflight;
mod presets;
mod ranking;
mod readme;
mod reconnect;
mod repeats;
mod replica;
mod reset;
mod restart;
mod retries;
mod scripts;

mod stderr;
mod strategies;
mod truths;
mod variants;
mod wait_hold;
mod wire;
