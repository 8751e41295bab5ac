//! The load workers' own lean PostgreSQL connection: the worker owns the
//! socket and talks the extended query protocol itself, as pgbench's clients
//! do with libpq. There is no connection task, no channel between the worker
//! and its socket, and the buffers are reused, so a transaction costs one
//! write, one read and no allocation on the client side. Messages are encoded,
//! parsed and authenticated (trust, password, MD5, SCRAM-SHA-256) with
//! `postgres-protocol`, the crate under tokio-postgres.
//!
//! Everything else (setup, observer, report, DDL) stays on tokio-postgres.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::{Host, SslMode};

/// Why a call on a [`WireConnection`] failed.
#[derive(Debug)]
pub enum WireError {
    /// The server answered with an error; the connection goes on.
    Server { sqlstate: String, message: String },
    /// The connection is gone or the server broke the protocol.
    Lost(String),
}

impl WireError {
    /// The error for a message: the server's text and SQLSTATE, or what went wrong.
    pub fn text(&self) -> String {
        match self {
            WireError::Server { sqlstate, message } => format!("{message} (SQLSTATE {sqlstate})"),
            WireError::Lost(message) => message.clone(),
        }
    }
}

impl From<io::Error> for WireError {
    fn from(err: io::Error) -> WireError {
        WireError::Lost(format!("connection lost: {err}"))
    }
}

/// Where the server listens: what a connection and a cancel request connect to.
#[derive(Debug, Clone)]
enum Address {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// The socket, TCP or unix, registered with the runtime for readability only.
///
/// Only for reading: a socket also registered for writability wakes the
/// thread each time the server reads a query and frees send-buffer space,
/// a wake-up per transaction for nothing (pgbench's `poll()` asks for input
/// only). Writes go straight to the socket; a query never fills its buffer
/// unless the server stops reading, and then the write retries every
/// millisecond.
enum Stream {
    Tcp(AsyncFd<std::net::TcpStream>),
    Unix(AsyncFd<std::os::unix::net::UnixStream>),
}

impl Stream {
    async fn connect(address: &Address) -> io::Result<Stream> {
        Ok(match address {
            Address::Tcp(addr) => {
                let stream = TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                Stream::Tcp(register_for_reading(stream.into_std()?)?)
            }
            Address::Unix(path) => Stream::Unix(register_for_reading(
                UnixStream::connect(path).await?.into_std()?,
            )?),
        })
    }

    /// Writes all of `out` and empties it.
    async fn write_all(&mut self, out: &mut BytesMut) -> io::Result<()> {
        match self {
            Stream::Tcp(socket) => write_all_to(socket.get_ref(), out).await,
            Stream::Unix(socket) => write_all_to(socket.get_ref(), out).await,
        }
    }

    /// Reads what has arrived (through `scratch`) onto the end of `input`; 0 at end of stream.
    async fn read(&mut self, input: &mut BytesMut, scratch: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(socket) => read_from(socket, input, scratch).await,
            Stream::Unix(socket) => read_from(socket, input, scratch).await,
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

/// What a cancel request needs: the server's address and the session's key.
/// Cheap to clone; usable while the connection is busy.
#[derive(Debug, Clone)]
pub struct WireCancel {
    address: Address,
    process_id: i32,
    secret_key: i32,
}

impl WireCancel {
    /// Asks the server to cancel whatever the session runs now (PostgreSQL's
    /// cancel request, on a connection of its own). Waits until the server has
    /// read it, up to 2 s.
    pub async fn cancel_query(&self) -> io::Result<()> {
        let send = async {
            let mut stream = Stream::connect(&self.address).await?;
            let mut out = BytesMut::with_capacity(16);
            frontend::cancel_request(self.process_id, self.secret_key, &mut out);
            stream.write_all(&mut out).await?;
            // The server closes the connection once it has the request.
            let mut input = BytesMut::new();
            let mut scratch = [0u8; 64];
            while stream.read(&mut input, &mut scratch).await? > 0 {}
            Ok(())
        };
        tokio::time::timeout(Duration::from_secs(2), send)
            .await
            .unwrap_or_else(|_| Err(io::Error::other("the cancel request timed out")))
    }
}

/// A statement prepared on one connection (a named server-side statement).
#[derive(Debug, Clone)]
pub struct WireStatement {
    name: String,
    /// How many parameters the server expects.
    pub params: usize,
}

/// One connection of a load worker: the socket and its buffers.
pub struct WireConnection {
    stream: Stream,
    /// Bytes to send, built in place and reused.
    out: BytesMut,
    /// Bytes received and not yet parsed.
    input: BytesMut,
    /// What one read system call fills, reused (not zeroed per read).
    scratch: Box<[u8]>,
    cancel: WireCancel,
    prepared: usize,
}

impl WireConnection {
    /// Connects with the settings of `config` (hosts, port, user, password,
    /// database, options, application name, connect timeout), as tokio-postgres
    /// would, without TLS. Tries each host in turn.
    pub async fn connect(config: &tokio_postgres::Config) -> Result<WireConnection, WireError> {
        if config.get_ssl_mode() == SslMode::Require {
            return Err(WireError::Lost(
                "sslmode=require: stallbench connects without TLS; use sslmode=prefer or disable"
                    .into(),
            ));
        }
        let hosts = config.get_hosts();
        let hostaddrs = config.get_hostaddrs();
        let count = hosts.len().max(hostaddrs.len());
        if count == 0 {
            return Err(WireError::Lost("no host to connect to".into()));
        }
        let ports = config.get_ports();
        let timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(30));
        let mut last_error = WireError::Lost("no address to connect to".into());
        for index in 0..count {
            let port = ports
                .get(index)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            let addresses = match (hostaddrs.get(index), hosts.get(index)) {
                (Some(ip), _) => vec![Address::Tcp(SocketAddr::new(*ip, port))],
                (None, Some(Host::Unix(dir))) => {
                    vec![Address::Unix(dir.join(format!(".s.PGSQL.{port}")))]
                }
                (None, Some(Host::Tcp(name))) => {
                    match tokio::net::lookup_host((name.as_str(), port)).await {
                        Ok(found) => found.map(Address::Tcp).collect(),
                        Err(err) => {
                            last_error = WireError::Lost(format!("looking up {name}: {err}"));
                            continue;
                        }
                    }
                }
                (None, None) => continue,
            };
            for address in addresses {
                let attempt = tokio::time::timeout(timeout, Self::connect_to(address, config));
                match attempt.await {
                    Ok(Ok(connection)) => return Ok(connection),
                    Ok(Err(err @ WireError::Server { .. })) => return Err(err),
                    Ok(Err(err)) => last_error = err,
                    Err(_) => {
                        last_error = WireError::Lost(format!(
                            "no answer within the connect timeout of {timeout:?}"
                        ))
                    }
                }
            }
        }
        Err(last_error)
    }

    async fn connect_to(
        address: Address,
        config: &tokio_postgres::Config,
    ) -> Result<WireConnection, WireError> {
        let stream = Stream::connect(&address).await?;
        let mut connection = WireConnection {
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
        };
        connection.start_up(config).await?;
        Ok(connection)
    }

    /// The startup message, authentication, then the session's parameters
    /// and key up to the first ReadyForQuery.
    async fn start_up(&mut self, config: &tokio_postgres::Config) -> Result<(), WireError> {
        let user = config
            .get_user()
            .ok_or_else(|| WireError::Lost("no user name in the connection settings".into()))?;
        let mut params = vec![("client_encoding", "UTF8"), ("user", user)];
        if let Some(dbname) = config.get_dbname() {
            params.push(("database", dbname));
        }
        if let Some(options) = config.get_options() {
            params.push(("options", options));
        }
        if let Some(name) = config.get_application_name() {
            params.push(("application_name", name));
        }
        frontend::startup_message(params, &mut self.out)?;
        self.flush().await?;
        let password = config.get_password();
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.next_message().await? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(need(password)?, &mut self.out)?;
                    self.flush().await?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(user.as_bytes(), need(password)?, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.out)?;
                    self.flush().await?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut scram_offered = false;
                    while let Some(mechanism) = mechanisms.next()? {
                        scram_offered |= mechanism == SCRAM_SHA_256;
                    }
                    if !scram_offered {
                        return Err(WireError::Lost(
                            "the server offers no SASL mechanism stallbench knows (SCRAM-SHA-256)"
                                .into(),
                        ));
                    }
                    let exchange = ScramSha256::new(need(password)?, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(
                        SCRAM_SHA_256,
                        exchange.message(),
                        &mut self.out,
                    )?;
                    self.flush().await?;
                    scram = Some(exchange);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let exchange = scram.as_mut().ok_or_else(|| unexpected("SASL continue"))?;
                    exchange.update(body.data())?;
                    frontend::sasl_response(exchange.message(), &mut self.out)?;
                    self.flush().await?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let exchange = scram.as_mut().ok_or_else(|| unexpected("SASL final"))?;
                    exchange.finish(body.data())?;
                }
                Message::BackendKeyData(body) => {
                    self.cancel.process_id = body.process_id();
                    self.cancel.secret_key = body.secret_key();
                }
                Message::ParameterStatus(_) | Message::NoticeResponse(_) => {}
                Message::ErrorResponse(body) => return Err(server_error(&body)),
                Message::ReadyForQuery(_) => return Ok(()),
                _ => {
                    return Err(WireError::Lost(
                        "the server asks for an authentication method stallbench does not \
                         support (it supports trust, password, md5 and scram-sha-256)"
                            .into(),
                    ));
                }
            }
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
        let mut params = 0;
        let mut error = None;
        loop {
            match self.next_message().await? {
                Message::ParameterDescription(body) => {
                    let mut types = body.parameters();
                    while types.next()?.is_some() {
                        params += 1;
                    }
                }
                Message::ErrorResponse(body) => error = Some(server_error(&body)),
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match error {
            Some(error) => Err(error),
            None => Ok(WireStatement { name, params }),
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
            return Err(WireError::Lost("encoding the Bind message failed".into()));
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

    async fn flush(&mut self) -> io::Result<()> {
        self.stream.write_all(&mut self.out).await
    }

    /// Reads messages up to ReadyForQuery; the first error in them is the result.
    /// The hot path: only the 5-byte header of each message is looked at, except
    /// for errors and COPY.
    async fn read_to_ready(&mut self) -> Result<(), WireError> {
        let mut error = None;
        loop {
            while self.input.len() >= 5 {
                let kind = self.input[0];
                let length = i32::from_be_bytes([
                    self.input[1],
                    self.input[2],
                    self.input[3],
                    self.input[4],
                ]);
                if length < 4 {
                    return Err(WireError::Lost(format!(
                        "the server sent a message of invalid length {length}"
                    )));
                }
                let total = 1 + length as usize;
                if self.input.len() < total {
                    self.input.reserve(total - self.input.len());
                    break;
                }
                match kind {
                    b'Z' => {
                        self.input.advance(total);
                        return match error {
                            None => Ok(()),
                            Some(error) => Err(error),
                        };
                    }
                    b'E' => {
                        if let Some(Message::ErrorResponse(body)) = Message::parse(&mut self.input)?
                            && error.is_none()
                        {
                            error = Some(server_error(&body));
                        }
                    }
                    b'G' => {
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
                return Err(WireError::Lost(match error {
                    Some(error) => format!("the server closed the connection: {}", error.text()),
                    None => "the server closed the connection".into(),
                }));
            }
        }
    }

    /// The next whole message, reading as needed (startup and prepare).
    async fn next_message(&mut self) -> Result<Message, WireError> {
        loop {
            if let Some(message) = Message::parse(&mut self.input)? {
                return Ok(message);
            }
            if self.stream.read(&mut self.input, &mut self.scratch).await? == 0 {
                return Err(WireError::Lost("the server closed the connection".into()));
            }
        }
    }
}

/// The password the server asks for, or an error saying where to put it.
fn need(password: Option<&[u8]>) -> Result<&[u8], WireError> {
    password.ok_or_else(|| {
        WireError::Lost(
            "the server asks for a password and the connection string has none; \
             add password=... (or user:password@ in the URL)"
                .into(),
        )
    })
}

fn unexpected(what: &str) -> WireError {
    WireError::Lost(format!("the server sent an unexpected {what} message"))
}

/// The SQLSTATE and message of an ErrorResponse.
fn server_error(body: &ErrorResponseBody) -> WireError {
    let mut sqlstate = String::new();
    let mut message = String::new();
    let mut fields = body.fields();
    while let Ok(Some(field)) = fields.next() {
        match field.type_() {
            b'C' => sqlstate = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            _ => {}
        }
    }
    if sqlstate.is_empty() {
        sqlstate.push_str("XX000");
    }
    WireError::Server { sqlstate, message }
}
