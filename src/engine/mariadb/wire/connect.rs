//! Opening a connection: where to (the same `mysql_async::Opts` the rest of
//! the harness connects with, from `--db-url` or the throwaway server's
//! socket), the handshake, the login and the database.
//!
//! Logins it speaks: `mysql_native_password` (with or without a password,
//! also when the server switches to it), and MariaDB's `unix_socket` over
//! the unix socket, which checks the client's user on the server's side and
//! needs no answer (the throwaway server's `root`). Any other plugin
//! (`ed25519`, `caching_sha2_password`, PAM's `mysql_clear_password`) is
//! refused with an error naming it and the fix.
//!
//! What of the URL it cannot honour it refuses rather than drops: TLS (any
//! `ssl` option, `require_ssl`) and `compression`, which mysql_async speaks
//! for the harness's other sessions. One it departs from on purpose:
//! mysql_async's `prefer_socket` (on by default) moves a TCP connection to
//! localhost over to the server's `@@socket`; the load stays on the
//! transport the URL names (TCP to its host and port, or its `socket`).

use std::net::SocketAddr;

use super::connection::MariaConnection;
use super::error::MariaWireError;
use super::packet::{self, Handshake, HandshakeResponse};
use super::socket::{Address, Deadline, Socket};

/// `mysql_native_password`, the login the client answers with.
const NATIVE_PASSWORD: &str = "mysql_native_password";

/// What a connection needs: where, who, and the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    pub address: Address,
    /// A TCP address's IPs, resolved once ([`ConnectOptions::resolve`]);
    /// empty: resolved at each connect.
    pub resolved: Vec<SocketAddr>,
    pub user: String,
    pub password: String,
    pub database: Option<String>,
}

impl ConnectOptions {
    /// The options of `opts`: its unix socket when it names one, else TCP
    /// to its host and port. TLS or compression in `opts` is refused: the
    /// load would otherwise run without them.
    pub fn from_opts(opts: &mysql_async::Opts) -> Result<ConnectOptions, MariaWireError> {
        let unsupported = |what: &str, option: &str| MariaWireError::Refused {
            reason: format!(
                "--db-url: the MariaDB load's own client speaks no {what} ({option} in the \
                 URL); use the server's unix socket (?socket=...) or a URL without {what}"
            ),
        };
        if opts.ssl_opts().is_some() {
            return Err(unsupported("TLS", "require_ssl or ssl options"));
        }
        if opts.compression().is_some() {
            return Err(unsupported("compression", "compression"));
        }
        let address = match opts.socket() {
            Some(path) => Address::Unix(path.into()),
            None => Address::Tcp {
                host: opts.ip_or_hostname().to_string(),
                port: opts.tcp_port(),
            },
        };
        Ok(ConnectOptions {
            address,
            resolved: Vec::new(),
            user: opts.user().unwrap_or_default().to_string(),
            password: opts.pass().unwrap_or_default().to_string(),
            database: opts.db_name().map(str::to_string),
        })
    }

    /// Resolves a TCP address's host once, so that a reconnect during the
    /// run waits on no name lookup.
    pub async fn resolve(&mut self) -> Result<(), MariaWireError> {
        if let Address::Tcp { host, port } = &self.address {
            let found = tokio::net::lookup_host((host.as_str(), *port))
                .await
                .map_err(|err| MariaWireError::io(&format!("resolving {}", self.address), err))?;
            self.resolved = found.collect();
        }
        Ok(())
    }
}

/// Opens a connection with `options`, logged in and in its database.
pub fn connect(
    options: &ConnectOptions,
    deadline: &Deadline,
) -> Result<MariaConnection, MariaWireError> {
    let socket = Socket::connect(&options.address, &options.resolved, deadline)?;
    open_on(socket, options, deadline)
}

/// The handshake and login of a connection on `socket`.
pub(super) fn open_on(
    socket: Socket,
    options: &ConnectOptions,
    deadline: &Deadline,
) -> Result<MariaConnection, MariaWireError> {
    let mut conn = MariaConnection::new(socket);
    let range = conn.next_packet(deadline)?;
    let payload = conn.payload(range);
    if payload.first() == Some(&0xFF) {
        return Err(MariaWireError::Server(packet::parse_err(payload)));
    }
    let handshake = packet::parse_handshake(payload)?;
    let (capabilities, extended) =
        packet::client_capabilities(&handshake, options.database.is_some());
    conn.capabilities = capabilities;
    conn.extended = extended;
    conn.id = handshake.connection_id;
    log_in(&mut conn, options, &handshake, deadline)?;
    Ok(conn)
}

/// Sends the handshake response and answers the server until it says OK.
fn log_in(
    conn: &mut MariaConnection,
    options: &ConnectOptions,
    handshake: &Handshake,
    deadline: &Deadline,
) -> Result<(), MariaWireError> {
    let (plugin, auth) = match auth_answer(&handshake.plugin, options, &handshake.scramble) {
        Ok(answer) => answer,
        // The server may switch to a plugin this client speaks: start with ours.
        Err(_) => (
            NATIVE_PASSWORD,
            packet::native_password(options.password.as_bytes(), &handshake.scramble),
        ),
    };
    let response = HandshakeResponse {
        capabilities: conn.capabilities,
        extended: conn.extended,
        user: &options.user,
        auth: &auth,
        database: options.database.as_deref(),
        plugin,
    };
    packet::handshake_response(conn.out(), &response)?;
    conn.sequence = 1;
    conn.flush(deadline)?;
    loop {
        let range = conn.next_packet(deadline)?;
        let payload = conn.payload(range);
        match payload.first() {
            Some(0x00) => return Ok(()),
            Some(0xFF) => return Err(MariaWireError::Server(packet::parse_err(payload))),
            Some(0xFE) => {
                let (plugin, data) = parse_auth_switch(payload);
                let (_, auth) = auth_answer(&plugin, options, &data)?;
                let start = packet::begin_packet(conn.out());
                conn.out().extend_from_slice(&auth);
                let sequence = conn.sequence.wrapping_add(1);
                packet::end_packet(conn.out(), start, sequence)?;
                conn.sequence = sequence;
                conn.flush(deadline)?;
            }
            _ => {
                return Err(refused_plugin(
                    &handshake.plugin,
                    options,
                    "asks for more authentication data",
                ));
            }
        }
    }
}

/// An AuthSwitchRequest's plugin name and data (its trailing NUL cut).
fn parse_auth_switch(payload: &[u8]) -> (String, Vec<u8>) {
    let mut reader = packet::Reader::new(&payload[1..]);
    let plugin = reader.nul_terminated().unwrap_or_default();
    let mut data = reader.rest();
    if data.last() == Some(&0) {
        data = &data[..data.len() - 1];
    }
    (String::from_utf8_lossy(plugin).into_owned(), data.to_vec())
}

/// The plugin's name and the client's answer for `plugin` with `scramble`.
fn auth_answer(
    plugin: &str,
    options: &ConnectOptions,
    scramble: &[u8],
) -> Result<(&'static str, Vec<u8>), MariaWireError> {
    match plugin {
        "" | NATIVE_PASSWORD => Ok((
            NATIVE_PASSWORD,
            packet::native_password(options.password.as_bytes(), scramble),
        )),
        // The server checks the peer's user on the socket; nothing to send.
        "unix_socket" | "auth_socket" => Ok(("unix_socket", Vec::new())),
        other => Err(refused_plugin(
            other,
            options,
            "is not one this client speaks",
        )),
    }
}

/// The error for a login this client cannot make.
fn refused_plugin(plugin: &str, options: &ConnectOptions, problem: &str) -> MariaWireError {
    MariaWireError::Refused {
        reason: format!(
            "{}: user {}: the server's authentication plugin {plugin} {problem} (the load's \
             own client speaks mysql_native_password and unix_socket); give the user one of \
             those (ALTER USER ... IDENTIFIED VIA mysql_native_password USING PASSWORD('...'))",
            options.address, options.user
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_from_the_same_url_the_harness_reads() {
        let url = "mysql://app:pw@db.staging:3307/shop";
        let opts = mysql_async::Opts::from_url(url).unwrap();
        let options = ConnectOptions::from_opts(&opts).unwrap();
        assert_eq!(
            options.address,
            Address::Tcp {
                host: "db.staging".to_string(),
                port: 3307
            }
        );
        assert_eq!(
            (options.user.as_str(), options.password.as_str()),
            ("app", "pw")
        );
        assert_eq!(options.database.as_deref(), Some("shop"));
        let opts =
            mysql_async::Opts::from_url("mysql://root@localhost/?socket=%2Ftmp%2Fm.sock").unwrap();
        let options = ConnectOptions::from_opts(&opts).unwrap();
        assert_eq!(options.address, Address::Unix("/tmp/m.sock".into()));
        assert_eq!(options.password, "");
        assert_eq!(options.database, None);
    }

    #[test]
    fn tls_or_compression_in_the_url_is_refused_with_the_fix() {
        for (url, what) in [
            ("mysql://app@db:3306/shop?require_ssl=true", "TLS"),
            ("mysql://app@db:3306/shop?compression=fast", "compression"),
        ] {
            let opts = mysql_async::Opts::from_url(url).unwrap();
            let err = ConnectOptions::from_opts(&opts).unwrap_err().to_string();
            assert!(err.starts_with("--db-url:"), "{err}");
            assert!(err.contains(&format!("speaks no {what}")), "{err}");
            assert!(err.contains("?socket="), "{err}");
        }
        // Certificate checks without TLS asked for leave it off: nothing to refuse.
        let opts = mysql_async::Opts::from_url("mysql://app@db/shop?verify_ca=false").unwrap();
        assert!(ConnectOptions::from_opts(&opts).is_ok());
    }

    #[test]
    fn an_unknown_plugin_is_refused_by_name_with_the_fix() {
        let options = ConnectOptions {
            address: Address::Unix("/tmp/s".into()),
            resolved: Vec::new(),
            user: "app".to_string(),
            password: String::new(),
            database: None,
        };
        let err = auth_answer("client_ed25519", &options, &[0; 20]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("client_ed25519"), "{text}");
        assert!(text.contains("user app"), "{text}");
        assert!(
            text.contains("IDENTIFIED VIA mysql_native_password"),
            "{text}"
        );
        assert!(
            auth_answer("unix_socket", &options, &[])
                .unwrap()
                .1
                .is_empty()
        );
    }

    #[test]
    fn an_auth_switch_names_its_plugin_and_data() {
        let mut payload = vec![0xFE];
        payload.extend_from_slice(b"mysql_native_password\0");
        payload.extend_from_slice(&[7; 20]);
        payload.push(0);
        let (plugin, data) = parse_auth_switch(&payload);
        assert_eq!(plugin, "mysql_native_password");
        assert_eq!(data, [7; 20]);
    }
}
