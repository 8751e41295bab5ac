//! One open connection and the statements it runs: the hot path of a load
//! worker. The worker owns the socket; there is no connection task and no
//! channel in between, and the buffers are reused, so a transaction costs one
//! write, one read and no allocation on the client side. The socket code lives
//! here, next to the loop that reads the answers, so that the hot path is one
//! module.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use postgres_protocol::IsNull;
use postgres_protocol::message::backend::{self, Header, Message};
use postgres_protocol::message::frontend;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

use super::cancel::WireCancel;
use super::error::{WireError, server_error};

/// Where the server listens: what a connection and a cancel request connect to.
#[derive(Debug, Clone)]
pub(super) enum Address {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// The socket, TCP or unix, registered with the runtime for readability only,
/// or a TLS session over TCP.
///
/// Only for reading: a socket also registered for writability wakes the
/// thread each time the server reads a query and frees send-buffer space,
/// a wake-up per transaction for nothing (pgbench's `poll()` asks for input
/// only). Writes go straight to the socket; a query never fills its buffer
/// unless the server stops reading, and then the write retries every
/// millisecond. The plain sockets come first and stay as cheap as without
/// TLS; a TLS session goes through tokio-rustls, which must encrypt and
/// decrypt through buffers of its own anyway.
pub(super) enum Stream {
    Tcp(AsyncFd<std::net::TcpStream>),
    Unix(AsyncFd<std::os::unix::net::UnixStream>),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// A plain connection to `address`.
    pub(super) async fn connect(address: &Address) -> io::Result<Stream> {
        Ok(match address {
            Address::Tcp(addr) => Stream::plain_tcp(Stream::open_tcp(addr).await?)?,
            Address::Unix(path) => Stream::Unix(register_for_reading(
                UnixStream::connect(path).await?.into_std()?,
            )?),
        })
    }

    /// A TCP connection with Nagle's delay off, before any TLS is negotiated on it.
    pub(super) async fn open_tcp(addr: &SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// A TCP connection used without TLS.
    pub(super) fn plain_tcp(stream: TcpStream) -> io::Result<Stream> {
        Ok(Stream::Tcp(register_for_reading(stream.into_std()?)?))
    }

    /// Writes all of `out` and empties it.
    pub(super) async fn write_all(&mut self, out: &mut BytesMut) -> io::Result<()> {
        match self {
            Stream::Tcp(socket) => write_all_to(socket.get_ref(), out).await,
            Stream::Unix(socket) => write_all_to(socket.get_ref(), out).await,
            Stream::Tls(session) => {
                session.write_all(out).await?;
                session.flush().await?;
                out.clear();
                Ok(())
            }
        }
    }

    /// Reads what has arrived onto the end of `input`, straight into its
    /// spare room (which the caller makes); 0 at end of stream.
    pub(super) async fn read(&mut self, input: &mut BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(socket) => read_from(socket, input).await,
            Stream::Unix(socket) => read_from(socket, input).await,
            Stream::Tls(session) => session.read_buf(input).await,
        }
    }
}

/// Registers a (non-blocking) std socket with the current runtime, for readability only.
fn register_for_reading<T: AsRawFd>(socket: T) -> io::Result<AsyncFd<T>> {
    // SAFETY: a std socket owns its file descriptor and returns that same
    // descriptor from `as_raw_fd` until it is dropped, as tokio requires.
    unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }
        .map_err(|err| err.into_parts().1)
}

/// Writes all of `out` to the (non-blocking) socket and empties it.
async fn write_all_to<T>(socket: &T, out: &mut BytesMut) -> io::Result<()>
where
    for<'a> &'a T: Write,
{
    let mut socket = socket;
    while !out.is_empty() {
        match socket.write(out) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => out.advance(written),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Reads once what has arrived onto the end of `input`, into its spare room,
/// waiting for it.
async fn read_from<T: AsRawFd>(socket: &AsyncFd<T>, input: &mut BytesMut) -> io::Result<usize> {
    loop {
        let mut guard = socket.readable().await?;
        let room = input.capacity() - input.len();
        match guard.try_io(|socket| receive(socket.as_raw_fd(), input)) {
            Ok(Ok(read)) => {
                if read < room {
                    // A short read drained the socket: wait for the next
                    // edge instead of a read that would only say "empty"
                    // (the runtime keeps an edge that came in meanwhile).
                    guard.clear_ready();
                }
                return Ok(read);
            }
            Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(err)) => return Err(err),
            Err(_would_block) => {}
        }
    }
}

/// One `recv` from the socket `fd` into the spare room of `input`, which
/// then holds the bytes read: no scratch buffer, no copy, no zeroing.
fn receive(fd: RawFd, input: &mut BytesMut) -> io::Result<usize> {
    let room = input.spare_capacity_mut();
    // SAFETY: `recv` writes at most `room.len()` bytes into `room`, memory
    // `input` owns; the length grows by exactly the count it says it wrote,
    // so every byte inside the new length was written by it.
    unsafe {
        let read = libc::recv(fd, room.as_mut_ptr().cast(), room.len(), 0);
        if read < 0 {
            return Err(io::Error::last_os_error());
        }
        let read = read as usize;
        input.set_len(input.len() + read);
        Ok(read)
    }
}

/// A statement prepared on one connection (a named server-side statement).
#[derive(Debug, Clone)]
pub struct WireStatement {
    name: String,
}

impl WireStatement {
    /// The statement's name on the server.
    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

/// What the output buffer starts with: a Bind and Execute of a few
/// parameters; it grows for longer messages and keeps its size.
const OUT_START_BYTES: usize = 256;

/// The least room a read is given in the input buffer: a transaction's
/// answer of a few rows fits in one read. The buffers start small because a
/// run may hold a thousand connections, and an idle buffer still costs memory.
pub(super) const READ_ROOM_MIN_BYTES: usize = 1024;

/// The most room a read is given: a large answer is read in reads this big.
const READ_ROOM_MAX_BYTES: usize = 64 * 1024;

/// One connection of a load worker: the socket and its buffers.
pub struct WireConnection {
    stream: Stream,
    /// Bytes to send, built in place and reused.
    pub(super) out: BytesMut,
    /// Bytes received and not yet parsed.
    input: BytesMut,
    /// The room the next read is given in `input`: [`READ_ROOM_MIN_BYTES`],
    /// doubled (up to [`READ_ROOM_MAX_BYTES`]) each time a read fills it.
    read_room_bytes: usize,
    /// The session's key, filled in by the login.
    pub(super) cancel: WireCancel,
    /// How many statements were prepared: the next one's name.
    prepared: usize,
    /// The transaction status of the last ReadyForQuery: `I` idle, `T` in a
    /// transaction block, `E` in a failed one.
    transaction_status: u8,
}

impl WireConnection {
    /// A connection on `stream` with empty buffers, before the startup message.
    pub(super) fn new(stream: Stream, address: Address) -> WireConnection {
        WireConnection {
            stream,
            out: BytesMut::with_capacity(OUT_START_BYTES),
            input: BytesMut::with_capacity(READ_ROOM_MIN_BYTES),
            read_room_bytes: READ_ROOM_MIN_BYTES,
            cancel: WireCancel {
                address,
                process_id: 0,
                secret_key: 0,
            },
            prepared: 0,
            transaction_status: b'I',
        }
    }

    /// Whether the server said, in its last ReadyForQuery, that a transaction
    /// block is open (in progress or failed): what a failed transaction
    /// leaves to roll back, as pgbench's `getTransactionStatus` reads it.
    pub fn in_transaction_block(&self) -> bool {
        self.transaction_status != b'I'
    }

    /// A connection over one end of a socket pair, and the other end, where
    /// a test plays the server.
    #[cfg(test)]
    pub(crate) fn with_test_server() -> (WireConnection, std::os::unix::net::UnixStream) {
        let (client, server) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        client.set_nonblocking(true).expect("a non-blocking socket");
        let stream = Stream::Unix(register_for_reading(client).expect("registering the socket"));
        let connection = WireConnection::new(stream, Address::Unix(PathBuf::new()));
        (connection, server)
    }

    /// Keeps the transaction status of a ReadyForQuery.
    pub(super) fn ready(&mut self, status: u8) {
        self.transaction_status = status;
    }

    /// What a cancel request for this session needs.
    pub fn cancel_handle(&self) -> WireCancel {
        self.cancel.clone()
    }

    /// Prepares `sql` as a named statement; the server checks it now.
    pub async fn prepare(&mut self, sql: &str) -> Result<WireStatement, WireError> {
        let name = format!("s{}", self.prepared);
        self.prepared += 1;
        frontend::parse(&name, sql, std::iter::empty(), &mut self.out)?;
        frontend::describe(b'S', &name, &mut self.out)?;
        frontend::sync(&mut self.out);
        self.flush().await?;
        let mut error = None;
        loop {
            match self.next_message().await? {
                Message::ErrorResponse(body) => error = Some(server_error(&body)),
                Message::ReadyForQuery(body) => {
                    self.ready(body.status());
                    break;
                }
                _ => {}
            }
        }
        match error {
            Some(error) => Err(WireError::Server(error)),
            None => Ok(WireStatement { name }),
        }
    }

    /// Runs a prepared statement with its parameters in text format, as
    /// pgbench does (the server parses each into the placeholder's type), and
    /// reads the answer to the end; rows are not kept.
    pub async fn execute(
        &mut self,
        statement: &WireStatement,
        params: &[String],
    ) -> Result<(), WireError> {
        let bound = frontend::bind(
            "",
            &statement.name,
            std::iter::empty::<i16>(),
            params,
            |param, out| {
                out.extend_from_slice(param.as_bytes());
                Ok(IsNull::No)
            },
            std::iter::empty::<i16>(),
            &mut self.out,
        );
        if bound.is_err() {
            return Err(WireError::lost("encoding the Bind message failed"));
        }
        frontend::execute("", 0, &mut self.out)?;
        frontend::sync(&mut self.out);
        self.flush().await?;
        self.read_to_ready().await
    }

    /// Runs SQL with the simple query protocol (ROLLBACK after a failed transaction).
    pub async fn simple_query(&mut self, sql: &str) -> Result<(), WireError> {
        frontend::query(sql, &mut self.out)?;
        self.flush().await?;
        self.read_to_ready().await
    }

    /// Says goodbye to the server; the connection is closed.
    pub async fn terminate(mut self) {
        frontend::terminate(&mut self.out);
        let _ = self.flush().await;
    }

    /// Sends what `out` holds and empties it.
    pub(super) async fn flush(&mut self) -> io::Result<()> {
        self.stream.write_all(&mut self.out).await
    }

    /// Reads what has arrived onto the end of `input`; 0 at end of stream.
    /// The read is given `read_room_bytes` of room, doubled for the next one
    /// when this one fills it (a large answer arriving).
    async fn read(&mut self) -> io::Result<usize> {
        self.input.reserve(self.read_room_bytes);
        let room = self.input.capacity() - self.input.len();
        let read = self.stream.read(&mut self.input).await?;
        if read == room {
            self.read_room_bytes = (self.read_room_bytes * 2).min(READ_ROOM_MAX_BYTES);
        }
        Ok(read)
    }

    /// Reads messages up to ReadyForQuery; the first error in them is the result.
    /// The hot path: only the header of each message is looked at (as
    /// tokio-postgres' codec does), except for errors and COPY.
    pub(super) async fn read_to_ready(&mut self) -> Result<(), WireError> {
        let mut error = None;
        loop {
            while let Some(header) = Header::parse(&self.input).map_err(protocol_broken)? {
                let total = 1 + header.len() as usize;
                if self.input.len() < total {
                    self.input.reserve(total - self.input.len());
                    break;
                }
                match header.tag() {
                    backend::READY_FOR_QUERY_TAG => {
                        // Tag, length, then the status byte.
                        if total > 5 {
                            self.transaction_status = self.input[5];
                        }
                        self.input.advance(total);
                        return match error {
                            None => Ok(()),
                            Some(error) => Err(WireError::Server(error)),
                        };
                    }
                    backend::ERROR_RESPONSE_TAG => {
                        if let Some(Message::ErrorResponse(body)) = Message::parse(&mut self.input)?
                            && error.is_none()
                        {
                            error = Some(server_error(&body));
                        }
                    }
                    backend::COPY_IN_RESPONSE_TAG => {
                        // COPY FROM STDIN: a script has no data to send.
                        self.input.advance(total);
                        frontend::copy_fail("stallbench scripts send no COPY data", &mut self.out)?;
                        frontend::sync(&mut self.out);
                        self.flush().await?;
                    }
                    _ => self.input.advance(total),
                }
            }
            if self.read().await? == 0 {
                return Err(WireError::Lost {
                    server: error,
                    reason: "the server closed the connection".into(),
                });
            }
        }
    }

    /// The next whole message, reading as needed (startup and prepare).
    pub(super) async fn next_message(&mut self) -> Result<Message, WireError> {
        loop {
            if let Some(message) = Message::parse(&mut self.input)? {
                return Ok(message);
            }
            if self.read().await? == 0 {
                return Err(WireError::lost("the server closed the connection"));
            }
        }
    }
}

/// A message header the protocol does not allow (a length under 4).
fn protocol_broken(err: io::Error) -> WireError {
    WireError::lost(format!("the server broke the protocol: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream as StdUnixStream;

    /// A connection over one end of a socket pair, and the other end, where
    /// the test plays the server.
    fn connection_and_server() -> (WireConnection, StdUnixStream) {
        WireConnection::with_test_server()
    }

    /// A DataRow of one column of `value_bytes` bytes, then ReadyForQuery.
    fn one_row_then_ready(value_bytes: usize) -> Vec<u8> {
        let mut answer = vec![b'D'];
        answer.extend_from_slice(&(4 + 2 + 4 + value_bytes as i32).to_be_bytes());
        answer.extend_from_slice(&1i16.to_be_bytes());
        answer.extend_from_slice(&(value_bytes as i32).to_be_bytes());
        answer.resize(answer.len() + value_bytes, b'x');
        answer.extend_from_slice(&[b'Z', 0, 0, 0, 5, b'I']);
        answer
    }

    #[tokio::test]
    async fn a_new_connection_holds_small_buffers() {
        // A thousand idle connections must not cost pages each.
        let (connection, _server) = connection_and_server();
        let held_bytes = connection.input.capacity() + connection.out.capacity();
        assert!(held_bytes <= 2048, "{held_bytes} bytes of buffers");
    }

    #[tokio::test]
    async fn an_answer_larger_than_the_read_room_arrives_whole() {
        let (mut connection, mut server) = connection_and_server();
        let answer = one_row_then_ready(200_000);
        let writer = std::thread::spawn(move || server.write_all(&answer).map(|()| server));
        connection.read_to_ready().await.expect("the whole answer");
        assert!(
            connection.input.is_empty(),
            "{} bytes left",
            connection.input.len()
        );
        assert!(
            connection.read_room_bytes > READ_ROOM_MIN_BYTES,
            "the read room stayed at {} bytes",
            connection.read_room_bytes
        );
        // The next, short answer is read as well.
        let mut server = writer.join().expect("the writer").expect("writing");
        server.write_all(&one_row_then_ready(10)).expect("writing");
        connection.read_to_ready().await.expect("the short answer");
        assert!(connection.input.is_empty());
    }

    #[tokio::test]
    async fn a_closed_socket_is_a_lost_connection() {
        let (mut connection, server) = connection_and_server();
        drop(server);
        let err = connection.read_to_ready().await.expect_err("no answer");
        assert!(matches!(err, WireError::Lost { .. }), "{err:?}");
    }
}
