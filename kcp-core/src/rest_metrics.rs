//! client-go's REST client metrics for every kube client a process builds:
//! `rest_client_requests_total{code, host, method}` and
//! `rest_client_request_duration_seconds{host, verb}`, the families controller-runtime users'
//! dashboards read for API-server traffic and latency.
//!
//! The series are process-wide (one set, whatever number of clients): build clients with
//! [`client`] (a tower layer around kube's stack), and register the families once in the
//! registry `/metrics` serves with [`register`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use http::{Request, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    host: String,
    method: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    host: String,
    verb: String,
}

fn latency_histogram() -> Histogram {
    // 1 ms .. ~30 s, doubling (client-go's buckets span the same range).
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

#[derive(Debug, Clone)]
struct Series {
    requests: Family<RequestLabels, Counter>,
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
}

fn series() -> &'static Series {
    static SERIES: OnceLock<Series> = OnceLock::new();
    SERIES.get_or_init(|| Series {
        requests: Family::default(),
        latency: Family::new_with_constructor(latency_histogram),
    })
}

/// Registers the process's REST client families in `registry`.
pub fn register(registry: &mut Registry) {
    let s = series();
    registry.register(
        "rest_client_requests",
        "Number of HTTP requests, partitioned by status code, method, and host",
        s.requests.clone(),
    );
    registry.register(
        "rest_client_request_duration_seconds",
        "Request latency in seconds, broken down by verb and host",
        s.latency.clone(),
    );
}

/// A kube client for `config` whose requests are counted and timed.
pub fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    let host: Arc<str> = config
        .cluster_url
        .authority()
        .map(|a| a.as_str())
        .unwrap_or_default()
        .into();
    let builder = kube::client::ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&RestMetricsLayer { host }).build())
}

/// The tower layer behind [`client`].
#[derive(Debug, Clone)]
pub struct RestMetricsLayer {
    host: Arc<str>,
}

impl<S> tower_layer::Layer<S> for RestMetricsLayer {
    type Service = RestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service of [`RestMetricsLayer`].
#[derive(Debug, Clone)]
pub struct RestMetrics<S> {
    inner: S,
    host: Arc<str>,
}

impl<S, B, R> tower_service::Service<Request<B>> for RestMetrics<S>
where
    S: tower_service::Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        let host = self.host.to_string();
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            let s = series();
            s.latency
                .get_or_create(&LatencyLabels {
                    host: host.clone(),
                    verb: method.clone(),
                })
                .observe(started.elapsed().as_secs_f64());
            s.requests
                .get_or_create(&RequestLabels { code, host, method })
                .inc();
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::metrics::encode;

    #[tokio::test]
    async fn requests_are_counted_by_code_method_and_host_and_timed() {
        let (mock, mut handle) =
            tower_test::mock::pair::<Request<kube::client::Body>, Response<kube::client::Body>>();
        let layer = RestMetricsLayer {
            host: "metrics-test.invalid:6443".into(),
        };
        let client = kube::client::ClientBuilder::new(mock, "default")
            .with_layer(&layer)
            .build();
        let server = tokio::spawn(async move {
            let (_, send) = handle.next_request().await.unwrap();
            send.send_response(
                Response::builder()
                    .status(404)
                    .body(kube::client::Body::from(b"{}".to_vec()))
                    .unwrap(),
            );
        });
        let _ = client
            .request_text(
                Request::get("/api/v1/namespaces/x")
                    .body(Vec::new())
                    .unwrap(),
            )
            .await;
        server.await.unwrap();
        let mut registry = Registry::default();
        register(&mut registry);
        let text = encode(&registry);
        assert!(
            text.contains("rest_client_requests_total{code=\"404\",host=\"metrics-test.invalid:6443\",method=\"GET\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("rest_client_request_duration_seconds_count{host=\"metrics-test.invalid:6443\",verb=\"GET\"} 1"),
            "{text}"
        );
    }
}
