//! WorkspaceTypes as kcp's admission and scheduler read them: the builtin types of `root`,
//! resolving a type reference, the types a type extends (its "aliases"), which parents and
//! children a type allows, the initializers a new workspace of a type carries, and the virtual
//! workspace URLs kcp publishes in a type's status.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{PATH_ANNOTATION, ROOT, workspace_types};
use crate::apiexport::conditions::{self, Condition};
use crate::store::State;

/// The initializer kcp's APIBinding initializer removes once a workspace's default APIBindings
/// exist; every workspace whose type (or a type it extends) has `defaultAPIBindings` gets it.
pub const APIBINDINGS_INITIALIZER: &str = "system:apibindings";

/// The condition kcp's WorkspaceType controller sets once the virtual workspace URLs are known.
pub const URLS_READY: &str = "VirtualWorkspaceURLsReady";

/// The WorkspaceTypes of `root` when kcp starts (with its default `workspace-types` battery),
/// as kcp's bootstrap writes them (with the schema's defaults): `root` (the type of the root
/// workspace), `universal` (extended by the others, with kcp's default APIBindings),
/// `organization` (under `root` only, with `universal` children), `team`, and `home` (no
/// parent allowed: kcp's home workspaces).
pub fn builtin() -> Vec<(&'static str, Value)> {
    let universal = json!({"name": "universal", "path": ROOT});
    vec![
        (
            "root",
            json!({"defaultChildWorkspaceType": {"name": "organization", "path": ROOT},
                "extend": {"with": [universal]}, "limitAllowedParents": {"none": true}}),
        ),
        (
            "universal",
            json!({"initializer": true, "defaultChildWorkspaceType": universal,
                "defaultAPIBindings": [{"path": ROOT, "export": "tenancy.kcp.io"},
                    {"path": ROOT, "export": "topology.kcp.io"}]}),
        ),
        (
            "organization",
            json!({"extend": {"with": [universal]}, "defaultChildWorkspaceType": universal,
                "limitAllowedChildren": {"types": [universal]},
                "limitAllowedParents": {"types": [{"name": "root", "path": ROOT}]}}),
        ),
        (
            "team",
            json!({"extend": {"with": [universal]}, "defaultChildWorkspaceType": universal,
                "limitAllowedParents": {"types": [{"name": "organization", "path": ROOT},
                    {"name": "team", "path": ROOT}]}}),
        ),
        (
            "home",
            json!({"extend": {"with": [universal]}, "defaultChildWorkspaceType": universal,
                "limitAllowedParents": {"none": true}}),
        ),
    ]
}

/// A WorkspaceType found in some logical cluster.
#[derive(Debug, Clone)]
pub struct Type {
    /// The logical cluster it is stored in.
    pub cluster: String,
    /// Its name.
    pub name: String,
    /// The canonical path of its workspace (its `kcp.io/path`).
    pub path: String,
    /// Its `spec`.
    pub spec: Value,
}

impl Type {
    /// `<canonical path>:<name>`, as kcp names a type in messages.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.path, self.name)
    }

    /// The initializer of this type: `<logical cluster>:<name>`.
    pub fn initializer(&self) -> String {
        super::initializer_of(&self.cluster, &self.name)
    }

    fn references(&self, pointer: &str) -> Vec<(String, String)> {
        self.spec
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| {
                let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                (text("path"), text("name"))
            })
            .collect()
    }

    fn flag(&self, pointer: &str) -> bool {
        self.spec.pointer(pointer).and_then(Value::as_bool) == Some(true)
    }
}

/// The WorkspaceType `name` in the workspace at `path` (a path or logical cluster name).
pub fn get(state: &State, path: &str, name: &str) -> Option<Type> {
    let cluster = state.resolve_cluster(path)?.to_string();
    let wt = state
        .lookup(&cluster, &workspace_types(), "", name)?
        .value()
        .ok()?;
    let canonical = wt
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PATH_ANNOTATION))
        .and_then(Value::as_str)
        .map(String::from)
        .or_else(|| state.clusters.get(&cluster).map(|c| c.path.clone()))
        .unwrap_or_else(|| cluster.clone());
    Some(Type {
        cluster,
        name: name.to_string(),
        path: canonical,
        spec: wt.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Resolves a type reference made in the workspace at `workspace_path`, as kcp does: with a
/// path, that workspace's type (an internal error when missing); without, the nearest
/// workspace up the path (then `root`) that has a type of that name.
pub fn resolve(
    state: &State,
    workspace_path: &str,
    ref_path: &str,
    name: &str,
) -> Result<Type, String> {
    if !ref_path.is_empty() {
        return get(state, ref_path, name).ok_or_else(|| {
            format!(
                "Internal error occurred: workspacetypes.tenancy.kcp.io \"{ref_path}:{name}\" not found"
            )
        });
    }
    let mut current = workspace_path.to_string();
    loop {
        if let Some(found) = get(state, &current, name) {
            return Ok(found);
        }
        match current.rsplit_once(':') {
            Some((parent, _)) => current = parent.to_string(),
            None if current != ROOT => current = ROOT.to_string(),
            None => return Err(format!("workspace type {name:?} cannot be resolved")),
        }
    }
}

/// The types `wt` extends, transitively, then `wt` itself, in kcp's order (each base before
/// the bases it extends itself).
pub fn aliases(state: &State, wt: &Type) -> Result<Vec<Type>, String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    extended(state, wt, &mut seen, &mut Vec::new(), &mut out)?;
    out.push(wt.clone());
    Ok(out)
}

fn extended(
    state: &State,
    wt: &Type,
    seen: &mut BTreeSet<String>,
    path: &mut Vec<String>,
    out: &mut Vec<Type>,
) -> Result<(), String> {
    let qualified = wt.qualified();
    seen.insert(qualified.clone());
    path.push(qualified);
    for (ref_path, ref_name) in wt.references("/extend/with") {
        let base = resolve(state, &wt.path, &ref_path, &ref_name)
            .map_err(|_| format!("unable to find inherited workspace type {ref_name}"))?;
        let base_name = base.qualified();
        if let Some(i) = path.iter().position(|p| *p == base_name) {
            return Err(format!(
                "circular dependency detected in workspace type {base_name}: {}",
                path[i..].join(" -> ")
            ));
        }
        if seen.contains(&base_name) {
            continue;
        }
        out.push(base.clone());
        extended(state, &base, seen, path, out)?;
    }
    path.pop();
    Ok(())
}

fn qualified_set(types: &[Type]) -> Vec<String> {
    let set: BTreeSet<String> = types.iter().map(Type::qualified).collect();
    set.into_iter().collect()
}

fn refs_set(refs: &[(String, String)]) -> Vec<String> {
    let set: BTreeSet<String> = refs.iter().map(|(p, n)| format!("{p}:{n}")).collect();
    set.into_iter().collect()
}

/// Go's `utilerrors.NewAggregate(errs).Error()`: one message as it is, more (without repeats)
/// in brackets, comma-separated.
pub fn aggregate(errors: &[String]) -> Option<String> {
    let mut unique: Vec<&String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [] => None,
        [one] => Some((*one).clone()),
        many => Some(format!(
            "[{}]",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Why kcp's admission refuses a child of `child_type` (with `child_aliases`) in a workspace
/// of `parent_type` (with `parent_aliases`): the parents the child's types allow are checked
/// first, then the children the parent's types allow.
pub fn placement_error(
    parent_aliases: &[Type],
    child_aliases: &[Type],
    parent_type: &str,
    child_type: &str,
) -> Option<String> {
    let implements = |aliases: &[Type], allowed: &[(String, String)]| {
        let allowed = refs_set(allowed);
        aliases.iter().any(|a| allowed.contains(&a.qualified()))
    };
    let list = |items: &[String]| format!("[{}]", items.join(" "));
    let mut errors = Vec::new();
    for child in child_aliases {
        if child.flag("/limitAllowedParents/none") {
            errors.push(format!(
                "workspace type {child_type} cannot have any parent"
            ));
            continue;
        }
        let allowed = child.references("/limitAllowedParents/types");
        if allowed.is_empty() || implements(parent_aliases, &allowed) {
            continue;
        }
        let extending = if child.qualified() != child_type {
            format!(" extends {}, which", child.qualified())
        } else {
            String::new()
        };
        errors.push(format!(
            "workspace type {child_type}{extending} only allows {} parent workspaces, but parent type {parent_type} only implements {}",
            list(&refs_set(&allowed)),
            list(&qualified_set(parent_aliases)),
        ));
    }
    if let Some(e) = aggregate(&errors) {
        return Some(e);
    }
    for parent in parent_aliases {
        if parent.flag("/limitAllowedChildren/none") {
            errors.push(format!(
                "workspace type {parent_type} cannot have any child"
            ));
            continue;
        }
        let allowed = parent.references("/limitAllowedChildren/types");
        if allowed.is_empty() || implements(child_aliases, &allowed) {
            continue;
        }
        let extending = if parent.qualified() != parent_type {
            format!(" extends {}, which", parent.qualified())
        } else {
            String::new()
        };
        errors.push(format!(
            "workspace type {parent_type}{extending} only allows {} child workspaces, but child type {child_type} only implements {}",
            list(&refs_set(&allowed)),
            list(&qualified_set(child_aliases)),
        ));
    }
    aggregate(&errors)
}

/// The initializers of a new workspace whose type has these aliases: each initializer type's,
/// then [`APIBINDINGS_INITIALIZER`] when one of them has default APIBindings.
pub fn initializers(aliases: &[Type]) -> Vec<String> {
    let mut out: Vec<String> = aliases
        .iter()
        .filter(|a| a.flag("/initializer"))
        .map(Type::initializer)
        .collect();
    let bindings = aliases.iter().any(|a| {
        a.spec
            .pointer("/defaultAPIBindings")
            .and_then(Value::as_array)
            .is_some_and(|b| !b.is_empty())
    });
    if bindings {
        out.push(APIBINDINGS_INITIALIZER.to_string());
    }
    out
}

/// The terminators a workspace of a type gets: each of its aliases (the type and those it
/// extends) with `terminator: true`, named as initializers are.
pub fn terminators(aliases: &[Type]) -> Vec<String> {
    aliases
        .iter()
        .filter(|a| a.flag("/terminator"))
        .map(Type::initializer)
        .collect()
}

/// The status kcp's WorkspaceType controller writes: an initializing and a terminating virtual
/// workspace URL per shard, [`URLS_READY`] and the `Ready` summary (kept times when unchanged).
pub fn status(state: &State, cluster: &str, wt: &Value) -> Value {
    let name = wt
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let own = super::initializer_of(cluster, name);
    let mut urls = Vec::new();
    for shard in &state.shard_urls {
        urls.push(json!({"type": "initializing",
            "url": format!("{shard}/services/initializingworkspaces/{own}")}));
        urls.push(json!({"type": "terminating",
            "url": format!("{shard}/services/terminatingworkspaces/{own}")}));
    }
    let mut with_status = json!({
        "status": {"conditions": wt.pointer("/status/conditions").cloned().unwrap_or_else(|| json!([]))}
    });
    conditions::set(&mut with_status, Condition::ok(URLS_READY));
    conditions::set_summary(&mut with_status, None);
    json!({"conditions": with_status["status"]["conditions"], "virtualWorkspaces": urls})
}
