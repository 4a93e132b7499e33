//! kcp-operator under faults on the real kube-apiserver (issue 25): while it works through a batch
//! of kcp installations (RootShard, Shard, FrontProxy, CacheServer, VirtualWorkspace and an admin
//! Kubeconfig each, with its built-in PKI playing cert-manager), it is killed with SIGKILL at
//! random points, kube-apiserver and etcd are killed under it, or the leader of two replicas is
//! killed. Read off the server afterwards: every installation has every child the spec names
//! (specs/kcp-operator.md sections 3 to 5) and nothing else, every Certificate is issued with its
//! Secret, every Compiled* object captured the live certificate revisions, every Deployment mounts
//! only objects that exist and carries their current revisions, and each source's status says what
//! the spec describes upstream's saying with no pods running (the server runs none).
//! Real backend only; the runs share one kube-apiserver and kill it, so they run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::client::{DeleteOptions, ObjectPatch, PatchOptions, Subresource};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{KubeObjectClient, ListOptions, ObjectClient, ObjectRef};
use serde_json::Value;
use support::chaos::{
    FaultBatch, SERIAL, restart_kube, run_with_binary_kills, run_with_leader_kill,
    run_with_server_restarts, size,
};
use support::process::free_port;

const OPERATOR: &str = env!("CARGO_BIN_EXE_kcp-operator");
const CERT_MANAGER_CRDS: &str =
    include_str!("../../examples/playground/operator/00-cert-manager-crds.yaml");
/// The operator's Lease (upstream's name, the binary's default).
const LEASE: &str = "239f9f9a.operator.kcp.io";
/// The Lease duration the leader-election replicas get, in seconds.
const LEASE_SECONDS: u64 = 5;

/// The kinds an installation's children are, with the names the check lists them by.
const CERTIFICATE: (&str, &str, &str) = ("cert-manager.io", "v1", "Certificate");
const ISSUER: (&str, &str, &str) = ("cert-manager.io", "v1", "Issuer");
const SECRET: (&str, &str, &str) = ("", "v1", "Secret");
const CONFIG_MAP: (&str, &str, &str) = ("", "v1", "ConfigMap");
const SERVICE: (&str, &str, &str) = ("", "v1", "Service");
const DEPLOYMENT: (&str, &str, &str) = ("apps", "v1", "Deployment");
const PDB: (&str, &str, &str) = ("policy", "v1", "PodDisruptionBudget");
const COMPILED: [(&str, &str, &str); 5] = [
    ("deploy.operator.kcp.io", "v1alpha1", "CompiledRootShard"),
    ("deploy.operator.kcp.io", "v1alpha1", "CompiledShard"),
    ("deploy.operator.kcp.io", "v1alpha1", "CompiledFrontProxy"),
    ("deploy.operator.kcp.io", "v1alpha1", "CompiledCacheServer"),
    (
        "deploy.operator.kcp.io",
        "v1alpha1",
        "CompiledVirtualWorkspace",
    ),
];
const SOURCES: [(&str, &str, &str); 6] = [
    ("operator.kcp.io", "v1alpha1", "RootShard"),
    ("operator.kcp.io", "v1alpha1", "Shard"),
    ("operator.kcp.io", "v1alpha1", "FrontProxy"),
    ("operator.kcp.io", "v1alpha1", "CacheServer"),
    ("operator.kcp.io", "v1alpha1", "VirtualWorkspace"),
    ("operator.kcp.io", "v1alpha1", "Kubeconfig"),
];

fn gvk((group, version, kind): (&str, &str, &str)) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

/// The names of installation `i`'s source objects.
struct Names {
    rs: String,
    shard: String,
    fp: String,
    cs: String,
    vw: String,
    kc: String,
}

fn names(i: usize) -> Names {
    Names {
        rs: format!("root-{i}"),
        shard: format!("alpha-{i}"),
        fp: format!("edge-{i}"),
        cs: format!("cache-{i}"),
        vw: format!("vw-{i}"),
        kc: format!("admin-{i}"),
    }
}

/// Installation `i`: the spec's example (section 7) with the objects' names numbered, the
/// namespace's self-signed Issuer instead of a ClusterIssuer, a PodDisruptionBudget for the
/// shard, and a Kubeconfig without `authorization` (its grants would need the installation's
/// kcp, which runs no pods here).
fn installation(ns: &str, i: usize) -> String {
    let Names {
        rs,
        shard,
        fp,
        cs,
        vw,
        kc,
    } = names(i);
    format!(
        "apiVersion: operator.kcp.io/v1alpha1
kind: RootShard
metadata: {{name: {rs}, namespace: {ns}}}
spec:
  external: {{hostname: api-{i}.kcp.example.com, port: 6443}}
  certificates: {{issuerRef: {{group: cert-manager.io, kind: Issuer, name: selfsigned}}}}
  cache: {{ref: {{name: {cs}}}}}
  etcd: {{endpoints: [\"http://etcd-{rs}.{ns}.svc.cluster.local:2379\"]}}
  auth: {{serviceAccount: {{enabled: true}}}}
  certificateTemplates: {{server: {{spec: {{dnsNames: [localhost]}}}}}}
  proxy: {{replicas: 1}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: Shard
metadata: {{name: {shard}, namespace: {ns}}}
spec:
  rootShard: {{ref: {{name: {rs}}}}}
  etcd: {{endpoints: [\"http://etcd-{shard}.{ns}.svc.cluster.local:2379\"], prefix: /kcp}}
  logging: {{level: 4}}
  podDisruptionBudget: {{enabled: true}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: FrontProxy
metadata: {{name: {fp}, namespace: {ns}}}
spec:
  rootShard: {{ref: {{name: {rs}}}}}
  external: {{hostname: api-{i}.kcp.example.com, port: 6443}}
  auth: {{dropGroups: [\"system:masters\"], serviceAccount: {{enabled: true}}}}
  serviceTemplate: {{spec: {{type: LoadBalancer}}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: CacheServer
metadata: {{name: {cs}, namespace: {ns}}}
spec:
  certificates: {{issuerRef: {{group: cert-manager.io, kind: Issuer, name: selfsigned}}}}
  replicas: 2
  etcd: {{endpoints: [\"https://cache-etcd.{ns}.svc.cluster.local:2379\"], tlsConfig: {{secretRef: {{name: cache-etcd-client}}}}}}
---
apiVersion: operator.kcp.io/v1alpha1
kind: VirtualWorkspace
metadata: {{name: {vw}, namespace: {ns}}}
spec:
  target: {{rootShardRef: {{name: {rs}}}}}
  external: {{hostname: {vw}-virtual-workspace.{ns}.svc.cluster.local, port: 6443}}
  replicas: 1
---
apiVersion: operator.kcp.io/v1alpha1
kind: Kubeconfig
metadata: {{name: {kc}, namespace: {ns}}}
spec:
  target: {{frontProxyRef: {{name: {fp}}}}}
  username: kcp-admin
  groups: [\"system:kcp:admin\"]
  validity: 8766h
  secretRef: {{name: {kc}-kubeconfig}}
  targetWorkspace: root
"
    )
}

/// What the user provides once per namespace: the self-signed Issuer the root CAs come from,
/// and the CacheServer's external etcd client certificate.
fn user_objects(ns: &str) -> String {
    format!(
        "apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {{name: selfsigned, namespace: {ns}}}
spec: {{selfSigned: {{}}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: cache-etcd-client, namespace: {ns}}}
"
    )
}

/// Installation `i`'s children by kind, from specs/kcp-operator.md: names (section 3), the
/// PKI (section 4: the root CA, four intermediate CAs with an Issuer each, seven root-shard and
/// seven shard leaves, three for each proxy, the cache server's own CA, server and client
/// certificates, the Kubeconfig's client certificate, the virtual workspace's two), and what
/// each kind renders besides (section 5: kubeconfig Secrets, merged client-CA bundles, the
/// proxies' ConfigMaps and dynamic kubeconfigs, a Deployment and Service per workload, the
/// Compiled* objects), plus the shard's PodDisruptionBudget (kcp-rs's addition, asked for).
/// Every Certificate's Secret has its name.
fn prefixed(prefix: &str, parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| format!("{prefix}-{p}")).collect()
}

fn children(i: usize) -> BTreeMap<&'static str, BTreeSet<String>> {
    let Names {
        rs,
        shard,
        fp,
        cs,
        vw,
        kc,
    } = names(i);
    let cas = prefixed(
        &rs,
        &[
            "ca",
            "server-ca",
            "requestheader-client-ca",
            "client-ca",
            "service-account-ca",
        ],
    );
    let proxy_leaves = ["server", "kubeconfig", "requestheader"];
    let mut certificates: BTreeSet<String> = cas.iter().cloned().collect();
    certificates.extend(prefixed(
        &rs,
        &[
            "server",
            "service-account",
            "virtual-workspaces",
            "logical-cluster-admin",
            "external-logical-cluster-admin",
            "client",
            "kcp-operator",
        ],
    ));
    certificates.extend(prefixed(
        &shard,
        &[
            "server",
            "service-account",
            "virtual-workspaces",
            "client",
            "mounts-proxy",
            "logical-cluster-admin",
            "external-logical-cluster-admin",
        ],
    ));
    certificates.extend(prefixed(&format!("{rs}-proxy"), &proxy_leaves));
    certificates.extend(prefixed(&format!("{rs}-{fp}"), &proxy_leaves));
    certificates.extend(prefixed(&cs, &["ca", "server", "client-certificate"]));
    certificates.insert(format!("kubeconfig-cert-{kc}"));
    certificates.extend(prefixed(&vw, &["client", "server"]));

    let mut issuers: BTreeSet<String> = cas.into_iter().collect();
    issuers.insert(format!("{cs}-ca"));

    let mut secrets = certificates.clone();
    secrets.extend(prefixed(
        &rs,
        &[
            "logical-cluster-admin-kubeconfig",
            "external-logical-cluster-admin-kubeconfig",
            "proxy-merged-client-ca",
            "proxy-dynamic-kubeconfig",
            &format!("{fp}-dynamic-kubeconfig"),
        ],
    ));
    secrets.extend(prefixed(
        &shard,
        &[
            "client-kubeconfig",
            "logical-cluster-admin-kubeconfig",
            "external-logical-cluster-admin-kubeconfig",
        ],
    ));
    secrets.insert(format!("{fp}-merged-client-ca"));
    secrets.insert(format!("{cs}-kubeconfig"));
    secrets.insert(format!("{kc}-kubeconfig"));

    let workloads: BTreeSet<String> = [
        format!("{rs}-kcp"),
        format!("{rs}-proxy"),
        format!("{shard}-shard-kcp"),
        format!("{fp}-front-proxy"),
        format!("{cs}-cache-server"),
        format!("{vw}-virtual-workspace"),
    ]
    .into();
    BTreeMap::from([
        (CERTIFICATE.2, certificates),
        (ISSUER.2, issuers),
        (SECRET.2, secrets),
        (
            CONFIG_MAP.2,
            [format!("{fp}-config"), format!("{rs}-proxy-config")].into(),
        ),
        (SERVICE.2, workloads.clone()),
        (DEPLOYMENT.2, workloads),
        (PDB.2, [format!("{shard}-shard-kcp")].into()),
        (COMPILED[0].2, [rs].into()),
        (COMPILED[1].2, [shard].into()),
        (COMPILED[2].2, [fp].into()),
        (COMPILED[3].2, [cs].into()),
        (COMPILED[4].2, [vw].into()),
    ])
}

/// A batch of installations in a namespace of its own on the shared real kube-apiserver.
struct Installations {
    client: Arc<dyn ObjectClient>,
    ns: String,
    kubeconfig: PathBuf,
    count: usize,
    /// Every installation's children plus the user's objects, by kind.
    expected: BTreeMap<&'static str, BTreeSet<String>>,
}

impl Installations {
    async fn prepare(count: usize) -> Installations {
        let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
            .await
            .unwrap()
            .unwrap();
        let client: Arc<dyn ObjectClient> =
            Arc::new(KubeObjectClient::new(kube.admin.client().unwrap()));
        let ns = format!("fault-operator-{:08x}", fastrand::u32(..));
        let mut objects = kcp_operator::api::crd_objects().unwrap();
        objects.extend(kcp_core::parse_manifests("cert-manager", CERT_MANAGER_CRDS).unwrap());
        let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n");
        objects.extend(kcp_core::parse_manifests("namespace.yaml", &namespace).unwrap());
        apply(&*client, objects).await;
        apply(
            &*client,
            kcp_core::parse_manifests("user.yaml", &user_objects(&ns)).unwrap(),
        )
        .await;
        let kubeconfig =
            std::env::temp_dir().join(format!("{ns}-{}.kubeconfig", std::process::id()));
        let document = kcp_testbed::kubeconfig::kubeconfig(&[("kube", &kube.admin)]);
        std::fs::write(&kubeconfig, document.to_string()).unwrap();
        let mut expected: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
        for i in 0..count {
            for (kind, names) in children(i) {
                expected.entry(kind).or_default().extend(names);
            }
        }
        expected
            .entry(ISSUER.2)
            .or_default()
            .insert("selfsigned".into());
        expected
            .entry(SECRET.2)
            .or_default()
            .insert("cache-etcd-client".into());
        Installations {
            client,
            ns,
            kubeconfig,
            count,
            expected,
        }
    }

    async fn list(&self, kind: (&str, &str, &str)) -> Result<Vec<DynamicObject>, String> {
        self.client
            .list(&gvk(kind), Some(&self.ns), &ListOptions::default())
            .await
            .map(|l| l.items)
            .map_err(|e| format!("listing {}s: {e}", kind.2))
    }

    /// Lists `kind`; an object no installation has (a duplicate under another name, or a
    /// stray) panics, as nothing removes it; the missing ones are added to `missing`.
    async fn children_of(
        &self,
        kind: (&'static str, &str, &str),
        missing: &mut Vec<String>,
    ) -> Result<BTreeMap<String, DynamicObject>, String> {
        let expected = &self.expected[kind.2];
        let mut found = BTreeMap::new();
        for object in self.list(kind).await? {
            let name = object.metadata.name.clone().unwrap_or_default();
            // Published into every namespace by kube-controller-manager where it runs.
            if kind == CONFIG_MAP && name == "kube-root-ca.crt" {
                continue;
            }
            assert!(
                expected.contains(&name),
                "{} {}/{name} is no installation's child (a duplicate or a stray)",
                kind.2,
                self.ns
            );
            found.insert(name, object);
        }
        missing.extend(
            expected
                .iter()
                .filter(|n| !found.contains_key(*n))
                .map(|n| format!("{} {n}", kind.2)),
        );
        Ok(found)
    }
}

impl Installations {
    /// Removes the batch: the runs that follow start an operator of their own, which would
    /// otherwise keep serving these installations (and their Services hold addresses of the
    /// server's small service range). The server runs no garbage collector and no operator
    /// is left to drop the Shards' finalizers, so every kind goes, finalizers first.
    async fn remove(&self) {
        let kinds = SOURCES.into_iter().chain(COMPILED).chain([
            CERTIFICATE,
            ISSUER,
            SERVICE,
            DEPLOYMENT,
            PDB,
            SECRET,
            CONFIG_MAP,
        ]);
        for kind in kinds {
            for object in self.list(kind).await.unwrap() {
                let name = object.metadata.name.clone().unwrap_or_default();
                let target = ObjectRef::namespaced(gvk(kind), &self.ns, &name);
                if object
                    .metadata
                    .finalizers
                    .as_ref()
                    .is_some_and(|f| !f.is_empty())
                {
                    let unfinalized = serde_json::json!({"metadata": {"finalizers": null}});
                    self.client
                        .patch(
                            &target,
                            Subresource::Main,
                            &ObjectPatch::Merge(unfinalized),
                            &PatchOptions::default(),
                        )
                        .await
                        .unwrap();
                }
                self.client
                    .delete(&target, &DeleteOptions::default())
                    .await
                    .unwrap();
            }
        }
    }
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("fault-test"))
        .apply_until_settled(&plan, Duration::from_secs(60))
        .await;
    assert!(report.is_complete(), "{report}");
}

fn condition<'a>(object: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether `object`'s condition `type_` has `status` and `reason`; otherwise what it has.
fn has_condition(
    object: &DynamicObject,
    type_: &str,
    status: &str,
    reason: &str,
) -> Result<(), String> {
    match condition(object, type_) {
        Some(c) if c["status"] == status && c["reason"] == reason => Ok(()),
        Some(c) => Err(format!(
            "{type_}={} ({}: {})",
            c["status"], c["reason"], c["message"]
        )),
        None => Err(format!("no {type_} condition")),
    }
}

fn describe(object: &DynamicObject) -> String {
    let kind = object
        .types
        .as_ref()
        .map(|t| t.kind.as_str())
        .unwrap_or("?");
    format!(
        "{kind} {}",
        object.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The status with the Deployments written and no pods running, as `specs/kcp-operator.md`
/// (section 2.10) describes upstream's; not compared with upstream's operator, whose Go module
/// the proxy refuses (README). The sources and their Compiled* objects copy `Available=False ReplicasUnavailable`
/// from the Deployment and are `Provisioning`; Shard and FrontProxy found their RootShard, the
/// VirtualWorkspace and the Kubeconfig their target; the Kubeconfig is `Ready` with its Secret
/// written (`SecretsReady`); each status describes the current generation.
fn status_with_no_pods_running(object: &DynamicObject) -> Result<(), String> {
    let kind = object.types.as_ref().map(|t| t.kind.as_str()).unwrap_or("");
    let status = &object.data["status"];
    if kind == "Kubeconfig" {
        has_condition(object, "ReferenceValid", "True", "ReferenceValid")?;
        has_condition(object, "Available", "True", "SecretsReady")?;
        if status["phase"] != "Ready" {
            return Err(format!("phase {}", status["phase"]));
        }
    } else {
        has_condition(object, "Available", "False", "ReplicasUnavailable")?;
        if status["phase"] != "Provisioning" {
            return Err(format!("phase {}", status["phase"]));
        }
        match kind {
            "Shard" | "FrontProxy" => has_condition(object, "RootShard", "True", "Valid")?,
            "VirtualWorkspace" => {
                has_condition(object, "ReferenceValid", "True", "ReferenceValid")?
            }
            _ => {}
        }
    }
    if !kind.starts_with("Compiled")
        && status["observedGeneration"].as_i64() != object.metadata.generation
    {
        return Err(format!(
            "observedGeneration {} of generation {:?}",
            status["observedGeneration"], object.metadata.generation
        ));
    }
    Ok(())
}

/// The Secrets and ConfigMaps a Deployment's pods reference (volumes and env).
fn mounted(deployment: &DynamicObject) -> Vec<(&'static str, String)> {
    let pod = &deployment.data["spec"]["template"]["spec"];
    let mut out = Vec::new();
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        if let Some(name) = volume["secret"]["secretName"].as_str() {
            out.push((SECRET.2, name.to_owned()));
        }
        if let Some(name) = volume["configMap"]["name"].as_str() {
            out.push((CONFIG_MAP.2, name.to_owned()));
        }
    }
    let containers = pod["containers"]
        .as_array()
        .into_iter()
        .chain(pod["initContainers"].as_array())
        .flatten();
    for container in containers {
        for from in container["envFrom"].as_array().into_iter().flatten() {
            if let Some(name) = from["secretRef"]["name"].as_str() {
                out.push((SECRET.2, name.to_owned()));
            }
            if let Some(name) = from["configMapRef"]["name"].as_str() {
                out.push((CONFIG_MAP.2, name.to_owned()));
            }
        }
        for var in container["env"].as_array().into_iter().flatten() {
            let source = &var["valueFrom"];
            if let Some(name) = source["secretKeyRef"]["name"].as_str() {
                out.push((SECRET.2, name.to_owned()));
            }
            if let Some(name) = source["configMapKeyRef"]["name"].as_str() {
                out.push((CONFIG_MAP.2, name.to_owned()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[async_trait]
impl FaultBatch for Installations {
    fn system(&self) -> &'static str {
        "kcp-operator"
    }

    fn command(&self, _index: usize, leader_election: bool) -> (String, Vec<String>) {
        let mut args = vec![
            "--kubeconfig".to_string(),
            self.kubeconfig.display().to_string(),
            "--pki=builtin".to_string(),
            "--enabled-controller-groups=config,workload".to_string(),
            "--metrics-bind-address=0".to_string(),
            format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        ];
        if leader_election {
            args.extend([
                "--leader-elect".to_string(),
                format!("--leader-election-namespace={}", self.ns),
                format!("--leader-election-lease-duration={LEASE_SECONDS}"),
                "--leader-election-renew-grace=2".to_string(),
            ]);
        }
        (OPERATOR.to_string(), args)
    }

    fn lease(&self) -> (Arc<dyn ObjectClient>, String, String) {
        (self.client.clone(), self.ns.clone(), LEASE.into())
    }

    fn lease_duration(&self) -> Duration {
        Duration::from_secs(LEASE_SECONDS)
    }

    async fn submit(&self) {
        let objects = (0..self.count)
            .flat_map(|i| {
                kcp_core::parse_manifests("installation.yaml", &installation(&self.ns, i)).unwrap()
            })
            .collect();
        apply(&*self.client, objects).await;
    }

    async fn check(&self) -> Result<Vec<(&'static str, u64)>, String> {
        let mut missing = Vec::new();
        // Deployments and Certificates before the Secrets and ConfigMaps: what a listed
        // Deployment mounts existed when it was written (the operator writes none before its
        // mounts exist), a Ready Certificate's Secret was written before it became Ready, and
        // nothing removes those, so the later lists must hold them.
        let deployments = self.children_of(DEPLOYMENT, &mut missing).await?;
        let certificates = self.children_of(CERTIFICATE, &mut missing).await?;
        let secrets = self.children_of(SECRET, &mut missing).await?;
        let config_maps = self.children_of(CONFIG_MAP, &mut missing).await?;
        for kind in [ISSUER, SERVICE, PDB] {
            self.children_of(kind, &mut missing).await?;
        }
        let mut compiled = Vec::new();
        for kind in COMPILED {
            compiled.extend(self.children_of(kind, &mut missing).await?.into_values());
        }
        let mut sources = Vec::new();
        for kind in SOURCES {
            sources.extend(self.list(kind).await?);
        }
        let mut waiting = Vec::new();

        // Every Certificate issued into its Secret.
        let mut reissued = 0;
        for (name, certificate) in &certificates {
            if let Err(why) = has_condition(certificate, "Ready", "True", "Ready") {
                waiting.push(format!("Certificate {name}: {why}"));
                continue;
            }
            let secret_name = certificate.data["spec"]["secretName"]
                .as_str()
                .unwrap_or("");
            let Some(secret) = secrets.get(secret_name) else {
                panic!("Certificate {name} is Ready without its Secret {secret_name}");
            };
            for key in ["tls.crt", "tls.key", "ca.crt"] {
                let value = secret.data["data"][key].as_str().unwrap_or("");
                assert!(
                    !value.is_empty(),
                    "Certificate {name} is Ready and its Secret has no {key}"
                );
            }
            if certificate.data["status"]["revision"].as_i64() != Some(1) {
                reissued += 1;
            }
        }

        // Every Compiled* object rendered from the certificates as they are now.
        for object in &compiled {
            let annotations = object.metadata.annotations.clone().unwrap_or_default();
            for (key, revision) in &annotations {
                let Some(cert) = key
                    .strip_prefix("operator.kcp.io/cert-")
                    .and_then(|k| k.strip_suffix("-revision"))
                else {
                    continue;
                };
                let live = certificates
                    .get(cert)
                    .map(|c| c.data["status"]["revision"].to_string());
                if live.as_deref() != Some(revision.as_str()) {
                    waiting.push(format!(
                        "{} captured revision {revision} of Certificate {cert}, which is at {live:?}",
                        describe(object)
                    ));
                }
            }
        }

        // Every Deployment mounts only objects that exist, at their current revisions.
        for (name, deployment) in &deployments {
            let mut current = Vec::new();
            for (kind, mounted_name) in mounted(deployment) {
                let found = if kind == SECRET.2 {
                    secrets.get(&mounted_name)
                } else {
                    config_maps.get(&mounted_name)
                };
                let found = found.unwrap_or_else(|| {
                    panic!("Deployment {name} was written mounting {kind} {mounted_name}, which does not exist")
                });
                current.push(found.metadata.resource_version.clone().unwrap_or_default());
            }
            let labels = deployment.data["spec"]["template"]["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let mut labelled: Vec<String> = labels
                .iter()
                .filter(|(k, _)| k.starts_with("operator.kcp.io/") && k.ends_with("-rev"))
                .map(|(_, v)| v.as_str().unwrap_or_default().to_owned())
                .collect();
            current.sort();
            labelled.sort();
            if labelled != current {
                waiting.push(format!(
                    "Deployment {name} carries revisions {labelled:?} of its mounts at {current:?}"
                ));
            }
        }

        // Each source and Compiled* object says what the spec describes upstream's saying.
        for object in sources.iter().chain(&compiled) {
            if let Err(why) = status_with_no_pods_running(object) {
                waiting.push(format!("{}: {why}", describe(object)));
            }
        }
        if sources.len() != self.count * SOURCES.len() {
            waiting.push(format!(
                "{} source objects of {}",
                sources.len(),
                self.count * SOURCES.len()
            ));
        }

        if !missing.is_empty() || !waiting.is_empty() {
            let mut all = missing;
            all.extend(waiting);
            let shown = all.len().min(8);
            return Err(format!(
                "{} open, e.g. {}",
                all.len(),
                all[..shown].join("; ")
            ));
        }
        Ok(vec![
            ("installations complete", self.count as u64),
            ("certificates issued", certificates.len() as u64),
            ("certificates issued again", reissued),
            ("secrets", secrets.len() as u64),
            ("deployments", deployments.len() as u64),
        ])
    }

    async fn restart_servers(&self) -> Duration {
        restart_kube().await
    }

    fn within(&self) -> Duration {
        Duration::from_secs(if support::chaos::long_run() { 600 } else { 120 })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_points_the_operator_completes_every_installation_exactly_once() {
    let _serial = SERIAL.lock().await;
    let batch = Installations::prepare(size(4, 20)).await;
    let report = run_with_binary_kills(&batch, 3).await;
    assert_eq!(report.counts[0].1, batch.count as u64);
    batch.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_kube_apiserver_killed_under_it_the_operator_completes_every_installation() {
    let _serial = SERIAL.lock().await;
    let batch = Installations::prepare(size(4, 20)).await;
    let report = run_with_server_restarts(&batch, 1).await;
    assert_eq!(report.counts[0].1, batch.count as u64);
    batch.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_leader_killed_the_standby_takes_over_and_completes_every_installation() {
    let _serial = SERIAL.lock().await;
    let batch = Installations::prepare(size(4, 20)).await;
    let report = run_with_leader_kill(&batch).await;
    assert_eq!(report.counts[0].1, batch.count as u64);
    batch.remove().await;
}
