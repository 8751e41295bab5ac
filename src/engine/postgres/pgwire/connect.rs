//! Opening a connection: the settings built from `conninfo` (hosts,
//! hostaddrs, ports, connect timeout, target_session_attrs) as tokio-postgres
//! reads them, tried host by host; TLS as the sslmode asks (SSLRequest, then
//! a rustls session); then the startup message and the login (trust,
//! password, MD5, SCRAM-SHA-256) up to the first ReadyForQuery. Runs once per
//! worker, never per transaction.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::config::{Host, TargetSessionAttrs};
use tokio_rustls::TlsConnector;

use super::connection::{Address, Stream, WireConnection};
use super::error::{ConnectError, server_error};
use crate::engine::postgres::conninfo::{SslMode, Tls, certificate_failure};

impl WireConnection {
    /// Connects with the settings of `config` (hosts, port, user, password,
    /// database, options, application name, connect timeout,
    /// target_session_attrs), as tokio-postgres would, secured as `tls`
    /// says. Tries each host in turn; a login the server refuses ends the
    /// search.
    pub async fn connect(
        config: &tokio_postgres::Config,
        tls: &Tls,
    ) -> Result<WireConnection, ConnectError> {
        let hosts = config.get_hosts();
        let hostaddrs = config.get_hostaddrs();
        let count = hosts.len().max(hostaddrs.len());
        if count == 0 {
            return Err(ConnectError::Settings("no host to connect to".into()));
        }
        let ports = config.get_ports();
        let timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(30));
        let mut last_error = ConnectError::Unreachable("no address to connect to".into());
        for index in 0..count {
            let port = ports
                .get(index)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            // The name the server's certificate must carry: the host name, else the address.
            let server_name = match (hosts.get(index), hostaddrs.get(index)) {
                (Some(Host::Tcp(name)), _) => name.clone(),
                (_, Some(ip)) => ip.to_string(),
                _ => String::new(),
            };
            let addresses = match (hostaddrs.get(index), hosts.get(index)) {
                (Some(ip), _) => vec![Address::Tcp(SocketAddr::new(*ip, port))],
                (None, Some(Host::Unix(dir))) => {
                    vec![Address::Unix(dir.join(format!(".s.PGSQL.{port}")))]
                }
                (None, Some(Host::Tcp(name))) => {
                    match tokio::net::lookup_host((name.as_str(), port)).await {
                        Ok(found) => found.map(Address::Tcp).collect(),
                        Err(err) => {
                            last_error =
                                ConnectError::Unreachable(format!("looking up {name}: {err}"));
                            continue;
                        }
                    }
                }
                (None, None) => continue,
            };
            for address in addresses {
                let attempt = tokio::time::timeout(
                    timeout,
                    Self::connect_to(address, &server_name, config, tls),
                );
                match attempt.await {
                    Ok(Ok(connection)) => return Ok(connection),
                    Ok(Err(err @ ConnectError::Server(_))) => return Err(err),
                    Ok(Err(err)) => last_error = err,
                    Err(_) => {
                        last_error = ConnectError::Unreachable(format!(
                            "no answer within the connect timeout of {timeout:?}"
                        ))
                    }
                }
            }
        }
        Err(last_error)
    }

    /// One address: plain or TLS as the sslmode says (libpq uses no TLS on a unix socket).
    async fn connect_to(
        address: Address,
        server_name: &str,
        config: &tokio_postgres::Config,
        tls: &Tls,
    ) -> Result<WireConnection, ConnectError> {
        let mode = tls.mode();
        match (&address, mode) {
            (Address::Unix(_), SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull) => {
                Err(ConnectError::Settings(format!(
                    "sslmode={}: a unix socket carries no TLS; connect over TCP (host=NAME) \
                     or use sslmode=prefer",
                    mode
                )))
            }
            (Address::Unix(_), _) | (Address::Tcp(_), SslMode::Disable) => {
                let stream = Stream::connect(&address).await?;
                Self::start(stream, address, config).await
            }
            (Address::Tcp(addr), SslMode::Allow) => {
                let addr = *addr;
                let stream = Stream::connect(&address).await?;
                match Self::start(stream, address.clone(), config).await {
                    // Plain refused (a hostssl-only server): libpq's allow tries TLS next.
                    Err(ConnectError::Server(_)) => {
                        let stream = negotiate_tls(&addr, server_name, tls, true).await?;
                        Self::start(stream, address, config).await
                    }
                    other => other,
                }
            }
            (Address::Tcp(addr), SslMode::Prefer) => {
                let stream = negotiate_tls(addr, server_name, tls, false).await?;
                Self::start(stream, address, config).await
            }
            (Address::Tcp(addr), SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull) => {
                let stream = negotiate_tls(addr, server_name, tls, true).await?;
                Self::start(stream, address, config).await
            }
        }
    }

    async fn start(
        stream: Stream,
        address: Address,
        config: &tokio_postgres::Config,
    ) -> Result<WireConnection, ConnectError> {
        let mut connection = WireConnection::new(stream, address);
        connection.start_up(config).await?;
        Ok(connection)
    }

    /// The startup message, authentication, then the session's parameters
    /// and key up to the first ReadyForQuery.
    async fn start_up(&mut self, config: &tokio_postgres::Config) -> Result<(), ConnectError> {
        let user = config.get_user().ok_or_else(|| {
            ConnectError::Settings("no user name in the connection settings".into())
        })?;
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
        // Reported by PostgreSQL 14 and later; an older server counts as writable.
        let mut read_only = false;
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
                        return Err(ConnectError::Settings(
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
                Message::ParameterStatus(body) => {
                    if matches!(
                        body.name()?,
                        "default_transaction_read_only" | "in_hot_standby"
                    ) && body.value()? == "on"
                    {
                        read_only = true;
                    }
                }
                Message::NoticeResponse(_) => {}
                Message::ErrorResponse(body) => {
                    return Err(ConnectError::Server(server_error(&body)));
                }
                Message::ReadyForQuery(_) => {
                    return check_session_attrs(config.get_target_session_attrs(), read_only);
                }
                _ => {
                    return Err(ConnectError::Settings(
                        "the server asks for an authentication method stallbench does not \
                         support (it supports trust, password, md5 and scram-sha-256)"
                            .into(),
                    ));
                }
            }
        }
    }
}

/// A TCP connection to `addr` with TLS negotiated: SSLRequest, then the
/// rustls handshake if the server agrees. A server that declines leaves a
/// plain connection unless TLS is `required`.
async fn negotiate_tls(
    addr: &SocketAddr,
    server_name: &str,
    tls: &Tls,
    required: bool,
) -> Result<Stream, ConnectError> {
    let mut tcp = Stream::open_tcp(addr).await?;
    let mut request = BytesMut::with_capacity(8);
    frontend::ssl_request(&mut request);
    tcp.write_all(&request).await?;
    match tcp.read_u8().await? {
        b'S' => {}
        b'N' if !required => return Ok(Stream::plain_tcp(tcp)?),
        b'N' => {
            return Err(ConnectError::Settings(format!(
                "{server_name}: the server does not accept TLS and sslmode={} requires it; \
                 enable ssl on the server or use sslmode=prefer",
                tls.mode()
            )));
        }
        other => return Err(unexpected(&format!("answer {other:#04x} to SSLRequest"))),
    }
    let name = ServerName::try_from(server_name.to_string()).map_err(|err| {
        ConnectError::Settings(format!(
            "host {server_name}: not a name TLS can check ({err}); use a DNS name or an IP address"
        ))
    })?;
    let session = TlsConnector::from(tls.client_config())
        .connect(name, tcp)
        .await
        .map_err(|err| match certificate_failure(server_name, &err) {
            Some(message) => ConnectError::Settings(message),
            None => ConnectError::Unreachable(format!("TLS handshake with {server_name}: {err}")),
        })?;
    Ok(Stream::Tls(Box::new(session)))
}

/// Whether the session is what `target_session_attrs` asks for; if not, the
/// next host is tried.
fn check_session_attrs(wanted: TargetSessionAttrs, read_only: bool) -> Result<(), ConnectError> {
    match (wanted, read_only) {
        (TargetSessionAttrs::ReadWrite, true) => Err(ConnectError::Unreachable(
            "the server is read-only and target_session_attrs=read-write".into(),
        )),
        (TargetSessionAttrs::ReadOnly, false) => Err(ConnectError::Unreachable(
            "the server is writable and target_session_attrs=read-only".into(),
        )),
        _ => Ok(()),
    }
}

/// The password the server asks for, or an error saying where to put it.
fn need(password: Option<&[u8]>) -> Result<&[u8], ConnectError> {
    password.ok_or_else(|| {
        ConnectError::Settings(
            "the server asks for a password and the connection string has none; \
             set PGPASSWORD, add a ~/.pgpass line, or add password=... (user:password@ in a URL)"
                .into(),
        )
    })
}

fn unexpected(what: &str) -> ConnectError {
    ConnectError::Unreachable(format!("the server sent an unexpected {what} message"))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn connect(settings: &str) -> ConnectError {
        let config: tokio_postgres::Config = settings.parse().expect("parsing the settings");
        let mode = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Require => SslMode::Require,
            _ => SslMode::Prefer,
        };
        let ssl = crate::engine::postgres::conninfo::SslSettings {
            mode,
            root_cert: None,
            client_cert: None,
        };
        let tls = Tls::new(&ssl).expect("TLS without files");
        match WireConnection::connect(&config, &tls).await {
            Ok(_) => panic!("{settings}: connected"),
            Err(err) => err,
        }
    }

    #[tokio::test]
    async fn settings_that_cannot_work_are_not_a_lost_connection() {
        let err = connect("host=/tmp sslmode=require user=app").await;
        assert!(matches!(err, ConnectError::Settings(_)), "{err:?}");
        assert!(err.to_string().starts_with("sslmode=require"), "{err}");
        let err = connect("user=app").await;
        assert!(matches!(err, ConnectError::Settings(_)), "{err:?}");
        assert_eq!(err.to_string(), "no host to connect to");
    }

    #[tokio::test]
    async fn a_port_nobody_listens_on_is_unreachable() {
        let err = connect("hostaddr=127.0.0.1 port=1 user=app connect_timeout=5").await;
        assert!(matches!(err, ConnectError::Unreachable(_)), "{err:?}");
        assert!(err.to_string().starts_with("connection lost: "), "{err}");
    }
}
