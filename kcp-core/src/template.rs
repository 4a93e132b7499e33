//! Hermetic templates: tera 2 with sprig-named filters, plus a Go `text/template` translator.
//!
//! Controllers render manifests and names from templates written by users or copied from
//! upstream kcp tooling. [`TemplateEngine`] renders them so that the result depends only on the
//! template and the context given:
//!
//! - **Hermetic.** No template can read environment variables, files, the clock or randomness.
//!   tera 2 ships no such function (its only builtin functions are the deterministic `range`
//!   and `throw`), the `glob_fs` feature is off, and every template is parsed into its own tera
//!   instance, so `{% include %}`, `{% extends %}` and `{% import %}` cannot reach another
//!   template (let alone a file): they fail with [`Error::Template`].
//! - **No autoescaping.** The output is YAML, not HTML: `{{ x }}` prints `x` as is.
//! - **Strict undefined.** Printing an undefined variable or a missing field is an error naming
//!   it, with the line and column. `{{ x | default(value="y") }}` still works when `x` or the
//!   *last* field of a path (`{{ obj.missing | default(value="y") }}`) is missing; a missing
//!   field in the middle of a path (`obj.missing.deeper`) is an error even under `default`.
//!   `{% if x is defined %}` tests presence without failing.
//! - **Cached.** Parsed templates are cached by the SHA-256 of their source, so rendering the
//!   same source again does not parse it again. The cache keeps at most
//!   [`DEFAULT_CACHE_CAPACITY`] templates (see [`TemplateEngine::with_capacity`]) and evicts the
//!   least recently used one when full.
//!
//! # Filters
//! Besides tera's builtin filters, these sprig-named filters are available (sprig's positional
//! arguments become the keyword arguments listed; the piped value is the filter input). String
//! filters also accept numbers and booleans, and fail on undefined values, `none`, arrays and
//! maps.
//!
//! | filter | meaning |
//! |---|---|
//! | `sha1sum` | hex SHA-1 (40 chars) |
//! | `sha256sum` | hex SHA-256 (64 chars) |
//! | `sha3sum` | hex SHA3-256 (64 chars) |
//! | `sha3short(length=20)` | first `length` hex chars of SHA3-256; `length` capped at 64, must be > 0 |
//! | `shortHash` | first 20 hex chars of SHA-1 |
//! | `trunc(length=n)` | first `n` chars, or the last `-n` chars when `n` is negative |
//! | `replace(old=.., new=..)` | replace every occurrence (`from`/`to` also accepted) |
//! | `lower`, `upper` | change case |
//! | `quote` | wrap in double quotes, escaped like Go's `%q` |
//! | `b64enc`, `b64dec` | standard base64 with padding; invalid input to `b64dec` is an error |
//! | `default(value=..)` | `value` when the input is undefined, `none`, `false`, `0`, `""`, `[]` or `{}` (sprig's "empty") |
//! | `toJson` | compact JSON, map keys sorted |
//! | `toYaml` | YAML, map keys sorted, no trailing newline |
//! | `indent(width=n)` | `n` spaces before every line, the first and blank ones included |
//! | `nindent(width=n)` | a newline, then `indent(width=n)` |
//! | `trim` | strip leading and trailing white space |
//!
//! `default`, `replace`, `lower`, `upper`, `indent` and `trim` replace tera's builtins of the
//! same name, so that tera and Go templates behave alike.
//!
//! # Go templates
//! [`translate_go_template`] turns the subset of Go `text/template` used by kcp tools into tera
//! source; [`TemplateEngine::render_with`] with [`TemplateSyntax::Go`] translates and renders in
//! one step, reporting errors at positions of the Go source.

mod filters;
mod go_syntax;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest as _, Sha256};

pub use go_syntax::translate_go_template;

use crate::error::{Error, Result};
use go_syntax::Translation;

/// Number of parsed templates a [`TemplateEngine::new`] engine keeps.
pub const DEFAULT_CACHE_CAPACITY: usize = 512;

/// Name every template is registered under in its private tera instance.
const TERA_NAME: &str = "template";

/// The syntax a template source is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateSyntax {
    /// tera 2 (Jinja2-like) syntax: `{{ name | upper }}`, `{% if %}`.
    Tera,
    /// The Go `text/template` subset described in [`translate_go_template`]:
    /// `{{ .Name | upper }}`, `{{ if eq .A "b" }}`.
    Go,
}

/// Go words that, first in an action, mark a Go template.
const GO_ACTION_WORDS: &[&str] = &[
    "if", "else", "end", "range", "with", "define", "template", "block", "break", "continue", "eq",
    "ne", "and", "or", "not", "nil",
];

impl TemplateSyntax {
    /// Guesses the syntax of `source`.
    ///
    /// The rule: a source containing a tera tag or comment opener (`{%` or `{#`) is
    /// [`Tera`](Self::Tera). Otherwise it is [`Go`](Self::Go) when at least one `{{` action,
    /// after an optional `- ` trim marker and white space, starts with `.`, `$`, `/*`, a Go
    /// keyword (`if`, `else`, `end`, `range`, `with`, `define`, `template`, `block`, `break`,
    /// `continue`), a Go comparison/logic function (`eq`, `ne`, `and`, `or`, `not`), `nil`, or
    /// the name of a sprig filter followed by white space or `(` (a function call such as
    /// `trunc 8 (...)`). Everything else, including a source without actions, is tera.
    pub fn detect(source: &str) -> TemplateSyntax {
        if source.contains("{%") || source.contains("{#") {
            return TemplateSyntax::Tera;
        }
        let mut rest = source;
        while let Some(idx) = rest.find("{{") {
            rest = &rest[idx + 2..];
            let mut body = rest;
            if let Some(after) = body.strip_prefix('-') {
                body = after;
            }
            let body = body.trim_start();
            if body.starts_with('.') || body.starts_with('$') || body.starts_with("/*") {
                return TemplateSyntax::Go;
            }
            let word_len = body
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(body.len());
            let (word, after) = body.split_at(word_len);
            let followed_by_space_or_paren = after
                .chars()
                .next()
                .is_some_and(|c| c.is_whitespace() || c == '(');
            let is_go_word = GO_ACTION_WORDS.contains(&word);
            let is_sprig_call = followed_by_space_or_paren
                && !after.trim_start().starts_with('|')
                && !after.trim_start().starts_with("}}")
                && !after.trim_start().starts_with("-}}")
                && filters::KWARG_NAMES.iter().any(|(n, _)| *n == word);
            if (is_go_word && !word.is_empty()) || is_sprig_call {
                return TemplateSyntax::Go;
            }
        }
        TemplateSyntax::Tera
    }
}

/// A parsed template, ready to render.
struct Compiled {
    /// A tera instance holding only this template.
    tera: tera::Tera,
    /// For Go templates, how to map tera positions back to the Go source.
    translation: Option<Translation>,
}

struct CacheEntry {
    compiled: Arc<Compiled>,
    last_used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<[u8; 32], CacheEntry>,
    clock: u64,
}

/// Renders hermetic templates; see the [module documentation](self).
///
/// `Send + Sync`: share one engine (for example in an `Arc`) between all reconcilers so they
/// share its cache.
pub struct TemplateEngine {
    /// A tera instance with the filters registered and no templates, cloned for each template.
    base: tera::Tera,
    cache: Mutex<Cache>,
    capacity: usize,
    parses: AtomicUsize,
    hits: AtomicU64,
}

impl std::fmt::Debug for TemplateEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateEngine")
            .field("capacity", &self.capacity)
            .field("cached_templates", &self.cached_templates())
            .field("parse_count", &self.parse_count())
            .finish_non_exhaustive()
    }
}

impl Default for TemplateEngine {
    fn default() -> Self {
        Self::new()
    }
}

impl TemplateEngine {
    /// An engine caching up to [`DEFAULT_CACHE_CAPACITY`] parsed templates.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CACHE_CAPACITY)
    }

    /// An engine caching up to `capacity` parsed templates (at least 1); when full, the least
    /// recently used template is evicted.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut base = tera::Tera::new();
        base.autoescape_on(Vec::<&'static str>::new());
        filters::register(&mut base);
        Self {
            base,
            cache: Mutex::new(Cache::default()),
            capacity: capacity.max(1),
            parses: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// Renders a tera template. `name` is used in errors only; `context` must be a JSON object
    /// (its keys are the template's variables) or `null` (no variables).
    pub fn render(&self, name: &str, source: &str, context: &serde_json::Value) -> Result<String> {
        self.render_with(name, source, TemplateSyntax::Tera, context)
    }

    /// Renders a template written in `syntax`; use [`TemplateSyntax::detect`] when the syntax
    /// is not known. Go templates are translated first (see [`translate_go_template`]) and
    /// errors point into the Go source: at the offending action for rendering errors.
    pub fn render_with(
        &self,
        name: &str,
        source: &str,
        syntax: TemplateSyntax,
        context: &serde_json::Value,
    ) -> Result<String> {
        let compiled = self.compiled(name, source, syntax)?;
        let ctx = match context {
            serde_json::Value::Null => tera::Context::new(),
            serde_json::Value::Object(_) => tera::Context::from_serialize(context)
                .map_err(|e| template_error(name, None, None, e.to_string()))?,
            other => {
                return Err(template_error(
                    name,
                    None,
                    None,
                    format!(
                        "the context must be a JSON object, got {}",
                        json_type_name(other)
                    ),
                ));
            }
        };
        compiled
            .tera
            .render(TERA_NAME, &ctx)
            .map_err(|e| convert_error(name, &e, compiled.translation.as_ref()))
    }

    /// How many parsed templates the cache holds.
    pub fn cached_templates(&self) -> usize {
        self.lock_cache().entries.len()
    }

    /// How many times this engine parsed a template (cache misses that parsed successfully or
    /// not). Meant for tests and metrics.
    pub fn parse_count(&self) -> usize {
        self.parses.load(Ordering::Relaxed)
    }

    /// How many renders found their template in the cache. Meant for tests and metrics.
    pub fn cache_hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic while holding the lock cannot leave the map half-updated in a way that
        // matters: at worst an entry is missing.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn compiled(&self, name: &str, source: &str, syntax: TemplateSyntax) -> Result<Arc<Compiled>> {
        let mut hasher = Sha256::new();
        hasher.update(match syntax {
            TemplateSyntax::Tera => b"tera\0",
            TemplateSyntax::Go => b"go\0\0\0",
        });
        hasher.update(source.as_bytes());
        let key: [u8; 32] = hasher.finalize().into();

        {
            let mut cache = self.lock_cache();
            cache.clock += 1;
            let now = cache.clock;
            if let Some(entry) = cache.entries.get_mut(&key) {
                entry.last_used = now;
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(entry.compiled.clone());
            }
        }

        // Parse outside the lock: two threads may parse the same source, which is harmless.
        self.parses.fetch_add(1, Ordering::Relaxed);
        let compiled = Arc::new(self.parse(name, source, syntax)?);

        let mut cache = self.lock_cache();
        if cache.entries.len() >= self.capacity
            && !cache.entries.contains_key(&key)
            && let Some(oldest) = cache
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k)
        {
            cache.entries.remove(&oldest);
        }
        cache.clock += 1;
        let now = cache.clock;
        cache.entries.insert(
            key,
            CacheEntry {
                compiled: compiled.clone(),
                last_used: now,
            },
        );
        Ok(compiled)
    }

    fn parse(&self, name: &str, source: &str, syntax: TemplateSyntax) -> Result<Compiled> {
        let translation = match syntax {
            TemplateSyntax::Tera => None,
            TemplateSyntax::Go => Some(go_syntax::translate(name, source)?),
        };
        let tera_source = translation.as_ref().map_or(source, |t| t.tera.as_str());
        let mut tera = self.base.clone();
        tera.add_raw_template(TERA_NAME, tera_source)
            .map_err(|e| convert_error(name, &e, translation.as_ref()))?;
        Ok(Compiled { tera, translation })
    }
}

fn json_type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn template_error(
    name: &str,
    line: Option<usize>,
    column: Option<usize>,
    message: String,
) -> Error {
    Error::Template {
        template: name.to_owned(),
        line,
        column,
        message,
    }
}

/// Converts a tera error into [`Error::Template`], with positions mapped back to the Go source
/// for translated templates.
fn convert_error(name: &str, err: &tera::Error, translation: Option<&Translation>) -> Error {
    // (message, 1-based line, 1-based column, byte offset in the tera source)
    let (message, position): (String, Option<(usize, usize, Option<usize>)>) = match err.kind() {
        tera::ErrorKind::SyntaxError(report) | tera::ErrorKind::RenderingError(report) => {
            let span = report.span();
            (
                report.message().to_owned(),
                Some((span.start_line, span.start_col + 1, Some(span.range.start))),
            )
        }
        tera::ErrorKind::Msg(text) => match parse_report(text) {
            Some((message, line, column)) => (message, Some((line, column, None))),
            None => (text.clone(), None),
        },
        tera::ErrorKind::CircularInclude { .. } | tera::ErrorKind::TemplateNotFound(_) => (
            "`{% include %}` is not available: templates are hermetic and cannot include others"
                .to_owned(),
            None,
        ),
        tera::ErrorKind::MissingParent { .. } | tera::ErrorKind::CircularExtend { .. } => (
            "`{% extends %}` is not available: templates are hermetic and cannot extend others"
                .to_owned(),
            None,
        ),
        other => (other.to_string(), None),
    };
    let message = message.replace(&format!("`{TERA_NAME}`"), "this template");
    let Some((line, column, offset)) = position else {
        return template_error(name, None, None, message);
    };
    match translation {
        None => template_error(name, Some(line), Some(column), message),
        Some(t) => {
            let offset = offset.unwrap_or_else(|| offset_of(&t.tera, line, column));
            match t.origin_of(offset) {
                Some(origin) => {
                    template_error(name, Some(origin.line), Some(origin.column), message)
                }
                None => template_error(name, None, None, message),
            }
        }
    }
}

/// Extracts message, line and column from a tera report (`error: msg\n --> name:line:col`),
/// which tera produces as plain text for unknown filters/functions/templates.
fn parse_report(text: &str) -> Option<(String, usize, usize)> {
    let mut lines = text.lines();
    let message = lines.next()?.strip_prefix("error: ")?.to_owned();
    let locus = lines.next()?.trim_start().strip_prefix("--> ")?;
    let mut parts = locus.rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((message, line, column))
}

/// Byte offset of a 1-based line and column (in characters) in `source`.
fn offset_of(source: &str, line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        source
            .match_indices('\n')
            .nth(line - 2)
            .map_or(source.len(), |(i, _)| i + 1)
    };
    let rest = source.get(line_start..).unwrap_or("");
    line_start
        + rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(src: &str, ctx: serde_json::Value) -> Result<String> {
        TemplateEngine::new().render("t", src, &ctx)
    }

    fn position(err: &Error) -> (Option<usize>, Option<usize>, &str) {
        match err {
            Error::Template {
                line,
                column,
                message,
                ..
            } => (*line, *column, message.as_str()),
            other => panic!("expected a template error, got {other:?}"),
        }
    }

    #[test]
    fn engine_is_send_sync_and_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<TemplateEngine>();
        let engine = Arc::new(TemplateEngine::new());
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let engine = engine.clone();
                std::thread::spawn(move || engine.render("t", "{{ i }}", &json!({ "i": i })))
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap().unwrap(), i.to_string());
        }
    }

    #[test]
    fn renders_variables_and_nested_fields() {
        let out = render(
            "name: {{ obj.metadata.name }}\nns: {{ ns }}\n",
            json!({"obj": {"metadata": {"name": "a"}}, "ns": "b"}),
        )
        .unwrap();
        assert_eq!(out, "name: a\nns: b\n");
    }

    #[test]
    fn same_source_is_parsed_once() {
        let engine = TemplateEngine::new();
        for i in 0..3 {
            let out = engine.render("t", "x={{ x }}", &json!({ "x": i })).unwrap();
            assert_eq!(out, format!("x={i}"));
        }
        // A different name does not matter: the cache key is the content.
        engine
            .render("other", "x={{ x }}", &json!({"x": 1}))
            .unwrap();
        assert_eq!(engine.parse_count(), 1);
        assert_eq!(engine.cache_hits(), 3);
        assert_eq!(engine.cached_templates(), 1);
        engine.render("t", "y={{ x }}", &json!({"x": 1})).unwrap();
        assert_eq!(engine.parse_count(), 2);
        assert_eq!(engine.cached_templates(), 2);
    }

    #[test]
    fn cache_is_bounded_and_evicts_least_recently_used() {
        let engine = TemplateEngine::with_capacity(2);
        let ctx = json!({});
        engine.render("t", "a", &ctx).unwrap();
        engine.render("t", "b", &ctx).unwrap();
        engine.render("t", "a", &ctx).unwrap(); // a is now more recent than b
        engine.render("t", "c", &ctx).unwrap(); // evicts b
        assert_eq!(engine.cached_templates(), 2);
        assert_eq!(engine.parse_count(), 3);
        engine.render("t", "a", &ctx).unwrap();
        assert_eq!(engine.parse_count(), 3, "a stayed cached");
        engine.render("t", "b", &ctx).unwrap();
        assert_eq!(engine.parse_count(), 4, "b was evicted");
        assert_eq!(engine.cached_templates(), 2);
    }

    #[test]
    fn failed_parses_are_not_cached() {
        let engine = TemplateEngine::new();
        assert!(engine.render("t", "{{ x", &json!({})).is_err());
        assert_eq!(engine.cached_templates(), 0);
    }

    #[test]
    fn autoescape_is_off() {
        let out = render("{{ x }}", json!({"x": "a\"b<&>'"})).unwrap();
        assert_eq!(out, "a\"b<&>'");
        // Even for names that tera would autoescape by suffix.
        let out = TemplateEngine::new()
            .render("page.html", "{{ x }}", &json!({"x": "<b>"}))
            .unwrap();
        assert_eq!(out, "<b>");
    }

    #[test]
    fn undefined_variable_is_an_error_naming_it_and_its_position() {
        let err = render("a: b\nc: {{ missing }}", json!({"x": 1})).unwrap_err();
        let (line, column, message) = position(&err);
        assert_eq!((line, column), (Some(2), Some(7)));
        assert!(message.contains("`missing`"), "{message}");
        assert!(
            err.to_string()
                .starts_with("template t at line 2, column 7:")
        );
    }

    #[test]
    fn missing_field_is_an_error_naming_it() {
        let err = render("{{ obj.nope }}", json!({"obj": {"a": 1}})).unwrap_err();
        let (line, column, message) = position(&err);
        assert_eq!(line, Some(1));
        assert!(column.is_some());
        assert!(message.contains("`nope`"), "{message}");
    }

    #[test]
    fn default_fills_missing_variable_and_missing_last_field() {
        let ctx = json!({"obj": {"a": 1}});
        assert_eq!(
            render("{{ x | default(value=\"y\") }}", ctx.clone()).unwrap(),
            "y"
        );
        assert_eq!(
            render("{{ obj.b | default(value=\"y\") }}", ctx.clone()).unwrap(),
            "y"
        );
        assert_eq!(
            render("{{ obj.a | default(value=\"y\") }}", ctx.clone()).unwrap(),
            "1"
        );
        // A missing field in the middle of the path stays an error.
        assert!(render("{{ obj.b.c | default(value=\"y\") }}", ctx).is_err());
    }

    #[test]
    fn defined_test_checks_presence_without_error() {
        let out = render("{% if x is defined %}yes{% else %}no{% endif %}", json!({})).unwrap();
        assert_eq!(out, "no");
    }

    #[test]
    fn syntax_error_has_position() {
        let err = render("ok\n{{ x ", json!({"x": 1})).unwrap_err();
        let (line, column, _) = position(&err);
        assert_eq!(line, Some(2));
        assert!(column.is_some());
    }

    #[test]
    fn unknown_filter_is_an_error_with_position() {
        let err = render("{{ x | nope }}", json!({"x": 1})).unwrap_err();
        let (line, column, message) = position(&err);
        assert_eq!((line, column), (Some(1), Some(8)));
        assert!(message.contains("nope"), "{message}");
    }

    #[test]
    fn no_environment_clock_or_randomness_functions() {
        for src in [
            "{{ get_env(name=\"HOME\") }}",
            "{{ env(name=\"HOME\") }}",
            "{{ now() }}",
            "{{ now(timestamp=true) }}",
            "{{ get_random(end=10) }}",
            "{{ random() }}",
            "{{ read_file(path=\"/etc/passwd\") }}",
            "{{ load_data(path=\"/etc/passwd\") }}",
        ] {
            let err = render(src, json!({})).unwrap_err();
            assert!(
                matches!(err, Error::Template { .. }),
                "{src} should fail, got {err:?}"
            );
        }
        for src in ["{{ \"x\" | date }}", "{{ \"x\" | filesizeformat }}"] {
            assert!(render(src, json!({})).is_err(), "{src} should fail");
        }
    }

    #[test]
    fn include_extends_and_import_cannot_reach_files_or_other_templates() {
        let engine = TemplateEngine::new();
        // Another cached template is not visible by any name.
        engine.render("other", "secret", &json!({})).unwrap();
        for src in [
            "{% include \"/etc/passwd\" %}",
            "{% include \"other\" %}",
            "{% include \"template\" %}",
            "{% extends \"/etc/passwd\" %}",
            "{% import \"/etc/passwd\" as m %}",
        ] {
            let err = engine.render("t", src, &json!({})).unwrap_err();
            assert!(matches!(err, Error::Template { .. }), "{src}: {err:?}");
        }
    }

    #[test]
    fn context_must_be_an_object_or_null() {
        assert_eq!(render("plain", serde_json::Value::Null).unwrap(), "plain");
        let err = render("plain", json!([1])).unwrap_err();
        assert!(position(&err).2.contains("JSON object"));
    }

    #[test]
    fn detect_recognises_go_and_tera() {
        use TemplateSyntax::{Go, Tera};
        for (src, want) in [
            ("{{ .ClusterName }}", Go),
            ("{{- .X -}}", Go),
            ("{{/* c */}}x", Go),
            ("{{ if eq .A \"b\" }}x{{ end }}", Go),
            ("{{ trunc 8 (sha256sum .X) }}", Go),
            ("{{ $x := 1 }}", Go),
            ("{{ name }}", Tera),
            ("{{ name | upper }}", Tera),
            ("{{ x | default(value=\"y\") }}", Tera),
            ("{% if x %}{{ .X }}{% endif %}", Tera),
            ("no actions", Tera),
            ("{{ lower }}", Tera),
        ] {
            assert_eq!(TemplateSyntax::detect(src), want, "{src}");
        }
    }

    #[test]
    fn go_render_with_matches_upstream_sha256_trunc() {
        let name = "34hg2j4gh24jdfgf";
        let out = TemplateEngine::new()
            .render_with(
                "t",
                "{{ .ClusterName | sha256sum | trunc 8 }}",
                TemplateSyntax::Go,
                &json!({ "ClusterName": name }),
            )
            .unwrap();
        let expected = hex::encode(Sha256::digest(name.as_bytes()));
        assert_eq!(out, expected[..8]);
    }

    #[test]
    fn go_render_with_replace_takes_piped_value_last() {
        let out = TemplateEngine::new()
            .render_with(
                "t",
                "{{ .ClusterPath | replace \":\" \",\" }}",
                TemplateSyntax::Go,
                &json!({ "ClusterPath": "root:customer:projectx" }),
            )
            .unwrap();
        assert_eq!(out, "root,customer,projectx");
    }

    #[test]
    fn go_render_errors_point_into_the_go_source() {
        let err = TemplateEngine::new()
            .render_with(
                "go",
                "a: b\nc: {{ .Missing | upper }}\n",
                TemplateSyntax::Go,
                &json!({}),
            )
            .unwrap_err();
        let (line, column, _) = position(&err);
        assert_eq!((line, column), (Some(2), Some(4)));
        let err = TemplateEngine::new()
            .render_with("go", "x\n  {{ range .X }}", TemplateSyntax::Go, &json!({}))
            .unwrap_err();
        assert_eq!(position(&err).0, Some(2));
        assert_eq!(position(&err).1, Some(3));
        match err {
            Error::Template { template, .. } => assert_eq!(template, "go"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn go_and_tera_caches_are_distinct() {
        let engine = TemplateEngine::new();
        let ctx = json!({"x": 1});
        // Valid in both syntaxes with different meanings: must not share a cache entry.
        let src = "{% raw %}";
        assert!(
            engine
                .render_with("t", src, TemplateSyntax::Tera, &ctx)
                .is_err()
        );
        assert_eq!(
            engine
                .render_with("t", src, TemplateSyntax::Go, &ctx)
                .unwrap(),
            "{% raw %}"
        );
    }
}
