//! The records of the structured server log, read with serde.
//!
//! jsonlog is one JSON object per line; csvlog is one CSV row per message,
//! without a header row, its columns in an order the PostgreSQL documentation
//! fixes ("Using CSV-Format Log Output"). Both are read into the same
//! [`LogRecord`], so the lock facts do not care which one the server wrote.
//! A strategy's part of the log starts at a byte offset taken while the server
//! runs, so its first or last record may be cut short: records that do not
//! parse are skipped.

use std::path::PathBuf;

use serde::Deserialize;

/// Which structured log the throwaway server writes next to its readable `server.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `log_destination` jsonlog (PostgreSQL 15 and later): one JSON object per line.
    JsonLog,
    /// `log_destination` csvlog (older servers): one CSV row per message, no header row.
    CsvLog,
}

/// Where the throwaway server writes its structured log, and in which format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructuredLog {
    /// The file the logging collector writes, e.g. `/tmp/stallbench-Ab12/server.json`.
    pub path: PathBuf,
    /// How to read it.
    pub format: LogFormat,
}

/// The csvlog columns in file order, as documented for PostgreSQL 14 and later.
/// PostgreSQL 13 ends after `backend_type`, 12 and older after `application_name`;
/// a row is read by these names, so a shorter row still gives the columns it has.
const CSVLOG_COLUMNS: [&str; 26] = [
    "log_time",
    "user_name",
    "database_name",
    "process_id",
    "connection_from",
    "session_id",
    "session_line_num",
    "command_tag",
    "session_start_time",
    "virtual_transaction_id",
    "transaction_id",
    "error_severity",
    "sql_state_code",
    "message",
    "detail",
    "hint",
    "internal_query",
    "internal_query_pos",
    "context",
    "query",
    "query_pos",
    "location",
    "application_name",
    "backend_type",
    "leader_pid",
    "query_id",
];

/// One message of the structured log, with the fields the lock facts need
/// (named as jsonlog names them, with the csvlog column as an alias).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct LogRecord {
    /// When it was logged, as the server wrote it, e.g. `2026-10-11 05:20:41.755 UTC`.
    #[serde(rename = "timestamp", alias = "log_time")]
    pub logged_at: String,
    /// Pid of the backend that logged it.
    #[serde(alias = "process_id")]
    pub pid: u32,
    /// `LOG`, `ERROR`, ...
    #[serde(rename = "error_severity")]
    pub severity: LogSeverity,
    /// SQLSTATE, e.g. `40P01`; jsonlog leaves it out for `00000`.
    #[serde(rename = "state_code", alias = "sql_state_code", default)]
    pub sql_state: String,
    /// The primary message, without the `at character N` of the text log.
    pub message: String,
    /// The detail written to the server log; jsonlog leaves it out when there is none.
    #[serde(default)]
    pub detail: String,
}

/// The severities the lock facts look at; every other one is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub(super) enum LogSeverity {
    Log,
    Error,
    #[serde(other)]
    Other,
}

/// The records of a structured log's text, in log order.
pub(super) fn read_records(format: LogFormat, text: &str) -> Vec<LogRecord> {
    match format {
        LogFormat::JsonLog => read_jsonlog(text),
        LogFormat::CsvLog => read_csvlog(text),
    }
}

fn read_jsonlog(text: &str) -> Vec<LogRecord> {
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn read_csvlog(text: &str) -> Vec<LogRecord> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    reader
        .records()
        .filter_map(|row| {
            let row = row.ok()?;
            // Names for the columns this row has: a row shorter than its names does not deserialize.
            let names = &CSVLOG_COLUMNS[..row.len().min(CSVLOG_COLUMNS.len())];
            row.deserialize(Some(&csv::StringRecord::from(names.to_vec())))
                .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::samples::*;
    use super::*;

    #[test]
    fn jsonlog_fields() {
        let records = read_records(LogFormat::JsonLog, DEADLOCK_JSONLOG);
        assert_eq!(records.len(), 3);
        assert_eq!(
            records[1],
            LogRecord {
                logged_at: "2026-10-11 05:22:09.881 UTC".to_string(),
                pid: 174,
                severity: LogSeverity::Error,
                sql_state: "40P01".to_string(),
                message: "deadlock detected".to_string(),
                detail: "Process 174 waits for AccessExclusiveLock on relation 16387 of database \
                         16384; blocked by process 173.\n\
                         Process 173 waits for AccessExclusiveLock on relation 16387 of database \
                         16384; blocked by process 174.\n\
                         Process 174: ALTER TABLE customers ADD COLUMN email text;\n\
                         Process 173: ALTER TABLE customers ADD COLUMN phone text;"
                    .to_string(),
            }
        );
        // A LOG record has no state_code and the acquired line no detail.
        assert_eq!(records[2].severity, LogSeverity::Log);
        assert_eq!(records[2].sql_state, "");
        assert_eq!(records[2].detail, "");
    }

    #[test]
    fn csvlog_samples_hold_the_same_records_as_jsonlog() {
        for (csvlog, jsonlog) in [
            (QUEUE_CSVLOG, QUEUE_JSONLOG),
            (DEADLOCK_CSVLOG, DEADLOCK_JSONLOG),
            (PG15_CSVLOG, PG15_JSONLOG),
        ] {
            let from_csv = read_records(LogFormat::CsvLog, csvlog);
            let mut from_json = read_records(LogFormat::JsonLog, jsonlog);
            // csvlog writes 00000 where jsonlog leaves the state code out.
            for record in &mut from_json {
                if record.sql_state.is_empty() {
                    record.sql_state = "00000".to_string();
                }
            }
            assert!(!from_csv.is_empty());
            assert_eq!(from_csv, from_json);
        }
    }

    #[test]
    fn csvlog_rows_of_older_servers_have_fewer_columns() {
        // PostgreSQL 12 (23 columns, up to application_name) and 13 (24, up to backend_type).
        let text = "\
2026-10-11 05:22:09.881 UTC,\"postgres\",\"postgres\",174,\"[local]\",6b0e3d1e.ae,3,\"ALTER TABLE\",2026-10-11 05:22:01 UTC,3/6,727,ERROR,40P01,\"deadlock detected\",\"Process 174 waits for ShareLock on transaction 900; blocked by process 173.\",\"See server log for query details.\",,,,\"ALTER TABLE t ADD COLUMN c int\",,,\"psql\"
2026-10-11 05:22:09.882 UTC,\"postgres\",\"postgres\",173,\"[local]\",6b0e3d1d.ad,2,\"ALTER TABLE waiting\",2026-10-11 05:22:00 UTC,4/2,726,LOG,00000,\"process 173 acquired AccessExclusiveLock on relation 16387 of database 16384 after 2006.371 ms\",,,,,,\"ALTER TABLE t ADD COLUMN d int\",,,\"psql\",\"client backend\"
";
        let records = read_records(LogFormat::CsvLog, text);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].pid, 174);
        assert_eq!(records[0].sql_state, "40P01");
        assert_eq!(
            records[0].detail,
            "Process 174 waits for ShareLock on transaction 900; blocked by process 173."
        );
        assert_eq!(records[1].severity, LogSeverity::Log);
        assert_eq!(records[1].logged_at, "2026-10-11 05:22:09.882 UTC");
        assert_eq!(records[1].detail, "");
    }

    #[test]
    fn severities_other_than_log_and_error() {
        let text = r#"{"timestamp":"t","pid":1,"error_severity":"FATAL","message":"m"}
{"timestamp":"t","pid":1,"error_severity":"log","message":"m"}
"#;
        let records = read_records(LogFormat::JsonLog, text);
        assert_eq!(records.len(), 2);
        assert!(
            records
                .iter()
                .all(|record| record.severity == LogSeverity::Other)
        );
    }

    #[test]
    fn records_cut_short_or_malformed_are_skipped() {
        let line = PG15_JSONLOG.lines().nth(2).unwrap();
        let text = format!(
            "{}\n{line}\n{}\n\
             {{\"timestamp\":\"t\",\"pid\":\"abc\",\"error_severity\":\"LOG\",\"message\":\"m\"}}\n\
             {{\"timestamp\":\"t\",\"error_severity\":\"LOG\",\"message\":\"m\"}}\n",
            &line[40..],
            &line[..40]
        );
        let records = read_records(LogFormat::JsonLog, &text);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].pid, 28067);

        let row = PG15_CSVLOG.lines().nth(2).unwrap();
        let text = format!("hello world\n{row}\n,,,not-a-pid,,,,,,,0,LOG,00000,\"m\"\n");
        let records = read_records(LogFormat::CsvLog, &text);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].pid, 28067);
    }
}
