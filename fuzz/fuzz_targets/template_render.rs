//! Parser and renderer: any bytes as a Go template (text and HTML escaping), as a tera
//! template, and as a rendered manifest; nothing may panic, hang or grow without bound.
#![no_main]

use std::sync::LazyLock;

use kcp_core::template::{Budget, Escaping, MissingKeys, TemplateEngine, TemplateOptions};
use libfuzzer_sys::fuzz_target;

static ENGINE: LazyLock<TemplateEngine> = LazyLock::new(|| {
    TemplateEngine::with_capacity(16).with_budget(Budget {
        max_range_iterations: 10_000,
        max_output_bytes: 1 << 20,
        max_list_items: 10_000,
        // Below libFuzzer's -timeout, so a slow template is the budget's error, not a hang.
        max_duration: std::time::Duration::from_secs(2),
    })
});

static DATA: LazyLock<serde_json::Value> = LazyLock::new(|| {
    serde_json::json!({
        "ClusterName": "34hg2j4gh24jdfgf",
        "ClusterPath": "root:org:ws",
        "n": 42, "f": 1.5, "b": true, "nil": null, "s": "Hello World",
        "list": [1, "two", 3.5, null, [4]],
        "m": {"a": 1, "b": {"c": "d"}, "e": []},
    })
});

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let options = [
        TemplateOptions::go(),
        TemplateOptions::go().with_escaping(Escaping::Html),
        TemplateOptions::go().with_missing_keys(MissingKeys::Error),
        TemplateOptions::tera(),
    ];
    for option in &options {
        if let Ok(text) = ENGINE.render_with("fuzz", source, option, &DATA) {
            let _ = kcp_core::parse_manifests("fuzz", &text);
        }
    }
    let _ = kcp_core::parse_manifests("fuzz", source);
});
