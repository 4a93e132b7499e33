//! The HTTP face of the simulator: routing of Kubernetes and kcp URLs, query parameters, JSON
//! and YAML bodies, chunked watch streams, and `Status` errors as the real server writes them.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::answered;
use crate::api::{Endpoint, Sim, Target, WatchStart, render};
use crate::authorization::{self, Attributes, User};
use crate::continue_token::ContinueToken;
use crate::events::EventEncoder;
use crate::faults::Verb;
use crate::field_validation::FieldValidation;
use crate::media::{Encoding, Form, Negotiated};
use crate::pod_connections;
use crate::query::Filter;
use crate::resource::{Access, Flavor, GroupResource, ResourceType};
use crate::scale;
use crate::schema::field::{ErrorType, FieldError, invalid_object};
use crate::selector::{FieldSelector, LabelSelector};
use crate::semantics::{DeleteRequest, PatchKind, WriteOptions, Written};
use crate::status::{ApiError, ApiResult};
use crate::store::{ChangeKind, Stored};

/// The response body type: whole bodies and watch streams.
pub type Body = BoxBody<Bytes, Infallible>;

/// What the HTTP layer needs besides the simulator.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// How often a watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// The longest a watch stays open when the client sets no timeout.
    pub max_watch: Duration,
    /// The shard this listener serves (its virtual workspaces show that shard's clusters).
    pub shard: usize,
}

/// Answers one HTTP request.
pub async fn handle(
    sim: Arc<Sim>,
    settings: Arc<HttpSettings>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let protobuf_only = accept
        .as_deref()
        .is_some_and(crate::protobuf::accepts_only_protobuf);
    // Objects are negotiated; discovery, health and the rest answer as they do.
    let resource = is_resource_path(sim.flavor, &path);
    let negotiated = if resource {
        crate::media::negotiate(accept.as_deref())
    } else {
        Ok(Negotiated::json())
    };
    let watching = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| matches!(p, "watch=true" | "watch=1")));
    let label = crate::requests::label(method.as_str(), &path, req.uri().query());
    let started = std::time::Instant::now();
    let deprecation = deprecation_warning(&sim, &path);
    let mut response = match &negotiated {
        Err(refused) => error_response(refused),
        Ok(_) => match route(&sim, &settings, req).await {
            Ok(resp) => resp,
            Err(err) => error_response(&err),
        },
    };
    match &negotiated {
        Ok(negotiated) if resource && !watching => {
            response = in_the_form(negotiated, response).await;
        }
        Ok(_) if protobuf_only => response = crate::protobuf::response::transcode(response).await,
        _ => {}
    }
    if let Some(warning) = deprecation
        && let Ok(value) = HeaderValue::from_str(&format!("299 - \"{warning}\""))
    {
        response.headers_mut().append(header::WARNING, value);
    }
    sim.requests.record(label, started.elapsed());
    tracing::debug!(%method, %path, status = response.status().as_u16(), "kcp-sim request");
    Ok(response)
}

/// Whether `path` names objects (`/api/v1/namespaces/ns/configmaps`, ...), whose answers are
/// negotiated, rather than discovery or anything else.
fn is_resource_path(flavor: Flavor, path: &str) -> bool {
    let segments = decode_segments(path);
    let (_, skip) = endpoint_of(flavor, &segments);
    let rest: Vec<&str> = segments
        .get(skip..)
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .collect();
    matches!(rest.as_slice(), ["api", _, _, ..] | ["apis", _, _, _, ..])
}

/// A JSON answer about objects in the form negotiated (see [`crate::media`]): the first
/// acceptable answer that can carry it, as the object, its Table (rendered by the route) or its
/// metadata alone, in JSON, YAML or protobuf; a form of the wrong shape is its `406`, and an
/// object without a protobuf form asked for only in protobuf is kube's `406` in protobuf.
async fn in_the_form(negotiated: &Negotiated, response: Response<Body>) -> Response<Body> {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json || response.headers().contains_key(header::TRANSFER_ENCODING) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let Ok(answer) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Full::new(bytes).boxed());
    };
    let Some(wanted) = negotiated.for_answer(&answer) else {
        return crate::protobuf::response::not_acceptable_in_protobuf();
    };
    if wanted.encoding == Encoding::Json && matches!(wanted.form, Form::Object | Form::Table(_)) {
        return Response::from_parts(parts, Full::new(bytes).boxed());
    }
    let answer = match crate::media::as_metadata(wanted.form, answer) {
        Ok(answer) => answer,
        Err(refused) => return error_response(&refused),
    };
    let encoded = match wanted.encoding {
        Encoding::Json => Ok((
            "application/json",
            serde_json::to_vec(&answer).unwrap_or_default().into(),
        )),
        Encoding::Yaml => Ok(("application/yaml", crate::media::as_yaml(&answer).into())),
        Encoding::Protobuf => crate::protobuf::encode_envelope(&answer)
            .map(|bytes| (crate::protobuf::MEDIA_TYPE, bytes)),
    };
    match encoded {
        Ok((content_type, bytes)) => reencoded(parts, content_type, bytes),
        Err(_) if parts.status.is_success() => {
            crate::protobuf::response::not_acceptable_in_protobuf()
        }
        Err(_) => json_response(parts.status, &answer),
    }
}

/// A response with its status and headers kept and its body replaced.
fn reencoded(
    mut parts: http::response::Parts,
    content_type: &'static str,
    bytes: Bytes,
) -> Response<Body> {
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(bytes).boxed())
}

/// The warning the server sends with every request for a deprecated resource it serves:
/// `core/v1` Endpoints since Kubernetes 1.33, and a custom resource at a version its CRD marks
/// deprecated ([`crate::crd::deprecation_warning`]).
fn deprecation_warning(sim: &Sim, path: &str) -> Option<String> {
    let segments = decode_segments(path);
    let (endpoint, skip) = endpoint_of(sim.flavor, &segments);
    let rest: Vec<&str> = segments.get(skip..)?.iter().map(String::as_str).collect();
    let (group, version, tail) = match rest.as_slice() {
        ["api", version, tail @ ..] => ("", *version, tail),
        ["apis", group, version, tail @ ..] => (*group, *version, tail),
        _ => return None,
    };
    let plural = match tail {
        ["namespaces", _, plural, ..] => *plural,
        [plural, ..] => *plural,
        [] => return None,
    };
    if group.is_empty() {
        let endpoints =
            sim.flavor == Flavor::Kubernetes && version == "v1" && plural == "endpoints";
        return endpoints.then(|| {
            "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice".into()
        });
    }
    let state = sim.read();
    let cluster = crate::api::addressed_cluster(&state, &endpoint)?;
    let crd = state.lookup(
        &cluster,
        &GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions"),
        "",
        &format!("{plural}.{group}"),
    )?;
    // Every request of a custom resource asks; only a CRD that marks a version deprecated is
    // decoded (objects are stored as compact JSON).
    const DEPRECATED: &[u8] = br#""deprecated":true"#;
    if !crd.json.windows(DEPRECATED.len()).any(|w| w == DEPRECATED) {
        return None;
    }
    crate::crd::deprecation_warning(&crd.value().ok()?, version)
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()).boxed());
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    full(status, "application/json", body)
}

/// An answer Go's `http.Error` writes (such as the mux's `404 page not found` for a path no
/// handler serves): the message and a newline as plain text, not a `Status`.
fn plain_error(status: StatusCode, message: &str) -> Response<Body> {
    full(
        status,
        "text/plain; charset=utf-8",
        Bytes::from(format!("{message}\n")),
    )
}

/// A `Status` error response.
pub fn error_response(err: &ApiError) -> Response<Body> {
    let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if err.plain_text {
        return plain_error(status, &err.message);
    }
    let mut resp = json_response(status, &err.to_status());
    if let Some(secs) = err.retry_after_seconds()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// Query parameters, decoded.
#[derive(Debug, Default)]
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(raw: Option<&str>) -> Self {
        Query(
            raw.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                .unwrap_or_default(),
        )
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }
}

fn decode_segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

/// Splits off the cluster prefix of a path.
fn endpoint_of(flavor: Flavor, segments: &[String]) -> (Endpoint, usize) {
    let seg = |i: usize| segments.get(i).map(String::as_str);
    if flavor == Flavor::Kcp {
        if seg(0) == Some("clusters")
            && let Some(c) = seg(1)
        {
            let endpoint = if c == "*" {
                Endpoint::Wildcard
            } else {
                Endpoint::Cluster(c.to_string())
            };
            return (endpoint, 2);
        }
        if seg(0) == Some("services")
            && seg(3) == Some("clusters")
            && let (Some(service), Some(name), Some(c)) = (seg(1), seg(2), seg(4))
            && let Some(view) = crate::kcp::LifecycleView::of_service(service, name)
        {
            let cluster = (c != "*").then(|| c.to_string());
            return (
                Endpoint::Lifecycle {
                    view,
                    cluster,
                    shard: None,
                },
                5,
            );
        }
        if seg(0) == Some("services")
            && seg(1) == Some("apiexport")
            && seg(4) == Some("clusters")
            && let (Some(export_cluster), Some(export), Some(c)) = (seg(2), seg(3), seg(5))
        {
            return (
                Endpoint::ApiExport {
                    export_cluster: export_cluster.to_string(),
                    export: export.to_string(),
                    cluster: (c != "*").then(|| c.to_string()),
                    shard: None,
                },
                6,
            );
        }
        // kcp serves the root workspace without a prefix.
        return (Endpoint::Cluster(crate::kcp::ROOT.to_string()), 0);
    }
    (Endpoint::Plain, 0)
}

async fn route(
    sim: &Arc<Sim>,
    settings: &Arc<HttpSettings>,
    req: Request<Incoming>,
) -> ApiResult<Response<Body>> {
    let segments = decode_segments(req.uri().path());
    let (endpoint, skip) = endpoint_of(sim.flavor, &segments);
    // A virtual workspace URL shows the clusters of the shard it belongs to.
    let endpoint = match endpoint {
        Endpoint::Lifecycle { view, cluster, .. } => Endpoint::Lifecycle {
            view,
            cluster,
            shard: Some(settings.shard),
        },
        Endpoint::ApiExport {
            export_cluster,
            export,
            cluster,
            ..
        } => Endpoint::ApiExport {
            export_cluster,
            export,
            cluster,
            shard: Some(settings.shard),
        },
        other => other,
    };
    let rest: Vec<&str> = segments[skip..].iter().map(String::as_str).collect();
    let query = Query::parse(req.uri().query());
    let user = User::of_request(sim, &endpoint, req.headers())?;
    let (group, version, tail) = match rest.as_slice() {
        ["api", "v1", tail @ ..] if !tail.is_empty() => ("", "v1", tail),
        ["apis", g, v, tail @ ..] if !tail.is_empty() => (*g, *v, tail),
        _ => {
            if let Some(user) = &user {
                let attrs = Attributes {
                    verb: Attributes::verb_of(req.method(), true, false).into(),
                    path: format!("/{}", rest.join("/")),
                    ..Attributes::default()
                };
                authorization::check(sim, &endpoint, user, &attrs)?;
            }
            // The health endpoints answer whatever the method; the rest only GET.
            let health = matches!(rest.first(), Some(&("healthz" | "readyz" | "livez")));
            if (req.method() == Method::GET || health)
                && let Some(resp) = non_resource(sim, &endpoint, &rest, &req)?
            {
                return Ok(resp);
            }
            return Err(ApiError::path_not_found());
        }
    };
    if req.method() == Method::POST
        && let [plural] = tail
    {
        let asker = user.clone().unwrap_or_else(User::admin);
        let (group, plural) = (group.to_string(), plural.to_string());
        if authorization::is_review(&group, &plural) {
            if let Some(user) = &user {
                let attrs = Attributes {
                    verb: "create".into(),
                    group: group.clone(),
                    resource: plural.clone(),
                    ..Attributes::default()
                };
                authorization::check(sim, &endpoint, user, &attrs)?;
            }
            let manager = manager_of_user_agent(req.headers());
            let (content_type, body) = read_body(req).await?;
            let review = decode_body(&body, &content_type)?;
            let answer =
                authorization::answer_review(sim, &endpoint, &group, &review, (&asker, &manager));
            return Ok(json_response(StatusCode::CREATED, &answer));
        }
    }
    // Only served groups have handlers (which answer a 404 Status for what they do not serve);
    // the rest of `/apis` is the not-found handler's.
    if !group.is_empty() && !sim.serves_group(&endpoint, group).unwrap_or(true) {
        return Ok(error_response(&ApiError::page_not_found()));
    }
    let (namespace, plural, name, subresource) = match tail {
        ["namespaces", ns, plural, more @ ..]
            if !(group.is_empty()
                && more.is_empty()
                && matches!(*plural, "status" | "finalize")) =>
        {
            (
                Some(ns.to_string()),
                *plural,
                more.first().copied(),
                more.get(1).copied(),
            )
        }
        [plural, more @ ..] => (None, *plural, more.first().copied(), more.get(1).copied()),
        [] => return Err(ApiError::path_not_found()),
    };
    if tail.len() > 5 || (namespace.is_none() && tail.len() > 3) {
        return Err(ApiError::path_not_found());
    }
    let target = Target {
        endpoint,
        group: group.to_string(),
        version: version.to_string(),
        plural: plural.to_string(),
        namespace,
        name: name.map(String::from),
        subresource: subresource.map(String::from),
    };
    let attrs = authorization::of_target(&target, req.method(), query.flag("watch"));
    authorization::check_wildcard(sim.flavor, &target.endpoint, user.as_ref(), &attrs)?;
    if let Some(user) = &user {
        authorization::check(sim, &target.endpoint, user, &attrs)?;
    }
    let user_agent = manager_of_user_agent(req.headers());
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // `handle` answered an Accept that cannot be negotiated before routing.
    let negotiated = crate::media::negotiate(Some(accept)).unwrap_or_else(|_| Negotiated::json());
    let table_version = match negotiated.first().form {
        Form::Table(version) => Some(version),
        _ => None,
    };
    if table_version.is_some() && req.method() == Method::GET {
        check_include_object(&query)?;
    }
    let method = req.method().clone();
    let (content_type, body) = read_body(req).await?;
    let options_kind = match method {
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        _ => "CreateOptions",
    };
    // kcp's virtual workspaces forward a write with their own client, so a write through the
    // export view is recorded as kcp's unless it names its `fieldManager` (seen on kcp v0.30.0;
    // conformance case kcp-export-view/the-export-view-writes-into-a-consumer-and-reads-it-back).
    let default_manager = match target.endpoint {
        Endpoint::ApiExport { .. } => crate::kcp::CONTROLLER_MANAGER.to_string(),
        _ => user_agent,
    };
    if matches!(method, Method::POST | Method::PUT | Method::PATCH) {
        crate::write_options::check(&crate::write_options::WriteQuery {
            options_kind,
            apply: method == Method::PATCH
                && PatchKind::from_content_type(&content_type) == Some(PatchKind::Apply),
            force: query.get("force"),
            field_manager: query.get("fieldManager"),
            dry_run: &query.all("dryRun"),
            field_validation: query.get("fieldValidation"),
        })?;
    }
    let opts = WriteOptions {
        field_manager: query.get("fieldManager").map(String::from),
        default_manager,
        force: query.flag("force"),
        dry_run: matches!(method, Method::POST | Method::PUT | Method::PATCH)
            && !query.all("dryRun").is_empty(),
        lifecycle: None,
        scale: target.subresource.as_deref() == Some("scale"),
        approval: target.subresource.as_deref() == Some("approval"),
        ephemeral_containers: target.subresource.as_deref()
            == Some(crate::ephemeral_containers::SUBRESOURCE),
        requester: Some(user.clone().unwrap_or_else(User::admin)),
        field_validation: None,
        duplicates: Vec::new(),
    };
    let opts = if matches!(method, Method::POST | Method::PUT | Method::PATCH) {
        with_field_validation(opts, &query, options_kind, &content_type, &body)?
    } else {
        opts
    };
    if matches!(method, Method::POST | Method::DELETE) {
        refuse_subresource_method(sim, &target, &method)?;
    }
    if opts.scale {
        let table = table_version.map(|version| (query.get("includeObject"), version));
        return scale_subresource(sim, &target, &method, &body, &content_type, &opts, table).await;
    }
    if target.group.is_empty()
        && target.plural == "serviceaccounts"
        && target.subresource.as_deref() == Some("token")
    {
        return token_subresource(sim, &target, &method, &body, &content_type, &opts).await;
    }
    if let Some(connection) = pod_connection_of(&target) {
        return pod_connection(sim, &target, connection, &method, &query).await;
    }
    // An unknown cluster is answered below as for any other kind.
    let access = sim
        .access_of(&target.endpoint, &target.group, &target.plural)
        .ok()
        .flatten();
    let question = answered::Question {
        endpoint: &target.endpoint,
        resource: GroupResource::new(&target.group, &target.plural),
        namespace: target.namespace.as_deref(),
        name: target.name.as_deref(),
        subresource: target.subresource.as_deref(),
        method: &method,
        body: None,
        manager: &opts.default_manager,
    };
    if access == Some(Access::ReadOnly) {
        return component_statuses(&target, &method, &query, table_version).await;
    }
    if answered::is_answered(access, &question) {
        let body = match method {
            Method::POST => Some(decode_body(&body, &content_type)?),
            _ => None,
        };
        let asker = user.clone().unwrap_or_else(User::admin);
        let (code, answer) =
            answered::answer(sim, answered::Question { body, ..question }, &asker)?;
        return Ok(json_response(code, &answer));
    }
    match (method, target.name.is_some()) {
        (Method::GET, true) => {
            // kube-apiserver's versioner error, as it is (a 500 without a reason).
            let rv =
                crate::query::parse_resource_version(query.get("resourceVersion").unwrap_or(""))
                    .map_err(|why| ApiError::new(500, "", why))?;
            sim.wait_for_revision(rv).await?;
            let (rt, obj) = sim.get(&target).await?;
            if let Some(version) = table_version {
                let rv = obj.rv.to_string();
                let page = TablePage::whole(version);
                return table_response(sim, &target, &rt, &[obj], &rv, page, &query);
            }
            Ok(object_response(StatusCode::OK, &rt, &target.version, &obj))
        }
        (Method::GET, false) if query.flag("watch") => {
            watch(sim, settings, &target, &query, &negotiated).await
        }
        (Method::GET, false) => list(sim, &target, &query, table_version).await,
        (Method::POST, false) => {
            let obj = decode_object(sim, &target, Verb::Create, &body, &content_type)?;
            let (rt, written) = sim.create(&target, obj, &opts).await?;
            let resp = object_response(StatusCode::CREATED, &rt, &target.version, &written.object);
            Ok(with_warnings(resp, &written, &query))
        }
        (Method::PUT, true) => {
            let obj = decode_object(sim, &target, Verb::Update, &body, &content_type)?;
            let (rt, written) = sim.update(&target, obj, &opts).await?;
            let status = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let resp = object_response(status, &rt, &target.version, &written.object);
            Ok(with_warnings(resp, &written, &query))
        }
        (Method::PATCH, true) => {
            let kind = PatchKind::from_content_type(&content_type)
                .ok_or_else(ApiError::media_type_not_routed)?;
            if kind == PatchKind::Strategic {
                let state = sim.read();
                let r = sim.resolve(&state, &target, crate::faults::Verb::Patch)?;
                if !r.rt.is_typed() {
                    return Err(strategic_merge_refused(sim.flavor));
                }
            }
            let patch = decode_patch(kind, &body, &content_type, opts.field_validation)?;
            let (rt, written) = sim.patch(&target, kind, &patch, &opts).await?;
            let status = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let resp = object_response(status, &rt, &target.version, &written.object);
            Ok(with_warnings(resp, &written, &query))
        }
        (Method::DELETE, true) => {
            let req = delete_request(&body, &query)?;
            let (rt, deleted) = sim.delete(&target, &req).await?;
            if deleted.at_once && !answers_deleted_object(&rt) {
                let name = target.name.as_deref().unwrap_or_default();
                let status = deleted_status(&rt, name, &deleted.object.uid);
                return Ok(json_response(StatusCode::OK, &status));
            }
            Ok(object_response(
                StatusCode::OK,
                &rt,
                &target.version,
                &deleted.object,
            ))
        }
        (Method::DELETE, false) => {
            let req = delete_request(&body, &query)?;
            let filter = filter_of(&query)?;
            let page = match list_read(&query)? {
                ListRead::Latest {
                    limit,
                    continue_token,
                    ..
                } => (limit, continue_token),
                ListRead::At { limit, .. } => (limit, None),
            };
            let (rt, listed) = sim.delete_collection(&target, filter, page, &req).await?;
            let items: Vec<Bytes> = listed
                .items
                .iter()
                .map(|o| list_item(&target, &rt, o))
                .collect();
            Ok(list_body(
                &rt,
                &target.version,
                listed.resource_version,
                listed.continue_token.as_deref(),
                listed.remaining,
                &items,
            ))
        }
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {m}"
        ))),
    }
}

/// The subresources that are read, updated and patched in place, never created or deleted.
const WRITTEN_IN_PLACE: &[&str] = &[
    "status",
    "scale",
    "approval",
    crate::ephemeral_containers::SUBRESOURCE,
];

/// Refuses a create or delete of a subresource written in place, after an unserved
/// subresource's 404 and before the object is looked for (a delete went to the object itself
/// before): a builtin kind's is the 405 of a route without that method, a custom resource's
/// the apiextensions server's `NewMethodNotSupported`. Other subresources (`token`,
/// `binding`, `eviction`, a pod's connections) are created; their handlers judge the method.
fn refuse_subresource_method(sim: &Sim, target: &Target, method: &Method) -> ApiResult<()> {
    let Some(subresource) = target.subresource.as_deref() else {
        return Ok(());
    };
    if !WRITTEN_IN_PLACE.contains(&subresource) {
        return Ok(());
    }
    let custom = {
        let state = sim.read();
        if subresource == "scale" {
            let main = Target {
                subresource: None,
                ..target.clone()
            };
            let r = sim.resolve(&state, &main, crate::faults::Verb::Get)?;
            if r.rt.scale_of(&target.version).is_none() {
                return Err(crate::api::unserved_subresource(&r.rt, target, r.custom));
            }
            r.custom
        } else {
            sim.resolve(&state, target, crate::faults::Verb::Get)?
                .custom
        }
    };
    if !custom {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let verb = if *method == Method::POST {
        "create"
    } else {
        "delete"
    };
    Err(ApiError::method_not_supported(
        &target.group,
        &target.plural,
        verb,
    ))
}

/// A write's `fieldValidation`, and the keys its JSON body repeats (a create's or update's
/// body, or a merge patch; not looked for under `Ignore`).
fn with_field_validation(
    mut opts: WriteOptions,
    query: &Query,
    options_kind: &str,
    content_type: &str,
    body: &[u8],
) -> ApiResult<WriteOptions> {
    let mode = FieldValidation::parse(query.get("fieldValidation"), options_kind)?;
    let json_body = !crate::protobuf::is_protobuf(content_type)
        && (options_kind != "PatchOptions"
            || PatchKind::from_content_type(content_type) == Some(PatchKind::Merge));
    if mode != FieldValidation::Ignore && json_body {
        opts.duplicates = crate::field_validation::duplicate_fields(body);
    }
    opts.field_validation = Some(mode);
    Ok(opts)
}

/// A patch as kube-apiserver reads it before applying it: under `Warn` and `Strict` (the
/// default) a JSON patch must decode as a list of operations and a merge patch as an object,
/// or the patch is a 400 `error decoding patch: <Go's error>`; a strategic merge patch must
/// decode as an object whatever the mode (Go's error alone). An apply is YAML.
fn decode_patch(
    kind: PatchKind,
    body: &[u8],
    content_type: &str,
    mode: Option<FieldValidation>,
) -> ApiResult<Value> {
    let (go_type, prefix) = match kind {
        PatchKind::Apply => return decode_body(body, content_type),
        _ if mode == Some(FieldValidation::Ignore) && kind != PatchKind::Strategic => {
            return decode_body(body, content_type);
        }
        PatchKind::Json => ("[]handlers.jsonPatchOp", "error decoding patch: "),
        PatchKind::Merge => ("map[string]interface {}", "error decoding patch: "),
        PatchKind::Strategic => ("map[string]interface {}", ""),
    };
    let refused = |why: String| ApiError::bad_request(format!("{prefix}{why}"));
    if let Some(why) = crate::go_json_syntax::syntax_error(body) {
        return Err(refused(why));
    }
    let found = crate::go_json_syntax::value_type(body);
    let fits = match kind {
        PatchKind::Json => matches!(found, "array" | "null"),
        _ => matches!(found, "object" | "null"),
    };
    if !fits {
        return Err(refused(format!(
            "json: cannot unmarshal {found} into Go value of type {go_type}"
        )));
    }
    let patch: Value = serde_json::from_slice(body).map_err(|e| refused(format!("json: {e}")))?;
    if kind == PatchKind::Json {
        json_patch_operation_errors(&patch).map_or(Ok(()), |why| Err(refused(why)))?;
    }
    Ok(patch)
}

/// Go's error decoding a JSON patch's operations into kube-apiserver's `jsonPatchOp`: each is
/// an object whose `op`, `path` and `from` are strings.
fn json_patch_operation_errors(patch: &Value) -> Option<String> {
    for operation in patch.as_array().into_iter().flatten() {
        let Value::Object(fields) = operation else {
            if operation.is_null() {
                continue;
            }
            let found = crate::builtin_decoding::json_type(operation);
            return Some(format!(
                "json: cannot unmarshal {found} into Go value of type handlers.jsonPatchOp"
            ));
        };
        for field in ["op", "path", "from"] {
            match fields.get(field) {
                None | Some(Value::String(_) | Value::Null) => {}
                Some(other) => {
                    let found = crate::builtin_decoding::json_type(other);
                    return Some(format!(
                        "json: cannot unmarshal {found} into Go struct field jsonPatchOp.{field} of type string"
                    ));
                }
            }
        }
    }
    None
}

/// The request's `Content-Type` (`application/json` when it names none) and its whole body.
async fn read_body(req: Request<Incoming>) -> ApiResult<(String, Bytes)> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?
        .to_bytes();
    Ok((content_type, body))
}

/// `/scale` of a kind that has it (see [`crate::scale`]): GET reads the Scale (as a Table when
/// `table` holds the request's `includeObject`), PUT and PATCH write the replicas it carries
/// into the object; any other method is not allowed.
async fn scale_subresource(
    sim: &Sim,
    target: &Target,
    method: &Method,
    body: &[u8],
    content_type: &str,
    opts: &WriteOptions,
    table: Option<(Option<&str>, &'static str)>,
) -> ApiResult<Response<Body>> {
    let main = Target {
        subresource: None,
        ..target.clone()
    };
    let paths = {
        let state = sim.read();
        let r = sim.resolve(&state, &main, crate::faults::Verb::Get)?;
        r.rt.scale_of(&target.version)
            .cloned()
            .ok_or_else(|| crate::api::unserved_subresource(&r.rt, target, r.custom))?
    };
    let (_, current) = sim.get(&main).await?;
    let current = current.value()?;
    let scale = match *method {
        Method::GET => {
            let scale = scale::render(&paths, &current);
            if let Some((include, version)) = table {
                let rv = scale
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let answer = crate::table::render_table(
                    &crate::table::scale_columns(),
                    std::slice::from_ref(&scale),
                    include,
                    version,
                    rv,
                    jiff::Timestamp::now(),
                );
                return Ok(json_response(StatusCode::OK, &answer));
            }
            return Ok(json_response(StatusCode::OK, &scale));
        }
        Method::PUT => decode_body(body, content_type)?,
        Method::PATCH => {
            let kind = PatchKind::from_content_type(content_type)
                .ok_or_else(ApiError::media_type_not_routed)?;
            let patch = decode_patch(kind, body, content_type, opts.field_validation)?;
            if kind == PatchKind::Apply {
                let write = crate::semantics::ScaleWrite::Apply(patch);
                let (_, written) = sim.write_scale(&main, write, opts).await?;
                let answer = scale::render(&paths, &written.object.value()?);
                return Ok(json_response(StatusCode::OK, &answer));
            }
            scale::patched(&scale::render(&paths, &current), kind, &patch)?
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    };
    // The Scale must be the one the URL names (kube-apiserver's `checkName`).
    let url_name = target.name.as_deref().unwrap_or_default();
    let scale_name = scale
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !scale_name.is_empty() && scale_name != url_name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({scale_name}) does not match the name on the URL ({url_name})"
        )));
    }
    let write = crate::semantics::ScaleWrite::Update(scale);
    let (_, written) = sim.write_scale(&main, write, opts).await?;
    let answer = scale::render(&paths, &written.object.value()?);
    Ok(json_response(StatusCode::OK, &answer))
}

/// `serviceaccounts/<name>/token` (see [`crate::tokens`]): POST answers a TokenRequest for the
/// ServiceAccount; any other method is not allowed.
async fn token_subresource(
    sim: &Sim,
    target: &Target,
    method: &Method,
    body: &[u8],
    content_type: &str,
    opts: &WriteOptions,
) -> ApiResult<Response<Body>> {
    if *method != Method::POST {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        )));
    }
    let account = Target {
        subresource: None,
        ..target.clone()
    };
    let (_, account) = sim.get(&account).await?;
    let request = decode_body(body, content_type)?;
    let manager = opts
        .field_manager
        .as_deref()
        .filter(|m| !m.is_empty())
        .unwrap_or(&opts.default_manager);
    let account = account.value()?;
    let bind = |reference: Option<&Value>| {
        let state = sim.read();
        let cluster = crate::api::addressed_cluster(&state, &target.endpoint).unwrap_or_default();
        let namespace = target.namespace.as_deref().unwrap_or_default();
        let name = target.name.as_deref().unwrap_or_default();
        crate::token_binding::claims(&state, &cluster, (namespace, name), reference)
    };
    let answer = crate::tokens::issue(&account, &request, manager, bind)?;
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// The pod subresource a request goes to that reaches the pod's kubelet, if it does.
fn pod_connection_of(target: &Target) -> Option<&str> {
    let subresource = target.subresource.as_deref()?;
    (target.group.is_empty()
        && target.plural == "pods"
        && matches!(subresource, "log" | "exec" | "attach" | "portforward"))
    .then_some(subresource)
}

/// A pod's `log` (GET), or an `exec`, `attach` or `portforward` stream (GET or POST, as a
/// client upgrades it): checked as kube-apiserver checks it ([`crate::pod_connections`]).
async fn pod_connection(
    sim: &Sim,
    target: &Target,
    subresource: &str,
    method: &Method,
    query: &Query,
) -> ApiResult<Response<Body>> {
    let streams = subresource != "log";
    if !(*method == Method::GET || (streams && *method == Method::POST)) {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        )));
    }
    let options = pod_connections::LogOptions {
        container: query.get("container").map(String::from),
        tail_lines: int_param(query, "tailLines")?,
        limit_bytes: int_param(query, "limitBytes")?,
        since_seconds: int_param(query, "sinceSeconds")?,
        since_time: query.get("sinceTime").is_some(),
    };
    let pod_target = Target {
        subresource: None,
        ..target.clone()
    };
    let (_, pod) = sim.get(&pod_target).await?;
    let pod = pod.value()?;
    let name = target.name.as_deref().unwrap_or_default();
    let node = match pod.pointer("/spec/nodeName").and_then(Value::as_str) {
        Some(node) if !node.is_empty() => {
            let node_target = Target {
                plural: "nodes".into(),
                namespace: None,
                name: Some(node.to_string()),
                ..pod_target.clone()
            };
            match sim.get(&node_target).await {
                Ok((_, node)) => Some(node.value()?),
                Err(e) if e.code == 404 => None,
                Err(e) => return Err(e),
            }
        }
        _ => None,
    };
    if streams {
        let container = query.get("container");
        return Err(pod_connections::stream(
            name,
            &pod,
            node.as_ref(),
            subresource,
            container,
        ));
    }
    let log = pod_connections::log(name, &pod, node.as_ref(), &options)?;
    if log.is_empty() {
        // kube-apiserver streams nothing from nowhere: 204, no content type.
        let mut resp = Response::new(Full::new(Bytes::new()).boxed());
        *resp.status_mut() = StatusCode::NO_CONTENT;
        return Ok(resp);
    }
    Ok(full(StatusCode::OK, "text/plain", log))
}

/// An integer query parameter, which Go's query decoder reads as an int64.
fn int_param(query: &Query, name: &str) -> ApiResult<Option<i64>> {
    query
        .get(name)
        .map(|text| {
            text.parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "{name}: strconv.ParseInt: parsing {text:?}: invalid syntax"
                ))
            })
        })
        .transpose()
}

/// A read of `componentstatuses`: observed now, answered with kube's deprecation warning.
async fn component_statuses(
    target: &Target,
    method: &Method,
    query: &Query,
    table_version: Option<&'static str>,
) -> ApiResult<Response<Body>> {
    if *method != Method::GET {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    if query.flag("watch") {
        return Err(ApiError::method_not_allowed(format!(
            "watch is not supported on resources of kind \"{}\"",
            target.plural
        )));
    }
    let items = crate::component_statuses::observe().await;
    // The warning goes with every read, a component not found too.
    let mut resp =
        match crate::component_statuses::answer(items, target.name.as_deref(), table_version) {
            Ok(answer) => json_response(StatusCode::OK, &answer),
            Err(e) => error_response(&e),
        };
    let warning = format!("299 - \"{}\"", crate::component_statuses::WARNING);
    if let Ok(value) = HeaderValue::from_str(&warning) {
        resp.headers_mut().append(header::WARNING, value);
    }
    Ok(resp)
}

/// A write's answer with a `Warning: 299 - "<text>"` header per warning of the write, unless
/// the request's `fieldValidation` is `Ignore`.
fn with_warnings(mut resp: Response<Body>, written: &Written, query: &Query) -> Response<Body> {
    if query.get("fieldValidation") == Some("Ignore") {
        return resp;
    }
    for warning in &written.warnings {
        let text = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            resp.headers_mut().append(header::WARNING, value);
        }
    }
    resp
}

/// Whether a delete that removes the object at once answers with the object, not a `Status`:
/// the kinds whose kube-apiserver storage sets `ReturnDeletedObject`; every other kind answers
/// a `Success` Status.
fn answers_deleted_object(rt: &ResourceType) -> bool {
    let answered: &[&str] = match rt.group.as_str() {
        "" => &[
            "pods",
            "services",
            "serviceaccounts",
            "persistentvolumeclaims",
            "persistentvolumes",
            "namespaces",
            "resourcequotas",
            "podtemplates",
        ],
        "storage.k8s.io" => &[
            "csidrivers",
            "csinodes",
            "storageclasses",
            "volumeattachments",
            "volumeattributesclasses",
        ],
        "resource.k8s.io" => &[
            "deviceclasses",
            "devicetaintrules",
            "resourceclaims",
            "resourceclaimtemplates",
            "resourceslices",
        ],
        _ => &[],
    };
    answered.contains(&rt.plural.as_str())
}

/// The `Success` Status of an object deleted at once: `details` name the object, its resource
/// (in `kind`, as the real server does) and its uid.
fn deleted_status(rt: &ResourceType, name: &str, uid: &str) -> Value {
    let mut details = json!({"name": name, "kind": rt.plural, "uid": uid});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// The `415` of a strategic merge patch of a custom resource (kcp's own kinds included: kcp
/// serves them from CRDs), whose routes take every other patch type. kcp v0.30.0 lists
/// server-side apply's type twice.
fn strategic_merge_refused(flavor: Flavor) -> ApiError {
    const CUSTOM_PATCHES: [&str; 3] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    match flavor {
        Flavor::Kubernetes => ApiError::unsupported_media_type_among(&CUSTOM_PATCHES),
        Flavor::Kcp => ApiError::unsupported_media_type_among(&[
            CUSTOM_PATCHES[0],
            CUSTOM_PATCHES[1],
            CUSTOM_PATCHES[2],
            CUSTOM_PATCHES[2],
        ]),
    }
}

/// What a discovery path answers the request's `Accept` headers with (`aggregated`: the path
/// serves aggregated discovery).
fn discovery_form(
    req: &Request<Incoming>,
    aggregated: bool,
) -> ApiResult<crate::media::DiscoveryForm> {
    let accept: Vec<&str> = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    crate::media::negotiate_discovery(Some(&accept.join(",")), aggregated)
}

/// The address the client reached this listener at (kube-apiserver: its advertised address
/// and port), as discovery names it.
fn reached_address(req: &Request<Incoming>) -> String {
    req.uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(String::from)
        })
        .unwrap_or_else(|| "127.0.0.1".to_string())
}

/// Discovery, version, health and OpenAPI documents.
fn non_resource(
    sim: &Sim,
    endpoint: &Endpoint,
    rest: &[&str],
    req: &Request<Incoming>,
) -> ApiResult<Option<Response<Body>>> {
    let ok = |v: Value| Ok(Some(json_response(StatusCode::OK, &v)));
    match rest {
        // The root: the paths served, as kube-apiserver lists them (clients such as Cluster
        // API's cluster cache probe `GET /` before anything else).
        [] => ok(root_paths(
            &sim.registry(endpoint)?
                .api_group_list(&reached_address(req)),
        )),
        ["version"] => Ok(Some(full(
            StatusCode::OK,
            "application/json",
            crate::health::version(sim.flavor),
        ))),
        [endpoint @ ("healthz" | "readyz" | "livez")] => {
            // The health handlers read `verbose` by its presence, whatever its value.
            let query = Query::parse(req.uri().query());
            let probe = crate::health::Probe {
                verbose: query.get("verbose").is_some(),
                excluded: query.all("exclude").into_iter().map(String::from).collect(),
            };
            let text = crate::health::report(sim.flavor, endpoint, &probe);
            Ok(Some(full(
                StatusCode::OK,
                "text/plain; charset=utf-8",
                text,
            )))
        }
        [endpoint @ ("healthz" | "readyz" | "livez"), check @ ..] => {
            if crate::health::checks(sim.flavor, endpoint).contains(&check.join("/").as_str()) {
                Ok(Some(full(
                    StatusCode::OK,
                    "text/plain; charset=utf-8",
                    "ok",
                )))
            } else {
                // The mux has no handler for it: Go's plain-text 404.
                Ok(Some(error_response(&ApiError::page_not_found())))
            }
        }
        ["openapi", "v2"] => {
            // An empty document: kubectl then falls back to its compiled-in knowledge. A
            // protobuf reader sees an empty message, a JSON reader an empty swagger spec.
            let wants_proto = req
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("protobuf"));
            if wants_proto {
                Ok(Some(full(
                    StatusCode::OK,
                    "application/octet-stream",
                    Bytes::new(),
                )))
            } else {
                ok(
                    json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": crate::openapi::minor_version(sim.flavor.kubernetes_version())}, "paths": {}, "definitions": {}}),
                )
            }
        }
        ["openapi", "v3"] => {
            let release = sim.flavor.kubernetes_version();
            let docs = crate::openapi::documents(&sim.openapi_types(endpoint)?, release);
            let prefix = req.uri().path().trim_end_matches('/');
            let prefix = prefix.strip_suffix("/openapi/v3").unwrap_or_default();
            // kube-apiserver writes the index without a Content-Type, so Go's sniffing names
            // it plain text.
            Ok(Some(full(
                StatusCode::OK,
                "text/plain; charset=utf-8",
                Bytes::from(crate::openapi::index(prefix, &docs).to_string()),
            )))
        }
        ["openapi", "v3", "api", version] => openapi_document(sim, endpoint, "", version),
        ["openapi", "v3", "apis", group, version] => {
            openapi_document(sim, endpoint, group, version)
        }
        ["api"] | ["apis"] | ["api", "v1"] | ["apis", _] | ["apis", _, _] => {
            discovery(sim, endpoint, rest, req).map(Some)
        }
        _ => Ok(None),
    }
}

/// A discovery document: `/api`, `/apis` (aggregated when asked for), a group's and a group
/// version's.
fn discovery(
    sim: &Sim,
    endpoint: &Endpoint,
    rest: &[&str],
    req: &Request<Incoming>,
) -> ApiResult<Response<Body>> {
    // `/api` and `/apis` serve aggregated discovery, but not in a virtual workspace, where an
    // aggregated-only `Accept` is a 406 (kcp v0.30.0).
    let aggregated = rest.len() == 1 && !endpoint.is_virtual_workspace();
    let form = discovery_form(req, aggregated)?;
    let ok = |v: Value| Ok(json_response(StatusCode::OK, &v));
    match rest {
        ["api"] | ["apis"] if form == crate::media::DiscoveryForm::Aggregated => {
            let doc = crate::aggregated_discovery::group_discovery_list(
                &sim.registry(endpoint)?,
                rest == ["api"],
            );
            Ok(full(
                StatusCode::OK,
                crate::aggregated_discovery::CONTENT_TYPE,
                Bytes::from(doc.to_string()),
            ))
        }
        ["api"] => ok(sim.registry(endpoint)?.api_versions(&reached_address(req))),
        ["apis"] => ok(sim
            .registry(endpoint)?
            .api_group_list(&reached_address(req))),
        ["api", "v1"] => match sim.registry(endpoint)?.api_resource_list("", "v1") {
            Some(doc) => ok(doc),
            None => Err(ApiError::path_not_found()),
        },
        ["apis", group] => match sim.registry(endpoint)?.api_group(group) {
            Some(doc) => ok(doc),
            None => Ok(error_response(&ApiError::page_not_found())),
        },
        ["apis", group, version] => {
            let registry = sim.registry(endpoint)?;
            match registry.api_resource_list(group, version) {
                Some(doc) => ok(doc),
                None if registry.serves_group(group) => Err(ApiError::path_not_found()),
                None => Ok(error_response(&ApiError::page_not_found())),
            }
        }
        _ => Err(ApiError::path_not_found()),
    }
}

/// The `{"paths": [...]}` document of `GET /`: the discovery paths of every served group and
/// version (from `groups`, an APIGroupList) and the non-resource endpoints, sorted.
fn root_paths(groups: &Value) -> Value {
    let mut paths: Vec<String> = [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/healthz",
        "/livez",
        "/openapi/v2",
        "/openapi/v3",
        "/openapi/v3/",
        "/readyz",
        "/version",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    for group in groups["groups"].as_array().into_iter().flatten() {
        if let Some(name) = group["name"].as_str() {
            paths.push(format!("/apis/{name}"));
        }
        for version in group["versions"].as_array().into_iter().flatten() {
            if let Some(gv) = version["groupVersion"].as_str() {
                paths.push(format!("/apis/{gv}"));
            }
        }
    }
    paths.sort();
    paths.dedup();
    json!({ "paths": paths })
}

/// `GET /openapi/v3/api/<version>` or `/openapi/v3/apis/<group>/<version>`.
fn openapi_document(
    sim: &Sim,
    endpoint: &Endpoint,
    group: &str,
    version: &str,
) -> ApiResult<Option<Response<Body>>> {
    let types: Vec<_> = sim
        .openapi_types(endpoint)?
        .into_iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    let path = crate::openapi::document_path(group, version);
    let docs = crate::openapi::documents(&types, sim.flavor.kubernetes_version());
    let Some(doc) = docs.get(&path) else {
        // kube-openapi's v3 handler answers a document it does not hold with a bare 404.
        let mut resp = Response::new(Full::new(Bytes::new()).boxed());
        *resp.status_mut() = StatusCode::NOT_FOUND;
        return Ok(Some(resp));
    };
    Ok(Some(full(
        StatusCode::OK,
        "application/json",
        doc.body.clone(),
    )))
}

/// A create's or update's body. kube-apiserver first reads a JSON body's `apiVersion` and
/// `kind`; a body that cannot give them is refused as its decoder refuses it, naming the kind
/// the path expects ([`crate::unreadable_body`]).
fn decode_object(
    sim: &Sim,
    target: &Target,
    verb: Verb,
    body: &[u8],
    content_type: &str,
) -> ApiResult<Value> {
    if crate::protobuf::is_protobuf(content_type) && !body.starts_with(crate::protobuf::MAGIC) {
        let rt = sim.resolve(&sim.read(), target, verb)?.rt;
        crate::protobuf::response::check_encodable(&rt.api_version(&target.version), &rt.kind)
            .map_err(|_| ApiError::unsupported_media_type(content_type))?;
        return Err(crate::unreadable_body::not_protobuf(&rt.kind, body));
    }
    let decoded = decode_body(body, content_type);
    let json = !crate::protobuf::is_protobuf(content_type)
        && !content_type.contains("yaml")
        && !content_type.contains("cbor");
    if !json
        || decoded
            .as_ref()
            .is_ok_and(crate::unreadable_body::is_readable)
    {
        return decoded;
    }
    let kind = sim.resolve(&sim.read(), target, verb)?.rt.kind.clone();
    match crate::unreadable_body::refusal(&kind, body) {
        Some(refusal) => Err(refusal),
        None => decoded,
    }
}

fn decode_body(body: &[u8], content_type: &str) -> ApiResult<Value> {
    if crate::protobuf::is_protobuf(content_type) {
        return crate::protobuf::decode_envelope(body);
    }
    if content_type.contains("protobuf") || content_type.contains("cbor") {
        return Err(ApiError::unsupported_media_type(content_type));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(json_err) => {
            let yaml_ok = content_type.contains("yaml");
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
            if yaml_ok {
                serde_saphyr::from_str::<Value>(text).map_err(|e| {
                    ApiError::bad_request(format!("the request body is not valid YAML: {e}"))
                })
            } else {
                Err(ApiError::bad_request(format!(
                    "the request body is not valid JSON: {json_err}"
                )))
            }
        }
    }
}

fn delete_request(body: &[u8], query: &Query) -> ApiResult<DeleteRequest> {
    let mut dry_runs: Vec<String> = query.all("dryRun").into_iter().map(String::from).collect();
    let mut orphan_dependents = query.get("orphanDependents").map(|v| v == "true");
    let mut req = DeleteRequest {
        propagation: query.get("propagationPolicy").map(String::from),
        grace_period_seconds: int_param(query, "gracePeriodSeconds")?,
        ..DeleteRequest::default()
    };
    if !body.is_empty() {
        let opts: Value = if body.starts_with(crate::protobuf::MAGIC) {
            crate::protobuf::decode_envelope(body)?
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
        };
        if let Some(p) = opts.get("propagationPolicy").and_then(Value::as_str) {
            req.propagation = Some(p.to_string());
        }
        if let Some(grace) = opts.get("gracePeriodSeconds").filter(|g| !g.is_null()) {
            req.grace_period_seconds = Some(grace.as_i64().ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid DeleteOptions: gracePeriodSeconds must be an integer, not {grace}"
                ))
            })?);
        }
        orphan_dependents = opts.get("orphanDependents").and_then(Value::as_bool);
        req.precondition_uid = opts
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(String::from);
        req.precondition_resource_version = opts
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(String::from);
        if let Some(modes) = opts.get("dryRun").and_then(Value::as_array) {
            dry_runs.extend(
                modes
                    .iter()
                    .map(|m| m.as_str().unwrap_or_default().to_string()),
            );
        }
    }
    let dry_runs: Vec<&str> = dry_runs.iter().map(String::as_str).collect();
    let errors = delete_option_errors(req.propagation.as_deref(), orphan_dependents, &dry_runs);
    if !errors.is_empty() {
        return Err(invalid_object("meta.k8s.io", "DeleteOptions", "", &errors));
    }
    req.dry_run = !dry_runs.is_empty();
    if orphan_dependents == Some(true) {
        req.propagation = Some("Orphan".into());
    }
    Ok(req)
}

/// kube's `ValidateDeleteOptions`, every error in one 422: the deprecated `orphanDependents`
/// beside a `propagationPolicy`, a policy it does not know, a bad `dryRun`.
fn delete_option_errors(
    propagation: Option<&str>,
    orphan_dependents: Option<bool>,
    dry_runs: &[&str],
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(policy) = propagation {
        if orphan_dependents.is_some() {
            errors.push(FieldError::invalid(
                "propagationPolicy",
                json!(policy),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if !matches!(policy, "Foreground" | "Background" | "Orphan") {
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                "propagationPolicy",
                Some(json!(policy)),
                "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
            ));
        }
    }
    errors.extend(crate::write_options::dry_run_error(dry_runs));
    errors
}

fn filter_of(query: &Query) -> ApiResult<Filter> {
    let labels = query
        .get("labelSelector")
        .filter(|s| !s.is_empty())
        .map(LabelSelector::parse)
        .transpose()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = query
        .get("fieldSelector")
        .filter(|s| !s.is_empty())
        .map(FieldSelector::parse)
        .transpose()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(Filter {
        labels,
        fields,
        ..Filter::default()
    })
}

fn object_response(
    status: StatusCode,
    rt: &ResourceType,
    version: &str,
    obj: &Stored,
) -> Response<Body> {
    full(status, "application/json", render(rt, version, obj))
}

/// An object as an item of a list: a typed kind's items carry no `apiVersion` and `kind` (Go
/// writes the list's items without their type), a custom resource's keep them, and so do the
/// items of an apiexport virtual workspace (kcp serves every resource there unstructured;
/// conformance kcp-claims).
fn list_item(target: &Target, rt: &ResourceType, obj: &Stored) -> Bytes {
    let json = render(rt, &target.version, obj);
    let in_view = matches!(target.endpoint, Endpoint::ApiExport { .. });
    if !rt.is_typed() || in_view {
        return json;
    }
    let Ok(Value::Object(mut item)) = serde_json::from_slice::<Value>(&json) else {
        return json;
    };
    item.remove("apiVersion");
    item.remove("kind");
    serde_json::to_vec(&item).map(Bytes::from).unwrap_or(json)
}

fn list_body(
    rt: &ResourceType,
    version: &str,
    rv: u64,
    continue_token: Option<&str>,
    remaining: Option<u64>,
    items: &[Bytes],
) -> Response<Body> {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    // A custom resource's (unstructured) list always writes its continue token, empty or not.
    if let Some(token) = continue_token.or((!rt.is_typed()).then_some("")) {
        metadata["continue"] = json!(token);
    }
    if let Some(n) = remaining {
        metadata["remainingItemCount"] = json!(n);
    }
    let head = json!({
        "kind": format!("{}List", rt.kind),
        "apiVersion": rt.api_version(version),
        "metadata": metadata,
    });
    let head = serde_json::to_vec(&head).unwrap_or_default();
    let size: usize = items.iter().map(|i| i.len() + 1).sum::<usize>() + head.len() + 16;
    let mut out = BytesMut::with_capacity(size);
    // `{"kind":...,"metadata":{...}` + `,"items":[` + items + `]}`
    out.put_slice(&head[..head.len().saturating_sub(1)]);
    out.put_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(item);
    }
    out.put_slice(b"]}");
    full(StatusCode::OK, "application/json", out.freeze())
}

/// `ValidateTableOptions`: a Table's `includeObject` is `Metadata`, `Object`, `None` or empty.
fn check_include_object(query: &Query) -> ApiResult<()> {
    match query.get("includeObject") {
        None | Some("" | "Metadata" | "Object" | "None") => Ok(()),
        Some(other) => Err(ApiError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {}: \
             must be 'Metadata', 'Object', 'None', or empty",
            kcp_core::go_quote::quote(other)
        ))),
    }
}

/// What a Table answer is besides its rows: the page of a list it shows, and its version.
struct TablePage<'a> {
    /// The list's continue token.
    continue_token: Option<&'a str>,
    /// The list's remaining item count.
    remaining: Option<u64>,
    /// `v1` or `v1beta1` of `meta.k8s.io`.
    version: &'static str,
}

impl TablePage<'_> {
    /// A Table of one object, or of a whole list.
    fn whole(version: &'static str) -> Self {
        TablePage {
            continue_token: None,
            remaining: None,
            version,
        }
    }
}

/// A `meta.k8s.io` Table of `objects` ([`crate::table`]).
fn table_response(
    sim: &Sim,
    target: &Target,
    rt: &ResourceType,
    objects: &[Arc<Stored>],
    resource_version: &str,
    page: TablePage<'_>,
    query: &Query,
) -> ApiResult<Response<Body>> {
    let columns = sim.printer_columns(target, rt);
    let mut values: Vec<Value> = objects
        .iter()
        .map(|o| {
            serde_json::from_slice(&render(rt, &target.version, o))
                .map_err(|e| ApiError::internal(format!("stored object unreadable: {e}")))
        })
        .collect::<ApiResult<_>>()?;
    crate::table::printer_order(rt, &mut values);
    let mut table = crate::table::render_table(
        &columns,
        &values,
        query.get("includeObject"),
        page.version,
        resource_version,
        jiff::Timestamp::now(),
    );
    // A page of a list is a page of its Table too.
    if let Some(token) = page.continue_token {
        table["metadata"]["continue"] = json!(token);
    }
    if let Some(n) = page.remaining {
        table["metadata"]["remainingItemCount"] = json!(n);
    }
    let body = serde_json::to_vec(&table)
        .map_err(|e| ApiError::internal(format!("encoding a table: {e}")))?;
    Ok(full(StatusCode::OK, "application/json", body))
}

/// kube-apiserver's `ValidateListOptions` for a list (not a watch): `resourceVersionMatch`
/// needs a `resourceVersion` and no `continue`, and is `Exact` (not at `0`) or `NotOlderThan`;
/// `sendInitialEvents` is for watches.
fn check_list_options(query: &Query) -> ApiResult<()> {
    let mut errors = Vec::new();
    let field = "resourceVersionMatch";
    if let Some(rv_match) = query.get(field).filter(|m| !m.is_empty()) {
        let rv = query.get("resourceVersion").unwrap_or_default();
        if rv.is_empty() {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if query.get("continue").is_some_and(|c| !c.is_empty()) {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if !matches!(rv_match, "Exact" | "NotOlderThan") {
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                field,
                Some(json!(rv_match)),
                "supported values: \"Exact\", \"NotOlderThan\", \"\"",
            ));
        }
        if rv_match == "Exact" && rv == "0" {
            errors.push(FieldError::forbidden(
                field,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if query.get("sendInitialEvents").is_some() {
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(invalid_object("meta.k8s.io", "ListOptions", "", &errors))
}

async fn list(
    sim: &Sim,
    target: &Target,
    query: &Query,
    table: Option<&'static str>,
) -> ApiResult<Response<Body>> {
    check_list_options(query)?;
    let filter = filter_of(query)?;
    let read = list_read(query)?;
    let (ListRead::At { rv, .. } | ListRead::Latest { min_rv: rv, .. }) = read;
    sim.wait_for_revision(rv).await?;
    let (rt, page) = match read {
        ListRead::At { rv, limit } => sim.list_at(target, filter, limit, rv).await?,
        ListRead::Latest {
            limit,
            continue_token,
            ..
        } => sim.list(target, filter, limit, continue_token).await?,
    };
    if let Some(version) = table {
        let rv = page.resource_version.to_string();
        let paging = TablePage {
            continue_token: page.continue_token.as_deref(),
            remaining: page.remaining,
            version,
        };
        return table_response(sim, target, &rt, &page.items, &rv, paging, query);
    }
    let items: Vec<Bytes> = page
        .items
        .iter()
        .map(|o| list_item(target, &rt, o))
        .collect();
    Ok(list_body(
        &rt,
        &target.version,
        page.resource_version,
        page.continue_token.as_deref(),
        page.remaining,
        &items,
    ))
}

/// Which state of a collection a list reads.
enum ListRead<'q> {
    /// As it was at a revision: `resourceVersionMatch=Exact`, or a `resourceVersion` with a
    /// `limit` and no match (kube-apiserver's legacy exact list).
    At { rv: u64, limit: Option<usize> },
    /// The latest state (no older than `min_rv`), or the revision of a continue token.
    Latest {
        limit: Option<usize>,
        continue_token: Option<&'q str>,
        min_rv: u64,
    },
}

/// What a list's `limit`, `resourceVersion` and `continue` ask for, read as kube-apiserver
/// reads them: a `limit` of 0 or less lists everything, and so does any limit at
/// `resourceVersion=0` (its watch cache ignores the limit there); a continue token comes
/// without a `resourceVersion` (but `0`); a `resourceVersion` is a number.
fn list_read(query: &Query) -> ApiResult<ListRead<'_>> {
    let limit = match query.get("limit") {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}")))?,
        None => 0,
    };
    let rv = query.get("resourceVersion").unwrap_or_default();
    let limit = usize::try_from(limit).ok().filter(|l| *l > 0 && rv != "0");
    if let Some(token) = query.get("continue").filter(|c| !c.is_empty()) {
        ContinueToken::decode(token)?;
        if !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        return Ok(ListRead::Latest {
            limit,
            continue_token: Some(token),
            min_rv: 0,
        });
    }
    let revision = crate::query::parse_resource_version(rv)
        .map_err(|why| ApiError::bad_request(format!("invalid resource version: {why}")))?;
    let exact = match query.get("resourceVersionMatch").unwrap_or_default() {
        "Exact" => true,
        "" => limit.is_some() && revision > 0,
        _ => false,
    };
    Ok(if exact {
        ListRead::At {
            rv: revision,
            limit,
        }
    } else {
        ListRead::Latest {
            limit,
            continue_token: None,
            min_rv: revision,
        }
    })
}

/// The state of one open watch stream.
struct WatchStream {
    start: WatchStart,
    version: String,
    pending: std::collections::VecDeque<(ChangeKind, Arc<Stored>)>,
    last_rv: u64,
    /// The newest resourceVersion the watcher was sent (an event's or a bookmark's).
    seen_rv: u64,
    bookmarks: Option<tokio::time::Interval>,
    /// When a watch with bookmarks and a timeout gets one before it ends: 2 s before, as
    /// kube-apiserver's watch cache schedules it, and only if there is news to mark.
    pretimeout: Option<tokio::time::Instant>,
    deadline: tokio::time::Instant,
    drops: tokio::sync::watch::Receiver<u64>,
    done: bool,
    encoder: EventEncoder,
    /// A bookmark marking the end of the initial events is due once they are sent.
    initial_events_end: bool,
}

impl WatchStream {
    fn encode(&self, kind: ChangeKind, obj: &Stored) -> Bytes {
        self.encoder
            .event(kind.as_str(), &render(&self.start.rt, &self.version, obj))
    }

    /// A bookmark at the newest resourceVersion known, which the watcher has then seen.
    fn bookmark(&mut self) -> Bytes {
        self.seen_rv = self.last_rv;
        let mut obj = json!({
            "kind": self.start.rt.kind,
            "apiVersion": self.start.rt.api_version(&self.version),
            "metadata": {"resourceVersion": self.last_rv.to_string()},
        });
        if self.initial_events_end {
            obj["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        self.encoder
            .event("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
    }

    async fn next_frame(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        if let Some((kind, obj)) = self.pending.pop_front() {
            self.last_rv = self.last_rv.max(obj.rv);
            self.seen_rv = self.seen_rv.max(obj.rv);
            return Some(self.encode(kind, &obj));
        }
        if self.initial_events_end {
            // The bookmark that ends the initial events of a `sendInitialEvents` watch.
            let frame = self.bookmark();
            self.initial_events_end = false;
            return Some(frame);
        }
        loop {
            let tick = async {
                match self.bookmarks.as_mut() {
                    Some(i) => {
                        i.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                change = self.start.changes.recv() => match change {
                    Ok(change) => {
                        if change.rv <= self.start.after_rv {
                            continue;
                        }
                        self.last_rv = self.last_rv.max(change.rv);
                        if let Some((kind, obj)) = self.start.filter.view(&change) {
                            self.seen_rv = self.seen_rv.max(change.rv);
                            return Some(self.encode(kind, &obj));
                        }
                    }
                    // A watcher that fell behind is cut off; it re-watches from its last version.
                    Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => {
                        self.done = true;
                        return None;
                    }
                },
                _ = tick => return Some(self.bookmark()),
                _ = async {
                    match self.pretimeout {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending::<()>().await,
                    }
                } => {
                    self.pretimeout = None;
                    if self.last_rv > self.seen_rv {
                        return Some(self.bookmark());
                    }
                }
                _ = tokio::time::sleep_until(self.deadline) => {
                    self.done = true;
                    return None;
                }
                _ = self.drops.changed() => {
                    self.done = true;
                    return None;
                }
            }
        }
    }
}

/// The encoder of a watch's events, from the first acceptable answer for the watched kind;
/// `406` before the watch starts when a protobuf-only client watches a kind without a protobuf
/// form.
fn event_encoder(
    sim: &Sim,
    target: &Target,
    rt: &ResourceType,
    query: &Query,
    negotiated: &Negotiated,
) -> ApiResult<EventEncoder> {
    let api_version = rt.api_version(&target.version);
    let wanted = match negotiated.for_kind(&api_version, &rt.kind) {
        Some(wanted) => wanted,
        None => {
            crate::protobuf::response::check_encodable(&api_version, &rt.kind)?;
            crate::media::Wanted::JSON
        }
    };
    Ok(match (wanted.form, wanted.encoding) {
        (Form::Table(version), _) => EventEncoder::Table {
            columns: sim.printer_columns(target, rt),
            include: query.get("includeObject").map(String::from),
            version,
        },
        (Form::Object, Encoding::Protobuf) => EventEncoder::Protobuf { metadata: None },
        (Form::Metadata(version), Encoding::Protobuf) => EventEncoder::Protobuf {
            metadata: Some(version),
        },
        (Form::Metadata(version), _) => EventEncoder::Metadata(version),
        _ => EventEncoder::Json,
    })
}

/// kube-apiserver's `validateWatchOptions`: `sendInitialEvents` needs
/// `resourceVersionMatch=NotOlderThan` and the WatchList feature (on in Kubernetes 1.34, off in
/// kcp); `resourceVersionMatch` needs `sendInitialEvents`, is `NotOlderThan` and comes without
/// `continue`. Answers `sendInitialEvents`, when given.
fn check_watch_options(query: &Query, flavor: Flavor) -> ApiResult<Option<bool>> {
    let send_initial_events = query
        .get("sendInitialEvents")
        .map(|v| matches!(v, "true" | "1" | "t" | "T" | "TRUE" | "True"));
    let rv_match = query.get("resourceVersionMatch").unwrap_or_default();
    let mut errors = Vec::new();
    if send_initial_events.is_some() {
        if rv_match != "NotOlderThan" {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if flavor == Flavor::Kcp {
            errors.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
    }
    if !rv_match.is_empty() {
        if send_initial_events.is_none() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                "resourceVersionMatch",
                Some(json!(rv_match)),
                "supported values: \"NotOlderThan\"",
            ));
        }
        if query.get("continue").is_some_and(|c| !c.is_empty()) {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if errors.is_empty() {
        return Ok(send_initial_events);
    }
    Err(invalid_object("meta.k8s.io", "ListOptions", "", &errors))
}

async fn watch(
    sim: &Sim,
    settings: &HttpSettings,
    target: &Target,
    query: &Query,
    negotiated: &Negotiated,
) -> ApiResult<Response<Body>> {
    let send_initial_events = check_watch_options(query, sim.flavor)?;
    let filter = filter_of(query)?;
    let mut drops = sim.faults.watch_drops();
    drops.mark_unchanged();
    let requested = query.get("resourceVersion").filter(|rv| !rv.is_empty());
    let from = match send_initial_events {
        // The current objects first, as for a watch without a resourceVersion.
        Some(true) => None,
        // No initial events: from the resourceVersion, or from now.
        Some(false) => Some(
            requested
                .filter(|rv| *rv != "0")
                .map_or_else(|| sim.read().rv.to_string(), String::from),
        ),
        None => requested.map(String::from),
    };
    let start = match sim.watch(target, filter, from.as_deref()).await {
        Ok(start) => start,
        // Like the real server: a watch from an expired version starts, and its one event is an
        // ERROR carrying the 410 Status (client-go and kube-rs both re-list on it).
        Err(err) if err.code == 410 => {
            let encoder = match negotiated.first().encoding {
                Encoding::Protobuf => EventEncoder::Protobuf { metadata: None },
                _ => EventEncoder::Json,
            };
            return Ok(full(
                StatusCode::OK,
                encoder.content_type(),
                encoder.error(&err),
            ));
        }
        Err(err) => return Err(err),
    };
    let encoder = event_encoder(sim, target, &start.rt, query, negotiated)?;
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(settings.max_watch)
        .min(settings.max_watch);
    let bookmarks = query.flag("allowWatchBookmarks").then(|| {
        let mut i = tokio::time::interval_at(
            tokio::time::Instant::now() + settings.bookmark_interval,
            settings.bookmark_interval,
        );
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        i
    });
    let initial_events_end = send_initial_events == Some(true) && bookmarks.is_some();
    let deadline = tokio::time::Instant::now() + timeout;
    let pretimeout = (bookmarks.is_some() && query.get("timeoutSeconds").is_some())
        .then(|| deadline.checked_sub(Duration::from_secs(2)))
        .flatten()
        .filter(|at| *at > tokio::time::Instant::now());
    let pending = start.initial.iter().cloned().collect();
    let last_rv = start.after_rv;
    let seen_rv = start.seen_rv;
    let stream = WatchStream {
        start,
        version: target.version.clone(),
        pending,
        last_rv,
        seen_rv,
        bookmarks,
        pretimeout,
        deadline,
        drops,
        done: false,
        encoder,
        initial_events_end,
    };
    let content_type = stream.encoder.content_type();
    let frames = futures::stream::unfold(stream, |mut s| async move {
        let frame = s.next_frame().await?;
        Some((Ok::<_, Infallible>(Frame::data(frame)), s))
    });
    let mut resp = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers_mut().insert(
        header::TRANSFER_ENCODING,
        HeaderValue::from_static("chunked"),
    );
    Ok(resp)
}

/// The field manager a request's `User-Agent` names (its part before the first `/`), or
/// `unknown` without one, as kube-apiserver defaults it.
fn manager_of_user_agent(headers: &http::HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|m| !m.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(p: &str) -> Vec<String> {
        decode_segments(p)
    }

    #[test]
    fn kcp_paths_name_their_cluster_or_the_wildcard() {
        let (e, skip) = endpoint_of(Flavor::Kcp, &segs("/clusters/root:org/api/v1/configmaps"));
        assert_eq!((e, skip), (Endpoint::Cluster("root:org".into()), 2));
        let (e, _) = endpoint_of(Flavor::Kcp, &segs("/clusters/*/api/v1/configmaps"));
        assert_eq!(e, Endpoint::Wildcard);
    }

    #[test]
    fn initializing_views_carry_their_initializer() {
        let (e, skip) = endpoint_of(
            Flavor::Kcp,
            &segs(
                "/services/initializingworkspaces/root:t/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters",
            ),
        );
        assert_eq!(skip, 5);
        assert_eq!(
            e,
            Endpoint::Lifecycle {
                view: crate::kcp::LifecycleView::Initializing("root:t".into()),
                cluster: None,
                shard: None,
            }
        );
    }

    #[test]
    fn percent_encoded_segments_are_decoded() {
        assert_eq!(
            segs("/clusters/root%3Aorg/api"),
            ["clusters", "root:org", "api"]
        );
    }
}
