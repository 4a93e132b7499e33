//! Which InitTargets act: the pure rule behind the agent's supervisor.
//!
//! InitTargets are grouped by the WorkspaceType they name, identified by the logical cluster
//! the type lives in and its name ([`TypeIdentity`]), so the same type named by path
//! (`root:org`), by logical cluster name, or by an empty path meaning the config workspace is
//! one type. In a group of more than one, every member gets a `Conflict` and only the oldest
//! (then the first by name) acts.

use std::collections::BTreeMap;

use crate::api::InitTarget;

/// The WorkspaceType an InitTarget names, as written (an empty path means the config
/// workspace).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeRef {
    /// Workspace path or logical cluster name of the type's workspace.
    pub path: String,
    /// The WorkspaceType's name.
    pub name: String,
}

impl TypeRef {
    /// The type `target` names, with the config workspace filled in for an empty path.
    pub fn of(target: &InitTarget, config_workspace: &str) -> Self {
        let r = &target.spec.workspace_type_ref;
        TypeRef {
            path: if r.path.is_empty() {
                config_workspace.to_string()
            } else {
                r.path.clone()
            },
            name: r.name.clone(),
        }
    }
}

/// A WorkspaceType's identity: the logical cluster it lives in, and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeIdentity {
    /// Logical cluster name (or, while unresolved, the path as written).
    pub cluster: String,
    /// The WorkspaceType's name.
    pub name: String,
}

/// The targets that act, and the conflict message of each target in a conflict.
#[derive(Debug, Default, PartialEq)]
pub struct TargetPlan {
    /// Acting targets by name.
    pub active: BTreeMap<String, InitTarget>,
    /// Conflict messages by target name.
    pub conflicts: BTreeMap<String, String>,
}

/// Decides which of `targets` act, given each one's type identity.
pub fn plan_targets<'a>(
    targets: impl IntoIterator<Item = &'a InitTarget>,
    identity: impl Fn(&InitTarget) -> TypeIdentity,
) -> TargetPlan {
    let mut groups: BTreeMap<TypeIdentity, Vec<&InitTarget>> = BTreeMap::new();
    for target in targets {
        if target.metadata.deletion_timestamp.is_none() {
            groups.entry(identity(target)).or_default().push(target);
        }
    }
    let mut plan = TargetPlan::default();
    for (id, mut members) in groups {
        members.sort_by(|a, b| {
            let created = |t: &InitTarget| t.metadata.creation_timestamp.clone();
            created(a)
                .cmp(&created(b))
                .then(a.metadata.name.cmp(&b.metadata.name))
        });
        let names: Vec<&str> = members
            .iter()
            .filter_map(|t| t.metadata.name.as_deref())
            .collect();
        if names.len() > 1 {
            for name in &names {
                let others: Vec<&&str> = names.iter().filter(|n| *n != name).collect();
                let message = format!(
                    "InitTargets {others:?} also initialize WorkspaceType {:?} of logical cluster {:?}; only the oldest, {:?}, acts",
                    id.name, id.cluster, names[0]
                );
                plan.conflicts.insert(name.to_string(), message);
            }
        }
        if let Some(first) = members.first()
            && let Some(name) = &first.metadata.name
        {
            plan.active.insert(name.clone(), (*first).clone());
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str, path: &str, type_name: &str, created: i64) -> InitTarget {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "initialization.kcp.io/v1alpha1", "kind": "InitTarget",
            "metadata": {"name": name, "creationTimestamp": jiff::Timestamp::from_second(created).unwrap().to_string()},
            "spec": {"workspaceTypeRef": {"path": path, "name": type_name}, "sources": []},
        }))
        .unwrap()
    }

    /// Resolves `root:org` and `1abc` to the same logical cluster, as kcp would.
    fn resolve(t: &InitTarget) -> TypeIdentity {
        let r = TypeRef::of(t, "root:org");
        let cluster = if r.path == "root:org" {
            "1abc".to_string()
        } else {
            r.path
        };
        TypeIdentity {
            cluster,
            name: r.name,
        }
    }

    #[test]
    fn targets_of_different_types_all_act() {
        let ts = [
            target("a", "root:org", "x", 1),
            target("b", "root:org", "y", 2),
        ];
        let plan = plan_targets(&ts, resolve);
        assert_eq!(plan.active.len(), 2);
        assert!(plan.conflicts.is_empty());
    }

    #[test]
    fn a_type_named_by_path_and_by_cluster_name_is_one_type() {
        let ts = [target("a", "root:org", "x", 1), target("b", "1abc", "x", 2)];
        let plan = plan_targets(&ts, resolve);
        assert_eq!(plan.active.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(plan.conflicts.len(), 2);
    }

    #[test]
    fn an_empty_path_means_the_config_workspace() {
        let ts = [target("a", "", "x", 1), target("b", "root:org", "x", 2)];
        let plan = plan_targets(&ts, resolve);
        assert_eq!(plan.conflicts.len(), 2);
    }

    #[test]
    fn the_oldest_of_a_conflict_acts_and_the_message_names_the_others() {
        let ts = [
            target("young", "root:org", "x", 5),
            target("old", "root:org", "x", 1),
        ];
        let plan = plan_targets(&ts, resolve);
        assert_eq!(plan.active.keys().collect::<Vec<_>>(), vec!["old"]);
        assert!(
            plan.conflicts["old"].contains("[\"young\"]"),
            "{}",
            plan.conflicts["old"]
        );
        assert!(plan.conflicts["young"].contains("only the oldest, \"old\""));
    }
}
