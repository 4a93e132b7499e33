//! A real Kubernetes API server: etcd and kube-apiserver, started on 127.0.0.1 as envtest starts
//! them (RBAC authorization, static tokens, a self-signed serving certificate).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::etcd::Etcd;
use crate::go_build;
use crate::identities::Identities;
use crate::kubeconfig::Endpoint;
use crate::ports::free_port;
use crate::probe::wait_ready;
use crate::process::PeerProcess;

/// A running etcd + kube-apiserver.
#[derive(Debug)]
pub struct KubeApiServer {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The serving certificate bundle (PEM), the CA clients trust.
    pub ca_pem: String,
    /// How long kube-apiserver took from start to `/readyz`.
    pub ready_after: Duration,
    // Field order is drop order: the API server stops before its etcd.
    apiserver: PeerProcess,
    etcd: Etcd,
}

impl KubeApiServer {
    /// Builds (or finds cached) etcd and kube-apiserver, starts both under `dir`, and waits
    /// until `/readyz` answers. Blocking: call from a plain thread.
    pub fn start(dir: &Path, identities: &Identities, tokens: &Path) -> Result<Self> {
        let apiserver_bin = go_build::build("kube-apiserver")?;
        let etcd = Etcd::start(dir)?;
        let etcd_url = etcd.url.clone();
        let port = free_port("kube-apiserver")?;
        let cert_dir = dir.join("kube-certs");
        let (sa_key, sa_public) = write_service_account_key(dir)?;
        let url = format!("https://127.0.0.1:{port}");
        let started = std::time::Instant::now();
        let args = apiserver_args(&etcd_url, &cert_dir, port, (&sa_key, &sa_public), tokens);
        let mut apiserver = PeerProcess::spawn(
            "kube-apiserver",
            &apiserver_bin.binary,
            &args,
            &[],
            &dir.join("kube-apiserver.log"),
        )?;
        let ca_pem = wait_for_certificate(&mut apiserver, &cert_dir.join("apiserver.crt"))?;
        let admin = Endpoint {
            url: url.clone(),
            ca_pem: ca_pem.clone(),
            token: identities.admin.token.clone(),
        };
        wait_ready(&mut apiserver, &admin, "/readyz", Duration::from_secs(120))?;
        let ready_after = started.elapsed();
        Ok(Self {
            url,
            ca_pem,
            ready_after,
            apiserver,
            etcd,
        })
    }

    /// `Ok` while both processes run; otherwise an error with the tail of the dead one's log.
    pub fn check_alive(&mut self) -> Result<()> {
        self.etcd.check_alive()?;
        self.apiserver.check_alive()
    }

    /// Kills kube-apiserver and its etcd with SIGKILL and starts both again on the same data,
    /// ports and certificates, then waits for `/readyz`. Returns how long it took from the
    /// kill to ready. Blocking: call from a plain thread.
    pub fn restart_hard(&mut self, admin: &Endpoint) -> Result<Duration> {
        let killed = std::time::Instant::now();
        self.apiserver.kill_hard()?;
        self.etcd.restart_hard()?;
        self.apiserver.respawn()?;
        wait_ready(
            &mut self.apiserver,
            admin,
            "/readyz",
            Duration::from_secs(120),
        )?;
        Ok(killed.elapsed())
    }

    /// The kube-apiserver's log file.
    pub fn log(&self) -> &Path {
        self.apiserver.log()
    }
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

fn apiserver_args(
    etcd: &str,
    cert_dir: &Path,
    port: u16,
    (sa_key, sa_public): (&Path, &Path),
    tokens: &Path,
) -> Vec<String> {
    let flag = |name: &str, value: String| format!("--{name}={value}");
    vec![
        flag("etcd-servers", etcd.to_string()),
        flag("cert-dir", path_arg(cert_dir)),
        flag("secure-port", port.to_string()),
        flag("bind-address", "127.0.0.1".into()),
        flag("advertise-address", "127.0.0.1".into()),
        flag("service-cluster-ip-range", "10.0.0.0/24".into()),
        flag("allow-privileged", "true".into()),
        flag("disable-admission-plugins", "ServiceAccount".into()),
        flag("authorization-mode", "RBAC".into()),
        flag(
            "service-account-issuer",
            format!("https://127.0.0.1:{port}/"),
        ),
        flag("service-account-key-file", path_arg(sa_public)),
        flag("service-account-signing-key-file", path_arg(sa_key)),
        flag("token-auth-file", path_arg(tokens)),
        // No compaction on a timer (kube's default is every 5 minutes): an answer about an old
        // resourceVersion then depends on the request, not on how long the server has run.
        flag("etcd-compaction-interval", "0".into()),
    ]
}

/// An ECDSA P-256 key pair for ServiceAccount tokens: the private key (PKCS#8 PEM) signs, the
/// public key (SPKI PEM) verifies.
fn write_service_account_key(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let key = rcgen::KeyPair::generate()
        .map_err(|e| Error::config("the ServiceAccount signing key", e))?;
    let private = dir.join("service-account.key");
    let public = dir.join("service-account.pub");
    let write = |path: &Path, pem: String| {
        std::fs::write(path, pem)
            .map_err(|e| Error::io("kube-apiserver", format!("writing {}", path.display()), e))
    };
    write(&private, key.serialize_pem())?;
    write(&public, key.public_key_pem())?;
    Ok((private, public))
}

/// kube-apiserver writes its self-signed serving bundle early in its start; wait for it.
fn wait_for_certificate(apiserver: &mut PeerProcess, path: &Path) -> Result<String> {
    for _ in 0..600 {
        apiserver.check_alive()?;
        if let Some(pem) = std::fs::read_to_string(path)
            .ok()
            .filter(|pem| pem.contains("END CERTIFICATE"))
        {
            return Ok(pem);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(apiserver.failure(&format!("never wrote {}", path.display())))
}
