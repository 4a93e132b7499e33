//! kubectl against kcp-sim: create, client-side and server-side apply, `get -o json`, `get -w`,
//! label selectors, merge and JSON patches, a CRD and its resource, `wait --for`, a finalizer,
//! namespace deletion, and kcp's API exports (binding, serving, the apiexport virtual
//! workspace's wildcard view).
//!
//! Needs `kubectl` on PATH (or `KUBECTL=/path/to/kubectl`); `.ci/run` installs Debian's
//! `kubernetes-client` when none is there. Works with kubectl 1.20 to 1.33.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kcp_sim::{Config, Server};
use serde_json::Value;

fn kubectl_binary() -> String {
    std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string())
}

struct Kubectl {
    kubeconfig: PathBuf,
    _dir: TempDir,
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kcp-sim-kubectl-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Kubectl {
    fn new(sim: &Server) -> Self {
        let dir = TempDir::new();
        let kubeconfig = dir.0.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
        Kubectl {
            kubeconfig,
            _dir: dir,
        }
    }

    /// kubectl with one context per `(name, server URL)`; the first is the current one.
    fn with_contexts(contexts: &[(&str, &str)]) -> Self {
        let dir = TempDir::new();
        let kubeconfig = dir.0.join("kubeconfig");
        let mut doc = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for (name, url) in contexts {
            doc.push_str(&format!("- name: {name}\n  cluster:\n    server: {url}\n"));
        }
        doc.push_str("users:\n- name: u\n  user:\n    token: t\ncontexts:\n");
        for (name, _) in contexts {
            doc.push_str(&format!(
                "- name: {name}\n  context:\n    cluster: {name}\n    user: u\n"
            ));
        }
        doc.push_str(&format!("current-context: {}\n", contexts[0].0));
        std::fs::write(&kubeconfig, doc).unwrap();
        Kubectl {
            kubeconfig,
            _dir: dir,
        }
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.kubeconfig.with_file_name(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    /// With a discovery cache of this kubectl's own (kubectl keys its cache by host and port,
    /// and another test's server may have had this port before).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_binary());
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.kubeconfig.with_file_name("cache"))
            .args(args);
        cmd
    }

    /// Runs kubectl off the async runtime, returning stdout; panics with stderr on failure.
    async fn run(&self, args: &[&str]) -> String {
        let mut cmd = self.command(args);
        let shown = args.join(" ");
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {}: {e} (install kubectl or set KUBECTL)",
                    kubectl_binary()
                )
            });
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "kubectl {shown} failed: {stderr}\n{stdout}"
        );
        stdout
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.run(&all).await).unwrap()
    }

    async fn fails(&self, args: &[&str]) -> String {
        let mut cmd = self.command(args);
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap();
        assert!(!out.status.success(), "kubectl {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web, tier: front}
data:
  color: blue
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: IMAGE
        ports: [{containerPort: 80}]
";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

const WIDGET: &str = "apiVersion: example.io/v1
kind: Widget
metadata: {name: w1, finalizers: [example.io/hold]}
spec: {size: 3}
";

async fn sim() -> Server {
    Server::start(Config::default()).await.unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_and_reads_objects_as_json() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("cm.yaml", CONFIG_MAP);
    assert!(
        k.run(&["create", "-f", path(&file)])
            .await
            .contains("configmap/settings created")
    );
    let got = k.json(&["get", "configmap", "settings"]).await;
    assert_eq!(got["data"]["color"], "blue");
    assert!(got["metadata"]["uid"].is_string());
    let err = k.fails(&["create", "-f", path(&file)]).await;
    assert!(err.contains("AlreadyExists"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_client_side_apply_updates_a_deployment_and_bumps_its_generation() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let v1 = k.file("d1.yaml", &DEPLOYMENT.replace("IMAGE", "nginx:1"));
    let v2 = k.file("d2.yaml", &DEPLOYMENT.replace("IMAGE", "nginx:2"));
    assert!(k.run(&["apply", "-f", path(&v1)]).await.contains("created"));
    assert!(
        k.run(&["apply", "-f", path(&v2)])
            .await
            .contains("configured")
    );
    let d = k.json(&["get", "deployment", "web"]).await;
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    assert_eq!(d["metadata"]["generation"], 2);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(
        containers.len(),
        1,
        "the strategic patch merged the container by name"
    );
    let annotations = d["metadata"]["annotations"].as_object().unwrap();
    assert!(annotations.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
    assert!(
        !d.to_string().contains("$setElementOrder"),
        "no patch directive is stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_records_its_field_manager_and_detects_conflicts() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("cm.yaml", CONFIG_MAP);
    assert!(
        k.run(&["apply", "--server-side", "-f", path(&file)])
            .await
            .contains("serverside-applied")
    );
    // kubectl hides managedFields from its output since 1.21: read them with kube-rs.
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(sim.client("").unwrap(), "default");
    let got = api.get("settings").await.unwrap();
    let managers: Vec<String> = got
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|m| m.manager.unwrap())
        .collect();
    assert_eq!(managers, ["kubectl"]);
    k.run(&[
        "patch",
        "configmap",
        "settings",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"color":"red"}}"#,
    ])
    .await;
    let err = k
        .fails(&["apply", "--server-side", "-f", path(&file)])
        .await;
    assert!(err.contains("conflict"), "{err}");
    k.run(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        path(&file),
    ])
    .await;
    let got = k.json(&["get", "configmap", "settings"]).await;
    assert_eq!(got["data"]["color"], "blue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_merge_and_json_patches_change_data() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("cm.yaml", CONFIG_MAP);
    k.run(&["create", "-f", path(&file)]).await;
    k.run(&[
        "patch",
        "configmap",
        "settings",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"size":"L"}}"#,
    ])
    .await;
    k.run(&[
        "patch",
        "configmap",
        "settings",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/data/color","value":"green"}]"#,
    ])
    .await;
    let got = k.json(&["get", "configmap", "settings"]).await;
    assert_eq!(got["data"]["size"], "L");
    assert_eq!(got["data"]["color"], "green");
    let err = k
        .fails(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/data/color","value":"blue"}]"#,
        ])
        .await;
    assert!(err.contains("Invalid") || err.contains("invalid"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_label_selectors_choose_objects() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("cm.yaml", CONFIG_MAP);
    k.run(&["create", "-f", path(&file)]).await;
    let other = k.file(
        "other.yaml",
        &CONFIG_MAP
            .replace("settings", "other")
            .replace("tier: front", "tier: back"),
    );
    k.run(&["create", "-f", path(&other)]).await;
    k.run(&["label", "configmap", "other", "extra=yes"]).await;
    let names = |v: Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(k.json(&["get", "cm", "-l", "tier=front"]).await),
        ["settings"]
    );
    assert_eq!(
        names(
            k.json(&["get", "cm", "-l", "tier in (front,back),extra"])
                .await
        ),
        ["other"]
    );
    assert_eq!(
        names(k.json(&["get", "cm", "-l", "app=web,tier!=back"]).await),
        ["settings"]
    );
    assert_eq!(
        names(k.json(&["get", "cm", "-l", "!extra,app"]).await),
        ["settings"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_sees_a_new_object() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("cm.yaml", CONFIG_MAP);
    let mut watch = k
        .command(&["get", "configmaps", "--watch", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    tokio::time::sleep(Duration::from_millis(700)).await;
    k.run(&["create", "-f", path(&file)]).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    watch.kill().unwrap();
    let out = tokio::task::spawn_blocking(move || watch.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("configmap/settings"),
        "watch printed: {stdout:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_a_crd_waits_for_it_and_uses_the_new_resource() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let crd = k.file("crd.yaml", CRD);
    k.run(&["apply", "-f", path(&crd)]).await;
    let waited = k
        .run(&[
            "wait",
            "--for=condition=established",
            "--timeout=20s",
            "crd/widgets.example.io",
        ])
        .await;
    assert!(waited.contains("condition met"), "{waited}");
    let widget = k.file("w.yaml", WIDGET);
    k.run(&["apply", "-f", path(&widget)]).await;
    let got = k.json(&["get", "wd", "w1"]).await;
    assert_eq!(got["spec"]["size"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_of_an_object_with_a_finalizer_waits_for_its_removal() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let crd = k.file("crd.yaml", CRD);
    k.run(&["apply", "-f", path(&crd)]).await;
    let widget = k.file("w.yaml", WIDGET);
    k.run(&["apply", "-f", path(&widget)]).await;
    k.run(&["delete", "widget", "w1", "--wait=false"]).await;
    let held = k.json(&["get", "widget", "w1"]).await;
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    k.run(&[
        "patch",
        "widget",
        "w1",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await;
    let err = k.fails(&["get", "widget", "w1"]).await;
    assert!(err.contains("NotFound"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_namespace_deletion_removes_its_contents() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let ns = k.file(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n",
    );
    k.run(&["create", "-f", path(&ns)]).await;
    let file = k.file("cm.yaml", CONFIG_MAP);
    k.run(&["-n", "team", "create", "-f", path(&file)]).await;
    k.run(&["delete", "namespace", "team"]).await;
    let left = k.json(&["-n", "team", "get", "configmaps"]).await;
    assert_eq!(left["items"].as_array().unwrap().len(), 0);
    let err = k.fails(&["get", "namespace", "team"]).await;
    assert!(err.contains("NotFound"), "{err}");
}

const WORKSPACES: &str = "apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: provider}
---
apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: consumer-a}
---
apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: consumer-b}
";

const EXPORT: &str = "apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.io}
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    subresources: {status: {}}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: widgets}
spec:
  latestResourceSchemas: [v1.widgets.example.io]
";

const BINDING: &str = "apiVersion: apis.kcp.io/v1alpha1
kind: APIBinding
metadata: {name: widgets}
spec:
  reference:
    export: {path: root:provider, name: widgets}
";

/// kcp-sim with a provider exporting widgets, bound in two consumers, each holding widget
/// `w1`; kubectl with the contexts `root`, `provider`, `consumer-a` and `consumer-b`.
async fn bound_widgets() -> (Server, Kubectl) {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let url = |ws: &str| sim.cluster_url(ws);
    let k = Kubectl::with_contexts(&[
        ("root", &url("root")),
        ("provider", &url("root:provider")),
        ("consumer-a", &url("root:consumer-a")),
        ("consumer-b", &url("root:consumer-b")),
    ]);
    let workspaces = k.file("ws.yaml", WORKSPACES);
    k.run(&["create", "-f", path(&workspaces)]).await;
    let export = k.file("export.yaml", EXPORT);
    k.run(&["--context", "provider", "apply", "-f", path(&export)])
        .await;
    let binding = k.file("binding.yaml", BINDING);
    let widget = k.file("w.yaml", WIDGET);
    for ctx in ["consumer-a", "consumer-b"] {
        k.run(&["--context", ctx, "apply", "-f", path(&binding)])
            .await;
        k.run(&["--context", ctx, "apply", "-f", path(&widget)])
            .await;
    }
    (sim, k)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_binds_an_export_and_waits_for_the_binding_to_be_bound() {
    let (_sim, k) = bound_widgets().await;
    let waited = k
        .run(&[
            "--context",
            "consumer-a",
            "wait",
            "--for=jsonpath={.status.phase}=Bound",
            "--timeout=20s",
            "apibinding/widgets",
        ])
        .await;
    assert!(waited.contains("condition met"), "{waited}");
    let binding = k
        .json(&["--context", "consumer-a", "get", "apibinding", "widgets"])
        .await;
    assert_eq!(
        binding["status"]["boundResources"][0]["resource"],
        "widgets"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_uses_a_bound_resource_in_the_consumer() {
    let (_sim, k) = bound_widgets().await;
    let got = k
        .json(&["--context", "consumer-a", "get", "widget", "w1"])
        .await;
    assert_eq!(got["spec"]["size"], 3);
    let resources = k
        .run(&[
            "--context",
            "consumer-a",
            "api-resources",
            "--api-group",
            "example.io",
        ])
        .await;
    assert!(resources.contains("widgets"), "{resources}");
    let err = k.fails(&["--context", "provider", "get", "widgets"]).await;
    assert!(
        err.contains("the server doesn't have a resource type"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_every_consumer_through_the_wildcard_view() {
    let (sim, k) = bound_widgets().await;
    let slice = k
        .json(&[
            "--context",
            "provider",
            "get",
            "apiexportendpointslice",
            "widgets",
        ])
        .await;
    let vw = slice["status"]["endpoints"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let view = Kubectl::with_contexts(&[("view", &format!("{vw}/clusters/*"))]);
    let listed = view.json(&["get", "widgets", "--all-namespaces"]).await;
    let mut clusters: Vec<String> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            w["metadata"]["annotations"]["kcp.io/cluster"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    clusters.sort();
    let mut expected = vec![
        sim.logical_cluster("root:consumer-a").unwrap(),
        sim.logical_cluster("root:consumer-b").unwrap(),
    ];
    expected.sort();
    assert_eq!(clusters, expected);
    let bindings = view.json(&["get", "apibindings"]).await;
    assert_eq!(bindings["items"].as_array().unwrap().len(), 2);
}

// ---- Table output ------------------------------------------------------------------------------

const PRINTED_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Owner, type: string, jsonPath: .spec.owner, priority: 1}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type==\"Ready\")].status'}
";

const GADGET: &str = "apiVersion: example.io/v1
kind: Gadget
metadata: {name: g1, namespace: default, labels: {team: blue}}
spec: {size: 3, owner: alice}
status:
  conditions: [{type: Ready, status: 'True'}]
";

/// The header and the first row of a `kubectl get` table, split on runs of spaces.
fn header_and_row(out: &str) -> (Vec<String>, Vec<String>) {
    let mut lines = out.lines().map(|l| {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    });
    (
        lines.next().unwrap_or_default(),
        lines.next().unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_a_crds_printer_columns_and_wide_adds_the_priority_ones() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let crd = k.file("crd.yaml", PRINTED_CRD);
    k.run(&["apply", "-f", path(&crd)]).await;
    let gadget = k.file("gadget.yaml", GADGET);
    k.run(&["apply", "-f", path(&gadget)]).await;
    let (header, row) = header_and_row(&k.run(&["get", "gadgets"]).await);
    assert_eq!(header, ["NAME", "SIZE", "READY"]);
    assert_eq!(row, ["g1", "3", "True"]);
    let (header, row) = header_and_row(&k.run(&["get", "gadgets", "-o", "wide"]).await);
    assert_eq!(header, ["NAME", "SIZE", "OWNER", "READY"]);
    assert_eq!(row, ["g1", "3", "alice", "True"]);
    let (header, row) = header_and_row(&k.run(&["get", "gadget", "g1", "--show-labels"]).await);
    assert_eq!(header.last().map(String::as_str), Some("LABELS"));
    assert_eq!(row.last().map(String::as_str), Some("team=blue"));
    let (header, row) = header_and_row(&k.run(&["get", "gadgets", "-L", "team"]).await);
    assert_eq!(header.last().map(String::as_str), Some("TEAM"));
    assert_eq!(row.last().map(String::as_str), Some("blue"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_the_builtin_columns_of_a_deployment() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("d.yaml", &DEPLOYMENT.replace("IMAGE", "nginx:1.27"));
    k.run(&["create", "-f", path(&file)]).await;
    let (header, row) = header_and_row(&k.run(&["get", "deployments", "-o", "wide"]).await);
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    // As kube-apiserver prints it (conformance kubectl/deployments-wide-and-in-all).
    assert_eq!(row[0], "web");
    assert_eq!(row[1], "0/1");
    assert_eq!(row[2], "0");
    assert_eq!(row[6], "nginx:1.27");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_workspaces_shows_type_phase_and_url() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let k = Kubectl::with_contexts(&[("root", &sim.cluster_url("root"))]);
    let file = k.file(
        "ws.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: team}\nspec: {}\n",
    );
    k.run(&["create", "-f", path(&file)]).await;
    let (header, row) = header_and_row(&k.run(&["get", "workspaces"]).await);
    assert_eq!(header, ["NAME", "TYPE", "REGION", "PHASE", "URL", "AGE"]);
    assert_eq!(row[0], "team");
    // The root workspace's type makes its children organizations by default, as in kcp.
    assert_eq!(row[1], "organization");
    // An unset Region prints as an empty cell, as kcp prints it (conformance
    // kubectl-kcp/workspaces-created-and-listed), so the row has one value less.
    assert_eq!(row[2], "Ready");
    assert!(row[3].ends_with("/clusters/root:team"), "{row:?}");
}

// ---- Dry run -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_dry_run_and_diff_change_nothing() {
    let sim = sim().await;
    let k = Kubectl::new(&sim);
    let file = k.file("cm.yaml", CONFIG_MAP);
    let out = k
        .run(&["apply", "--dry-run=server", "-f", path(&file)])
        .await;
    assert!(out.contains("(server dry run)"), "{out}");
    k.fails(&["get", "configmap", "settings"]).await;
    k.run(&["create", "-f", path(&file)]).await;
    let changed = k.file(
        "cm2.yaml",
        &CONFIG_MAP.replace("color: blue", "color: green"),
    );
    k.run(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        path(&changed),
    ])
    .await;
    let got = k.json(&["get", "configmap", "settings"]).await;
    assert_eq!(got["data"]["color"], "blue");
    // `kubectl diff` asks the server for a dry-run apply and exits 1 when something differs.
    let mut diff = k.command(&["diff", "-f", path(&changed)]);
    let out = tokio::task::spawn_blocking(move || diff.output())
        .await
        .unwrap()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{shown}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shown.contains("+  color: green"), "{shown}");
}
