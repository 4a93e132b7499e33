//! The kube-side binaries as their Deployments run them (leader election in their namespace), as
//! the ServiceAccount of `deploy/<binary>` with only that directory's RBAC, on the test bed's real
//! kube-apiserver: authorization exists only there, so these tests always use the real backend,
//! whatever `KCP_RS_BACKEND` says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::process::{Running, free_port, ready};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{
    DeleteOptions, KubeObjectClient, ListOptions, ObjectClient, ObjectRef, parse_manifests,
};

const FOREIGN_CRDS: &str = include_str!("../../examples/playground/agent/00-foreign-crds.yaml");
const CERT_MANAGER_CRDS: &str =
    include_str!("../../examples/playground/operator/00-cert-manager-crds.yaml");

/// A binary as its `deploy/<dir>` installs it.
struct Deployed {
    binary: &'static str,
    dir: &'static str,
    namespace: &'static str,
    service_account: &'static str,
    /// Arguments of its Deployment beyond the common ones.
    args: &'static [&'static str],
    /// The CRDs it needs (its own and foreign ones).
    crds: fn() -> Vec<DynamicObject>,
    /// A line of its RBAC, and the same line granting nothing: removes one rule.
    rule: (&'static str, &'static str),
    /// The resource the refusal then names.
    refused: &'static str,
    /// Objects the admin applies while the binary runs with the shipped RBAC, and the kind and
    /// namespace of objects the binary must then have written: its write paths, not only its
    /// caches, within the shipped rules.
    workload: Option<Workload>,
    /// Whether metrics are served with `--metrics-secure` (then scraped three ways).
    secure_metrics: bool,
}

/// See [`Deployed::workload`].
struct Workload {
    manifests: &'static [&'static str],
    written: (&'static str, &'static str, &'static str),
    namespace: &'static str,
}

impl Deployed {
    fn read(&self, file: &str) -> String {
        support::service_account::deploy_file(self.dir, file)
    }
}

async fn apply(admin: &dyn ObjectClient, name: &str, yaml: &str) {
    support::service_account::apply(admin, name, yaml).await;
}

/// A kubeconfig for the ServiceAccount, with a token from the TokenRequest API.
async fn service_account_kubeconfig(kube: &kcp_testbed::real::SharedKube, d: &Deployed) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "real-rbac-{}-{}.kubeconfig",
        d.dir,
        std::process::id()
    ));
    support::service_account::kubeconfig(&kube.admin, d.namespace, d.service_account, &path).await
}

/// The binary with the arguments of its Deployment (addresses on loopback); its log goes to
/// `log`.
fn start(
    d: &Deployed,
    kubeconfig: &Path,
    log: &Path,
    health: u16,
    metrics: Option<u16>,
) -> Running {
    let metrics = match metrics {
        Some(port) => vec![
            format!("--metrics-bind-address=127.0.0.1:{port}"),
            "--metrics-secure".to_owned(),
        ],
        None => vec!["--metrics-bind-address=0".to_owned()],
    };
    let child = Command::new(d.binary)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--leader-elect")
        .arg(format!("--leader-election-namespace={}", d.namespace))
        .args(metrics)
        .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
        .args(d.args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
        .spawn()
        .expect("the binary starts");
    Running(child)
}

async fn wait_for<F: FnMut() -> bool>(what: &str, within: Duration, mut f: F) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// In order, as both halves share the cluster-scoped RBAC objects: the shipped RBAC suffices to
/// become ready; without one rule the binary names the resource and verb it was refused. (Not
/// whether it is then ready: kube's RBAC authorizer learns of the change through its own
/// informer, so a cache may still sync once before the refusals start.)
async fn the_shipped_rbac_suffices_and_a_removed_rule_is_named(d: &Deployed) {
    let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
        .await
        .unwrap()
        .unwrap();
    let admin = KubeObjectClient::new(kube.admin.client().unwrap());
    support::crds::apply_and_wait_served(&admin, "real-rbac-test", (d.crds)()).await;
    let namespace = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {}}}\n",
        d.namespace
    );
    apply(&admin, "the namespace", &namespace).await;
    let rbac = d.read("rbac.yaml");
    apply(&admin, "rbac.yaml", &rbac).await;
    let kubeconfig = service_account_kubeconfig(kube, d).await;
    let log = kubeconfig.with_extension("log");
    let health = free_port();
    let metrics = d.secure_metrics.then(free_port);
    let running = start(d, &kubeconfig, &log, health, metrics);
    wait_for(
        "/readyz with the shipped RBAC",
        Duration::from_secs(60),
        || ready(health),
    )
    .await;
    if let Some(workload) = &d.workload {
        exercise(&admin, workload).await;
    }
    if let Some(port) = metrics {
        support::secure_metrics::served_only_to_who_may_read_them(port, kube.admin.token.clone())
            .await;
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !text.contains("forbidden"),
        "refused with the shipped RBAC:\n{text}"
    );
    drop(running);
    // Killed, it did not release its Lease: remove it so that the next run leads at once
    // (a replica standing by for the Lease reports ready by design).
    let leases = GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease");
    for lease in admin
        .list(&leases, Some(d.namespace), &ListOptions::default())
        .await
        .unwrap()
        .items
    {
        let target = ObjectRef::namespaced(
            leases.clone(),
            d.namespace,
            lease.metadata.name.as_deref().unwrap_or_default(),
        );
        admin
            .delete(&target, &DeleteOptions::default())
            .await
            .unwrap();
    }

    let without = rbac.replacen(d.rule.0, d.rule.1, 1);
    assert_ne!(
        without, rbac,
        "the shipped RBAC has the line {:?}",
        d.rule.0
    );
    apply(&admin, "rbac.yaml without one rule", &without).await;
    let health = free_port();
    let log = kubeconfig.with_extension("refused.log");
    let _running = start(d, &kubeconfig, &log, health, None);
    // The log is JSON: the server's quotes around the resource arrive escaped.
    let wanted = format!("cannot list resource \\\\\\\"{}\\\\\\\"", d.refused);
    wait_for("the refusal in the log", Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains(&wanted) && text.contains(d.service_account)
    })
    .await;
}

/// Applies the workload's objects and waits for what the binary writes in response.
async fn exercise(admin: &dyn ObjectClient, workload: &Workload) {
    for (index, manifest) in workload.manifests.iter().enumerate() {
        apply(admin, &format!("workload part {index}"), manifest).await;
    }
    let (group, version, kind) = workload.written;
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = admin
            .list(&gvk, Some(workload.namespace), &ListOptions::default())
            .await;
        if listed.is_ok_and(|l| !l.items.is_empty()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind} written in {} within 60 s",
            workload.namespace
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_provider_agent_runs_with_its_shipped_rbac_and_names_a_removed_rule() {
    the_shipped_rbac_suffices_and_a_removed_rule_is_named(&Deployed {
        binary: env!("CARGO_BIN_EXE_capi-provider-agent"),
        dir: "capi-provider-agent",
        namespace: "cluster-api-provider-agent",
        service_account: "cluster-api-provider-agent-controller-manager",
        args: &[],
        crds: || {
            let mut crds = capi_agent::api::crd_objects().unwrap();
            crds.extend(parse_manifests("foreign", FOREIGN_CRDS).unwrap());
            crds
        },
        rule: ("  - agents\n", "  - no-such-agents\n"),
        refused: "agents",
        // Its write paths need what Cluster API core does (owner references on the
        // AgentCluster and AgentMachines), which the Cluster API issue brings to the real bed.
        workload: None,
        secure_metrics: true,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_operator_runs_with_its_shipped_rbac_and_names_a_removed_rule() {
    the_shipped_rbac_suffices_and_a_removed_rule_is_named(&Deployed {
        binary: env!("CARGO_BIN_EXE_kcp-operator"),
        dir: "kcp-operator",
        namespace: "kcp-operator-system",
        service_account: "kcp-operator",
        args: &["--enabled-controller-groups=config,workload"],
        crds: || {
            let mut crds = kcp_operator::api::crd_objects().unwrap();
            crds.extend(parse_manifests("cert-manager", CERT_MANAGER_CRDS).unwrap());
            crds
        },
        rule: ("\"poddisruptionbudgets\"]", "\"no-such-pdbs\"]"),
        refused: "poddisruptionbudgets",
        workload: Some(Workload {
            manifests: &[
                include_str!("../../examples/playground/operator/01-issuer.yaml"),
                include_str!("../../examples/playground/operator/02-installation.yaml"),
            ],
            written: ("cert-manager.io", "v1", "Certificate"),
            namespace: "kcp",
        }),
        secure_metrics: true,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_provider_kind_runs_with_its_shipped_rbac_and_names_a_removed_rule() {
    the_shipped_rbac_suffices_and_a_removed_rule_is_named(&Deployed {
        binary: env!("CARGO_BIN_EXE_capi-provider-kind"),
        dir: "capi-provider-kind",
        namespace: "capi-kind-system",
        service_account: "capi-kind-manager",
        args: &[
            "--kind-binary=/usr/local/bin/kind",
            "--max-concurrent-creates=4",
        ],
        crds: || {
            let mut crds = capi_kind::api::crd_objects().unwrap();
            crds.extend(parse_manifests("foreign", FOREIGN_CRDS).unwrap());
            crds
        },
        rule: (
            "  resources: [\"kindclusters\"]\n",
            "  resources: [\"no-such-kindclusters\"]\n",
        ),
        refused: "kindclusters",
        workload: None,
        secure_metrics: true,
    })
    .await;
}
