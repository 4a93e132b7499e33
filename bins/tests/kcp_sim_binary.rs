//! The `kcp-sim` binary as another language's CI starts it: a process that prints
//! `kcp-sim serving <url>`, writes a kubeconfig, and is used with the real `kubectl` (on PATH, or
//! `KUBECTL=/path/to/kubectl`, as kcp-sim's kubectl tests) and the official Python client
//! (`import kubernetes`; without it that test says so and passes, unless
//! `KCP_REQUIRE_PYTHON_CLIENT` is set, which makes the missing module a failure); SIGTERM and
//! SIGINT stop it with exit code 0, open watches included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::process::{Running, free_port};

const BINARY: &str = env!("CARGO_BIN_EXE_kcp-sim");

fn kubectl_binary() -> String {
    std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string())
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kcp-sim-binary-{}-{}",
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

/// A started `kcp-sim` process with its kubeconfig (dropped: killed, files removed).
struct Sim {
    process: Running,
    url: String,
    kubeconfig: PathBuf,
    dir: TempDir,
}

impl Sim {
    /// Starts the binary in a directory of its own with `args` and `--kubeconfig`, and reads
    /// its URL line.
    fn start(args: &[&str]) -> Sim {
        let dir = TempDir::new();
        let kubeconfig = dir.0.join("kubeconfig");
        let log = std::fs::File::create(dir.0.join("stderr")).unwrap();
        let mut child = Command::new(BINARY)
            .current_dir(&dir.0)
            .args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let process = Running(child);
        let line = first_line(stdout);
        let log = std::fs::read_to_string(dir.0.join("stderr")).unwrap_or_default();
        let url = line
            .trim_end()
            .strip_prefix("kcp-sim serving ")
            .unwrap_or_else(|| panic!("no `kcp-sim serving <url>` line, got {line:?}; {log}"))
            .to_string();
        assert!(
            kubeconfig.exists(),
            "the kubeconfig is written before the URL is printed"
        );
        Sim {
            process,
            url,
            kubeconfig,
            dir,
        }
    }

    fn pid(&self) -> u32 {
        self.process.0.id()
    }

    /// With a discovery cache of this server's own (kubectl keys its cache by host and port,
    /// and another test's server may have had this port before).
    fn kubectl(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_binary());
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.kubeconfig.with_file_name("kubectl-cache"))
            .args(args);
        cmd
    }

    /// Runs kubectl with `stdin`, returning its output whatever its exit code.
    fn kubectl_output(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .kubectl(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {}: {e} (install kubectl or set KUBECTL)",
                    kubectl_binary()
                )
            });
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs kubectl, returning stdout; panics with stderr on failure.
    fn run(&self, args: &[&str]) -> String {
        self.run_with_input(args, "")
    }

    fn run_with_input(&self, args: &[&str], stdin: &str) -> String {
        let out = self.kubectl_output(args, stdin);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {} failed: {}\n{stdout}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.run(&all)).unwrap()
    }

    /// Sends `signal` (`TERM`, `INT`) with `kill` and waits up to 5 s for the exit code.
    fn stop_with(&mut self, signal: &str) -> (Option<i32>, Duration) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {}", self.pid());
        let sent = Instant::now();
        while sent.elapsed() < Duration::from_secs(5) {
            if let Some(status) = self.process.0.try_wait().unwrap() {
                return (status.code(), sent.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "kcp-sim still runs 5 s after SIG{signal}; stderr: {}",
            std::fs::read_to_string(self.dir.0.join("stderr")).unwrap_or_default()
        );
    }
}

/// The first line `from` prints within 30 s (empty if none).
fn first_line(from: impl std::io::Read + Send + 'static) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(from).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default()
}

/// The binary's exit code and stderr for `args` (which must make it exit on its own).
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BINARY).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kubectl_reads_and_writes_through_the_kubeconfig_it_writes() {
    let sim = Sim::start(&[]);
    assert!(sim.url.starts_with("http://127.0.0.1:"), "{}", sim.url);
    let kubeconfig = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    assert!(kubeconfig.contains(&format!("server: {}\n", sim.url)));
    assert!(kubeconfig.contains("current-context: kubernetes"));

    let namespaces = sim.run(&["get", "namespaces"]);
    assert!(namespaces.contains("default"), "{namespaces}");
    sim.run(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "default",
        "--from-literal=greeting=hello",
    ]);
    let cm = sim.json(&["get", "configmap", "settings", "-n", "default"]);
    assert_eq!(cm["data"]["greeting"], "hello");
    assert!(
        cm["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
}

#[test]
fn with_tls_kubectl_acts_as_the_service_account_whose_token_it_sends() {
    let sim = Sim::start(&["--tls", "--ca-file", "ca.crt"]);
    assert!(sim.url.starts_with("https://127.0.0.1:"), "{}", sim.url);
    let kubeconfig = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    assert!(kubeconfig.contains("certificate-authority-data: "));
    sim.run(&["create", "serviceaccount", "bot", "-n", "default"]);
    let token = sim.run(&["create", "token", "bot", "-n", "default"]);
    let as_bot = |args: &[&str]| {
        let mut all = vec!["--token", token.trim()];
        all.extend_from_slice(args);
        sim.kubectl_output(&all, "")
    };
    let denied = as_bot(&["get", "configmaps", "-n", "default"]);
    assert!(!denied.status.success());
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(
        stderr.contains(
            r#"User "system:serviceaccount:default:bot" cannot list resource "configmaps""#
        ),
        "{stderr}"
    );
    sim.run(&[
        "create",
        "role",
        "reader",
        "--verb=list",
        "--resource=configmaps",
        "-n",
        "default",
    ]);
    sim.run(&[
        "create",
        "rolebinding",
        "bot-reads",
        "--role=reader",
        "--serviceaccount=default:bot",
        "-n",
        "default",
    ]);
    let allowed = as_bot(&["get", "configmaps", "-n", "default", "-o", "name"]);
    assert!(allowed.status.success(), "{allowed:?}");
}

#[test]
fn ca_file_writes_the_ca_the_kubeconfig_trusts() {
    let sim = Sim::start(&["--tls", "--ca-file", "ca.crt"]);
    let ca = std::fs::read_to_string(sim.dir.0.join("ca.crt")).unwrap();
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&ca);
    let kubeconfig = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    assert!(kubeconfig.contains(&encoded));
}

/// The Python interpreter: `KCP_PYTHON` (CI names the one that has the client), else `python3`.
fn python() -> String {
    std::env::var("KCP_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Whether [`python`] can import `modules`; if not, says so and returns false, or fails when
/// `KCP_REQUIRE_PYTHON_CLIENT` is set.
fn python_has(modules: &str) -> bool {
    let probe = Command::new(python())
        .args(["-c", &format!("import {modules}")])
        .output();
    let missing = match &probe {
        Ok(out) if out.status.success() => return true,
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Err(e) => format!("cannot run python3: {e}"),
    };
    let message = format!(
        "this test needs `python3 -c 'import {modules}'` (pip install kubernetes): {missing}"
    );
    if std::env::var_os("KCP_REQUIRE_PYTHON_CLIENT").is_some() {
        panic!("{message}; KCP_REQUIRE_PYTHON_CLIENT is set");
    }
    eprintln!("skipped: {message}");
    false
}

#[test]
fn the_official_python_client_works_against_it() {
    if python_has("kubernetes") {
        python_client_reads_and_writes(&Sim::start(&[]));
    }
}

#[test]
fn the_official_python_client_works_against_it_over_tls() {
    if python_has("kubernetes") {
        python_client_reads_and_writes(&Sim::start(&["--tls"]));
    }
}

/// The Python client, configured from the kubeconfig `sim` wrote, lists, creates, reads,
/// selects and gets a 404; kubectl reads what it wrote.
fn python_client_reads_and_writes(sim: &Sim) {
    let script = r#"
import json, sys
from kubernetes import client, config

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
names = [ns.metadata.name for ns in v1.list_namespace().items]
v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="from-python")))
v1.create_namespaced_config_map(
    "from-python",
    client.V1ConfigMap(metadata=client.V1ObjectMeta(name="greeting", labels={"lang": "python"}),
                       data={"hello": "world"}),
)
cm = v1.read_namespaced_config_map("greeting", "from-python")
selected = v1.list_namespaced_config_map("from-python", label_selector="lang=python").items
try:
    v1.read_namespaced_config_map("missing", "from-python")
    missing = None
except client.exceptions.ApiException as e:
    missing = e.status
print(json.dumps({"namespaces": names, "data": cm.data, "selected": len(selected),
                  "missing": missing}))
"#;
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(&sim.kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        answer["namespaces"]
            .as_array()
            .unwrap()
            .contains(&Value::from("default")),
        "{answer}"
    );
    assert_eq!(answer["data"]["hello"], "world");
    assert_eq!(answer["selected"], 1);
    assert_eq!(answer["missing"], 404);
    // What Python wrote, kubectl reads.
    let cm = sim.json(&["get", "configmap", "greeting", "-n", "from-python"]);
    assert_eq!(cm["metadata"]["labels"]["lang"], "python");
}

#[test]
fn sigterm_and_sigint_stop_it_with_exit_code_zero_while_a_watch_is_open() {
    for signal in ["TERM", "INT"] {
        let mut sim = Sim::start(&[]);
        let mut watch = Running(
            sim.kubectl(&["get", "namespaces", "--watch"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Wait for the watch to be served: the list before it printed its header.
        let header = first_line(watch.0.stdout.take().unwrap());
        assert!(header.contains("NAME"), "{header:?}");
        let (code, took) = sim.stop_with(signal);
        assert_eq!(code, Some(0), "exit code after SIG{signal}");
        assert!(took < Duration::from_secs(5), "SIG{signal} took {took:?}");
        drop(watch);
        let log = std::fs::read_to_string(sim.dir.0.join("stderr")).unwrap();
        assert!(log.contains(&format!("SIG{signal}")), "{log}");
    }
}

#[test]
fn kcp_mode_serves_workspaces_of_root_to_kubectl() {
    let sim = Sim::start(&["--mode", "kcp", "--shards", "2"]);
    let kubeconfig = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    assert!(
        kubeconfig.contains(&format!("server: {}/clusters/root\n", sim.url)),
        "{kubeconfig}"
    );
    assert!(kubeconfig.contains("current-context: root"), "{kubeconfig}");
    sim.run_with_input(
        &["create", "-f", "-"],
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: team-a\n",
    );
    let raw = sim.run(&[
        "get",
        "--raw",
        "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces",
    ]);
    let list: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(list["kind"], "WorkspaceList", "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["team-a"]);
    let table = sim.run(&["get", "workspaces"]);
    assert!(table.contains("team-a"), "{table}");
}

#[test]
fn address_chooses_the_port_and_the_url_names_it() {
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let sim = Sim::start(&["--address", &address]);
    assert_eq!(sim.url, format!("http://{address}"));
    assert!(sim.run(&["get", "namespaces"]).contains("kube-system"));
    // The port is taken now: a second server on it fails, naming the flag.
    let (code, stderr) = fails(&["--address", &address]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--address"), "{stderr}");
}

#[test]
fn fault_flags_fail_the_chosen_requests() {
    let sim = Sim::start(&[
        "--fault-error-rate",
        "1",
        "--fault-error-code",
        "500",
        "--fault-error-verbs",
        "create",
        "--fault-error-resources",
        "configmaps",
    ]);
    let out = sim.kubectl_output(&["create", "configmap", "doomed", "-n", "default"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the create should fail");
    assert!(stderr.contains("injected fault"), "{stderr}");
    // Other verbs and resources are untouched.
    sim.run(&["create", "namespace", "unharmed"]);
    sim.run(&["get", "configmaps", "-n", "unharmed"]);
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (&["--mode", "etcd"][..], "--mode"),
        (&["--address", "localhost"], "--address"),
        (&["--shards", "2"], "--shards"),
        (&["--simulate-workloads", "soon"], "--simulate-workloads"),
        (&["--fault-error-rate", "1.5"], "--fault-error-rate"),
        (&["--fault-error-code", "503"], "--fault-error-rate"),
    ] {
        let (code, stderr) = fails(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

/// The code block of docs/kcp-sim.md that follows the line starting with `after`.
fn doc_example(after: &str) -> String {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/kcp-sim.md"),
    )
    .unwrap();
    let rest = &doc[doc.find(after).unwrap_or_else(|| panic!("no {after:?}"))..];
    let start = rest.find("```").unwrap();
    let body = &rest[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// Runs `program args` in `dir` with the binary's directory first on PATH; panics unless it
/// exits 0 within 60 s.
fn run_example(dir: &TempDir, program: &str, args: &[&str]) {
    let bin_dir = std::path::Path::new(BINARY).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = dir.0.join("example.log");
    let mut example = Running(
        Command::new(program)
            .args(args)
            .current_dir(&dir.0)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::from(
                std::fs::File::options().append(true).open(&log).unwrap(),
            ))
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = example.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{program} {args:?} still runs after 60 s: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "{program} {args:?}: {status}: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

#[test]
fn the_shell_example_of_the_docs_runs() {
    let dir = TempDir::new();
    let script = doc_example("A CI step (shell, any project):");
    std::fs::write(dir.0.join("ci.sh"), &script).unwrap();
    run_example(&dir, "bash", &["-eu", "ci.sh"]);
    let out = std::fs::read_to_string(dir.0.join("kcp-sim.out")).unwrap();
    assert!(
        out.starts_with("kcp-sim serving http://127.0.0.1:"),
        "{out}"
    );
}

#[test]
fn the_pytest_fixture_of_the_docs_runs() {
    if !python_has("kubernetes, pytest") {
        return;
    }
    let dir = TempDir::new();
    let fixture = doc_example("A pytest fixture with the official Python client");
    let test = "\n\ndef test_default_namespace(core_v1):\n    names = [ns.metadata.name for ns in \
                core_v1.list_namespace().items]\n    assert \"default\" in names\n";
    std::fs::write(dir.0.join("test_kcp_sim.py"), fixture + test).unwrap();
    run_example(
        &dir,
        &python(),
        &[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_kcp_sim.py",
        ],
    );
}
