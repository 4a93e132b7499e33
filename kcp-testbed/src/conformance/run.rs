//! Running one case on kcp-sim (a fresh server per case) or on the shared real server (a fresh
//! namespace, or workspace, per case), normalised for comparison.

use std::path::PathBuf;
use std::sync::Arc;

use kcp_core::{KubeObjectClient, ObjectClient};
use serde_json::{Value, json};

use super::case::{Case, CaseFile, ServerKind};
use super::exchange::{CaseClients, CaseNames, Patience, run_case};
use super::normalise::Normaliser;
use crate::error::{Error, Result};
use crate::kubeconfig::Endpoint;
use crate::real::{shared_kcp, shared_kube, shared_kube_controllers};

/// Runs `case` of `file` on a fresh kcp-sim and returns its normalised answers.
pub async fn on_sim(file: &CaseFile, case: &Case) -> Result<Vec<Value>> {
    let mut config = match file.server {
        ServerKind::Kube => kcp_sim::Config::default(),
        ServerKind::Kcp => kcp_sim::Config::kcp(),
    };
    // Over HTTPS, as the real servers: kubectl sends a `--token` only over TLS.
    config.tls = true;
    let sim = kcp_sim::Server::start(config)
        .await
        .map_err(|e| Error::config("starting kcp-sim", e))?;
    let ca_pem = sim.ca_pem().unwrap_or_default().to_string();
    // kcp-sim's clients send no credentials: the admin's and the bare one are one client.
    let mut client_config = kube::Config::new(parse_url(sim.url())?);
    client_config.root_cert = Some(
        pem::parse_many(&ca_pem)
            .map_err(|e| Error::config("kcp-sim's CA", e))?
            .into_iter()
            .map(pem::Pem::into_contents)
            .collect(),
    );
    let client = client_for(client_config)?;
    let clients = CaseClients {
        admin: client.clone(),
        bare: client,
    };
    let root: Arc<dyn ObjectClient> = Arc::new(sim.object_client("root"));
    let base = Endpoint {
        url: sim.url().trim_end_matches('/').to_string(),
        ca_pem,
        // The admin's, as the real servers' kubeconfigs name theirs: kubectl prompts for a
        // user name when a kubeconfig for an HTTPS server holds no credentials.
        token: kcp_sim::tokens::KUBECONFIG_TOKEN.to_string(),
    };
    let answers = on(file, case, (&clients, &base), &root, Patience::Candidate).await;
    sim.shutdown().await;
    answers
}

/// Runs `case` of `file` on the shared real server and returns its normalised answers.
///
/// kcp v0.30.0 can die under a case (a `concurrent map writes` in its OpenAPI v3 cache, seen
/// once in a full run): a kcp case that finds kcp gone afterwards is run again, once, on kcp
/// restarted on the same data, and says so on stderr.
pub async fn on_real(file: &CaseFile, case: &Case) -> Result<Vec<Value>> {
    let answers = on_real_once(file, case).await;
    if file.server != ServerKind::Kcp {
        return answers;
    }
    let kcp = blocking(shared_kcp).await?;
    let Err(died) = kcp.check_alive() else {
        return answers;
    };
    eprintln!(
        "{}/{}: kcp exited under the case ({died}); restarting it and running the case again",
        file.file, case.name
    );
    let took = tokio::task::spawn_blocking(move || kcp.restart_hard())
        .await
        .map_err(|e| Error::config("kcp", format!("its restart panicked: {e}")))??;
    eprintln!("kcp serves again after {took:?}");
    on_real_once(file, case).await
}

async fn on_real_once(file: &CaseFile, case: &Case) -> Result<Vec<Value>> {
    let (admin, root) = match file.server {
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
            // The admin's token changes when kcp restarts.
            let admin = kcp.current_admin();
            let root = admin.at(format!("{}/clusters/root", kcp.base_url));
            (admin.at(kcp.base_url.clone()), Some(root))
        }
    };
    let client = client_for(admin.config()?)?;
    let mut bare = admin.config()?;
    bare.auth_info = kube::config::AuthInfo::default();
    let clients = CaseClients {
        admin: client.clone(),
        bare: client_for(bare)?,
    };
    let root: Arc<dyn ObjectClient> = match root {
        Some(root) => Arc::new(KubeObjectClient::new(root.client()?)),
        None => Arc::new(KubeObjectClient::new(client.clone())),
    };
    on(file, case, (&clients, &admin), &root, Patience::Oracle).await
}

/// Runs `case` through `client` (and kubectl through a kubeconfig for `base`, the server's
/// root URL and admin), in a namespace (and workspace) of its own.
async fn on(
    file: &CaseFile,
    case: &Case,
    (clients, base): (&CaseClients, &Endpoint),
    root: &Arc<dyn ObjectClient>,
    patience: Patience,
) -> Result<Vec<Value>> {
    let id = format!("{}/{}", file.file, case.name);
    let client = &clients.admin;
    let mut names = prepare(file.server, client, root, &id).await?;
    if case.runs_kubectl() {
        names.kubeconfig = Some(write_kubeconfig(base, &names)?);
    }
    let answers = run_case(clients, &names, case, &id, patience).await;
    clean_up(file.server, client, &names).await;
    if let Some(path) = &names.kubeconfig {
        let _ = std::fs::remove_dir_all(super::exchange::cache_dir(path));
        let _ = std::fs::remove_file(path);
    }
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

/// A kubeconfig for kubectl steps: the server (at the case's workspace, on kcp) as its admin,
/// in the system's temporary directory, named after the case's namespace.
fn write_kubeconfig(base: &Endpoint, names: &CaseNames) -> Result<PathBuf> {
    let url = match &names.workspace {
        Some(ws) => format!("{}/clusters/{ws}", base.url),
        None => base.url.clone(),
    };
    let endpoint = base.at(url);
    let dir = std::env::temp_dir();
    crate::kubeconfig::write_file(&dir, &format!("{}-conformance", names.namespace), &endpoint)
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

/// A client that writes down what the server answered: kube's default retry of `429`, `503` and
/// `504` (up to fifteen times, waiting out `Retry-After`) is off, so a refusal is the answer, at
/// once, not what came after minutes of retries.
fn client_for(mut config: kube::Config) -> Result<kube::Client> {
    let url = config.cluster_url.to_string();
    config.default_retry = false;
    kube::Client::try_from(config).map_err(|e| Error::config(format!("a client for {url}"), e))
}

async fn blocking<T: Send + 'static>(start: fn() -> Result<T>) -> Result<T> {
    tokio::task::spawn_blocking(start)
        .await
        .map_err(|e| Error::config("starting a shared peer", e))?
}
