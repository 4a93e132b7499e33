//! The template API as seen from outside the crate, and the five upstream templates that the
//! old Go-to-tera translator could not render (issue 14).
#![allow(clippy::unwrap_used)]

use kcp_core::template::{Escaping, TemplateEngine, TemplateOptions};
use kcp_core::{Error, parse_manifests};
use serde_json::json;

fn cluster() -> serde_json::Value {
    json!({"ClusterName": "34hg2j4gh24jdfgf", "ClusterPath": "root:org:ws"})
}

#[test]
fn printf_builds_a_name() {
    let out = TemplateEngine::new()
        .render("t", r#"{{ printf "%s-admin" .ClusterName }}"#, &cluster())
        .unwrap();
    assert_eq!(out, "34hg2j4gh24jdfgf-admin");
}

#[test]
fn range_over_split_path_with_index_and_value_variables() {
    let src = r#"{{ range $i, $s := splitList ":" .ClusterPath }}{{ $i }}={{ $s }};{{ end }}"#;
    let out = TemplateEngine::new().render("t", src, &cluster()).unwrap();
    assert_eq!(out, "0=root;1=org;2=ws;");
}

#[test]
fn configmap_holding_bash_array_length_renders_verbatim() {
    let src = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\ndata:\n  run.sh: |\n    echo ${#ARGS[@]} {# not a comment #} {% raw %}\n    echo {{ .ClusterName }}\n";
    let out = TemplateEngine::new().render("t", src, &cluster()).unwrap();
    let objects = parse_manifests("t", &out).unwrap();
    assert_eq!(
        objects[0].data["data"]["run.sh"],
        "echo ${#ARGS[@]} {# not a comment #} {% raw %}\necho 34hg2j4gh24jdfgf\n"
    );
}

#[test]
fn default_mode_0644_is_octal_420() {
    let src = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  volumes:\n  - name: v\n    secret:\n      secretName: s\n      defaultMode: 0644\n";
    let out = TemplateEngine::new().render("t", src, &cluster()).unwrap();
    let objects = parse_manifests("t", &out).unwrap();
    assert_eq!(
        objects[0].data["spec"]["volumes"][0]["secret"]["defaultMode"],
        json!(420)
    );
}

#[test]
fn quoted_cluster_path_is_plain_text_by_default_and_html_escaped_on_request() {
    let engine = TemplateEngine::new();
    let src = "{{ .ClusterPath | quote }}";
    assert_eq!(
        engine.render("t", src, &cluster()).unwrap(),
        "\"root:org:ws\""
    );
    let html = TemplateOptions::go().with_escaping(Escaping::Html);
    assert_eq!(
        engine.render_with("t", src, &html, &cluster()).unwrap(),
        "&#34;root:org:ws&#34;"
    );
}

#[test]
fn go_and_tera_templates_render_the_same_names() {
    let engine = TemplateEngine::new();
    let go = "{{ .ClusterName | sha256sum | trunc 8 }}-{{ .ClusterPath | replace \":\" \"-\" }}";
    let tera = "{{ ClusterName | sha256sum | trunc(length=8) }}-{{ ClusterPath | replace(old=\":\", new=\"-\") }}";
    let a = engine.render("go", go, &cluster()).unwrap();
    let b = engine
        .render_with("tera", tera, &TemplateOptions::tera(), &cluster())
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(a, "c05171e8-root-org-ws");
}

#[test]
fn template_errors_are_permanent_and_positioned() {
    let err = TemplateEngine::new()
        .render("manifest.yaml", "kind: {{ .Kind | upper", &json!({}))
        .unwrap_err();
    assert!(!err.is_transient());
    assert_eq!(err.reason(), "TemplateError");
    match err {
        Error::Template {
            template,
            line,
            column,
            ..
        } => {
            assert_eq!(template, "manifest.yaml");
            assert_eq!(line, Some(1));
            assert!(column.is_some());
        }
        other => panic!("{other:?}"),
    }
}
