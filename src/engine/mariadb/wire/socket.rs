//! The client's socket and how it waits: a non-blocking unix or TCP socket,
//! read with `recv` and, when nothing has arrived (`EAGAIN`), `poll` for
//! input only, as libmariadb waits.
//!
//! Why only for input: on a unix socket the server's read of a request
//! frees the client's send buffer and wakes whoever waits on the socket for
//! writing, or in a blocking `recv`, or in an `epoll` registered for both
//! directions (tokio's): a second wake-up per transaction for nothing.
//! `poll(POLLIN)` is not reached by that wake-up, so a client sleeps once
//! per transaction, as sysbench's do (docs/benchmark.md).
//!
//! A wait gives up at its [`Deadline`]: the run's end, or the load's stop
//! flag (the run stopped, Ctrl-C), checked at least every
//! [`STOP_CHECK_EVERY`]. A connect is not begun past the deadline, and a
//! TCP connect waits at most until the run's end (and [`CONNECT_LIMIT`]);
//! the stop flag is looked at before each address is tried.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::error::MariaWireError;

/// How often a waiting client looks at the stop flag.
pub const STOP_CHECK_EVERY: Duration = Duration::from_millis(100);

/// How long a TCP connect may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    Unix(PathBuf),
    Tcp { host: String, port: u16 },
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Unix(path) => write!(f, "socket {}", path.display()),
            Address::Tcp { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

/// When a wait gives up: at `end` (the run's end; `None` before the clock
/// starts) or once `stop` is set.
#[derive(Debug, Clone)]
pub struct Deadline {
    pub end: Option<Instant>,
    pub stop: Arc<AtomicBool>,
}

impl Deadline {
    /// How long a connect may wait: [`CONNECT_LIMIT`], cut to the time left
    /// before the end; `None` when the deadline has passed.
    fn connect_limit(&self) -> Option<Duration> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        match self.end {
            None => Some(CONNECT_LIMIT),
            Some(end) => {
                let left = end.checked_duration_since(Instant::now())?;
                (!left.is_zero()).then(|| left.min(CONNECT_LIMIT))
            }
        }
    }

    /// How long the next `poll` may sleep, or `None` when the wait is over.
    fn next_sleep(&self) -> Option<Duration> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        match self.end {
            None => Some(STOP_CHECK_EVERY),
            Some(end) => {
                let left = end.checked_duration_since(Instant::now())?;
                (!left.is_zero()).then(|| left.min(STOP_CHECK_EVERY))
            }
        }
    }
}

/// A connected, non-blocking socket.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
}

impl Socket {
    /// Connects to `address` (Nagle's delay off on TCP), to the addresses
    /// of `resolved` when it has any, within `deadline`
    /// ([`MariaWireError::Ended`] once it has passed).
    pub fn connect(
        address: &Address,
        resolved: &[SocketAddr],
        deadline: &Deadline,
    ) -> Result<Socket, MariaWireError> {
        let doing = || format!("connecting to {address}");
        deadline.connect_limit().ok_or(MariaWireError::Ended)?;
        let fd: OwnedFd = match address {
            Address::Unix(path) => UnixStream::connect(path)
                .map_err(|err| MariaWireError::io(&doing(), err))?
                .into(),
            Address::Tcp { .. } if !resolved.is_empty() => {
                connect_tcp(resolved, deadline, &doing())?.into()
            }
            Address::Tcp { host, port } => {
                let addrs: Vec<_> = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(|err| MariaWireError::io(&doing(), err))?
                    .collect();
                connect_tcp(&addrs, deadline, &doing())?.into()
            }
        };
        Socket::from_fd(fd).map_err(|err| MariaWireError::io(&doing(), err))
    }

    /// A socket over `fd`, made non-blocking.
    pub fn from_fd(fd: OwnedFd) -> io::Result<Socket> {
        // SAFETY: fcntl on a descriptor this value owns; no memory is passed.
        unsafe {
            let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Socket { fd })
    }

    /// Sends all of `bytes`, waiting for room (`POLLOUT`) only when the
    /// socket's buffer is full.
    pub fn send_all(&self, mut bytes: &[u8], deadline: &Deadline) -> Result<(), MariaWireError> {
        while !bytes.is_empty() {
            // SAFETY: `send` reads at most `bytes.len()` bytes from `bytes`.
            let sent = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if sent >= 0 {
                bytes = &bytes[sent as usize..];
                continue;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => self.wait(libc::POLLOUT, deadline)?,
                _ => return Err(MariaWireError::io("sending to the server", err)),
            }
        }
        Ok(())
    }

    /// Receives what has arrived into `room`, waiting for it with
    /// `poll(POLLIN)`; 0 bytes is an error (the server closed the connection).
    pub fn recv(&self, room: &mut [u8], deadline: &Deadline) -> Result<usize, MariaWireError> {
        loop {
            // SAFETY: `recv` writes at most `room.len()` bytes into `room`.
            let read =
                unsafe { libc::recv(self.fd.as_raw_fd(), room.as_mut_ptr().cast(), room.len(), 0) };
            if read > 0 {
                return Ok(read as usize);
            }
            if read == 0 {
                return Err(MariaWireError::lost("the server closed the connection"));
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => self.wait(libc::POLLIN, deadline)?,
                _ => return Err(MariaWireError::io("receiving from the server", err)),
            }
        }
    }

    /// Sleeps until the socket is ready for `events` (or has failed), or
    /// the deadline passes ([`MariaWireError::Ended`]).
    fn wait(&self, events: libc::c_short, deadline: &Deadline) -> Result<(), MariaWireError> {
        loop {
            let sleep = deadline.next_sleep().ok_or(MariaWireError::Ended)?;
            match poll(self.fd.as_raw_fd(), events, sleep) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(MariaWireError::io("waiting for the server", err)),
            }
        }
    }
}

/// Whether `fd` became ready for `events` (or failed: the next call says
/// how) within `sleep`.
fn poll(fd: RawFd, events: libc::c_short, sleep: Duration) -> io::Result<bool> {
    let mut polled = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let millis = sleep.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one pollfd, owned by this frame, for the call's duration.
    let ready = unsafe { libc::poll(&mut polled, 1, millis) };
    match ready {
        0 => Ok(false),
        1.. => Ok(true),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A TCP connection to the first of `addrs` that answers, each tried for at
/// most the time `deadline` leaves; `doing` words a failure.
fn connect_tcp(
    addrs: &[SocketAddr],
    deadline: &Deadline,
    doing: &str,
) -> Result<TcpStream, MariaWireError> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    for addr in addrs {
        let limit = deadline.connect_limit().ok_or(MariaWireError::Ended)?;
        match TcpStream::connect_timeout(addr, limit) {
            Ok(stream) => {
                stream
                    .set_nodelay(true)
                    .map_err(|err| MariaWireError::io(doing, err))?;
                return Ok(stream);
            }
            Err(err) => last = err,
        }
    }
    // An attempt cut short by the deadline is the run's end, not a failure.
    deadline.connect_limit().ok_or(MariaWireError::Ended)?;
    Err(MariaWireError::io(doing, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deadline_in(after: Duration) -> Deadline {
        Deadline {
            end: Some(Instant::now() + after),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    #[test]
    fn a_wait_for_a_silent_server_ends_at_the_deadline() {
        let (client, _server) = UnixStream::pair().unwrap();
        let socket = Socket::from_fd(client.into()).unwrap();
        let started = Instant::now();
        let err = socket
            .recv(&mut [0; 16], &deadline_in(Duration::from_millis(50)))
            .unwrap_err();
        assert!(matches!(err, MariaWireError::Ended), "{err}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_wait_ends_when_the_stop_flag_is_set() {
        let (client, _server) = UnixStream::pair().unwrap();
        let socket = Socket::from_fd(client.into()).unwrap();
        let deadline = Deadline {
            end: None,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let stop = deadline.stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            stop.store(true, Ordering::Relaxed);
        });
        let err = socket.recv(&mut [0; 16], &deadline).unwrap_err();
        assert!(matches!(err, MariaWireError::Ended), "{err}");
        setter.join().unwrap();
    }

    #[test]
    fn no_connect_is_begun_past_the_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let address = Address::Tcp {
            host: "127.0.0.1".to_string(),
            port: addr.port(),
        };
        let passed = Deadline {
            end: Some(Instant::now()),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let err = Socket::connect(&address, &[addr], &passed).unwrap_err();
        assert!(matches!(err, MariaWireError::Ended), "{err}");
        let stopped = Deadline {
            end: None,
            stop: Arc::new(AtomicBool::new(true)),
        };
        let unix = Address::Unix("/nonexistent/mariadb.sock".into());
        let err = Socket::connect(&unix, &[], &stopped).unwrap_err();
        assert!(matches!(err, MariaWireError::Ended), "{err}");
        Socket::connect(&address, &[addr], &deadline_in(Duration::from_secs(5))).unwrap();
        Socket::connect(&address, &[], &deadline_in(Duration::from_secs(5))).unwrap();
    }

    #[test]
    fn a_connect_waits_no_longer_than_the_time_left() {
        let left = deadline_in(Duration::from_millis(200));
        assert!(left.connect_limit().unwrap() <= Duration::from_millis(200));
        let unbounded = Deadline {
            end: None,
            stop: Arc::new(AtomicBool::new(false)),
        };
        assert_eq!(unbounded.connect_limit(), Some(CONNECT_LIMIT));
    }

    #[test]
    fn bytes_go_both_ways_and_a_closed_server_is_a_lost_connection() {
        let (client, mut server) = UnixStream::pair().unwrap();
        let socket = Socket::from_fd(client.into()).unwrap();
        let deadline = deadline_in(Duration::from_secs(5));
        socket.send_all(b"ping", &deadline).unwrap();
        let mut got = [0; 4];
        std::io::Read::read_exact(&mut server, &mut got).unwrap();
        assert_eq!(&got, b"ping");
        server.write_all(b"pong").unwrap();
        let mut room = [0; 16];
        let read = socket.recv(&mut room, &deadline).unwrap();
        assert_eq!(&room[..read], b"pong");
        drop(server);
        let err = socket.recv(&mut room, &deadline).unwrap_err();
        assert!(matches!(err, MariaWireError::Lost { .. }), "{err}");
    }
}
