//! The end of a run's tasks, each in its own way: the load's workers get
//! their last transaction's grace and are cancelled after it, the pool's
//! last requests give up, the report is cancelled if it outlives the load,
//! and the DDL gets its own grace or, interrupted, a confirmed rollback
//! (`ddl::abort`). `tasks::wind_down` calls them in the order that loses
//! nothing.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::error::SqlState;
use tokio_postgres::{CancelToken, NoTls};
use tokio_util::sync::CancellationToken;

use super::ddl;
use super::ddl::abort::{DdlStopped, DdlWatch, stop_ddl};
use super::load;
use super::pool::PoolOutcome;
use super::reopen::SharedCancel;
use super::tasks::WorkerTask;
use crate::engine::postgres::errors;
use crate::error::Error;
use crate::metrics::{AttemptOutcome, DdlAttempt, Recorder};
use crate::scenario::blocker::BlockerResult;
use crate::scenario::{Interrupt, RunNotes};

/// Finishes the load's workers and, with a load on both servers, the
/// replica's beside them (at once, so both get the same grace); returns how
/// each side's ended, the replica's with its recorder's task.
pub(super) async fn finish_both_loads(
    workers: Vec<WorkerTask>,
    replica_load: Option<(JoinHandle<Recorder>, Vec<WorkerTask>)>,
    last_transaction: Duration,
    notes: &mut RunNotes,
) -> (WorkersEnded, Option<(JoinHandle<Recorder>, WorkersEnded)>) {
    let Some((recorder, replica_workers)) = replica_load else {
        return (finish_workers(workers, last_transaction, notes).await, None);
    };
    let mut replica_notes = RunNotes::default();
    let (ended, replica_ended) = tokio::join!(
        finish_workers(workers, last_transaction, notes),
        finish_workers(replica_workers, last_transaction, &mut replica_notes),
    );
    notes.warnings.extend(
        (replica_notes.warnings.into_iter()).map(|warning| format!("on the replica: {warning}")),
    );
    (ended, Some((recorder, replica_ended)))
}

/// The replica's clients' recorder once every hand-over is in; their
/// failures join the run's by kind, and their unfinished transactions get a warning.
pub(super) async fn finish_replica_recorder(
    task: JoinHandle<Recorder>,
    (strategy_name, workers, last_transaction): (&str, &WorkersEnded, Duration),
    notes: &mut RunNotes,
) -> Result<Recorder, Error> {
    let recorder = task
        .await
        .map_err(|err| Error::runtime(format!("the replica's recorder task: {err}")))?;
    for (kind, count) in recorder.failed_by_kind() {
        match notes
            .failed_by_kind
            .iter_mut()
            .find(|(known, _)| *known == kind)
        {
            Some((_, total)) => *total += count,
            None => notes.failed_by_kind.push((kind, count)),
        }
    }
    let whose = "on the replica, ";
    warn_of_unfinished(strategy_name, whose, workers, last_transaction, notes);
    Ok(recorder)
}

/// Warns of the transactions still in flight at the end of the load that
/// were cancelled (`whose`: `""` for the load's, `on the replica, ` for the
/// replica's clients beside it).
pub(super) fn warn_of_unfinished(
    strategy_name: &str,
    whose: &str,
    workers: &WorkersEnded,
    last_transaction: Duration,
    notes: &mut RunNotes,
) {
    if let Some(oldest_us) = workers.unfinished_ages_us.iter().max() {
        notes.warnings.push(format!(
            "{strategy_name}: {whose}{} transactions were still in flight {} ms after the end of \
             the load and were cancelled; they count as unfinished, their age (up to {:.1} s) as \
             a lower bound of their latency",
            workers.unfinished_ages_us.len(),
            last_transaction.as_millis(),
            *oldest_us as f64 / 1e6
        ));
    }
}

/// How the load workers ended, added up.
pub(super) struct WorkersEnded {
    /// Workers that lost their connection during the run.
    pub lost_connections: u32,
    /// The age of each transaction in flight at the end that did not complete, in microseconds.
    pub unfinished_ages_us: Vec<u64>,
}

/// Gives workers `last_transaction` to finish their last transaction, cancels
/// those still in one (stuck in a lock queue), and adds up how they ended.
pub(super) async fn finish_workers(
    tasks: Vec<WorkerTask>,
    last_transaction: Duration,
    notes: &mut RunNotes,
) -> WorkersEnded {
    tokio::time::sleep(last_transaction).await;
    for (task, cancel) in &tasks {
        if !task.is_finished() {
            let _ = cancel.cancel_query().await;
        }
    }
    let mut ended = WorkersEnded {
        lost_connections: 0,
        unfinished_ages_us: Vec::new(),
    };
    for (mut task, _) in tasks {
        let outcome = match tokio::time::timeout(Duration::from_secs(3), &mut task).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(err)) => load::WorkerOutcome {
                lost_connection: Some(format!("worker task failed: {err}")),
                unfinished_ages_us: Vec::new(),
            },
            Err(_) => {
                task.abort();
                load::WorkerOutcome::default()
            }
        };
        ended.unfinished_ages_us.extend(outcome.unfinished_ages_us);
        if let Some(message) = outcome.lost_connection {
            ended.lost_connections += 1;
            notes
                .warnings
                .push(format!("a worker lost its connection: {message}"));
        }
    }
    ended
}

/// Makes the application's last requests give up (the grace for them has
/// passed in [`finish_workers`]), waits for the application to end and adds its
/// unfinished requests to `workers`; returns when the pool ran dry, `None`
/// inside when it never did, `None` outside for a run without the pool.
pub(super) async fn finish_pool(
    task: Option<(JoinHandle<PoolOutcome>, CancellationToken)>,
    workers: &mut WorkersEnded,
    notes: &mut RunNotes,
) -> Option<Option<f64>> {
    let (task, abandon) = task?;
    abandon.cancel();
    let outcome = task.await.unwrap_or_else(|err| PoolOutcome {
        last_loss: Some(format!("the application pool's task failed: {err}")),
        ..PoolOutcome::default()
    });
    workers
        .unfinished_ages_us
        .extend(&outcome.unfinished_ages_us);
    if let Some(message) = outcome.last_loss {
        workers.lost_connections += outcome.lost as u32;
        notes.warnings.push(format!(
            "{} connection(s) of the pool broke during the run and left it; the pool opens \
             a new one when a request needs it (last: {message})",
            outcome.lost
        ));
    }
    Some(outcome.dry_at_s)
}

/// Cancels the report if it is still running, and waits for its result.
pub(super) async fn finish_blocker(
    task: Option<(JoinHandle<BlockerResult>, CancelToken)>,
    strategy_name: &str,
    notes: &mut RunNotes,
) -> Result<Option<BlockerResult>, Error> {
    let Some((task, cancel)) = task else {
        return Ok(None);
    };
    if !task.is_finished() {
        notes.warnings.push(format!(
            "{strategy_name}: the report was still running when the load ended; it was cancelled"
        ));
        let _ = cancel.cancel_query(NoTls).await;
    }
    let result = task
        .await
        .map_err(|err| Error::runtime(format!("blocker task: {err}")))?;
    if let Some(error) = &result.error {
        notes
            .warnings
            .push(format!("{strategy_name}: the report failed: {error}"));
    }
    Ok(Some(result))
}

/// Gives a running DDL attempt [`ddl::GRACE_AFTER_RUN`] to end after the
/// load, then cancels it; interrupted (before or during that grace), stops it
/// as [`stop_ddl`] does, confirming its rollback. Returns every attempt.
pub(super) async fn finish_ddl(
    task: Option<(JoinHandle<Vec<DdlAttempt>>, SharedCancel)>,
    watch: &DdlWatch,
    interrupt: &Interrupt,
    strategy_name: &str,
    notes: &mut RunNotes,
) -> Result<Vec<DdlAttempt>, Error> {
    let Some((mut task, cancel)) = task else {
        return Ok(Vec::new());
    };
    if interrupt.reason().is_none() {
        tokio::select! {
            joined = tokio::time::timeout(ddl::GRACE_AFTER_RUN, &mut task) => {
                if let Ok(joined) = joined {
                    return joined.map_err(|err| Error::runtime(format!("DDL task: {err}")));
                }
            }
            _ = interrupt.fired() => {}
        }
    }
    let joined = if interrupt.reason().is_some() {
        let (joined, stopped) = stop_ddl(task, &cancel, watch).await;
        match stopped {
            DdlStopped::RolledBack | DdlStopped::ServerGone => {}
            // Said even for an interrupted run: a step that was committing may have committed.
            DdlStopped::Terminated => stderrln!(
                "warning: {strategy_name}: the DDL did not end its transaction when cancelled; \
                 its session was terminated (a step that was committing may have committed: \
                 look at the table)"
            ),
            // Said even for an interrupted run, whose other warnings are left out.
            DdlStopped::Unconfirmed(why) => stderrln!(
                "warning: {strategy_name}: the rollback of the DDL could not be confirmed \
                 ({why}); look at the table before relying on it"
            ),
        }
        joined
    } else {
        let _ = cancel.cancel_query().await;
        let mut joined = task.await;
        if let Ok(attempts) = &mut joined {
            notes
                .warnings
                .push(cut_off_by_the_end(strategy_name, attempts));
        }
        joined
    };
    joined.map_err(|err| Error::runtime(format!("DDL task: {err}")))
}

/// Marks the try that stallbench cancelled, still running [`ddl::GRACE_AFTER_RUN`]
/// after the load ended, as `cut_off` (its 57014 is stallbench's, not the
/// migration's), and says so; a try that ended before the cancel came is
/// kept, with what it means for the figures.
fn cut_off_by_the_end(strategy_name: &str, attempts: &mut [DdlAttempt]) -> String {
    let grace_s = ddl::GRACE_AFTER_RUN.as_secs();
    let Some(last) = attempts.last_mut() else {
        return format!("{strategy_name}: the DDL did not start before the load ended");
    };
    let cancelled = last.outcome == AttemptOutcome::Error
        && last
            .sqlstate
            .as_ref()
            .is_some_and(|kind| errors::is_state(kind, &SqlState::QUERY_CANCELED));
    if cancelled {
        last.outcome = AttemptOutcome::CutOff;
        return format!(
            "{strategy_name}: the DDL was still running {grace_s} s after the load ended; \
             stallbench cancelled it (try {}: cut_off), so its stall is longer than measured: \
             lengthen --duration to see it end",
            last.attempt
        );
    }
    format!(
        "{strategy_name}: the DDL ended at {:.1} s, more than {grace_s} s after the load did, \
         so the load saw only part of it: lengthen --duration",
        last.ended_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::failures::FailureKind;
    use crate::metrics::test_attempt;

    #[test]
    fn a_try_stallbench_cancelled_at_the_end_is_cut_off_and_one_that_ended_is_kept() {
        let mut cancelled = vec![test_attempt(1, 1.5, 11.5, AttemptOutcome::Error)];
        cancelled[0].sqlstate = Some(FailureKind::from_cell("57014"));
        let said = cut_off_by_the_end("naive", &mut cancelled);
        assert_eq!(cancelled[0].outcome, AttemptOutcome::CutOff);
        assert!(
            said.starts_with(
                "naive: the DDL was still running 5 s after the load ended; \
                 stallbench cancelled it (try 1: cut_off)"
            ),
            "{said}"
        );

        let mut ended = vec![test_attempt(4, 1.5, 11.57, AttemptOutcome::Ok)];
        let said = cut_off_by_the_end("retry", &mut ended);
        assert_eq!(ended[0].outcome, AttemptOutcome::Ok);
        assert_eq!(
            said,
            "retry: the DDL ended at 11.6 s, more than 5 s after the load did, \
             so the load saw only part of it: lengthen --duration"
        );

        // Another error is the migration's own.
        let mut failed = vec![test_attempt(1, 1.5, 2.0, AttemptOutcome::Error)];
        failed[0].sqlstate = Some(FailureKind::from_cell("42703"));
        cut_off_by_the_end("naive", &mut failed);
        assert_eq!(failed[0].outcome, AttemptOutcome::Error);
    }
}
