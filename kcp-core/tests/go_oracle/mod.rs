//! The Go oracle of the differential tests: `gotmpl-oracle/`, a Go module of our own that
//! answers as Go's text/template, html/template, sprig, ghodss/yaml and gjson do (at the
//! versions upstream's tools pin), built with the machine's Go and asked one JSON request per
//! line. Shared by kcp-core's template differential test and kcp-sync's gjson path test
//! (which includes this file by path).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The oracle's Go module.
fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kcp-core/tests/gotmpl-oracle")
}

/// The oracle, built from its module (every dependency at the version its go.mod and go.sum pin,
/// from the Go module proxy), or why not. The Go command is `KCP_RS_GO`, else the machine's
/// own in /usr/local/go (never a distribution `golang-go` that may shadow it on PATH), else
/// `go`.
pub fn build() -> Result<PathBuf, String> {
    build_module(&source(), "gotmpl-oracle")
}

/// Builds the Go module at `source` (an oracle of our own, pinned by its go.mod and go.sum)
/// as `name` in the test's target directory, or says why not.
pub fn build_module(source: &Path, name: &str) -> Result<PathBuf, String> {
    let go = std::env::var_os("KCP_RS_GO")
        .map(PathBuf::from)
        .or_else(|| {
            let local = PathBuf::from("/usr/local/go/bin/go");
            local.is_file().then_some(local)
        })
        .unwrap_or_else(|| PathBuf::from("go"));
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let output = Command::new(&go)
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(source)
        .env("GOFLAGS", "-mod=readonly")
        .env("GOWORK", "off")
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", go.display()))?;
    if !output.status.success() {
        return Err(format!(
            "`{} build` in {} failed ({}): {}",
            go.display(),
            source.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(binary)
}

/// Asks the oracle one JSON request per line and returns its answers.
pub fn ask(binary: &Path, requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let answers: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    writer.join().unwrap().unwrap();
    assert!(child.wait().unwrap().success());
    answers
}

/// The built oracle; without Go, `None` with a line saying the live comparison was skipped,
/// or a failure when `KCP_REQUIRE_GO_ORACLE` is set (CI sets it).
pub fn built_or_skip() -> Option<PathBuf> {
    or_skip(build())
}

/// The Go module at `source` built as `name`, or skipped as [`built_or_skip`] skips.
pub fn module_built_or_skip(source: &Path, name: &str) -> Option<PathBuf> {
    or_skip(build_module(source, name))
}

fn or_skip(built: Result<PathBuf, String>) -> Option<PathBuf> {
    match built {
        Ok(binary) => Some(binary),
        Err(why) => {
            let message = format!(
                "SKIPPED: live Go comparison not run: {why} (needs Go 1.26 and the Go module proxy)"
            );
            if std::env::var_os("KCP_REQUIRE_GO_ORACLE").is_some() {
                panic!("{message}; KCP_REQUIRE_GO_ORACLE is set");
            }
            println!("{message}");
            eprintln!("{message}");
            None
        }
    }
}
