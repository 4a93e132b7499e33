//! Discovery and OpenAPI reads for builtin (non-CRD) kinds: what the service cluster says
//! about a group and kind ([`discover`]) and the models of its versions ([`openapi_models`]),
//! the inputs of [`crate::schema::builtin::synthesize_crd`].
//!
//! Documents are read through [`ApiDocuments`], a raw JSON GET implemented for
//! [`kube::Client`]. As upstream, the schema comes from OpenAPI v2 (`/openapi/v2`); only a
//! server without it is read through the v3 document of each group-version
//! (`/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`, served since Kubernetes 1.27).
//! A 404 on v3 is permanent and says so.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::schema::builtin::{Discovered, DiscoveredVersion, OpenApiModels, model_name};

/// Raw JSON documents of the service cluster's API server.
#[async_trait]
pub trait ApiDocuments: Send + Sync {
    /// GETs the JSON document at `path`; `Ok(None)` when the server answers 404.
    async fn get_json(&self, path: &str) -> Result<Option<Value>>;
}

#[async_trait]
impl ApiDocuments for kube::Client {
    async fn get_json(&self, path: &str) -> Result<Option<Value>> {
        let failed = |reason: String, transient: bool| Error::Discovery {
            path: path.to_owned(),
            reason,
            transient,
        };
        let request = http::Request::get(path)
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|e| failed(format!("building the request: {e}"), false))?;
        match self.request::<Value>(request).await {
            Ok(v) => Ok(Some(v)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(kube::Error::Api(s)) => Err(failed(
                format!("{} ({})", s.message, s.code),
                s.code >= 500 || s.code == 429,
            )),
            Err(kube::Error::SerdeError(e)) => {
                Err(failed(format!("the answer is not JSON: {e}"), false))
            }
            Err(e) => Err(failed(e.to_string(), true)),
        }
    }
}

/// The versions of a group, preferred first (`/api` for the core group, `/apis/<group>`
/// otherwise); empty when the group is not served.
async fn group_versions(docs: &dyn ApiDocuments, group: &str) -> Result<Vec<String>> {
    if group.is_empty() {
        let Some(api) = docs.get_json("/api").await? else {
            return Ok(Vec::new());
        };
        return Ok(strings(api.get("versions")));
    }
    let Some(doc) = docs.get_json(&format!("/apis/{group}")).await? else {
        return Ok(Vec::new());
    };
    let preferred = doc
        .pointer("/preferredVersion/version")
        .and_then(Value::as_str);
    let mut versions: Vec<String> = doc
        .get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.get("version").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(p) = preferred
        && let Some(i) = versions.iter().position(|v| v == p)
    {
        let p = versions.remove(i);
        versions.insert(0, p);
    }
    Ok(versions)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn api_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// What one version's resource list says about `kind`: the resource and its subresources.
fn resource_in(list: &Value, kind: &str) -> Option<(Value, Vec<String>)> {
    let resources = list.get("resources")?.as_array()?;
    let main = resources
        .iter()
        .find(|r| {
            r.get("kind").and_then(Value::as_str) == Some(kind)
                && r.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.contains('/'))
        })?
        .clone();
    let plural = main.get("name").and_then(Value::as_str).unwrap_or_default();
    let subresources = resources
        .iter()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .filter_map(|n| n.strip_prefix(plural)?.strip_prefix('/'))
        .map(str::to_owned)
        .collect();
    Some((main, subresources))
}

/// What discovery says about `group`/`kind`, or `None` when no version serves it. The
/// preferred version is the first in the group's order (preferred first) serving the kind.
pub async fn discover(
    docs: &dyn ApiDocuments,
    group: &str,
    kind: &str,
) -> Result<Option<Discovered>> {
    let mut found: Option<Discovered> = None;
    for version in group_versions(docs, group).await? {
        let path = format!("/{}", api_path(group, &version));
        let Some(list) = docs.get_json(&path).await? else {
            continue;
        };
        let Some((resource, subresources)) = resource_in(&list, kind) else {
            continue;
        };
        let entry = DiscoveredVersion {
            name: version.clone(),
            status: subresources.iter().any(|s| s == "status"),
            scale: subresources.iter().any(|s| s == "scale"),
        };
        match &mut found {
            Some(d) => d.versions.push(entry),
            None => found = Some(discovered(group, kind, &resource, entry)),
        }
    }
    Ok(found)
}

/// The kind discovery gives resource `resource` of `group`/`version`, or `None` when that
/// group-version does not serve it.
pub async fn kind_of_resource(
    docs: &dyn ApiDocuments,
    (group, version, resource): (&str, &str, &str),
) -> Result<Option<String>> {
    let Some(list) = docs
        .get_json(&format!("/{}", api_path(group, version)))
        .await?
    else {
        return Ok(None);
    };
    let kind = list
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("name").and_then(Value::as_str) == Some(resource))
        .and_then(|r| r.get("kind").and_then(Value::as_str))
        .map(str::to_owned);
    Ok(kind)
}

fn discovered(group: &str, kind: &str, resource: &Value, first: DiscoveredVersion) -> Discovered {
    let text = |field: &str| {
        resource
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Discovered {
        group: group.to_owned(),
        kind: kind.to_owned(),
        plural: text("name"),
        singular: text("singularName"),
        namespaced: resource.get("namespaced").and_then(Value::as_bool) == Some(true),
        short_names: strings(resource.get("shortNames")),
        categories: strings(resource.get("categories")),
        preferred: first.name.clone(),
        versions: vec![first],
    }
}

/// The models a builtin kind's schema is read from: the OpenAPI v2 document, as upstream reads
/// it; where the server serves none (404) or its v2 document lacks a model of the kind (kcp-sim
/// serves an empty one), the v3 document of every version, with a warning that the schema (and
/// its APIResourceSchema name) then differs from upstream's.
pub async fn openapi_models(
    docs: &dyn ApiDocuments,
    discovered: &Discovered,
) -> Result<OpenApiModels> {
    if let Some(document) = docs.get_json("/openapi/v2").await?
        && has_v2_models(&document, discovered)
    {
        return Ok(OpenApiModels::V2(document));
    }
    tracing::warn!(
        kind = %discovered.kind,
        group = %discovered.group,
        "the service cluster's OpenAPI v2 document has no model of this kind: the schema is read \
         from OpenAPI v3, and its APIResourceSchema name differs from the one upstream's agent gives it"
    );
    Ok(OpenApiModels::V3(
        openapi_documents(docs, discovered).await?,
    ))
}

fn has_v2_models(document: &Value, discovered: &Discovered) -> bool {
    let Some(definitions) = document.get("definitions").and_then(Value::as_object) else {
        return false;
    };
    discovered
        .versions
        .iter()
        .all(|v| model_name(definitions, &discovered.group, &v.name, &discovered.kind).is_some())
}

/// The OpenAPI v3 document of every discovered version, by version.
pub async fn openapi_documents(
    docs: &dyn ApiDocuments,
    discovered: &Discovered,
) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    for v in &discovered.versions {
        let path = format!("/openapi/v3/{}", api_path(&discovered.group, &v.name));
        let doc = docs
            .get_json(&path)
            .await?
            .ok_or_else(|| Error::Discovery {
                path: path.clone(),
                reason: "not found: the service cluster serves no OpenAPI v3 document for this \
                     group-version (kcp-sync reads OpenAPI v3, served by Kubernetes 1.27 and newer)"
                    .into(),
                transient: false,
            })?;
        out.insert(v.name.clone(), doc);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
