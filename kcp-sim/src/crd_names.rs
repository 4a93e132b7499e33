//! kube's naming controller: which of the names a CustomResourceDefinition asks for it may
//! have, given the names already held in its group.
//!
//! The names held are the accepted names (plural, singular, short names; kind and list kind) of
//! every CRD of the group in the cluster, and in kcp also those of the resources bound in the
//! workspace by APIBindings: kcp's CRD lister shows the bound CRDs beside the workspace's own.
//! A name the CRD already accepted stays its own; another one already held conflicts, and the
//! conflict checked last gives the `NamesAccepted` condition its reason (`PluralConflict`,
//! `SingularConflict`, `ShortNamesConflict`, `KindConflict`, `ListKindConflict`). A CRD whose
//! names are not all accepted is not `Established` and serves nothing (seen on kcp v0.30.0 for
//! a CRD of a bound resource: conformance case
//! `kcp-api-lifecycle/a-crd-of-a-bound-resource-is-not-established`).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::apiexport;
use crate::object_meta::strings_at;
use crate::resource::{Flavor, GroupResource};
use crate::store::State;

/// The naming controller's verdict on a CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct Naming {
    /// `status.acceptedNames`.
    pub accepted: Value,
    /// The reason and message of a conflict, or `None` when every name is accepted.
    pub conflict: Option<(&'static str, String)>,
}

/// The names held in a group: resources (plural, singular, short names) and kinds (kind, list
/// kind).
#[derive(Debug, Default)]
struct Held {
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

impl Held {
    fn add(&mut self, names: &Value) {
        let text = |key: &str| names.get(key).and_then(Value::as_str).unwrap_or_default();
        self.resources.insert(text("plural").to_string());
        self.resources.insert(text("singular").to_string());
        self.resources.extend(strings_at(names, "/shortNames"));
        self.kinds.insert(text("kind").to_string());
        self.kinds.insert(text("listKind").to_string());
    }
}

/// The names held in `group` in `cluster`: every CRD's accepted names, and in kcp the names of
/// the resources bound there.
fn held(state: &State, cluster: &str, group: &str) -> Held {
    let mut held = Held::default();
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    for crd in apiexport::objects_of(state, cluster, &crds) {
        if crd.pointer("/spec/group").and_then(Value::as_str) == Some(group) {
            held.add(crd.pointer("/status/acceptedNames").unwrap_or(&Value::Null));
        }
    }
    if state.flavor == Flavor::Kcp {
        for names in bound_names(state, cluster, group) {
            held.add(&names);
        }
    }
    held
}

/// The `spec.names` of the schemas of the resources of `group` bound in `cluster`.
fn bound_names(state: &State, cluster: &str, group: &str) -> Vec<Value> {
    let mut names = Vec::new();
    for binding in apiexport::objects_of(state, cluster, &apiexport::bindings()) {
        let export_cluster = binding
            .pointer("/status/apiExportClusterName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let bound = binding
            .pointer("/status/boundResources")
            .and_then(Value::as_array);
        for entry in bound.into_iter().flatten() {
            if entry.get("group").and_then(Value::as_str) != Some(group) {
                continue;
            }
            let schema_name = entry
                .pointer("/schema/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(schema) = apiexport::schema::load(state, export_cluster, schema_name)
                && let Some(spec_names) = schema.pointer("/spec/names")
            {
                names.push(spec_names.clone());
            }
        }
    }
    names
}

/// kube's `equalToAcceptedOrFresh`: a name is the CRD's if it accepted it already or nobody
/// holds it.
fn own_or_fresh(requested: &str, accepted: &str, held: &BTreeSet<String>) -> Result<(), String> {
    if requested == accepted || !held.contains(requested) {
        return Ok(());
    }
    Err(format!("{requested:?} is already in use"))
}

/// Whether `gr` is bound in `cluster` by one of its APIBindings.
pub fn bound_here(state: &State, cluster: &str, gr: &GroupResource) -> bool {
    apiexport::objects_of(state, cluster, &apiexport::bindings())
        .iter()
        .filter_map(|b| {
            b.pointer("/status/boundResources")
                .and_then(Value::as_array)
        })
        .flatten()
        .any(|entry| {
            entry.get("group").and_then(Value::as_str) == Some(gr.group.as_str())
                && entry.get("resource").and_then(Value::as_str) == Some(gr.resource.as_str())
        })
}

/// The names `crd` (as stored, with its current `status.acceptedNames`) may have in `cluster`.
pub fn naming(state: &State, cluster: &str, crd: &Value) -> Naming {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let held = held(state, cluster, group);
    let requested = crd.pointer("/spec/names").unwrap_or(&Value::Null);
    let accepted = crd.pointer("/status/acceptedNames").unwrap_or(&Value::Null);
    let text = |names: &Value, key: &str| {
        names
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut new = Map::new();
    let mut conflict = None;
    for (key, reason, pool) in [
        ("plural", "PluralConflict", &held.resources),
        ("singular", "SingularConflict", &held.resources),
    ] {
        match own_or_fresh(&text(requested, key), &text(accepted, key), pool) {
            Ok(()) => new.insert(key.into(), json!(text(requested, key))),
            Err(message) => {
                conflict = Some((reason, message));
                new.insert(key.into(), json!(text(accepted, key)))
            }
        };
    }
    let short_names = short_names(requested, accepted, &held.resources);
    match short_names {
        Ok(names) => new.insert("shortNames".into(), json!(names)),
        Err(message) => {
            conflict = Some(("ShortNamesConflict", message));
            new.insert(
                "shortNames".into(),
                json!(strings_at(accepted, "/shortNames")),
            )
        }
    };
    for (key, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match own_or_fresh(&text(requested, key), &text(accepted, key), &held.kinds) {
            Ok(()) => new.insert(key.into(), json!(text(requested, key))),
            Err(message) => {
                conflict = Some((reason, message));
                new.insert(key.into(), json!(text(accepted, key)))
            }
        };
    }
    new.insert(
        "categories".into(),
        json!(strings_at(requested, "/categories")),
    );
    Naming {
        accepted: go_names(new),
        conflict,
    }
}

/// The requested short names, or the conflicts of those not already the CRD's (kube aggregates
/// them: one message alone, several as `[a, b]`).
fn short_names(
    requested: &Value,
    accepted: &Value,
    held: &BTreeSet<String>,
) -> Result<Vec<String>, String> {
    let wanted = strings_at(requested, "/shortNames");
    let own = strings_at(accepted, "/shortNames");
    if wanted == own {
        return Ok(wanted);
    }
    let errors: Vec<String> = wanted
        .iter()
        .filter(|name| !own.contains(name))
        .filter_map(|name| own_or_fresh(name, "", held).err())
        .collect();
    match errors.as_slice() {
        [] => Ok(wanted),
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
    }
}

/// `CustomResourceDefinitionNames` as Go writes it: `plural` and `kind` always, the other
/// fields only when not empty.
fn go_names(names: Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ] {
        let value = names.get(key).cloned().unwrap_or(Value::Null);
        let empty = match &value {
            Value::String(s) => s.is_empty(),
            Value::Array(items) => items.is_empty(),
            _ => true,
        };
        if !empty || matches!(key, "plural" | "kind") {
            out.insert(key.into(), if empty { json!("") } else { value });
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn holding(resources: &[&str], kinds: &[&str]) -> Held {
        Held {
            resources: resources.iter().map(|s| s.to_string()).collect(),
            kinds: kinds.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_name_the_crd_already_accepted_is_its_own_even_when_held() {
        let held = holding(&["widgets"], &[]);
        assert_eq!(own_or_fresh("widgets", "widgets", &held.resources), Ok(()));
        assert_eq!(
            own_or_fresh("widgets", "", &held.resources),
            Err("\"widgets\" is already in use".to_string())
        );
    }

    #[test]
    fn several_short_name_conflicts_are_aggregated_as_kube_aggregates_errors() {
        let held = holding(&["wd", "wg"], &[]);
        let requested = json!({"shortNames": ["wd", "wg", "w"]});
        assert_eq!(
            short_names(&requested, &json!({}), &held.resources),
            Err("[\"wd\" is already in use, \"wg\" is already in use]".to_string())
        );
    }

    #[test]
    fn accepted_names_keep_plural_and_kind_when_empty_and_drop_other_empty_fields() {
        let mut names = Map::new();
        names.insert("plural".into(), json!(""));
        names.insert("singular".into(), json!(""));
        names.insert("shortNames".into(), json!([]));
        names.insert("kind".into(), json!(""));
        names.insert("categories".into(), json!(["all"]));
        assert_eq!(
            go_names(names),
            json!({"plural": "", "kind": "", "categories": ["all"]})
        );
    }
}
