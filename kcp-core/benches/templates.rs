//! Rendering a cached Go template: a 2 KiB manifest with 20 actions and sprig pipelines.
//!
//! Target: at least 50,000 renders per second on one core (parse cached, data converted
//! from JSON on every render as callers do).

#![allow(clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kcp_core::template::TemplateEngine;
use serde_json::json;

/// A ConfigMap-and-Deployment manifest of about 2 KiB with 20 actions.
fn template() -> String {
    let mut src = String::from(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "%s-config" .ClusterName }}
  namespace: {{ .ClusterPath | replace ":" "-" | lower }}
  labels:
    workspace-hash: "{{ .ClusterName | sha256sum | trunc 8 }}"
    owner: {{ .Labels.team | default "nobody" | quote }}
    tier: {{ .Labels.tier | default "standard" | upper }}
  annotations:
    kcp.io/path: {{ .ClusterPath | quote }}
    segments: "{{ splitList ":" .ClusterPath | len }}"
data:
  cluster: "{{ .ClusterName }}"
  parent: "{{ .ClusterPath | splitList ":" | initial | join ":" }}"
  leaf: "{{ .ClusterPath | splitList ":" | last }}"
  short: "{{ sha3short .ClusterName 12 }}"
  encoded: "{{ .ClusterPath | b64enc }}"
  settings.json: '{{ dict "replicas" .Replicas "path" .ClusterPath | toJson }}'
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .ClusterName | trunc 10 }}-web
  namespace: {{ .ClusterPath | replace ":" "-" | lower }}
spec:
  replicas: {{ .Replicas | add1 }}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
        hash: "{{ .ClusterName | adler32sum }}"
    spec:
      containers:
      - name: web
        image: "registry.example.com/web:{{ .Version | default "latest" }}"
        args:{{ range $i, $s := splitList ":" .ClusterPath }}
        - "--segment-{{ $i }}={{ $s }}"{{ end }}
"#,
    );
    // Pad with comments (text, no actions) to 2 KiB.
    while src.len() < 2048 {
        src.push_str("# padding to make the template about two kilobytes long\n");
    }
    src
}

fn bench(c: &mut Criterion) {
    let engine = TemplateEngine::new();
    let source = template();
    let data = json!({
        "ClusterName": "34hg2j4gh24jdfgf",
        "ClusterPath": "root:org:team:project",
        "Labels": {"team": "platform"},
        "Replicas": 2,
        "Version": "1.2.3",
    });
    let out = engine.render("bench", &source, &data).expect("renders");
    assert!(out.contains("--segment-3=project"), "{out}");
    let mut group = c.benchmark_group("go_template");
    group.throughput(Throughput::Elements(1));
    group.bench_function("render 2 KiB, 20 actions, parse cached", |b| {
        b.iter(|| engine.render("bench", &source, &data))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
