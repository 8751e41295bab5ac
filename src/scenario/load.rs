//! The load workers: closed-loop pgbench-style clients, each on its own
//! connection for the whole run, with prepared statements.
//!
//! The hot path takes no shared lock and waits on nobody: latency goes into
//! the worker's own histogram of the current second, handed to the recorder
//! once a second; the progress counters are relaxed atomics.

use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use rand::{RngExt, SeedableRng};
use tokio::sync::mpsc::UnboundedSender;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement};

use super::RunClock;
use crate::config::WeightedScript;
use crate::error::Error;
use crate::metrics::recorder::WorkerPart;
use crate::metrics::{LiveCounters, WorkerSecond};
use crate::script::{self, Command, Script};
use crate::target::error_text;

/// A script's SQL commands prepared on one connection, in script order.
pub struct PreparedScript {
    statements: Vec<Statement>,
    /// The script opens its own transaction (BEGIN): roll back after an error.
    opens_transaction: bool,
}

/// Prepares every SQL command of every script on `client`.
pub async fn prepare(
    client: &Client,
    scripts: &[WeightedScript],
) -> Result<Vec<PreparedScript>, Error> {
    let mut prepared = Vec::with_capacity(scripts.len());
    for weighted in scripts {
        let script = &weighted.script;
        let mut statements = Vec::new();
        let mut opens_transaction = false;
        for command in &script.commands {
            if let Command::Sql { sql, line, .. } = command {
                let first_word = sql
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_uppercase();
                opens_transaction |= first_word == "BEGIN" || first_word == "START";
                let statement = client.prepare(sql).await.map_err(|err| {
                    Error::bad_input(format!(
                        "script {} line {line}: the server rejects this statement: {}",
                        script.name,
                        error_text(&err)
                    ))
                })?;
                statements.push(statement);
            }
        }
        prepared.push(PreparedScript {
            statements,
            opens_transaction,
        });
    }
    Ok(prepared)
}

/// Everything one worker needs; it owns its connection.
pub struct Worker {
    pub client: Client,
    pub client_id: u32,
    pub scripts: Arc<Vec<WeightedScript>>,
    pub prepared: Vec<PreparedScript>,
    pub variables: Arc<Vec<(String, String)>>,
    pub seed: u64,
}

/// How a worker ended.
#[derive(Debug, Clone, Default)]
pub struct WorkerOutcome {
    /// Set when the connection was lost: the worker stopped early.
    pub lost_connection: Option<String>,
}

/// Why a transaction did not complete.
enum TxnError {
    /// The server answered with an error, or the script failed (division by
    /// zero in \set, SQLSTATE reported as `script`): counted as failed, the worker goes on.
    Failed { sqlstate: String },
    /// The connection is gone: the worker stops.
    Lost(String),
}

impl TxnError {
    fn script(_err: script::EvalError) -> TxnError {
        TxnError::Failed {
            sqlstate: "script".to_string(),
        }
    }
}

/// Runs transactions until the end of the load; records into `live` and `parts`.
pub async fn run_worker(
    worker: Worker,
    clock: RunClock,
    live: Arc<LiveCounters>,
    parts: UnboundedSender<WorkerPart>,
) -> WorkerOutcome {
    let Worker {
        client,
        client_id,
        scripts,
        prepared,
        variables,
        seed,
    } = worker;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed.wrapping_add(u64::from(client_id)));
    let scale = variables
        .iter()
        .find(|(name, _)| name == "scale")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(1);
    let mut vars: Vec<script::Vars> = scripts
        .iter()
        .map(|weighted| weighted.script.new_vars(client_id, scale, &variables))
        .collect();
    let total_weight: u32 = scripts.iter().map(|weighted| weighted.weight).sum();
    let duration_s = clock.duration_s();
    let end = clock.end();
    let mut params: Vec<TextParam> = Vec::new();
    let mut current = WorkerSecond::new(0);
    let mut outcome = WorkerOutcome::default();

    loop {
        let started = Instant::now();
        if started >= end {
            break;
        }
        let index = if scripts.len() == 1 {
            0
        } else {
            pick_script(&scripts, rng.random_range(0..total_weight))
        };
        let result = run_script(
            &client,
            &scripts[index].script,
            &prepared[index],
            &mut vars[index],
            &mut rng,
            &mut params,
        )
        .await;
        let ended = Instant::now();
        let second = clock.second_of(ended);
        if second >= duration_s {
            break;
        }
        if second != current.second {
            let finished = std::mem::replace(&mut current, WorkerSecond::new(second));
            let _ = parts.send(WorkerPart {
                worker: client_id as usize,
                finished: (!finished.is_empty()).then_some(finished),
                now_in: second,
            });
        }
        match result {
            Ok(()) => {
                let latency_us = (ended - started).as_micros().max(1) as u64;
                current.latency_us.saturating_record(latency_us);
                live.record_success(second, latency_us);
            }
            Err(TxnError::Failed { sqlstate }) => {
                current.failed += 1;
                *current.failed_by_sqlstate.entry(sqlstate).or_insert(0) += 1;
                live.record_failure(second);
                if prepared[index].opens_transaction
                    && client.batch_execute("ROLLBACK").await.is_err()
                {
                    outcome.lost_connection =
                        Some("ROLLBACK after a failed transaction failed".into());
                    break;
                }
            }
            Err(TxnError::Lost(message)) => {
                outcome.lost_connection = Some(message);
                break;
            }
        }
    }
    let _ = parts.send(WorkerPart {
        worker: client_id as usize,
        finished: (!current.is_empty()).then_some(current),
        now_in: u32::MAX,
    });
    outcome
}

/// The script whose cumulative weight range holds `draw` (0..total weight).
fn pick_script(scripts: &[WeightedScript], mut draw: u32) -> usize {
    for (index, weighted) in scripts.iter().enumerate() {
        if draw < weighted.weight {
            return index;
        }
        draw -= weighted.weight;
    }
    scripts.len() - 1
}

/// One execution of a script: one transaction in pgbench's sense.
async fn run_script(
    client: &Client,
    script: &Script,
    prepared: &PreparedScript,
    vars: &mut script::Vars,
    rng: &mut rand::rngs::SmallRng,
    params: &mut Vec<TextParam>,
) -> Result<(), TxnError> {
    let mut statement_index = 0;
    for command in &script.commands {
        match command {
            Command::Set { slot, expr, .. } => {
                let value = script::eval(expr, vars, rng).map_err(TxnError::script)?;
                vars.set(*slot, value);
            }
            Command::Sleep { .. } => {
                let sleep_us = script.sleep_us(command, vars).map_err(TxnError::script)?;
                tokio::time::sleep(std::time::Duration::from_micros(sleep_us)).await;
            }
            Command::Sql { params: slots, .. } => {
                params.resize_with(slots.len(), TextParam::default);
                for (param, slot) in params.iter_mut().zip(slots) {
                    param.0.clear();
                    vars.get(*slot).write_param(&mut param.0);
                }
                let statement = &prepared.statements[statement_index];
                statement_index += 1;
                if let Err(err) = client.execute_raw(statement, params.iter()).await {
                    return Err(match err.code() {
                        Some(code) => TxnError::Failed {
                            sqlstate: code.code().to_string(),
                        },
                        None => TxnError::Lost(error_text(&err)),
                    });
                }
            }
        }
    }
    Ok(())
}

/// A parameter sent in text format, as pgbench does: the server parses it
/// into whatever type it inferred for the placeholder.
#[derive(Debug, Default)]
struct TextParam(String);

impl ToSql for TextParam {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}
