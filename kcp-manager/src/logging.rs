//! Logging set-up: `tracing` to stderr as JSON lines or console text, `--log-debug` for the
//! debug level, `RUST_LOG` to override.

/// Log output format (`--log-format`, case-insensitive as upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable lines.
    Console,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(LogFormat::Json),
            "console" => Ok(LogFormat::Console),
            other => Err(format!("unknown log format {other:?} (json or console)")),
        }
    }
}

/// Installs the global tracing subscriber (stderr). `RUST_LOG` overrides the level; a
/// subscriber installed earlier (tests) is left in place.
pub fn init_logging(format: LogFormat, debug: bool) {
    init_logging_at(format, if debug { "debug" } else { "info" });
}

/// [`init_logging`] at the default level `default` (`debug`, `info`, `error`, ...).
pub fn init_logging_at(format: LogFormat, default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Console => builder.try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_formats_parse_case_insensitively() {
        assert_eq!("Console".parse::<LogFormat>(), Ok(LogFormat::Console));
        assert_eq!("JSON".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert!("xml".parse::<LogFormat>().is_err());
    }
}
