//! Pure rules over the objects rendered for one cluster, before they are applied.
//!
//! - [`first_source_wins`]: two sources rendering the same object (kind, namespace, name) would
//!   otherwise race under one field manager; the first source's object is kept, and a later
//!   source's different rendering is reported as a [`Duplicate`].
//! - [`split_generated`]: objects with only `metadata.generateName` cannot be server-side
//!   applied (apply needs a name); they are created, exactly once per cluster, identified by a
//!   label whose value hashes the InitTarget and the rendered object ([`GENERATED_ID_LABEL`]).

use std::collections::BTreeMap;

use kcp_core::kube::api::DynamicObject;
use sha2::{Digest, Sha256};

/// The label identifying an object the agent created from a `generateName`-only template, so a
/// retry finds it instead of creating another.
pub const GENERATED_ID_LABEL: &str = "initialization.kcp-rs.io/generated-id";

/// An object rendered by two sources with different content; the first source's won.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The object, as `apiVersion Kind namespace/name`.
    pub object: String,
    /// The source whose object was applied.
    pub kept: String,
    /// The source whose different object was dropped.
    pub dropped: String,
}

impl std::fmt::Display for Duplicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is rendered differently by InitTemplates {:?} and {:?}; {:?} wins",
            self.object, self.kept, self.dropped, self.kept
        )
    }
}

fn identity(obj: &DynamicObject) -> Option<String> {
    let types = obj.types.as_ref()?;
    let name = obj.metadata.name.as_deref()?;
    Some(format!(
        "{} {} {}/{}",
        types.api_version,
        types.kind,
        obj.metadata.namespace.as_deref().unwrap_or_default(),
        name
    ))
}

/// Keeps the first occurrence of each named object across sources (given in source order as
/// `(source name, objects)`); reports later, different renderings. Identical repeats are
/// dropped silently.
pub fn first_source_wins(
    sources: Vec<(String, Vec<DynamicObject>)>,
) -> (Vec<DynamicObject>, Vec<Duplicate>) {
    let mut seen: BTreeMap<String, (String, serde_json::Value)> = BTreeMap::new();
    let mut kept = Vec::new();
    let mut duplicates = Vec::new();
    for (source, objects) in sources {
        for obj in objects {
            let Some(id) = identity(&obj) else {
                kept.push(obj);
                continue;
            };
            let content = serde_json::to_value(&obj).unwrap_or_default();
            match seen.get(&id) {
                Some((first, first_content)) => {
                    if *first_content != content {
                        duplicates.push(Duplicate {
                            object: id,
                            kept: first.clone(),
                            dropped: source.clone(),
                        });
                    }
                }
                None => {
                    seen.insert(id, (source.clone(), content));
                    kept.push(obj);
                }
            }
        }
    }
    (kept, duplicates)
}

/// Splits off the objects that have a `generateName` and no name, labelling each with its
/// [`GENERATED_ID_LABEL`] (a hash of `target` and the rendered object).
pub fn split_generated(
    target: &str,
    objects: Vec<DynamicObject>,
) -> (Vec<DynamicObject>, Vec<DynamicObject>) {
    let (generated, named): (Vec<_>, Vec<_>) = objects.into_iter().partition(|o| {
        o.metadata.name.as_deref().is_none_or(str::is_empty)
            && o.metadata
                .generate_name
                .as_deref()
                .is_some_and(|g| !g.is_empty())
    });
    let generated = generated
        .into_iter()
        .map(|mut obj| {
            let mut hash = Sha256::new();
            hash.update(target.as_bytes());
            hash.update([0]);
            hash.update(serde_json::to_vec(&obj).unwrap_or_default());
            let id = hex::encode(hash.finalize());
            obj.metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert(GENERATED_ID_LABEL.to_string(), id[..40].to_string());
            obj
        })
        .collect();
    (named, generated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str, value: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": value},
        }))
        .unwrap()
    }

    fn generated(prefix: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": prefix, "namespace": "default"},
        }))
        .unwrap()
    }

    #[test]
    fn the_first_source_wins_a_differing_duplicate_and_it_is_reported() {
        let (kept, duplicates) = first_source_wins(vec![
            ("a".into(), vec![cm("x", "1")]),
            ("b".into(), vec![cm("x", "2"), cm("y", "3")]),
        ]);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].data["data"]["k"], "1");
        assert_eq!(duplicates.len(), 1);
        assert_eq!(
            (duplicates[0].kept.as_str(), duplicates[0].dropped.as_str()),
            ("a", "b")
        );
        assert!(duplicates[0].to_string().contains("v1 ConfigMap default/x"));
    }

    #[test]
    fn identical_repeats_are_dropped_without_a_report() {
        let (kept, duplicates) = first_source_wins(vec![
            ("a".into(), vec![cm("x", "1")]),
            ("b".into(), vec![cm("x", "1")]),
        ]);
        assert_eq!(kept.len(), 1);
        assert!(duplicates.is_empty());
    }

    #[test]
    fn generate_name_objects_are_split_off_with_a_stable_identity() {
        let (named, gen1) = split_generated("t", vec![cm("x", "1"), generated("job-")]);
        let (_, gen2) = split_generated("t", vec![generated("job-")]);
        assert_eq!(named.len(), 1);
        assert_eq!(gen1.len(), 1);
        let id =
            |o: &DynamicObject| o.metadata.labels.as_ref().unwrap()[GENERATED_ID_LABEL].clone();
        assert_eq!(
            id(&gen1[0]),
            id(&gen2[0]),
            "a retry computes the same identity"
        );
        let (_, other) = split_generated("other-target", vec![generated("job-")]);
        assert_ne!(id(&gen1[0]), id(&other[0]));
    }
}
