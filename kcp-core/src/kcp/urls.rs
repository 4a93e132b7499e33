//! URLs of kcp's logical clusters and virtual workspaces.
//!
//! kcp serves every logical cluster under `<base>/clusters/<name or path>` and its virtual
//! workspaces under `<base>/services/...`. A kube client pointed at such a URL keeps the path
//! prefix and appends the request path, so a per-cluster client is just a client whose
//! `cluster_url` is one of the URLs built here.
//!
//! Base URLs are taken as strings (`http::Uri` displays as one) and normalized: trailing
//! slashes are removed, and [`cluster_url`] also removes a trailing `/clusters/<x>` that a kcp
//! kubeconfig usually carries.

use http::Uri;

use super::names::{ClusterAddress, ClusterPath, InitializerName};
use super::types::{APIExportEndpointSlice, WorkspaceType};
use crate::error::{Error, Result};

/// Removes trailing slashes and one trailing `/clusters/<x>` segment pair from a kcp URL.
///
/// `https://kcp:6443/clusters/root` and `https://kcp:6443/clusters/root/` both become
/// `https://kcp:6443`. (Upstream strips `/clusters/[^/]+$` before trimming slashes, so it keeps
/// the suffix when a slash follows; this function does not.)
pub fn strip_cluster_suffix(url: &str) -> &str {
    let url = url.trim_end_matches('/');
    let stripped = url
        .rsplit_once('/')
        .and_then(|(head, last)| {
            let head = head.strip_suffix("/clusters")?;
            // `https://clusters/x` is a host named `clusters`, not a cluster suffix.
            (!last.is_empty() && !head.ends_with('/')).then_some(head)
        })
        .unwrap_or(url);
    stripped.trim_end_matches('/')
}

/// `<base>/clusters/<cluster>`, after removing any `/clusters/<x>` already at the end of `base`.
pub fn cluster_url(base: &str, cluster: &impl ClusterAddress) -> String {
    format!(
        "{}/clusters/{}",
        strip_cluster_suffix(base),
        cluster.as_url_segment()
    )
}

/// Like [`cluster_url`], parsed into a [`Uri`] for `kube::Config::cluster_url`.
pub fn cluster_uri(base: &str, cluster: &impl ClusterAddress) -> Result<Uri> {
    parse_uri(&cluster_url(base, cluster))
}

/// `<vw>/clusters/<cluster>`: one logical cluster (or `*`) inside a virtual workspace URL as
/// published in `WorkspaceType.status.virtualWorkspaces[].url` or
/// `APIExportEndpointSlice.status.endpoints[].url`.
pub fn virtual_workspace_cluster_url(vw_url: &str, cluster: &impl ClusterAddress) -> String {
    format!(
        "{}/clusters/{}",
        vw_url.trim_end_matches('/'),
        cluster.as_url_segment()
    )
}

/// `<base>/services/initializingworkspaces/<initializer>/clusters/<cluster>`.
///
/// `base` is a shard's virtual workspace host; prefer the URLs kcp publishes in the
/// WorkspaceType's status ([`initializing_workspace_urls`]), which name the right shards.
pub fn initializing_workspace_url(
    base: &str,
    initializer: &InitializerName,
    cluster: &impl ClusterAddress,
) -> String {
    format!(
        "{}/services/initializingworkspaces/{initializer}/clusters/{}",
        strip_cluster_suffix(base),
        cluster.as_url_segment()
    )
}

/// `<base>/services/apiexport/<export path>/<export name>/clusters/<cluster>`.
///
/// Prefer the URLs kcp publishes in the APIExportEndpointSlice ([`endpoint_slice_urls`]).
pub fn apiexport_url(
    base: &str,
    export_path: &ClusterPath,
    export_name: &str,
    cluster: &impl ClusterAddress,
) -> String {
    format!(
        "{}/services/apiexport/{export_path}/{export_name}/clusters/{}",
        strip_cluster_suffix(base),
        cluster.as_url_segment()
    )
}

/// The initializingworkspaces virtual workspace URLs of a WorkspaceType, one per shard.
///
/// Entries typed `initializing` are kept; untyped entries (older kcp) are kept when their URL
/// contains `/initializingworkspaces/`.
pub fn initializing_workspace_urls(workspace_type: &WorkspaceType) -> Vec<&str> {
    let entries = workspace_type
        .status
        .as_ref()
        .and_then(|s| s.virtual_workspaces.as_deref())
        .unwrap_or_default();
    entries
        .iter()
        .filter(|vw| match vw.type_.as_deref() {
            Some(kind) => kind == "initializing",
            None => vw.url.contains("/initializingworkspaces/"),
        })
        .map(|vw| vw.url.as_str())
        .collect()
}

/// The apiexport virtual workspace URLs of an APIExportEndpointSlice, one per shard.
pub fn endpoint_slice_urls(slice: &APIExportEndpointSlice) -> Vec<&str> {
    slice
        .status
        .as_ref()
        .and_then(|s| s.endpoints.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|e| e.url.as_str())
        .collect()
}

fn parse_uri(url: &str) -> Result<Uri> {
    url.parse::<Uri>()
        .map_err(|err| Error::Config(format!("invalid URL {url:?}: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kcp::names::ClusterName;
    use crate::kcp::types::{
        APIExportEndpoint, APIExportEndpointSliceSpec, APIExportEndpointSliceStatus,
        VirtualWorkspace, WorkspaceTypeSpec, WorkspaceTypeStatus,
    };

    fn name(s: &str) -> ClusterName {
        ClusterName::new(s).unwrap()
    }

    #[test]
    fn cluster_suffix_and_trailing_slashes_are_stripped() {
        assert_eq!(
            strip_cluster_suffix("https://kcp:6443/clusters/root"),
            "https://kcp:6443"
        );
        assert_eq!(
            strip_cluster_suffix("https://kcp:6443/clusters/root:org/"),
            "https://kcp:6443"
        );
        assert_eq!(
            strip_cluster_suffix("https://kcp:6443/"),
            "https://kcp:6443"
        );
        assert_eq!(
            strip_cluster_suffix("https://kcp:6443/prefix"),
            "https://kcp:6443/prefix"
        );
        assert_eq!(
            strip_cluster_suffix("https://kcp:6443/clusters/"),
            "https://kcp:6443/clusters"
        );
        assert_eq!(
            strip_cluster_suffix("https://clusters/x"),
            "https://clusters/x"
        );
    }

    #[test]
    fn cluster_url_replaces_the_cluster_of_the_base() {
        assert_eq!(
            cluster_url("https://kcp:6443/clusters/root", &name("2x9")),
            "https://kcp:6443/clusters/2x9"
        );
        let path: ClusterPath = "root:org:team".parse().unwrap();
        assert_eq!(
            cluster_url("https://kcp:6443", &path),
            "https://kcp:6443/clusters/root:org:team"
        );
    }

    #[test]
    fn cluster_uri_parses_wildcard_urls() {
        let uri = cluster_uri("https://kcp:6443/", &ClusterName::wildcard()).unwrap();
        assert_eq!(uri.path(), "/clusters/*");
    }

    #[test]
    fn initializing_workspace_url_names_initializer_and_cluster() {
        let init = InitializerName::new("root:my-type").unwrap();
        assert_eq!(
            initializing_workspace_url("https://shard:6443/clusters/root", &init, &name("2x9")),
            "https://shard:6443/services/initializingworkspaces/root:my-type/clusters/2x9"
        );
    }

    #[test]
    fn apiexport_url_names_export_path_export_and_cluster() {
        let path: ClusterPath = "root:my-ws".parse().unwrap();
        assert_eq!(
            apiexport_url(
                "https://kcp:6443",
                &path,
                "my-service",
                &ClusterName::wildcard()
            ),
            "https://kcp:6443/services/apiexport/root:my-ws/my-service/clusters/*"
        );
    }

    #[test]
    fn virtual_workspace_url_gets_a_cluster_appended() {
        assert_eq!(
            virtual_workspace_cluster_url(
                "https://shard/services/apiexport/root/example.kcp.io/",
                &name("abc")
            ),
            "https://shard/services/apiexport/root/example.kcp.io/clusters/abc"
        );
    }

    #[test]
    fn only_initializing_virtual_workspaces_of_a_type_are_listed() {
        let vw = |url: &str, type_: Option<&str>| VirtualWorkspace {
            url: url.into(),
            type_: type_.map(Into::into),
        };
        let mut wst = WorkspaceType::new("t", WorkspaceTypeSpec::default());
        wst.status = Some(WorkspaceTypeStatus {
            virtual_workspaces: Some(vec![
                vw("https://a/services/initializingworkspaces/root:t", None),
                vw("https://a/services/terminatingworkspaces/root:t", None),
                vw(
                    "https://b/services/initializingworkspaces/root:t",
                    Some("initializing"),
                ),
                vw(
                    "https://b/services/terminatingworkspaces/root:t",
                    Some("terminating"),
                ),
            ]),
            conditions: None,
        });
        assert_eq!(
            initializing_workspace_urls(&wst),
            [
                "https://a/services/initializingworkspaces/root:t",
                "https://b/services/initializingworkspaces/root:t"
            ]
        );
    }

    #[test]
    fn endpoint_slice_urls_are_listed_in_order() {
        let mut slice = APIExportEndpointSlice::new("s", APIExportEndpointSliceSpec::default());
        assert!(endpoint_slice_urls(&slice).is_empty());
        slice.status = Some(APIExportEndpointSliceStatus {
            endpoints: Some(vec![
                APIExportEndpoint {
                    url: "https://a/services/apiexport/root/e".into(),
                },
                APIExportEndpoint {
                    url: "https://b/services/apiexport/root/e".into(),
                },
            ]),
            conditions: None,
        });
        assert_eq!(
            endpoint_slice_urls(&slice),
            [
                "https://a/services/apiexport/root/e",
                "https://b/services/apiexport/root/e"
            ]
        );
    }
}
