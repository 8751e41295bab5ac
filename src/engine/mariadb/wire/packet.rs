//! The packets of MariaDB's client/server protocol that the load needs, as
//! plain bytes in and out: no socket here, so each is tested on its own.
//! The layouts are MariaDB's (mariadb.com/kb, "Clients & Communication
//! Protocols"): a 4-byte header (3 bytes of length, 1 of sequence), then
//! the payload; integers little-endian; "length-encoded" integers and
//! strings as the protocol defines them.

use sha1::{Digest, Sha1};

use super::error::{ErrPacket, MariaWireError};

/// The largest payload one packet carries; a longer one continues in the next.
pub const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// `CLIENT_MYSQL` (once `CLIENT_LONG_PASSWORD`): a MariaDB server leaves it
/// out of its handshake to say it reads extended capabilities.
pub const CLIENT_MYSQL: u32 = 1;
pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
/// MariaDB's extended capability (bit 36 of 64, bit 4 of the upper half):
/// an execute's result set may skip the column definitions the client
/// already has, as libmariadb and mysql_async ask.
pub const MARIADB_CLIENT_CACHE_METADATA: u32 = 1 << 4;

/// What the load's client asks for; `CLIENT_DEPRECATE_EOF` only when the
/// server offers it (see [`client_capabilities`]).
const WANTED: u32 = CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_DEPRECATE_EOF;

/// What the server must offer for this client to talk to it.
const NEEDED: u32 = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH;

/// `SERVER_STATUS_IN_TRANS`: a transaction is open.
pub const STATUS_IN_TRANS: u16 = 1;
/// `SERVER_MORE_RESULTS_EXISTS`: another result follows this one.
pub const STATUS_MORE_RESULTS: u16 = 1 << 3;

/// `utf8mb4_general_ci`, the connection's character set and collation.
const UTF8MB4_GENERAL_CI: u8 = 45;

pub const COM_QUIT: u8 = 0x01;
pub const COM_QUERY: u8 = 0x03;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;

/// Column and parameter types of the binary protocol.
pub const TYPE_DOUBLE: u8 = 5;
pub const TYPE_NULL: u8 = 6;
pub const TYPE_LONGLONG: u8 = 8;
pub const TYPE_VAR_STRING: u8 = 253;

/// Reads a payload front to back; each read is `None` past its end.
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    pub fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        if count > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Some(head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    pub fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length-encoded integer (`0xFB`, NULL in a text row, is `None` too).
    pub fn lenenc(&mut self) -> Option<u64> {
        let first = self.u8()?;
        let width = match first {
            0..=0xFA => return Some(u64::from(first)),
            0xFC => 2,
            0xFD => 3,
            0xFE => 8,
            _ => return None,
        };
        let bytes = self.take(width)?;
        let mut value = [0u8; 8];
        value[..width].copy_from_slice(bytes);
        Some(u64::from_le_bytes(value))
    }

    /// Bytes up to a NUL, which is skipped.
    pub fn nul_terminated(&mut self) -> Option<&'a [u8]> {
        let end = self.bytes.iter().position(|&b| b == 0)?;
        let text = self.take(end)?;
        self.take(1)?;
        Some(text)
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Appends `value` as a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=0xFA => out.push(value as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(value as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(value as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

/// Starts a packet at the end of `out`: room for its header; returns where
/// it starts, for [`end_packet`].
pub fn begin_packet(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    start
}

/// Writes the header of the packet begun at `start` with sequence `sequence`.
/// A packet too long to send is cut from `out`, so that what was built
/// before it is sent as it was.
pub fn end_packet(out: &mut Vec<u8>, start: usize, sequence: u8) -> Result<(), MariaWireError> {
    let length = out.len() - start - 4;
    if length >= MAX_PAYLOAD {
        out.truncate(start);
        return Err(MariaWireError::Refused {
            reason: format!(
                "a packet of {length} bytes is longer than the load's client sends \
                 ({MAX_PAYLOAD}); shorten the statement"
            ),
        });
    }
    out[start..start + 3].copy_from_slice(&(length as u32).to_le_bytes()[..3]);
    out[start + 3] = sequence;
    Ok(())
}

/// A command packet: `command` and its argument, sequence 0.
pub fn command(out: &mut Vec<u8>, command: u8, argument: &[u8]) -> Result<(), MariaWireError> {
    let start = begin_packet(out);
    out.push(command);
    out.extend_from_slice(argument);
    end_packet(out, start, 0)
}

/// The server's first packet (protocol version 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    pub server_version: String,
    pub connection_id: u32,
    /// The 20 bytes the password's scramble is made with.
    pub scramble: Vec<u8>,
    pub capabilities: u32,
    /// MariaDB's extended capabilities (0 from MySQL).
    pub extended: u32,
    /// The authentication plugin the server starts with.
    pub plugin: String,
}

/// Parses the server's handshake packet.
pub fn parse_handshake(payload: &[u8]) -> Result<Handshake, MariaWireError> {
    let bad = || MariaWireError::protocol("a handshake packet too short");
    let mut reader = Reader::new(payload);
    let version = reader.u8().ok_or_else(bad)?;
    if version != 10 {
        return Err(MariaWireError::Refused {
            reason: format!(
                "the server speaks protocol version {version}; the load's client speaks 10 \
                 (MariaDB 5.5 and later)"
            ),
        });
    }
    let server_version = String::from_utf8_lossy(reader.nul_terminated().ok_or_else(bad)?);
    let connection_id = reader.u32().ok_or_else(bad)?;
    let mut scramble = reader.take(8).ok_or_else(bad)?.to_vec();
    reader.u8().ok_or_else(bad)?;
    let lower = reader.u16().ok_or_else(bad)?;
    // Collation and status flags.
    reader.take(3).ok_or_else(bad)?;
    let upper = reader.u16().ok_or_else(bad)?;
    let capabilities = u32::from(lower) | u32::from(upper) << 16;
    let data_length = reader.u8().ok_or_else(bad)?;
    reader.take(6).ok_or_else(bad)?;
    let extended = reader.u32().ok_or_else(bad)?;
    let extended = if capabilities & CLIENT_MYSQL == 0 {
        extended
    } else {
        0
    };
    if capabilities & NEEDED != NEEDED {
        return Err(MariaWireError::Refused {
            reason: format!(
                "server {server_version} lacks the 4.1 protocol with pluggable authentication \
                 (capabilities {capabilities:#x}); use MariaDB 5.5 or later"
            ),
        });
    }
    let part_two = usize::from(data_length).saturating_sub(9).max(12);
    scramble.extend_from_slice(reader.take(part_two).ok_or_else(bad)?);
    reader.u8();
    let plugin = reader
        .nul_terminated()
        .unwrap_or_else(|| reader.rest())
        .to_vec();
    Ok(Handshake {
        server_version: server_version.into_owned(),
        connection_id,
        scramble,
        capabilities,
        extended,
        plugin: String::from_utf8_lossy(&plugin).into_owned(),
    })
}

/// The capabilities the client answers `handshake` with: what it wants of
/// what the server offers, and MariaDB's extended ones (metadata caching).
pub fn client_capabilities(handshake: &Handshake, with_db: bool) -> (u32, u32) {
    let mut capabilities = WANTED & handshake.capabilities;
    if with_db {
        capabilities |= CLIENT_CONNECT_WITH_DB;
    }
    let extended = handshake.extended & MARIADB_CLIENT_CACHE_METADATA;
    (capabilities, extended)
}

/// The client's answer to the handshake (sequence 1).
pub struct HandshakeResponse<'a> {
    pub capabilities: u32,
    pub extended: u32,
    pub user: &'a str,
    pub auth: &'a [u8],
    pub database: Option<&'a str>,
    pub plugin: &'a str,
}

/// Appends the handshake response packet.
pub fn handshake_response(
    out: &mut Vec<u8>,
    response: &HandshakeResponse,
) -> Result<(), MariaWireError> {
    let start = begin_packet(out);
    out.extend_from_slice(&response.capabilities.to_le_bytes());
    out.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
    out.push(UTF8MB4_GENERAL_CI);
    out.extend_from_slice(&[0; 19]);
    out.extend_from_slice(&response.extended.to_le_bytes());
    out.extend_from_slice(response.user.as_bytes());
    out.push(0);
    out.push(response.auth.len() as u8);
    out.extend_from_slice(response.auth);
    if let Some(database) = response.database {
        out.extend_from_slice(database.as_bytes());
        out.push(0);
    }
    out.extend_from_slice(response.plugin.as_bytes());
    out.push(0);
    end_packet(out, start, 1)
}

/// `mysql_native_password`'s answer to `scramble`:
/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))); empty for no password.
pub fn native_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut hasher = Sha1::new();
    hasher.update(&scramble[..scramble.len().min(20)]);
    hasher.update(stage2);
    let mixed = hasher.finalize();
    stage1
        .iter()
        .zip(mixed.iter())
        .map(|(a, b)| a ^ b)
        .collect()
}

/// An OK packet's (or a result's closing packet's) counts and status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OkPacket {
    pub affected_rows: u64,
    pub status: u16,
}

/// Parses an OK packet (`0x00`, or `0xFE` closing a result set under
/// `CLIENT_DEPRECATE_EOF`).
pub fn parse_ok(payload: &[u8]) -> Result<OkPacket, MariaWireError> {
    let mut reader = Reader::new(payload);
    reader.u8();
    let parsed = (|| {
        let affected_rows = reader.lenenc()?;
        reader.lenenc()?;
        let status = reader.u16()?;
        Some(OkPacket {
            affected_rows,
            status,
        })
    })();
    parsed.ok_or_else(|| MariaWireError::protocol("an OK packet too short"))
}

/// Parses an old EOF packet (`0xFE`, then warnings, then status).
pub fn parse_eof(payload: &[u8]) -> OkPacket {
    let mut reader = Reader::new(payload);
    reader.u8();
    reader.u16();
    OkPacket {
        affected_rows: 0,
        status: reader.u16().unwrap_or(0),
    }
}

/// Whether `payload` is an EOF packet, or an OK packet closing a result set:
/// a `0xFE` header on a packet too short to be a row.
pub fn is_eof(payload: &[u8], deprecate_eof: bool) -> bool {
    payload.first() == Some(&0xFE)
        && match deprecate_eof {
            true => payload.len() < MAX_PAYLOAD,
            false => payload.len() < 9,
        }
}

/// Parses an ERR packet (`0xFF`, number, `#` and SQLSTATE, message).
pub fn parse_err(payload: &[u8]) -> ErrPacket {
    let mut reader = Reader::new(payload);
    reader.u8();
    let code = reader.u16().unwrap_or(0);
    let mut rest = reader.rest();
    let mut sqlstate = String::new();
    if rest.first() == Some(&b'#') && rest.len() >= 6 {
        sqlstate = String::from_utf8_lossy(&rest[1..6]).into_owned();
        rest = &rest[6..];
    }
    ErrPacket {
        code,
        sqlstate,
        message: String::from_utf8_lossy(rest).into_owned(),
    }
}

/// A statement the server prepared: its id and how many columns and
/// parameters it has (their definitions follow as packets of their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    pub id: u32,
    pub columns: u16,
    pub params: u16,
}

/// Parses COM_STMT_PREPARE's OK.
pub fn parse_prepared(payload: &[u8]) -> Result<Prepared, MariaWireError> {
    let mut reader = Reader::new(payload);
    let parsed = (|| {
        reader.u8()?;
        Some(Prepared {
            id: reader.u32()?,
            columns: reader.u16()?,
            params: reader.u16()?,
        })
    })();
    parsed.ok_or_else(|| MariaWireError::protocol("a prepare OK too short"))
}

/// A parameter's value for COM_STMT_EXECUTE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Double(f64),
    Text(&'a str),
}

impl Param<'_> {
    /// Its type in the binary protocol; `None` for NULL, which any type carries.
    fn wire_type(&self) -> Option<u8> {
        match self {
            Param::Null => None,
            Param::Int(_) => Some(TYPE_LONGLONG),
            Param::Double(_) => Some(TYPE_DOUBLE),
            Param::Text(_) => Some(TYPE_VAR_STRING),
        }
    }
}

/// Appends COM_STMT_EXECUTE of statement `id` with `params`. `bound` holds
/// the types the server has for the statement (empty before its first
/// execute): as libmariadb does, the types are sent only when they change
/// (a NULL keeps the type bound before), and `bound` is updated.
pub fn execute(
    out: &mut Vec<u8>,
    id: u32,
    params: &[Param],
    bound: &mut Vec<u8>,
) -> Result<(), MariaWireError> {
    let start = begin_packet(out);
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&id.to_le_bytes());
    // No cursor; one iteration.
    out.push(0);
    out.extend_from_slice(&1u32.to_le_bytes());
    if !params.is_empty() {
        let bitmap = out.len();
        out.resize(bitmap + params.len().div_ceil(8), 0);
        for (index, param) in params.iter().enumerate() {
            if *param == Param::Null {
                out[bitmap + index / 8] |= 1 << (index % 8);
            }
        }
        let send_types = types_changed(params, bound);
        out.push(u8::from(send_types));
        if send_types {
            for &wire_type in bound.iter() {
                out.extend_from_slice(&[wire_type, 0]);
            }
        }
        for param in params {
            put_value(out, param);
        }
    }
    // A packet not sent leaves the server without the types just bound.
    end_packet(out, start, 0).inspect_err(|_| bound.clear())
}

/// Whether `params` need types other than `bound`; if so, `bound` becomes theirs.
fn types_changed(params: &[Param], bound: &mut Vec<u8>) -> bool {
    let first = bound.len() != params.len();
    let changed = first
        || params
            .iter()
            .zip(bound.iter())
            .any(|(param, &was)| param.wire_type().is_some_and(|now| now != was));
    if changed {
        let previous = std::mem::take(bound);
        bound.extend(params.iter().enumerate().map(|(index, param)| {
            param
                .wire_type()
                .or_else(|| previous.get(index).copied())
                .unwrap_or(TYPE_NULL)
        }));
    }
    changed
}

fn put_value(out: &mut Vec<u8>, param: &Param) {
    match *param {
        Param::Null => {}
        Param::Int(value) => out.extend_from_slice(&value.to_le_bytes()),
        Param::Double(value) => out.extend_from_slice(&value.to_le_bytes()),
        Param::Text(text) => {
            put_lenenc(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
    }
}

#[cfg(test)]
#[path = "packet_tests.rs"]
pub(super) mod tests;
