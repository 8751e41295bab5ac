//! What pgbench's script language needs beyond one prepared statement per
//! round trip (`connection.rs` keeps that hot path): the unnamed statement of
//! `--protocol extended`, NULL parameters (an undefined variable), pipelines
//! (`\startpipeline`: messages queued without a Sync, read at the end), and
//! the rows a `\gset`/`\aset` stores. Scripts that use none of these never
//! call into this module.

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use super::connection::{WireConnection, WireStatement};
use super::error::{WireError, server_error};
use crate::script::ResultSet;

/// Which statement a Bind names.
#[derive(Debug, Clone, Copy)]
pub enum Statement<'a> {
    /// A statement prepared on the connection (`--protocol prepared`).
    Prepared(&'a WireStatement),
    /// This SQL, parsed into the unnamed statement first (`--protocol extended`).
    Unnamed(&'a str),
}

/// Appends Bind and Execute (after a Parse for an unnamed statement) to `out`,
/// with text parameters; `None` is SQL NULL. With `describe`, the portal is
/// described too, so the rows come with their column names.
fn queue_statement<'p>(
    statement: Statement<'_>,
    params: impl IntoIterator<Item = Option<&'p str>>,
    describe: bool,
    out: &mut BytesMut,
) -> Result<(), WireError> {
    let name = match statement {
        Statement::Prepared(prepared) => prepared.name(),
        Statement::Unnamed(sql) => {
            frontend::parse("", sql, std::iter::empty(), out)?;
            ""
        }
    };
    let bound = frontend::bind(
        "",
        name,
        std::iter::empty::<i16>(),
        params,
        |param, buf| match param {
            Some(text) => {
                buf.extend_from_slice(text.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        },
        std::iter::empty::<i16>(),
        out,
    );
    if bound.is_err() {
        return Err(WireError::lost("encoding the Bind message failed"));
    }
    if describe {
        frontend::describe(b'P', "", out)?;
    }
    frontend::execute("", 0, out)?;
    Ok(())
}

impl WireConnection {
    /// Runs one statement (prepared or unnamed) with text parameters, NULL
    /// allowed, and reads the answer to the end; rows are not kept.
    pub async fn run_statement<'p>(
        &mut self,
        statement: Statement<'_>,
        params: impl IntoIterator<Item = Option<&'p str>>,
    ) -> Result<(), WireError> {
        queue_statement(statement, params, false, &mut self.out)?;
        frontend::sync(&mut self.out);
        self.flush().await?;
        self.read_to_ready().await
    }

    /// Queues one statement of a pipeline: no Sync, nothing sent yet.
    pub fn queue_in_pipeline<'p>(
        &mut self,
        statement: Statement<'_>,
        params: impl IntoIterator<Item = Option<&'p str>>,
    ) -> Result<(), WireError> {
        queue_statement(statement, params, false, &mut self.out)
    }

    /// `\syncpipeline`: queues a Sync, which ends the pipeline's implicit transaction.
    pub fn queue_sync(&mut self) {
        frontend::sync(&mut self.out);
    }

    /// `\endpipeline`: sends the pipeline with a last Sync and reads every
    /// answer up to the `syncs`-th ReadyForQuery (`syncs` counts that last
    /// one); the first error in them is the result.
    pub async fn finish_pipeline(&mut self, syncs: usize) -> Result<(), WireError> {
        frontend::sync(&mut self.out);
        self.flush().await?;
        let mut first_error = None;
        for _ in 0..syncs {
            if let Err(err) = self.read_to_ready().await {
                match err {
                    WireError::Lost { .. } => return Err(err),
                    server => {
                        first_error.get_or_insert(server);
                    }
                }
            }
        }
        match first_error {
            None => Ok(()),
            Some(err) => Err(err),
        }
    }

    /// Runs one statement (prepared or unnamed) and keeps what `\gset` needs.
    pub async fn run_statement_for_rows<'p>(
        &mut self,
        statement: Statement<'_>,
        params: impl IntoIterator<Item = Option<&'p str>>,
        results: &mut Vec<ResultSet>,
    ) -> Result<(), WireError> {
        queue_statement(statement, params, true, &mut self.out)?;
        frontend::sync(&mut self.out);
        self.flush().await?;
        self.read_results(results).await
    }

    /// Runs `sql` with the simple query protocol (one or several statements)
    /// and keeps the columns and last row of each statement's result.
    pub async fn simple_query_for_rows(
        &mut self,
        sql: &str,
        results: &mut Vec<ResultSet>,
    ) -> Result<(), WireError> {
        frontend::query(sql, &mut self.out)?;
        self.flush().await?;
        self.read_results(results).await
    }

    /// Reads up to ReadyForQuery, one [`ResultSet`] per statement answered;
    /// the first error is the result.
    async fn read_results(&mut self, results: &mut Vec<ResultSet>) -> Result<(), WireError> {
        results.clear();
        let mut current = ResultSet::default();
        let mut error = None;
        loop {
            match self.next_message().await? {
                Message::RowDescription(body) => {
                    let names = body
                        .fields()
                        .map(|field| Ok(field.name().to_string()))
                        .collect::<Vec<_>>()?;
                    current.columns = Some(names);
                }
                Message::DataRow(body) => {
                    current.rows += 1;
                    let buffer = body.buffer();
                    current.last_row = body
                        .ranges()
                        .map(|range| {
                            Ok(range
                                .map(|range| String::from_utf8_lossy(&buffer[range]).into_owned()))
                        })
                        .collect::<Vec<_>>()?;
                }
                Message::CommandComplete(_) | Message::EmptyQueryResponse => {
                    results.push(std::mem::take(&mut current));
                }
                Message::ErrorResponse(body) => {
                    error.get_or_insert(server_error(&body));
                }
                Message::CopyInResponse(_) => {
                    frontend::copy_fail("stallbench scripts send no COPY data", &mut self.out)?;
                    frontend::sync(&mut self.out);
                    self.flush().await?;
                }
                Message::ReadyForQuery(body) => {
                    self.ready(body.status());
                    return match error {
                        None => Ok(()),
                        Some(error) => Err(WireError::Server(error)),
                    };
                }
                _ => {}
            }
        }
    }
}
