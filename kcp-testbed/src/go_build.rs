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
use crate::shim;

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
        let module_dir = if shims.is_empty() {
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
        build.run(&shims, &binary, &log)?;
    }
    Ok(Built { pin, binary, log })
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

/// What decides the binary: the wrapper's go.mod, go.sum and SHIMS, the package, the Go version.
fn cache_key(pin: &Pin, go_version: &str) -> Result<String> {
    let mut hash = Sha256::new();
    for file in ["go.mod", "go.sum", shim::SHIMS_FILE] {
        let path = pin.wrapper_dir().join(file);
        match fs::read(&path) {
            Ok(bytes) => hash.update(&bytes),
            // A wrapper whose dependencies could never be resolved has no go.sum; the build
            // then fails with the Go command's own words.
            // A wrapper without shims has no SHIMS file.
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
    fn run(&self, shims: &[shim::Shim], binary: &Path, log: &Path) -> Result<()> {
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
        if !shims.is_empty() {
            shim::assemble(pin, shims, self.module_dir, || self.command(&log_file))?;
        }
        // Download first: a module the proxy refuses is then reported in the proxy's own words.
        let download = self
            .command(&log_file)?
            .args(["mod", "download"])
            .status()
            .map_err(|e| io(&format!("running {} mod download", self.go.display()), e))?;
        let status = if download.success() {
            self.command(&log_file)?
                .arg("build")
                .args(["-trimpath", "-ldflags", "-s -w", "-o"])
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
