//! A tiny HTTP server for `/metrics`, `/healthz` and `/readyz`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
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

/// Binds `addr` and serves `routes` (path -> answer) until `stop` is cancelled. Returns the
/// bound address (useful with port 0).
pub async fn serve(
    addr: SocketAddr,
    routes: Vec<(&'static str, Endpoint)>,
    stop: CancellationToken,
) -> Result<SocketAddr, Error> {
    let bind_error = |source| Error::Bind {
        address: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let routes = routes.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let answer = routes
                        .iter()
                        .find(|(path, _)| *path == req.uri().path())
                        .map(|(_, endpoint)| endpoint())
                        .unwrap_or((StatusCode::NOT_FOUND, TEXT, "not found\n".into()));
                    async move { Ok::<_, Infallible>(respond(answer)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}

fn respond((status, content_type, body): Answer) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}
