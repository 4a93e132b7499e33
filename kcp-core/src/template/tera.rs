//! tera templates: the second syntax, chosen explicitly.
//!
//! Each template is parsed into its own tera instance with autoescape off, the sprig-named
//! filters of [`super::filters`], and no access to files (`include`, `extends` and
//! `import` cannot reach any other template). Undefined values are errors.

use crate::error::{Error, Result};

/// Name every template is registered under in its private tera instance.
const TERA_NAME: &str = "template";

/// A parsed tera template.
pub(crate) struct TeraTemplate {
    tera: tera::Tera,
}

/// A tera instance with the filters registered and no templates, cloned for each template.
pub(crate) fn base() -> tera::Tera {
    let mut base = tera::Tera::new();
    base.autoescape_on(Vec::<&'static str>::new());
    super::filters::register(&mut base);
    base
}

impl TeraTemplate {
    /// Parses `source` into a copy of `base`; `name` is used in errors only.
    pub(crate) fn parse(base: &tera::Tera, name: &str, source: &str) -> Result<Self> {
        let mut tera = base.clone();
        tera.add_raw_template(TERA_NAME, source)
            .map_err(|e| convert_error(name, &e))?;
        Ok(Self { tera })
    }

    /// Renders with `context` (a JSON object, or null for no variables).
    pub(crate) fn render(&self, name: &str, context: &serde_json::Value) -> Result<String> {
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
        self.tera
            .render(TERA_NAME, &ctx)
            .map_err(|e| convert_error(name, &e))
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

/// Converts a tera error into [`Error::Template`] with its position.
fn convert_error(name: &str, err: &tera::Error) -> Error {
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
