//! Readiness gates: when an applied object is usable by the objects that depend on it.

use kube::api::DynamicObject;
use serde_json::Value;

use crate::client::gvk_of;

/// Whether an object is ready for its dependents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Ready, or a kind without a readiness gate.
    Ready,
    /// Not ready yet, with what is missing.
    NotReady(String),
}

impl Readiness {
    /// Whether this is [`Readiness::Ready`].
    pub fn is_ready(&self) -> bool {
        matches!(self, Readiness::Ready)
    }
}

/// The readiness of `obj` as seen in its status.
///
/// Gates: a CustomResourceDefinition is ready when its `Established` condition is `True`, a
/// Namespace when `status.phase` is `Active`, a kcp APIBinding when `status.phase` is `Bound`
/// (or its `Ready` condition is `True`). Every other kind is ready as soon as it exists.
pub fn readiness(obj: &DynamicObject) -> Readiness {
    let Ok(gvk) = gvk_of(obj) else {
        return Readiness::Ready;
    };
    match (gvk.group.as_str(), gvk.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if condition_true(&obj.data, "Established") {
                Readiness::Ready
            } else {
                Readiness::NotReady("CustomResourceDefinition is not Established".into())
            }
        }
        ("", "Namespace") => match obj.data.pointer("/status/phase").and_then(Value::as_str) {
            Some("Active") => Readiness::Ready,
            Some(phase) => Readiness::NotReady(format!("Namespace is {phase}, not Active")),
            None => Readiness::NotReady("Namespace has no status.phase yet".into()),
        },
        ("apis.kcp.io", "APIBinding") => {
            let phase = obj.data.pointer("/status/phase").and_then(Value::as_str);
            if phase == Some("Bound") || condition_true(&obj.data, "Ready") {
                Readiness::Ready
            } else {
                Readiness::NotReady(format!(
                    "APIBinding is {}, not Bound",
                    phase.unwrap_or("without a phase")
                ))
            }
        }
        _ => Readiness::Ready,
    }
}

/// Whether `obj` is a CustomResourceDefinition whose names are accepted but which is not
/// Established yet: the API server already serves its resources (it does from `NamesAccepted`
/// on) and waits only for its establishing controller, which turns the condition.
pub(crate) fn awaits_establishing(obj: &DynamicObject) -> bool {
    let is_crd = gvk_of(obj)
        .is_ok_and(|g| g.group == "apiextensions.k8s.io" && g.kind == "CustomResourceDefinition");
    is_crd
        && condition_true(&obj.data, "NamesAccepted")
        && !condition_true(&obj.data, "Established")
}

/// Whether the kind of `obj` has a readiness gate at all.
pub(crate) fn has_gate(obj: &DynamicObject) -> bool {
    matches!(
        gvk_of(obj)
            .map(|g| (g.group, g.kind))
            .as_ref()
            .map(|(g, k)| (g.as_str(), k.as_str())),
        Ok(("apiextensions.k8s.io", "CustomResourceDefinition"))
            | Ok(("", "Namespace"))
            | Ok(("apis.kcp.io", "APIBinding"))
    )
}

fn condition_true(data: &Value, condition: &str) -> bool {
    data.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(condition)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_crd_is_ready_once_established() {
        let mut crd = json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":"w.example.com"}});
        assert!(!readiness(&obj(crd.clone())).is_ready());
        crd["status"] = json!({"conditions":[{"type":"Established","status":"True"}]});
        assert!(readiness(&obj(crd)).is_ready());
    }

    #[test]
    fn a_crd_with_accepted_names_awaits_establishing_until_established() {
        let mut crd = json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":"w.example.com"}});
        assert!(!awaits_establishing(&obj(crd.clone())), "no conditions yet");
        crd["status"] = json!({"conditions":[{"type":"NamesAccepted","status":"True"},
            {"type":"Established","status":"False","reason":"Installing"}]});
        assert!(awaits_establishing(&obj(crd.clone())));
        crd["status"]["conditions"][1]["status"] = "True".into();
        assert!(!awaits_establishing(&obj(crd)));
    }

    #[test]
    fn a_terminating_namespace_is_not_ready() {
        let ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},
            "status":{"phase":"Terminating"}});
        assert_eq!(
            readiness(&obj(ns)),
            Readiness::NotReady("Namespace is Terminating, not Active".into())
        );
    }

    #[test]
    fn an_apibinding_is_ready_when_bound() {
        let mut b = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding",
            "metadata":{"name":"b"},"status":{"phase":"Binding"}});
        assert!(!readiness(&obj(b.clone())).is_ready());
        b["status"]["phase"] = "Bound".into();
        assert!(readiness(&obj(b)).is_ready());
    }

    #[test]
    fn kinds_without_a_gate_are_ready_when_they_exist() {
        let cm = obj(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}));
        assert!(readiness(&cm).is_ready());
        assert!(!has_gate(&cm));
    }
}
