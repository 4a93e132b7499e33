use super::*;
use crate::api::{
    PublishedResourceSpec, ResourceProjection, ResourceScope, SourceResourceDescriptor,
};

fn crd() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}, "replicas": {"type": "integer"}}}
    }}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.example.com", "generation": 3, "uid": "u", "resourceVersion": "9",
            "annotations": {"api-approved.kubernetes.io": "unapproved", "other": "x"}},
        "spec": {
            "group": "example.com",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": ["ct"]},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema, "subresources": {"status": {}}},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
            "conversion": {"strategy": "None"},
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    })
}

fn pr(
    resource: SourceResourceDescriptor,
    projection: Option<ResourceProjection>,
) -> PublishedResource {
    PublishedResource::new(
        "pr",
        PublishedResourceSpec {
            resource,
            projection,
            ..Default::default()
        },
    )
}

fn source(versions: &[&str]) -> SourceResourceDescriptor {
    SourceResourceDescriptor {
        api_group: "example.com".into(),
        kind: "CronTab".into(),
        versions: versions.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

fn version_names(crd: &Value) -> Vec<(String, bool)> {
    spec_versions(crd)
        .iter()
        .map(|v| (version_name(v).to_owned(), flag(v, "storage")))
        .collect()
}

#[test]
fn no_projection_keeps_every_version() {
    let out = project_crd(&pr(source(&[]), None), &crd()).unwrap();
    assert_eq!(
        version_names(&out),
        [("v1".into(), true), ("v2".into(), false)]
    );
    assert_eq!(out["metadata"]["name"], "crontabs.example.com");
}

#[test]
fn selecting_a_subset_keeps_only_those_versions() {
    let out = project_crd(&pr(source(&["v1"]), None), &crd()).unwrap();
    assert_eq!(version_names(&out), [("v1".into(), true)]);
}

#[test]
fn deprecated_single_version_selection_works() {
    let mut src = source(&[]);
    src.version = "v1".into();
    let out = project_crd(&pr(src, None), &crd()).unwrap();
    assert_eq!(version_names(&out), [("v1".into(), true)]);
}

#[test]
fn version_and_versions_together_are_an_error() {
    let mut src = source(&["v1"]);
    src.version = "v1".into();
    let err = project_crd(&pr(src, None), &crd()).unwrap_err().to_string();
    assert!(err.contains("both .version and .versions"), "{err}");
}

#[test]
fn an_unknown_version_is_an_error_naming_the_field() {
    let err = project_crd(&pr(source(&["v9"]), None), &crd())
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec.resource.versions"), "{err}");
    assert!(err.contains("v9"), "{err}");
}

#[test]
fn no_served_version_is_an_error() {
    let mut c = crd();
    c["spec"]["versions"][1]["served"] = json!(false);
    let err = project_crd(&pr(source(&["v2"]), None), &c)
        .unwrap_err()
        .to_string();
    assert!(err.contains("served"), "{err}");
}

#[test]
fn the_last_served_version_becomes_storage_when_none_is_selected() {
    let out = project_crd(&pr(source(&["v2"]), None), &crd()).unwrap();
    assert_eq!(version_names(&out), [("v2".into(), true)]);
}

#[test]
fn deprecated_single_version_projection_renames_it() {
    let projection = ResourceProjection {
        version: "v6".into(),
        ..Default::default()
    };
    let out = project_crd(&pr(source(&["v1"]), Some(projection)), &crd()).unwrap();
    assert_eq!(version_names(&out), [("v6".into(), true)]);
}

#[test]
fn single_version_projection_of_two_versions_is_an_error() {
    let projection = ResourceProjection {
        version: "v6".into(),
        ..Default::default()
    };
    assert!(project_crd(&pr(source(&[]), Some(projection)), &crd()).is_err());
}

#[test]
fn versions_map_renames_and_sorts_by_kube_priority() {
    let projection = ResourceProjection {
        versions: [
            ("v1".to_owned(), "v1beta1".to_owned()),
            ("v2".to_owned(), "v1alpha1".to_owned()),
        ]
        .into(),
        ..Default::default()
    };
    let out = project_crd(&pr(source(&[]), Some(projection)), &crd()).unwrap();
    assert_eq!(
        version_names(&out),
        [("v1alpha1".into(), false), ("v1beta1".into(), true)]
    );
}

#[test]
fn two_versions_mapped_to_one_name_are_an_error() {
    let projection = ResourceProjection {
        versions: [
            ("v1".to_owned(), "v3".to_owned()),
            ("v2".to_owned(), "v3".to_owned()),
        ]
        .into(),
        ..Default::default()
    };
    let err = project_crd(&pr(source(&[]), Some(projection)), &crd())
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec.projection.versions"), "{err}");
}

#[test]
fn kind_projection_derives_list_kind_singular_and_plural() {
    let projection = ResourceProjection {
        kind: "Sertifikat".into(),
        ..Default::default()
    };
    let out = project_crd(&pr(source(&[]), Some(projection)), &crd()).unwrap();
    assert_eq!(
        out["spec"]["names"],
        json!({"kind": "Sertifikat", "listKind": "SertifikatList", "singular": "sertifikat", "plural": "sertifikats", "shortNames": ["ct"]})
    );
}

#[test]
fn explicit_plural_group_and_scope_win_and_rename_the_crd() {
    let projection = ResourceProjection {
        kind: "Sertifikat".into(),
        plural: "sertifikater".into(),
        group: "certs.example.com".into(),
        scope: Some(ResourceScope::Cluster),
        ..Default::default()
    };
    let out = project_crd(&pr(source(&[]), Some(projection)), &crd()).unwrap();
    assert_eq!(out["spec"]["names"]["plural"], "sertifikater");
    assert_eq!(out["spec"]["group"], "certs.example.com");
    assert_eq!(out["spec"]["scope"], "Cluster");
    assert_eq!(out["metadata"]["name"], "sertifikater.certs.example.com");
}

#[test]
fn short_names_and_categories_are_kept_when_absent_and_cleared_when_empty() {
    let keep = project_crd(
        &pr(source(&[]), Some(ResourceProjection::default())),
        &crd(),
    )
    .unwrap();
    assert_eq!(keep["spec"]["names"]["shortNames"], json!(["ct"]));
    let projection = ResourceProjection {
        short_names: Some(vec![]),
        categories: Some(vec!["all".into()]),
        ..Default::default()
    };
    let out = project_crd(&pr(source(&[]), Some(projection)), &crd()).unwrap();
    assert_eq!(out["spec"]["names"]["shortNames"], json!([]));
    assert_eq!(out["spec"]["names"]["categories"], json!(["all"]));
}

#[test]
fn kube_version_order_puts_other_strings_first_then_alpha_beta_ga() {
    let mut versions = vec!["v2", "v1", "v1beta1", "v2alpha1", "v1alpha1", "foo", "bar"];
    versions.sort_by(|a, b| compare_kube_versions(a, b));
    assert_eq!(
        versions,
        ["foo", "bar", "v1alpha1", "v2alpha1", "v1beta1", "v1", "v2"]
    );
}

#[test]
fn prepared_crd_keeps_only_name_generation_and_approval_and_sets_conversion_none() {
    let prepared = prepare_source_crd(&crd());
    assert_eq!(
        prepared["metadata"],
        json!({"name": "crontabs.example.com", "generation": 3, "annotations": {"api-approved.kubernetes.io": "unapproved"}})
    );
    assert_eq!(prepared["spec"]["conversion"], json!({"strategy": "None"}));
    assert!(prepared.get("status").is_none());
}

#[test]
fn non_structural_crds_get_a_preserving_schema_for_versions_without_one() {
    let mut c = crd();
    c["spec"]["versions"][1]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    c["status"]["conditions"] = json!([{"type": "NonStructuralSchema", "status": "True"}]);
    let prepared = prepare_source_crd(&c);
    assert_eq!(
        prepared["spec"]["versions"][1]["schema"],
        json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}})
    );
}

#[test]
fn schema_name_is_v_hash_plural_group_and_ignores_conversion() {
    let projected = project_crd(&pr(source(&[]), None), &prepare_source_crd(&crd())).unwrap();
    let name = schema_name(&projected);
    assert!(
        name.starts_with('v') && name.ends_with(".crontabs.example.com"),
        "{name}"
    );
    assert_eq!(name.len(), "v12345678.crontabs.example.com".len());
    let mut without = projected.clone();
    without["spec"]
        .as_object_mut()
        .unwrap()
        .remove("conversion");
    assert_eq!(schema_name(&without), name);
}

#[test]
fn schema_name_matches_the_sha1_of_the_go_json_of_the_spec() {
    let projected = project_crd(&pr(source(&["v1"]), None), &prepare_source_crd(&crd())).unwrap();
    let go = concat!(
        r#"{"group":"example.com","names":{"plural":"crontabs","singular":"crontab","shortNames":["ct"],"kind":"CronTab","listKind":"CronTabList"},"#,
        r#""scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","#,
        r#""properties":{"spec":{"type":"object","properties":{"cronSpec":{"type":"string"},"replicas":{"type":"integer"}}}}}},"#,
        r#""subresources":{"status":{}}}]}"#,
        "\n"
    );
    assert_eq!(
        schema_name(&projected),
        format!("v{}.crontabs.example.com", &sha1_hex(go)[..8])
    );
}

#[test]
fn a_spec_change_gives_a_new_schema_name() {
    let a = project_crd(&pr(source(&[]), None), &crd()).unwrap();
    let mut changed = crd();
    changed["spec"]["names"]["shortNames"] = json!(["cts"]);
    let b = project_crd(&pr(source(&[]), None), &changed).unwrap();
    assert_ne!(schema_name(&a), schema_name(&b));
}

#[test]
fn storage_gvk_reads_the_storage_version() {
    let projection = ResourceProjection {
        group: "g.io".into(),
        kind: "Tab".into(),
        ..Default::default()
    };
    let out = project_crd(&pr(source(&[]), Some(projection)), &crd()).unwrap();
    assert_eq!(
        storage_gvk(&out),
        Some(Gvk {
            group: "g.io".into(),
            version: "v1".into(),
            kind: "Tab".into()
        })
    );
}

#[test]
fn render_api_resource_schema_matches_snapshot() {
    let projected = project_crd(&pr(source(&[]), None), &prepare_source_crd(&crd())).unwrap();
    let name = schema_name(&projected);
    let ars = render_api_resource_schema(&projected, &name, "my-agent", 3).unwrap();
    insta::assert_yaml_snapshot!(ars);
}

#[test]
fn a_single_version_schema_has_no_conversion() {
    let projected = project_crd(&pr(source(&["v1"]), None), &prepare_source_crd(&crd())).unwrap();
    let ars = render_api_resource_schema(&projected, "v1.crontabs.example.com", "a", 1).unwrap();
    assert_eq!(ars.spec.conversion, None);
}

#[test]
fn a_version_without_schema_cannot_be_published() {
    let mut c = crd();
    c["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    let projected = project_crd(&pr(source(&["v1"]), None), &c).unwrap();
    let err = render_api_resource_schema(&projected, "n", "a", 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("crontabs.example.com") && err.contains("openAPIV3Schema"),
        "{err}"
    );
}
