//! Hermetic templates: Go `text/template` with the sprig library (the default), or tera.
//!
//! Controllers render manifests and names from templates written by users or copied from
//! upstream kcp tooling. [`TemplateEngine`] renders them so that the result depends only on
//! the template and the data given.
//!
//! # Go templates (the default)
//! Go templates run on [`gotmpl`], a port of Go's `text/template` (full syntax: pipelines,
//! `if`/`else if`, `range` with `else`/`break`/`continue`, `with`, `define`/`template`/
//! `block`, variables and `$`, `{{-`/`-}}` trimming, comments, the builtins `and or not eq
//! ne lt le gt ge len index print printf println html js urlquery call`). Functions are
//! sprig v3's hermetic set plus kcp's `sha3sum`, `sha3short`, `shortHash` and `toYaml`;
//! [`sprig`] lists every sprig function, supported or excluded and why. Data is JSON:
//! integers are `int64`, other numbers `float64`, objects `map[string]interface{}`, as
//! Kubernetes' unstructured decoder types them.
//!
//! - **Hermetic.** No function reads the clock, randomness, the environment, files or the
//!   network. Using an excluded sprig function (`now`, `env`, `randAlpha`, `uuidv4`,
//!   `genPrivateKey`, ...) fails when the template is parsed, with an error naming the
//!   function and why it is not allowed; an unknown function fails as in Go (`function
//!   "x" not defined`).
//! - **Escaping.** Action output is plain text by default ([`Escaping::Text`], Go's
//!   `text/template`, what api-syncagent uses): `{{ .ClusterPath | quote }}` prints
//!   `"root:a"`. The upstream init-agent renders with `html/template`, which prints
//!   `&#34;root:a&#34;`; [`Escaping::Html`] reproduces that byte for byte for whoever needs
//!   it, but manifests are YAML, not HTML, so text is the sane default.
//! - **Missing keys** print `<no value>` ([`MissingKeys::NoValue`], Go's default) or fail
//!   ([`MissingKeys::Error`]).
//! - **Bounded.** A [`Budget`] caps range iterations, output size, the size of strings
//!   and lists functions build, and the time of one execution; nesting (`template` recursion)
//!   is capped at 200 levels. tera templates get the same budget, planted in their source
//!   (loops count, `set` values are sized; list comprehensions and block `set` are refused).
//!   A runaway template stops with an error saying which budget it exhausted.
//! - **Errors** ([`Error::Template`]) carry the caller's template name and, for parse
//!   errors and most execution errors, the line and column (1-based, in characters).
//!
//! Differences from Go that remain (besides those of the sprig functions, listed in
//! [`sprig`]): `printf` verbs other than `%v`/`%s` applied to a list or dict (`%q` of a
//! list) print a `%!q(...)` marker instead of formatting each item; `%#v` prints like `%v`;
//! a pipeline ending in `|` (`{{ .x | }}`) is an error (Go 1.19 ignores the `|`); the
//! position of an execution error is that of the first use of the failing function, field
//! or template in the source, which is Go's position unless the name is used more than
//! once.
//!
//! # tera
//! tera 2 is the second syntax, chosen explicitly ([`TemplateSyntax::Tera`], or the
//! annotation [`SYNTAX_ANNOTATION`]`: tera` on an object holding a template); the syntax is
//! never guessed from the text. Autoescape is off, undefined variables are errors
//! (`{{ x | default(value="y") }}` and `{% if x is defined %}` still work), and each template
//! lives in its own tera instance, so `include`, `extends` and `import` cannot reach files or
//! other templates.
//!
//! # Caching
//! Parsed templates are cached by the SHA-256 of their options and source, so rendering the
//! same source again does not parse it again. The cache keeps at most
//! [`DEFAULT_CACHE_CAPACITY`] templates (see [`TemplateEngine::with_capacity`]) and evicts
//! the least recently used one when full.
//!
//! # tera filters
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

mod filters;
mod go;
pub(crate) mod go_value;
mod meter;
mod options;
pub mod sprig;
mod tera;
mod tera_budget;
pub(crate) mod yaml11;
mod yaml_emit;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use gotmpl::FuncMap;
use sha2::{Digest as _, Sha256};

pub use options::{
    Budget, Escaping, MissingKeys, SYNTAX_ANNOTATION, TemplateOptions, TemplateSyntax,
};

use crate::error::{Error, Result};
use go::GoTemplate;
use tera::TeraTemplate;

/// Number of parsed templates a [`TemplateEngine::new`] engine keeps.
pub const DEFAULT_CACHE_CAPACITY: usize = 512;

/// A parsed template, ready to render.
enum Compiled {
    Go(Box<GoTemplate>),
    Tera(Box<TeraTemplate>),
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
    /// A tera instance with the filters registered and no templates, cloned per template.
    tera_base: ::tera::Tera,
    /// The Go function map (sprig and kcp functions).
    funcs: FuncMap,
    budget: Budget,
    cache: Mutex<Cache>,
    capacity: usize,
    parses: AtomicUsize,
    hits: AtomicU64,
}

impl std::fmt::Debug for TemplateEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateEngine")
            .field("capacity", &self.capacity)
            .field("budget", &self.budget)
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
    /// An engine caching up to [`DEFAULT_CACHE_CAPACITY`] parsed templates, with the
    /// default [`Budget`].
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CACHE_CAPACITY)
    }

    /// An engine caching up to `capacity` parsed templates (at least 1); when full, the least
    /// recently used template is evicted.
    pub fn with_capacity(capacity: usize) -> Self {
        let budget = Budget::default();
        Self {
            tera_base: tera::base(),
            funcs: sprig::function_map(limits(&budget)),
            budget,
            cache: Mutex::new(Cache::default()),
            capacity: capacity.max(1),
            parses: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// The same engine with another execution budget (for Go templates). Templates parsed
    /// before keep their range budget; set the budget before rendering.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.funcs = sprig::function_map(limits(&budget));
        self.budget = budget;
        self.lock_cache().entries.clear();
        self
    }

    /// The execution budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Renders a Go template with the default options (text output, `<no value>` for
    /// missing keys). `name` is used in errors only; `context` must be a JSON object (its
    /// keys are the template's fields) or `null`.
    pub fn render(&self, name: &str, source: &str, context: &serde_json::Value) -> Result<String> {
        self.render_with(name, source, &TemplateOptions::default(), context)
    }

    /// Renders a template with the given options.
    pub fn render_with(
        &self,
        name: &str,
        source: &str,
        options: &TemplateOptions,
        context: &serde_json::Value,
    ) -> Result<String> {
        if !matches!(
            context,
            serde_json::Value::Object(_) | serde_json::Value::Null
        ) {
            return Err(Error::Template {
                template: name.to_owned(),
                line: None,
                column: None,
                message: "the context must be a JSON object".to_owned(),
            });
        }
        let compiled = self.compiled(name, source, options)?;
        match &*compiled {
            Compiled::Go(t) => t.render(name, &go_value::from_json(context), &self.budget),
            Compiled::Tera(t) => t.render(name, context, &self.budget),
        }
    }

    /// Parses a template without rendering it (and caches it), to report syntax errors,
    /// unknown and excluded functions early.
    pub fn check(&self, name: &str, source: &str, options: &TemplateOptions) -> Result<()> {
        self.compiled(name, source, options).map(|_| ())
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

    fn compiled(
        &self,
        name: &str,
        source: &str,
        options: &TemplateOptions,
    ) -> Result<Arc<Compiled>> {
        let mut hasher = Sha256::new();
        hasher.update(format!("{options:?}\0").as_bytes());
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
        let compiled = Arc::new(match options.syntax {
            TemplateSyntax::Go => Compiled::Go(Box::new(GoTemplate::parse(
                name,
                source,
                options,
                &self.funcs,
                &self.budget,
            )?)),
            TemplateSyntax::Tera => Compiled::Tera(Box::new(TeraTemplate::parse(
                &self.tera_base,
                name,
                source,
            )?)),
        });

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
}

fn limits(budget: &Budget) -> sprig::Limits {
    sprig::Limits {
        max_string_bytes: budget.max_output_bytes,
        max_list_items: budget.max_list_items,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn go(src: &str, ctx: serde_json::Value) -> Result<String> {
        TemplateEngine::new().render("t", src, &ctx)
    }

    fn tera(src: &str, ctx: serde_json::Value) -> Result<String> {
        TemplateEngine::new().render_with("t", src, &TemplateOptions::tera(), &ctx)
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
                std::thread::spawn(move || engine.render("t", "{{ .i }}", &json!({ "i": i })))
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap().unwrap(), i.to_string());
        }
    }

    #[test]
    fn go_is_the_default_syntax() {
        assert_eq!(
            go("{{ .a.b }}-{{ .c }}", json!({"a": {"b": "x"}, "c": 1})).unwrap(),
            "x-1"
        );
    }

    #[test]
    fn same_source_is_parsed_once_per_options() {
        let engine = TemplateEngine::new();
        for i in 0..3 {
            let out = engine
                .render("t", "x={{ .x }}", &json!({ "x": i }))
                .unwrap();
            assert_eq!(out, format!("x={i}"));
        }
        // A different name does not matter: the cache key is the content.
        engine
            .render("other", "x={{ .x }}", &json!({"x": 1}))
            .unwrap();
        assert_eq!(engine.parse_count(), 1);
        assert_eq!(engine.cache_hits(), 3);
        // Other options are another template.
        engine
            .render_with(
                "t",
                "x={{ .x }}",
                &TemplateOptions::go().with_escaping(Escaping::Html),
                &json!({"x": 1}),
            )
            .unwrap();
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
    }

    #[test]
    fn failed_parses_are_not_cached() {
        let engine = TemplateEngine::new();
        assert!(engine.render("t", "{{ .x", &json!({})).is_err());
        assert_eq!(engine.cached_templates(), 0);
    }

    #[test]
    fn excluded_function_is_refused_at_parse_time_by_name() {
        let engine = TemplateEngine::new();
        for (src, name) in [
            ("a\n{{ now }}", "now"),
            ("{{ env \"HOME\" }}", "env"),
            (
                "{{ if false }}{{ randAlphaNum 5 }}{{ end }}",
                "randAlphaNum",
            ),
            ("{{ uuidv4 }}", "uuidv4"),
            ("{{ genPrivateKey \"rsa\" }}", "genPrivateKey"),
            ("{{ getHostByName \"x\" }}", "getHostByName"),
        ] {
            let err = engine.check("t", src, &TemplateOptions::go()).unwrap_err();
            let (line, column, message) = position(&err);
            assert!(line.is_some() && column.is_some(), "{src}: {err}");
            assert!(
                message.contains(&format!("function {name:?} is not allowed")),
                "{src}: {message}"
            );
        }
        let err = engine
            .check("t", "x\n  {{ now }}", &TemplateOptions::go())
            .unwrap_err();
        assert_eq!(position(&err).0, Some(2));
        assert_eq!(position(&err).1, Some(6));
    }

    #[test]
    fn unknown_function_is_not_defined_at_parse_time() {
        let err = go("{{ if false }}{{ nope 1 }}{{ end }}", json!({})).unwrap_err();
        assert!(position(&err).2.contains("function \"nope\" not defined"));
    }

    #[test]
    fn missing_keys_print_no_value_or_fail_as_chosen() {
        assert_eq!(go("{{ .missing }}", json!({})).unwrap(), "<no value>");
        let err = TemplateEngine::new()
            .render_with(
                "t",
                "a\nb {{ .Missing }}",
                &TemplateOptions::go().with_missing_keys(MissingKeys::Error),
                &json!({}),
            )
            .unwrap_err();
        let (line, column, message) = position(&err);
        assert_eq!((line, column), (Some(2), Some(6)));
        assert!(message.contains("Missing"), "{message}");
    }

    #[test]
    fn function_errors_name_the_function_and_its_position() {
        let err = go("ok\n{{ fail \"stop here\" }}", json!({})).unwrap_err();
        let (line, column, message) = position(&err);
        assert_eq!((line, column), (Some(2), Some(4)));
        assert_eq!(message, "error calling fail: stop here");
    }

    #[test]
    fn text_output_is_not_escaped_and_html_output_is() {
        let ctx = json!({"ClusterPath": "root:a"});
        assert_eq!(
            go("{{ .ClusterPath | quote }}", ctx.clone()).unwrap(),
            "\"root:a\""
        );
        let html = TemplateEngine::new()
            .render_with(
                "t",
                "{{ .ClusterPath | quote }}",
                &TemplateOptions::go().with_escaping(Escaping::Html),
                &ctx,
            )
            .unwrap();
        assert_eq!(html, "&#34;root:a&#34;");
    }

    #[test]
    fn runaway_range_stops_with_a_budget_error() {
        let err = go("{{ range until 100000000 }}x{{ end }}", json!({})).unwrap_err();
        assert!(
            position(&err).2.contains("execution budget exhausted"),
            "{err}"
        );
        let err = go(
            "{{ range $i := until 1000 }}{{ range until 1000 }}{{ range until 10 }}{{ end }}{{ end }}{{ end }}",
            json!({}),
        )
        .unwrap_err();
        assert!(position(&err).2.contains("range iterations"), "{err}");
    }

    #[test]
    fn unbounded_template_recursion_stops_with_a_budget_error() {
        let err = go(
            "{{ define \"loop\" }}{{ template \"loop\" . }}{{ end }}{{ template \"loop\" . }}",
            json!({}),
        )
        .unwrap_err();
        assert!(position(&err).2.contains("nested too deeply"), "{err}");
    }

    #[test]
    fn output_is_bounded() {
        let engine = TemplateEngine::new().with_budget(Budget {
            max_output_bytes: 1000,
            ..Budget::default()
        });
        let err = engine
            .render("t", "{{ range until 500 }}xyz{{ end }}", &json!({}))
            .unwrap_err();
        assert!(position(&err).2.contains("larger than 1000 bytes"), "{err}");
        let err = engine
            .render("t", "{{ repeat 2000 \"x\" }}", &json!({}))
            .unwrap_err();
        assert!(
            position(&err).2.contains("execution budget exhausted"),
            "{err}"
        );
    }

    #[test]
    fn tera_renders_with_filters_and_strict_undefined() {
        assert_eq!(
            tera("{{ name | upper }}", json!({"name": "a"})).unwrap(),
            "A"
        );
        let err = tera("a: b\nc: {{ missing }}", json!({})).unwrap_err();
        let (line, column, message) = position(&err);
        assert_eq!((line, column), (Some(2), Some(7)));
        assert!(message.contains("`missing`"), "{message}");
    }

    #[test]
    fn tera_cannot_reach_files_or_other_templates() {
        let engine = TemplateEngine::new();
        engine
            .render_with("other", "secret", &TemplateOptions::tera(), &json!({}))
            .unwrap();
        for src in [
            "{% include \"/etc/passwd\" %}",
            "{% include \"other\" %}",
            "{% extends \"/etc/passwd\" %}",
            "{% import \"/etc/passwd\" as m %}",
            "{{ get_env(name=\"HOME\") }}",
            "{{ now() }}",
        ] {
            let err = engine
                .render_with("t", src, &TemplateOptions::tera(), &json!({}))
                .unwrap_err();
            assert!(matches!(err, Error::Template { .. }), "{src}: {err:?}");
        }
    }

    #[test]
    fn go_and_tera_with_the_same_source_are_distinct_templates() {
        let engine = TemplateEngine::new();
        let src = "{% raw %}";
        assert!(
            engine
                .render_with("t", src, &TemplateOptions::tera(), &json!({}))
                .is_err()
        );
        assert_eq!(engine.render("t", src, &json!({})).unwrap(), "{% raw %}");
    }

    #[test]
    fn context_must_be_an_object_or_null() {
        assert_eq!(go("plain", serde_json::Value::Null).unwrap(), "plain");
        let err = go("plain", json!([1])).unwrap_err();
        assert!(position(&err).2.contains("JSON object"));
    }

    #[test]
    fn syntax_annotation_chooses_tera_explicitly() {
        assert_eq!(
            TemplateSyntax::from_annotation("t", None).unwrap(),
            TemplateSyntax::Go
        );
        assert_eq!(
            TemplateSyntax::from_annotation("t", Some("tera")).unwrap(),
            TemplateSyntax::Tera
        );
        assert!(TemplateSyntax::from_annotation("t", Some("jinja")).is_err());
    }
}
