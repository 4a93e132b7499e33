//! How a template is rendered: its syntax, output escaping, missing keys, and the engine's
//! execution budget.

use crate::error::{Error, Result};

/// The annotation that chooses the syntax of a template stored in an object (an
/// InitTemplate): `go` (the default when absent) or `tera`.
pub const SYNTAX_ANNOTATION: &str = "templates.kcp-rs.io/syntax";

/// The syntax a template is written in. Always chosen explicitly, never guessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TemplateSyntax {
    /// Go `text/template` with the hermetic sprig library: `{{ .Name | upper }}`. The
    /// default, because the upstream kcp tools use it.
    #[default]
    Go,
    /// tera 2 (Jinja2-like): `{{ name | upper }}`, `{% if %}`.
    Tera,
}

impl TemplateSyntax {
    /// The syntax named by a [`SYNTAX_ANNOTATION`] value: `None` (no annotation) and `go`
    /// are Go, `tera` is tera; anything else is an [`Error::Template`] naming `template`.
    pub fn from_annotation(template: &str, value: Option<&str>) -> Result<Self> {
        match value.map(str::trim) {
            None | Some("go") => Ok(Self::Go),
            Some("tera") => Ok(Self::Tera),
            Some(other) => Err(Error::Template {
                template: template.to_owned(),
                line: None,
                column: None,
                message: format!(
                    "annotation {SYNTAX_ANNOTATION}: unknown syntax {other:?} (use \"go\" or \"tera\")"
                ),
            }),
        }
    }
}

/// How action output is escaped (Go templates; tera never escapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Escaping {
    /// Plain text, as Go's `text/template` (and api-syncagent): `{{ "<a>" }}` prints `<a>`.
    #[default]
    Text,
    /// Contextual HTML escaping, as Go's `html/template` (what the upstream init-agent uses):
    /// `{{ .ClusterPath | quote }}` prints `&#34;root:a&#34;`. Only for byte-for-byte
    /// compatibility with output of the upstream init-agent.
    Html,
}

/// What a Go template does with a map key that is missing (`{{ .Nope }}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MissingKeys {
    /// Print `<no value>`, and pass nil to functions (Go's default, api-syncagent).
    #[default]
    NoValue,
    /// Stop with an error naming the key (`missingkey=error`; like a Go struct field that
    /// does not exist, as in the upstream init-agent's data).
    Error,
}

/// Everything that decides how one template renders, besides its source and data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TemplateOptions {
    /// The syntax.
    pub syntax: TemplateSyntax,
    /// Output escaping (Go templates).
    pub escaping: Escaping,
    /// Missing map keys (Go templates; tera always fails on undefined values).
    pub missing_keys: MissingKeys,
}

impl TemplateOptions {
    /// Go text/template semantics with `<no value>` for missing keys (the default).
    pub fn go() -> Self {
        Self::default()
    }

    /// tera syntax.
    pub fn tera() -> Self {
        Self {
            syntax: TemplateSyntax::Tera,
            ..Self::default()
        }
    }

    /// The same options with `syntax`.
    pub fn with_syntax(mut self, syntax: TemplateSyntax) -> Self {
        self.syntax = syntax;
        self
    }

    /// The same options with `escaping`.
    pub fn with_escaping(mut self, escaping: Escaping) -> Self {
        self.escaping = escaping;
        self
    }

    /// The same options with `missing_keys`.
    pub fn with_missing_keys(mut self, missing_keys: MissingKeys) -> Self {
        self.missing_keys = missing_keys;
        self
    }
}

/// Bounds on one execution of a template (Go or tera), so that a template that runs away (`range
/// until 100000000`, unbounded `template` recursion, `repeat 1000000000 "x"`) stops with an
/// error instead of hanging or exhausting the process. Nesting of `template` calls and
/// blocks is additionally capped at 200 levels by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// `range` iterations over the whole execution.
    pub max_range_iterations: u64,
    /// Size of the rendered output, and of any one string a function builds, in bytes.
    pub max_output_bytes: usize,
    /// Length of any list a function builds (`until`, `untilStep`, `seq`).
    pub max_list_items: usize,
    /// Time one execution may take (checked at every function call and write of output, and
    /// for tera at every loop iteration): a template of expensive calls within the other
    /// limits (a million `sha256sum` of 16 MiB) stops instead of holding a worker for hours.
    pub max_duration: std::time::Duration,
}

impl Default for Budget {
    /// 1,000,000 range iterations, 16 MiB of output, lists of 1,000,000 items, 5 s.
    fn default() -> Self {
        Self {
            max_range_iterations: 1_000_000,
            max_output_bytes: 16 << 20,
            max_list_items: 1_000_000,
            max_duration: std::time::Duration::from_secs(5),
        }
    }
}
