use super::*;

const UPSTREAM_EXAMPLE: &str = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-certificates, labels: {agent: a1}}
spec:
  resource: {apiGroup: cert-manager.io, kind: Certificate, versions: [v1]}
  filter:
    namespace: {matchLabels: {tier: prod}}
    resource: {matchExpressions: [{key: sync, operator: In, values: ["yes"]}]}
  naming:
    namespace: 'tenant-{{ .ClusterName }}'
    name: '{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short 12 }}'
  enableWorkspacePaths: true
  projection:
    group: certs.example.com
    versions: {v1: v1beta1}
    kind: Sertifikat
    plural: sertifikater
    shortNames: [sert]
    categories: []
  mutation:
    spec:
      - regex: {path: spec.secretName, pattern: '^(.+)$', replacement: 'tls-$1'}
      - template: {path: spec.commonName, template: '{{ .Value.String | lower }}'}
      - delete: {path: spec.keystores}
      - cel: {path: spec.duration, expression: 'value == null ? "2160h" : value'}
    status:
      - regex: {path: status.secretName, pattern: '^tls-', replacement: ''}
  related:
    - identifier: tls-secret
      origin: service
      group: ""
      version: v1
      resource: secrets
      cleanup: true
      object:
        reference: {path: spec.secretName}
      watch: {byOwner: {}}
    - identifier: ca-bundle
      origin: kcp
      kind: ConfigMap
      object:
        selector:
          matchLabels: {ca-for: '{{ .RemoteObject.metadata.name }}'}
          rewrite: {template: {template: '{{ .Value }}-copy'}}
        namespace:
          template: {template: '{{ if eq .Side "kcp" }}default{{ else }}{{ .Object.metadata.namespace }}{{ end }}'}
      mutation: {spec: [{delete: {path: data.private}}]}
      watch: {bySelector: {matchLabels: {app: certs}}}
  synchronization: {enabled: true}
status:
  resourceSchemaName: v1a2b3c4d.sertifikater.certs.example.com
"#;

fn example() -> PublishedResource {
    serde_saphyr::from_str(UPSTREAM_EXAMPLE).unwrap()
}

#[test]
fn crds_yaml_matches_snapshot() {
    insta::assert_snapshot!(crds_yaml().unwrap());
}

#[test]
fn crd_keeps_upstream_group_kind_plural_and_cluster_scope() {
    let crd = &crds()[0];
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("publishedresources.syncagent.kcp.io")
    );
    assert_eq!(crd.spec.group, GROUP);
    assert_eq!(crd.spec.scope, "Cluster");
    assert_eq!(crd.spec.names.kind, "PublishedResource");
    assert_eq!(crd.spec.versions.len(), 1);
    assert_eq!(crd.spec.versions[0].name, VERSION);
    assert!(
        crd.spec.versions[0]
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some())
    );
}

#[test]
fn crd_carries_the_upstream_cel_rules_of_related_resources_and_watch() {
    let yaml = crds_yaml().unwrap();
    for rule in [
        "has(self.kind) != (has(self.version) || has(self.resource))",
        "has(self.resource) == has(self.version)",
        "!has(self.group) || (has(self.resource) && has(self.version))",
        "!has(self.identityHash) || (has(self.group) && has(self.version) && has(self.resource))",
        "!(self.origin == 'service' && has(self.syncStatus) && self.syncStatus) || has(self.watch)",
        "has(self.byOwner) != has(self.bySelector)",
    ] {
        assert!(yaml.contains(rule), "missing rule {rule}");
    }
}

#[test]
fn upstream_example_deserializes_with_every_field() {
    let pr = example();
    assert_eq!(pr.name(), "publish-certificates");
    assert_eq!(pr.spec.resource.api_group, "cert-manager.io");
    assert_eq!(pr.spec.resource.versions, ["v1"]);
    let projection = pr.spec.projection.as_ref().unwrap();
    assert_eq!(projection.versions["v1"], "v1beta1");
    assert_eq!(
        projection.short_names.as_deref(),
        Some(&["sert".to_owned()][..])
    );
    assert_eq!(projection.categories.as_deref(), Some(&[][..]));
    assert_eq!(projection.scope, None);
    let mutation = pr.spec.mutation.as_ref().unwrap();
    assert_eq!(mutation.spec.len(), 4);
    assert!(mutation.spec[3].cel.is_some());
    assert_eq!(pr.related().len(), 2);
    assert_eq!(pr.related()[1].kind, Some(RelatedResourceKind::ConfigMap));
    assert!(pr.related()[0].watch.as_ref().unwrap().by_owner.is_some());
    assert!(pr.spec.enable_workspace_paths);
    assert_eq!(
        pr.status.unwrap().resource_schema_name.as_deref(),
        Some("v1a2b3c4d.sertifikater.certs.example.com")
    );
}

#[test]
fn upstream_example_round_trips_through_json_unchanged() {
    let pr = example();
    let value = serde_json::to_value(&pr).unwrap();
    let back: PublishedResource = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back, pr);
    assert_eq!(
        value["spec"]["related"][0]["object"]["reference"]["path"],
        "spec.secretName"
    );
    assert_eq!(
        value["spec"]["projection"]["categories"],
        serde_json::json!([])
    );
}

#[test]
fn legacy_kind_shorthand_resolves_to_core_v1_resources() {
    let pr = example();
    assert_eq!(
        pr.related()[1].origin_gvr(),
        ("".into(), "v1".into(), "configmaps".into())
    );
}

#[test]
fn kcp_side_gvr_is_the_projection_for_service_origin_objects() {
    let mut related = example().related()[0].clone();
    related.projection = Some(RelatedResourceProjection {
        resource: "configmaps".into(),
        ..Default::default()
    });
    assert_eq!(
        related.kcp_gvr(),
        ("".into(), "v1".into(), "configmaps".into())
    );
    assert_eq!(
        related.origin_gvr(),
        ("".into(), "v1".into(), "secrets".into())
    );
}

#[test]
fn synchronization_is_enabled_unless_explicitly_disabled() {
    let mut pr = example();
    assert!(pr.sync_enabled());
    pr.spec.synchronization = None;
    assert!(pr.sync_enabled());
    pr.spec.synchronization = Some(SynchronizationSpec { enabled: false });
    assert!(!pr.sync_enabled());
}

#[test]
fn upstream_status_reads_back_with_empty_additions() {
    let status: PublishedResourceStatus =
        serde_json::from_value(serde_json::json!({"resourceSchemaName": "v1.x.y"})).unwrap();
    assert_eq!(status.resource_schema_name.as_deref(), Some("v1.x.y"));
    assert!(status.conditions.is_empty());
    assert!(status.objects.is_zero());
}

#[test]
fn status_serializes_with_camel_case_field_names() {
    let status = PublishedResourceStatus {
        resource_schema_name: Some("v1.x.y".into()),
        conditions: vec![],
        observed_generation: Some(3),
        objects: ObjectCounts {
            synced: 1,
            failing: 2,
            pending: 3,
        },
    };
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        serde_json::json!({
            "resourceSchemaName": "v1.x.y",
            "observedGeneration": 3,
            "objects": {"synced": 1, "failing": 2, "pending": 3},
        })
    );
}
