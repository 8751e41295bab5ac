//! One open connection and the statements it runs: the hot path of a load
//! worker. The worker owns the socket; there is no connection task and no
//! channel in between, and the buffers are reused, so a transaction costs one
//! write, one read and no allocation on the client side. The socket code lives
//! here, next to the loop that reads the answers, so that the hot path is one
//! module.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
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

    /// Reads what has arrived (through `scratch`) onto the end of `input`; 0 at end of stream.
    pub(super) async fn read(
        &mut self,
        input: &mut BytesMut,
        scratch: &mut [u8],
    ) -> io::Result<usize> {
        match self {
            Stream::Tcp(socket) => read_from(socket, input, scratch).await,
            Stream::Unix(socket) => read_from(socket, input, scratch).await,
            Stream::Tls(session) => {
                let read = session.read(scratch).await?;
                input.extend_from_slice(&scratch[..read]);
                Ok(read)
            }
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

/// Reads once what has arrived onto the end of `input`, waiting for it.
/// `scratch` is the connection's reused read buffer.
async fn read_from<T>(
    socket: &AsyncFd<T>,
    input: &mut BytesMut,
    scratch: &mut [u8],
) -> io::Result<usize>
where
    T: AsRawFd,
    for<'a> &'a T: Read,
{
    loop {
        let mut guard = socket.readable().await?;
        match guard.try_io(|socket| socket.get_ref().read(scratch)) {
            Ok(Ok(read)) => {
                if read < scratch.len() {
                    // A short read drained the socket: wait for the next
                    // edge instead of a read that would only say "empty"
                    // (the runtime keeps an edge that came in meanwhile).
                    guard.clear_ready();
                }
                input.extend_from_slice(&scratch[..read]);
                return Ok(read);
            }
            Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(err)) => return Err(err),
            Err(_would_block) => {}
        }
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

/// One connection of a load worker: the socket and its buffers.
pub struct WireConnection {
    stream: Stream,
    /// Bytes to send, built in place and reused.
    pub(super) out: BytesMut,
    /// Bytes received and not yet parsed.
    input: BytesMut,
    /// What one read system call fills, reused (not zeroed per read).
    scratch: Box<[u8]>,
    /// The session's key, filled in by the login.
    pub(super) cancel: WireCancel,
    /// How many statements were prepared: the next one's name.
    prepared: usize,
}

impl WireConnection {
    /// A connection on `stream` with empty buffers, before the startup message.
    pub(super) fn new(stream: Stream, address: Address) -> WireConnection {
        WireConnection {
            stream,
            out: BytesMut::with_capacity(1024),
            input: BytesMut::with_capacity(8192),
            scratch: vec![0; 8192].into_boxed_slice(),
            cancel: WireCancel {
                address,
                process_id: 0,
                secret_key: 0,
            },
            prepared: 0,
        }
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
                Message::ReadyForQuery(_) => break,
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
            if self.stream.read(&mut self.input, &mut self.scratch).await? == 0 {
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
            if self.stream.read(&mut self.input, &mut self.scratch).await? == 0 {
                return Err(WireError::lost("the server closed the connection"));
            }
        }
    }
}

/// A message header the protocol does not allow (a length under 4).
fn protocol_broken(err: io::Error) -> WireError {
    WireError::lost(format!("the server broke the protocol: {err}"))
}
