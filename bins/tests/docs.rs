//! The docs check: README stays the front door (at most 200 lines), every relative link in it and
//! in `docs/` resolves, and every shell command in their code blocks is accounted for: run here
//! (`kubectl kustomize`), checked here (the files, charts, binaries and test targets it names
//! exist), run in full elsewhere in CI (named per kind below), or a step against the reader's own
//! cluster that CI cannot take, listed by its program. A command of none of these kinds fails the
//! check, so a new one is looked at.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// The relative link targets of a Markdown text (`[label](target)`, anchors dropped).
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        let external = target.contains("://") || target.starts_with('#') || target.contains(' ');
        if !external && !target.is_empty() {
            links.push(target.split('#').next().unwrap_or_default().to_owned());
        }
        rest = &rest[end..];
    }
    links
}

/// The command lines of the `sh` code blocks of a Markdown text.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_block = !in_block && matches!(trimmed, "```sh" | "```bash" | "```shell");
            continue;
        }
        if in_block && !trimmed.is_empty() && !trimmed.starts_with('#') {
            out.push(trimmed.to_owned());
        }
    }
    out
}

/// The package directory of a workspace package named in `cargo -p`.
fn package_dir(package: &str) -> PathBuf {
    let dir = match package {
        "kcp-bins" => "bins",
        "kcp-examples" => "examples",
        other => other,
    };
    root().join(dir)
}

fn word_after<'a>(words: &[&'a str], flag: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == flag)
        .and_then(|i| words.get(i + 1))
        .copied()
}

/// Programs of steps against the reader's own cluster or machine, which CI cannot take as they
/// are written (no container engine, the reader's kubeconfig, a nightly toolchain), each run in
/// spirit by the test or CI step named.
const READER_STEPS: [(&str, &str); 8] = [
    (
        "kind",
        "capi-kind's bins/tests/capi_provider_kind.rs, with the stand-in kind",
    ),
    (
        "printf",
        "a KindCluster piped to kubectl, as capi-kind's e2e creates them",
    ),
    ("cd", "a directory change before the fuzzing commands"),
    (
        "(cd",
        "building the Go template oracle, as kcp-core's go_differential test does",
    ),
    (
        "KCP_GO_ORACLE=/tmp/gotmpl-oracle",
        "the differential fuzz target (nightly, not in CI)",
    ),
    (
        "kcp-api-syncagent",
        "the rbac subcommand, run by bins/tests/kcp_api_syncagent.rs",
    ),
    ("kubectl", "reading the reader's cluster (get, describe)"),
    (
        "cargo",
        "cargo invocations other than run and test (fuzzing, not in CI)",
    ),
];

/// Checks one command line; `Err` says why it is not accounted for.
fn check(line: &str) -> Result<&'static str, String> {
    let first = line.split('|').next().unwrap_or(line);
    let words: Vec<&str> = first.split_whitespace().collect();
    let program = words
        .iter()
        .find(|w| !w.contains('=') || w.starts_with('('))
        .copied()
        .unwrap_or_default();
    match (
        program,
        words.get(words.iter().position(|w| *w == program).unwrap_or(0) + 1),
    ) {
        ("cargo", Some(&"test")) => check_cargo_test(&words),
        ("cargo", Some(&"run")) => check_cargo_run(&words),
        ("kubectl", _) if words.contains(&"kustomize") => run_kustomize(&words),
        ("kubectl", _) if words.contains(&"apply") => check_files(&words, "-f"),
        ("helm", _) => check_helm(&words),
        (program, _) => READER_STEPS
            .iter()
            .find(|(p, _)| *p == program)
            .map(|(_, why)| *why)
            .ok_or_else(|| format!("program {program:?} is neither run, checked nor listed")),
    }
}

fn check_cargo_test(words: &[&str]) -> Result<&'static str, String> {
    if let (Some(package), Some(test)) = (word_after(words, "-p"), word_after(words, "--test")) {
        let file = package_dir(package)
            .join("tests")
            .join(format!("{test}.rs"));
        return if file.exists() {
            Ok("a test target that exists")
        } else {
            Err(format!("no test target {}", file.display()))
        };
    }
    Ok("README's test commands, which CI runs verbatim")
}

fn check_cargo_run(words: &[&str]) -> Result<&'static str, String> {
    let package = word_after(words, "-p").ok_or("cargo run without -p")?;
    let dir = package_dir(package);
    let source = match (word_after(words, "--bin"), word_after(words, "--example")) {
        (Some(bin), _) => [
            dir.join("src/bin").join(format!("{bin}.rs")),
            dir.join(format!("src/bin/{bin}/main.rs")),
            dir.join(format!("{bin}.rs")),
        ]
        .into_iter()
        .find(|p| p.exists()),
        (None, Some(example)) => {
            Some(dir.join("examples").join(format!("{example}.rs"))).filter(|p| p.exists())
        }
        (None, None) => None,
    };
    source
        .map(|_| "a binary or example that exists (the playground runs in e2e_playground)")
        .ok_or_else(|| format!("no binary or example for {words:?}"))
}

fn run_kustomize(words: &[&str]) -> Result<&'static str, String> {
    let dir = word_after(words, "kustomize").ok_or("kustomize without a directory")?;
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(root().join(dir))
        .output()
        .map_err(|e| format!("running kubectl: {e}"))?;
    if out.status.success() {
        Ok("rendered here")
    } else {
        Err(format!(
            "kubectl kustomize {dir}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn check_files(words: &[&str], flag: &str) -> Result<&'static str, String> {
    for (i, w) in words.iter().enumerate() {
        if *w == flag
            && let Some(file) = words.get(i + 1)
            && *file != "-"
            && !root().join(file).exists()
        {
            return Err(format!("{file} does not exist"));
        }
    }
    Ok("files that exist (applied to the real servers by the real-RBAC and chart tests)")
}

fn check_helm(words: &[&str]) -> Result<&'static str, String> {
    let chart = words
        .iter()
        .find(|w| w.starts_with("deploy/charts/"))
        .ok_or("helm without a chart of deploy/charts")?;
    if !root().join(chart).join("Chart.yaml").exists() {
        return Err(format!("no chart {chart}"));
    }
    check_files(words, "-f")?;
    Ok("a chart that exists (helm lints, renders and dry-runs it in real_helm_charts)")
}

#[test]
fn the_readme_is_a_front_door_of_at_most_200_lines() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(lines <= 200, "README.md has {lines} lines");
}

#[test]
fn every_relative_link_resolves() {
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for link in relative_links(&text) {
            let target = doc.parent().unwrap().join(&link);
            assert!(target.exists(), "{}: {link} does not exist", doc.display());
        }
    }
}

#[test]
fn every_command_in_the_docs_is_run_checked_or_listed() {
    let mut problems = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for line in commands(&text) {
            if let Err(why) = check(&line) {
                problems.push(format!("{}: `{line}`: {why}", doc.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_command_nobody_accounts_for_fails_the_check() {
    assert!(check("rm -rf /tmp/anything").is_err());
    assert!(check("helm install x deploy/charts/no-such-chart").is_err());
    assert!(check("kubectl apply -f deploy/no-such-file.yaml").is_err());
    assert!(check("cargo run -p kcp-bins --bin no-such-binary").is_err());
}
