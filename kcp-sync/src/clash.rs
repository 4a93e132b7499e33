//! PublishedResources that publish the same resource: two projections (or a projection and
//! a source) giving the same `<plural>.<group>` in the APIExport would be two schemas for one
//! resource, which kcp cannot serve, and two sync controllers for one kind. The first
//! PublishedResource (oldest, then by name) keeps the resource; each later one is refused,
//! naming the field and the first one. Pure functions over the PublishedResources' statuses
//! (`resourceSchemaName` is `<hash>.<plural>.<group>`).

use std::collections::{BTreeMap, BTreeSet};

use crate::api::PublishedResource;
use crate::error::Error;

/// The resource (`<plural>.<group>`) an APIResourceSchema name serves.
pub fn schema_resource(schema: &str) -> &str {
    schema
        .split_once('.')
        .map_or(schema, |(_, resource)| resource)
}

fn schema_of(pr: &PublishedResource) -> Option<&str> {
    pr.status.as_ref()?.resource_schema_name.as_deref()
}

/// The order in which PublishedResources get a resource: oldest first, then by name.
fn order(pr: &PublishedResource) -> (String, String) {
    let created = pr
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    (created, pr.metadata.name.clone().unwrap_or_default())
}

/// The PublishedResources among `prs` other than `pr` that publish `schema`'s resource,
/// split into those before `pr` and those after it.
pub fn sharing<'a>(
    prs: &'a [PublishedResource],
    pr: &PublishedResource,
    schema: &str,
) -> (Vec<&'a PublishedResource>, Vec<&'a PublishedResource>) {
    let resource = schema_resource(schema);
    let mine = order(pr);
    prs.iter()
        .filter(|other| other.metadata.name != pr.metadata.name)
        .filter(|other| schema_of(other).is_some_and(|s| schema_resource(s) == resource))
        .partition(|other| order(other) < mine)
}

/// The refusal of `pr`, which publishes `schema`'s resource after `first` does.
pub fn refusal(pr: &PublishedResource, schema: &str, first: &PublishedResource) -> Error {
    let field = if pr.spec.projection.is_some() {
        "spec.projection"
    } else {
        "spec.resource"
    };
    Error::InvalidSpec {
        published_resource: pr.metadata.name.clone().unwrap_or_default(),
        field: field.into(),
        reason: format!(
            "publishes {}, which PublishedResource {:?} already publishes",
            schema_resource(schema),
            first.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

/// The schemas the APIExport lists: of each resource, only the first PublishedResource's.
pub fn exported(prs: &[PublishedResource]) -> BTreeSet<String> {
    let mut first: BTreeMap<&str, (&PublishedResource, &str)> = BTreeMap::new();
    for pr in prs {
        let Some(schema) = schema_of(pr) else {
            continue;
        };
        let entry = first.entry(schema_resource(schema)).or_insert((pr, schema));
        if order(pr) < order(entry.0) {
            *entry = (pr, schema);
        }
    }
    first.values().map(|(_, s)| (*s).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{PublishedResourceSpec, PublishedResourceStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pr(name: &str, second: i64, schema: &str) -> PublishedResource {
        let mut pr = PublishedResource::new(name, PublishedResourceSpec::default());
        pr.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(1_700_000_000 + second).unwrap(),
        ));
        pr.status = Some(PublishedResourceStatus {
            resource_schema_name: Some(schema.into()),
            ..Default::default()
        });
        pr
    }

    #[test]
    fn the_oldest_publisher_of_a_resource_is_exported_and_the_later_one_is_refused() {
        let prs = vec![
            pr("later", 5, "vb.crontabs.example.com"),
            pr("first", 1, "va.crontabs.example.com"),
            pr("other", 3, "vc.jobs.example.com"),
        ];
        let exported: Vec<String> = exported(&prs).into_iter().collect();
        assert_eq!(exported, ["va.crontabs.example.com", "vc.jobs.example.com"]);
        let (before, after) = sharing(&prs, &prs[0], "vb.crontabs.example.com");
        assert_eq!(before.len(), 1);
        assert!(after.is_empty());
        let message = refusal(&prs[0], "vb.crontabs.example.com", before[0]).to_string();
        assert_eq!(
            message,
            "PublishedResource \"later\": spec.resource: publishes crontabs.example.com, which PublishedResource \"first\" already publishes"
        );
        let (before, after) = sharing(&prs, &prs[1], "va.crontabs.example.com");
        assert!(before.is_empty());
        assert_eq!(after[0].metadata.name.as_deref(), Some("later"));
    }

    #[test]
    fn at_the_same_second_the_name_decides() {
        let prs = vec![
            pr("b", 1, "vb.crontabs.example.com"),
            pr("a", 1, "va.crontabs.example.com"),
        ];
        let exported: Vec<String> = exported(&prs).into_iter().collect();
        assert_eq!(exported, ["va.crontabs.example.com"]);
    }
}
