//! `peers/PINS`: which version of each real peer and upstream Go tool the test bed builds, and
//! from which wrapper module. The one place versions are written.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The pin file, compiled in so a test binary knows its peers wherever it runs.
pub const PINS: &str = include_str!("../peers/PINS");

/// One pinned peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The peer's name (`kcp`, `kube-apiserver`, `etcd`, ...), also its binary's name.
    pub peer: String,
    /// The pinned module version.
    pub version: String,
    /// The wrapper module's directory under `peers/`.
    pub wrapper: String,
    /// The main package `go build` compiles.
    pub package: String,
}

impl Pin {
    /// The wrapper module's directory in this checkout.
    pub fn wrapper_dir(&self) -> PathBuf {
        peers_dir().join(&self.wrapper)
    }

    /// The text of the optional file `name` of the wrapper (`SHIMS`, `LOOPBACK`); `None` when
    /// the wrapper has none.
    pub fn wrapper_file(&self, name: &str) -> Result<Option<String>> {
        let path = self.wrapper_dir().join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(
                &self.peer,
                format!("reading {}", path.display()),
                e,
            )),
        }
    }
}

/// `kcp-testbed/peers` in this checkout.
pub fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// Every pin of `peers/PINS`, in file order.
pub fn all() -> Result<Vec<Pin>> {
    parse(PINS)
}

/// The pin of one peer.
pub fn pin(peer: &str) -> Result<Pin> {
    all()?
        .into_iter()
        .find(|p| p.peer == peer)
        .ok_or_else(|| Error::UnknownPeer {
            peer: peer.to_string(),
        })
}

/// Parses a pin file: `#` comments, blank lines, and four whitespace-separated fields a line.
pub fn parse(text: &str) -> Result<Vec<Pin>> {
    let mut pins = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [peer, version, wrapper, package] = fields[..] else {
            return Err(Error::Pins {
                line: index + 1,
                reason: format!(
                    "expected '<peer> <version> <wrapper> <package>', found {} fields",
                    fields.len()
                ),
            });
        };
        if !version.starts_with('v') {
            return Err(Error::Pins {
                line: index + 1,
                reason: format!("version {version:?} of {peer} is not a Go module version"),
            });
        }
        pins.push(Pin {
            peer: peer.to_string(),
            version: version.to_string(),
            wrapper: wrapper.to_string(),
            package: package.to_string(),
        });
    }
    Ok(pins)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_line_with_a_missing_field_is_refused_with_its_number() {
        let err = parse("# c\nkcp v0.30.0 kcp\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn a_version_without_a_v_is_refused() {
        let err = parse("kcp 0.30.0 kcp github.com/kcp-dev/kcp/cmd/kcp\n").unwrap_err();
        assert!(err.to_string().contains("not a Go module version"), "{err}");
    }

    #[test]
    fn every_wrapper_requires_exactly_the_pinned_version() {
        for pin in all().unwrap() {
            let go_mod = std::fs::read_to_string(pin.wrapper_dir().join("go.mod")).unwrap();
            let module = module_of(&pin.package);
            let wanted = format!("{module} {}", pin.version);
            assert!(
                go_mod.lines().any(|l| {
                    let l = l.trim().trim_start_matches("require").trim();
                    l == wanted || l.strip_suffix(" // indirect") == Some(wanted.as_str())
                }),
                "{}/go.mod does not require {wanted}",
                pin.wrapper
            );
        }
    }

    /// The module a main package belongs to, for the modules pinned here.
    fn module_of(package: &str) -> &str {
        for module in [
            "github.com/kcp-dev/kcp",
            "github.com/kcp-dev/init-agent",
            "k8s.io/kubernetes",
            "go.etcd.io/etcd/server/v3",
            "helm.sh/helm/v3",
            "sigs.k8s.io/kind",
            "github.com/kcp-dev/api-syncagent",
            "sigs.k8s.io/cluster-api",
        ] {
            if package.starts_with(module) {
                return module;
            }
        }
        panic!("no module known for {package}")
    }
}
