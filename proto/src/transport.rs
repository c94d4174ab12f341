//! What every yamor server and client shares: the shared-token check, TLS,
//! health and reflection, and the loopback-by-default rule.
//!
//! # Security model
//! - Servers bind to loopback unless told otherwise. Listening on anything
//!   else without a token is refused at start-up ([`check_exposure`]): a
//!   cluster port must never be open to anyone who can reach it.
//! - With a token, every call must carry `authorization: Bearer <token>`;
//!   a call without it is answered `Unauthenticated` before any handler runs,
//!   so it changes nothing. The health service stays open so orchestrators
//!   can probe without secrets; it reveals nothing but SERVING/NOT_SERVING.
//! - TLS (rustls) is optional and independent of the token: `--tls-cert` and
//!   `--tls-key` on servers, `--tls-ca` on clients.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig,
};
use tonic::{Request, Status};

/// The environment variable that carries the shared token.
pub const TOKEN_ENV: &str = "YAMOR_TOKEN";

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(
        "refusing to listen on {0} without a token: set {TOKEN_ENV} or --token-file, or bind to 127.0.0.1"
    )]
    ExposedWithoutToken(SocketAddr),
    #[error("the token is empty or not printable ASCII")]
    BadToken,
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid address {0:?}: {1}")]
    BadAddress(String, String),
    #[error(transparent)]
    Tonic(#[from] tonic::transport::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("reflection: {0}")]
    Reflection(String),
    #[error("{url} is not healthy: {why}")]
    Unhealthy { url: String, why: String },
}

/// Asks the health service of the yamor server at `url` whether the server
/// as a whole serves (within `timeout`); what container health checks run.
pub async fn check_health(
    url: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<(), TransportError> {
    use tonic_health::pb::health_check_response::ServingStatus;
    let unhealthy = |why: String| TransportError::Unhealthy {
        url: url.to_owned(),
        why,
    };
    let mut client = tonic_health::pb::health_client::HealthClient::new(channel(url, security)?);
    let request = tonic_health::pb::HealthCheckRequest {
        service: String::new(),
    };
    let reply = tokio::time::timeout(timeout, client.check(request))
        .await
        .map_err(|_| unhealthy(format!("no answer within {timeout:?}")))?
        .map_err(|status| unhealthy(status.message().to_owned()))?;
    match reply.into_inner().status() {
        ServingStatus::Serving => Ok(()),
        other => Err(unhealthy(format!("it reports {}", other.as_str_name()))),
    }
}

/// A shared secret, compared in constant time.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

impl Token {
    pub fn new(text: &str) -> Result<Self, TransportError> {
        let text = text.trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TransportError::BadToken);
        }
        Ok(Token(text.into()))
    }

    /// The token from `file` if given, else from [`TOKEN_ENV`], else none.
    pub fn from_file_or_env(
        file: Option<&std::path::Path>,
    ) -> Result<Option<Self>, TransportError> {
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| TransportError::Read {
                path: path.to_owned(),
                source,
            })?;
            return Token::new(&text).map(Some);
        }
        match std::env::var(TOKEN_ENV) {
            Ok(text) if !text.trim().is_empty() => Token::new(&text).map(Some),
            _ => Ok(None),
        }
    }

    /// Whether `presented` is this token (compared in constant time).
    #[must_use]
    pub fn matches(&self, presented: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        // Length leaks nothing useful; the bytes are compared without early exit.
        presented.len() == expected.len()
            && presented
                .iter()
                .zip(expected)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

/// PEM files for a server's TLS identity.
#[derive(Debug, Clone)]
pub struct TlsServerFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How a server protects itself.
#[derive(Debug, Clone, Default)]
pub struct ServerSecurity {
    pub token: Option<Token>,
    pub tls: Option<TlsServerFiles>,
}

/// How a client reaches a protected server.
#[derive(Debug, Clone, Default)]
pub struct ClientSecurity {
    pub token: Option<Token>,
    /// CA certificate (PEM) that signed the server's certificate; `https://`
    /// URLs use it, or the system roots when absent.
    pub tls_ca: Option<PathBuf>,
    /// Overrides the name checked against the server certificate.
    pub tls_domain: Option<String>,
}

/// Refuses a non-loopback listener without a token.
pub fn check_exposure(addr: SocketAddr, security: &ServerSecurity) -> Result<(), TransportError> {
    if !addr.ip().is_loopback() && security.token.is_none() {
        return Err(TransportError::ExposedWithoutToken(addr));
    }
    Ok(())
}

/// Server-side interceptor: rejects calls without the right bearer token.
#[derive(Clone, Debug)]
pub struct RequireToken(Option<Token>);

impl RequireToken {
    #[must_use]
    pub fn new(token: Option<Token>) -> Self {
        RequireToken(token)
    }
}

impl Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.0 else {
            return Ok(request);
        };
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
        match presented {
            Some(p) if token.matches(p) => Ok(request),
            Some(_) => Err(Status::unauthenticated("wrong token")),
            None => Err(Status::unauthenticated(
                "this server requires a token: authorization: Bearer <token>",
            )),
        }
    }
}

/// Client-side interceptor: attaches the bearer token to every call.
#[derive(Clone, Debug, Default)]
pub struct AttachToken(Option<MetadataValue<Ascii>>);

impl AttachToken {
    #[must_use]
    pub fn new(token: Option<&Token>) -> Self {
        AttachToken(token.map(|t| {
            format!("Bearer {}", t.0)
                .parse()
                .expect("a checked token is valid ASCII metadata")
        }))
    }
}

impl Interceptor for AttachToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert("authorization", v.clone());
        }
        Ok(request)
    }
}

/// An intercepted channel, the type every yamor client is built on.
pub type AuthChannel = tonic::service::interceptor::InterceptedService<Channel, AttachToken>;

/// A lazily connecting channel to `url` (`http://host:port` or `https://`).
/// Lazy so a client can be created before its server is up, and reconnects
/// by itself after the server restarts.
pub fn channel(url: &str, security: &ClientSecurity) -> Result<AuthChannel, TransportError> {
    let url = match url.split_once("://") {
        Some(("http" | "https", _)) => url.to_owned(),
        Some((scheme, _)) => {
            return Err(TransportError::BadAddress(
                url.to_owned(),
                format!("unsupported scheme {scheme:?}: use http:// or https://"),
            ));
        }
        None => format!("http://{url}"),
    };
    let mut endpoint = Endpoint::from_shared(url.clone())
        .map_err(|e| TransportError::BadAddress(url.clone(), e.to_string()))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(10));
    if url.starts_with("https://") {
        let mut tls = ClientTlsConfig::new();
        tls = match &security.tls_ca {
            Some(path) => tls.ca_certificate(Certificate::from_pem(read(path)?)),
            None => tls.with_webpki_roots(),
        };
        if let Some(domain) = &security.tls_domain {
            tls = tls.domain_name(domain.clone());
        }
        endpoint = endpoint.tls_config(tls)?;
    }
    Ok(tonic::service::interceptor::InterceptedService::new(
        endpoint.connect_lazy(),
        AttachToken::new(security.token.as_ref()),
    ))
}

fn read(path: &std::path::Path) -> Result<Vec<u8>, TransportError> {
    std::fs::read(path).map_err(|source| TransportError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Longest `grpc-message` a yamor server sends, in bytes as sent. Messages
/// quote offending input; a huge field must not become a status that
/// common clients refuse as oversized metadata (8 KiB in grpc-go and
/// grpcio).
pub const MAX_STATUS_MESSAGE: usize = 1024;

/// Cuts an error's `grpc-message` to [`MAX_STATUS_MESSAGE`], marking the
/// cut. The header is percent-encoded: the cut never splits an escape.
fn shorten_status_message<B>(
    mut response: tonic::codegen::http::Response<B>,
) -> tonic::codegen::http::Response<B> {
    let headers = response.headers_mut();
    let Some(message) = headers.get("grpc-message") else {
        return response;
    };
    let bytes = message.as_bytes();
    if bytes.len() <= MAX_STATUS_MESSAGE {
        return response;
    }
    let mut end = MAX_STATUS_MESSAGE - 32;
    // Never end inside "%XX".
    if let Some(percent) = bytes[end.saturating_sub(2)..end]
        .iter()
        .position(|&b| b == b'%')
    {
        end = end - 2 + percent;
    }
    let mut shortened = bytes[..end].to_vec();
    shortened.extend_from_slice(b" %E2%80%A6 (message shortened)");
    if let Ok(value) = tonic::codegen::http::HeaderValue::from_bytes(&shortened) {
        headers.insert("grpc-message", value);
    }
    response
}

/// A server builder with TLS applied when configured.
pub fn server(security: &ServerSecurity) -> Result<Server, TransportError> {
    let mut builder = Server::builder().tcp_nodelay(true);
    if let Some(tls) = &security.tls {
        let identity = Identity::from_pem(read(&tls.cert)?, read(&tls.key)?);
        builder = builder.tls_config(ServerTlsConfig::new().identity(identity))?;
    }
    Ok(builder)
}

/// Serves `service` on `listener` until `shutdown` resolves, as every yamor
/// server does: behind the token, beside an open health service (reporting
/// `service` as serving) and reflection, with TLS when configured. Refuses a
/// non-loopback address without a token.
pub async fn serve<S>(
    listener: tokio::net::TcpListener,
    security: &ServerSecurity,
    service: S,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), TransportError>
where
    S: tonic::codegen::Service<
            tonic::codegen::http::Request<tonic::body::Body>,
            Response = tonic::codegen::http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + tonic::server::NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    check_exposure(listener.local_addr()?, security)?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<S>().await;
    server(security)?
        .layer(tower::util::MapResponseLayer::new(shorten_status_message))
        .add_service(health_service)
        .add_service(reflection(security)?)
        .add_service(reflection_v1alpha(security)?)
        .add_service(tonic::service::interceptor::InterceptedService::new(
            service,
            RequireToken::new(security.token.clone()),
        ))
        // The builder's tcp_nodelay applies only to listeners it binds
        // itself: without it here every reply of more than a segment waited
        // for a delayed ACK (40 ms per planning job on loopback).
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await?;
    Ok(())
}

fn reflection_builder() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}

/// Reflection's older `v1alpha` protocol, which grpcurl 1.8 and Python's
/// `grpcio-reflection` speak, behind the token.
pub fn reflection_v1alpha(
    security: &ServerSecurity,
) -> Result<
    tonic::service::interceptor::InterceptedService<
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
        RequireToken,
    >,
    TransportError,
> {
    let service = reflection_builder()
        .build_v1alpha()
        .map_err(|e| TransportError::Reflection(e.to_string()))?;
    Ok(tonic::service::interceptor::InterceptedService::new(
        service,
        RequireToken::new(security.token.clone()),
    ))
}

/// The reflection service for every yamor service, behind the token.
pub fn reflection(
    security: &ServerSecurity,
) -> Result<
    tonic::service::interceptor::InterceptedService<
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        RequireToken,
    >,
    TransportError,
> {
    let service = reflection_builder()
        .build_v1()
        .map_err(|e| TransportError::Reflection(e.to_string()))?;
    Ok(tonic::service::interceptor::InterceptedService::new(
        service,
        RequireToken::new(security.token.clone()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposure_needs_a_token() {
        let open = ServerSecurity::default();
        assert!(check_exposure("127.0.0.1:1".parse().unwrap(), &open).is_ok());
        assert!(check_exposure("[::1]:1".parse().unwrap(), &open).is_ok());
        assert!(matches!(
            check_exposure("0.0.0.0:1".parse().unwrap(), &open),
            Err(TransportError::ExposedWithoutToken(_))
        ));
        let guarded = ServerSecurity {
            token: Some(Token::new("s3cret").unwrap()),
            tls: None,
        };
        assert!(check_exposure("0.0.0.0:1".parse().unwrap(), &guarded).is_ok());
    }

    #[test]
    fn interceptor_checks_the_bearer_token() {
        let token = Token::new("s3cret").unwrap();
        let mut require = RequireToken::new(Some(token.clone()));
        let mut attach = AttachToken::new(Some(&token));
        let good = attach.call(Request::new(())).unwrap();
        assert!(require.call(good).is_ok());
        let mut wrong = AttachToken::new(Some(&Token::new("s3creT").unwrap()));
        let bad = wrong.call(Request::new(())).unwrap();
        assert_eq!(
            require.call(bad).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        assert_eq!(
            require.call(Request::new(())).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        assert!(Token::new("  ").is_err());
        assert!(Token::new("a b").is_err());
    }
}
