//! Startup against kcp (upstream §2.2): the kcp kubeconfig points at a workspace
//! (`.../clusters/<x>`); the APIExportEndpointSlice named by the agent is read there, and the
//! client is retargeted to the workspace of the slice's APIExport. With `--apiexport-ref`
//! (which upstream dropped but still documents) the APIExport is in the kubeconfig's own
//! workspace and its default endpoint slice (the one of the same name kcp creates) is followed.

use kcp_core::kcp::types::{APIExport, APIExportEndpointSlice};
use kcp_core::retry::Backoff;
use kube::Api;

use crate::error::{Error, Result};

/// Which object names the APIExport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportRef {
    /// `--apiexportendpointslice-ref`.
    EndpointSlice(String),
    /// `--apiexport-ref`.
    Export(String),
}

/// Where the APIExport is and how its consumers are found.
#[derive(Clone)]
pub struct KcpTarget {
    /// A configuration for the APIExport's workspace.
    pub export_config: kube::Config,
    /// The APIExport's name.
    pub export_name: String,
    /// A client of the workspace of the followed object (slice or export).
    pub source_client: kube::Client,
    /// The followed object.
    pub source: ExportRef,
}

fn config_error(message: String) -> Error {
    Error::InvalidObject {
        object: "--kcp-kubeconfig".into(),
        field: "cluster.server".into(),
        reason: message,
    }
}

/// The `/clusters/<x>` segment of a kcp URL (`None` when there is none).
pub fn cluster_segment(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("/clusters/")?;
    Some(rest.split('/').next().unwrap_or_default()).filter(|s| !s.is_empty())
}

/// `url` with its `/clusters/<x>` segment replaced by `/clusters/<cluster>`.
pub fn retarget(url: &str, cluster: &str) -> String {
    match url.split_once("/clusters/") {
        Some((base, rest)) => {
            let tail = rest.split_once('/').map(|(_, t)| t).unwrap_or_default();
            let tail = if tail.is_empty() {
                String::new()
            } else {
                format!("/{tail}")
            };
            format!("{base}/clusters/{cluster}{tail}")
        }
        None => url.to_owned(),
    }
}

/// Resolves the APIExport from the kcp configuration (which must point at a workspace).
///
/// kcp creates an APIExport's default endpoint slice a moment after the export, so an agent
/// started beside the export would find neither yet. Upstream exits then (and is restarted
/// until both exist); ours waits with `backoff`, saying what it waits for. Any other error
/// (a URL without a workspace, a refused request) ends the wait at once.
pub async fn resolve(kcp: kube::Config, source: ExportRef, backoff: Backoff) -> Result<KcpTarget> {
    let mut failures = 0;
    loop {
        match attempt(kcp.clone(), &source).await? {
            Ok(target) => return Ok(target),
            Err(missing) => {
                failures += 1;
                let delay = backoff.delay(failures);
                tracing::warn!(%missing, retry_in = ?delay, "waiting for the APIExport");
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// One look at the followed object and its APIExport: the target, or which of them is
/// missing (`Ok(Err(_))`), or an error that waiting does not mend.
async fn attempt(kcp: kube::Config, source: &ExportRef) -> Result<Result<KcpTarget, String>> {
    let url = kcp.cluster_url.to_string();
    let Some(current) = cluster_segment(&url).map(str::to_owned) else {
        return Err(config_error(format!(
            "{url} does not point at a workspace (/clusters/<name>)"
        )));
    };
    let client =
        kcp_core::rest_metrics::client(kcp.clone()).map_err(|e| config_error(e.to_string()))?;
    let (export_path, export_name) = match source {
        ExportRef::Export(name) => (current.clone(), name.clone()),
        ExportRef::EndpointSlice(name) => {
            let what = format!("APIExportEndpointSlice {name:?} in {current}");
            let found = Api::<APIExportEndpointSlice>::all(client.clone())
                .get_opt(name)
                .await
                .map_err(|e| config_error(format!("reading {what}: {e}")))?;
            let Some(slice) = found else {
                return Ok(Err(what));
            };
            let export = slice.spec.export;
            (
                export
                    .path
                    .filter(|p| !p.is_empty())
                    .unwrap_or(current.clone()),
                export.name,
            )
        }
    };
    let mut export_config = kcp;
    if export_path != current {
        export_config.cluster_url = retarget(&url, &export_path)
            .parse()
            .map_err(|e| config_error(format!("retargeting to {export_path}: {e}")))?;
    }
    let export_client = kcp_core::rest_metrics::client(export_config.clone())
        .map_err(|e| config_error(e.to_string()))?;
    let what = format!("APIExport {export_name:?} in {export_path}");
    let export = Api::<APIExport>::all(export_client)
        .get_opt(&export_name)
        .await
        .map_err(|e| config_error(format!("reading {what}: {e}")))?;
    if export.is_none() {
        return Ok(Err(what));
    }
    Ok(Ok(KcpTarget {
        export_config,
        export_name,
        source_client: client,
        source: source.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_segment_is_read_from_the_url() {
        assert_eq!(
            cluster_segment("https://kcp:6443/clusters/root:org"),
            Some("root:org")
        );
        assert_eq!(
            cluster_segment("https://kcp:6443/clusters/abc/"),
            Some("abc")
        );
        assert_eq!(cluster_segment("https://kcp:6443"), None);
    }

    #[test]
    fn retargeting_replaces_only_the_cluster_segment() {
        assert_eq!(
            retarget("https://kcp/clusters/a", "root:b"),
            "https://kcp/clusters/root:b"
        );
        assert_eq!(
            retarget("https://kcp/clusters/a/x", "b"),
            "https://kcp/clusters/b/x"
        );
    }
}
