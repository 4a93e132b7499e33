//! Which service-cluster namespaces a related resource may read or write.
//!
//! A related object's namespace can come from the synced object (`object.namespace.reference`
//! or a template over it), and the synced object is written by a tenant in kcp. Upstream follows
//! whatever the tenant names, so a tenant could have the agent copy any Secret of the service
//! cluster into its workspace, or write into any namespace there. kcp-sync keeps related objects
//! on the service side in the local copy's own namespace, unless the PublishedResource's author
//! (a service-cluster admin, never a tenant) lists more in the annotation
//! `sync.kcp-rs.io/related-namespaces`: comma-separated names, or `*` for any namespace (as
//! upstream). The kcp side is the tenant's own workspace and is not restricted.

use std::collections::BTreeSet;

use crate::api::PublishedResource;

/// The annotation on a PublishedResource that lists further service namespaces.
pub const RELATED_NAMESPACES_ANNOTATION: &str = "sync.kcp-rs.io/related-namespaces";

/// The service namespaces allowed besides the local copy's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ExtraNamespaces {
    /// None: only the local copy's namespace (the default).
    #[default]
    None,
    /// These names.
    Listed(BTreeSet<String>),
    /// Any namespace (`*`), as upstream.
    Any,
}

impl ExtraNamespaces {
    /// What `pr`'s annotation allows.
    pub fn of(pr: &PublishedResource) -> Self {
        let listed = pr
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(RELATED_NAMESPACES_ANNOTATION));
        match listed {
            None => ExtraNamespaces::None,
            Some(text) => Self::parse(text),
        }
    }

    /// Parses the annotation's value.
    pub fn parse(text: &str) -> Self {
        let names: BTreeSet<String> = text
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        if names.contains("*") {
            ExtraNamespaces::Any
        } else if names.is_empty() {
            ExtraNamespaces::None
        } else {
            ExtraNamespaces::Listed(names)
        }
    }

    /// Whether a related object may live in service namespace `namespace` when the local copy
    /// of the primary lives in `primary` (empty for a cluster-scoped primary).
    pub fn allows(&self, primary: &str, namespace: &str) -> bool {
        if namespace.is_empty() || (!primary.is_empty() && namespace == primary) {
            return true;
        }
        match self {
            ExtraNamespaces::None => false,
            ExtraNamespaces::Listed(names) => names.contains(namespace),
            ExtraNamespaces::Any => true,
        }
    }

    /// Why `namespace` is refused, for an error.
    pub fn refusal(&self, primary: &str, namespace: &str) -> String {
        let own = if primary.is_empty() {
            "the primary is cluster-scoped, so only namespaces the PublishedResource lists"
                .to_owned()
        } else {
            format!("only the local copy's namespace {primary:?}")
        };
        let listed = match self {
            ExtraNamespaces::Listed(names) => format!(
                " and {}",
                names.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
            _ => String::new(),
        };
        format!(
            "resolves to service-cluster namespace {namespace:?}; related objects may use {own}{listed} \
             (a PublishedResource lists more in the annotation {RELATED_NAMESPACES_ANNOTATION})"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_only_the_local_copys_namespace_is_allowed() {
        let none = ExtraNamespaces::default();
        assert!(none.allows("tenant-a", "tenant-a"));
        assert!(!none.allows("tenant-a", "kube-system"));
        assert!(!none.allows("", "kube-system"));
    }

    #[test]
    fn a_cluster_scoped_related_object_has_no_namespace_to_check() {
        assert!(ExtraNamespaces::None.allows("tenant-a", ""));
    }

    #[test]
    fn listed_namespaces_are_allowed_and_a_star_allows_any() {
        let listed = ExtraNamespaces::parse("certs, shared ,");
        assert!(listed.allows("tenant-a", "certs"));
        assert!(listed.allows("", "shared"));
        assert!(!listed.allows("tenant-a", "kube-system"));
        assert_eq!(ExtraNamespaces::parse("certs,*"), ExtraNamespaces::Any);
        assert!(ExtraNamespaces::Any.allows("tenant-a", "kube-system"));
        assert_eq!(ExtraNamespaces::parse(" , "), ExtraNamespaces::None);
    }

    #[test]
    fn the_refusal_names_the_namespace_and_the_annotation() {
        let text = ExtraNamespaces::None.refusal("tenant-a", "kube-system");
        assert!(text.contains("\"kube-system\"") && text.contains("\"tenant-a\""));
        assert!(text.contains(RELATED_NAMESPACES_ANNOTATION));
    }
}
