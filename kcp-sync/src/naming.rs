//! Names of local copies: `spec.naming` of a PublishedResource.
//!
//! A pattern containing `{{` is a Go template (text/template with sprig and `sha3sum`,
//! `sha3short`, `shortHash`; output trimmed) over `.Object` (the remote object),
//! `.ClusterName` and `.ClusterPath`. Any other non-empty pattern is the deprecated `$var`
//! form (`$remoteClusterName`, `$remoteNamespace`, `$remoteNamespaceHash`, `$remoteName`,
//! `$remoteNameHash`). Empty patterns take the defaults: namespace `{{ .ClusterName }}`,
//! name `{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}`.
//!
//! Better than upstream: objects without a namespace (cluster-scoped in kcp) get the default
//! name `{{ .ClusterName | sha3short }}-{{ .Object.metadata.name | sha3short }}` instead of
//! failing (#163); the cluster name keeps same-named objects of two workspaces apart even
//! when the local copy is cluster-scoped. Rendered names are validated (namespace: DNS-1123
//! label; name: DNS-1123 subdomain) before anything is sent.
//!
//! Names are used once, at creation; later the copy is found through its link labels, so
//! changing the rules never moves existing objects.

use kcp_core::TemplateEngine;
use serde_json::{Value, json};

use crate::api::{
    PLACEHOLDER_REMOTE_CLUSTER_NAME, PLACEHOLDER_REMOTE_NAME, PLACEHOLDER_REMOTE_NAME_HASH,
    PLACEHOLDER_REMOTE_NAMESPACE, PLACEHOLDER_REMOTE_NAMESPACE_HASH, ResourceNaming,
};
use crate::error::{Error, Result};
use crate::hash::short_hash;
use crate::metadata::RemoteObjectKey;

/// Default namespace pattern.
pub const DEFAULT_NAMESPACE: &str = "{{ .ClusterName }}";

/// Default name pattern for namespaced remote objects.
pub const DEFAULT_NAME: &str =
    "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}";

/// Default name pattern for cluster-scoped remote objects (upstream fails here, #163).
pub const DEFAULT_NAME_CLUSTER_SCOPED: &str =
    "{{ .ClusterName | sha3short }}-{{ .Object.metadata.name | sha3short }}";

/// Where a local copy goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalName {
    /// The namespace; `None` when the local type is cluster-scoped.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

/// The local namespace and name for `remote` (in logical cluster `cluster`, at workspace
/// `path` when paths are enabled). `local_namespaced` says whether the local type is
/// namespaced; when it is not, no namespace is rendered.
pub fn local_name(
    engine: &TemplateEngine,
    naming: Option<&ResourceNaming>,
    remote: &Value,
    cluster: &str,
    path: Option<&str>,
    local_namespaced: bool,
) -> Result<LocalName> {
    let key = RemoteObjectKey::of(remote, cluster, path);
    let namespace = if local_namespaced {
        let pattern = naming
            .map(|n| n.namespace.as_str())
            .filter(|p| !p.is_empty())
            .unwrap_or(DEFAULT_NAMESPACE);
        let rendered = render(engine, "spec.naming.namespace", pattern, remote, &key)?;
        validate(&key, "spec.naming.namespace", &rendered, 63)?;
        Some(rendered)
    } else {
        None
    };
    let default_name = if key.namespace.is_empty() {
        DEFAULT_NAME_CLUSTER_SCOPED
    } else {
        DEFAULT_NAME
    };
    let pattern = naming
        .map(|n| n.name.as_str())
        .filter(|p| !p.is_empty())
        .unwrap_or(default_name);
    let name = render(engine, "spec.naming.name", pattern, remote, &key)?;
    validate(&key, "spec.naming.name", &name, 253)?;
    Ok(LocalName { namespace, name })
}

/// What makes a pattern a Go template rather than plain text (or the legacy `$var` form), as
/// upstream decides it.
const GO_TEMPLATE_OPENING: &str = "{{";

/// Whether `pattern` is a Go template (it contains `{{`); else it is used as written.
pub(crate) fn is_go_template(pattern: &str) -> bool {
    pattern.contains(GO_TEMPLATE_OPENING)
}

/// Renders one naming pattern (Go template or legacy `$var` form).
pub fn render(
    engine: &TemplateEngine,
    location: &str,
    pattern: &str,
    remote: &Value,
    key: &RemoteObjectKey,
) -> Result<String> {
    if !is_go_template(pattern) {
        return Ok(legacy(pattern, key));
    }
    let context = json!({
        "Object": remote,
        "ClusterName": key.cluster,
        "ClusterPath": key.workspace_path.clone().unwrap_or_default(),
    });
    engine
        .render(location, pattern, &context)
        .map(|s| s.trim().to_owned())
        .map_err(|err| Error::Template {
            location: format!("{location} for {key}"),
            message: err.to_string(),
        })
}

/// The legacy `$var` substitution: at every position the first placeholder that matches, in
/// upstream's order (`$remoteClusterName`, `$remoteNamespaceHash`, `$remoteNamespace`,
/// `$remoteNameHash`, `$remoteName`), is replaced; the workspace path is not available.
pub fn legacy(pattern: &str, key: &RemoteObjectKey) -> String {
    let replacements = [
        (PLACEHOLDER_REMOTE_CLUSTER_NAME, key.cluster.clone()),
        (
            PLACEHOLDER_REMOTE_NAMESPACE_HASH,
            short_hash(&key.namespace),
        ),
        (PLACEHOLDER_REMOTE_NAMESPACE, key.namespace.clone()),
        (PLACEHOLDER_REMOTE_NAME_HASH, short_hash(&key.name)),
        (PLACEHOLDER_REMOTE_NAME, key.name.clone()),
    ];
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    'outer: while let Some(c) = rest.chars().next() {
        for (placeholder, value) in &replacements {
            if let Some(tail) = rest.strip_prefix(placeholder) {
                out.push_str(value);
                rest = tail;
                continue 'outer;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Checks a rendered name: a DNS-1123 label (`max` 63) or subdomain (`max` 253).
fn validate(key: &RemoteObjectKey, field: &str, value: &str, max: usize) -> Result<()> {
    let invalid = |reason: String| Error::InvalidName {
        object: key.to_string(),
        field: field.to_owned(),
        value: value.to_owned(),
        reason,
    };
    if value.is_empty() {
        return Err(invalid("it is empty".into()));
    }
    if value.len() > max {
        return Err(invalid(format!("it is longer than {max} characters")));
    }
    let label_ok = |part: &str| {
        !part.is_empty()
            && part.len() <= 63
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    };
    let ok = if max == 63 {
        label_ok(value)
    } else {
        value.split('.').all(label_ok)
    };
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "it must consist of lower case alphanumeric characters, '-' (and '.' in names), \
             and start and end with an alphanumeric character"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(namespace: Option<&str>, name: &str) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(ns) = namespace {
            metadata["namespace"] = json!(ns);
        }
        json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": metadata})
    }

    fn naming(namespace: &str, name: &str) -> ResourceNaming {
        ResourceNaming {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn name_of(naming_: Option<&ResourceNaming>, remote: &Value, path: Option<&str>) -> LocalName {
        local_name(
            &TemplateEngine::new(),
            naming_,
            remote,
            "testcluster",
            path,
            true,
        )
        .unwrap()
    }

    #[test]
    fn default_naming_matches_the_spec_vector() {
        let got = name_of(None, &object(Some("objnamespace"), "objname"), None);
        assert_eq!(
            got,
            LocalName {
                namespace: Some("testcluster".into()),
                name: "2928c2aa0e510f017f07-73d08a1ba188f1340dae".into(),
            }
        );
    }

    #[test]
    fn empty_patterns_mean_the_defaults() {
        let remote = object(Some("objnamespace"), "objname");
        // Upstream's vector: api-syncagent v0.7.0 internal/sync/templating/naming_test.go,
        // case "configured but empty patterns".
        assert_eq!(
            name_of(Some(&naming("", "")), &remote, None),
            LocalName {
                namespace: Some("testcluster".into()),
                name: "2928c2aa0e510f017f07-73d08a1ba188f1340dae".into(),
            }
        );
    }

    #[test]
    fn default_naming_works_for_cluster_scoped_objects() {
        let got = name_of(None, &object(None, "objname"), None);
        let engine = TemplateEngine::new();
        let cluster_hash = engine
            .render("t", "{{ sha3short \"testcluster\" }}", &json!({}))
            .unwrap();
        assert_eq!(got.name, format!("{cluster_hash}-73d08a1ba188f1340dae"));
    }

    #[test]
    fn static_namespace_and_legacy_name_placeholders() {
        let got = name_of(
            Some(&naming("synced", "$remoteName")),
            &object(Some("default"), "my-test-thing"),
            None,
        );
        assert_eq!(got.namespace.as_deref(), Some("synced"));
        assert_eq!(got.name, "my-test-thing");
    }

    #[test]
    fn legacy_placeholders_prefer_the_hash_forms() {
        let key = RemoteObjectKey::of(&object(Some("default"), "my-test-thing"), "c", None);
        // `$remoteNameHash` is upstream's crypto.ShortHash, the first 20 characters of
        // crypto.Hash; api-syncagent v0.7.0 internal/sync/syncer_test.go pins
        // crypto.Hash("my-test-thing") as the remote-object-name-hash label
        // "c346c8ceb5d104cc783d09b95e8ea7032c190948".
        assert_eq!(
            legacy(
                "$remoteClusterName-$remoteNamespaceHash-$remoteNamespace-$remoteNameHash-$remoteName",
                &key
            ),
            "c-7505d64a54e061b7acd5-default-c346c8ceb5d104cc783d-my-test-thing"
        );
    }

    #[test]
    fn go_templates_see_the_workspace_path() {
        let got = name_of(
            Some(&naming(
                "{{ .ClusterPath | replace \":\" \"-\" }}",
                "{{ .Object.metadata.name }}",
            )),
            &object(Some("default"), "thing"),
            Some("root:org:team"),
        );
        assert_eq!(got.namespace.as_deref(), Some("root-org-team"));
        assert_eq!(got.name, "thing");
    }

    #[test]
    fn template_output_is_trimmed() {
        let got = name_of(
            Some(&naming("", "  {{ .Object.metadata.name }}\n")),
            &object(Some("default"), "thing"),
            None,
        );
        assert_eq!(got.name, "thing");
    }

    #[test]
    fn cluster_scoped_local_types_get_no_namespace() {
        let got = local_name(
            &TemplateEngine::new(),
            None,
            &object(Some("a"), "b"),
            "c",
            None,
            false,
        )
        .unwrap();
        assert_eq!(got.namespace, None);
    }

    #[test]
    fn invalid_rendered_names_are_refused_before_sending() {
        let err = local_name(
            &TemplateEngine::new(),
            Some(&naming("", "Not_Valid")),
            &object(Some("a"), "b"),
            "c",
            None,
            true,
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::InvalidName { ref field, .. } if field == "spec.naming.name"),
            "{err}"
        );
    }

    #[test]
    fn namespace_names_longer_than_a_label_are_refused() {
        let long = "x".repeat(64);
        let err = local_name(
            &TemplateEngine::new(),
            Some(&naming(&long, "")),
            &object(Some("a"), "b"),
            "c",
            None,
            true,
        )
        .unwrap_err();
        assert!(err.to_string().contains("longer than 63"), "{err}");
    }

    #[test]
    fn template_errors_name_the_field_and_object() {
        let err = name_of_err("{{ .Object.metadata.name | nosuchfunc }}");
        assert!(err.contains("spec.naming.name"), "{err}");
        assert!(err.contains("testcluster|default/thing"), "{err}");
    }

    fn name_of_err(pattern: &str) -> String {
        local_name(
            &TemplateEngine::new(),
            Some(&naming("", pattern)),
            &object(Some("default"), "thing"),
            "testcluster",
            None,
            true,
        )
        .unwrap_err()
        .to_string()
    }
}
