//! The template API as seen from outside the crate.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use kcp_core::Error;
use kcp_core::template::{TemplateEngine, TemplateSyntax, translate_go_template};
use serde_json::json;

#[test]
fn go_and_tera_templates_render_the_same_names() {
    let engine = Arc::new(TemplateEngine::new());
    let ctx = json!({"ClusterName": "34hg2j4gh24jdfgf", "ClusterPath": "root:org:ws"});
    let go = "{{ .ClusterName | sha256sum | trunc 8 }}-{{ .ClusterPath | replace \":\" \"-\" }}";
    let tera = "{{ ClusterName | sha256sum | trunc(length=8) }}-{{ ClusterPath | replace(old=\":\", new=\"-\") }}";
    assert_eq!(TemplateSyntax::detect(go), TemplateSyntax::Go);
    assert_eq!(TemplateSyntax::detect(tera), TemplateSyntax::Tera);
    let a = engine
        .render_with("go", go, TemplateSyntax::detect(go), &ctx)
        .unwrap();
    let b = engine.render("tera", tera, &ctx).unwrap();
    assert_eq!(a, b);
    assert!(a.ends_with("-root-org-ws"));
    let translated = translate_go_template(go).unwrap();
    assert_eq!(engine.render("translated", &translated, &ctx).unwrap(), a);
}

#[test]
fn template_errors_are_permanent_and_positioned() {
    let err = TemplateEngine::new()
        .render("manifest.yaml", "kind: {{ kind }}", &json!({}))
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
            assert_eq!((line, column), (Some(1), Some(10)));
        }
        other => panic!("{other:?}"),
    }
}
