//! RBAC escalation prevention, as kube-apiserver's RBAC storage does it: nobody writes a Role,
//! ClusterRole, RoleBinding or ClusterRoleBinding that would give someone a permission the
//! writer does not hold.
//!
//! - A Role or ClusterRole passes when its writer may `escalate` it, or holds every permission
//!   of its rules (in the role's namespace, or cluster-wide for a ClusterRole). A ClusterRole
//!   with an `aggregationRule` asks for every permission (`*` on everything and every URL).
//! - A binding passes when its writer may `bind` the role it references (checked in the
//!   binding's namespace), or holds every permission of that role, which must then exist (a
//!   missing one is a 404 naming the binding's resource, as kube's is).
//! - `system:masters` passes always; so does an update that changes only what the garbage
//!   collector changes (owner references and finalizers).
//!
//! The check comes before the kind's validation, and its refusal is kube's Forbidden, listing
//! the permissions the writer lacks as kube compacts and words them
//! (`{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`, one a line, sorted).
//!
//! Only writes of an impersonated user are checked: kcp-sim's own client is the admin.

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

use crate::authorization::{self, Attributes, User};
use crate::resource::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// One write of an RBAC object: where, by whom, and the object before (`None` on create) and
/// after.
pub struct RbacWrite<'a> {
    /// The cluster written in.
    pub cluster: &'a str,
    /// The kind written.
    pub rt: &'a ResourceType,
    /// The object's namespace (`""` for a cluster-scoped kind).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The stored object an update replaces.
    pub old: Option<&'a Value>,
    /// The object to store.
    pub new: &'a Value,
}

impl<'a> RbacWrite<'a> {
    /// The write of `new` as `namespace`/`name` of kind `rt` in `cluster`, replacing `old`.
    pub fn new(
        cluster: &'a str,
        rt: &'a ResourceType,
        namespace: &'a str,
        name: &'a str,
        old: Option<&'a Value>,
        new: &'a Value,
    ) -> Self {
        RbacWrite {
            cluster,
            rt,
            namespace,
            name,
            old,
            new,
        }
    }
}

/// Refuses `write` when its `writer` would grant what it does not hold. Writes of other kinds,
/// and of nobody impersonated (`None`), pass.
pub fn check(state: &State, write: &RbacWrite<'_>, writer: Option<&User>) -> ApiResult<()> {
    let Some(writer) = writer else {
        return Ok(());
    };
    if write.rt.group != RBAC_GROUP || writer.is_admin() {
        return Ok(());
    }
    if write
        .old
        .is_some_and(|old| changes_only_collected_fields(old, write.new))
    {
        return Ok(());
    }
    let refused = match write.rt.kind.as_str() {
        "Role" | "ClusterRole" => role_refusal(state, write, writer),
        "RoleBinding" | "ClusterRoleBinding" => binding_refusal(state, write, writer)?,
        _ => None,
    };
    match refused {
        None => Ok(()),
        Some(reason) => Err(ApiError::forbidden(format!(
            "{}.{RBAC_GROUP} \"{}\" is forbidden: {reason}",
            write.rt.plural, write.name
        ))
        .about(RBAC_GROUP, &write.rt.plural, write.name)),
    }
}

/// Why a Role or ClusterRole may not be written, `None` when it may.
fn role_refusal(state: &State, write: &RbacWrite<'_>, writer: &User) -> Option<String> {
    if may(
        state,
        write,
        writer,
        "escalate",
        &write.rt.plural,
        write.name,
    ) {
        return None;
    }
    let rules = rules_of(write.new);
    if let Err(missing) = confirm_no_escalation(state, write, writer, &rules) {
        return Some(missing);
    }
    let aggregates = write
        .new
        .get("aggregationRule")
        .is_some_and(|r| !r.is_null());
    let aggregation_changed =
        write.old.and_then(|old| old.get("aggregationRule")) != write.new.get("aggregationRule");
    if aggregates && aggregation_changed {
        let everything = vec![
            rule(&["*"], &["*"], &[], &["*"]),
            PolicyRule {
                non_resource_urls: Some(vec!["*".into()]),
                verbs: vec!["*".into()],
                ..PolicyRule::default()
            },
        ];
        if confirm_no_escalation(state, write, writer, &everything).is_err() {
            return Some("must have cluster-admin privileges to use the aggregationRule".into());
        }
    }
    None
}

/// Why a binding may not be written, `None` when it may; the error of a missing role.
fn binding_refusal(
    state: &State,
    write: &RbacWrite<'_>,
    writer: &User,
) -> ApiResult<Option<String>> {
    let text = |pointer: &str| {
        write
            .new
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (kind, role_name) = (text("/roleRef/kind"), text("/roleRef/name"));
    let role_plural = match kind {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => return Ok(None),
    };
    if text("/roleRef/apiGroup") == RBAC_GROUP
        && may(state, write, writer, "bind", role_plural, role_name)
    {
        return Ok(None);
    }
    let role_namespace = if kind == "Role" { write.namespace } else { "" };
    let role = state
        .lookup(
            write.cluster,
            &crate::resource::GroupResource::new(RBAC_GROUP, role_plural),
            role_namespace,
            role_name,
        )
        // kube's role getter names the binding's resource with the role's name
        // (`rolebindings.rbac.authorization.k8s.io "missing" not found`; seen on v1.34.2).
        .ok_or_else(|| ApiError::not_found(RBAC_GROUP, &write.rt.plural, role_name))?
        .value()?;
    Ok(confirm_no_escalation(state, write, writer, &rules_of(&role)).err())
}

/// Whether RBAC lets `writer` do `verb` on the named role in the written object's namespace.
fn may(
    state: &State,
    write: &RbacWrite<'_>,
    writer: &User,
    verb: &str,
    plural: &str,
    name: &str,
) -> bool {
    let attrs = Attributes {
        verb: verb.into(),
        group: RBAC_GROUP.into(),
        resource: plural.into(),
        namespace: write.namespace.into(),
        name: name.into(),
        ..Attributes::default()
    };
    authorization::allows(state, write.cluster, writer, &attrs)
}

/// kube's `ConfirmNoEscalation`: `Err` with the refusal's words when `writer` does not hold
/// every permission of `rules` where the object is written.
fn confirm_no_escalation(
    state: &State,
    write: &RbacWrite<'_>,
    writer: &User,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let held = held_rules(state, write.cluster, writer, write.namespace);
    let missing: Vec<PolicyRule> = rules
        .iter()
        .flat_map(breakdown)
        .filter(|wanted| !held.iter().any(|owned| covers(owned, wanted)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let described: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
    Err(format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        writer.name,
        crate::go_quote::quoted_list(&writer.groups),
        described.into_iter().collect::<Vec<_>>().join("\n")
    ))
}

/// Every rule `user` holds in `namespace` ([`authorization::rules_for`]), typed.
fn held_rules(state: &State, cluster: &str, user: &User, namespace: &str) -> Vec<PolicyRule> {
    authorization::rules_for(state, cluster, user, namespace)
        .into_iter()
        .filter_map(|rule| serde_json::from_value(rule).ok())
        .collect()
}

/// A role's rules, typed; a rule that does not read as one is left out (validation refuses it
/// after this check).
fn rules_of(role: &Value) -> Vec<PolicyRule> {
    authorization::rules_of(role)
        .into_iter()
        .filter_map(|rule| serde_json::from_value(rule).ok())
        .collect()
}

fn rule(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> PolicyRule {
    let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let optional = |items: &[&str]| (!items.is_empty()).then(|| owned(items));
    PolicyRule {
        api_groups: optional(groups),
        resources: optional(resources),
        resource_names: optional(names),
        non_resource_urls: None,
        verbs: owned(verbs),
    }
}

fn items(list: &Option<Vec<String>>) -> &[String] {
    list.as_deref().unwrap_or_default()
}

/// kube's `BreakdownRule`: one rule per group, resource, verb and resource name, then one per
/// non-resource URL and verb.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |item: &String| Some(vec![item.clone()]);
    let mut atoms = Vec::new();
    for group in items(&rule.api_groups) {
        for resource in items(&rule.resources) {
            for verb in &rule.verbs {
                let names: Vec<Option<Vec<String>>> = match items(&rule.resource_names) {
                    [] => vec![None],
                    names => names.iter().map(one).collect(),
                };
                atoms.extend(names.into_iter().map(|resource_names| PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    resource_names,
                    non_resource_urls: None,
                    verbs: vec![verb.clone()],
                }));
            }
        }
    }
    for url in items(&rule.non_resource_urls) {
        atoms.extend(rule.verbs.iter().map(|verb| PolicyRule {
            non_resource_urls: one(url),
            verbs: vec![verb.clone()],
            ..PolicyRule::default()
        }));
    }
    atoms
}

/// kube's `ruleCovers`: whether the held rule `owned` grants all of `wanted`.
fn covers(owned: &PolicyRule, wanted: &PolicyRule) -> bool {
    let star_or_all = |set: &[String], wanted: &[String]| {
        set.iter().any(|s| s == "*") || wanted.iter().all(|w| set.contains(w))
    };
    let names = match (items(&owned.resource_names), items(&wanted.resource_names)) {
        (owned, []) => owned.is_empty(),
        (owned, wanted) => owned.is_empty() || wanted.iter().all(|w| owned.contains(w)),
    };
    star_or_all(&owned.verbs, &wanted.verbs)
        && star_or_all(items(&owned.api_groups), items(&wanted.api_groups))
        && resources_cover(items(&owned.resources), items(&wanted.resources))
        && urls_cover(
            items(&owned.non_resource_urls),
            items(&wanted.non_resource_urls),
        )
        && names
}

/// kube's `resourceCoversAll`: `*`, the resource itself, or `*/<subresource>` for a
/// subresource.
fn resources_cover(set: &[String], wanted: &[String]) -> bool {
    if set.iter().any(|s| s == "*") {
        return true;
    }
    wanted.iter().all(|resource| {
        set.contains(resource)
            || resource
                .split_once('/')
                .is_some_and(|(_, sub)| set.contains(&format!("*/{sub}")))
    })
}

/// kube's `nonResourceURLsCoversAll`: each URL equal to a held one, or under a held `<prefix>*`.
fn urls_cover(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|url| {
        set.iter().any(|owned| {
            owned == url
                || owned
                    .strip_suffix('*')
                    .is_some_and(|prefix| url.starts_with(prefix.trim_end_matches('*')))
        })
    })
}

/// kube's `CompactRules`: the rules of one group, one resource and at most one resource name,
/// and nothing else, merged into one per group, resource and name, their verbs in order; the
/// others kept as they are, before them.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut others = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = items(&rule.api_groups).len() == 1
            && items(&rule.resources).len() == 1
            && items(&rule.resource_names).len() <= 1
            && items(&rule.non_resource_urls).is_empty();
        if !is_simple {
            others.push(rule);
            continue;
        }
        let same = |r: &&mut PolicyRule| {
            r.api_groups == rule.api_groups
                && r.resources == rule.resources
                && items(&r.resource_names) == items(&rule.resource_names)
        };
        match simple.iter_mut().find(same) {
            Some(merged) => merged.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    others.extend(simple);
    others
}

/// kube's `CompactString`: the rule's non-empty lists, each written with Go's `%q`.
fn compact_string(rule: &PolicyRule) -> String {
    let parts: Vec<String> = [
        ("APIGroups", items(&rule.api_groups)),
        ("Resources", items(&rule.resources)),
        ("NonResourceURLs", items(&rule.non_resource_urls)),
        ("ResourceNames", items(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(name, list)| format!("{name}:{}", crate::go_quote::quoted_list(list)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

/// kube's `IsOnlyMutatingGCFields`: whether `new` is `old` but for its owner references and
/// finalizers (and the field bookkeeping).
fn changes_only_collected_fields(old: &Value, new: &Value) -> bool {
    let mut new = new.clone();
    crate::object_meta::take_metadata(
        &mut new,
        old,
        &["ownerReferences", "finalizers", "selfLink", "managedFields"],
    );
    let mut old = old.clone();
    crate::object_meta::drop_empty_collections(&mut old);
    crate::object_meta::drop_empty_collections(&mut new);
    old == new
}

#[cfg(test)]
mod tests;
