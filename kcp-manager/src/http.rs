//! A tiny HTTP server for `/metrics`, `/healthz` and `/readyz`.
//!
//! It is reachable from wherever the pod is, so it defends itself: a client must send its request
//! headers within [`Limits::header_read`] (hyper applies no timeout without a timer, so a client
//! trickling bytes held a connection forever), a connection lives at most
//! [`Limits::connection_lifetime`], and at most [`Limits::max_connections`] are served at once
//! (further ones are closed at accept).
//!
//! With [`Secured`] (`--metrics-secure`) it speaks TLS only and every request passes a
//! [`RequestGuard`] first (see [`crate::metrics_auth`]).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::metrics_auth::RequestGuard;

/// TLS and a guard in front of every route (`--metrics-secure`).
#[derive(Clone)]
pub struct Secured {
    /// The serving certificate (see [`crate::tls`]).
    pub tls: Arc<rustls::ServerConfig>,
    /// Who may read.
    pub guard: Arc<dyn RequestGuard>,
}

impl std::fmt::Debug for Secured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secured")
    }
}

/// One endpoint's answer: status, content type, body.
pub type Answer = (StatusCode, &'static str, String);

/// The handler of one path.
pub type Endpoint = Arc<dyn Fn() -> Answer + Send + Sync>;

/// The content type of plain-text answers.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// The content type of the metrics exposition.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What one server allows its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time to send a request's headers.
    pub header_read: Duration,
    /// Longest life of one connection (keep-alive included).
    pub connection_lifetime: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for Limits {
    /// Headers within 10 s, connections for at most 60 s, 64 at once (a scraper and the kubelet
    /// need two or three).
    fn default() -> Self {
        Limits {
            header_read: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(60),
            max_connections: 64,
        }
    }
}

/// Binds `addr` and serves `routes` (path -> answer) with the default [`Limits`] until `stop`
/// is cancelled. Returns the bound address (useful with port 0).
pub async fn serve(
    addr: SocketAddr,
    routes: Vec<(&'static str, Endpoint)>,
    stop: CancellationToken,
) -> Result<SocketAddr, Error> {
    serve_with(addr, routes, Limits::default(), None, stop).await
}

/// [`serve`] with explicit [`Limits`], over TLS behind a guard when `secured` is given.
pub async fn serve_with(
    addr: SocketAddr,
    routes: Vec<(&'static str, Endpoint)>,
    limits: Limits,
    secured: Option<Secured>,
    stop: CancellationToken,
) -> Result<SocketAddr, Error> {
    let bind_error = |source| Error::Bind {
        address: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
    let routes = Arc::new(routes);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            // Over the limit the connection is dropped (closed) at once.
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                continue;
            };
            tokio::spawn(serve_connection(
                stream,
                routes.clone(),
                limits,
                secured.clone(),
                slot,
            ));
        }
    });
    Ok(bound)
}

type Routes = Arc<Vec<(&'static str, Endpoint)>>;

async fn serve_connection(
    stream: tokio::net::TcpStream,
    routes: Routes,
    limits: Limits,
    secured: Option<Secured>,
    _slot: tokio::sync::OwnedSemaphorePermit,
) {
    let Some(secured) = secured else {
        return serve_http(TokioIo::new(stream), routes, limits, None).await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(secured.tls);
    // The handshake gets the time a client has for its headers.
    if let Ok(Ok(tls)) = tokio::time::timeout(limits.header_read, acceptor.accept(stream)).await {
        serve_http(TokioIo::new(tls), routes, limits, Some(secured.guard)).await;
    }
}

async fn serve_http<I>(
    io: TokioIo<I>,
    routes: Routes,
    limits: Limits,
    guard: Option<Arc<dyn RequestGuard>>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let (routes, guard) = (routes.clone(), guard.clone());
        async move {
            let path = req.uri().path().to_owned();
            if let Some(guard) = guard {
                let authorization = req
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                if let Err((status, text)) = guard.admit(authorization, &path).await {
                    return Ok::<_, Infallible>(respond((status, TEXT, text)));
                }
            }
            let answer = routes
                .iter()
                .find(|(route, _)| *route == path)
                .map(|(_, endpoint)| endpoint())
                .unwrap_or((StatusCode::NOT_FOUND, TEXT, "not found\n".into()));
            Ok(respond(answer))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .serve_connection(io, service);
    let _ = tokio::time::timeout(limits.connection_lifetime, connection).await;
}

fn respond((status, content_type, body): Answer) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn ok() -> Endpoint {
        Arc::new(|| (StatusCode::OK, TEXT, "ok\n".to_owned()))
    }

    async fn server(limits: Limits) -> (SocketAddr, CancellationToken) {
        let stop = CancellationToken::new();
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let bound = serve_with(addr, vec![("/healthz", ok())], limits, None, stop.clone())
            .await
            .unwrap();
        (bound, stop)
    }

    /// Reads until the server closes the connection; what it sent.
    async fn until_closed(stream: &mut tokio::net::TcpStream) -> String {
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn a_client_trickling_its_headers_is_disconnected() {
        let limits = Limits {
            header_read: Duration::from_millis(200),
            ..Limits::default()
        };
        let (addr, stop) = server(limits).await;
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let closed = tokio::time::timeout(Duration::from_secs(5), until_closed(&mut slow)).await;
        assert!(closed.is_ok(), "the connection was held open");
        stop.cancel();
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_are_closed_and_the_server_recovers() {
        let limits = Limits {
            max_connections: 1,
            ..Limits::default()
        };
        let (addr, stop) = server(limits).await;
        let mut held = tokio::net::TcpStream::connect(addr).await.unwrap();
        held.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut first = [0u8; 12];
        held.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        let mut refused = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = refused.write_all(b"GET /healthz HTTP/1.0\r\n\r\n").await;
        assert_eq!(until_closed(&mut refused).await, "");
        drop(held);
        let answer = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let mut next = tokio::net::TcpStream::connect(addr).await.unwrap();
                let _ = next.write_all(b"GET /healthz HTTP/1.0\r\n\r\n").await;
                let text = until_closed(&mut next).await;
                if !text.is_empty() {
                    return text;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap();
        assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
        stop.cancel();
    }

    /// Admits the token `good` only.
    struct OnlyGood;

    #[async_trait::async_trait]
    impl RequestGuard for OnlyGood {
        async fn admit(
            &self,
            authorization: Option<&str>,
            _: &str,
        ) -> Result<(), crate::metrics_auth::Refusal> {
            match crate::metrics_auth::bearer_token(authorization) {
                Some("good") => Ok(()),
                Some(_) => Err((StatusCode::FORBIDDEN, "no\n".into())),
                None => Err((StatusCode::UNAUTHORIZED, "who\n".into())),
            }
        }
    }

    /// A TLS server with a certificate for `localhost`, and a connector trusting it.
    async fn secured_server() -> (SocketAddr, tokio_rustls::TlsConnector, CancellationToken) {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certified.cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let secured = Secured {
            tls: Arc::new(server),
            guard: Arc::new(OnlyGood),
        };
        let stop = CancellationToken::new();
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let routes = vec![("/healthz", ok())];
        let bound = serve_with(addr, routes, Limits::default(), Some(secured), stop.clone())
            .await
            .unwrap();
        (
            bound,
            tokio_rustls::TlsConnector::from(Arc::new(client)),
            stop,
        )
    }

    async fn get_over_tls(
        addr: SocketAddr,
        connector: &tokio_rustls::TlsConnector,
        header: &str,
    ) -> String {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        let request = format!("GET /healthz HTTP/1.0\r\n{header}\r\n");
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tls.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn secured_routes_answer_only_over_tls_and_only_to_admitted_tokens() {
        let (addr, connector, stop) = secured_server().await;
        let allowed = get_over_tls(addr, &connector, "Authorization: Bearer good\r\n").await;
        assert!(allowed.starts_with("HTTP/1.0 200"), "{allowed}");
        let forbidden = get_over_tls(addr, &connector, "Authorization: Bearer bad\r\n").await;
        assert!(forbidden.starts_with("HTTP/1.0 403"), "{forbidden}");
        let anonymous = get_over_tls(addr, &connector, "").await;
        assert!(anonymous.starts_with("HTTP/1.0 401"), "{anonymous}");
        let mut plain = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = plain.write_all(b"GET /healthz HTTP/1.0\r\n\r\n").await;
        let answer = until_closed(&mut plain).await;
        assert!(!answer.contains("200"), "served without TLS: {answer}");
        stop.cancel();
    }
}
