//! The TLS transport's settings (feature `syslog-tls`): the roots to trust,
//! the name to verify, an optional client certificate; checked and turned
//! into a rustls configuration by `build`.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};

use crate::destination::socket::{self, StreamOptions, TlsSettings};
use crate::format::syslog::LineSafety;

use super::builder::{check_addr, SyslogBuilder};
use super::error::{SyslogError, SyslogErrorKind};
use super::{Syslog, SyslogCounters};

/// The TLS transport of a [`SyslogBuilder`]; see [`Syslog::tls`].
///
/// ```
/// use logbus_appenders::{Syslog, SyslogBuilder, SyslogTls};
///
/// let builder: SyslogBuilder<SyslogTls> = Syslog::tls("logs.internal:6514")
///     .root_certificates_pem(std::fs::read("/etc/ssl/private-ca.pem").unwrap_or_default())
///     .server_name("logs.internal");
/// # drop(builder);
/// ```
#[derive(Debug, Clone)]
pub struct SyslogTls {
    addr: String,
    pub(super) stream: StreamOptions,
    server_name: Option<String>,
    roots_pem: Vec<Vec<u8>>,
    client_pem: Option<(Vec<u8>, Vec<u8>)>,
}

fn tls_error(text: String) -> SyslogError {
    SyslogError::new(SyslogErrorKind::Tls, text)
}

impl SyslogBuilder<SyslogTls> {
    pub(super) fn tls(addr: String) -> SyslogBuilder<SyslogTls> {
        SyslogBuilder::new(SyslogTls {
            addr,
            stream: StreamOptions::DEFAULT,
            server_name: None,
            roots_pem: Vec::new(),
            client_pem: None,
        })
    }

    /// Trusts the CA certificates in `pem` (one or more `CERTIFICATE`
    /// blocks) to sign the collector's certificate. At least one root is
    /// required: collectors usually have a private CA, and trusting every
    /// public CA by default would let anyone with a certificate for the
    /// name receive the logs.
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.transport.roots_pem.push(pem.into());
        self
    }

    /// Sets the name the collector's certificate must be valid for (a DNS
    /// name, or an IP address matched against its IP SANs). Default: the
    /// host of the address. The name is always verified: there is no
    /// setting to turn that off.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.transport.server_name = Some(name.into());
        self
    }

    /// Presents a client certificate (`chain_pem`: the certificate, then
    /// any intermediates; `key_pem`: its PKCS#8, PKCS#1 or SEC1 private
    /// key), for collectors that authenticate senders (RFC 5425 §4.2).
    pub fn client_certificate_pem(
        mut self,
        chain_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> Self {
        self.transport.client_pem = Some((chain_pem.into(), key_pem.into()));
        self
    }

    /// Sets how long connecting and the TLS handshake may take. Default: 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.transport.stream.connect_timeout = timeout;
        self
    }

    /// Checks the settings, parses the certificates and builds the
    /// appender; connects to nothing.
    ///
    /// # Errors
    ///
    /// A [`SyslogError`] naming the setting: the address is not
    /// `HOST:PORT`, the server name is neither a DNS name nor an IP
    /// address, no root certificate was given or a PEM holds none (or no
    /// key), a certificate is malformed, a header field is invalid.
    ///
    /// ```
    /// use logbus_appenders::{Syslog, SyslogErrorKind};
    ///
    /// let err = Syslog::tls("logs.example.com:6514").build().unwrap_err();
    /// assert_eq!(err.kind(), SyslogErrorKind::Tls);
    /// assert!(err.to_string().contains("no root certificate"));
    ///
    /// let err = Syslog::tls("logs.example.com:6514")
    ///     .root_certificates_pem("not a certificate")
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), SyslogErrorKind::Tls);
    /// ```
    pub fn build(self) -> Result<Syslog, SyslogError> {
        let host = check_addr(&self.transport.addr)?;
        let name = self.transport.server_name.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_owned()).map_err(|e| {
            tls_error(format!(
                "the TLS server name {name:?} is neither a DNS name nor an IP address"
            ))
            .with_source(e)
        })?;
        let config = client_config(&self.transport)?;
        let settings = TlsSettings {
            config: Arc::new(config),
            server_name,
        };
        let counters = SyslogCounters::default();
        let tls = socket::Tls::new(self.transport.addr.clone(), settings, self.transport.stream);
        let socket = socket::Socket::new(tls, self.backoff(), Arc::clone(&counters.socket));
        self.finish(Box::new(socket), counters, None, LineSafety::AsIs)
    }
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, SyslogError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(format!("cannot read the {what} PEM")).with_source(e))?;
    if certs.is_empty() {
        return Err(tls_error(format!("the {what} PEM holds no certificate")));
    }
    Ok(certs)
}

fn client_config(tls: &SyslogTls) -> Result<ClientConfig, SyslogError> {
    if tls.roots_pem.is_empty() {
        return Err(tls_error(
            "no root certificate: give the collector's CA with root_certificates_pem".to_owned(),
        ));
    }
    let mut roots = RootCertStore::empty();
    for pem in &tls.roots_pem {
        for cert in certificates(pem, "root certificate")? {
            roots.add(cert).map_err(|e| {
                tls_error("a root certificate is not a valid CA certificate".to_owned())
                    .with_source(e)
            })?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("no TLS version in common".to_owned()).with_source(e))?
        .with_root_certificates(roots);
    match &tls.client_pem {
        None => Ok(builder.with_no_client_auth()),
        Some((chain_pem, key_pem)) => {
            let chain = certificates(chain_pem, "client certificate")?;
            let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
                tls_error("cannot read the client key PEM".to_owned()).with_source(e)
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                tls_error("the client certificate and key do not go together".to_owned())
                    .with_source(e)
            })
        }
    }
}
