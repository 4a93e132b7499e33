//! A tiny HTTP server for `/metrics`, `/healthz` and `/readyz`.
//!
//! It is reachable from wherever the pod is, so it defends itself: a client must send its request
//! headers within [`Limits::header_read`] (hyper applies no timeout without a timer, so a client
//! trickling bytes held a connection forever), a connection lives at most
//! [`Limits::connection_lifetime`], and at most [`Limits::max_connections`] are served at once
//! (further ones are closed at accept).

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
    serve_with(addr, routes, Limits::default(), stop).await
}

/// [`serve`] with explicit [`Limits`].
pub async fn serve_with(
    addr: SocketAddr,
    routes: Vec<(&'static str, Endpoint)>,
    limits: Limits,
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
            tokio::spawn(serve_connection(stream, routes.clone(), limits, slot));
        }
    });
    Ok(bound)
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    routes: Arc<Vec<(&'static str, Endpoint)>>,
    limits: Limits,
    _slot: tokio::sync::OwnedSemaphorePermit,
) {
    let service = service_fn(move |req: Request<Incoming>| {
        let answer = routes
            .iter()
            .find(|(path, _)| *path == req.uri().path())
            .map(|(_, endpoint)| endpoint())
            .unwrap_or((StatusCode::NOT_FOUND, TEXT, "not found\n".into()));
        async move { Ok::<_, Infallible>(respond(answer)) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .serve_connection(TokioIo::new(stream), service);
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
        let bound = serve_with(addr, vec![("/healthz", ok())], limits, stop.clone())
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
}
