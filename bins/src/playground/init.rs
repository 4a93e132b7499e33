//! The kcp-init section: the init-agent against the `kcp` server, a WorkspaceType with an
//! initializer, an InitTemplate listing a CR before its CRD and a ConfigMap before its
//! Namespace, an InitTarget, and three Workspaces that become Ready.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use kcp_core::kcp::Workspace;
use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, ObjectRef};
use kcp_init::{AgentConfig, run};

use super::{
    Playground, PlaygroundError, Running, Section, SectionStatus, apply_objects, apply_yaml,
};

const WORKSPACE_TYPE: &str = include_str!("../../../examples/playground/01-workspace-type.yaml");
const INIT: &str = include_str!("../../../examples/playground/02-init.yaml");
const WORKSPACES: &str = include_str!("../../../examples/playground/03-workspaces.yaml");

/// The running init-agent.
#[derive(Default)]
pub struct InitSection {
    agent: Option<Running<kcp_init::Error>>,
    synced: Arc<AtomicBool>,
}

fn core_error(context: &str) -> impl FnOnce(kcp_core::Error) -> PlaygroundError + '_ {
    move |source| PlaygroundError::Core {
        context: context.to_string(),
        source,
    }
}

#[async_trait]
impl Section for InitSection {
    fn name(&self) -> &'static str {
        "init"
    }

    async fn start(&mut self, playground: &Playground) -> Result<(), PlaygroundError> {
        let root = playground.kcp.object_client("root")?;
        let crds = kcp_init::api::crd_objects().map_err(|err| PlaygroundError::Section {
            section: "init",
            message: format!("the kcp-init CRDs: {err}"),
        })?;
        apply_objects(root.as_ref(), "the InitTarget and InitTemplate CRDs", crds).await?;
        let config = AgentConfig::new(playground.kcp.kube_config("root")?, "root");
        self.synced = config.ready.clone();
        self.agent = Some(Running::spawn(|shutdown| run(config, shutdown)));
        println!("kcp-init-agent running against kcp (config workspace root)");
        apply_yaml(root.as_ref(), "01-workspace-type.yaml", WORKSPACE_TYPE).await?;
        apply_yaml(root.as_ref(), "02-init.yaml", INIT).await?;
        apply_yaml(root.as_ref(), "03-workspaces.yaml", WORKSPACES).await
    }

    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError> {
        if let Some(agent) = &self.agent
            && agent.is_finished()
        {
            return Err(PlaygroundError::Section {
                section: "init",
                message: "the agent stopped early".into(),
            });
        }
        let root = playground.kcp.object_client("root")?;
        let list: Vec<Workspace> = root
            .list_typed(None, &ListOptions::default())
            .await
            .map_err(core_error("listing workspaces"))?;
        let converged = !list.is_empty() && list.iter().all(|w| phase(w) == "Ready");
        Ok(SectionStatus {
            lines: table(&list, self.synced.load(Ordering::SeqCst)),
            converged,
        })
    }

    async fn summary(&self, playground: &Playground) -> Result<Vec<String>, PlaygroundError> {
        let root = playground.kcp.object_client("root")?;
        let list: Vec<Workspace> = root
            .list_typed(None, &ListOptions::default())
            .await
            .map_err(core_error("listing workspaces"))?;
        let mut lines = vec!["what the agent created:".to_string()];
        for ws in &list {
            let path = format!("root:{}", ws.metadata.name.as_deref().unwrap_or_default());
            lines.push(created_in(playground.kcp.object_client(&path)?.as_ref(), &path).await);
        }
        let kc = playground.kubeconfig.display();
        lines.push(format!("kubectl --kubeconfig {kc} get workspaces"));
        lines.push(format!("kubectl --kubeconfig {kc} get inittargets -o yaml"));
        lines.push(format!(
            "kubectl --kubeconfig {kc} --server {}/clusters/root:alpha -n team get configmap cluster-info -o yaml",
            playground.kcp.url()
        ));
        Ok(lines)
    }

    async fn stop(&mut self) {
        if let Some(agent) = self.agent.take() {
            agent.stop().await;
        }
    }
}

fn phase(ws: &Workspace) -> &str {
    ws.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("-")
}

/// One line per workspace: phase, logical cluster and the initializers still pending.
fn table(list: &[Workspace], synced: bool) -> Vec<String> {
    let mut lines = vec![
        format!(
            "kcp-init-agent {}",
            if synced { "synced" } else { "starting" }
        ),
        format!(
            "{:<10} {:<13} {:<18} INITIALIZERS",
            "WORKSPACE", "PHASE", "CLUSTER"
        ),
    ];
    for ws in list {
        let initializers = ws
            .status
            .as_ref()
            .and_then(|s| s.initializers.as_ref())
            .map(|i| i.join(","))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "-".into());
        lines.push(format!(
            "{:<10} {:<13} {:<18} {}",
            ws.metadata.name.as_deref().unwrap_or(""),
            phase(ws),
            ws.spec.cluster.as_deref().unwrap_or("-"),
            initializers
        ));
    }
    lines
}

/// What the template put into one workspace.
async fn created_in(client: &dyn ObjectClient, path: &str) -> String {
    let info = client
        .get(&ObjectRef::namespaced(
            GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "team",
            "cluster-info",
        ))
        .await
        .ok()
        .flatten();
    let data: BTreeMap<String, String> = info
        .and_then(|cm| serde_json::from_value(cm.data["data"].clone()).ok())
        .unwrap_or_default();
    let sandbox = client
        .get(&ObjectRef::namespaced(
            GroupVersionKind::gvk("example.kcp-rs.io", "v1", "Sandbox"),
            "team",
            "default-sandbox",
        ))
        .await
        .ok()
        .flatten()
        .is_some();
    let field = |k: &str| data.get(k).map(String::as_str).unwrap_or("-").to_string();
    format!(
        "{path:<12} cluster={:<18} workspace-hash={} path-segments={} sandbox={}",
        field("cluster"),
        field("workspace-hash"),
        field("path-segments"),
        if sandbox { "yes" } else { "no" },
    )
}
