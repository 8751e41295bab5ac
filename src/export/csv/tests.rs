//! The CSV files' tests: headers, rows, and reading back.

use super::*;
use crate::testing::{SAMPLE_SECONDS, reference_report};

/// The text of the file `name` that `exporter` renders from `report`.
fn rendered(exporter: &dyn Exporter, report: &RunReport, name: &str) -> String {
    let files = exporter.render(report).unwrap();
    let file = files.iter().find(|file| file.name == name).unwrap();
    String::from_utf8(file.bytes.clone()).unwrap()
}

fn write_and_read(exporter: &dyn Exporter, file: &str) -> String {
    rendered(exporter, &reference_report(), file)
}

#[test]
fn timeline_header_is_exact() {
    let text = write_and_read(&TimelineCsv, TIMELINE_CSV);
    assert_eq!(
        text.lines().next().unwrap(),
        "strategy,second,tps,failed,lat_mean_ms,lat_p50_ms,lat_p99_ms,lat_max_ms,\
         lock_waiters,blocker_active,ddl_state,waiting_behind_ddl,oldest_wait_ms,\
         timeouts,skipped,lag_ms,behind_schedule,conn_lost,reconnects,\
         pool_wait_p99_ms,db_p99_ms,pool_timeouts,pool_rejected,in_flight,pool_in_use,\
         replica_lag_s,replica_lag_bytes,replica_replay_waiting,replica_lock_waiters,\
         replica_cancelled,replica_tps,replica_failed,replica_lat_mean_ms,replica_lat_p50_ms,\
         replica_lat_p99_ms,replica_lat_max_ms,repeat,\
         retried,retries,failed_serialization,failed_deadlock,failed_lock_timeout"
    );
}

#[test]
fn failures_csv_is_one_row_per_strategy_second_and_kind() {
    let mut report = reference_report();
    report.strategies[0].failures = vec![FailureCount {
        second: 13,
        kind: FailureKind::from_cell("0A000"),
        message: "cached plan must not change result type".to_string(),
        count: 212,
    }];
    let text = rendered(&FailuresCsv, &report, FAILURES_CSV);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], header_of::<FailureRecord>().join(","));
    assert_eq!(lines[0], "strategy,second,sqlstate,message,count,repeat");
    assert_eq!(
        lines[1..],
        ["naive,13,0A000,cached plan must not change result type,212,1"]
    );
    let read: Vec<FailureRecord> = ::csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        read,
        [FailureRecord::new(
            &report.strategies[0],
            &report.strategies[0].failures[0]
        )]
    );
}

#[test]
fn locks_csv_has_the_exact_header_and_roles_as_blockers() {
    let mut report = reference_report();
    report.strategies[0]
        .locks
        .samples
        .push(crate::metrics::locks::LockSample {
            t_s: 8.2004,
            pid: 108,
            role: "ddl".into(),
            state: "active".into(),
            wait_event_type: "Lock".into(),
            wait_event: "relation".into(),
            lock_mode: "AccessExclusiveLock".into(),
            relation: "orders".into(),
            granted: false,
            blocked_by: vec!["report".into(), "external:4242".into()],
            wait_ms: 2300.04,
            server: crate::choices::Side::Primary,
        });
    let text = rendered(&LocksCsv, &report, LOCKS_CSV);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], header_of::<LockRecord>().join(","));
    assert_eq!(
        lines[0],
        "strategy,t_s,pid,role,state,wait_event_type,wait_event,lock_mode,granted,blocked_by,wait_ms,repeat,server,row_of"
    );
    assert_eq!(
        lines[1],
        "naive,8.200,108,ddl,active,Lock,relation,AccessExclusiveLock,0,report external:4242,2300.0,1,primary,"
    );
    assert_eq!(lines.len(), 2);
}

#[test]
fn a_row_wait_names_its_table_in_row_of_and_reads_back() {
    let mut report = reference_report();
    let row_wait = |pid: u32, wait_event: &str, relation: &str| crate::metrics::locks::LockSample {
        t_s: 4.0,
        pid,
        role: format!("client-{pid}"),
        state: "active".into(),
        wait_event_type: "Lock".into(),
        wait_event: wait_event.into(),
        lock_mode: "ShareLock".into(),
        relation: relation.into(),
        granted: false,
        blocked_by: vec!["writer".into()],
        wait_ms: 120.0,
        server: crate::choices::Side::Primary,
    };
    let samples = &mut report.strategies[0].locks.samples;
    samples.clear();
    samples.push(row_wait(1, "transactionid", "jobs"));
    samples.push(row_wait(2, "tuple", "jobs"));
    // A transaction-id wait whose tuple lock was not seen names no table.
    samples.push(row_wait(3, "transactionid", "transactionid"));
    let text = rendered(&LocksCsv, &report, LOCKS_CSV);
    let row_of: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|line| line.rsplit(',').next().unwrap())
        .collect();
    assert_eq!(row_of, ["jobs", "jobs", ""]);
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let read: Vec<LockRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    let first = read[0].clone().into_sample();
    assert_eq!(first.row_table(), Some("jobs"));
    assert_eq!(
        first.lock_text(),
        "row of jobs (ShareLock on transactionid)"
    );
    assert_eq!(read[2].clone().into_sample().row_table(), None);
}

#[test]
fn the_example_locks_csv_reads_and_writes_byte_for_byte() {
    for example in ["results/example", "results/example-open-loop"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(example)
            .join(LOCKS_CSV);
        let original = std::fs::read_to_string(&path).unwrap();
        let mut reader = ::csv::Reader::from_reader(original.as_bytes());
        let records: Vec<LockRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
        assert!(!records.is_empty(), "{example}");
        assert!(
            records.iter().all(|r| r.server == Side::Primary),
            "{example}"
        );
        let again = csv_file(LOCKS_CSV, records.into_iter()).unwrap();
        assert_eq!(
            String::from_utf8(again.bytes).unwrap(),
            with_new_columns(&original),
            "{example}"
        );
    }
}

/// `locks.csv` as it reads with the `server` and `row_of` columns: a folder
/// written before them reads as sampled on the primary, no row wait named.
fn with_new_columns(original: &str) -> String {
    let header = original.lines().next().unwrap_or_default();
    let mut text = String::new();
    for (index, line) in original.lines().enumerate() {
        text.push_str(line);
        if !header.contains(",server") {
            text.push_str(if index == 0 { ",server" } else { ",primary" });
        }
        if !header.ends_with(",row_of") {
            text.push_str(if index == 0 { ",row_of" } else { "," });
        }
        text.push('\n');
    }
    text
}

#[test]
fn a_replica_sample_reads_back_with_its_server() {
    let mut report = reference_report();
    let mut sample =
        crate::metrics::locks::sample(2950, "startup", "AccessExclusiveLock", false, &["report"]);
    sample.server = Side::Replica;
    report.strategies[0].locks.samples.push(sample.clone());
    let text = rendered(&LocksCsv, &report, LOCKS_CSV);
    let line = text.lines().nth(1).unwrap();
    assert!(line.ends_with(",2300.0,1,replica,"), "{line}");
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let record: LockRecord = reader.deserialize().next().unwrap().unwrap();
    let read = record.into_sample();
    assert_eq!(read.server, Side::Replica);
    assert_eq!(
        (read.role.as_str(), read.blocked_by),
        ("startup", vec!["report".to_string()])
    );
}

#[test]
fn timeline_has_one_row_per_strategy_and_second() {
    let report = reference_report();
    let text = write_and_read(&TimelineCsv, TIMELINE_CSV);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    let expected: usize = report.strategies.iter().map(|s| s.seconds.len()).sum();
    assert_eq!(rows.len(), expected);
    for strategy in &report.strategies {
        for row in &strategy.seconds {
            let prefix = format!("{},{},", strategy.strategy, row.second);
            assert_eq!(
                rows.iter().filter(|line| line.starts_with(&prefix)).count(),
                1,
                "{prefix}"
            );
        }
    }
    // A zero second of naive, blocker on, DDL running; ms with 3 decimals.
    assert!(
        rows.contains(
            &"naive,7,0,0,0.000,0.000,0.000,0.000,100,1,running,0,0.0,0,0,0.000,0,0,0,,,,,,,,,,,,,,,,,,1,0,0,0,0,0"
        ),
        "{text}"
    );
    assert!(rows[0].starts_with("naive,0,3000,0,1.250,1.100,4.000,9.500,0,0,idle"));
}

#[test]
fn open_loop_figures_come_before_the_pool_columns() {
    let report = crate::testing::open_loop_report();
    let text = rendered(&TimelineCsv, &report, TIMELINE_CSV);
    assert!(
        text.contains(
            "\nnaive,7,0,40,0.000,0.000,0.000,0.000,100,1,running,0,0.0,40,3,512.250,600,0,0,,,,,,,,,,,,,,,,,,1,0,0,0,0,0\n"
        ),
        "{text}"
    );
}

#[test]
fn lost_connections_and_reconnects_come_before_the_pool_columns() {
    let mut report = reference_report();
    let row = &mut report.strategies[1].seconds[3];
    row.conn_lost = 4;
    row.reconnects = 3;
    let text = rendered(&TimelineCsv, &report, TIMELINE_CSV);
    let line = text
        .lines()
        .find(|line| line.starts_with("retry,3,"))
        .unwrap();
    assert!(
        line.ends_with(",4,3,,,,,,,,,,,,,,,,,,1,0,0,0,0,0"),
        "{line}"
    );
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let back: Vec<TimelineRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    let (row_back, _) = back[SAMPLE_SECONDS as usize + 3].second_row();
    assert_eq!(&row_back, &report.strategies[1].seconds[3]);
}

#[test]
fn the_retry_columns_come_after_the_repeat_and_read_back() {
    let mut report = reference_report();
    let row = &mut report.strategies[1].seconds[2];
    row.failed = 4;
    row.retried = 9;
    row.retries = 14;
    row.failed_serialization = 2;
    row.failed_deadlock = 1;
    row.failed_lock_timeout = 1;
    let text = rendered(&TimelineCsv, &report, TIMELINE_CSV);
    let line = text
        .lines()
        .find(|line| line.starts_with("retry,2,"))
        .unwrap();
    assert!(line.ends_with(",1,9,14,2,1,1"), "{line}");
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let back: Vec<TimelineRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    let (row_back, _) = back[SAMPLE_SECONDS as usize + 2].second_row();
    assert_eq!(&row_back, &report.strategies[1].seconds[2]);
}

#[test]
fn attempts_header_is_exact_and_figures_are_rounded() {
    let text = write_and_read(&AttemptsCsv, ATTEMPTS_CSV);
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "strategy,attempt,started_s,ended_s,waited_ms,outcome,sqlstate,message,\
         lock_granted_s,lock_wait_ms,lock_held_ms,held_waiting_ms,idle_wait_ms,terminated,\
         wal_bytes,repeat"
    );
    assert_eq!(
        lines.next().unwrap(),
        "naive,1,6.000,15.700,9700.0,ok,,,15.400,9400.0,300.0,0.0,0.0,,,1"
    );
    assert_eq!(
        lines.next().unwrap(),
        "retry,1,6.000,6.500,500.0,lock_timeout,55P03,canceling statement due to lock timeout,\
         ,500.0,0.0,0.0,0.0,,,1"
    );
}

#[test]
fn the_wal_of_a_try_is_in_bytes_before_the_repeat_and_reads_back() {
    let mut report = reference_report();
    report.strategies[0].attempts[0].wal_bytes = Some(25_996_288);
    report.strategies[1].attempts[0].wal_bytes = Some(0);
    let text = rendered(&AttemptsCsv, &report, ATTEMPTS_CSV);
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[1].ends_with(",0.0,,25996288,1"), "{}", rows[1]);
    assert!(rows[2].ends_with(",0.0,,0,1"), "{}", rows[2]);
    assert!(
        rows[3].ends_with(",0.0,,,1"),
        "unknown is empty: {}",
        rows[3]
    );
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let records: Vec<AttemptRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    let back: Vec<Option<u64>> = records.iter().map(|r| r.attempt().wal_bytes).collect();
    let written: Vec<Option<u64>> = (report.strategies.iter())
        .flat_map(|strategy| strategy.attempts.iter().map(|attempt| attempt.wal_bytes))
        .collect();
    assert_eq!(back, written);
    assert_eq!(back[..3], [Some(25_996_288), Some(0), None]);
}

#[test]
fn terminated_sessions_are_one_cell_that_reads_back() {
    let mut report = reference_report();
    let terminated = vec![
        TerminatedSession {
            role: "report".to_string(),
            pid: 4242,
        },
        TerminatedSession {
            role: "external:4250".to_string(),
            pid: 4250,
        },
    ];
    report.strategies[1].attempts[0].terminated = terminated.clone();
    let text = rendered(&AttemptsCsv, &report, ATTEMPTS_CSV);
    let row = text.lines().nth(2).unwrap();
    assert!(
        row.ends_with(",report (pid 4242); external:4250 (pid 4250),,1"),
        "{row}"
    );
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let records: Vec<AttemptRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    assert_eq!(records[1].attempt().terminated, terminated);
    assert!(records[0].attempt().terminated.is_empty());
}

#[test]
fn a_message_with_a_comma_and_a_quote_round_trips() {
    let mut report = reference_report();
    let message = "relation \"items\", it says: \"busy\"";
    report.strategies[1].attempts[0].message = message.to_string();
    let text = rendered(&AttemptsCsv, &report, ATTEMPTS_CSV);
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<::csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 6);
    assert_eq!(&rows[1][7], message);
    assert_eq!(rows[1].len(), 16);
}

#[test]
fn the_pool_columns_come_before_the_repeat_and_read_back() {
    let mut report = reference_report();
    report.strategies[0].seconds[6].pool = Some(PoolRow {
        wait_p99_ms: 1003.007,
        db_p99_ms: 2.5,
        timeouts: 158,
        rejected: 2,
        in_flight: 193,
        in_use: 4,
    });
    let text = rendered(&TimelineCsv, &report, TIMELINE_CSV);
    let line = text
        .lines()
        .find(|line| line.starts_with("naive,6,"))
        .unwrap();
    assert!(
        line.ends_with(",0,0,1003.007,2.500,158,2,193,4,,,,,,,,,,,,1,0,0,0,0,0"),
        "{line}"
    );
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let back: Vec<TimelineRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    let (row_back, _) = back[6].second_row();
    assert_eq!(&row_back, &report.strategies[0].seconds[6]);
}

#[test]
fn the_replica_columns_come_before_the_repeat_and_read_back() {
    let mut report = reference_report();
    report.strategies[0].seconds[8].replica = Some(ReplicaRow {
        lag_s: 2.2004,
        lag_bytes: 640,
        replay_waiting: true,
        lock_waiters: 4,
        cancelled: 1,
    });
    let text = rendered(&TimelineCsv, &report, TIMELINE_CSV);
    let line = text
        .lines()
        .find(|line| line.starts_with("naive,8,"))
        .unwrap();
    assert!(
        line.ends_with(",,,,,,,2.200,640,1,4,1,,,,,,,1,0,0,0,0,0"),
        "{line}"
    );
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let back: Vec<TimelineRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    let (row_back, _) = back[8].second_row();
    let expected = ReplicaRow {
        lag_s: 2.2,
        ..report.strategies[0].seconds[8].replica.unwrap()
    };
    assert_eq!(row_back.replica, Some(expected));
}

#[test]
fn the_replicas_clients_come_after_the_standby_and_read_back() {
    let mut report = reference_report();
    let load = ReplicaLoadRow {
        tps: 812,
        failed: 1,
        lat_mean_ms: 4.9,
        lat_p50_ms: 4.5,
        lat_p99_ms: 9.25,
        lat_max_ms: 10_043.0,
    };
    report.strategies[0].seconds[8].replica_load = Some(load);
    let text = rendered(&TimelineCsv, &report, TIMELINE_CSV);
    let line = text
        .lines()
        .find(|line| line.starts_with("naive,8,"))
        .unwrap();
    assert!(
        line.ends_with(",,,,,812,1,4.900,4.500,9.250,10043.000,1,0,0,0,0,0"),
        "{line}"
    );
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let back: Vec<TimelineRecord> = reader.deserialize().map(|r| r.unwrap()).collect();
    assert_eq!(back[8].second_row().0.replica_load, Some(load));
    assert_eq!(back[7].second_row().0.replica_load, None);
}

#[test]
fn summary_header_is_the_serde_field_names() {
    let text = write_and_read(&SummaryCsv, SUMMARY_CSV);
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "strategy,transactions,failed,mean_tps,zero_tps_seconds,longest_stall_s,\
         lat_p50_ms,lat_p99_ms,lat_p999_ms,lat_max_ms,ddl_attempts,ddl_total_ms,\
         ddl_outcome,ddl_last_wait_ms,max_lock_waiters,lost_connections,blocker_outcome,invalid_indexes,\
         timeouts,skipped,max_behind_schedule,conn_lost,reconnects,reconnect_failures,\
         max_disconnected_ms,interrupted,blocker_started_s,blocker_ended_s,unfinished,\
         unfinished_oldest_ms,pool_timeouts,pool_timeouts_worst,pool_rejected,pool_wait_p99_ms,\
         pool_wait_p99_worst_ms,db_p99_ms,in_flight_max,pool_in_use_max,pool_dry_at_s,\
         worst_second_tps,worst_second_p99_ms,rows_written,repeat,baseline_tps,worst_second_share,\
         ok_p50_ms,ok_p99_ms,ok_max_ms,invalid,replica_max_lag_s,replica_replay_waiting_s,\
         replica_cancelled,replica_zero_tps_seconds,replica_longest_stall_s,replica_failed,\
         replica_lat_max_ms,wal_bytes,retried,retries,failed_serialization,failed_deadlock,\
         failed_lock_timeout"
    );
    assert!(lines.next().unwrap().starts_with("naive,"));
    assert!(lines.next().unwrap().starts_with("retry,"));
    assert!(lines.next().is_none());
}
