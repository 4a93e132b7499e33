//! A template is user input (InitTemplates, naming and mutation templates): whatever its syntax,
//! one that runs away stops with an error naming it, within the execution budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kcp_core::template::Budget;
use kcp_core::{TemplateEngine, TemplateOptions};
use serde_json::json;

fn tera(engine: &TemplateEngine, source: &str) -> String {
    engine
        .render_with("runaway", source, &TemplateOptions::tera(), &json!({}))
        .unwrap_err()
        .to_string()
}

#[test]
fn nested_tera_loops_stop_at_the_iteration_budget() {
    let started = Instant::now();
    let message = tera(
        &TemplateEngine::new(),
        "{% for i in range(end=100000) %}{% for j in range(end=100000) %}{% endfor %}{% endfor %}",
    );
    assert!(message.contains("runaway"), "{message}");
    assert!(
        message.contains("more than 1000000 loop iterations"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_tera_string_doubled_in_a_loop_stops_at_the_size_budget() {
    let message = tera(
        &TemplateEngine::new(),
        r#"{% set s = "x" %}{% for i in range(end=64) %}{% set_global s = s ~ s %}{% endfor %}{{ s | length }}"#,
    );
    assert!(message.contains("larger than 16777216 bytes"), "{message}");
}

#[test]
fn tera_output_stops_at_the_output_budget() {
    let engine = TemplateEngine::new().with_budget(Budget {
        max_output_bytes: 1000,
        ..Budget::default()
    });
    let message = tera(&engine, "{% for i in range(end=500) %}xyz{% endfor %}");
    assert!(
        message.contains("output is larger than 1000 bytes"),
        "{message}"
    );
}

#[test]
fn a_tera_list_comprehension_is_refused_with_its_position() {
    let message = tera(&TemplateEngine::new(), "{{ [i for i in range(end=3)] }}");
    assert!(message.contains("list comprehensions"), "{message}");
    assert!(
        message.contains("1:5") || message.contains("line 1"),
        "{message}"
    );
}

#[test]
fn a_slow_tera_template_stops_at_the_time_budget() {
    let engine = TemplateEngine::new().with_budget(Budget {
        max_duration: Duration::from_millis(50),
        max_range_iterations: u64::MAX,
        ..Budget::default()
    });
    let message = tera(
        &engine,
        "{% for i in range(end=100000) %}{% for j in range(end=100000) %}{% endfor %}{% endfor %}",
    );
    assert!(message.contains("ran longer than 50ms"), "{message}");
}

#[test]
fn a_slow_go_template_stops_at_the_time_budget() {
    let engine = TemplateEngine::new().with_budget(Budget {
        max_duration: Duration::from_millis(50),
        ..Budget::default()
    });
    let started = Instant::now();
    let message = engine
        .render(
            "runaway",
            r#"{{ range until 1000000 }}{{ $h := sha256sum (repeat 20000 "x") }}{{ end }}"#,
            &json!({}),
        )
        .unwrap_err()
        .to_string();
    assert!(message.contains("ran longer than 50ms"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn ordinary_tera_templates_render_as_before() {
    let out = TemplateEngine::new()
        .render_with(
            "t",
            "{%- for x in xs -%}\n{{ x }},{% endfor %}{% set n = xs | length %} n={{ n }}",
            &TemplateOptions::tera(),
            &json!({"xs": ["a", "b"]}),
        )
        .unwrap();
    assert_eq!(out, "a,b, n=2");
}

#[test]
fn a_tera_replace_that_would_grow_past_the_budget_is_refused_before_it_allocates() {
    let engine = TemplateEngine::new().with_budget(Budget {
        max_output_bytes: 1 << 20,
        ..Budget::default()
    });
    let message = tera(
        &engine,
        r#"{% set s = "abcdefghij" %}{% for i in range(end=10) %}{% set_global s = s ~ s %}{% endfor %}{{ s | replace(from="", to=s) | length }}"#,
    );
    assert!(message.contains("larger than 1048576 bytes"), "{message}");
}
