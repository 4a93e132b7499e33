//! Cluster API's core controllers beside the real kube-apiserver, as a deployment runs them.
//!
//! The peer `cluster-api` (Cluster API's manager, `sigs.k8s.io/cluster-api`, pinned in
//! `peers/PINS`) runs against a kube-apiserver the test names. Everything it needs is read from
//! the same Go module, never from a copy of ours: the CRDs (`config/crd/bases`) and the
//! webhook configurations (`config/webhook/manifests.yaml`). As the release manifests wire them
//! (cert-manager injects the CA, a Service fronts the manager), the CRDs convert through the
//! manager's `/convert` and every defaulting and validating webhook is registered, here at
//! `https://127.0.0.1:<port>` with a self-signed serving certificate for 127.0.0.1.
//!
//! Every listener binds 127.0.0.1: health and diagnostics by flag, the webhook server by the
//! build's loopback fix ([`crate::loopback`]), since Cluster API has no flag for its address.
//! There is no container runtime and no workload cluster: what needs one (a Node, a drain)
//! is never reached while no control plane reports itself initialized.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{KubeObjectClient, parse_manifests};
use serde_json::json;

use crate::error::{Error, Result};
use crate::go_build;
use crate::kubeconfig::{Endpoint, write_file};
use crate::ports::free_port;
use crate::process::PeerProcess;

/// The peer's name in `peers/PINS`.
pub const PEER: &str = "cluster-api";
/// The Go module its CRDs and webhook manifests are read from.
pub const MODULE: &str = "sigs.k8s.io/cluster-api";

/// A running Cluster API core manager.
#[derive(Debug)]
pub struct ClusterApi {
    process: PeerProcess,
    /// The port of its webhook server on 127.0.0.1.
    pub webhook_port: u16,
    /// The port of its health endpoints (`/readyz`, `/healthz`) on 127.0.0.1.
    pub health_port: u16,
}

impl ClusterApi {
    /// Installs Cluster API's CRDs and webhook configurations into the kube-apiserver at
    /// `kube` (admin), then starts the manager with its files under `dir` and waits until it is
    /// ready. Blocking: call it from a plain thread (`spawn_blocking`).
    pub fn start(kube: &Endpoint, dir: &Path) -> Result<ClusterApi> {
        let built = go_build::build(PEER)?;
        let module = go_build::module_dir(PEER, MODULE)?;
        let (webhook_port, health_port, diagnostics_port) =
            (free_port(PEER)?, free_port(PEER)?, free_port(PEER)?);
        let certs = dir.join("cluster-api-webhook");
        let ca_pem = write_serving_certificate(&certs)?;
        let webhook = format!("https://127.0.0.1:{webhook_port}");
        let mut objects = crds(&module, &webhook, &ca_pem)?;
        objects.extend(webhook_configurations(&module, &webhook, &ca_pem)?);
        install(kube, objects)?;
        let kubeconfig = write_file(dir, "cluster-api", kube)?;
        let args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            "--leader-elect=false".to_string(),
            format!("--webhook-port={webhook_port}"),
            format!("--webhook-cert-dir={}", certs.display()),
            format!("--health-addr=127.0.0.1:{health_port}"),
            format!("--diagnostics-address=127.0.0.1:{diagnostics_port}"),
            "--insecure-diagnostics".to_string(),
        ];
        let log = dir.join("cluster-api.log");
        let mut process = PeerProcess::spawn(PEER, &built.binary, &args, &[], &log)?;
        wait_ready(&mut process, health_port, Duration::from_secs(120))?;
        Ok(ClusterApi {
            process,
            webhook_port,
            health_port,
        })
    }

    /// The manager's log.
    pub fn log(&self) -> &Path {
        self.process.log()
    }

    /// An error if the manager has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        self.process.check_alive()
    }
}

/// Cluster API's CRDs from `module`, converting through `webhook` (trusted by `ca_pem`) as the
/// release manifests make them: every CRD that serves more than one version.
pub fn crds(module: &Path, webhook: &str, ca_pem: &str) -> Result<Vec<DynamicObject>> {
    let bases = module.join("config/crd/bases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&bases)
        .map_err(|e| Error::io(PEER, format!("reading {}", bases.display()), e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut crds = Vec::new();
    for file in files {
        for mut crd in read_manifests(&file)? {
            let versions = crd.data["spec"]["versions"]
                .as_array()
                .map_or(0, |v| v.len());
            if versions > 1 {
                crd.data["spec"]["conversion"] = json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": ["v1", "v1beta1"],
                        "clientConfig": {"url": format!("{webhook}/convert"), "caBundle": ca_bundle}}});
            }
            crds.push(crd);
        }
    }
    Ok(crds)
}

/// Cluster API's mutating and validating webhook configurations from `module`, each webhook
/// pointed at its path under `webhook` instead of the release's Service.
pub fn webhook_configurations(
    module: &Path,
    webhook: &str,
    ca_pem: &str,
) -> Result<Vec<DynamicObject>> {
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut configurations = read_manifests(&module.join("config/webhook/manifests.yaml"))?;
    for configuration in &mut configurations {
        let name = configuration.metadata.name.clone().unwrap_or_default();
        configuration.metadata.name = Some(format!("capi-{name}"));
        let Some(hooks) = configuration.data["webhooks"].as_array_mut() else {
            continue;
        };
        for hook in hooks {
            let path = hook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            hook["clientConfig"] =
                json!({"url": format!("{webhook}{path}"), "caBundle": ca_bundle});
        }
    }
    Ok(configurations)
}

fn read_manifests(path: &Path) -> Result<Vec<DynamicObject>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(PEER, format!("reading {}", path.display()), e))?;
    parse_manifests(&path.display().to_string(), &text).map_err(|source| Error::Request {
        what: format!("reading {}", path.display()),
        source: Box::new(source),
    })
}

/// Applies `objects` (CRDs first: the plan orders them) and waits until every CRD is
/// established.
fn install(kube: &Endpoint, objects: Vec<DynamicObject>) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io(PEER, "building a runtime to install the CRDs", e))?;
    runtime.block_on(async {
        let client = KubeObjectClient::new(kube.client()?);
        let plan =
            ApplyPlan::build(objects, &RuleSet::default()).map_err(|source| Error::Request {
                what: "planning Cluster API's CRDs and webhooks".into(),
                source: Box::new(source),
            })?;
        let report = Applier::new(&client, ApplierConfig::new("kcp-testbed"))
            .apply_until_settled(&plan, Duration::from_secs(60))
            .await;
        if report.is_complete() {
            Ok(())
        } else {
            Err(Error::config(
                "installing Cluster API's CRDs and webhooks",
                report.to_string(),
            ))
        }
    })
}

/// A self-signed serving certificate for 127.0.0.1 as `tls.crt` and `tls.key` in `dir` (the
/// names the manager reads); returns the certificate, which is its own CA bundle.
fn write_serving_certificate(dir: &Path) -> Result<String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(PEER, format!("creating {}", dir.display()), e))?;
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
        .map_err(|e| Error::config("the webhook serving certificate", e))?;
    let cert = certified.cert.pem();
    let write = |name: &str, pem: &str| {
        let path = dir.join(name);
        std::fs::write(&path, pem)
            .map_err(|e| Error::io(PEER, format!("writing {}", path.display()), e))
    };
    write("tls.crt", &cert)?;
    write("tls.key", &certified.signing_key.serialize_pem())?;
    Ok(cert)
}

/// Polls `GET /readyz` on the health port (plain HTTP) until it answers 200.
fn wait_ready(process: &mut PeerProcess, port: u16, within: Duration) -> Result<()> {
    let started = Instant::now();
    let mut last = String::from("no answer yet");
    while started.elapsed() < within {
        process.check_alive()?;
        match readyz(port) {
            Ok(status) if status.starts_with("HTTP/1.1 200") => return Ok(()),
            Ok(status) => last = status,
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(process.failure(&format!(
        "not ready after {} s: GET /readyz: {last}",
        within.as_secs()
    )))
}

/// The status line of `GET /readyz`.
fn readyz(port: u16) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer.lines().next().unwrap_or_default().to_string())
}
