//! What both engines do alike while they run a script: the commands that stay
//! on the client (`\set`, `\sleep`) and a SQL command's parameters as text.
//! Only sending the statement differs (the lean connection or the pool's
//! tokio-postgres client).

use std::time::Duration;

use super::txn::TxnOutcome;
use crate::script::{self, Command, Script};

/// Runs a command that stays on the client: `\set` stores its value, `\sleep`
/// returns its pause (the caller sleeps); a SQL command is not one and does nothing.
#[inline]
pub fn run_on_client(
    script: &Script,
    command: &Command,
    vars: &mut script::Vars,
    rng: &mut rand::rngs::SmallRng,
) -> Result<Option<Duration>, TxnOutcome> {
    match command {
        Command::Set { slot, expr, .. } => {
            let value = script::eval(expr, vars, rng).map_err(TxnOutcome::script_failed)?;
            vars.set(*slot, value);
            Ok(None)
        }
        Command::Sleep { .. } => {
            let sleep_us = script
                .sleep_us(command, vars)
                .map_err(TxnOutcome::script_failed)?;
            Ok(Some(Duration::from_micros(sleep_us)))
        }
        Command::Sql { .. } => Ok(None),
    }
}

/// Writes the text of each parameter (`slots[n]` feeds `$(n + 1)`) into
/// `params`, reusing its strings.
#[inline]
pub fn write_params(params: &mut Vec<String>, slots: &[usize], vars: &script::Vars) {
    params.resize_with(slots.len(), String::new);
    for (param, slot) in params.iter_mut().zip(slots) {
        param.clear();
        vars.get(*slot).write_param(param);
    }
}
