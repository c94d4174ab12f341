//! Command-line options shared by the servers' subcommands; Ctrl-C and SIGTERM.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use yamor_proto::transport::{ClientSecurity, ServerSecurity, TlsServerFiles, Token};

/// Default organizer port.
pub const ORGANIZER_ADDR: &str = "127.0.0.1:7070";

#[derive(Args, Clone, Debug)]
pub struct ServerOpts {
    /// File holding the shared token (otherwise $YAMOR_TOKEN). Required to listen beyond loopback.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Serve TLS with this certificate (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// CA certificate (PEM) to verify the other side's TLS certificate.
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
}

impl ServerOpts {
    pub fn server(&self) -> Result<ServerSecurity> {
        Ok(ServerSecurity {
            token: Token::from_file_or_env(self.token_file.as_deref())?,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => Some(TlsServerFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                }),
                _ => None,
            },
        })
    }

    /// The same token (and CA) for calls this server makes to others.
    pub fn client(&self) -> Result<ClientSecurity> {
        Ok(ClientSecurity {
            token: Token::from_file_or_env(self.token_file.as_deref())?,
            tls_ca: self.tls_ca.clone(),
            tls_domain: None,
        })
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
