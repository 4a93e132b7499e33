//! Rendering init sources: template + cluster context in, Kubernetes objects out.
//!
//! This module is pure: it does no I/O. The init controller builds a [`TemplateContext`] from
//! the LogicalCluster being initialized ([`TemplateContext::from_logical_cluster`]), fetches the
//! InitTemplates its InitTarget refers to, and calls [`render_sources`] to get the objects to
//! create, in source order (sorting for apply happens later).
//!
//! # Template data
//! Templates see these top-level values ([`TemplateContext::to_value`]):
//!
//! | key | value |
//! |---|---|
//! | `ClusterName` | logical cluster name (annotation `kcp.io/cluster`), e.g. `34hg2j4gh24jdfgf` |
//! | `ClusterPath` | workspace path (annotation `kcp.io/path`), e.g. `root:customer:projectx` |
//! | `WorkspaceTypeName` | name of the WorkspaceType being initialized |
//! | `WorkspaceTypePath` | workspace path or cluster name holding the WorkspaceType |
//! | `Labels` | the LogicalCluster's labels (a map) |
//! | `Annotations` | the LogicalCluster's annotations (a map) |
//!
//! Upstream offers only `ClusterName` and `ClusterPath`; the others are kcp-init additions.
//! Go templates write `{{ .ClusterName }}`, tera templates `{{ ClusterName }}`.
//!
//! # Syntax
//! InitTemplates are Go templates (`text/template` with sprig, as upstream), rendered by
//! [`kcp_core::template`]. The annotation `templates.kcp-rs.io/syntax: tera`
//! ([`kcp_core::template::SYNTAX_ANNOTATION`]) selects tera instead; the syntax is never
//! guessed from the text, so a ConfigMap holding `${#ARGS[@]}` or `{% raw %}` stays a Go
//! template. A field that does not exist in the data (`{{ .Nope }}`) is an error, as it is
//! for upstream's struct.
//!
//! # Differences from upstream
//! - **No HTML escaping.** Upstream renders with Go's `html/template`, which escapes
//!   `" ' & < > +` in action output (`{{ .ClusterPath | quote }}` gives `&#34;root:x&#34;`) and
//!   drops HTML comments. kcp-init renders plain text: `{{ .ClusterPath | quote }}` gives
//!   `"root:x"`. Only templates that print those characters render differently; cluster names
//!   and paths never contain them.
//! - **Hermetic.** Upstream registers all of sprig, including `env`, `expandenv`, `now` and
//!   random functions. kcp-init templates cannot use them (the template fails to parse, naming
//!   the function; see [`kcp_core::template::sprig`]), so rendering is repeatable and cannot
//!   leak the agent's credentials.
//! - **No panic** when `kcp.io/path` (or `kcp.io/cluster`) is missing: it is an
//!   [`Error::MissingAnnotation`].
//! - **Manifest parsing** follows [`kcp_core::manifest`]: as upstream, the output is a JSON
//!   stream when it starts with `{` and a `---`-separated YAML stream otherwise, empty documents
//!   are skipped, and every object needs `apiVersion` and `kind`. In addition, `kind: List`
//!   documents and top-level JSON arrays are expanded into their items. YAML scalars follow
//!   YAML 1.1 as upstream (`defaultMode: 0644` is 420, `yes` is true).

use std::collections::BTreeMap;

use kcp_core::kcp::{CLUSTER_ANNOTATION, LogicalCluster, PATH_ANNOTATION};
use kcp_core::template::{MissingKeys, SYNTAX_ANNOTATION, TemplateOptions};
use kcp_core::{TemplateEngine, TemplateSyntax};
use kube::api::DynamicObject;

use crate::api::InitTemplate;
use crate::error::{Error, Result};

/// An InitTemplate's source and the syntax it asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateSource {
    /// The InitTemplate's name (used in errors).
    pub name: String,
    /// `spec.template`.
    pub source: String,
    /// The value of the [`SYNTAX_ANNOTATION`] annotation, if any (`go` or `tera`; checked
    /// when rendering).
    pub syntax: Option<String>,
}

impl TemplateSource {
    /// A Go template (no syntax annotation).
    pub fn go(name: impl Into<String>, source: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            source: source.into(),
            syntax: None,
        }
    }

    /// The source of an InitTemplate.
    pub fn of(template: &InitTemplate) -> Self {
        Self {
            name: template.metadata.name.clone().unwrap_or_default(),
            source: template.spec.template.clone(),
            syntax: template
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SYNTAX_ANNOTATION))
                .cloned(),
        }
    }
}

/// The data a template is rendered with, for one logical cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateContext {
    /// Logical cluster name (`ClusterName`).
    pub cluster_name: String,
    /// Workspace path (`ClusterPath`).
    pub cluster_path: String,
    /// Name of the WorkspaceType being initialized (`WorkspaceTypeName`).
    pub workspace_type_name: String,
    /// Workspace path or logical cluster name holding the WorkspaceType (`WorkspaceTypePath`).
    pub workspace_type_path: String,
    /// The LogicalCluster's labels (`Labels`).
    pub labels: BTreeMap<String, String>,
    /// The LogicalCluster's annotations (`Annotations`).
    pub annotations: BTreeMap<String, String>,
}

impl TemplateContext {
    /// The context for initializing `lc`, a workspace of the given WorkspaceType.
    ///
    /// `ClusterName` comes from the `kcp.io/cluster` annotation and `ClusterPath` from
    /// `kcp.io/path`; a missing one is an [`Error::MissingAnnotation`] naming the object.
    pub fn from_logical_cluster(
        lc: &LogicalCluster,
        workspace_type_name: &str,
        workspace_type_path: &str,
    ) -> Result<Self> {
        let annotations = lc.metadata.annotations.clone().unwrap_or_default();
        let required = |key: &str| {
            annotations
                .get(key)
                .cloned()
                .ok_or_else(|| Error::MissingAnnotation {
                    object: describe_logical_cluster(lc),
                    annotation: key.to_owned(),
                })
        };
        let cluster_name = required(CLUSTER_ANNOTATION)?;
        let cluster_path = required(PATH_ANNOTATION)?;
        Ok(Self {
            cluster_name,
            cluster_path,
            workspace_type_name: workspace_type_name.to_owned(),
            workspace_type_path: workspace_type_path.to_owned(),
            labels: lc.metadata.labels.clone().unwrap_or_default(),
            annotations,
        })
    }

    /// The template data: a JSON object with the keys `ClusterName`, `ClusterPath`,
    /// `WorkspaceTypeName`, `WorkspaceTypePath`, `Labels` and `Annotations`.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "ClusterName": self.cluster_name,
            "ClusterPath": self.cluster_path,
            "WorkspaceTypeName": self.workspace_type_name,
            "WorkspaceTypePath": self.workspace_type_path,
            "Labels": self.labels,
            "Annotations": self.annotations,
        })
    }
}

/// Names a LogicalCluster in errors: its name and, when known, its logical cluster or uid.
fn describe_logical_cluster(lc: &LogicalCluster) -> String {
    let name = lc.metadata.name.as_deref().unwrap_or("(unnamed)");
    let cluster = lc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CLUSTER_ANNOTATION));
    match (cluster, &lc.metadata.uid) {
        (Some(cluster), _) => format!("LogicalCluster {name:?} in logical cluster {cluster:?}"),
        (None, Some(uid)) => format!("LogicalCluster {name:?} (uid {uid})"),
        (None, None) => format!("LogicalCluster {name:?}"),
    }
}

/// Renders one template and parses its output into objects, in output order.
///
/// The syntax comes from `template.syntax` (see the [module documentation](self)). The
/// template's name appears in errors: [`Error::Template`] with the line and column in the
/// source, or [`Error::Manifest`] with the document index and line in the rendered output.
pub fn render_template(
    engine: &TemplateEngine,
    template: &TemplateSource,
    ctx: &TemplateContext,
) -> Result<Vec<DynamicObject>> {
    let name = template.name.as_str();
    let syntax = TemplateSyntax::from_annotation(name, template.syntax.as_deref())
        .map_err(|err| Error::from_core(name, err))?;
    let options = TemplateOptions::default()
        .with_syntax(syntax)
        .with_missing_keys(MissingKeys::Error);
    let text = engine
        .render_with(name, &template.source, &options, &ctx.to_value())
        .map_err(|err| Error::from_core(name, err))?;
    kcp_core::parse_manifests(name, &text).map_err(|err| Error::from_core(name, err))
}

/// Renders every source (in `spec.sources` order) and concatenates the objects in source
/// order.
///
/// The first failure stops rendering and is returned as [`Error::Source`] with the source's
/// index and template name.
pub fn render_sources(
    engine: &TemplateEngine,
    templates: &[TemplateSource],
    ctx: &TemplateContext,
) -> Result<Vec<DynamicObject>> {
    let mut objects = Vec::new();
    for (index, template) in templates.iter().enumerate() {
        let rendered = render_template(engine, template, ctx).map_err(|err| Error::Source {
            index,
            template: template.name.clone(),
            source: Box::new(err),
        })?;
        objects.extend(rendered);
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_core::kcp::LogicalClusterSpec;

    const CLUSTER: &str = "34hg2j4gh24jdfgf";

    /// The InitTemplate example of the upstream documentation (ConfigMap before Namespace).
    const UPSTREAM_EXAMPLE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  namespace: cluster-info
  name: info
data:
  cluster: "{{ .ClusterName }}"
  workspace: "{{ .ClusterPath }}"
---
apiVersion: v1
kind: Namespace
metadata:
  name: cluster-info
"#;

    fn ctx() -> TemplateContext {
        TemplateContext {
            cluster_name: CLUSTER.into(),
            cluster_path: "root:org:team".into(),
            workspace_type_name: "dev-environment".into(),
            workspace_type_path: "root:ws-types".into(),
            labels: BTreeMap::from([("team".into(), "platform".into())]),
            annotations: BTreeMap::from([("kcp.io/path".into(), "root:org:team".into())]),
        }
    }

    fn render(source: &str) -> Result<Vec<DynamicObject>> {
        render_template(
            &TemplateEngine::new(),
            &TemplateSource::go("tmpl", source),
            &ctx(),
        )
    }

    fn render_tera(source: &str) -> Result<Vec<DynamicObject>> {
        let template = TemplateSource {
            syntax: Some("tera".into()),
            ..TemplateSource::go("tmpl", source)
        };
        render_template(&TemplateEngine::new(), &template, &ctx())
    }

    /// Renders a ConfigMap whose `data.value` is `value_template` and returns that value.
    fn render_value(value_template: &str) -> String {
        let source = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  value: '{value_template}'\n"
        );
        let objects = render(&source).unwrap();
        assert_eq!(objects.len(), 1);
        objects[0].data["data"]["value"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn logical_cluster(annotations: &[(&str, &str)]) -> LogicalCluster {
        let mut lc = LogicalCluster::new("cluster", LogicalClusterSpec::default());
        lc.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        lc.metadata.labels = Some(BTreeMap::from([("team".into(), "platform".into())]));
        lc
    }

    #[test]
    fn context_takes_name_and_path_from_annotations() {
        let lc = logical_cluster(&[("kcp.io/cluster", CLUSTER), ("kcp.io/path", "root:a")]);
        let ctx = TemplateContext::from_logical_cluster(&lc, "dev", "root:types").unwrap();
        assert_eq!(ctx.cluster_name, CLUSTER);
        assert_eq!(ctx.cluster_path, "root:a");
        assert_eq!(ctx.workspace_type_name, "dev");
        assert_eq!(ctx.workspace_type_path, "root:types");
        assert_eq!(ctx.labels["team"], "platform");
        assert_eq!(ctx.annotations["kcp.io/path"], "root:a");
    }

    #[test]
    fn missing_path_annotation_is_an_error_naming_object_and_annotation() {
        let lc = logical_cluster(&[("kcp.io/cluster", CLUSTER)]);
        let err = TemplateContext::from_logical_cluster(&lc, "dev", "root").unwrap_err();
        assert!(matches!(
            &err,
            Error::MissingAnnotation { annotation, .. } if annotation == "kcp.io/path"
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "LogicalCluster \"cluster\" in logical cluster \"{CLUSTER}\": \
                 annotation \"kcp.io/path\" is missing"
            )
        );
    }

    #[test]
    fn missing_cluster_annotation_is_an_error() {
        let lc = logical_cluster(&[("kcp.io/path", "root:a")]);
        let err = TemplateContext::from_logical_cluster(&lc, "dev", "root").unwrap_err();
        assert!(matches!(
            &err,
            Error::MissingAnnotation { annotation, .. } if annotation == "kcp.io/cluster"
        ));
    }

    #[test]
    fn template_data_has_upstream_and_additional_keys() {
        let value = ctx().to_value();
        assert_eq!(
            value,
            serde_json::json!({
                "ClusterName": CLUSTER,
                "ClusterPath": "root:org:team",
                "WorkspaceTypeName": "dev-environment",
                "WorkspaceTypePath": "root:ws-types",
                "Labels": {"team": "platform"},
                "Annotations": {"kcp.io/path": "root:org:team"},
            })
        );
    }

    #[test]
    fn documented_sha256_trunc_example_matches_upstream() {
        // printf '34hg2j4gh24jdfgf' | sha256sum
        // c05171e80650a1c2030fa1f980f2758d2abc35c14a252b101bd17f970bb8ebef
        assert_eq!(
            render_value("{{ .ClusterName | sha256sum | trunc 8 }}"),
            "c05171e8"
        );
    }

    #[test]
    fn documented_replace_example_matches_upstream() {
        assert_eq!(
            render_value(r#"{{ .ClusterPath | replace ":" "," }}"#),
            "root,org,team"
        );
    }

    #[test]
    fn upstream_example_renders_configmap_then_namespace() {
        let objects = render(UPSTREAM_EXAMPLE).unwrap();
        let kinds: Vec<_> = objects
            .iter()
            .map(|o| o.types.as_ref().unwrap().kind.as_str())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "Namespace"]);
        let cm = &objects[0];
        assert_eq!(cm.metadata.namespace.as_deref(), Some("cluster-info"));
        assert_eq!(cm.metadata.name.as_deref(), Some("info"));
        assert_eq!(
            cm.data["data"],
            serde_json::json!({"cluster": CLUSTER, "workspace": "root:org:team"})
        );
        assert_eq!(objects[1].metadata.name.as_deref(), Some("cluster-info"));
    }

    #[test]
    fn go_if_else_with_eq_selects_branch() {
        let source = "{{ if eq .ClusterPath \"root:org:team\" }}yes{{ else }}no{{ end }}";
        assert_eq!(render_value(source), "yes");
        let source = "{{ if eq .ClusterPath \"root:other\" }}yes{{ else }}no{{ end }}";
        assert_eq!(render_value(source), "no");
    }

    #[test]
    fn go_template_reads_nested_label() {
        assert_eq!(render_value("{{ .Labels.team }}"), "platform");
    }

    #[test]
    fn tera_template_renders_when_the_annotation_asks_for_it() {
        let source = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  value: '{% if WorkspaceTypeName == \"dev-environment\" %}{{ ClusterPath | upper }}{% endif %}-{{ Annotations[\"kcp.io/path\"] }}'\n";
        let objects = render_tera(source).unwrap();
        assert_eq!(
            objects[0].data["data"]["value"],
            "ROOT:ORG:TEAM-root:org:team"
        );
    }

    #[test]
    fn tera_looking_text_stays_a_go_template_without_the_annotation() {
        let source = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  run.sh: 'echo ${#ARGS[@]} {% raw %} {{ .ClusterName }}'\n";
        let objects = render(source).unwrap();
        assert_eq!(
            objects[0].data["data"]["run.sh"],
            format!("echo ${{#ARGS[@]}} {{% raw %}} {CLUSTER}")
        );
    }

    #[test]
    fn unknown_syntax_annotation_is_a_template_error() {
        let template = TemplateSource {
            syntax: Some("jinja".into()),
            ..TemplateSource::go("tmpl", "x: y")
        };
        let err = render_template(&TemplateEngine::new(), &template, &ctx()).unwrap_err();
        assert_eq!(err.reason(), "TemplateError");
        assert!(err.to_string().contains("jinja"), "{err}");
    }

    #[test]
    fn syntax_comes_from_the_init_template_annotation() {
        let mut t = InitTemplate::new(
            "t",
            crate::api::InitTemplateSpec {
                template: "x".into(),
            },
        );
        assert_eq!(TemplateSource::of(&t), TemplateSource::go("t", "x"));
        t.metadata.annotations = Some(BTreeMap::from([(
            SYNTAX_ANNOTATION.to_owned(),
            "tera".to_owned(),
        )]));
        assert_eq!(TemplateSource::of(&t).syntax.as_deref(), Some("tera"));
    }

    #[test]
    fn default_mode_0644_is_octal_as_upstream_reads_it() {
        let source =
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nspec:\n  defaultMode: 0644\n";
        let objects = render(source).unwrap();
        assert_eq!(objects[0].data["spec"]["defaultMode"], 420);
    }

    #[test]
    fn excluded_function_is_refused_by_name() {
        let err = render("x: {{ env \"HOME\" }}").unwrap_err();
        assert!(
            err.to_string().contains("function \"env\" is not allowed"),
            "{err}"
        );
    }

    #[test]
    fn output_is_not_html_escaped() {
        assert_eq!(
            render_value("{{ .ClusterPath | quote }}<&>+"),
            "\"root:org:team\"<&>+"
        );
    }

    #[test]
    fn empty_documents_are_skipped() {
        let source = "---\n# nothing\n---\n{}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"{{ .ClusterName }}\"\n---\n";
        let objects = render(source).unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].metadata.name.as_deref(), Some(CLUSTER));
    }

    #[test]
    fn json_output_is_parsed() {
        let source = r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "{{ .ClusterName }}"}}"#;
        let objects = render(source).unwrap();
        assert_eq!(objects[0].metadata.name.as_deref(), Some(CLUSTER));
    }

    #[test]
    fn template_error_names_template_and_position() {
        let err = render("a: b\nc: {{ if .ClusterName }}").unwrap_err();
        match &err {
            Error::Template { template, line, .. } => {
                assert_eq!(template, "tmpl");
                assert_eq!(*line, Some(2));
            }
            other => panic!("expected a template error, got {other:?}"),
        }
        assert!(err.to_string().starts_with("template \"tmpl\" at line 2"));
    }

    #[test]
    fn undefined_field_is_an_error() {
        let err = render("x: {{ .NoSuchField }}").unwrap_err();
        match &err {
            Error::Template {
                template,
                line,
                column,
                message,
            } => {
                assert_eq!(template, "tmpl");
                assert_eq!(
                    (*line, *column),
                    (Some(1), Some(7)),
                    "at the field, as Go reports it"
                );
                assert!(message.contains("NoSuchField"), "{message}");
            }
            other => panic!("expected a template error, got {other:?}"),
        }
    }

    #[test]
    fn invalid_manifest_error_carries_document_index_and_line() {
        let source =
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n- not\n- a mapping\n";
        let err = render(source).unwrap_err();
        match &err {
            Error::Manifest {
                template,
                document,
                line,
                ..
            } => {
                assert_eq!(template, "tmpl");
                assert_eq!((*document, *line), (1, 6));
            }
            other => panic!("expected a manifest error, got {other:?}"),
        }
    }

    #[test]
    fn sources_are_concatenated_in_source_order() {
        let templates = vec![
            TemplateSource::go(
                "second-in-name",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n",
            ),
            TemplateSource::go("info", UPSTREAM_EXAMPLE),
        ];
        let objects = render_sources(&TemplateEngine::new(), &templates, &ctx()).unwrap();
        let names: Vec<_> = objects
            .iter()
            .map(|o| o.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["a", "info", "cluster-info"]);
    }

    #[test]
    fn source_error_names_source_index_and_template() {
        let templates = vec![
            TemplateSource::go("ok", UPSTREAM_EXAMPLE),
            TemplateSource::go("broken", "x: {{ .Nope }}"),
        ];
        let err = render_sources(&TemplateEngine::new(), &templates, &ctx()).unwrap_err();
        assert!(matches!(
            &err,
            Error::Source { index: 1, template, .. } if template == "broken"
        ));
        assert!(
            err.to_string()
                .starts_with("source #1 (InitTemplate \"broken\"): template \"broken\" at line 1"),
            "{err}"
        );
        assert_eq!(err.reason(), "TemplateError");
    }

    #[test]
    fn no_sources_render_no_objects() {
        let objects = render_sources(&TemplateEngine::new(), &[], &ctx()).unwrap();
        assert!(objects.is_empty());
    }
}
