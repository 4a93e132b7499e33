//! Builds a pinned peer with the machine's Go into a cache directory, once: the binary is reused
//! until the wrapper module, the package or the Go version changes. The build log is kept beside
//! the binary, and every failure names the peer, its version and the log.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::log_tail::tail;
use crate::pins::{self, Pin};
use crate::{loopback, shim};

/// A peer binary, built (or found in the cache).
#[derive(Debug, Clone)]
pub struct Built {
    /// The pin it was built from.
    pub pin: Pin,
    /// The executable.
    pub binary: PathBuf,
    /// The build's log (kept for cached binaries too).
    pub log: PathBuf,
}

/// The cache directory: `KCP_RS_PEERS_CACHE`, else `$XDG_CACHE_HOME/kcp-rs/peers`, else
/// `$HOME/.cache/kcp-rs/peers`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KCP_RS_PEERS_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("kcp-rs").join("peers")
}

/// The Go command: `KCP_RS_GO`, else the Go distribution in `/usr/local/go` (so that a
/// distribution `golang-go` on `PATH` cannot shadow it), else `go` on `PATH`.
pub fn go_command() -> PathBuf {
    if let Some(go) = std::env::var_os("KCP_RS_GO") {
        return PathBuf::from(go);
    }
    let local = Path::new("/usr/local/go/bin/go");
    if local.is_file() {
        return local.to_path_buf();
    }
    PathBuf::from("go")
}

/// Builds `peer` (a name of `peers/PINS`) unless the cache already holds it.
pub fn build(peer: &str) -> Result<Built> {
    let pin = pins::pin(peer)?;
    let go = go_command();
    let go_version = go_version(&go, &pin)?;
    let key = cache_key(&pin, &go_version)?;
    let dir = cache_dir().join(format!("{}-{}-{key}", pin.peer, pin.version));
    let binary = dir.join(&pin.peer);
    let log = dir.join("build.log");
    fs::create_dir_all(&dir)
        .map_err(|e| Error::io(peer, format!("creating {}", dir.display()), e))?;
    let lock = File::create(dir.join(".lock"))
        .map_err(|e| Error::io(peer, "creating the build lock", e))?;
    // One build per peer at a time, also across test binaries run side by side.
    lock.lock()
        .map_err(|e| Error::io(peer, "taking the build lock", e))?;
    if !binary.is_file() {
        let shims = shim::shims_of(&pin)?;
        let fixes = loopback::fixes_of(&pin)?;
        let module_dir = if shims.is_empty() && fixes.is_empty() {
            pin.wrapper_dir()
        } else {
            dir.join("module")
        };
        let build = GoBuild {
            go: &go,
            go_version: &go_version,
            pin: &pin,
            module_dir: &module_dir,
        };
        build.run(&shims, &fixes, &binary, &log)?;
    }
    Ok(Built { pin, binary, log })
}

/// The directory of `module` (a module `peer`'s wrapper requires, at the version its go.mod
/// resolves) in the Go module cache, downloading it if needed: where a test reads upstream's
/// own files (CRDs, manifests, source) for a peer.
pub fn module_dir(peer: &str, module: &str) -> Result<PathBuf> {
    let pin = pins::pin(peer)?;
    let listed = go_json(&pin, &["list", "-m", "-json", module])?;
    let version = listed.answer["Version"].as_str().unwrap_or_default();
    match listed.answer["Dir"].as_str() {
        Some(dir) if listed.success => Ok(PathBuf::from(dir)),
        // Listed but not downloaded yet.
        _ if listed.success && !version.is_empty() => {
            let module = format!("{module}@{version}");
            let downloaded = go_json(&pin, &["mod", "download", "-json", &module])?;
            match downloaded.answer["Dir"].as_str() {
                Some(dir) if downloaded.success => Ok(PathBuf::from(dir)),
                _ => Err(Error::config(
                    format!("downloading {module} for peer {peer}"),
                    downloaded.answer["Error"]
                        .as_str()
                        .unwrap_or("no module directory in the answer"),
                )),
            }
        }
        _ => Err(Error::config(
            format!("the module {module} of peer {peer}"),
            listed.stderr.trim(),
        )),
    }
}

/// What a Go command with `-json` output answered.
struct GoAnswer {
    success: bool,
    answer: serde_json::Value,
    stderr: String,
}

/// Runs `go args...` in `pin`'s wrapper (the build's module settings, modules fetched as
/// needed) and parses its JSON answer.
fn go_json(pin: &Pin, args: &[&str]) -> Result<GoAnswer> {
    let output = Command::new(go_command())
        .current_dir(pin.wrapper_dir())
        .args(args)
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GONOSUMDB", "github.com/kcp-dev")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(&pin.peer, format!("running go {}", args.join(" ")), e))?;
    Ok(GoAnswer {
        success: output.status.success(),
        answer: serde_json::from_slice(&output.stdout).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

fn go_version(go: &Path, pin: &Pin) -> Result<String> {
    let no_go = |reason: String| Error::NoGo {
        peer: pin.peer.clone(),
        version: pin.version.clone(),
        reason,
    };
    let output = Command::new(go)
        .args(["env", "GOVERSION"])
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|e| no_go(format!("running {} env GOVERSION: {e}", go.display())))?;
    if !output.status.success() {
        return Err(no_go(format!(
            "{} env GOVERSION: {}",
            go.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Linker flags of every peer: no symbol table or debug information (smaller, faster to link).
const DEFAULT_LDFLAGS: &str = "-s -w";

/// The linker flags of `pin`'s build, with the version stamps each project's release build
/// writes (`go_mod`: the wrapper's go.mod). A plain `go build` reports
/// `v0.0.0-master+$Format:%H$`, which clients that check the server's version refuse (Cluster
/// API wants 1.20 or newer, `kubectl version` cannot parse it), so:
/// - the peers of the `k8s.io/kubernetes` module get Kubernetes's stamp of their pinned version;
/// - kcp's binaries get kcp's Makefile's: `<Kubernetes version>+kcp-<kcp version>`, with the
///   Kubernetes major and minor, in both client-go's and component-base's version packages.
fn ldflags(pin: &Pin, go_mod: &str) -> String {
    let (release, version, packages): (&str, String, &[&str]) =
        if pin.package.starts_with("k8s.io/kubernetes/") {
            (
                &pin.version,
                pin.version.clone(),
                &["k8s.io/component-base/version"],
            )
        } else if pin.package.starts_with("github.com/kcp-dev/kcp/cmd/")
            && let Some(kube) = required_version(go_mod, "k8s.io/kubernetes")
        {
            (
                kube,
                format!("{kube}+kcp-{}", pin.version),
                &[
                    "k8s.io/client-go/pkg/version",
                    "k8s.io/component-base/version",
                ],
            )
        } else {
            return DEFAULT_LDFLAGS.to_string();
        };
    let mut parts = release.trim_start_matches('v').split('.');
    let (major, minor) = (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"));
    let mut flags = DEFAULT_LDFLAGS.to_string();
    for package in packages {
        for (name, value) in [
            ("gitVersion", version.as_str()),
            ("gitMajor", major),
            ("gitMinor", minor),
            ("gitTreeState", "clean"),
        ] {
            flags.push_str(&format!(" -X {package}.{name}={value}"));
        }
    }
    flags
}

/// The version of `module` a go.mod requires (its `require` line, not a `replace`).
fn required_version<'a>(go_mod: &'a str, module: &str) -> Option<&'a str> {
    go_mod.lines().find_map(|line| {
        let mut words = line
            .trim()
            .trim_start_matches("require ")
            .split_whitespace();
        (words.next() == Some(module))
            .then(|| words.next())
            .flatten()
            .filter(|v| v.starts_with('v'))
    })
}

/// What decides the binary: the wrapper's go.mod, go.sum and SHIMS, the package, the Go version.
fn cache_key(pin: &Pin, go_version: &str) -> Result<String> {
    let mut hash = Sha256::new();
    for file in [
        "go.mod",
        "go.sum",
        shim::SHIMS_FILE,
        loopback::LOOPBACK_FILE,
    ] {
        let path = pin.wrapper_dir().join(file);
        match fs::read(&path) {
            Ok(bytes) => hash.update(&bytes),
            // A wrapper whose dependencies could never be resolved has no go.sum; the build
            // then fails with the Go command's own words.
            // A wrapper without shims or loopback fixes has no SHIMS or LOOPBACK file.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file != "go.mod" => {}
            Err(e) => {
                return Err(Error::io(
                    &pin.peer,
                    format!("reading {}", path.display()),
                    e,
                ));
            }
        }
    }
    hash.update(pin.package.as_bytes());
    hash.update(go_version.as_bytes());
    // Only peers whose flags carry more than the default are keyed by them, so adding the
    // version stamp did not rebuild every other cached peer.
    let flags = ldflags(pin, &pin.wrapper_file("go.mod")?.unwrap_or_default());
    if flags != DEFAULT_LDFLAGS {
        hash.update(flags.as_bytes());
    }
    Ok(hex::encode(&hash.finalize()[..6]))
}

/// One build of a peer: the Go command, its version, the pin and the module directory it runs in
/// (the wrapper, or the build copy when the wrapper has shims).
struct GoBuild<'a> {
    go: &'a Path,
    go_version: &'a str,
    pin: &'a Pin,
    module_dir: &'a Path,
}

impl GoBuild<'_> {
    fn run(
        &self,
        shims: &[shim::Shim],
        fixes: &[loopback::Fix],
        binary: &Path,
        log: &Path,
    ) -> Result<()> {
        let pin = self.pin;
        let io = |action: &str, e| Error::io(&pin.peer, action.to_string(), e);
        let mut log_file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(log)
            .map_err(|e| io("creating the build log", e))?;
        let partial = binary.with_extension("partial");
        let started = Instant::now();
        writeln!(
            log_file,
            "# {} {} ({}) with {} in {}",
            pin.peer,
            pin.version,
            pin.package,
            self.go_version,
            self.module_dir.display()
        )
        .map_err(|e| io("writing the build log", e))?;
        if !shims.is_empty() || !fixes.is_empty() {
            shim::assemble(pin, shims, self.module_dir, || self.command(&log_file))?;
        }
        if !fixes.is_empty() {
            loopback::apply(pin, fixes, self.module_dir, || self.command(&log_file))?;
        }
        // Download first: a module the proxy refuses is then reported in the proxy's own words.
        let download = self
            .command(&log_file)?
            .args(["mod", "download"])
            .status()
            .map_err(|e| io(&format!("running {} mod download", self.go.display()), e))?;
        let status = if download.success() {
            let go_mod = pin.wrapper_file("go.mod")?.unwrap_or_default();
            self.command(&log_file)?
                .arg("build")
                .args(["-trimpath", "-ldflags", &ldflags(pin, &go_mod), "-o"])
                .arg(&partial)
                .arg(&pin.package)
                .status()
                .map_err(|e| io(&format!("running {} build", self.go.display()), e))?
        } else {
            download
        };
        let seconds = started.elapsed().as_secs_f64();
        let _ = writeln!(log_file, "# exit {status} after {seconds:.1} s");
        if !status.success() {
            return Err(Error::Build {
                peer: pin.peer.clone(),
                version: pin.version.clone(),
                log: log.to_path_buf(),
                tail: tail(log, 25),
            });
        }
        fs::rename(&partial, binary).map_err(|e| io("moving the built binary into place", e))?;
        tracing::info!(peer = %pin.peer, version = %pin.version, seconds, "peer built");
        Ok(())
    }

    /// The Go command in the module directory, with the build environment and the log as output.
    fn command(&self, log: &File) -> Result<Command> {
        let io = |e| Error::io(&self.pin.peer, "sharing the build log", e);
        let mut command = Command::new(self.go);
        command
            .current_dir(self.module_dir)
            .env("CGO_ENABLED", "0")
            .env("GOTOOLCHAIN", "local")
            .env("GOWORK", "off")
            .env("GOFLAGS", "-mod=readonly")
            // The checksum database does not answer for kcp's modules; the committed go.sum pins them.
            .env("GONOSUMDB", "github.com/kcp-dev")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io)?)
            .stderr(log.try_clone().map_err(io)?);
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(version: &str, package: &str) -> Pin {
        Pin {
            peer: "p".into(),
            version: version.into(),
            wrapper: "w".into(),
            package: package.into(),
        }
    }

    #[test]
    fn kubernetes_peers_are_stamped_with_their_pinned_version() {
        let flags = ldflags(&pin("v1.34.2", "k8s.io/kubernetes/cmd/kube-apiserver"), "");
        assert_eq!(
            flags,
            "-s -w -X k8s.io/component-base/version.gitVersion=v1.34.2 \
             -X k8s.io/component-base/version.gitMajor=1 \
             -X k8s.io/component-base/version.gitMinor=34 \
             -X k8s.io/component-base/version.gitTreeState=clean"
        );
    }

    #[test]
    fn kcp_is_stamped_as_its_makefile_stamps_a_release() {
        let go_mod = "module wrapper\n\nrequire github.com/kcp-dev/kcp v0.30.0\n\nrequire (\n\
                      \tk8s.io/kubernetes v1.34.2 // indirect\n)\n\n\
                      replace k8s.io/kubernetes => github.com/kcp-dev/kubernetes v0.0.0-1\n";
        let flags = ldflags(&pin("v0.30.0", "github.com/kcp-dev/kcp/cmd/kcp"), go_mod);
        for package in [
            "k8s.io/client-go/pkg/version",
            "k8s.io/component-base/version",
        ] {
            assert!(
                flags.contains(&format!(" -X {package}.gitVersion=v1.34.2+kcp-v0.30.0 ")),
                "{flags}"
            );
            assert!(
                flags.contains(&format!(" -X {package}.gitMinor=34 ")),
                "{flags}"
            );
        }
    }

    #[test]
    fn other_peers_link_with_the_default_flags_only() {
        assert_eq!(
            ldflags(&pin("v3.6.14", "go.etcd.io/etcd/server/v3"), ""),
            "-s -w"
        );
    }
}
