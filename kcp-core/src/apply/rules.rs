//! Dependency rules: which objects must exist before which.
//!
//! A [`DependencyRule`] looks at the whole [`ObjectSet`] (indexed by kind, namespace and name,
//! so rules stay linear in the number of objects) and adds edges `before -> after` to an
//! [`EdgeSink`]. [`RuleSet::default`] holds the default rules, in this order:
//!
//! | rule | edge |
//! |---|---|
//! | [`CrdBeforeCustomResources`] | CRD of (group, kind) -> every object of that group and kind |
//! | [`ApiExportBeforeBindings`] | APIExport -> APIBindings that reference it by name |
//! | [`ApiBindingBeforeBoundObjects`] | APIBinding -> objects of the groups it binds |
//! | [`NamespaceBeforeMembers`] | Namespace -> every object in it |
//! | [`RoleBeforeBindings`] | Role / ClusterRole -> RoleBindings and ClusterRoleBindings to it |
//! | [`ServiceAccountBeforeUsers`] | ServiceAccount -> bindings naming it, workloads running as it |
//! | [`ConfigBeforeWorkloads`] | ConfigMap / Secret -> workloads that mount or read it |
//! | [`ClassBeforeUsers`] | PriorityClass, StorageClass, IngressClass, RuntimeClass -> users |
//! | [`WebhooksLast`] | every other object -> admission webhooks and admission policies |
//! | [`DependsOnAnnotation`] | the objects named in [`DEPENDS_ON_ANNOTATION`] -> the annotated object |

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use foldhash::fast::RandomState;

use serde_json::Value;

use super::plan::PlanObject;
use crate::error::{Error, Result};

/// Annotation through which an object names objects that must exist before it.
///
/// The value is a comma-separated list of `Kind[.group]/[namespace/]name`, for example
/// `Namespace/team-a, CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com,
/// ConfigMap/team-a/settings`. A reference without a namespace matches a cluster-scoped object
/// or an object in the annotated object's own namespace. Naming an object that is not part of
/// the plan is an error.
pub const DEPENDS_ON_ANNOTATION: &str = "apply.kcp-rs.io/depends-on";

/// A source of "must exist before" edges.
pub trait DependencyRule: Send + Sync {
    /// A short name, used in error messages.
    fn name(&self) -> &str;

    /// Adds edges `before -> after` (indices into `objects`) to `edges`.
    fn add_edges(&self, objects: &ObjectSet<'_>, edges: &mut EdgeSink) -> Result<()>;
}

/// Collects edges; self-edges and duplicates are dropped.
#[derive(Debug)]
pub struct EdgeSink {
    len: usize,
    /// `before << 32 | after`: sorts and dedups faster than pairs.
    edges: Vec<u64>,
}

impl EdgeSink {
    pub(crate) fn new(len: usize) -> Self {
        EdgeSink {
            len,
            edges: Vec::new(),
        }
    }

    /// Records that object `before` must exist before object `after`. Out-of-range indices
    /// and self-edges are ignored.
    pub fn add(&mut self, before: usize, after: usize) {
        if before != after
            && before < self.len
            && after < self.len
            && let (Ok(b), Ok(a)) = (u32::try_from(before), u32::try_from(after))
        {
            self.edges.push(u64::from(b) << 32 | u64::from(a));
        }
    }

    pub(crate) fn into_edges(mut self) -> Vec<(u32, u32)> {
        self.edges.sort_unstable();
        self.edges.dedup();
        // Truncation is the unpacking: the halves were u32 values.
        self.edges
            .iter()
            .map(|&e| ((e >> 32) as u32, e as u32))
            .collect()
    }
}

/// The objects of a plan, indexed for rules.
#[derive(Debug)]
pub struct ObjectSet<'a> {
    objects: &'a [PlanObject],
    /// kind -> [(group, indices)]
    by_kind: HashMap<&'a str, Vec<(&'a str, Vec<usize>)>, RandomState>,
    by_namespace: HashMap<&'a str, Vec<usize>, RandomState>,
    /// hash of (group, kind, namespace, name) -> indices; exact match re-checked on lookup.
    by_identity: HashMap<u64, Indices, BuildHasherDefault<PrehashedKey>>,
    hasher: RandomState,
    /// The pod spec of each object that has one (see [`pod_spec`]).
    pod_specs: Vec<(usize, &'a Value)>,
}

impl<'a> ObjectSet<'a> {
    pub(crate) fn new(objects: &'a [PlanObject]) -> Self {
        let mut by_kind: HashMap<&'a str, Vec<(&'a str, Vec<usize>)>, RandomState> =
            HashMap::default();
        let mut by_namespace: HashMap<&'a str, Vec<usize>, RandomState> = HashMap::default();
        let hasher = RandomState::default();
        let mut by_identity: HashMap<u64, Indices, BuildHasherDefault<PrehashedKey>> =
            HashMap::with_capacity_and_hasher(objects.len(), BuildHasherDefault::default());
        for (i, o) in objects.iter().enumerate() {
            let groups = by_kind.entry(o.kind()).or_default();
            match groups.iter_mut().find(|(g, _)| *g == o.group()) {
                Some((_, indices)) => indices.push(i),
                None => groups.push((o.group(), vec![i])),
            }
            if let Some(ns) = o.namespace() {
                by_namespace.entry(ns).or_default().push(i);
            }
            let identity = hasher.hash_one((o.group(), o.kind(), o.namespace(), o.name()));
            match by_identity.entry(identity) {
                Entry::Occupied(mut e) => e.get_mut().push(i),
                Entry::Vacant(e) => {
                    e.insert(Indices::One(i));
                }
            }
        }
        let pod_specs = objects
            .iter()
            .enumerate()
            .filter_map(|(i, o)| pod_spec(o).map(|spec| (i, spec)))
            .collect();
        ObjectSet {
            objects,
            by_kind,
            by_namespace,
            by_identity,
            hasher,
            pod_specs,
        }
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Object `index`.
    pub fn get(&self, index: usize) -> Option<&'a PlanObject> {
        self.objects.get(index)
    }

    /// All objects with their indices.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &'a PlanObject)> + '_ {
        self.objects.iter().enumerate()
    }

    /// Indices of the objects of a group and kind, in input order.
    pub fn of_kind(&self, group: &str, kind: &str) -> &[usize] {
        self.by_kind
            .get(kind)
            .and_then(|groups| groups.iter().find(|(g, _)| *g == group))
            .map_or(&[][..], |(_, indices)| indices.as_slice())
    }

    /// The distinct (group, kind) pairs present.
    pub fn kinds(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.by_kind
            .iter()
            .flat_map(|(kind, groups)| groups.iter().map(move |(group, _)| (*group, *kind)))
    }

    /// The objects that carry a pod spec (workloads), with that spec, in input order.
    pub fn pod_specs(&self) -> impl Iterator<Item = (usize, &'a PlanObject, &'a Value)> + '_ {
        self.pod_specs
            .iter()
            .map(|&(i, spec)| (i, &self.objects[i], spec))
    }

    /// Indices of the objects in a namespace, in input order.
    pub fn in_namespace(&self, namespace: &str) -> &[usize] {
        self.by_namespace
            .get(namespace)
            .map_or(&[][..], Vec::as_slice)
    }

    /// Indices of the objects with this group, kind, namespace and name, in input order
    /// (several when the input has duplicates).
    pub fn find<'s>(
        &'s self,
        group: &'s str,
        kind: &'s str,
        namespace: Option<&'s str>,
        name: &'s str,
    ) -> impl Iterator<Item = usize> + 's {
        let identity = self.hasher.hash_one((group, kind, namespace, name));
        self.by_identity
            .get(&identity)
            .map_or(&[][..], Indices::as_slice)
            .iter()
            .copied()
            .filter(move |&i| {
                let o = &self.objects[i];
                o.name() == name
                    && o.kind() == kind
                    && o.group() == group
                    && o.namespace() == namespace
            })
    }
}

/// Object indices sharing one identity hash: almost always exactly one, so no `Vec` for it.
#[derive(Debug)]
enum Indices {
    One(usize),
    Many(Vec<usize>),
}

impl Indices {
    fn push(&mut self, index: usize) {
        match self {
            Indices::One(first) => *self = Indices::Many(vec![*first, index]),
            Indices::Many(all) => all.push(index),
        }
    }

    fn as_slice(&self) -> &[usize] {
        match self {
            Indices::One(index) => std::slice::from_ref(index),
            Indices::Many(all) => all,
        }
    }
}

/// Hasher for keys that already are hashes: passes the `u64` through.
#[derive(Debug, Default)]
pub(crate) struct PrehashedKey(u64);

impl Hasher for PrehashedKey {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// An ordered list of dependency rules.
pub struct RuleSet {
    rules: Vec<Box<dyn DependencyRule>>,
}

impl Default for RuleSet {
    /// The default rules listed in the [module docs](self).
    fn default() -> Self {
        RuleSet::empty()
            .with(CrdBeforeCustomResources)
            .with(ApiExportBeforeBindings)
            .with(ApiBindingBeforeBoundObjects)
            .with(NamespaceBeforeMembers)
            .with(RoleBeforeBindings)
            .with(ServiceAccountBeforeUsers)
            .with(ConfigBeforeWorkloads)
            .with(ClassBeforeUsers)
            .with(WebhooksLast)
            .with(DependsOnAnnotation)
    }
}

impl std::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|r| r.name()))
            .finish()
    }
}

impl RuleSet {
    /// No rules at all: every object lands in wave 0.
    pub fn empty() -> Self {
        RuleSet { rules: Vec::new() }
    }

    /// Adds a rule.
    pub fn with(mut self, rule: impl DependencyRule + 'static) -> Self {
        self.rules.push(Box::new(rule));
        self
    }

    /// The rules, in order.
    pub fn rules(&self) -> impl Iterator<Item = &dyn DependencyRule> + '_ {
        self.rules.iter().map(|r| r.as_ref())
    }
}

const APIEXTENSIONS: &str = "apiextensions.k8s.io";
const RBAC: &str = "rbac.authorization.k8s.io";
const APIS_KCP: &str = "apis.kcp.io";
const ADMISSION: &str = "admissionregistration.k8s.io";

/// API groups served by Kubernetes or kcp themselves (never by a CRD or an APIBinding).
pub const BUILTIN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
    "apis.kcp.io",
    "cache.kcp.io",
    "core.kcp.io",
    "tenancy.kcp.io",
    "topology.kcp.io",
];

/// The value at `path` (object keys), without the allocations of `Value::pointer`.
fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

fn str_at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v str> {
    at(value, path)?.as_str()
}

fn data(o: &PlanObject) -> &Value {
    &o.object().data
}

/// CRD of (group, kind) -> every object of that group and kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct CrdBeforeCustomResources;

impl DependencyRule for CrdBeforeCustomResources {
    fn name(&self) -> &str {
        "CRD before its custom resources"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        for &crd in set.of_kind(APIEXTENSIONS, "CustomResourceDefinition") {
            let Some(o) = set.get(crd) else { continue };
            let (Some(group), Some(kind)) = (
                str_at(data(o), &["spec", "group"]),
                str_at(data(o), &["spec", "names", "kind"]),
            ) else {
                continue;
            };
            for &cr in set.of_kind(group, kind) {
                sink.add(crd, cr);
            }
        }
        Ok(())
    }
}

/// APIExport -> APIBindings whose `spec.reference.export.name` names it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiExportBeforeBindings;

impl DependencyRule for ApiExportBeforeBindings {
    fn name(&self) -> &str {
        "APIExport before its APIBindings"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        let exports = set.of_kind(APIS_KCP, "APIExport");
        if exports.is_empty() {
            return Ok(());
        }
        for &binding in set.of_kind(APIS_KCP, "APIBinding") {
            let Some(b) = set.get(binding) else { continue };
            let Some(export) = str_at(data(b), &["spec", "reference", "export", "name"]) else {
                continue;
            };
            for e in set.find(APIS_KCP, "APIExport", None, export) {
                sink.add(e, binding);
            }
        }
        Ok(())
    }
}

/// APIBinding -> objects of the groups it binds.
///
/// The bound groups come from the binding's `status.boundResources`, or from the APIExport it
/// references when that export is in the set (`spec.resources[].group`, or the group part of
/// `spec.latestResourceSchemas`, named `<prefix>.<plural>.<group>`). When neither tells, the
/// binding precedes every object whose group is neither built in nor defined by a CRD of the set.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiBindingBeforeBoundObjects;

impl ApiBindingBeforeBoundObjects {
    fn known_groups<'a>(set: &ObjectSet<'a>, binding: &'a PlanObject) -> Vec<&'a str> {
        let mut groups: Vec<&'a str> = Vec::new();
        if let Some(bound) =
            at(data(binding), &["status", "boundResources"]).and_then(Value::as_array)
        {
            groups.extend(bound.iter().filter_map(|r| str_at(r, &["group"])));
        }
        if let Some(export) = str_at(data(binding), &["spec", "reference", "export", "name"]) {
            for e in set.find(APIS_KCP, "APIExport", None, export) {
                let Some(e) = set.get(e) else { continue };
                if let Some(resources) =
                    at(data(e), &["spec", "resources"]).and_then(Value::as_array)
                {
                    groups.extend(resources.iter().filter_map(|r| str_at(r, &["group"])));
                }
                if let Some(schemas) =
                    at(data(e), &["spec", "latestResourceSchemas"]).and_then(Value::as_array)
                {
                    groups.extend(
                        schemas
                            .iter()
                            .filter_map(Value::as_str)
                            .filter_map(|s| s.splitn(3, '.').nth(2)),
                    );
                }
            }
        }
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}

impl DependencyRule for ApiBindingBeforeBoundObjects {
    fn name(&self) -> &str {
        "APIBinding before objects of the groups it binds"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        let bindings = set.of_kind(APIS_KCP, "APIBinding");
        if bindings.is_empty() {
            return Ok(());
        }
        let crd_groups: HashSet<&str> = set
            .of_kind(APIEXTENSIONS, "CustomResourceDefinition")
            .iter()
            .filter_map(|&i| set.get(i))
            .filter_map(|o| str_at(data(o), &["spec", "group"]))
            .collect();
        let mut kinds: Vec<(&str, &str)> = set.kinds().collect();
        kinds.sort_unstable();
        for &binding in bindings {
            let Some(b) = set.get(binding) else { continue };
            let groups = Self::known_groups(set, b);
            for &(group, kind) in &kinds {
                let bound = if groups.is_empty() {
                    !BUILTIN_GROUPS.contains(&group) && !crd_groups.contains(group)
                } else {
                    groups.contains(&group)
                };
                if bound {
                    for &i in set.of_kind(group, kind) {
                        sink.add(binding, i);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Namespace -> every object whose `metadata.namespace` names it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NamespaceBeforeMembers;

impl DependencyRule for NamespaceBeforeMembers {
    fn name(&self) -> &str {
        "Namespace before its members"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        for &ns in set.of_kind("", "Namespace") {
            let Some(n) = set.get(ns) else { continue };
            for &member in set.in_namespace(n.name()) {
                sink.add(ns, member);
            }
        }
        Ok(())
    }
}

/// Role -> RoleBindings of its namespace that reference it; ClusterRole -> RoleBindings and
/// ClusterRoleBindings that reference it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoleBeforeBindings;

impl DependencyRule for RoleBeforeBindings {
    fn name(&self) -> &str {
        "Role before its bindings"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        for binding_kind in ["RoleBinding", "ClusterRoleBinding"] {
            for &b in set.of_kind(RBAC, binding_kind) {
                let Some(binding) = set.get(b) else { continue };
                let (Some(kind), Some(name)) = (
                    str_at(data(binding), &["roleRef", "kind"]),
                    str_at(data(binding), &["roleRef", "name"]),
                ) else {
                    continue;
                };
                let (role_kind, namespace) = match kind {
                    "ClusterRole" => ("ClusterRole", None),
                    "Role" if binding_kind == "RoleBinding" => ("Role", binding.namespace()),
                    _ => continue,
                };
                for r in set.find(RBAC, role_kind, namespace, name) {
                    sink.add(r, b);
                }
            }
        }
        Ok(())
    }
}

/// The pod spec of a workload: `spec` of a Pod, `spec.jobTemplate.spec.template.spec` of a
/// CronJob, `spec.template.spec` of anything else that has one.
pub fn pod_spec(o: &PlanObject) -> Option<&Value> {
    let d = data(o);
    match (o.group(), o.kind()) {
        ("", "Pod") => d.get("spec"),
        ("batch", "CronJob") => at(d, &["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => at(d, &["spec", "template", "spec"]),
    }
}

/// ServiceAccount -> bindings listing it as a subject and workloads whose pod spec runs as it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServiceAccountBeforeUsers;

impl DependencyRule for ServiceAccountBeforeUsers {
    fn name(&self) -> &str {
        "ServiceAccount before its users"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        if set.of_kind("", "ServiceAccount").is_empty() {
            return Ok(());
        }
        for binding_kind in ["RoleBinding", "ClusterRoleBinding"] {
            for &b in set.of_kind(RBAC, binding_kind) {
                let Some(binding) = set.get(b) else { continue };
                let Some(subjects) = data(binding).get("subjects").and_then(Value::as_array) else {
                    continue;
                };
                for s in subjects {
                    if str_at(s, &["kind"]) != Some("ServiceAccount") {
                        continue;
                    }
                    let Some(name) = str_at(s, &["name"]) else {
                        continue;
                    };
                    let ns = str_at(s, &["namespace"]).or(binding.namespace());
                    for sa in set.find("", "ServiceAccount", ns, name) {
                        sink.add(sa, b);
                    }
                }
            }
        }
        for (i, o, spec) in set.pod_specs() {
            let name = str_at(spec, &["serviceAccountName"]).or(str_at(spec, &["serviceAccount"]));
            if let Some(name) = name {
                for sa in set.find("", "ServiceAccount", o.namespace(), name) {
                    sink.add(sa, i);
                }
            }
        }
        Ok(())
    }
}

/// ConfigMap / Secret -> workloads of the same namespace that mount them as volumes or read
/// them through `env`/`envFrom` (including init containers), and Secrets named in
/// `imagePullSecrets`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigBeforeWorkloads;

impl ConfigBeforeWorkloads {
    fn references<'v>(spec: &'v Value, out: &mut Vec<(&'static str, &'v str)>) {
        let mut push = |kind: &'static str, name: Option<&'v str>| {
            if let Some(n) = name {
                out.push((kind, n));
            }
        };
        for v in spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push("ConfigMap", str_at(v, &["configMap", "name"]));
            push("Secret", str_at(v, &["secret", "secretName"]));
            for src in at(v, &["projected", "sources"])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                push("ConfigMap", str_at(src, &["configMap", "name"]));
                push("Secret", str_at(src, &["secret", "name"]));
            }
        }
        for s in spec
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push("Secret", str_at(s, &["name"]));
        }
        for list in ["initContainers", "containers"] {
            for c in spec
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for e in c
                    .get("envFrom")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    push("ConfigMap", str_at(e, &["configMapRef", "name"]));
                    push("Secret", str_at(e, &["secretRef", "name"]));
                }
                for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                    push(
                        "ConfigMap",
                        str_at(e, &["valueFrom", "configMapKeyRef", "name"]),
                    );
                    push("Secret", str_at(e, &["valueFrom", "secretKeyRef", "name"]));
                }
            }
        }
    }
}

impl DependencyRule for ConfigBeforeWorkloads {
    fn name(&self) -> &str {
        "ConfigMap and Secret before the workloads that use them"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        if set.of_kind("", "ConfigMap").is_empty() && set.of_kind("", "Secret").is_empty() {
            return Ok(());
        }
        let mut refs = Vec::new();
        for (i, o, spec) in set.pod_specs() {
            refs.clear();
            Self::references(spec, &mut refs);
            for &(kind, name) in &refs {
                for c in set.find("", kind, o.namespace(), name) {
                    sink.add(c, i);
                }
            }
        }
        Ok(())
    }
}

/// PriorityClass, RuntimeClass -> pod specs naming them; StorageClass -> PVCs, PVs and
/// StatefulSet volume claim templates naming it; IngressClass -> Ingresses naming it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassBeforeUsers;

impl DependencyRule for ClassBeforeUsers {
    fn name(&self) -> &str {
        "class before its users"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        let classes = [
            ("scheduling.k8s.io", "PriorityClass"),
            ("node.k8s.io", "RuntimeClass"),
            ("storage.k8s.io", "StorageClass"),
            ("networking.k8s.io", "IngressClass"),
        ];
        if classes.iter().all(|(g, k)| set.of_kind(g, k).is_empty()) {
            return Ok(());
        }
        let mut link = |user: usize, group: &str, kind: &str, name: Option<&str>| {
            if let Some(name) = name {
                for c in set.find(group, kind, None, name) {
                    sink.add(c, user);
                }
            }
        };
        for (i, _, spec) in set.pod_specs() {
            link(
                i,
                "scheduling.k8s.io",
                "PriorityClass",
                str_at(spec, &["priorityClassName"]),
            );
            link(
                i,
                "node.k8s.io",
                "RuntimeClass",
                str_at(spec, &["runtimeClassName"]),
            );
        }
        for (i, o) in set.iter() {
            match (o.group(), o.kind()) {
                ("", "PersistentVolumeClaim") | ("", "PersistentVolume") => {
                    let class = str_at(data(o), &["spec", "storageClassName"]);
                    link(i, "storage.k8s.io", "StorageClass", class);
                }
                ("apps", "StatefulSet") => {
                    for t in at(data(o), &["spec", "volumeClaimTemplates"])
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let class = str_at(t, &["spec", "storageClassName"]);
                        link(i, "storage.k8s.io", "StorageClass", class);
                    }
                }
                ("networking.k8s.io", "Ingress") => {
                    let class = str_at(data(o), &["spec", "ingressClassName"]).or_else(|| {
                        str_at(
                            data(o),
                            &["metadata", "annotations", "kubernetes.io/ingress.class"],
                        )
                    });
                    link(i, "networking.k8s.io", "IngressClass", class);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Kinds that intercept writes: applied after everything else, so they cannot block it.
pub const ADMISSION_KINDS: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
];

/// Every object that is not an admission webhook or policy -> every admission webhook and
/// policy (their bindings still follow their policies through the annotation or order).
#[derive(Debug, Clone, Copy, Default)]
pub struct WebhooksLast;

impl DependencyRule for WebhooksLast {
    fn name(&self) -> &str {
        "admission webhooks last"
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        let hooks: Vec<usize> = ADMISSION_KINDS
            .iter()
            .flat_map(|k| set.of_kind(ADMISSION, k).iter().copied())
            .collect();
        if hooks.is_empty() {
            return Ok(());
        }
        for (i, o) in set.iter() {
            if o.group() == ADMISSION && ADMISSION_KINDS.contains(&o.kind()) {
                continue;
            }
            for &h in &hooks {
                sink.add(i, h);
            }
        }
        // A policy binding follows the policy it binds.
        for (binding_kind, policy_kind) in [
            (
                "ValidatingAdmissionPolicyBinding",
                "ValidatingAdmissionPolicy",
            ),
            ("MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicy"),
        ] {
            for &b in set.of_kind(ADMISSION, binding_kind) {
                let Some(binding) = set.get(b) else { continue };
                if let Some(policy) = str_at(data(binding), &["spec", "policyName"]) {
                    for p in set.find(ADMISSION, policy_kind, None, policy) {
                        sink.add(p, b);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The objects named in the [`DEPENDS_ON_ANNOTATION`] -> the annotated object.
#[derive(Debug, Clone, Copy, Default)]
pub struct DependsOnAnnotation;

/// One parsed entry of the [`DEPENDS_ON_ANNOTATION`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependsOnRef<'a> {
    /// The kind.
    pub kind: &'a str,
    /// The group (`""` for the core group).
    pub group: &'a str,
    /// The namespace, when given.
    pub namespace: Option<&'a str>,
    /// The name.
    pub name: &'a str,
}

/// Parses one `Kind[.group]/[namespace/]name` entry.
pub fn parse_depends_on(entry: &str) -> Option<DependsOnRef<'_>> {
    let mut parts = entry.trim().split('/');
    let kind_group = parts.next()?;
    let (first, second, rest) = (parts.next(), parts.next(), parts.next());
    if rest.is_some() {
        return None;
    }
    let (namespace, name) = match (first, second) {
        (Some(name), None) => (None, name),
        (Some(ns), Some(name)) => (Some(ns), name),
        _ => return None,
    };
    let (kind, group) = kind_group.split_once('.').unwrap_or((kind_group, ""));
    if kind.is_empty() || name.is_empty() || namespace.is_some_and(str::is_empty) {
        return None;
    }
    Some(DependsOnRef {
        kind,
        group,
        namespace,
        name,
    })
}

impl DependencyRule for DependsOnAnnotation {
    fn name(&self) -> &str {
        DEPENDS_ON_ANNOTATION
    }
    fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
        let field = || format!("metadata.annotations[{DEPENDS_ON_ANNOTATION}]");
        for (i, o) in set.iter() {
            let Some(value) = o
                .object()
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DEPENDS_ON_ANNOTATION))
            else {
                continue;
            };
            for entry in value.split(',').filter(|e| !e.trim().is_empty()) {
                let r = parse_depends_on(entry).ok_or_else(|| Error::InvalidObject {
                    object: o.to_string(),
                    field: field(),
                    reason: format!(
                        "{:?} is not of the form Kind[.group]/[namespace/]name",
                        entry.trim()
                    ),
                })?;
                let mut found: Vec<usize> =
                    set.find(r.group, r.kind, r.namespace, r.name).collect();
                if found.is_empty() && r.namespace.is_none() {
                    found = set.find(r.group, r.kind, o.namespace(), r.name).collect();
                }
                if found.is_empty() {
                    return Err(Error::InvalidObject {
                        object: o.to_string(),
                        field: field(),
                        reason: format!("{:?} names no object of this plan", entry.trim()),
                    });
                }
                for d in found {
                    sink.add(d, i);
                }
            }
        }
        Ok(())
    }
}
