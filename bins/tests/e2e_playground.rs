//! The `kcp-playground` binary, run as a process: it converges and writes the two contexts, on
//! the backend `KCP_RS_BACKEND` picks (`--backend sim` or `--backend real`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

const PLAYGROUND: &str = env!("CARGO_BIN_EXE_kcp-playground");

fn kubeconfig_path(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "kcp-playground-{}-{test}.kubeconfig",
        std::process::id()
    ))
}

fn backend() -> &'static str {
    match kcp_testbed::Backend::from_env().unwrap() {
        kcp_testbed::Backend::Sim => "sim",
        kcp_testbed::Backend::Real => "real",
    }
}

fn playground(kubeconfig: &PathBuf, extra: &[&str]) -> Output {
    Command::new(PLAYGROUND)
        .args(["--backend", backend()])
        // The real servers start in the process (20-40 s for kcp on two cores).
        .args(["--exit-when-ready", "--timeout-seconds", "180"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap()
}

#[test]
fn the_playground_converges_and_exits_when_ready() {
    let kubeconfig = kubeconfig_path("converges");
    let out = playground(&kubeconfig, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("everything converged"), "{stdout}");
    assert!(stdout.contains("sandbox=yes"), "{stdout}");
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        !text.trim_start().starts_with('{'),
        "YAML, like every tool's: {text}"
    );
    let config = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let _ = std::fs::remove_file(&kubeconfig);
    assert_eq!(config.current_context.as_deref(), Some("kcp"));
    let servers: Vec<String> = config
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref()?.server.clone())
        .collect();
    assert!(servers[0].ends_with("/clusters/root"), "{servers:?}");
    assert!(!servers[1].contains("/clusters/"), "{servers:?}");
}

#[test]
fn only_with_an_unknown_system_is_refused_with_the_known_names() {
    let kubeconfig = kubeconfig_path("unknown");
    let out = playground(&kubeconfig, &["--only", "init,nope"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown system \"nope\"") && stderr.contains("known: init"),
        "{stderr}"
    );
    assert!(!kubeconfig.exists(), "nothing is started for a bad --only");
}

#[test]
fn the_operator_section_brings_the_example_installation_to_ready_with_the_builtin_pki() {
    let kubeconfig = kubeconfig_path("operator");
    let out = playground(&kubeconfig, &["--only", "operator"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_file(&kubeconfig);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("everything converged"), "{stdout}");
    for kind in [
        "RootShard",
        "Shard",
        "FrontProxy",
        "CacheServer",
        "Kubeconfig",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(kind) && l.ends_with("true")),
            "{kind} Ready in the table: {stdout}"
        );
    }
    assert!(stdout.contains("admin-kubeconfig"), "{stdout}");
    let grants = stdout
        .lines()
        .find(|l| l.contains("grants in kcp workspace root:"))
        .unwrap_or_default();
    assert!(
        grants.ends_with(":cluster-admin"),
        "the Kubeconfig's authorization is granted in kcp: {stdout}"
    );
}
