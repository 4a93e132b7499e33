//! Who a request acts as, and whether RBAC lets it: kube-apiserver's impersonation headers and
//! its RBAC authorizer, and the access reviews `kubectl auth can-i` (with `--list`, a
//! SelfSubjectRulesReview, in the Kubernetes flavor) and `kubectl auth whoami` send.
//!
//! kcp-sim's own client is a cluster admin (as the test servers' `system:masters` admin is), so
//! a request is only checked when it impersonates someone (`Impersonate-User`, with
//! `Impersonate-Group`s) or bears a ServiceAccount token kcp-sim signed: then the Roles, ClusterRoles and their bindings in the addressed
//! cluster decide, as kube's RBAC authorizer does (verbs, API groups, resources and
//! subresources, resource names, non-resource URLs, `*` in each). Every user may also do what
//! kube's bootstrap roles grant to all authenticated users (`system:basic-user`,
//! `system:discovery`, `system:public-info-viewer`): discovery, and reviews of themselves.
//!
//! One request is checked for kcp-sim's own client too: in kcp mode, where that client is kcp's
//! `kcp-admin`, a list or watch of every workspace at once (`/clusters/*`), which kcp lets only
//! `system:masters` make ([`check_wildcard`]).
//!
//! Known differences: the impersonator's own right to impersonate is not checked, the reason an
//! access review gives for an allowed request is not kube's, and a denial does not add kube's
//! `RBAC: ... not found` notes for bindings to missing roles.

use serde_json::{Value, json};

use crate::api::{Endpoint, Sim, Target, addressed_cluster};
use crate::managed_fields::{self, FieldManager};
use crate::resource::{Flavor, GroupResource};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// A user a request acts as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The groups, `system:authenticated` included.
    pub groups: Vec<String>,
    /// The uid the authenticator gave (a ServiceAccount's), or empty.
    pub uid: String,
    /// What else the authenticator said (a token's `authentication.kubernetes.io/credential-id`).
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl User {
    /// The user named by the `Impersonate-User` header, with the `Impersonate-Group`s; `None`
    /// for a request that impersonates nobody (it acts as the admin). A service account named
    /// without groups is in its groups, as kube-apiserver's impersonation puts it.
    pub fn impersonated(headers: &http::HeaderMap) -> Option<User> {
        let name = headers.get("impersonate-user")?.to_str().ok()?;
        let mut groups: Vec<String> = headers
            .get_all("impersonate-group")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(String::from)
            .collect();
        if groups.is_empty()
            && let Some(namespace) = service_account_namespace(name)
        {
            groups = vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
            ];
        }
        Some(User::authenticated(name, groups.iter().map(String::as_str)))
    }

    /// Who a request acts as, when not the admin: the impersonated user, else the
    /// ServiceAccount of a bearer token kcp-sim signed (refused with a 401 once it no longer
    /// authenticates, [`crate::token_review::request_user`]). A ServiceAccount that
    /// impersonates must be allowed to ([`crate::impersonation::check`]), as in kube; the
    /// admin may impersonate anyone.
    pub fn of_request(
        sim: &Sim,
        endpoint: &Endpoint,
        headers: &http::HeaderMap,
    ) -> ApiResult<Option<User>> {
        let token = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| *token != crate::tokens::KUBECONFIG_TOKEN);
        let state = sim.read();
        let cluster = addressed_cluster(&state, endpoint);
        let requester = match (token, &cluster) {
            (Some(token), Some(cluster)) => {
                crate::token_review::request_user(&state, cluster, token)?
            }
            _ => None,
        };
        let Some(impersonated) = User::impersonated(headers) else {
            return Ok(requester);
        };
        if let (Some(requester), Some(cluster)) = (&requester, &cluster) {
            crate::impersonation::check(&state, cluster, requester, headers)?;
        }
        Ok(Some(impersonated))
    }

    /// An authenticated user: `name` in `groups` and `system:authenticated`.
    fn authenticated<'a>(name: &str, groups: impl Iterator<Item = &'a str>) -> User {
        let mut groups: Vec<String> = groups.map(String::from).collect();
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        User {
            name: name.into(),
            groups,
            ..User::default()
        }
    }

    /// kcp's administrator, `kcp-admin` (group `system:kcp:admin`): who kcp-sim's clients act as
    /// in kcp mode where kcp's answer names its user or treats it apart from `system:masters`.
    pub fn kcp_admin() -> User {
        User {
            name: crate::kcp::ADMIN_USER.into(),
            groups: crate::kcp::ADMIN_GROUPS
                .iter()
                .map(|g| g.to_string())
                .collect(),
            ..User::default()
        }
    }

    /// The admin kcp-sim's clients act as.
    pub fn admin() -> User {
        User {
            name: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..User::default()
        }
    }

    /// Whether the user is in `system:masters`, which RBAC never refuses.
    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }
}

/// What a request does, as RBAC reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// API group (`""` for core).
    pub group: String,
    /// Resource (plural); empty for a non-resource request.
    pub resource: String,
    /// Subresource (`status`, `scale`), or empty.
    pub subresource: String,
    /// Namespace, or empty for a cluster-scoped request.
    pub namespace: String,
    /// Object name, or empty.
    pub name: String,
    /// The URL path of a non-resource request (`/healthz`).
    pub path: String,
}

impl Attributes {
    /// The verb RBAC sees for an HTTP method on one object (`named`) or a collection.
    pub fn verb_of(method: &http::Method, named: bool, watch: bool) -> &'static str {
        match (method.as_str(), named) {
            ("GET" | "HEAD", _) if watch => "watch",
            ("GET" | "HEAD", true) => "get",
            ("GET" | "HEAD", false) => "list",
            ("POST", _) => "create",
            ("PUT", _) => "update",
            ("PATCH", _) => "patch",
            ("DELETE", true) => "delete",
            ("DELETE", false) => "deletecollection",
            _ => "",
        }
    }

    /// Whether this is a non-resource request.
    fn non_resource(&self) -> bool {
        self.resource.is_empty()
    }
}

/// Refuses a request the impersonated `user` may not make at `endpoint` (nothing is checked
/// for the admin, or where no single cluster is addressed).
pub fn check(sim: &Sim, endpoint: &Endpoint, user: &User, attrs: &Attributes) -> ApiResult<()> {
    let state = sim.read();
    let Some(cluster) = addressed_cluster(&state, endpoint) else {
        return Ok(());
    };
    // kcp's authorizer chain ends every refusal with its reason, "access denied" (seen on kcp
    // v0.30.0 for a service account RBAC refuses in its own workspace).
    match decide(&state, &cluster, user, attrs) {
        Decision::Allowed => Ok(()),
        Decision::Denied if state.flavor == crate::resource::Flavor::Kubernetes => {
            Err(forbidden(user, attrs, ""))
        }
        Decision::Denied | Decision::NoWorkspaceAccess => {
            Err(forbidden(user, attrs, ": access denied"))
        }
    }
}

/// Refuses a wildcard request (`/clusters/*`, every workspace at once) of anyone but a
/// `system:masters` user, in kcp mode: kcp's authorizers find no workspace `*` to let a user
/// into, so kcp-admin too is refused with "access denied" (seen on kcp v0.30.0; conformance
/// case kcp-views/a-wildcard-list-shows-every-cluster-with-its-name). A request impersonating
/// nobody comes from kcp-admin here; impersonating the group `system:masters` (as
/// [`crate::Server::shard_admin_client`] does) is how kcp's shard admin lists every workspace.
pub fn check_wildcard(
    flavor: Flavor,
    endpoint: &Endpoint,
    user: Option<&User>,
    attrs: &Attributes,
) -> ApiResult<()> {
    if flavor != Flavor::Kcp || !matches!(endpoint, Endpoint::Wildcard) {
        return Ok(());
    }
    let user = user.cloned().unwrap_or_else(User::kcp_admin);
    if user.is_admin() {
        return Ok(());
    }
    Err(forbidden(&user, attrs, ": access denied"))
}

/// What the authorizers say to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// RBAC (or the admin's group) allows it.
    Allowed,
    /// No rule allows it.
    Denied,
    /// kcp's workspace content authorizer refuses it before RBAC: the user may not access the
    /// workspace at all.
    NoWorkspaceAccess,
}

/// Whether `user` may do `attrs` in `cluster`. In kcp a user other than the admin must first be
/// allowed into the workspace: the verb `access` on the non-resource URL `/`, granted by a
/// ClusterRole bound in the workspace, as kcp's workspace content authorizer requires; a
/// service account is scoped to the workspace it acts in, and let in (seen on kcp v0.30.0 for
/// an impersonated one).
pub fn decide(state: &State, cluster: &str, user: &User, attrs: &Attributes) -> Decision {
    if user.is_admin() {
        return Decision::Allowed;
    }
    let service_account = service_account_namespace(&user.name).is_some();
    let workspace_access = Attributes {
        verb: "access".into(),
        path: "/".into(),
        ..Attributes::default()
    };
    if state.flavor == crate::resource::Flavor::Kcp
        && !service_account
        && !rbac_allows(state, cluster, user, &workspace_access)
    {
        return Decision::NoWorkspaceAccess;
    }
    if granted_to_everyone(attrs) || rbac_allows(state, cluster, user, attrs) {
        Decision::Allowed
    } else {
        Decision::Denied
    }
}

/// The attributes of a resource request.
pub fn of_target(target: &Target, method: &http::Method, watch: bool) -> Attributes {
    Attributes {
        verb: Attributes::verb_of(method, target.name.is_some(), watch).into(),
        group: target.group.clone(),
        resource: target.plural.clone(),
        subresource: target.subresource.clone().unwrap_or_default(),
        namespace: target.namespace.clone().unwrap_or_default(),
        name: target.name.clone().unwrap_or_default(),
        path: String::new(),
    }
}

/// Whether `group`/`plural` is a review a client posts to learn about access or itself
/// (`selfsubjectaccessreviews`, `selfsubjectrulesreviews`, `subjectaccessreviews`,
/// `selfsubjectreviews`).
pub fn is_review(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        (
            "authorization.k8s.io",
            "selfsubjectaccessreviews" | "selfsubjectrulesreviews" | "subjectaccessreviews"
        ) | ("authentication.k8s.io", "selfsubjectreviews")
    )
}

/// The answer to a review ([`is_review`]) of `group` posted by `user` through field manager
/// `manager`.
pub fn answer_review(
    sim: &Sim,
    endpoint: &Endpoint,
    group: &str,
    body: &Value,
    (user, manager): (&User, &str),
) -> Value {
    let state = sim.read();
    let cluster = addressed_cluster(&state, endpoint).unwrap_or_default();
    match (group, body.get("kind").and_then(Value::as_str)) {
        ("authentication.k8s.io", _) => {
            // kcp scopes a service account to the workspace it acts in, and says so.
            let scoped = state.flavor == Flavor::Kcp
                && service_account_namespace(&user.name).is_some()
                && !cluster.is_empty();
            whoami(body, user, scoped.then_some(cluster.as_str()))
        }
        (_, Some("SelfSubjectRulesReview")) => rules_review(&state, &cluster, body, user),
        _ => review(&state, &cluster, &with_writer(body, manager), user),
    }
}

/// An access review as kube-apiserver's create handler passes it on: its field manager has
/// recorded what the review sent (the authorizer's status comes after; seen on v1.34.2).
fn with_writer(review: &Value, manager: &str) -> Value {
    let mut sent = review.clone();
    let time = crate::semantics::now();
    let api_version = text(review, "/apiVersion");
    let who = FieldManager {
        manager,
        subresource: None,
        time: &time,
        api_version: &api_version,
    };
    managed_fields::record_update(None, &mut sent, &who);
    sent
}

/// The answer to a `SelfSubjectRulesReview` (`kubectl auth can-i --list`): every rule of every
/// role bound to `user` cluster-wide or in the review's namespace, resource rules and
/// non-resource rules apart, as kube's RBAC rule resolver lists them. In kcp the shard-wide
/// bootstrap policy's rules come first ([`crate::bootstrap_rbac::cluster_rules`]), then the
/// workspace's.
pub fn rules_review(state: &State, cluster: &str, review: &Value, user: &User) -> Value {
    let namespace = text(review, "/spec/namespace");
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules_for(state, cluster, user, &namespace) {
        let field = |key: &str| rule.get(key).cloned().unwrap_or_else(|| json!([]));
        if rule.get("nonResourceURLs").is_some() {
            non_resource_rules.push(json!({"verbs": field("verbs"),
                "nonResourceURLs": field("nonResourceURLs")}));
            continue;
        }
        let mut out = json!({"verbs": field("verbs"), "apiGroups": field("apiGroups"),
            "resources": field("resources")});
        if let Some(names) = rule.get("resourceNames") {
            out["resourceNames"] = names.clone();
        }
        resource_rules.push(out);
    }
    // kube answers with a new review holding only the status (seen on v1.34.2).
    json!({"apiVersion": text(review, "/apiVersion"), "kind": "SelfSubjectRulesReview",
        "metadata": {}, "spec": {},
        "status": {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
            "incomplete": false}})
}

/// Whether `user` may do `attrs` in `cluster`.
pub fn allows(state: &State, cluster: &str, user: &User, attrs: &Attributes) -> bool {
    decide(state, cluster, user, attrs) == Decision::Allowed
}

/// What kube's bootstrap roles grant every authenticated user: discovery, version and health,
/// and reviews of themselves.
fn granted_to_everyone(attrs: &Attributes) -> bool {
    if attrs.non_resource() {
        const PATHS: [&str; 9] = [
            "/api",
            "/apis",
            "/version",
            "/healthz",
            "/livez",
            "/readyz",
            "/openapi",
            "/.well-known",
            "/openid",
        ];
        return attrs.verb == "get"
            && PATHS
                .iter()
                .any(|p| attrs.path == *p || attrs.path.starts_with(&format!("{p}/")));
    }
    attrs.verb == "create"
        && matches!(
            (attrs.group.as_str(), attrs.resource.as_str()),
            (
                "authorization.k8s.io",
                "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
            ) | ("authentication.k8s.io", "selfsubjectreviews")
        )
}

/// Whether a binding in the request's namespace, or a cluster binding, gives `user` a rule
/// that covers `attrs`.
fn rbac_allows(state: &State, cluster: &str, user: &User, attrs: &Attributes) -> bool {
    bound_rules(state, cluster, user, &attrs.namespace)
        .iter()
        .any(|rule| rule_covers(rule, attrs))
}

/// Every rule `user` holds in `namespace` of `cluster`, as kube's rule resolver lists them: in
/// kcp the shard-wide bootstrap policy's first ([`crate::bootstrap_rbac::cluster_rules`]),
/// then those of the roles bound in the cluster ([`bound_rules`]).
pub(crate) fn rules_for(state: &State, cluster: &str, user: &User, namespace: &str) -> Vec<Value> {
    let mut rules = match state.flavor {
        Flavor::Kcp => crate::bootstrap_rbac::cluster_rules(true, |b| binds(b, user)),
        Flavor::Kubernetes => Vec::new(),
    };
    rules.extend(bound_rules(state, cluster, user, namespace));
    rules
}

/// The rules of the roles bound to `user` by cluster bindings, then by bindings in
/// `namespace` (none when it is empty), in the order the bindings are stored.
fn bound_rules(state: &State, cluster: &str, user: &User, namespace: &str) -> Vec<Value> {
    bound_roles(state, cluster, user, namespace)
        .iter()
        .flat_map(|(_, role)| rules_of(role))
        .collect()
}

/// kube's reason for an allowed request: the first binding (cluster bindings first) whose role
/// has a rule that covers it, the role, and the subject that names `user`
/// (`RBAC: allowed by RoleBinding "b/ns" of Role "r" to ServiceAccount "sa/ns"`).
fn allowed_by(state: &State, cluster: &str, user: &User, attrs: &Attributes) -> Option<String> {
    let (binding, role) = bound_roles(state, cluster, user, &attrs.namespace)
        .into_iter()
        .find(|(_, role)| rules_of(role).iter().any(|rule| rule_covers(rule, attrs)))?;
    let named = |object: &Value| match namespace_of(object) {
        ns if ns.is_empty() => text(object, "/metadata/name"),
        ns => format!("{}/{ns}", text(object, "/metadata/name")),
    };
    let subject = subject_of(&binding, user)?;
    let subject_name = match text(subject, "/kind").as_str() {
        "ServiceAccount" => {
            let namespace = service_account_subject_namespace(&binding, subject);
            format!("{}/{namespace}", text(subject, "/name"))
        }
        _ => text(subject, "/name"),
    };
    Some(format!(
        "RBAC: allowed by {} \"{}\" of {} \"{}\" to {} \"{subject_name}\"",
        text(&binding, "/kind"),
        named(&binding),
        text(&role, "/kind"),
        text(&role, "/metadata/name"),
        text(subject, "/kind"),
    ))
}

/// The bindings of `user` (cluster bindings, then bindings in `namespace`) with the roles they
/// reference, in the order the bindings are stored; a binding of a missing role is left out.
fn bound_roles(state: &State, cluster: &str, user: &User, namespace: &str) -> Vec<(Value, Value)> {
    let Some(data) = state.clusters.get(cluster) else {
        return Vec::new();
    };
    let objects = |resource: &str| {
        data.objects
            .get(&GroupResource::new("rbac.authorization.k8s.io", resource))
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|stored| stored.value().ok())
    };
    let role = |kind: &str, namespace: &str, name: &str| {
        let (resource, namespace) = match kind {
            "ClusterRole" => ("clusterroles", ""),
            _ => ("roles", namespace),
        };
        data.get(
            &GroupResource::new("rbac.authorization.k8s.io", resource),
            namespace,
            name,
        )
        .and_then(|stored| stored.value().ok())
    };
    let bindings = objects("clusterrolebindings").chain(
        objects("rolebindings").filter(|b| !namespace.is_empty() && namespace_of(b) == namespace),
    );
    bindings
        .filter(|binding| binds(binding, user))
        .filter_map(|binding| {
            let kind = text(&binding, "/roleRef/kind");
            let name = text(&binding, "/roleRef/name");
            let role = role(&kind, &namespace_of(&binding), &name)?;
            Some((binding, role))
        })
        .collect()
}

/// A role's `rules`.
pub fn rules_of(role: &Value) -> Vec<Value> {
    role.get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn text(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn namespace_of(object: &Value) -> String {
    text(object, "/metadata/namespace")
}

/// Whether a binding names the user, one of its groups, or (for a ServiceAccount user) its
/// ServiceAccount.
pub(crate) fn binds(binding: &Value, user: &User) -> bool {
    subject_of(binding, user).is_some()
}

/// The first subject of `binding` that names `user`.
fn subject_of<'b>(binding: &'b Value, user: &User) -> Option<&'b Value> {
    let subjects = binding.get("subjects").and_then(Value::as_array);
    subjects.into_iter().flatten().find(|subject| {
        let name = text(subject, "/name");
        match text(subject, "/kind").as_str() {
            "User" => name == user.name,
            "Group" => user.groups.contains(&name),
            "ServiceAccount" => {
                let namespace = service_account_subject_namespace(binding, subject);
                user.name == format!("system:serviceaccount:{namespace}:{name}")
            }
            _ => false,
        }
    })
}

/// A ServiceAccount subject's namespace: its own, else its binding's.
fn service_account_subject_namespace(binding: &Value, subject: &Value) -> String {
    match text(subject, "/namespace") {
        ns if ns.is_empty() => namespace_of(binding),
        ns => ns,
    }
}

/// Whether one PolicyRule covers the request.
fn rule_covers(rule: &Value, attrs: &Attributes) -> bool {
    let list = |key: &str| -> Vec<String> {
        rule.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    let has = |items: &[String], wanted: &str| items.iter().any(|i| i == "*" || i == wanted);
    if !has(&list("verbs"), &attrs.verb) {
        return false;
    }
    if attrs.non_resource() {
        return list("nonResourceURLs")
            .iter()
            .any(|url| match url.strip_suffix('*') {
                Some(prefix) => attrs.path.starts_with(prefix),
                None => *url == attrs.path,
            });
    }
    let resource = match attrs.subresource.as_str() {
        "" => attrs.resource.clone(),
        sub => format!("{}/{sub}", attrs.resource),
    };
    let resources = list("resources");
    let resource_matches = resources.iter().any(|r| {
        r == "*"
            || *r == resource
            || (attrs.subresource.is_empty() && *r == attrs.resource)
            || r.strip_prefix("*/")
                .is_some_and(|sub| sub == attrs.subresource)
    });
    let names = list("resourceNames");
    has(&list("apiGroups"), &attrs.group)
        && resource_matches
        && (names.is_empty() || names.contains(&attrs.name))
}

/// kube's Forbidden answer to a request the authorizers refused, with the authorizer's
/// `reason` (kcp's `: access denied`) after it.
pub fn forbidden(user: &User, attrs: &Attributes, reason: &str) -> ApiError {
    if attrs.non_resource() {
        return ApiError::forbidden(format!(
            "forbidden: User \"{}\" cannot {} path \"{}\"{reason}",
            user.name, attrs.verb, attrs.path
        ));
    }
    let resource = match attrs.subresource.as_str() {
        "" => attrs.resource.clone(),
        sub => format!("{}/{sub}", attrs.resource),
    };
    let qualified = match attrs.group.as_str() {
        "" => resource.clone(),
        group => format!("{resource}.{group}"),
    };
    let what = match attrs.name.as_str() {
        "" => qualified,
        name => format!("{qualified} \"{name}\""),
    };
    let scope = match attrs.namespace.as_str() {
        "" => "at the cluster scope".to_string(),
        ns => format!("in the namespace \"{ns}\""),
    };
    ApiError::forbidden(format!(
        "{what} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" \
         {scope}{reason}",
        user.name, attrs.verb, attrs.group
    ))
    .about(&attrs.group, &attrs.resource, &attrs.name)
}

/// The answer to a `SelfSubjectAccessReview` (or a `SubjectAccessReview`, whose spec names the
/// user): the review with its `status.allowed` filled in.
pub fn review(state: &State, cluster: &str, review: &Value, asker: &User) -> Value {
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let user = match spec.get("user").and_then(Value::as_str) {
        Some(name) => {
            let groups = spec.get("groups").and_then(Value::as_array);
            User::authenticated(name, groups.into_iter().flatten().filter_map(Value::as_str))
        }
        None => asker.clone(),
    };
    let attrs = attributes_of_review(&spec);
    let allowed = allows(state, cluster, &user, &attrs);
    let mut answer = review.clone();
    answer["status"] = json!({"allowed": allowed});
    if allowed
        && state.flavor == Flavor::Kubernetes
        && !user.is_admin()
        && let Some(reason) = allowed_by(state, cluster, &user, &attrs)
    {
        answer["status"]["reason"] = json!(reason);
    }
    // kcp's authorizer chain words its verdict on a resource (seen on kcp v0.30.0).
    if state.flavor == crate::resource::Flavor::Kcp && !attrs.non_resource() {
        let reason = if allowed {
            "access granted"
        } else {
            "access denied"
        };
        answer["status"]["reason"] = json!(reason);
    }
    if answer.get("metadata").is_none_or(Value::is_null) {
        answer["metadata"] = json!({});
    }
    answer
}

/// The request a review asks about.
fn attributes_of_review(spec: &Value) -> Attributes {
    let field = |pointer: &str| text(spec, pointer);
    match spec.get("nonResourceAttributes") {
        Some(_) => Attributes {
            verb: field("/nonResourceAttributes/verb"),
            path: field("/nonResourceAttributes/path"),
            ..Attributes::default()
        },
        None => Attributes {
            verb: field("/resourceAttributes/verb"),
            group: field("/resourceAttributes/group"),
            resource: field("/resourceAttributes/resource"),
            subresource: field("/resourceAttributes/subresource"),
            namespace: field("/resourceAttributes/namespace"),
            name: field("/resourceAttributes/name"),
            path: String::new(),
        },
    }
}

/// The answer to a `SelfSubjectReview` (`kubectl auth whoami`).
pub fn whoami(review: &Value, user: &User, scope: Option<&str>) -> Value {
    // A new review, made now (seen on kube-apiserver v1.34.2).
    let mut answer = review.clone();
    answer["metadata"] = json!({"creationTimestamp": crate::semantics::now()});
    let mut info = json!({"username": user.name});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    info["groups"] = json!(user.groups);
    let mut extra = user.extra.clone();
    if let Some(cluster) = scope {
        extra.insert(
            "authentication.kcp.io/scopes".into(),
            vec![format!("cluster:{cluster}")],
        );
    }
    if !extra.is_empty() {
        info["extra"] = json!(extra);
    }
    answer["status"] = json!({"userInfo": info});
    answer
}

/// The namespace of a service account's user name (`system:serviceaccount:<ns>:<name>`).
pub(crate) fn service_account_namespace(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("system:serviceaccount:")?;
    let (namespace, account) = rest.split_once(':')?;
    (!namespace.is_empty() && !account.is_empty()).then_some(namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impersonated_service_account_is_in_its_groups_unless_groups_are_named() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "impersonate-user",
            http::HeaderValue::from_static("system:serviceaccount:team:robot"),
        );
        let robot = User::impersonated(&headers).expect("impersonated");
        assert_eq!(
            robot.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team",
                "system:authenticated"
            ]
        );
        headers.insert("impersonate-group", http::HeaderValue::from_static("devs"));
        let named = User::impersonated(&headers).expect("impersonated");
        assert_eq!(named.groups, ["devs", "system:authenticated"]);
    }

    fn attrs(verb: &str, resource: &str, namespace: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn a_rule_covers_its_verbs_groups_and_resources_only() {
        let rule =
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]});
        assert!(rule_covers(&rule, &attrs("list", "configmaps", "ns")));
        assert!(!rule_covers(&rule, &attrs("delete", "configmaps", "ns")));
        assert!(!rule_covers(&rule, &attrs("list", "secrets", "ns")));
        let mut status = attrs("get", "configmaps", "ns");
        status.subresource = "status".into();
        assert!(!rule_covers(&rule, &status));
    }

    #[test]
    fn resource_names_and_wildcards_narrow_and_widen_a_rule() {
        let named =
            json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"], "resourceNames": ["a"]});
        let mut request = attrs("get", "secrets", "ns");
        request.name = "a".into();
        assert!(rule_covers(&named, &request));
        request.name = "b".into();
        assert!(!rule_covers(&named, &request));
    }

    #[test]
    fn a_denial_names_the_user_verb_resource_and_scope() {
        let user = User {
            name: "alice".into(),
            ..User::default()
        };
        let mut request = attrs("delete", "configmaps", "ns");
        request.name = "one".into();
        assert_eq!(
            forbidden(&user, &request, "").message,
            "configmaps \"one\" is forbidden: User \"alice\" cannot delete resource \"configmaps\" \
             in API group \"\" in the namespace \"ns\""
        );
        assert!(
            forbidden(&user, &attrs("list", "nodes", ""), "")
                .message
                .ends_with("at the cluster scope")
        );
    }

    #[test]
    fn everyone_may_discover_and_review_themselves() {
        let discovery = Attributes {
            verb: "get".into(),
            path: "/apis/apps/v1".into(),
            ..Attributes::default()
        };
        assert!(granted_to_everyone(&discovery));
        let mut review = attrs("create", "selfsubjectaccessreviews", "");
        review.group = "authorization.k8s.io".into();
        assert!(granted_to_everyone(&review));
        assert!(!granted_to_everyone(&attrs("list", "configmaps", "ns")));
    }
}
