//! Modules the Go module proxy refuses but a pinned peer needs, assembled at build time from a
//! package of a module it does serve.
//!
//! A wrapper directory may hold a `SHIMS` file; each line names a module the wrapper's go.mod
//! replaces with a local directory, and where its one needed package is found:
//!
//! ```text
//! <module dir>  <module path>  <package dir in it>  <source module@version>  <package dir in that>
//! ```
//!
//! Such a peer is built in a copy of its wrapper in the cache directory: go.mod and go.sum are
//! copied, and each shim directory is written there with a go.mod declaring the module path and
//! the non-test Go files of the source package. Upstream source is read from the module cache
//! only; nothing of it lands in this checkout.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::pins::Pin;

/// The file in a wrapper directory that lists its shims.
pub const SHIMS_FILE: &str = "SHIMS";

/// One module assembled from another module's package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shim {
    /// Where the module's root goes, relative to the wrapper (as its go.mod's replace names it).
    pub module_dir: String,
    /// The module path it declares.
    pub module_path: String,
    /// The package's directory inside the module.
    pub package_dir: String,
    /// The served module the package is taken from.
    pub source_module: String,
    /// That module's version.
    pub source_version: String,
    /// The package's directory inside the source module.
    pub source_dir: String,
}

/// The shims of a wrapper: none when it has no `SHIMS` file.
pub fn shims_of(pin: &Pin) -> Result<Vec<Shim>> {
    match pin.wrapper_file(SHIMS_FILE)? {
        Some(text) => parse(&pin.peer, &text),
        None => Ok(Vec::new()),
    }
}

/// Parses a `SHIMS` file: `#` comments, blank lines, five whitespace-separated fields a line.
pub fn parse(peer: &str, text: &str) -> Result<Vec<Shim>> {
    let mut shims = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let refused = |reason: String| Error::Shims {
            peer: peer.to_string(),
            line: index + 1,
            reason,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [module_dir, module_path, package_dir, source, source_dir] = fields[..] else {
            return Err(refused(format!(
                "expected 5 fields (module dir, module path, package dir, source module@version, \
                 source package dir), found {}",
                fields.len()
            )));
        };
        let Some((source_module, source_version)) = source.split_once('@') else {
            return Err(refused(format!("`{source}` is not <module>@<version>")));
        };
        if [module_dir, package_dir, source_dir]
            .iter()
            .any(|d| d.starts_with('/') || d.split('/').any(|c| c == ".."))
        {
            return Err(refused(
                "directories must be relative and stay inside".into(),
            ));
        }
        shims.push(Shim {
            module_dir: module_dir.to_string(),
            module_path: module_path.to_string(),
            package_dir: package_dir.to_string(),
            source_module: source_module.to_string(),
            source_version: source_version.to_string(),
            source_dir: source_dir.to_string(),
        });
    }
    Ok(shims)
}

/// Writes the build copy of `pin`'s wrapper into `build_dir`: go.mod, go.sum and every shim.
/// `go` runs `go mod download` for the source modules, with the environment the build uses.
pub fn assemble(
    pin: &Pin,
    shims: &[Shim],
    build_dir: &Path,
    go: impl Fn() -> Result<Command>,
) -> Result<()> {
    let io = |action: String, e| Error::io(&pin.peer, action, e);
    if build_dir.exists() {
        fs::remove_dir_all(build_dir)
            .map_err(|e| io(format!("clearing {}", build_dir.display()), e))?;
    }
    fs::create_dir_all(build_dir)
        .map_err(|e| io(format!("creating {}", build_dir.display()), e))?;
    for file in ["go.mod", "go.sum"] {
        fs::copy(pin.wrapper_dir().join(file), build_dir.join(file))
            .map_err(|e| io(format!("copying {file} into the build copy"), e))?;
    }
    for shim in shims {
        let source = source_package(pin, shim, build_dir, &go)?;
        write_shim(pin, shim, &source, build_dir)?;
    }
    Ok(())
}

/// The source package's directory in the module cache, downloading the module if needed.
fn source_package(
    pin: &Pin,
    shim: &Shim,
    build_dir: &Path,
    go: &impl Fn() -> Result<Command>,
) -> Result<PathBuf> {
    let module = format!("{}@{}", shim.source_module, shim.source_version);
    let output = go()?
        .current_dir(build_dir)
        .args(["mod", "download", "-json", &module])
        .stdout(std::process::Stdio::piped())
        .output()
        .map_err(|e| Error::io(&pin.peer, format!("running go mod download {module}"), e))?;
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let dir = answer.get("Dir").and_then(|d| d.as_str());
    match dir {
        Some(dir) if output.status.success() => Ok(Path::new(dir).join(&shim.source_dir)),
        _ => Err(Error::Shim {
            peer: pin.peer.clone(),
            module: shim.module_path.clone(),
            reason: format!(
                "go mod download {module} failed: {}",
                answer
                    .get("Error")
                    .and_then(|e| e.as_str())
                    .unwrap_or("no module directory in its answer")
            ),
        }),
    }
}

fn write_shim(pin: &Pin, shim: &Shim, source: &Path, build_dir: &Path) -> Result<()> {
    let io = |action: String, e| Error::io(&pin.peer, action, e);
    let root = build_dir.join(&shim.module_dir);
    let package = root.join(&shim.package_dir);
    fs::create_dir_all(&package).map_err(|e| io(format!("creating {}", package.display()), e))?;
    let go_mod = format!(
        "module {}\n\ngo 1.24.0\n\nrequire {} {}\n",
        shim.module_path, shim.source_module, shim.source_version
    );
    fs::write(root.join("go.mod"), go_mod).map_err(|e| io("writing a shim's go.mod".into(), e))?;
    let entries =
        fs::read_dir(source).map_err(|e| io(format!("reading {}", source.display()), e))?;
    let mut copied = 0;
    for entry in entries {
        let entry = entry.map_err(|e| io(format!("reading {}", source.display()), e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".go") && !name.ends_with("_test.go") {
            // Module-cache files are read-only; the copy gets ordinary permissions.
            let text = fs::read(entry.path())
                .map_err(|e| io(format!("reading {}", entry.path().display()), e))?;
            fs::write(package.join(&name), text)
                .map_err(|e| io(format!("writing the shim file {name}"), e))?;
            copied += 1;
        }
    }
    if copied == 0 {
        return Err(Error::Shim {
            peer: pin.peer.clone(),
            module: shim.module_path.clone(),
            reason: format!("{} holds no Go file", source.display()),
        });
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_shim_line_names_module_package_and_source() {
        let shims = parse(
            "p",
            "# c\nshim/vwf  example.com/vwf  crdpuller  example.com/kcp@v0.30.0  pkg/crdpuller\n",
        )
        .unwrap();
        assert_eq!(
            shims,
            vec![Shim {
                module_dir: "shim/vwf".into(),
                module_path: "example.com/vwf".into(),
                package_dir: "crdpuller".into(),
                source_module: "example.com/kcp".into(),
                source_version: "v0.30.0".into(),
                source_dir: "pkg/crdpuller".into(),
            }]
        );
    }

    #[test]
    fn a_source_without_a_version_is_refused_with_its_line() {
        let error = parse("p", "\nshim/a example.com/a b example.com/k pkg/b\n").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        assert!(error.to_string().contains("<module>@<version>"), "{error}");
    }

    #[test]
    fn a_directory_leaving_the_build_copy_is_refused() {
        let error = parse("p", "../x example.com/a b example.com/k@v1 pkg/b\n").unwrap_err();
        assert!(error.to_string().contains("stay inside"), "{error}");
    }
}
