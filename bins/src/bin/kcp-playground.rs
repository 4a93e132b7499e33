//! kcp-playground: kcp-sim in kcp mode, the init-agent running against it, and example
//! workspaces converging, on a machine with nothing else installed.
//!
//! It starts the simulator on 127.0.0.1, writes a kubeconfig, installs the InitTarget and
//! InitTemplate CRDs, starts the agent, applies `examples/playground/*.yaml` (a WorkspaceType with
//! an initializer, an InitTemplate listing a CR before its CRD and a ConfigMap before its
//! Namespace, an InitTarget, three Workspaces), and prints a live status table until every
//! workspace is Ready. Then it keeps serving for kubectl until Ctrl-C, or exits with
//! `--exit-when-ready`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::Workspace;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, ObjectRef, parse_manifests};
use kcp_init::{AgentConfig, run};
use kcp_sim::{Config, Server};
use tokio::sync::watch;

const WORKSPACE_TYPE: &str = include_str!("../../../examples/playground/01-workspace-type.yaml");
const INIT: &str = include_str!("../../../examples/playground/02-init.yaml");
const WORKSPACES: &str = include_str!("../../../examples/playground/03-workspaces.yaml");

#[derive(Debug, Parser)]
#[command(
    name = "kcp-playground",
    version,
    about = "kcp-sim + kcp-init-agent + example workspaces, converging."
)]
struct Flags {
    /// Where to write the kubeconfig for kubectl.
    #[arg(long, default_value = "kcp-playground.kubeconfig")]
    kubeconfig: PathBuf,
    /// Exit 0 once every workspace is Ready (for scripts), instead of serving until Ctrl-C.
    #[arg(long)]
    exit_when_ready: bool,
    /// Give up (exit 1) if the workspaces are not Ready after this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout_seconds: u64,
    /// Debug logging of the agent and the simulator.
    #[arg(long)]
    log_debug: bool,
}

#[tokio::main]
async fn main() {
    let flags = Flags::parse();
    // Quiet by default: the status table is the interface.
    let level = if flags.log_debug { "debug" } else { "warn" };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level)),
        )
        .with_writer(std::io::stderr)
        .try_init();
    match playground(flags).await {
        Ok(()) => {}
        Err(err) => {
            eprintln!("kcp-playground: {err}");
            std::process::exit(1);
        }
    }
}

async fn apply_stream(
    client: &dyn ObjectClient,
    name: &str,
    objects: Vec<DynamicObject>,
) -> Result<(), Box<dyn std::error::Error>> {
    let plan = ApplyPlan::build(objects, &RuleSet::default())?;
    let report = Applier::new(client, ApplierConfig::new("kcp-playground"))
        .apply(&plan)
        .await;
    if !report.is_complete() {
        return Err(format!("applying {name}: {report}").into());
    }
    println!("applied {name}: {report}");
    Ok(())
}

async fn playground(flags: Flags) -> Result<(), Box<dyn std::error::Error>> {
    let sim = Server::start(Config::kcp()).await?;
    sim.write_kubeconfig(&flags.kubeconfig, &["root"])?;
    println!("kcp-sim (kcp mode) serving on {}", sim.url());
    println!("kubeconfig written to {}", flags.kubeconfig.display());

    let root = sim.object_client("root");
    let crds = kcp_init::api::crd_objects()?;
    apply_stream(&root, "the InitTarget and InitTemplate CRDs", crds).await?;

    let (stop_tx, stop_rx) = watch::channel(false);
    let config = AgentConfig::new(sim.kube_config("root")?, "root");
    let ready = config.ready.clone();
    let mut agent = tokio::spawn(run(config, async move {
        let mut stop_rx = stop_rx;
        let _ = stop_rx.wait_for(|s| *s).await;
    }));
    println!("kcp-init-agent running against root (config workspace root)");

    apply_stream(
        &root,
        "01-workspace-type.yaml",
        parse_manifests("01-workspace-type.yaml", WORKSPACE_TYPE)?,
    )
    .await?;
    apply_stream(
        &root,
        "02-init.yaml",
        parse_manifests("02-init.yaml", INIT)?,
    )
    .await?;
    apply_stream(
        &root,
        "03-workspaces.yaml",
        parse_manifests("03-workspaces.yaml", WORKSPACES)?,
    )
    .await?;

    let started = Instant::now();
    let deadline = started + Duration::from_secs(flags.timeout_seconds);
    let mut last = String::new();
    let workspaces = loop {
        let list: Vec<Workspace> = root.list_typed(None, &ListOptions::default()).await?;
        let table = status_table(
            &list,
            started.elapsed(),
            ready.load(std::sync::atomic::Ordering::SeqCst),
        );
        if table != last {
            print!("{table}");
            last = table;
        }
        let all_ready = !list.is_empty()
            && list
                .iter()
                .all(|w| w.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Ready"));
        if all_ready {
            break list;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "workspaces not Ready after {}s (see the table above)",
                flags.timeout_seconds
            )
            .into());
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            finished = &mut agent => {
                return Err(format!("the agent stopped early: {finished:?}").into());
            }
        }
    };
    println!(
        "\nall {} workspaces Ready after {:.1}s; what the agent created:",
        workspaces.len(),
        started.elapsed().as_secs_f64()
    );
    for ws in &workspaces {
        let name = ws.metadata.name.clone().unwrap_or_default();
        let path = format!("root:{name}");
        let client = sim.object_client(&path);
        let info = client
            .get(&ObjectRef::namespaced(
                GroupVersionKind::gvk("", "v1", "ConfigMap"),
                "team",
                "cluster-info",
            ))
            .await?;
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
        println!(
            "  {path:<12} cluster={:<18} workspace-hash={} path-segments={} sandbox={}",
            data.get("cluster").map(String::as_str).unwrap_or("-"),
            data.get("workspace-hash")
                .map(String::as_str)
                .unwrap_or("-"),
            data.get("path-segments").map(String::as_str).unwrap_or("-"),
            if sandbox { "yes" } else { "no" },
        );
    }
    let kc = flags.kubeconfig.display();
    println!("\ntry:");
    println!("  kubectl --kubeconfig {kc} get workspaces");
    println!("  kubectl --kubeconfig {kc} get inittargets -o yaml");
    println!(
        "  kubectl --kubeconfig {kc} --server {}/clusters/root:alpha -n team get configmap cluster-info -o yaml",
        sim.url()
    );
    if !flags.exit_when_ready {
        println!("\nserving until Ctrl-C");
        kcp_manager::shutdown_signal().await;
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(10), agent).await;
    sim.shutdown().await;
    Ok(())
}

fn status_table(list: &[Workspace], elapsed: Duration, agent_ready: bool) -> String {
    let mut out = format!(
        "\n[{:>5.1}s] agent {}\n{:<10} {:<13} {:<18} {}\n",
        elapsed.as_secs_f64(),
        if agent_ready { "synced" } else { "starting" },
        "WORKSPACE",
        "PHASE",
        "CLUSTER",
        "INITIALIZERS"
    );
    for ws in list {
        let status = ws.status.as_ref();
        let initializers = status
            .and_then(|s| s.initializers.as_ref())
            .map(|i| i.join(","))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<10} {:<13} {:<18} {}\n",
            ws.metadata.name.as_deref().unwrap_or(""),
            status.and_then(|s| s.phase.as_deref()).unwrap_or("-"),
            ws.spec.cluster.as_deref().unwrap_or("-"),
            initializers
        ));
    }
    out
}
