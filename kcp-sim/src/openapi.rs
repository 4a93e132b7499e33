//! OpenAPI v3 documents, as kube-apiserver serves them: the index `/openapi/v3` and one
//! document per group-version (`/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`)
//! whose `components.schemas` hold every served kind of that group-version under its
//! Kubernetes definition name, the top-level kinds marked with `x-kubernetes-group-version-kind`.
//!
//! Where the schemas come from:
//! - Kubernetes builtin kinds: k8s-openapi's `schemars::JsonSchema` implementations, generated
//!   once per kind (lazily, cached) with schemars' OpenAPI 3 settings. Definitions are named as
//!   kube names them (`io.k8s.api.core.v1.ConfigMap`) and referenced as
//!   `#/components/schemas/<name>`; a `$ref` with a sibling description becomes
//!   `allOf: [{$ref}]` as in kube's documents.
//! - kcp kinds (`*.kcp.io`): the schemas kcp v0.30.0 serves them with, recorded from a real
//!   kcp (`crate::kcp::recorded_schemas`).
//! - CRDs and bound APIResourceSchemas: their `openAPIV3Schema` per served version, named
//!   `<reversed group>.<version>.<Kind>` as kube names them, with `apiVersion`, `kind` and
//!   `metadata` (a reference to ObjectMeta) added at the root, as kube does.
//!
//! Fixes to schemars' output, so the documents read like a real server's: the top-level kinds
//! get their `x-kubernetes-group-version-kind`; `metadata` is not listed in a builtin kind's
//! `required` (k8s-openapi requires it because the Rust field is not optional; kube does not).
//!
//! `paths` describe two operations per kind, with its `x-kubernetes-group-version-kind`: the
//! `get` of one object (`kubectl explain` finds a resource's kind through it) and its `patch`,
//! whose `fieldValidation` parameter tells kubectl that the server validates fields (without
//! it kubectl sends no `fieldValidation` and validates on its own).
//!
//! Known differences: no other operations are described; the `patch` lists no
//! `application/strategic-merge-patch+json` body, since k8s-openapi carries no
//! `x-kubernetes-patch-strategy`/`-patch-merge-key` and kubectl would compute its strategic
//! merge patches from these schemas (replacing lists instead of merging them by key); without
//! it kubectl computes them from its own Go types, as against an older server.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::apiexport;
use crate::resource::{GroupResource, Registry, ResourceType};
use crate::store::State;

/// Where a definition name is referenced from.
pub const REF_PREFIX: &str = "#/components/schemas/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// One served kind at one version; `custom` is the `openAPIV3Schema` of a CRD or
/// APIResourceSchema version (`None` for a builtin kind).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeSchema {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The schema of a custom kind.
    pub custom: Option<Value>,
}

impl TypeSchema {
    /// The document path of the group-version: `api/v1` or `apis/<group>/<version>`.
    pub fn document_path(&self) -> String {
        document_path(&self.group, &self.version)
    }
}

/// `api/<version>` for the core group, `apis/<group>/<version>` otherwise.
pub fn document_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// One group-version document, serialized once, with the hash the index advertises.
#[derive(Debug)]
pub struct GvDocument {
    /// `api/v1` or `apis/<group>/<version>`.
    pub path: String,
    /// The JSON document.
    pub body: Bytes,
    /// Hex SHA-256 of `body` (changes whenever the document does).
    pub hash: String,
}

/// A kind's definition name and every definition its schema needs (itself included).
#[derive(Debug)]
struct Components {
    name: String,
    schemas: Map<String, Value>,
}

fn generate<T: JsonSchema>() -> Components {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let _reference = generator.subschema_for::<T>();
    Components {
        name: T::schema_name().into_owned(),
        schemas: generator.take_definitions(true),
    }
}

/// The components of a builtin Kubernetes kind, or `None` when kcp-sim does not know it.
fn generate_builtin(group: &str, version: &str, kind: &str) -> Option<Components> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, apps::v1 as apps, autoscaling::v2 as autoscaling,
        batch::v1 as batch, coordination, core::v1 as core, discovery::v1 as discovery, events,
        networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    let components = match (group, version, kind) {
        ("", "v1", "Namespace") => generate::<core::Namespace>(),
        ("", "v1", "ConfigMap") => generate::<core::ConfigMap>(),
        ("", "v1", "Secret") => generate::<core::Secret>(),
        ("", "v1", "ServiceAccount") => generate::<core::ServiceAccount>(),
        ("", "v1", "Service") => generate::<core::Service>(),
        ("", "v1", "Event") => generate::<core::Event>(),
        ("", "v1", "Node") => generate::<core::Node>(),
        ("", "v1", "Pod") => generate::<core::Pod>(),
        ("", "v1", "ResourceQuota") => generate::<core::ResourceQuota>(),
        ("", "v1", "Endpoints") => generate::<core::Endpoints>(),
        ("", "v1", "LimitRange") => generate::<core::LimitRange>(),
        ("", "v1", "PersistentVolume") => generate::<core::PersistentVolume>(),
        ("", "v1", "PodTemplate") => generate::<core::PodTemplate>(),
        ("", "v1", "ReplicationController") => generate::<core::ReplicationController>(),
        ("discovery.k8s.io", "v1", "EndpointSlice") => generate::<discovery::EndpointSlice>(),
        ("node.k8s.io", "v1", "RuntimeClass") => generate::<node::RuntimeClass>(),
        ("storage.k8s.io", "v1", "StorageClass") => generate::<storage::StorageClass>(),
        ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") => {
            generate::<admission::ValidatingWebhookConfiguration>()
        }
        ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration") => {
            generate::<admission::MutatingWebhookConfiguration>()
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy") => {
            generate::<admission::ValidatingAdmissionPolicy>()
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding") => {
            generate::<admission::ValidatingAdmissionPolicyBinding>()
        }
        ("batch", "v1", "Job") => generate::<batch::Job>(),
        ("batch", "v1", "CronJob") => generate::<batch::CronJob>(),
        ("apps", "v1", "ReplicaSet") => generate::<apps::ReplicaSet>(),
        ("events.k8s.io", "v1", "Event") => generate::<events::v1::Event>(),
        ("coordination.k8s.io", "v1", "Lease") => generate::<coordination::v1::Lease>(),
        ("apps", "v1", "Deployment") => generate::<apps::Deployment>(),
        ("apps", "v1", "StatefulSet") => generate::<apps::StatefulSet>(),
        ("apps", "v1", "DaemonSet") => generate::<apps::DaemonSet>(),
        ("", "v1", "PersistentVolumeClaim") => generate::<core::PersistentVolumeClaim>(),
        ("networking.k8s.io", "v1", "Ingress") => generate::<networking::Ingress>(),
        ("networking.k8s.io", "v1", "IngressClass") => generate::<networking::IngressClass>(),
        ("networking.k8s.io", "v1", "NetworkPolicy") => generate::<networking::NetworkPolicy>(),
        ("autoscaling", "v2", "HorizontalPodAutoscaler") => {
            generate::<autoscaling::HorizontalPodAutoscaler>()
        }
        ("scheduling.k8s.io", "v1", "PriorityClass") => generate::<scheduling::PriorityClass>(),
        ("apps", "v1", "ControllerRevision") => generate::<apps::ControllerRevision>(),
        ("policy", "v1", "PodDisruptionBudget") => generate::<policy::PodDisruptionBudget>(),
        ("rbac.authorization.k8s.io", "v1", "Role") => generate::<rbac::Role>(),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding") => generate::<rbac::RoleBinding>(),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole") => generate::<rbac::ClusterRole>(),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => {
            generate::<rbac::ClusterRoleBinding>()
        }
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition") => {
            generate::<apiextensions::CustomResourceDefinition>()
        }
        _ => return infrastructure_components(group, version, kind),
    };
    Some(as_kube_documents(components))
}

/// k8s-openapi's components made to read as kube's own documents.
fn as_kube_documents(mut components: Components) -> Components {
    drop_required_metadata(&mut components);
    default_top_level_structs(&mut components);
    components
}

/// The components of kube-apiserver's infrastructure kinds (registration, flow control, IP
/// allocation, storage drivers, devices, certificates) and of the kinds it answers without
/// storing; then kcp's.
fn infrastructure_components(group: &str, version: &str, kind: &str) -> Option<Components> {
    use k8s_openapi::api::{
        authentication::v1 as authentication, authorization::v1 as authorization,
        certificates::v1 as certificates, core::v1 as core, flowcontrol::v1 as flowcontrol,
        networking::v1 as networking, storage::v1 as storage,
    };
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    let components = match (group, version, kind) {
        ("apiregistration.k8s.io", "v1", "APIService") => generate::<apiregistration::APIService>(),
        ("certificates.k8s.io", "v1", "CertificateSigningRequest") => {
            generate::<certificates::CertificateSigningRequest>()
        }
        ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema") => {
            generate::<flowcontrol::FlowSchema>()
        }
        ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration") => {
            generate::<flowcontrol::PriorityLevelConfiguration>()
        }
        ("networking.k8s.io", "v1", "IPAddress") => generate::<networking::IPAddress>(),
        ("networking.k8s.io", "v1", "ServiceCIDR") => generate::<networking::ServiceCIDR>(),
        ("storage.k8s.io", "v1", "CSIDriver") => generate::<storage::CSIDriver>(),
        ("storage.k8s.io", "v1", "CSINode") => generate::<storage::CSINode>(),
        ("storage.k8s.io", "v1", "CSIStorageCapacity") => generate::<storage::CSIStorageCapacity>(),
        ("storage.k8s.io", "v1", "VolumeAttachment") => generate::<storage::VolumeAttachment>(),
        ("resource.k8s.io" | "storage.k8s.io", "v1", _) => return promoted_in_1_34(kind),
        ("", "v1", "Binding") => generate::<core::Binding>(),
        ("", "v1", "ComponentStatus") => generate::<core::ComponentStatus>(),
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => {
            generate::<k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler>()
        }
        // The `/scale` subresource's kind (its Table's column descriptions).
        ("autoscaling", "v1", "Scale") => generate::<k8s_openapi::api::autoscaling::v1::Scale>(),
        ("authentication.k8s.io", "v1", "SelfSubjectReview") => {
            generate::<authentication::SelfSubjectReview>()
        }
        ("authentication.k8s.io", "v1", "TokenReview") => generate::<authentication::TokenReview>(),
        ("authorization.k8s.io", "v1", "LocalSubjectAccessReview") => {
            generate::<authorization::LocalSubjectAccessReview>()
        }
        ("authorization.k8s.io", "v1", "SelfSubjectAccessReview") => {
            generate::<authorization::SelfSubjectAccessReview>()
        }
        ("authorization.k8s.io", "v1", "SelfSubjectRulesReview") => {
            generate::<authorization::SelfSubjectRulesReview>()
        }
        ("authorization.k8s.io", "v1", "SubjectAccessReview") => {
            generate::<authorization::SubjectAccessReview>()
        }
        _ => return kcp_components(group, version, kind),
    };
    Some(as_kube_documents(components))
}

/// The `v1` components of the kinds Kubernetes 1.34 made `v1` (kube-apiserver v1.34 serves them
/// so). Built against an older k8s-openapi, the schemas are those of the beta versions the `v1`
/// ones were promoted from unchanged, the kind's own component named as `v1`'s.
fn promoted_in_1_34(kind: &str) -> Option<Components> {
    let mut components = promoted_kind_components(kind)?;
    if let Some(beta) = components.schemas.remove(&components.name) {
        let name = components
            .name
            .replace(".v1beta2.", ".v1.")
            .replace(".v1beta1.", ".v1.");
        components.schemas.insert(name.clone(), beta);
        components.name = name;
    }
    Some(as_kube_documents(components))
}

k8s_openapi::k8s_if_ge_1_34! {
    fn promoted_kind_components(kind: &str) -> Option<Components> {
        use k8s_openapi::api::{resource::v1 as resource, storage::v1 as storage};
        Some(match kind {
            "DeviceClass" => generate::<resource::DeviceClass>(),
            "ResourceClaim" => generate::<resource::ResourceClaim>(),
            "ResourceClaimTemplate" => generate::<resource::ResourceClaimTemplate>(),
            "ResourceSlice" => generate::<resource::ResourceSlice>(),
            "VolumeAttributesClass" => generate::<storage::VolumeAttributesClass>(),
            _ => return None,
        })
    }
}

k8s_openapi::k8s_if_le_1_33! {
    fn promoted_kind_components(kind: &str) -> Option<Components> {
        use k8s_openapi::api::{resource::v1beta2 as resource, storage::v1beta1 as storage};
        Some(match kind {
            "DeviceClass" => generate::<resource::DeviceClass>(),
            "ResourceClaim" => generate::<resource::ResourceClaim>(),
            "ResourceClaimTemplate" => generate::<resource::ResourceClaimTemplate>(),
            "ResourceSlice" => generate::<resource::ResourceSlice>(),
            "VolumeAttributesClass" => generate::<storage::VolumeAttributesClass>(),
            _ => return None,
        })
    }
}

/// kube's documents give a struct field that is not a Go pointer `default: {}`; every builtin
/// kind's `metadata`, `spec` and `status` are such fields (a kind's deeper structs are not
/// marked: k8s-openapi does not say which Go fields are pointers).
fn default_top_level_structs(components: &mut Components) {
    let Some(properties) = components
        .schemas
        .get_mut(&components.name)
        .and_then(|s| s.get_mut("properties"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for field in ["metadata", "spec", "status"] {
        if let Some(Value::Object(property)) = properties.get_mut(field)
            && (property.contains_key("allOf") || property.contains_key("$ref"))
        {
            property.insert("default".into(), json!({}));
        }
    }
}

/// kcp's own kinds, by the schemas kcp serves them with
/// ([`crate::kcp::recorded_schemas`]).
fn kcp_components(group: &str, version: &str, kind: &str) -> Option<Components> {
    let schema = crate::kcp::recorded_schemas::schema(group, version, kind)?;
    Some(custom_components(group, version, kind, schema))
}

fn drop_required_metadata(components: &mut Components) {
    let Some(required) = components
        .schemas
        .get_mut(&components.name)
        .and_then(|s| s.get_mut("required"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    required.retain(|r| r != "metadata");
    if required.is_empty()
        && let Some(schema) = components
            .schemas
            .get_mut(&components.name)
            .and_then(Value::as_object_mut)
    {
        schema.remove("required");
    }
}

/// The cached components of a builtin kind (generated on first use).
fn builtin(group: &str, version: &str, kind: &str) -> Option<Arc<Components>> {
    type Cache = Mutex<HashMap<(String, String, String), Option<Arc<Components>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (group.to_owned(), version.to_owned(), kind.to_owned());
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let generated = generate_builtin(group, version, kind).map(Arc::new);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, generated.clone());
    }
    generated
}

/// The description of a field of a builtin kind (`["metadata", "name"]` of a ConfigMap): the
/// Go documentation kube-apiserver also shows as a Table column's description.
pub fn field_description(group: &str, version: &str, kind: &str, path: &[&str]) -> Option<String> {
    let components = builtin(group, version, kind)?;
    let definition = |schema: &Value| -> Option<Value> {
        let reference = schema.get("$ref").or_else(|| {
            schema
                .get("allOf")
                .and_then(Value::as_array)
                .and_then(|all| all.first())
                .and_then(|first| first.get("$ref"))
        });
        match reference.and_then(Value::as_str) {
            Some(r) => components
                .schemas
                .get(r.rsplit('/').next().unwrap_or_default())
                .cloned(),
            None => Some(schema.clone()),
        }
    };
    let mut schema = components.schemas.get(&components.name)?.clone();
    let mut description = None;
    for field in path {
        let property = definition(&schema)?.get("properties")?.get(*field)?.clone();
        description = property
            .get("description")
            .and_then(Value::as_str)
            .map(String::from);
        schema = property;
    }
    description
}

/// The definition name kube gives a custom kind: the group's labels reversed, then version and
/// kind (`stable.example.com`, `v1`, `CronTab` → `com.example.stable.v1.CronTab`).
pub fn custom_definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut labels: Vec<&str> = group.split('.').filter(|l| !l.is_empty()).collect();
    labels.reverse();
    labels.push(version);
    labels.push(kind);
    labels.join(".")
}

/// A custom kind's schema as kube publishes it: `apiVersion`, `kind` and a `metadata`
/// reference to ObjectMeta at the root, plus the ObjectMeta definitions.
fn custom_components(group: &str, version: &str, kind: &str, schema: &Value) -> Components {
    static OBJECT_META_SCHEMAS: OnceLock<Map<String, Value>> = OnceLock::new();
    let mut schemas = OBJECT_META_SCHEMAS
        .get_or_init(|| generate::<ObjectMeta>().schemas)
        .clone();
    let name = custom_definition_name(group, version, kind);
    let mut root = match schema {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    let properties = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}),
        );
        properties.insert(
            "kind".into(),
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}),
        );
        properties.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": format!("{REF_PREFIX}{OBJECT_META}")}], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
    }
    root.entry("type").or_insert_with(|| json!("object"));
    schemas.insert(name.clone(), Value::Object(root));
    Components { name, schemas }
}

/// The `components.schemas` and `paths` of one group-version document.
fn document_parts(types: &[&TypeSchema]) -> (Map<String, Value>, Map<String, Value>) {
    let mut schemas = Map::new();
    let mut paths = Map::new();
    for t in types {
        let components = match &t.custom {
            Some(schema) => Some(Arc::new(custom_components(
                &t.group, &t.version, &t.kind, schema,
            ))),
            None => builtin(&t.group, &t.version, &t.kind),
        };
        let Some(components) = components else {
            continue;
        };
        for (name, schema) in &components.schemas {
            schemas.insert(name.clone(), schema.clone());
        }
        let gvk = json!({"group": t.group, "kind": t.kind, "version": t.version});
        if let Some(Value::Object(root)) = schemas.get_mut(&components.name) {
            root.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
        }
        paths.insert(object_path(t), read_operation(t, &components.name, gvk));
    }
    (schemas, paths)
}

/// `/api/v1/namespaces/{namespace}/configmaps/{name}` and the like.
fn object_path(t: &TypeSchema) -> String {
    let namespace = if t.namespaced {
        "namespaces/{namespace}/"
    } else {
        ""
    };
    format!("/{}/{namespace}{}/{{name}}", t.document_path(), t.plural)
}

fn read_operation(t: &TypeSchema, definition: &str, gvk: Value) -> Value {
    let scope = if t.namespaced { "Namespaced" } else { "" };
    let object = json!({"$ref": format!("{REF_PREFIX}{definition}")});
    let query = |name: &str, kind: &str| json!({"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": true}});
    // meta.v1.Patch, inline: these documents hold the served kinds' schemas only.
    let patch = json!({"schema": {"type": "object"}});
    json!({
        "get": {
            "operationId": format!("read{scope}{}", t.kind),
            "x-kubernetes-action": "get",
            "x-kubernetes-group-version-kind": gvk,
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": object}}}},
        },
        "patch": {
            "operationId": format!("patch{scope}{}", t.kind),
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [
                query("dryRun", "string"),
                query("fieldManager", "string"),
                query("fieldValidation", "string"),
                query("force", "boolean"),
            ],
            "requestBody": {"content": {
                "application/apply-patch+yaml": patch,
                "application/json-patch+json": patch,
                "application/merge-patch+json": patch,
            }, "required": true},
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": object}}}},
        },
    })
}

/// A document as kube-apiserver renders it: a group-version served by the apiextensions server
/// (custom kinds only) has that server's title and version; a builtin one says the Kubernetes
/// minor version and the bearer-token security scheme. The hash is the SHA-512 of the body.
fn render_document(path: String, types: &[&TypeSchema], release: &str) -> GvDocument {
    let (schemas, paths) = document_parts(types);
    let custom_only = types.iter().all(|t| t.custom.is_some());
    let doc = if custom_only {
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths,
            "components": {"schemas": schemas},
        })
    } else {
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": minor_version(release)},
            "paths": paths,
            "components": {"schemas": schemas, "securitySchemes": {"BearerToken": {
                "type": "apiKey",
                "description": "Bearer Token authentication",
                "name": "authorization",
                "in": "header",
            }}},
        })
    };
    let body = Bytes::from(doc.to_string());
    let hash = hex::encode_upper(Sha512::digest(&body));
    GvDocument { path, body, hash }
}

/// `1.34` of `v1.34.2`: what a builtin document's `info.version` says (and the OpenAPI v2
/// document's).
pub fn minor_version(release: &str) -> String {
    release
        .trim_start_matches('v')
        .splitn(3, '.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}

/// The documents of every served group-version, as a server of Kubernetes `release` renders
/// them. Documents made of builtin kinds only are rendered once per set of kinds and shared;
/// documents with custom kinds are rendered per call.
pub fn documents(types: &[TypeSchema], release: &str) -> BTreeMap<String, Arc<GvDocument>> {
    type Cache = Mutex<HashMap<String, Arc<GvDocument>>>;
    static BUILTIN_DOCS: OnceLock<Cache> = OnceLock::new();
    let mut by_path: BTreeMap<String, Vec<&TypeSchema>> = BTreeMap::new();
    for t in types {
        by_path.entry(t.document_path()).or_default().push(t);
    }
    let cache = BUILTIN_DOCS.get_or_init(Cache::default);
    let mut docs = BTreeMap::new();
    for (path, mut kinds) in by_path {
        kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
        let doc = if kinds.iter().all(|k| k.custom.is_none()) {
            let key = kinds.iter().fold(format!("{release}|{path}"), |k, t| {
                format!("{k}|{}/{}/{}", t.kind, t.plural, t.namespaced)
            });
            let hit = cache.lock().ok().and_then(|c| c.get(&key).cloned());
            hit.unwrap_or_else(|| {
                let doc = Arc::new(render_document(path.clone(), &kinds, release));
                if let Ok(mut c) = cache.lock() {
                    c.insert(key, doc.clone());
                }
                doc
            })
        } else {
            Arc::new(render_document(path.clone(), &kinds, release))
        };
        docs.insert(path, doc);
    }
    docs
}

/// The `/openapi/v3` index: every document path with its URL (under `prefix`, the request's
/// path before `/openapi/v3`, e.g. `/clusters/root`) and hash.
pub fn index(prefix: &str, docs: &BTreeMap<String, Arc<GvDocument>>) -> Value {
    let paths: Map<String, Value> = docs
        .values()
        .map(|d| {
            let url = format!("{prefix}/openapi/v3/{}?hash={}", d.path, d.hash);
            (d.path.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    json!({ "paths": paths })
}

/// Every kind and version a registry serves; `custom` looks up the schema of a custom kind
/// (returning `None` for a builtin one).
pub fn served_types(
    registry: &Registry,
    custom: impl Fn(&ResourceType, &str) -> Option<Value>,
) -> Vec<TypeSchema> {
    registry
        .types()
        .flat_map(|rt| rt.versions.iter().map(move |v| (rt, v)))
        .map(|(rt, version)| TypeSchema {
            group: rt.group.clone(),
            version: version.clone(),
            kind: rt.kind.clone(),
            plural: rt.plural.clone(),
            namespaced: rt.namespaced,
            custom: custom(rt, version),
        })
        .collect()
}

/// The schema of a custom kind served in a cluster: from its CRD, or from the
/// APIResourceSchema an APIBinding of the cluster bound for it.
pub fn custom_schema(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
) -> Option<Value> {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let crd_name = format!("{}.{}", rt.plural, rt.group);
    if let Some(crd) = state.lookup(cluster, &crds, "", &crd_name) {
        return version_schema(&crd.value().ok()?, version, "/schema/openAPIV3Schema");
    }
    let bindings = state
        .clusters
        .get(cluster)?
        .objects
        .get(&apiexport::bindings())?;
    bindings.values().find_map(|stored| {
        let binding = stored.value().ok()?;
        let bound = binding.pointer("/status/boundResources")?.as_array()?;
        let entry = bound.iter().find(|b| {
            b.get("group").and_then(Value::as_str) == Some(rt.group.as_str())
                && b.get("resource").and_then(Value::as_str) == Some(rt.plural.as_str())
        })?;
        let name = entry.pointer("/schema/name")?.as_str()?;
        let export_cluster = binding.pointer("/status/apiExportClusterName")?.as_str()?;
        let stored = apiexport::schema::load(state, export_cluster, name)?;
        version_schema(&stored, version, "/schema")
    })
}

/// The schema of `version` in a CRD (`pointer` `/schema/openAPIV3Schema`) or an
/// APIResourceSchema (`/schema`).
pub fn version_schema(object: &Value, version: &str, pointer: &str) -> Option<Value> {
    object
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
        .pointer(pointer)
        .cloned()
}

#[cfg(test)]
mod tests;
