//! The conformance cases: request sequences written in YAML, one file per area.
//!
//! ```yaml
//! area: CRUD and errors
//! server: kube            # kube (kube-apiserver) or kcp
//! cases:
//!   - name: get-missing-configmap
//!     steps:
//!       - request: GET /api/v1/namespaces/{ns}/configmaps/nothing
//! ```
//!
//! A step's request line, headers and body may name `{ns}` (the case's namespace), `{ws}` (the
//! case's workspace path, kcp only) and `{{<step>:<JSON pointer>}}` (a value of an earlier
//! step's raw answer, 1-based, e.g. `{{1:/body/metadata/resourceVersion}}`; `|path` after the
//! pointer keeps only a URL's path).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Which real server a file's cases are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// kube-apiserver (kcp-sim in Kubernetes mode).
    Kube,
    /// kcp (kcp-sim in kcp mode).
    Kcp,
}

/// A controller of kube-controller-manager that cases may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Controller {
    /// Collects the dependents of deleted owners (background and foreground deletion) and
    /// orphans them (orphan deletion).
    GarbageCollector,
    /// Sets a ResourceQuota's `status.hard` and `status.used`, and gives back what a deleted
    /// object used.
    ResourceQuota,
}

/// One file of cases.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The file's name without `.yaml` (set when loaded).
    #[serde(skip)]
    pub file: String,
    /// The area the cases cover (a row of the conformance table).
    pub area: String,
    /// The real server.
    pub server: ServerKind,
    /// The controllers the real kube-apiserver needs beside it for these cases (kcp-sim and kcp
    /// run their own).
    #[serde(default)]
    pub controllers: Vec<Controller>,
    /// Steps written once and used through YAML aliases (`*crd`); not run by themselves.
    #[serde(default)]
    pub templates: BTreeMap<String, Value>,
    /// The cases, run in order, each on a fresh namespace (or workspace).
    pub cases: Vec<Case>,
}

/// One request sequence.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within its file.
    pub name: String,
    /// What kcp-sim answered differently before it was fixed, when this case found it.
    #[serde(default)]
    pub fixed: Option<String>,
    /// The requests.
    pub steps: Vec<Step>,
}

/// One request and how its answer is read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// `<METHOD> <path and query>` (empty for a kubectl step).
    #[serde(default)]
    pub request: String,
    /// A kubectl command line instead of a request: its arguments, run by the pinned kubectl
    /// with a kubeconfig for the case's server (and workspace, on kcp).
    #[serde(default)]
    pub kubectl: Option<Vec<String>>,
    /// What a kubectl step reads on its standard input (`-f -`).
    #[serde(default)]
    pub stdin: Option<String>,
    /// Environment variables a kubectl step runs with (`KUBE_EDITOR` for `kubectl edit`),
    /// substituted as its arguments are.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Request headers (`Content-Type` defaults to `application/json` with a body).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, sent as JSON; with a protobuf `Content-Type`, the same object sent as a
    /// Kubernetes protobuf body (encoded by kcp-sim's encoder: the real server reading it is
    /// what holds that encoder to kube's).
    #[serde(default)]
    pub body: Option<Value>,
    /// The body sent as these bytes, for a body that is not JSON (`{not json`); with the same
    /// default `Content-Type`.
    #[serde(default)]
    pub raw_body: Option<String>,
    /// A watch: read this many events, then hang up.
    #[serde(default)]
    pub watch: Option<WatchRead>,
    /// Repeat the step (for up to 60 s) until its answer holds this value.
    #[serde(default)]
    pub until: Option<Until>,
    /// Keep only parts of a large answer (a real server serves much that kcp-sim does not),
    /// applied in order.
    #[serde(default)]
    pub select: Vec<Select>,
    /// `false`: a means to later steps (their `{{n:...}}`), whose answer is not compared.
    #[serde(default = "compared")]
    pub compare: bool,
}

fn compared() -> bool {
    true
}

/// The part of an answer a step compares: at `path`, an object keeps only the keys `keep`, an
/// array only the items whose value at `by` (a JSON pointer into the item) is one of `keep`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Select {
    /// A JSON pointer into the answer (`/body/items`).
    pub path: String,
    /// Where an item's name is (arrays only).
    #[serde(default)]
    pub by: Option<String>,
    /// The keys, or item names, kept.
    pub keep: Vec<String>,
    /// Whether the kept items are put in the order of their names (for a list the real server
    /// writes in Go's map order, which changes from one start to the next).
    #[serde(default)]
    pub sorted: bool,
}

impl Select {
    /// `answer` with only the selected part at `path` (unchanged when nothing is there).
    pub fn apply(&self, mut answer: Value) -> Value {
        let keep = |name: &str| self.keep.iter().any(|k| k == name);
        match answer.pointer_mut(&self.path) {
            Some(Value::Object(map)) => map.retain(|key, _| keep(key)),
            Some(Value::Array(items)) => {
                let name = |item: &Value| {
                    self.by
                        .as_deref()
                        .and_then(|by| item.pointer(by))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                items.retain(|item| name(item).is_some_and(|n| keep(&n)));
                if self.sorted {
                    items.sort_by_cached_key(name);
                }
            }
            _ => {}
        }
        answer
    }
}

/// How much of a watch is read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchRead {
    /// Events to read.
    pub events: usize,
}

/// The answer a repeated step waits for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Until {
    /// A JSON pointer into the answer (`/status`, `/body/status/phase`).
    pub path: String,
    /// The value it must hold; in a string, the case's names (`{ws}`, `{ns}`, `{cluster}`) are
    /// put in as in a request (a kubectl step's answer shows its namespace as `{ns}` already,
    /// so there the string is compared as written).
    #[serde(default)]
    pub equals: Option<Value>,
    /// Or: that it holds any value.
    #[serde(default)]
    pub present: bool,
    /// Or: that it holds none (a field a controller removes).
    #[serde(default)]
    pub absent: bool,
    /// Then also until the answer stops changing (two answers a second apart are the same):
    /// the real server's controllers have done their writes.
    #[serde(default)]
    pub stable: bool,
}

impl Until {
    /// Whether `answer` is the one waited for.
    pub fn holds(&self, answer: &Value) -> bool {
        match (answer.pointer(&self.path), &self.equals) {
            (Some(found), Some(wanted)) => found == wanted,
            (Some(_), None) => self.present,
            (None, _) => self.absent,
        }
    }
}

impl Step {
    /// The method and the path-and-query of the request line.
    pub fn method_and_path(&self) -> Option<(&str, &str)> {
        self.request.trim().split_once(' ')
    }
}

impl Case {
    /// Whether any step runs kubectl.
    pub fn runs_kubectl(&self) -> bool {
        self.steps.iter().any(|s| s.kubectl.is_some())
    }
}

impl CaseFile {
    /// Every `*.yaml` file of `dir`, sorted by name.
    pub fn load_dir(dir: &Path) -> Result<Vec<CaseFile>> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::config(format!("reading {}", dir.display()), e))?;
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        paths.sort();
        paths.iter().map(|p| CaseFile::load(p)).collect()
    }

    /// One file of cases; a step without `<METHOD> <path>` or a repeated name is refused.
    pub fn load(path: &Path) -> Result<CaseFile> {
        let file = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let refuse = |case: &str, step: usize, reason: String| Error::Conformance {
            case: format!("{file}/{case}"),
            step,
            reason,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| refuse("*", 0, format!("reading {}: {e}", path.display())))?;
        let mut loaded: CaseFile = serde_saphyr::from_str(&text)
            .map_err(|e| refuse("*", 0, format!("parsing {}: {e}", path.display())))?;
        let mut names = std::collections::BTreeSet::new();
        for case in &loaded.cases {
            if !names.insert(case.name.as_str()) {
                return Err(refuse(&case.name, 0, "the name is used twice".into()));
            }
            for (i, step) in case.steps.iter().enumerate() {
                let reason = match (&step.kubectl, step.method_and_path()) {
                    (Some(_), _) if !step.request.is_empty() => {
                        Some("a step is a request or a kubectl command, not both".to_string())
                    }
                    (None, None) => Some(format!(
                        "request {:?} is not `<METHOD> <path>`",
                        step.request
                    )),
                    _ => None,
                };
                if let Some(reason) = reason {
                    return Err(refuse(&case.name, i + 1, reason));
                }
            }
        }
        loaded.file = file;
        Ok(loaded)
    }
}
