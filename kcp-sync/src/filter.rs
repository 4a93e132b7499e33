//! `spec.filter`: which kcp objects a PublishedResource handles (upstream §4.2).
//!
//! `filter.resource` is matched against the object's labels and `filter.namespace` against
//! the labels of its kcp Namespace. An absent selector matches everything, as does an empty
//! one. Better than upstream: a cluster-scoped object with a namespace filter is evaluated
//! against an empty label set instead of crashing.

use serde_json::{Map, Value};

use crate::api::{LabelSelector, PublishedResource};
use crate::error::{Error, Result};

/// Whether `labels` satisfy `selector` (`matchLabels` and every `matchExpressions` entry).
/// An unknown operator is an error naming `field`.
pub fn matches(
    owner: &str,
    field: &str,
    selector: &LabelSelector,
    labels: Option<&Map<String, Value>>,
) -> Result<bool> {
    let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    if let Some(match_labels) = &selector.match_labels
        && match_labels.iter().any(|(k, v)| get(k) != Some(v.as_str()))
    {
        return Ok(false);
    }
    for (i, req) in selector.match_expressions.iter().flatten().enumerate() {
        let values = req.values.as_deref().unwrap_or_default();
        let current = get(&req.key);
        let ok = match req.operator.as_str() {
            "In" => current.is_some_and(|c| values.iter().any(|v| v == c)),
            "NotIn" => current.is_none_or(|c| values.iter().all(|v| v != c)),
            "Exists" => current.is_some(),
            "DoesNotExist" => current.is_none(),
            other => {
                return Err(Error::InvalidSpec {
                    published_resource: owner.to_owned(),
                    field: format!("{field}.matchExpressions[{i}].operator"),
                    reason: format!("unknown operator {other:?} (In, NotIn, Exists, DoesNotExist)"),
                });
            }
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn labels_of(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.get("labels")?.as_object()
}

/// Whether the PublishedResource handles `object`, given its kcp Namespace (`None` for
/// cluster-scoped objects or when no namespace filter is set).
pub fn accepts(pr: &PublishedResource, object: &Value, namespace: Option<&Value>) -> Result<bool> {
    let Some(filter) = &pr.spec.filter else {
        return Ok(true);
    };
    if let Some(selector) = &filter.resource
        && !matches(
            pr.name(),
            "spec.filter.resource",
            selector,
            labels_of(object),
        )?
    {
        return Ok(false);
    }
    if let Some(selector) = &filter.namespace {
        let labels = namespace.and_then(labels_of);
        return matches(pr.name(), "spec.filter.namespace", selector, labels);
    }
    Ok(true)
}

/// Whether a namespace filter is set (the reconciler then reads the object's Namespace).
pub fn needs_namespace(pr: &PublishedResource) -> bool {
    pr.spec
        .filter
        .as_ref()
        .is_some_and(|f| f.namespace.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{LabelSelectorRequirement, PublishedResourceSpec, ResourceFilter};
    use serde_json::json;

    fn selector(labels: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> LabelSelector {
        LabelSelector {
            match_labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            match_expressions: (!exprs.is_empty()).then(|| {
                exprs
                    .iter()
                    .map(|(k, op, vs)| LabelSelectorRequirement {
                        key: k.to_string(),
                        operator: op.to_string(),
                        values: Some(vs.iter().map(|v| v.to_string()).collect()),
                    })
                    .collect()
            }),
        }
    }

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "x", "labels": labels}})
    }

    fn pr(resource: Option<LabelSelector>, namespace: Option<LabelSelector>) -> PublishedResource {
        PublishedResource::new(
            "pr",
            PublishedResourceSpec {
                filter: Some(ResourceFilter {
                    namespace,
                    resource,
                }),
                ..Default::default()
            },
        )
    }

    #[test]
    fn no_filter_accepts_everything() {
        let pr = PublishedResource::new("pr", PublishedResourceSpec::default());
        assert!(accepts(&pr, &obj(json!({})), None).unwrap());
    }

    #[test]
    fn resource_filter_matches_object_labels() {
        let pr = pr(Some(selector(&[], &[("sync", "In", &["yes"])])), None);
        assert!(accepts(&pr, &obj(json!({"sync": "yes"})), None).unwrap());
        assert!(!accepts(&pr, &obj(json!({"sync": "no"})), None).unwrap());
        assert!(!accepts(&pr, &obj(json!({})), None).unwrap());
    }

    #[test]
    fn namespace_filter_matches_namespace_labels() {
        let pr = pr(None, Some(selector(&[("tier", "prod")], &[])));
        let ns = json!({"metadata": {"name": "n", "labels": {"tier": "prod"}}});
        assert!(accepts(&pr, &obj(json!({})), Some(&ns)).unwrap());
        let other = json!({"metadata": {"name": "n", "labels": {"tier": "dev"}}});
        assert!(!accepts(&pr, &obj(json!({})), Some(&other)).unwrap());
    }

    #[test]
    fn cluster_scoped_objects_with_a_namespace_filter_see_no_labels() {
        let pr = pr(None, Some(selector(&[("tier", "prod")], &[])));
        assert!(!accepts(&pr, &obj(json!({})), None).unwrap());
    }

    #[test]
    fn not_in_and_does_not_exist_accept_missing_labels() {
        let s = selector(&[], &[("a", "NotIn", &["x"]), ("b", "DoesNotExist", &[])]);
        assert!(matches("pr", "f", &s, None).unwrap());
    }

    #[test]
    fn unknown_operators_are_an_error_naming_the_field() {
        let s = selector(&[], &[("a", "Near", &[])]);
        let err = matches("pr", "spec.filter.resource", &s, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.filter.resource.matchExpressions[0].operator"),
            "{err}"
        );
    }
}
