//! Command-line options shared by every networked subcommand.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use yamor_proto::transport::{ClientSecurity, ServerSecurity, TlsServerFiles, Token};

/// Default organizer port.
pub const ORGANIZER_ADDR: &str = "127.0.0.1:7070";

#[derive(Args, Clone, Debug)]
pub struct ClientOpts {
    /// The organizer's URL.
    #[arg(
        long,
        env = "YAMOR_ORGANIZER",
        default_value = "http://127.0.0.1:7070",
        global = true
    )]
    pub organizer: String,
    /// File holding the shared token (otherwise $YAMOR_TOKEN).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
    /// CA certificate (PEM) for https:// URLs.
    #[arg(long, global = true)]
    pub tls_ca: Option<PathBuf>,
    /// Print JSON (one document on stdout) instead of a table, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
}

impl ClientOpts {
    pub fn security(&self) -> Result<ClientSecurity> {
        Ok(ClientSecurity {
            token: Token::from_file_or_env(self.token_file.as_deref())?,
            tls_ca: self.tls_ca.clone(),
            tls_domain: None,
        })
    }

    pub fn format(&self) -> yamor_organizer::text::Format {
        if self.json {
            yamor_organizer::text::Format::Json
        } else {
            yamor_organizer::text::Format::Text
        }
    }

    pub fn organizer(&self) -> Result<yamor_organizer::OrganizerClient> {
        Ok(yamor_organizer::OrganizerClient::new(
            &self.organizer,
            &self.security()?,
        )?)
    }
}

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

/// Resolves on Ctrl-C. The handler is installed now, not when first
/// polled, so a Ctrl-C right after this returns is not lost (the default
/// action would kill the process).
pub fn interrupt() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        Ok(async move {
            sigint.recv().await;
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
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
