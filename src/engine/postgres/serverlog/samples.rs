//! Sample logs for the tests: text-log samples written again as jsonlog and as
//! csvlog, the same messages in each.
//!
//! jsonlog lines carry the keys PostgreSQL 15 writes for these messages, less
//! the session bookkeeping (session_id, line_num, vxid, ...), which the reader
//! ignores; csvlog rows have the 26 columns of PostgreSQL 14 and later, with
//! those bookkeeping columns left empty.

/// Lock-queue outage quoted from a real server log (PostgreSQL, published article), as jsonlog.
pub const QUEUE_JSONLOG: &str = r#"{"timestamp":"2026-10-11 05:20:41.755 UTC","user":"postgres","dbname":"postgres","pid":108,"error_severity":"LOG","message":"process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms","detail":"Process holding the lock: 100. Wait queue: 108, 90, 92, 91, 93.","statement":"ALTER TABLE orders ADD COLUMN note text;","backend_type":"client backend"}
{"timestamp":"2026-10-11 05:20:41.755 UTC","user":"postgres","dbname":"postgres","pid":90,"error_severity":"LOG","message":"process 90 still waiting for AccessShareLock on relation 16398 of database 16384 after 1000.090 ms","detail":"Process holding the lock: 100. Wait queue: 108, 90, 92, 91, 93.","statement":"SELECT count(*), sum(total) FROM orders WHERE customer_id = 471;","cursor_position":34,"backend_type":"client backend"}
"#;

/// [`QUEUE_JSONLOG`] as csvlog.
pub const QUEUE_CSVLOG: &str = r#"2026-10-11 05:20:41.755 UTC,"postgres","postgres",108,"[local]",,,,,,0,LOG,00000,"process 108 still waiting for AccessExclusiveLock on relation 16398 of database 16384 after 1000.137 ms","Process holding the lock: 100. Wait queue: 108, 90, 92, 91, 93.",,,,,"ALTER TABLE orders ADD COLUMN note text;",,,,"client backend",,0
2026-10-11 05:20:41.755 UTC,"postgres","postgres",90,"[local]",,,,,,0,LOG,00000,"process 90 still waiting for AccessShareLock on relation 16398 of database 16384 after 1000.090 ms","Process holding the lock: 100. Wait queue: 108, 90, 92, 91, 93.",,,,,"SELECT count(*), sum(total) FROM orders WHERE customer_id = 471;",34,,,"client backend",,0
"#;

/// Deadlock from the same article, as jsonlog; the detail's lines are joined with `\n`.
pub const DEADLOCK_JSONLOG: &str = r#"{"timestamp":"2026-10-11 05:22:08.876 UTC","user":"postgres","dbname":"postgres","pid":173,"error_severity":"LOG","message":"process 173 still waiting for AccessExclusiveLock on relation 16387 of database 16384 after 1000.198 ms","detail":"Process holding the lock: 174. Wait queue: 173.","statement":"ALTER TABLE customers ADD COLUMN phone text;","backend_type":"client backend"}
{"timestamp":"2026-10-11 05:22:09.881 UTC","user":"postgres","dbname":"postgres","pid":174,"error_severity":"ERROR","state_code":"40P01","message":"deadlock detected","detail":"Process 174 waits for AccessExclusiveLock on relation 16387 of database 16384; blocked by process 173.\nProcess 173 waits for AccessExclusiveLock on relation 16387 of database 16384; blocked by process 174.\nProcess 174: ALTER TABLE customers ADD COLUMN email text;\nProcess 173: ALTER TABLE customers ADD COLUMN phone text;","hint":"See server log for query details.","statement":"ALTER TABLE customers ADD COLUMN email text;","backend_type":"client backend"}
{"timestamp":"2026-10-11 05:22:09.882 UTC","user":"postgres","dbname":"postgres","pid":173,"error_severity":"LOG","message":"process 173 acquired AccessExclusiveLock on relation 16387 of database 16384 after 2006.371 ms","statement":"ALTER TABLE customers ADD COLUMN phone text;","backend_type":"client backend"}
"#;

/// [`DEADLOCK_JSONLOG`] as csvlog.
pub const DEADLOCK_CSVLOG: &str = r#"2026-10-11 05:22:08.876 UTC,"postgres","postgres",173,"[local]",,,,,,0,LOG,00000,"process 173 still waiting for AccessExclusiveLock on relation 16387 of database 16384 after 1000.198 ms","Process holding the lock: 174. Wait queue: 173.",,,,,"ALTER TABLE customers ADD COLUMN phone text;",,,,"client backend",,0
2026-10-11 05:22:09.881 UTC,"postgres","postgres",174,"[local]",,,,,,0,ERROR,40P01,"deadlock detected","Process 174 waits for AccessExclusiveLock on relation 16387 of database 16384; blocked by process 173.
Process 173 waits for AccessExclusiveLock on relation 16387 of database 16384; blocked by process 174.
Process 174: ALTER TABLE customers ADD COLUMN email text;
Process 173: ALTER TABLE customers ADD COLUMN phone text;","See server log for query details.",,,,"ALTER TABLE customers ADD COLUMN email text;",,,,"client backend",,0
2026-10-11 05:22:09.882 UTC,"postgres","postgres",173,"[local]",,,,,,0,LOG,00000,"process 173 acquired AccessExclusiveLock on relation 16387 of database 16384 after 2006.371 ms",,,,,,"ALTER TABLE customers ADD COLUMN phone text;",,,,"client backend",,0
"#;

/// Messages of results/example/server.log (PostgreSQL 15.18, a real stallbench run), as jsonlog.
pub const PG15_JSONLOG: &str = r#"{"timestamp":"2026-11-30 13:42:59.067 UTC","pid":28053,"error_severity":"LOG","message":"starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit","backend_type":"postmaster"}
{"timestamp":"2026-11-30 13:42:59.080 UTC","pid":28053,"error_severity":"LOG","message":"database system is ready to accept connections","backend_type":"postmaster"}
{"timestamp":"2026-11-30 13:43:08.842 UTC","user":"postgres","dbname":"postgres","pid":28067,"error_severity":"LOG","message":"process 28067 still waiting for AccessShareLock on relation 16393 of database 5 after 1000.181 ms","detail":"Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.","statement":"SELECT count(*), sum(total) FROM orders WHERE customer_id = $1","backend_type":"client backend"}
{"timestamp":"2026-11-30 13:43:08.842 UTC","user":"postgres","dbname":"postgres","pid":28073,"error_severity":"LOG","message":"process 28073 still waiting for AccessExclusiveLock on relation 16393 of database 5 after 1000.490 ms","detail":"Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.","statement":"ALTER TABLE orders ADD COLUMN note text","backend_type":"client backend"}
{"timestamp":"2026-11-30 13:43:17.822 UTC","user":"postgres","dbname":"postgres","pid":28067,"error_severity":"LOG","message":"process 28067 still waiting for AccessShareLock on relation 16393 of database 5 after 9980.039 ms","detail":"Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.","statement":"SELECT count(*), sum(total) FROM orders WHERE customer_id = $1","backend_type":"client backend"}
{"timestamp":"2026-11-30 13:43:17.904 UTC","user":"postgres","dbname":"postgres","pid":28073,"error_severity":"LOG","message":"process 28073 acquired AccessExclusiveLock on relation 16393 of database 5 after 10062.582 ms","statement":"ALTER TABLE orders ADD COLUMN note text","backend_type":"client backend"}
{"timestamp":"2026-11-30 13:43:17.910 UTC","user":"postgres","dbname":"postgres","pid":28067,"error_severity":"LOG","message":"process 28067 acquired AccessShareLock on relation 16393 of database 5 after 10068.298 ms","statement":"SELECT count(*), sum(total) FROM orders WHERE customer_id = $1","backend_type":"client backend"}
{"timestamp":"2026-11-30 13:43:32.607 UTC","user":"postgres","dbname":"postgres","pid":28082,"error_severity":"ERROR","state_code":"55P03","message":"canceling statement due to lock timeout","statement":"ALTER TABLE orders ADD COLUMN note text","backend_type":"client backend"}
"#;

/// [`PG15_JSONLOG`] as csvlog.
pub const PG15_CSVLOG: &str = r#"2026-11-30 13:42:59.067 UTC,,,28053,,,,,,,0,LOG,00000,"starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",,,,,,,,,,"postmaster",,0
2026-11-30 13:42:59.080 UTC,,,28053,,,,,,,0,LOG,00000,"database system is ready to accept connections",,,,,,,,,,"postmaster",,0
2026-11-30 13:43:08.842 UTC,"postgres","postgres",28067,"[local]",,,,,,0,LOG,00000,"process 28067 still waiting for AccessShareLock on relation 16393 of database 5 after 1000.181 ms","Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.",,,,,"SELECT count(*), sum(total) FROM orders WHERE customer_id = $1",,,,"client backend",,0
2026-11-30 13:43:08.842 UTC,"postgres","postgres",28073,"[local]",,,,,,0,LOG,00000,"process 28073 still waiting for AccessExclusiveLock on relation 16393 of database 5 after 1000.490 ms","Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.",,,,,"ALTER TABLE orders ADD COLUMN note text",,,,"client backend",,0
2026-11-30 13:43:17.822 UTC,"postgres","postgres",28067,"[local]",,,,,,0,LOG,00000,"process 28067 still waiting for AccessShareLock on relation 16393 of database 5 after 9980.039 ms","Process holding the lock: 28072. Wait queue: 28073, 28067, 28070, 28069, 28068.",,,,,"SELECT count(*), sum(total) FROM orders WHERE customer_id = $1",,,,"client backend",,0
2026-11-30 13:43:17.904 UTC,"postgres","postgres",28073,"[local]",,,,,,0,LOG,00000,"process 28073 acquired AccessExclusiveLock on relation 16393 of database 5 after 10062.582 ms",,,,,,"ALTER TABLE orders ADD COLUMN note text",,,,"client backend",,0
2026-11-30 13:43:17.910 UTC,"postgres","postgres",28067,"[local]",,,,,,0,LOG,00000,"process 28067 acquired AccessShareLock on relation 16393 of database 5 after 10068.298 ms",,,,,,"SELECT count(*), sum(total) FROM orders WHERE customer_id = $1",,,,"client backend",,0
2026-11-30 13:43:32.607 UTC,"postgres","postgres",28082,"[local]",,,,,,0,ERROR,55P03,"canceling statement due to lock timeout",,,,,,"ALTER TABLE orders ADD COLUMN note text",,,,"client backend",,0
"#;
