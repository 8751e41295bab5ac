//! TLS with rustls, with libpq's `sslmode` semantics: what to check of the
//! server's certificate (nothing, the chain, or the chain and the host name),
//! which roots to trust, and the client certificate. Built once per run from
//! the settings (files are read and checked then, not per connection) and
//! shared by tokio-postgres and the load workers' own client.

use std::error::Error as StdError;
use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::Client;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{RootCert, SslMode, SslSettings};

/// How to secure a connection: the sslmode and the rustls configuration it implies.
#[derive(Clone)]
pub struct Tls {
    mode: SslMode,
    config: Arc<ClientConfig>,
}

/// What is checked of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerCertCheck {
    Nothing,
    Chain,
    ChainAndName,
}

impl Tls {
    /// Reads the certificate files the settings name and builds the rustls configuration.
    pub fn new(ssl: &SslSettings) -> Result<Tls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let check = check_for(ssl);
        let verifier: Arc<dyn ServerCertVerifier> = match check {
            ServerCertCheck::Nothing => Arc::new(NoCheck(provider.clone())),
            ServerCertCheck::Chain | ServerCertCheck::ChainAndName => {
                let roots = match &ssl.root_cert {
                    Some(root_cert) => load_roots(root_cert)?,
                    None => {
                        return Err(format!(
                            "sslmode={} needs a root certificate to check the server's against; \
                             add sslrootcert=FILE (the CA that signed it) or sslrootcert=system, \
                             or use sslmode=require to skip verification",
                            ssl.mode
                        ));
                    }
                };
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .build()
                        .map_err(|err| {
                            format!("sslrootcert: {err}; give a PEM file of CA certificates")
                        })?;
                match check {
                    ServerCertCheck::Chain => Arc::new(ChainOnly(webpki)),
                    _ => webpki,
                }
            }
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| format!("setting up TLS: {err}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &ssl.client_cert {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = read_certificates(cert, "sslcert")?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|err| {
                    format!(
                        "sslkey={}: no private key read ({err}); give the PEM key of sslcert",
                        key.display()
                    )
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|err| {
                    format!("sslcert/sslkey: {err}; check that the key belongs to the certificate")
                })?
            }
        };
        Ok(Tls {
            mode: ssl.mode,
            config: Arc::new(config),
        })
    }

    /// The sslmode: whether to ask for TLS and whether to fall back to plain.
    pub fn mode(&self) -> SslMode {
        self.mode
    }

    /// The rustls configuration, for a client that does its own handshake.
    pub fn client_config(&self) -> Arc<ClientConfig> {
        self.config.clone()
    }

    /// Connects tokio-postgres with `config` (built by [`super::ConnSettings::tokio_config`])
    /// and spawns its connection task. `allow` tries plain first, then TLS.
    pub async fn connect(
        &self,
        config: &tokio_postgres::Config,
    ) -> Result<Client, tokio_postgres::Error> {
        let (client, _task) = self.connect_task(config).await?;
        Ok(client)
    }

    /// [`Tls::connect`], also returning the spawned connection task (a pool
    /// aborts it when it drops the connection).
    pub async fn connect_task(
        &self,
        config: &tokio_postgres::Config,
    ) -> Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
        let connector = MakeRustlsConnect::new((*self.config).clone());
        let connected = match config.connect(connector.clone()).await {
            Err(_) if self.mode == SslMode::Allow => {
                let mut with_tls = config.clone();
                with_tls.ssl_mode(tokio_postgres::config::SslMode::Require);
                with_tls.connect(connector).await
            }
            connected => connected,
        };
        let (client, connection) = connected?;
        let task = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok((client, task))
    }
}

/// libpq's rule: verify-ca checks the chain, verify-full also the name; the
/// weaker modes check the chain when a root certificate file is given.
fn check_for(ssl: &SslSettings) -> ServerCertCheck {
    match ssl.mode {
        SslMode::VerifyFull => ServerCertCheck::ChainAndName,
        SslMode::VerifyCa => ServerCertCheck::Chain,
        SslMode::Disable | SslMode::Allow | SslMode::Prefer | SslMode::Require => {
            match ssl.root_cert {
                Some(RootCert::File(_)) => ServerCertCheck::Chain,
                _ => ServerCertCheck::Nothing,
            }
        }
    }
}

fn load_roots(root_cert: &RootCert) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match root_cert {
        RootCert::File(path) => {
            for cert in read_certificates(path, "sslrootcert")? {
                roots.add(cert).map_err(|err| {
                    format!(
                        "sslrootcert={}: {err}; give a PEM file of CA certificates",
                        path.display()
                    )
                })?;
            }
        }
        RootCert::System => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err("sslrootcert=system: the platform has no trusted roots \
                     (install ca-certificates), or give sslrootcert=FILE"
                    .into());
            }
        }
    }
    Ok(roots)
}

/// The certificates of a PEM file; an error names the setting and the file.
fn read_certificates(path: &Path, setting: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|err| {
            format!(
                "{setting}={}: cannot read certificates ({err})",
                path.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "{setting}={}: no certificate in the file; give a PEM file (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs)
}

/// The one-line error for a certificate that does not verify, if that is
/// what `err` (or an error under it) is: the hosts, rustls' reason and the fix.
pub fn certificate_failure(hosts: &str, err: &(dyn StdError + 'static)) -> Option<String> {
    let mut current = Some(err);
    while let Some(err) = current {
        let rustls_error = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(reason @ rustls::Error::InvalidCertificate(_)) = rustls_error {
            return Some(format!(
                "{hosts}: the server's certificate does not verify: {reason}; \
                 set sslrootcert=FILE to the CA that signed it (or sslrootcert=system), \
                 or use sslmode=require to skip verification"
            ));
        }
        current = err.source();
    }
    None
}

/// `require` (and weaker) without a root certificate: encrypt, trust any certificate.
#[derive(Debug)]
struct NoCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the host name is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn ssl(mode: SslMode, root_cert: Option<RootCert>) -> SslSettings {
        SslSettings {
            mode,
            root_cert,
            client_cert: None,
        }
    }

    #[test]
    fn what_each_sslmode_checks() {
        let file = Some(RootCert::File(PathBuf::from("ca.pem")));
        assert_eq!(
            check_for(&ssl(SslMode::Require, None)),
            ServerCertCheck::Nothing
        );
        assert_eq!(
            check_for(&ssl(SslMode::Prefer, None)),
            ServerCertCheck::Nothing
        );
        // libpq: require with a root certificate file behaves as verify-ca.
        assert_eq!(
            check_for(&ssl(SslMode::Require, file.clone())),
            ServerCertCheck::Chain
        );
        assert_eq!(
            check_for(&ssl(SslMode::VerifyCa, file.clone())),
            ServerCertCheck::Chain
        );
        assert_eq!(
            check_for(&ssl(SslMode::VerifyFull, file)),
            ServerCertCheck::ChainAndName
        );
    }

    #[test]
    fn verification_without_roots_or_with_a_missing_file_says_what_to_add() {
        let err = Tls::new(&ssl(SslMode::VerifyFull, None)).err().unwrap();
        assert!(err.contains("sslrootcert=FILE"), "{err}");
        assert!(err.contains("sslmode=require"), "{err}");
        let missing = Some(RootCert::File(PathBuf::from("/nonexistent/ca.pem")));
        let err = Tls::new(&ssl(SslMode::VerifyCa, missing)).err().unwrap();
        assert!(
            err.starts_with("sslrootcert=/nonexistent/ca.pem: cannot read"),
            "{err}"
        );
        assert!(Tls::new(&ssl(SslMode::Require, None)).is_ok());
    }

    #[test]
    fn a_certificate_error_is_found_under_an_io_error() {
        let reason = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let err = io::Error::new(io::ErrorKind::InvalidData, reason);
        let message = certificate_failure("db.example", &err).unwrap();
        assert!(message.starts_with("db.example: the server's certificate does not verify: invalid peer certificate: UnknownIssuer;"), "{message}");
        assert!(!message.contains('\n'));
        let other = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(certificate_failure("db.example", &other), None);
    }
}
