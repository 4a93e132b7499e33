//! The `kind` command-line provisioner.
//!
//! Command lines are built by pure functions (tested without a container engine); the
//! provisioner runs them with `tokio::process`, the kind config on stdin (`--config -`), each
//! with a time limit, and reports kind's stderr when a command fails. kind writes the new
//! cluster's kubeconfig to a scratch file (`--kubeconfig`), which is removed: kubeconfigs are
//! always exported fresh with `kind get kubeconfig`, never read back from a file. The ownership
//! marker is read from the cluster's Nodes (their [`OWNER_LABEL`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use tokio::io::AsyncWriteExt as _;

use super::{CreateRequest, Provisioner};
use crate::error::{Error, Result};
use crate::kind_config::OWNER_LABEL;

/// Time allowed for the quick commands (`get clusters`, `get kubeconfig`).
const QUICK: Duration = Duration::from_secs(60);
/// Time allowed for `delete cluster`.
const DELETE: Duration = Duration::from_secs(300);
/// Extra time `create cluster` gets beyond its `--wait`.
const CREATE_MARGIN: Duration = Duration::from_secs(300);

/// Provisions clusters with the `kind` binary.
#[derive(Debug, Clone)]
pub struct KindCli {
    binary: PathBuf,
    scratch: PathBuf,
}

impl KindCli {
    /// The Nodes of cluster `name`, through the kubeconfig kind exports (`what` names the
    /// operation in errors).
    async fn nodes(&self, name: &str, what: &'static str) -> Result<kube::Api<Node>> {
        let kubeconfig = self.kubeconfig(name).await?;
        let failed = |e: String| Error::provisioner(name, what, e);
        let parsed =
            kube::config::Kubeconfig::from_yaml(&kubeconfig).map_err(|e| failed(e.to_string()))?;
        let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
            .await
            .map_err(|e| failed(e.to_string()))?;
        let client = kube::Client::try_from(config).map_err(|e| failed(e.to_string()))?;
        Ok(kube::Api::all(client))
    }

    /// A provisioner running `binary` (a path, or a name looked up on `PATH`), with kind's
    /// scratch kubeconfigs in the system temporary directory.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        KindCli {
            binary: binary.into(),
            scratch: std::env::temp_dir().join("capi-provider-kind"),
        }
    }

    /// Sets the directory for kind's scratch kubeconfig files.
    pub fn scratch_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.scratch = dir.into();
        self
    }

    fn scratch_kubeconfig(&self, name: &str) -> PathBuf {
        self.scratch.join(format!("{name}.kubeconfig"))
    }

    async fn run(
        &self,
        cluster: &str,
        operation: &'static str,
        args: &[String],
        stdin: Option<&str>,
        limit: Duration,
    ) -> Result<String> {
        let failed = |message: String| Error::provisioner(cluster, operation, message);
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("running {}: {e}", self.binary.display())))?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input.as_bytes())
                .await
                .map_err(|e| failed(format!("writing the kind config to kind's stdin: {e}")))?;
        }
        let output = tokio::time::timeout(limit, child.wait_with_output())
            .await
            .map_err(|_| failed(format!("no answer within {limit:?}")))?
            .map_err(|e| failed(format!("waiting for {}: {e}", self.binary.display())))?;
        if !output.status.success() {
            return Err(failed(format!(
                "{} ({})",
                last_lines(&String::from_utf8_lossy(&output.stderr), 10),
                output.status
            )));
        }
        String::from_utf8(output.stdout).map_err(|e| failed(format!("output is not UTF-8: {e}")))
    }
}

/// `kind create cluster` for `request`, kind writing its kubeconfig to `kubeconfig`; the
/// config is read from stdin.
pub fn create_args(request: &CreateRequest, kubeconfig: &Path) -> Vec<String> {
    let mut args = vec![
        "create".into(),
        "cluster".into(),
        "--name".into(),
        request.name.clone(),
    ];
    if let Some(image) = &request.image {
        args.extend(["--image".into(), image.clone()]);
    }
    args.extend([
        "--config".into(),
        "-".into(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--wait".into(),
        format!("{}s", request.wait.as_secs()),
    ]);
    args
}

/// `kind delete cluster --name <name> --kubeconfig <scratch>`.
pub fn delete_args(name: &str, kubeconfig: &Path) -> Vec<String> {
    ["delete", "cluster", "--name", name, "--kubeconfig"]
        .into_iter()
        .map(String::from)
        .chain([kubeconfig.display().to_string()])
        .collect()
}

/// `kind get clusters`.
pub fn list_args() -> Vec<String> {
    vec!["get".into(), "clusters".into()]
}

/// `kind get kubeconfig --name <name>`.
pub fn kubeconfig_args(name: &str) -> Vec<String> {
    ["get", "kubeconfig", "--name", name]
        .into_iter()
        .map(String::from)
        .collect()
}

/// The cluster names in the output of `kind get clusters` (kind prints "No kind clusters
/// found." on stderr, so an empty stdout is an empty list).
pub fn parse_cluster_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("No kind clusters"))
        .map(String::from)
        .collect()
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[async_trait]
impl Provisioner for KindCli {
    async fn create(&self, request: &CreateRequest) -> Result<()> {
        let name = &request.name;
        tokio::fs::create_dir_all(&self.scratch)
            .await
            .map_err(|e| {
                Error::provisioner(
                    name,
                    "create",
                    format!("creating {}: {e}", self.scratch.display()),
                )
            })?;
        let scratch = self.scratch_kubeconfig(name);
        let args = create_args(request, &scratch);
        let result = self
            .run(
                name,
                "create",
                &args,
                Some(&request.config),
                request.wait + CREATE_MARGIN,
            )
            .await;
        let _ = tokio::fs::remove_file(&scratch).await;
        result.map(drop)
    }

    async fn delete(&self, name: &str) -> Result<()> {
        let scratch = self.scratch_kubeconfig(name);
        let result = self
            .run(name, "delete", &delete_args(name, &scratch), None, DELETE)
            .await;
        let _ = tokio::fs::remove_file(&scratch).await;
        result.map(drop)
    }

    async fn list(&self) -> Result<Vec<String>> {
        let out = self
            .run("*", "get clusters", &list_args(), None, QUICK)
            .await?;
        Ok(parse_cluster_list(&out))
    }

    async fn owner(&self, name: &str) -> Result<Option<String>> {
        let nodes = self.nodes(name, "read the ownership marker").await?;
        let failed = |e: String| Error::provisioner(name, "read the ownership marker", e);
        let nodes = nodes
            .list(&ListParams::default().labels(OWNER_LABEL))
            .await
            .map_err(|e| failed(format!("listing Nodes: {e}")))?;
        Ok(nodes
            .items
            .iter()
            .find_map(|n| n.metadata.labels.as_ref()?.get(OWNER_LABEL).cloned()))
    }

    async fn mark_owner(&self, name: &str, owner_uid: &str) -> Result<()> {
        let what = "mark the ownership";
        let nodes = self.nodes(name, what).await?;
        let failed = |e: String| Error::provisioner(name, what, e);
        let list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| failed(format!("listing Nodes: {e}")))?;
        let patch = serde_json::json!({"metadata": {"labels": {OWNER_LABEL: owner_uid}}});
        for node in list.items {
            let node_name = node.metadata.name.unwrap_or_default();
            nodes
                .patch(
                    &node_name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await
                .map_err(|e| failed(format!("labelling Node {node_name}: {e}")))?;
        }
        Ok(())
    }

    async fn kubeconfig(&self, name: &str) -> Result<String> {
        self.run(name, "get kubeconfig", &kubeconfig_args(name), None, QUICK)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(image: Option<&str>) -> CreateRequest {
        CreateRequest {
            name: "dev".into(),
            image: image.map(String::from),
            config: String::new(),
            owner_uid: "u".into(),
            wait: Duration::from_secs(300),
        }
    }

    #[test]
    fn create_passes_name_image_config_on_stdin_kubeconfig_and_wait() {
        let args = create_args(
            &request(Some("kindest/node:v1.21.1")),
            Path::new("/s/dev.kubeconfig"),
        );
        assert_eq!(
            args.join(" "),
            "create cluster --name dev --image kindest/node:v1.21.1 --config - --kubeconfig /s/dev.kubeconfig --wait 300s"
        );
    }

    #[test]
    fn create_without_an_image_leaves_kinds_default() {
        let args = create_args(&request(None), Path::new("k"));
        assert!(!args.contains(&"--image".to_string()));
    }

    #[test]
    fn delete_get_and_list_command_lines() {
        assert_eq!(
            delete_args("dev", Path::new("k")).join(" "),
            "delete cluster --name dev --kubeconfig k"
        );
        assert_eq!(
            kubeconfig_args("dev").join(" "),
            "get kubeconfig --name dev"
        );
        assert_eq!(list_args().join(" "), "get clusters");
    }

    #[test]
    fn the_cluster_list_is_one_name_per_line() {
        assert_eq!(parse_cluster_list("a\n\nb\n"), ["a", "b"]);
        assert!(parse_cluster_list("No kind clusters found.\n").is_empty());
    }

    #[test]
    fn only_the_last_lines_of_stderr_are_kept() {
        assert_eq!(last_lines("1\n2\n3\n", 2), "2\n3");
    }
}
