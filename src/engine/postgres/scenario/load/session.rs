//! A worker's connection with its prepared statements, and how it is opened
//! again after a loss (reconnect with a capped backoff, prepare again after a
//! cached plan went stale). All of it runs only after a failure: the healthy
//! path of [`super::run_worker`] never enters this module.

use super::*;

/// The first wait before opening a lost connection again; it doubles after
/// each failed attempt up to [`RECONNECT_BACKOFF_MAX`], jittered down by up to half.
pub(super) const RECONNECT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest wait between two attempts to open a lost connection again.
pub(super) const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A lost connection: when the worker noticed, and why.
pub(super) struct Lost {
    pub(super) at: Instant,
    pub(super) message: String,
}

/// A worker's connection with the statements prepared on it, and what it
/// takes to open both again after a loss.
pub(super) struct Session {
    pub(super) connection: WireConnection,
    pub(super) prepared: Vec<PreparedScript>,
    /// How the scripts are prepared again on a new connection.
    pub(super) protocol: Protocol,
    /// Cancels the running query of `connection` (`--client-timeout`).
    pub(super) cancel: WireCancel,
    /// The same, for the end of the run; replaced on reconnect.
    pub(super) shared_cancel: WorkerCancel,
    pub(super) connector: Connector,
    /// Fired when the run is stopped early: reconnecting stops with it.
    pub(super) interrupt: CancellationToken,
    /// False from a loss until a new connection is open.
    pub(super) connected: bool,
    /// Connections lost so far, and the last loss.
    pub(super) losses: u32,
    pub(super) last_loss: Option<String>,
    /// Why the last attempt to reconnect failed.
    pub(super) last_reconnect_error: Option<String>,
}

impl Session {
    pub(super) fn new(
        connection: WireConnection,
        prepared: Vec<PreparedScript>,
        protocol: Protocol,
        connector: Connector,
        shared_cancel: WorkerCancel,
        interrupt: CancellationToken,
    ) -> Session {
        Session {
            interrupt,
            cancel: connection.cancel_handle(),
            connection,
            prepared,
            protocol,
            shared_cancel,
            connector,
            connected: true,
            losses: 0,
            last_loss: None,
            last_reconnect_error: None,
        }
    }

    /// Opens a new connection after a loss and prepares the scripts
    /// on it, retrying with a capped, jittered backoff until that works or the
    /// load ends or the run is interrupted. Records every failed attempt, the
    /// reconnect and the time without a connection. False if the load ended first.
    pub(super) async fn reopen(
        &mut self,
        lost: Lost,
        scripts: &[WeightedScript],
        clock: RunClock,
        rng: &mut rand::rngs::SmallRng,
        recording: &mut Recording,
    ) -> bool {
        self.losses += 1;
        self.last_loss = Some(lost.message);
        self.connected = false;
        let end = tokio::time::Instant::from_std(clock.end());
        let mut backoff = RECONNECT_BACKOFF_FIRST;
        let interrupt = self.interrupt.clone();
        loop {
            let wait = backoff.mul_f64(rng.random_range(0.5..=1.0));
            let until = end.min(tokio::time::Instant::now() + wait);
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                _ = interrupt.cancelled() => break,
            }
            if tokio::time::Instant::now() >= end {
                break;
            }
            let opened = tokio::select! {
                opened = tokio::time::timeout_at(end, self.open(scripts)) => opened,
                _ = interrupt.cancelled() => break,
            };
            let Ok(opened) = opened else {
                break;
            };
            let now = Instant::now();
            if now >= clock.end() {
                break;
            }
            let current = recording.at(second_in_load(clock, now));
            match opened {
                Ok((connection, prepared)) => {
                    current.reconnects += 1;
                    let without_us = (now - lost.at).as_micros() as u64;
                    current.longest_disconnected_us =
                        current.longest_disconnected_us.max(without_us);
                    self.cancel = connection.cancel_handle();
                    self.shared_cancel.replace(self.cancel.clone());
                    self.connection = connection;
                    self.prepared = prepared;
                    self.connected = true;
                    return true;
                }
                Err(err) => {
                    current.reconnect_failures += 1;
                    self.last_reconnect_error = Some(err.to_string());
                }
            }
            backoff = (backoff * 2).min(RECONNECT_BACKOFF_MAX);
        }
        // The load ended without a connection: that time counts too.
        let current = recording.at(second_in_load(clock, clock.end()));
        let without_us = clock.end().saturating_duration_since(lost.at).as_micros() as u64;
        current.longest_disconnected_us = current.longest_disconnected_us.max(without_us);
        false
    }

    /// Rolls back the transaction a failed script left open; a connection
    /// that fails at that is lost and opened again. False if the load ended first.
    pub(super) async fn roll_back(
        &mut self,
        scripts: &[WeightedScript],
        clock: RunClock,
        rng: &mut rand::rngs::SmallRng,
        recording: &mut Recording,
    ) -> bool {
        let Err(err) = self.connection.simple_query("ROLLBACK").await else {
            return true;
        };
        let message = format!("ROLLBACK after a failed transaction failed: {err}");
        self.lost_between_transactions(message, scripts, clock, rng, recording)
            .await
    }

    /// Prepares every script again on the same connection, after an error
    /// that says the server dropped or no longer accepts the prepared
    /// statements (see [`statements_are_stale`]). A connection that fails at
    /// that is treated as lost and opened again, which prepares the scripts
    /// too. False if the load ended first.
    pub(super) async fn prepare_again(
        &mut self,
        scripts: &[WeightedScript],
        clock: RunClock,
        rng: &mut rand::rngs::SmallRng,
        recording: &mut Recording,
    ) -> bool {
        match prepare(
            &mut self.connection,
            &self.connector,
            scripts,
            self.protocol,
        )
        .await
        {
            Ok(prepared) => {
                self.prepared = prepared;
                true
            }
            Err(err) => {
                let message = format!("preparing the scripts again failed: {err}");
                self.lost_between_transactions(message, scripts, clock, rng, recording)
                    .await
            }
        }
    }

    /// Counts a connection lost between two transactions (no transaction of
    /// the script failed with it) and opens it again. False if the load ended first.
    async fn lost_between_transactions(
        &mut self,
        message: String,
        scripts: &[WeightedScript],
        clock: RunClock,
        rng: &mut rand::rngs::SmallRng,
        recording: &mut Recording,
    ) -> bool {
        let lost = Lost {
            at: Instant::now(),
            message,
        };
        recording.at(second_in_load(clock, lost.at)).conn_lost += 1;
        self.reopen(lost, scripts, clock, rng, recording).await
    }

    /// A new connection with every script prepared on it.
    pub(super) async fn open(
        &self,
        scripts: &[WeightedScript],
    ) -> Result<(WireConnection, Vec<PreparedScript>), Error> {
        let mut connection = self.connector.clone().connect_wire().await?;
        let prepared = prepare(&mut connection, &self.connector, scripts, self.protocol).await?;
        Ok((connection, prepared))
    }

    /// Says goodbye on a live connection; tells how the losses ended, if any.
    pub(super) async fn close(self) -> WorkerOutcome {
        if self.connected {
            self.connection.terminate().await;
        }
        let lost_connection = self.last_loss.map(|message| match self.connected {
            true => format!("{message}; reconnected ({} lost in the run)", self.losses),
            false => format!(
                "{message}; no connection again before the end of the load ({})",
                self.last_reconnect_error
                    .as_deref()
                    .unwrap_or("no attempt finished")
            ),
        });
        WorkerOutcome {
            lost_connection,
            unfinished_ages_us: Vec::new(),
        }
    }
}

/// The second of the load `at` falls into, the last one if `at` is past the end.
pub(super) fn second_in_load(clock: RunClock, at: Instant) -> u32 {
    clock
        .second_of(at)
        .min(clock.duration_s().saturating_sub(1))
}
