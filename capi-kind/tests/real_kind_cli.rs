//! Every command line capi-kind produces, run through the real `kind` CLI (built from its Go
//! module, `kcp-testbed/peers/PINS`): each is accepted, flags, the rendered kind config (parsed
//! and validated by kind itself) and all, and fails only where kind needs a container runtime,
//! which this machine does not have.
//!
//! kind asks the runtime for its `info` before it reads a config, so a `docker` on `PATH`
//! answers that one question (and lists no containers) and refuses everything else, saying
//! there is no container runtime here. Whatever kind decides before it creates a container is
//! kind's own. A config kind refuses is refused here too (the control case), so the check can
//! tell the two apart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use capi_kind::api::{KINDCluster, KindCluster};
use capi_kind::kind_config::render_kind_config;
use capi_kind::plan::{ClusterPlan, plan_capi, plan_upstream};
use capi_kind::provisioner::{CreateRequest, create_args, delete_args, kubeconfig_args, list_args};

/// What the `docker` on `PATH` says to anything but `info` and `ps`.
const NO_RUNTIME: &str = "no container runtime on this machine";

/// A `docker` that answers kind's `info` and `ps` as an empty Docker host would, and refuses
/// the rest.
const DOCKER: &str = r#"#!/bin/sh
case "$1" in
info) echo '{"CgroupDriver":"systemd","CgroupVersion":"2","MemoryLimit":true,"PidsLimit":true,"CPUShares":true,"SecurityOptions":["name=seccomp,profile=builtin","name=cgroupns"]}' ;;
ps) ;;
*) echo "@NO_RUNTIME@" >&2; exit 1 ;;
esac
"#;

/// The real kind, and a directory with the `docker` above.
struct Kind {
    binary: PathBuf,
    dir: PathBuf,
}

impl Kind {
    fn new() -> Kind {
        let binary = kcp_testbed::go_build::build("kind").unwrap().binary;
        let dir = kcp_testbed::real::credentials()
            .unwrap()
            .dir
            .join(format!("kind-{:08x}", fastrand::u32(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let docker = dir.join("docker");
        std::fs::write(&docker, DOCKER.replace("@NO_RUNTIME@", NO_RUNTIME)).unwrap();
        make_executable(&docker);
        Kind { binary, dir }
    }

    /// Runs kind with `args` (and `stdin`), returning whether it succeeded and what it said.
    fn run(&self, args: &[String], stdin: Option<&str>) -> (bool, String) {
        let path = format!(
            "{}:{}",
            self.dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new(&self.binary)
            .args(args)
            .env("PATH", path)
            .env("KIND_EXPERIMENTAL_PROVIDER", "docker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        let output = child.wait_with_output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), said)
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Asserts that kind got past its flags and the config and stopped at the container runtime.
fn assert_stopped_at_the_runtime(args: &[String], (succeeded, said): (bool, String)) {
    assert!(
        !succeeded,
        "kind {args:?} cannot succeed without a runtime: {said}"
    );
    assert!(
        said.contains(NO_RUNTIME),
        "kind {args:?} must fail only at the container runtime: {said}"
    );
}

/// The `kind create cluster` command line the provisioner runs for `plan` (with `config`, the
/// rendered kind config it sends on stdin).
fn create_line(kind: &Kind, plan: &ClusterPlan, config: &str) -> Vec<String> {
    let request = CreateRequest {
        name: plan.cluster_name.clone(),
        image: plan.image.clone(),
        config: config.to_owned(),
        owner_uid: plan.owner_uid.clone(),
        wait: Duration::from_secs(300),
    };
    create_args(&request, &kind.kubeconfig())
}

fn with_uid<T: serde::de::DeserializeOwned>(yaml: &str) -> T {
    let mut value: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    value["metadata"]["uid"] = "3f0c8a52-0000-4000-8000-000000000001".into();
    serde_json::from_value(value).unwrap()
}

/// A Cluster API KindCluster with every section kind's config has.
const EVERY_SECTION: &str = r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: KindCluster
metadata: {name: full, namespace: default}
spec:
  nodeImage: kindest/node:v1.31.0
  controlPlaneNodes: 3
  workerNodes: 2
  featureGates: {InPlacePodVerticalScaling: true}
  networking:
    ipFamily: dual
    apiServerAddress: 127.0.0.1
    apiServerPort: 6443
    podSubnet: 10.244.0.0/16
    serviceSubnet: 10.96.0.0/12
    disableDefaultCNI: true
    kubeProxyMode: ipvs
  extraPortMappings:
  - {containerPort: 80, hostPort: 8080, listenAddress: 0.0.0.0, protocol: TCP}
"#;

/// The Go provider's KINDCluster, as its samples write it.
const UPSTREAM: &str = r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: KINDCluster
metadata: {name: dev, namespace: default}
spec: {clusterName: dev, kubernetesVersion: "1.21"}
"#;

#[test]
fn a_create_with_every_config_section_is_accepted_up_to_the_container_runtime() {
    let kind = Kind::new();
    let plan = plan_capi(&with_uid::<KindCluster>(EVERY_SECTION)).unwrap();
    let config = render_kind_config(&plan.config).unwrap();
    let args = create_line(&kind, &plan, &config);
    assert_stopped_at_the_runtime(&args, kind.run(&args, Some(&config)));
}

#[test]
fn a_create_of_the_go_providers_object_is_accepted_up_to_the_container_runtime() {
    let kind = Kind::new();
    let plan = plan_upstream(&with_uid::<KINDCluster>(UPSTREAM)).unwrap();
    let config = render_kind_config(&plan.config).unwrap();
    let args = create_line(&kind, &plan, &config);
    assert_stopped_at_the_runtime(&args, kind.run(&args, Some(&config)));
}

#[test]
fn a_config_kind_refuses_is_refused_before_the_container_runtime() {
    let kind = Kind::new();
    let plan = plan_capi(&with_uid::<KindCluster>(EVERY_SECTION)).unwrap();
    let config = render_kind_config(&plan.config)
        .unwrap()
        .replace("ipFamily: dual", "ipFamily: sideways");
    let args = create_line(&kind, &plan, &config);
    let (succeeded, said) = kind.run(&args, Some(&config));
    assert!(!succeeded && !said.contains(NO_RUNTIME), "{said}");
    assert!(said.contains("invalid ipFamily: sideways"), "{said}");
}

#[test]
fn a_flag_kind_does_not_know_is_refused() {
    let kind = Kind::new();
    let mut args = list_args();
    args.push("--owner".into());
    let (succeeded, said) = kind.run(&args, None);
    assert!(!succeeded && said.contains("unknown flag"), "{said}");
}

#[test]
fn listing_clusters_is_accepted() {
    let kind = Kind::new();
    let args = list_args();
    let (succeeded, said) = kind.run(&args, None);
    assert!(succeeded, "kind {args:?}: {said}");
    assert!(said.contains("No kind clusters found"), "{said}");
}

#[test]
fn reading_a_kubeconfig_is_accepted_up_to_the_container_runtime() {
    let kind = Kind::new();
    let args = kubeconfig_args("dev");
    let (succeeded, said) = kind.run(&args, None);
    assert!(!succeeded, "{said}");
    assert!(!said.contains("unknown flag"), "{said}");
}

#[test]
fn a_delete_is_accepted() {
    let kind = Kind::new();
    let args = delete_args("dev", &kind.kubeconfig());
    let (succeeded, said) = kind.run(&args, None);
    assert!(succeeded, "kind {args:?}: {said}");
}
