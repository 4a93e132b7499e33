//! Servers inside a peer that no flag can bind to 127.0.0.1, made to default to it in the build.
//!
//! Every server a test starts binds 127.0.0.1. Most peers take an address for each listener,
//! but some do not: Cluster API's core manager gives controller-runtime's webhook server only a
//! port, and controller-runtime then listens on every address. A wrapper directory may hold a
//! `LOOPBACK` file naming such a dependency and the listener to fix:
//!
//! ```text
//! <fix>  <module@version>
//! ```
//!
//! The one fix known is `webhook-server` (controller-runtime's `pkg/webhook`: an empty `Host`
//! becomes `127.0.0.1`). The peer is then built in a copy of its wrapper (as for
//! [`crate::shim`]): the module is copied from the module cache into `loopback/<name>` of the
//! build copy, the one default is added to it, and the copy's go.mod replaces the module with
//! it. Nothing of the module lands in this checkout, and a module whose code no longer has the
//! place the fix goes is an error naming it, never a silent unfixed build.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::pins::Pin;

/// The file in a wrapper directory that lists its loopback fixes.
pub const LOOPBACK_FILE: &str = "LOOPBACK";

/// A listener default changed to 127.0.0.1 in a module the peer depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// Which listener (`webhook-server`).
    pub kind: FixKind,
    /// The module holding it.
    pub module: String,
    /// Its version (the one the wrapper's go.mod resolves).
    pub version: String,
}

/// The listeners this module knows how to fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixKind {
    /// controller-runtime's webhook server: `Options.Host` empty means every address.
    WebhookServer,
}

impl FixKind {
    fn parse(word: &str) -> Option<FixKind> {
        match word {
            "webhook-server" => Some(FixKind::WebhookServer),
            _ => None,
        }
    }

    /// The file changed, the line the default goes before, and the default.
    fn edit(self) -> (&'static str, &'static str, &'static str) {
        match self {
            FixKind::WebhookServer => (
                "pkg/webhook/server.go",
                "\tif o.Port <= 0 {\n",
                "\tif o.Host == \"\" {\n\t\to.Host = \"127.0.0.1\"\n\t}\n",
            ),
        }
    }
}

/// The loopback fixes of a wrapper: none when it has no `LOOPBACK` file.
pub fn fixes_of(pin: &Pin) -> Result<Vec<Fix>> {
    match pin.wrapper_file(LOOPBACK_FILE)? {
        Some(text) => parse(&pin.peer, &text),
        None => Ok(Vec::new()),
    }
}

/// Parses a `LOOPBACK` file: `#` comments, blank lines, `<fix> <module@version>` a line.
pub fn parse(peer: &str, text: &str) -> Result<Vec<Fix>> {
    let mut fixes = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let refused = |reason: String| Error::Loopback {
            peer: peer.to_string(),
            module: format!("line {}", index + 1),
            reason,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [kind, module] = fields[..] else {
            return Err(refused(format!(
                "expected 2 fields (fix, module@version), found {}",
                fields.len()
            )));
        };
        let kind = FixKind::parse(kind)
            .ok_or_else(|| refused(format!("unknown fix `{kind}` (known: webhook-server)")))?;
        let Some((module, version)) = module.split_once('@') else {
            return Err(refused(format!("`{module}` is not <module>@<version>")));
        };
        fixes.push(Fix {
            kind,
            module: module.to_string(),
            version: version.to_string(),
        });
    }
    Ok(fixes)
}

/// Writes each fixed module into `build_dir` (the build copy, its go.mod already copied) and
/// makes that go.mod replace the module with it. `go` runs the Go command in `build_dir`.
pub fn apply(
    pin: &Pin,
    fixes: &[Fix],
    build_dir: &Path,
    go: impl Fn() -> Result<Command>,
) -> Result<()> {
    let mut replaces = String::new();
    for fix in fixes {
        let failed = |reason: String| Error::Loopback {
            peer: pin.peer.clone(),
            module: format!("{}@{}", fix.module, fix.version),
            reason,
        };
        let source = module_source(fix, build_dir, &go).map_err(failed)?;
        let name = fix.module.rsplit('/').next().unwrap_or("module");
        let relative = format!("loopback/{name}");
        let target = build_dir.join(&relative);
        copy_tree(&source, &target).map_err(|e| failed(format!("copying the module: {e}")))?;
        let (file, before, default) = fix.kind.edit();
        let path = target.join(file);
        let text = fs::read_to_string(&path).map_err(|e| failed(format!("reading {file}: {e}")))?;
        let fixed = insert_before(&text, before, default).ok_or_else(|| {
            failed(format!(
                "{file} has no line {:?}: the fix no longer fits this version",
                before.trim()
            ))
        })?;
        fs::write(&path, fixed).map_err(|e| failed(format!("writing {file}: {e}")))?;
        replaces.push_str(&format!("\nreplace {} => ./{relative}\n", fix.module));
    }
    let go_mod = build_dir.join("go.mod");
    let mut text = fs::read_to_string(&go_mod)
        .map_err(|e| Error::io(&pin.peer, "reading the build copy's go.mod", e))?;
    text.push_str(&replaces);
    fs::write(&go_mod, text).map_err(|e| Error::io(&pin.peer, "writing the build copy's go.mod", e))
}

/// `text` with `insert` added before the first line equal to `before`; `None` when there is none.
fn insert_before(text: &str, before: &str, insert: &str) -> Option<String> {
    let at = text.find(before)?;
    let starts_line = at == 0 || text[..at].ends_with('\n');
    starts_line.then(|| format!("{}{insert}{}", &text[..at], &text[at..]))
}

/// The module's directory in the module cache, downloading it if needed.
fn module_source(
    fix: &Fix,
    build_dir: &Path,
    go: &impl Fn() -> Result<Command>,
) -> std::result::Result<PathBuf, String> {
    let module = format!("{}@{}", fix.module, fix.version);
    let output = go()
        .map_err(|e| e.to_string())?
        .current_dir(build_dir)
        .args(["mod", "download", "-json", &module])
        .stdout(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("running go mod download {module}: {e}"))?;
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    match answer.get("Dir").and_then(|d| d.as_str()) {
        Some(dir) if output.status.success() => Ok(PathBuf::from(dir)),
        _ => Err(format!(
            "go mod download {module} failed: {}",
            answer
                .get("Error")
                .and_then(|e| e.as_str())
                .unwrap_or("no module directory in its answer")
        )),
    }
}

/// Copies a directory tree; module-cache files are read-only, the copies get ordinary
/// permissions (written anew rather than copied with their mode).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        fs::remove_dir_all(to)?;
    }
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&path, &target)?;
        } else {
            fs::write(&target, fs::read(&path)?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_line_names_the_fix_and_the_module_version() {
        let fixes = parse(
            "p",
            "# c\nwebhook-server  sigs.k8s.io/controller-runtime@v0.21.0\n",
        )
        .unwrap();
        assert_eq!(
            fixes,
            vec![Fix {
                kind: FixKind::WebhookServer,
                module: "sigs.k8s.io/controller-runtime".into(),
                version: "v0.21.0".into(),
            }]
        );
    }

    #[test]
    fn an_unknown_fix_is_refused_with_its_line() {
        let error = parse("p", "\nmetrics-server example.com/m@v1\n").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        assert!(error.to_string().contains("unknown fix"), "{error}");
    }

    #[test]
    fn the_webhook_default_goes_before_the_port_default() {
        let source =
            "func (o *Options) setDefaults() {\n\tif o.Port <= 0 {\n\t\to.Port = 1\n\t}\n}\n";
        let (_, before, default) = FixKind::WebhookServer.edit();
        let fixed = insert_before(source, before, default).unwrap();
        assert_eq!(
            fixed,
            "func (o *Options) setDefaults() {\n\tif o.Host == \"\" {\n\t\to.Host = \"127.0.0.1\"\n\t}\n\tif o.Port <= 0 {\n\t\to.Port = 1\n\t}\n}\n"
        );
    }

    #[test]
    fn a_source_without_the_anchor_line_is_not_fixed() {
        let (_, before, default) = FixKind::WebhookServer.edit();
        assert_eq!(insert_before("package webhook\n", before, default), None);
    }
}
