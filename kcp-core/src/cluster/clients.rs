//! kube clients for many logical clusters behind one base URL.
//!
//! A `kube::Client` per logical cluster would build its own connection pool and TLS set-up
//! (reading the platform's root certificates) for every workspace. Here one client per base
//! URL (a virtual workspace URL or the kcp front URL) does the I/O, and each cluster's client
//! only puts `/clusters/<name>` in front of the request path.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::{Request, Response, Uri};
use kube::client::Body;

use crate::error::Error;

/// Per-base-URL clients, shared by every cluster under that URL. Cheap to share behind an
/// `Arc`; the first request for a base URL builds its client.
pub struct ClusterClients {
    config: kube::Config,
    bases: Mutex<BTreeMap<String, kube::Client>>,
}

impl ClusterClients {
    /// Clients built from `config` (credentials, TLS, timeouts); its URL is not used.
    pub fn new(config: kube::Config) -> Self {
        Self {
            config,
            bases: Mutex::new(BTreeMap::new()),
        }
    }

    /// The client of `base` itself (created once).
    pub fn base(&self, base: &str) -> Result<kube::Client, Error> {
        let mut bases = match self.bases.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(client) = bases.get(base) {
            return Ok(client.clone());
        }
        let mut config = self.config.clone();
        config.cluster_url = base
            .parse()
            .map_err(|e| Error::Config(format!("{base} is not a valid URL: {e}")))?;
        let client = crate::rest_metrics::client(config)
            .map_err(|e| Error::Config(format!("building a client for {base}: {e}")))?;
        bases.insert(base.to_string(), client.clone());
        Ok(client)
    }

    /// A client of `<base>/clusters/<cluster>` (`*` for the wildcard) over the base's client;
    /// a `/clusters/<x>` suffix of `base` itself is dropped first.
    /// `cluster` must be `*`, a logical cluster name or a workspace path: it goes into the URL,
    /// and it often comes from an object someone else wrote (an InitTarget's
    /// `workspaceTypeRef.path`), so `/`, `?` and the like never reach a request.
    pub fn cluster(&self, base: &str, cluster: &str) -> Result<kube::Client, Error> {
        if cluster != "*" && crate::kcp::ClusterPath::new(cluster).is_err() {
            return Err(Error::Config(format!(
                "{cluster:?} is neither a logical cluster name nor a workspace path \
                 (lowercase letters, digits and '-', segments separated by ':')"
            )));
        }
        let inner = self.base(crate::kcp::urls::strip_cluster_suffix(base))?;
        let service = PrefixedService {
            inner,
            prefix: Arc::from(format!("/clusters/{cluster}")),
        };
        Ok(kube::Client::new(service, "default"))
    }
}

/// Puts a path prefix in front of every request and sends it through a shared client.
#[derive(Clone)]
struct PrefixedService {
    inner: kube::Client,
    prefix: Arc<str>,
}

impl tower_service::Service<Request<Body>> for PrefixedService {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let path_and_query = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let prefixed = format!("{}{path_and_query}", self.prefix);
        match prefixed.parse::<Uri>() {
            Ok(uri) => *req.uri_mut() = uri,
            Err(e) => {
                let message = format!("request path {prefixed:?} is not a valid URI: {e}");
                return Box::pin(async move { Err(kube::Error::Service(message.into())) });
            }
        }
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(req).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients() -> ClusterClients {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        ClusterClients::new(config)
    }

    #[tokio::test]
    async fn a_path_or_cluster_name_or_the_wildcard_is_accepted() {
        let clients = clients();
        for cluster in ["root:org:team", "2x8d7j3k9q", "*"] {
            assert!(
                clients.cluster("https://127.0.0.1:6443", cluster).is_ok(),
                "{cluster}"
            );
        }
    }

    #[tokio::test]
    async fn a_cluster_that_would_change_the_url_is_refused() {
        let clients = clients();
        for cluster in ["root/../../api", "root?x=1", "root:Team", ""] {
            let err = clients
                .cluster("https://127.0.0.1:6443", cluster)
                .err()
                .unwrap_or_else(|| panic!("{cluster:?} accepted"));
            assert!(
                err.to_string().contains("neither a logical cluster name"),
                "{err}"
            );
        }
    }
}
