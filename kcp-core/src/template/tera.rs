//! tera templates: the second syntax, chosen explicitly.
//!
//! Each template is parsed into its own tera instance with autoescape off, the sprig-named
//! filters of [`super::filters`], and no access to files (`include`, `extends` and
//! `import` cannot reach any other template). Undefined values are errors. Each execution runs
//! within the engine's [`Budget`] (see [`super::tera_budget`]).

use std::io::Write;

use super::meter;
use super::options::Budget;
use super::tera_budget::{self, Instrumented};
use crate::error::{Error, Result};

/// Name every template is registered under in its private tera instance.
const TERA_NAME: &str = "template";

/// A parsed tera template.
pub(crate) struct TeraTemplate {
    tera: tera::Tera,
    instrumented: Instrumented,
}

/// A tera instance with the filters registered and no templates, cloned for each template.
pub(crate) fn base() -> tera::Tera {
    let mut base = tera::Tera::new();
    base.autoescape_on(Vec::<&'static str>::new());
    super::filters::register(&mut base);
    tera_budget::register(&mut base);
    base
}

impl TeraTemplate {
    /// Parses `source` into a copy of `base`; `name` is used in errors only.
    pub(crate) fn parse(base: &tera::Tera, name: &str, source: &str) -> Result<Self> {
        let instrumented = tera_budget::instrument(source).map_err(|(message, line, column)| {
            template_error(name, Some((line, column)), message)
        })?;
        let mut tera = base.clone();
        tera.add_raw_template(TERA_NAME, &instrumented.source)
            .map_err(|e| convert_error(name, &e, &instrumented))?;
        Ok(Self { tera, instrumented })
    }

    /// Renders with `context` (a JSON object, or null for no variables) within `budget`.
    pub(crate) fn render(
        &self,
        name: &str,
        context: &serde_json::Value,
        budget: &Budget,
    ) -> Result<String> {
        let ctx = match context {
            serde_json::Value::Null => tera::Context::new(),
            serde_json::Value::Object(_) => tera::Context::from_serialize(context)
                .map_err(|e| template_error(name, None, e.to_string()))?,
            _ => {
                return Err(template_error(
                    name,
                    None,
                    "the context must be a JSON object".to_owned(),
                ));
            }
        };
        let mut out = BoundedOutput {
            bytes: Vec::new(),
            limit: budget.max_output_bytes,
            refusal: None,
        };
        let rendered = meter::metered(budget, || self.tera.render_to(TERA_NAME, &ctx, &mut out));
        if let Some(refusal) = out.refusal {
            return Err(template_error(name, None, refusal));
        }
        rendered.map_err(|e| convert_error(name, &e, &self.instrumented))?;
        String::from_utf8(out.bytes)
            .map_err(|e| template_error(name, None, format!("the output is not UTF-8: {e}")))
    }
}

/// The output of one execution, refusing to grow past the budget or its time.
struct BoundedOutput {
    bytes: Vec<u8>,
    limit: usize,
    refusal: Option<String>,
}

impl Write for BoundedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let over_size = self.bytes.len() + buf.len() > self.limit;
        let refusal = if over_size {
            Some(format!(
                "execution budget exhausted: the output is larger than {} bytes",
                self.limit
            ))
        } else {
            meter::check_time().err()
        };
        if let Some(refusal) = refusal {
            self.refusal = Some(refusal.clone());
            return Err(std::io::Error::other(refusal));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn template_error(name: &str, position: Option<(usize, usize)>, message: String) -> Error {
    Error::Template {
        template: name.to_owned(),
        line: position.map(|p| p.0),
        column: position.map(|p| p.1),
        message,
    }
}

/// Converts a tera error into [`Error::Template`] with its position in the original source.
fn convert_error(name: &str, err: &tera::Error, instrumented: &Instrumented) -> Error {
    let (message, position) = match err.kind() {
        tera::ErrorKind::SyntaxError(report) | tera::ErrorKind::RenderingError(report) => {
            let span = report.span();
            (
                report.message().to_owned(),
                Some((span.start_line, span.start_col + 1)),
            )
        }
        tera::ErrorKind::Msg(text) => match parse_report(text) {
            Some((message, line, column)) => (message, Some((line, column))),
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
    let position =
        position.map(|(line, column)| (line, instrumented.original_column(line, column)));
    template_error(name, position, message)
}

/// Extracts message, line and column from a tera report (`error: msg\n --> name:line:col`),
/// which tera produces as plain text for unknown filters and functions.
fn parse_report(text: &str) -> Option<(String, usize, usize)> {
    let mut lines = text.lines();
    let message = lines.next()?.strip_prefix("error: ")?.to_owned();
    let locus = lines.next()?.trim_start().strip_prefix("--> ")?;
    let mut parts = locus.rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((message, line, column))
}
