//! One open connection and what the load runs on it: prepared statements
//! executed in the binary protocol and plain queries, their answers read
//! and counted, not kept (the load's scripts read no results: `\gset` is
//! refused on MariaDB, `script::compile`). The buffers are reused, so a
//! transaction costs one `send`, its `recv`s and no allocation here.

use std::ops::Range;

use super::error::MariaWireError;
use super::packet::{
    self, CLIENT_DEPRECATE_EOF, COM_QUERY, COM_QUIT, COM_STMT_PREPARE,
    MARIADB_CLIENT_CACHE_METADATA, Param, STATUS_IN_TRANS, STATUS_MORE_RESULTS,
};
use super::socket::{Deadline, Socket};

/// The least room a `recv` is given: an answer of a few rows fits.
const READ_ROOM_BYTES: usize = 16 * 1024;

/// A statement prepared on one connection.
#[derive(Debug, Clone)]
pub struct MariaStatement {
    id: u32,
    params: usize,
    /// The parameter types the server holds for it (sent with the first
    /// execute and again only when they change).
    bound: Vec<u8>,
}

/// One connection of a load client: the socket and its buffers.
pub struct MariaConnection {
    socket: Socket,
    /// Bytes to send, built in place and reused.
    out: Vec<u8>,
    /// Room for bytes received (its length is its size): those up to
    /// `filled` arrived, those before `parsed` are done with.
    input: Vec<u8>,
    filled: usize,
    parsed: usize,
    /// The sequence number of the last packet sent or received: the next
    /// one received must follow it (a command starts again at 0).
    pub(super) sequence: u8,
    /// The capabilities both sides agreed on (the lower 32 and MariaDB's).
    pub(super) capabilities: u32,
    pub(super) extended: u32,
    /// The server's connection id (the processlist's `ID`).
    pub(super) id: u32,
    /// The status flags of the server's last OK or EOF.
    status: u16,
}

impl MariaConnection {
    /// A connection over `socket`, before the handshake.
    pub(super) fn new(socket: Socket) -> MariaConnection {
        MariaConnection {
            socket,
            out: Vec::with_capacity(256),
            input: vec![0; READ_ROOM_BYTES],
            filled: 0,
            parsed: 0,
            // The server's handshake is packet 0.
            sequence: u8::MAX,
            capabilities: 0,
            extended: 0,
            id: 0,
            status: 0,
        }
    }

    /// The server's connection id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Whether the server said, in its last OK or EOF, that a transaction is
    /// open: what a failed transaction leaves to roll back.
    pub fn in_transaction(&self) -> bool {
        self.status & STATUS_IN_TRANS != 0
    }

    /// The output buffer, for the handshake to build its packets in.
    pub(super) fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Sends what the output buffer holds and empties it.
    pub(super) fn flush(&mut self, deadline: &Deadline) -> Result<(), MariaWireError> {
        let sent = self.socket.send_all(&self.out, deadline);
        self.out.clear();
        sent
    }

    /// The next packet's payload, as a range of [`Self::payload`], valid
    /// until the next call; a payload longer than one packet is joined.
    pub(super) fn next_packet(
        &mut self,
        deadline: &Deadline,
    ) -> Result<Range<usize>, MariaWireError> {
        let (start, mut end) = self.next_part(self.parsed, deadline)?;
        let mut part_length = end - start;
        // A payload of exactly MAX_PAYLOAD bytes continues in the next packet:
        // its header is cut out so that the payload is contiguous.
        while part_length == packet::MAX_PAYLOAD {
            let (next_start, next_end) = self.next_part(end, deadline)?;
            self.input.copy_within(next_start..self.filled, end);
            self.filled -= next_start - end;
            part_length = next_end - next_start;
            end += part_length;
        }
        self.parsed = end;
        Ok(start..end)
    }

    /// The packet whose header is at `at`: its payload's range, once whole.
    fn next_part(
        &mut self,
        mut at: usize,
        deadline: &Deadline,
    ) -> Result<(usize, usize), MariaWireError> {
        if self.filled < at + 4 {
            at = self.compact(at);
            self.fill(at + 4, deadline)?;
        }
        let header = &self.input[at..at + 4];
        let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let expected = self.sequence.wrapping_add(1);
        if header[3] != expected {
            return Err(MariaWireError::protocol(format!(
                "packets out of order (sequence {} where {expected} was due)",
                header[3]
            )));
        }
        self.sequence = expected;
        if self.filled < at + 4 + length {
            at = self.compact(at);
            self.fill(at + 4 + length, deadline)?;
        }
        Ok((at + 4, at + 4 + length))
    }

    /// Moves the bytes not yet parsed to the front of the input, when `at`
    /// is where they start (not inside a payload being joined); returns
    /// where `at` is now.
    fn compact(&mut self, at: usize) -> usize {
        if self.parsed == 0 || at != self.parsed {
            return at;
        }
        self.input.copy_within(self.parsed..self.filled, 0);
        self.filled -= self.parsed;
        self.parsed = 0;
        0
    }

    /// Receives until the input holds `wanted` bytes; the buffer grows
    /// (and keeps its size) when they do not fit.
    fn fill(&mut self, wanted: usize, deadline: &Deadline) -> Result<(), MariaWireError> {
        if wanted > self.input.len() {
            let size = wanted.max(2 * self.input.len());
            self.input.resize(size, 0);
        }
        while self.filled < wanted {
            self.filled += self.socket.recv(&mut self.input[self.filled..], deadline)?;
        }
        Ok(())
    }

    /// The bytes of a payload [`Self::next_packet`] returned.
    pub(super) fn payload(&self, range: Range<usize>) -> &[u8] {
        &self.input[range]
    }

    /// Prepares `sql`; the server checks it now.
    pub fn prepare(
        &mut self,
        sql: &str,
        deadline: &Deadline,
    ) -> Result<MariaStatement, MariaWireError> {
        self.command(COM_STMT_PREPARE, sql.as_bytes())?;
        self.flush(deadline)?;
        let range = self.next_packet(deadline)?;
        let payload = self.payload(range);
        if payload.first() == Some(&0xFF) {
            return Err(MariaWireError::Server(packet::parse_err(payload)));
        }
        let prepared = packet::parse_prepared(payload)?;
        for count in [prepared.params, prepared.columns] {
            self.skip_definitions(usize::from(count), deadline)?;
        }
        Ok(MariaStatement {
            id: prepared.id,
            params: usize::from(prepared.params),
            bound: Vec::new(),
        })
    }

    /// Runs `statement` with `params`; returns the rows it sent (all read).
    pub fn execute(
        &mut self,
        statement: &mut MariaStatement,
        params: &[Param],
        deadline: &Deadline,
    ) -> Result<u64, MariaWireError> {
        if params.len() != statement.params {
            return Err(MariaWireError::Refused {
                reason: format!(
                    "the statement takes {} parameters, {} given",
                    statement.params,
                    params.len()
                ),
            });
        }
        packet::execute(&mut self.out, statement.id, params, &mut statement.bound)?;
        self.sequence = 0;
        self.flush(deadline)?;
        self.read_results(true, deadline)
    }

    /// Runs `sql` as a plain query (COM_QUERY); returns the rows it sent.
    pub fn query(&mut self, sql: &str, deadline: &Deadline) -> Result<u64, MariaWireError> {
        self.command(COM_QUERY, sql.as_bytes())?;
        self.flush(deadline)?;
        self.read_results(false, deadline)
    }

    /// Says goodbye (COM_QUIT) and closes the socket; a failure changes nothing.
    pub fn close(mut self, deadline: &Deadline) {
        if self.command(COM_QUIT, &[]).is_ok() {
            let _ = self.flush(deadline);
        }
    }

    /// Builds a command packet (sequence 0) in the output buffer.
    fn command(&mut self, command: u8, argument: &[u8]) -> Result<(), MariaWireError> {
        packet::command(&mut self.out, command, argument)?;
        self.sequence = 0;
        Ok(())
    }

    /// Reads a command's answer to its end (every result, when there are
    /// several): an OK, an ERR, or result sets; returns the rows counted.
    fn read_results(&mut self, binary: bool, deadline: &Deadline) -> Result<u64, MariaWireError> {
        let mut rows = 0;
        loop {
            let range = self.next_packet(deadline)?;
            let payload = self.payload(range);
            match payload.first() {
                Some(0x00) => self.status = packet::parse_ok(payload)?.status,
                Some(0xFF) => return Err(MariaWireError::Server(packet::parse_err(payload))),
                Some(0xFB) => {
                    return Err(MariaWireError::protocol(
                        "LOAD DATA LOCAL INFILE, which the load's client does not serve",
                    ));
                }
                Some(_) => {
                    rows += self.read_result_set(
                        payload_header(payload, binary, self.extended)?,
                        deadline,
                    )?
                }
                None => return Err(MariaWireError::protocol("an empty packet")),
            }
            if self.status & STATUS_MORE_RESULTS == 0 {
                return Ok(rows);
            }
        }
    }

    /// Reads a result set's column definitions (when sent) and rows to its
    /// closing packet; returns the rows.
    fn read_result_set(
        &mut self,
        header: ResultHeader,
        deadline: &Deadline,
    ) -> Result<u64, MariaWireError> {
        if header.metadata_follows {
            self.skip_definitions(header.columns, deadline)?;
        }
        let deprecate_eof = self.capabilities & CLIENT_DEPRECATE_EOF != 0;
        let mut rows = 0;
        loop {
            let range = self.next_packet(deadline)?;
            let payload = self.payload(range);
            if payload.first() == Some(&0xFF) {
                return Err(MariaWireError::Server(packet::parse_err(payload)));
            }
            if packet::is_eof(payload, deprecate_eof) {
                self.status = match deprecate_eof {
                    true => packet::parse_ok(payload)?.status,
                    false => packet::parse_eof(payload).status,
                };
                return Ok(rows);
            }
            rows += 1;
        }
    }

    /// Skips `count` column or parameter definitions and, without
    /// `CLIENT_DEPRECATE_EOF`, the EOF after them.
    fn skip_definitions(
        &mut self,
        count: usize,
        deadline: &Deadline,
    ) -> Result<(), MariaWireError> {
        if count == 0 {
            return Ok(());
        }
        for _ in 0..count {
            self.next_packet(deadline)?;
        }
        if self.capabilities & CLIENT_DEPRECATE_EOF == 0 {
            self.next_packet(deadline)?;
        }
        Ok(())
    }
}

/// A result set's first packet: how many columns, and whether their
/// definitions follow (an execute's may be skipped under metadata caching).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ResultHeader {
    pub columns: usize,
    pub metadata_follows: bool,
}

/// Parses a result set's column-count packet.
pub(super) fn payload_header(
    payload: &[u8],
    binary: bool,
    extended: u32,
) -> Result<ResultHeader, MariaWireError> {
    let mut reader = packet::Reader::new(payload);
    let columns = reader
        .lenenc()
        .ok_or_else(|| MariaWireError::protocol("a result set without its column count"))?;
    let may_skip = binary && extended & MARIADB_CLIENT_CACHE_METADATA != 0;
    Ok(ResultHeader {
        columns: columns as usize,
        metadata_follows: !may_skip || reader.u8() != Some(0),
    })
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
