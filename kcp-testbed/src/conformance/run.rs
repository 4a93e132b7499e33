//! Running one case on kcp-sim (a fresh server per case) or on the shared real server (a fresh
//! namespace, or workspace, per case), normalised for comparison.

use std::sync::Arc;

use kcp_core::{KubeObjectClient, ObjectClient};
use serde_json::{Value, json};

use super::case::{Case, CaseFile, ServerKind};
use super::exchange::{CaseNames, Patience, run_case};
use super::normalise::Normaliser;
use crate::error::{Error, Result};
use crate::real::{shared_kcp, shared_kube, shared_kube_controllers};

/// Runs `case` of `file` on a fresh kcp-sim and returns its normalised answers.
pub async fn on_sim(file: &CaseFile, case: &Case) -> Result<Vec<Value>> {
    let config = match file.server {
        ServerKind::Kube => kcp_sim::Config::default(),
        ServerKind::Kcp => kcp_sim::Config::kcp(),
    };
    let sim = kcp_sim::Server::start(config)
        .await
        .map_err(|e| Error::config("starting kcp-sim", e))?;
    let client = client_for(kube::Config::new(parse_url(sim.url())?))?;
    let root: Arc<dyn ObjectClient> = Arc::new(sim.object_client("root"));
    let answers = on(file, case, &client, &root, Patience::Candidate).await;
    sim.shutdown().await;
    answers
}

/// Runs `case` of `file` on the shared real server and returns its normalised answers.
pub async fn on_real(file: &CaseFile, case: &Case) -> Result<Vec<Value>> {
    let (base, root) = match file.server {
        ServerKind::Kube => {
            let start = if file.controllers.is_empty() {
                shared_kube
            } else {
                shared_kube_controllers
            };
            let kube = blocking(start).await?;
            (kube.admin.clone(), None)
        }
        ServerKind::Kcp => {
            let kcp = blocking(shared_kcp).await?;
            (
                kcp.admin.at(kcp.base_url.clone()),
                Some(kcp.admin_at("root")),
            )
        }
    };
    let client = base.client()?;
    let root: Arc<dyn ObjectClient> = match root {
        Some(root) => Arc::new(KubeObjectClient::new(root.client()?)),
        None => Arc::new(KubeObjectClient::new(client.clone())),
    };
    on(file, case, &client, &root, Patience::Oracle).await
}

async fn on(
    file: &CaseFile,
    case: &Case,
    client: &kube::Client,
    root: &Arc<dyn ObjectClient>,
    patience: Patience,
) -> Result<Vec<Value>> {
    let id = format!("{}/{}", file.file, case.name);
    let names = prepare(file.server, client, root, &id).await?;
    let answers = run_case(client, &names, case, &id, patience).await;
    clean_up(file.server, client, &names).await;
    // A step not compared is written down as `null` (later steps keep their numbers), before
    // normalising, so its racy values take no ordinals either.
    let compared: Vec<Value> = answers?
        .into_iter()
        .zip(&case.steps)
        .map(|(answer, step)| if step.compare { answer } else { Value::Null })
        .collect();
    Ok(Normaliser::new(&names).answers(&compared))
}

/// A namespace `cf-<random>` (in a workspace of the same name under root, on kcp).
async fn prepare(
    server: ServerKind,
    client: &kube::Client,
    root: &Arc<dyn ObjectClient>,
    id: &str,
) -> Result<CaseNames> {
    let name = format!("cf-{:08x}", fastrand::u32(..));
    let mut names = CaseNames {
        namespace: name.clone(),
        ..CaseNames::default()
    };
    let mut namespaces = "/api/v1/namespaces".to_string();
    if server == ServerKind::Kcp {
        let cluster = crate::create_workspace(root.as_ref(), &name, None).await?;
        namespaces = format!("/clusters/root:{name}/api/v1/namespaces");
        names.workspace = Some(format!("root:{name}"));
        names.cluster = Some(cluster);
    }
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let request = http::Request::post(namespaces)
        .header("Content-Type", "application/json")
        .body(kube::client::Body::from(body.to_string().into_bytes()))
        .map_err(|e| Error::config(format!("{id}: the namespace request"), e))?;
    let created = client
        .send(request)
        .await
        .map_err(|e| Error::config(format!("{id}: creating namespace {name}"), e))?;
    if !created.status().is_success() {
        return Err(Error::config(
            format!("{id}: creating namespace {name}"),
            created.status(),
        ));
    }
    Ok(names)
}

/// Removes the case's namespace (or workspace); what fails here is left to the server's end.
async fn clean_up(server: ServerKind, client: &kube::Client, names: &CaseNames) {
    let path = match (server, &names.workspace) {
        (ServerKind::Kcp, Some(ws)) => {
            let name = ws.trim_start_matches("root:");
            format!("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}")
        }
        _ => format!("/api/v1/namespaces/{}", names.namespace),
    };
    if let Ok(request) = http::Request::delete(path).body(kube::client::Body::empty()) {
        let _ = client.send(request).await;
    }
}

fn parse_url(url: &str) -> Result<http::Uri> {
    url.parse()
        .map_err(|e| Error::config(format!("the URL {url}"), e))
}

fn client_for(config: kube::Config) -> Result<kube::Client> {
    kube::Client::try_from(config).map_err(|e| Error::config("a kcp-sim client", e))
}

async fn blocking<T: Send + 'static>(start: fn() -> Result<T>) -> Result<T> {
    tokio::task::spawn_blocking(start)
        .await
        .map_err(|e| Error::config("starting a shared peer", e))?
}
