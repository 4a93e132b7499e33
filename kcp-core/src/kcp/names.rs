//! Validated names of kcp: logical cluster names, workspace paths and initializer names.
//!
//! A workspace is addressed either by its **logical cluster name** (opaque, e.g.
//! `2x9kzrg2i5g4dr`, or `root`) or by its **workspace path** (`root:org:team`). Both can appear
//! in a `/clusters/<x>` URL, so both implement [`ClusterAddress`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha224};

use super::CLUSTER_ANNOTATION;
use super::INITIALIZER_LABEL_PREFIX;
use super::types::WorkspaceType;
use crate::error::{Error, Result};

/// Anything that addresses a logical cluster in a `/clusters/<x>` URL.
pub trait ClusterAddress {
    /// The URL path segment: a cluster name, `*` or a workspace path.
    fn as_url_segment(&self) -> &str;
}

impl<T: ClusterAddress + ?Sized> ClusterAddress for &T {
    fn as_url_segment(&self) -> &str {
        (**self).as_url_segment()
    }
}

/// Why `segment` is not a DNS-label-like name (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`), if it is not.
fn label_problem(segment: &str) -> Option<&'static str> {
    if segment.is_empty() {
        return Some("must not be empty");
    }
    if !segment
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("may only contain lowercase letters, digits and '-'");
    }
    if segment.starts_with('-') || segment.ends_with('-') {
        return Some("must start and end with a lowercase letter or digit");
    }
    None
}

fn invalid(what: &str, value: &str, reason: &str) -> Error {
    Error::Config(format!("invalid {what} {value:?}: {reason}"))
}

/// The conversions every validated string newtype of this module shares: `Display`, `FromStr`
/// and `TryFrom<String>` (both validating through `new`), `From<T> for String`, `AsRef<str>`.
macro_rules! validated_string_conversions {
    ($($ty:ident),+) => {$(
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                $ty::new(s)
            }
        }

        impl TryFrom<String> for $ty {
            type Error = Error;
            fn try_from(value: String) -> Result<Self> {
                $ty::new(value)
            }
        }

        impl From<$ty> for String {
            fn from(value: $ty) -> String {
                value.0
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    )+};
}

validated_string_conversions!(ClusterName, ClusterPath, InitializerName);

impl ClusterAddress for ClusterName {
    fn as_url_segment(&self) -> &str {
        &self.0
    }
}

impl ClusterAddress for ClusterPath {
    fn as_url_segment(&self) -> &str {
        &self.0
    }
}

// ---------------------------------------------------------------------------------------------

/// The name of a logical cluster (e.g. `root`, `2x9kzrg2i5g4dr`), or the wildcard `*`.
///
/// This is what the `kcp.io/cluster` annotation holds. The wildcard only makes sense in
/// list and watch URLs: writes must target a concrete cluster.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClusterName(String);

impl ClusterName {
    const WILDCARD: &'static str = "*";

    /// Validates a logical cluster name: lowercase letters, digits and `-`, starting and
    /// ending with a letter or digit (or `*` for the wildcard).
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        if name == Self::WILDCARD {
            return Ok(Self::wildcard());
        }
        match label_problem(&name) {
            Some(reason) => Err(invalid("logical cluster name", &name, reason)),
            None => Ok(ClusterName(name)),
        }
    }

    /// The root logical cluster, `root`.
    pub fn root() -> Self {
        ClusterName("root".to_string())
    }

    /// The wildcard `*`, which addresses all logical clusters in list and watch URLs.
    pub fn wildcard() -> Self {
        ClusterName(Self::WILDCARD.to_string())
    }

    /// Whether this is the wildcard `*`.
    pub fn is_wildcard(&self) -> bool {
        self.0 == Self::WILDCARD
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a one-segment workspace path (`root` → `root`); `None` for the wildcard.
    pub fn to_path(&self) -> Option<ClusterPath> {
        (!self.is_wildcard()).then(|| ClusterPath(self.0.clone()))
    }
}

// ---------------------------------------------------------------------------------------------

/// A workspace path: colon-separated workspace names from the root, e.g. `root:org:team`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClusterPath(String);

impl ClusterPath {
    /// Validates a path: one or more `:`-separated segments, each made of lowercase letters,
    /// digits and `-`, starting and ending with a letter or digit.
    pub fn new(path: impl Into<String>) -> Result<Self> {
        let path = path.into();
        for segment in path.split(':') {
            if let Some(reason) = label_problem(segment) {
                let reason = format!("segment {segment:?} {reason}");
                return Err(invalid("workspace path", &path, &reason));
            }
        }
        Ok(ClusterPath(path))
    }

    /// The root workspace path, `root`.
    pub fn root() -> Self {
        ClusterPath("root".to_string())
    }

    /// Whether this is exactly `root`.
    pub fn is_root(&self) -> bool {
        self.0 == "root"
    }

    /// The parent path (`root:org` for `root:org:team`); `None` for a one-segment path.
    pub fn parent(&self) -> Option<ClusterPath> {
        self.0
            .rsplit_once(':')
            .map(|(parent, _)| ClusterPath(parent.to_string()))
    }

    /// The last segment (`team` for `root:org:team`).
    pub fn base(&self) -> &str {
        self.0.rsplit(':').next().unwrap_or(&self.0)
    }

    /// The path of a child workspace: `root:org` joined with `team` is `root:org:team`.
    pub fn join(&self, name: &str) -> Result<ClusterPath> {
        if let Some(reason) = label_problem(name) {
            return Err(invalid("workspace name", name, reason));
        }
        Ok(ClusterPath(format!("{}:{name}", self.0)))
    }

    /// The segments, from the root.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split(':')
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

// ---------------------------------------------------------------------------------------------

/// The name of a workspace initializer, as listed in `LogicalCluster.status.initializers`.
///
/// The initializer of a WorkspaceType is `<logical cluster name of the type>:<type name>`,
/// e.g. `root:my-type` or `2x9kzrg2i5g4dr:dev-environment` (kcp uses the cluster *name* here,
/// not the workspace path). kcp's own initializers look like `system:apibindings`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct InitializerName(String);

impl InitializerName {
    /// Validates an initializer name: either `system:<anything>`, or two or more
    /// `:`-separated lowercase DNS-label segments of which the last has at least two
    /// characters (kcp's `LogicalClusterInitializer` pattern).
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        if name
            .strip_prefix("system:")
            .is_some_and(|rest| !rest.is_empty())
        {
            return Ok(InitializerName(name));
        }
        let Some((cluster, type_name)) = name.rsplit_once(':') else {
            return Err(invalid(
                "initializer",
                &name,
                "must be <cluster>:<workspace type name> or system:<name>",
            ));
        };
        for segment in cluster.split(':').chain([type_name]) {
            if let Some(reason) = label_problem(segment) {
                let reason = format!("segment {segment:?} {reason}");
                return Err(invalid("initializer", &name, &reason));
            }
        }
        if type_name.len() < 2 {
            return Err(invalid(
                "initializer",
                &name,
                "the workspace type name must have at least two characters",
            ));
        }
        Ok(InitializerName(name))
    }

    /// The initializer of the WorkspaceType `type_name` in logical cluster `type_cluster`.
    pub fn for_workspace_type(type_cluster: &ClusterName, type_name: &str) -> Result<Self> {
        if type_cluster.is_wildcard() {
            return Err(invalid(
                "initializer",
                &format!("{type_cluster}:{type_name}"),
                "the workspace type's cluster must not be the wildcard",
            ));
        }
        InitializerName::new(format!("{type_cluster}:{type_name}"))
    }

    /// The initializer of a WorkspaceType read from the API server, which carries its logical
    /// cluster in the `kcp.io/cluster` annotation.
    pub fn from_workspace_type(workspace_type: &WorkspaceType) -> Result<Self> {
        let name = workspace_type.metadata.name.as_deref().unwrap_or_default();
        let describe = || format!("tenancy.kcp.io/v1alpha1 WorkspaceType {name:?}");
        let cluster = workspace_type
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CLUSTER_ANNOTATION))
            .ok_or_else(|| Error::InvalidObject {
                object: describe(),
                field: format!("metadata.annotations[{CLUSTER_ANNOTATION}]"),
                reason: "is required to compute the initializer name".into(),
            })?;
        let cluster = ClusterName::new(cluster.as_str()).map_err(|err| Error::InvalidObject {
            object: describe(),
            field: format!("metadata.annotations[{CLUSTER_ANNOTATION}]"),
            reason: err.to_string(),
        })?;
        InitializerName::for_workspace_type(&cluster, name)
    }

    /// Splits at the last `:` into the type's cluster and the type's name
    /// (`root:my-type` → `("root", "my-type")`).
    pub fn split(&self) -> (&str, &str) {
        self.0.rsplit_once(':').unwrap_or(("", &self.0))
    }

    /// The key of the label kcp puts on LogicalClusters that still wait for this initializer:
    /// `initializer.internal.kcp.io/` followed by the first 35 hex digits of the SHA-224 of the
    /// name.
    pub fn label_key(&self) -> String {
        let hash = self.label_value();
        format!("{INITIALIZER_LABEL_PREFIX}{}", &hash[..35])
    }

    /// The value of that label: the full 56 hex digits of the SHA-224 of the name.
    pub fn label_value(&self) -> String {
        hex::encode(Sha224::digest(self.0.as_bytes()))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kcp::types::WorkspaceTypeSpec;

    #[test]
    fn cluster_names_are_lowercase_labels() {
        assert_eq!(
            ClusterName::new("2x9kzrg2i5g4dr").unwrap().as_str(),
            "2x9kzrg2i5g4dr"
        );
        assert_eq!(ClusterName::new("root").unwrap(), ClusterName::root());
        assert_eq!(
            ClusterName::new("Root").unwrap_err().to_string(),
            "configuration: invalid logical cluster name \"Root\": \
             may only contain lowercase letters, digits and '-'"
        );
        assert!(ClusterName::new("").is_err());
        assert!(ClusterName::new("-a").is_err());
        assert!(ClusterName::new("root:org").is_err());
    }

    #[test]
    fn star_is_the_wildcard_cluster() {
        let star: ClusterName = "*".parse().unwrap();
        assert!(star.is_wildcard());
        assert_eq!(star, ClusterName::wildcard());
        assert!(!ClusterName::root().is_wildcard());
        assert_eq!(star.to_path(), None);
    }

    #[test]
    fn cluster_names_deserialize_with_validation() {
        let name: ClusterName = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"abc\"");
        assert!(serde_json::from_str::<ClusterName>("\"A B\"").is_err());
    }

    #[test]
    fn paths_have_a_parent_a_base_and_children() {
        let path: ClusterPath = "root:org:team".parse().unwrap();
        assert_eq!(path.parent().unwrap().as_str(), "root:org");
        assert_eq!(path.base(), "team");
        assert_eq!(path.segments().collect::<Vec<_>>(), ["root", "org", "team"]);
        assert_eq!(path.join("dev").unwrap().to_string(), "root:org:team:dev");
        assert!(!path.is_root());
        assert!(ClusterPath::root().is_root());
        assert_eq!(ClusterPath::root().parent(), None);
        assert_eq!(ClusterPath::root().base(), "root");
    }

    #[test]
    fn invalid_path_segments_are_named() {
        assert_eq!(
            ClusterPath::new("root::x").unwrap_err().to_string(),
            "configuration: invalid workspace path \"root::x\": segment \"\" must not be empty"
        );
        assert!(ClusterPath::root().join("a:b").is_err());
    }

    #[test]
    fn initializer_of_a_type_is_its_cluster_name_and_type_name() {
        let init = InitializerName::for_workspace_type(&ClusterName::root(), "my-type").unwrap();
        assert_eq!(init.as_str(), "root:my-type");
        let cluster = ClusterName::new("8924zrg2i5g4dr").unwrap();
        let init = InitializerName::for_workspace_type(&cluster, "dev-environment").unwrap();
        assert_eq!(init.split(), ("8924zrg2i5g4dr", "dev-environment"));
    }

    #[test]
    fn initializer_splits_at_the_last_colon() {
        let init = InitializerName::new("root:org:my-type").unwrap();
        assert_eq!(init.split(), ("root:org", "my-type"));
    }

    #[test]
    fn initializer_names_follow_the_kcp_pattern() {
        assert!(InitializerName::new("system:apibindings").is_ok());
        assert!(InitializerName::new("root:ab").is_ok());
        assert!(InitializerName::new("root:a").is_err());
        assert!(InitializerName::new("my-type").is_err());
        assert!(InitializerName::new("system:").is_err());
        assert!(InitializerName::new("Root:type").is_err());
    }

    #[test]
    fn initializer_of_a_workspace_type_reads_the_cluster_annotation() {
        let mut wst = WorkspaceType::new("my-type", WorkspaceTypeSpec::default());
        let err = InitializerName::from_workspace_type(&wst).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid object tenancy.kcp.io/v1alpha1 WorkspaceType \"my-type\": \
             field metadata.annotations[kcp.io/cluster]: is required to compute the initializer name"
        );
        wst.metadata.annotations =
            Some([(CLUSTER_ANNOTATION.to_string(), "root".to_string())].into());
        let init = InitializerName::from_workspace_type(&wst).unwrap();
        assert_eq!(init.as_str(), "root:my-type");
    }

    #[test]
    fn initializer_label_is_derived_from_sha224() {
        let init = InitializerName::new("root:my-type").unwrap();
        let value = init.label_value();
        // sha224("root:my-type"), computed independently with coreutils' sha224sum.
        assert_eq!(value, SHA224_ROOT_MY_TYPE);
        assert_eq!(value.len(), 56);
        assert_eq!(
            init.label_key(),
            format!("initializer.internal.kcp.io/{}", &SHA224_ROOT_MY_TYPE[..35])
        );
    }

    const SHA224_ROOT_MY_TYPE: &str = "96b08da052604733bd28a21862aca60d4aa7a0a667ab07b8cac19e92";
}
