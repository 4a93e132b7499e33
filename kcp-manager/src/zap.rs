//! controller-runtime's logging flags (`--zap-*`), as upstream's Deployments and Helm charts pass
//! them, mapped onto our logging.
//!
//! | flag | here |
//! |---|---|
//! | `--zap-encoder=json\|console` | the log format (over `--log-format`) |
//! | `--zap-log-level=debug\|info\|error\|panic\|<n>` | the level (`n` >= 1, zap's verbosity, is debug) |
//! | `--zap-devel` | console format and debug level unless the two flags above say otherwise |
//! | `--zap-time-encoding` | accepted; timestamps are RFC 3339 (a warning for epoch, millis, nano) |
//! | `--zap-stacktrace-level` | accepted; Rust logs carry no stack traces (a warning) |
//!
//! A value zap would refuse is refused here too, naming the flag.

use crate::error::Error;
use crate::flags::CommonFlags;
use crate::logging::LogFormat;

/// What the logging flags together ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// The output format.
    pub format: LogFormat,
    /// The default level (`RUST_LOG` still overrides): `debug`, `info` or `error`.
    pub level: &'static str,
    /// Flags accepted without effect, to log once logging runs.
    pub warnings: Vec<String>,
}

fn refused(flag: &str, value: &str, allowed: &str) -> Error {
    Error::Flag {
        flag: flag.into(),
        reason: format!("{value:?} is not one of {allowed}"),
    }
}

/// The settings `flags` ask for.
pub fn log_settings(flags: &CommonFlags) -> Result<LogSettings, Error> {
    let devel = flags.zap_devel.unwrap_or(false);
    let format = match flags.zap_encoder.as_deref() {
        Some(encoder) => encoder
            .parse()
            .map_err(|_| refused("zap-encoder", encoder, "json, console"))?,
        None if devel => LogFormat::Console,
        None => flags.log_format,
    };
    let level = match flags.zap_log_level.as_deref() {
        Some(level) => zap_level(level)?,
        None if devel || flags.log_debug => "debug",
        None => "info",
    };
    let level = if flags.log_debug { "debug" } else { level };
    let mut warnings = Vec::new();
    if let Some(encoding) = flags.zap_time_encoding.as_deref() {
        match encoding {
            "iso8601" | "rfc3339" | "rfc3339nano" => {}
            "epoch" | "millis" | "nano" => warnings.push(format!(
                "--zap-time-encoding={encoding}: timestamps are written as RFC 3339"
            )),
            other => {
                return Err(refused(
                    "zap-time-encoding",
                    other,
                    "epoch, millis, nano, iso8601, rfc3339, rfc3339nano",
                ));
            }
        }
    }
    if let Some(level) = flags.zap_stacktrace_level.as_deref() {
        match level {
            "info" | "error" | "panic" => warnings.push(format!(
                "--zap-stacktrace-level={level}: Rust logs carry no stack traces"
            )),
            other => return Err(refused("zap-stacktrace-level", other, "info, error, panic")),
        }
    }
    Ok(LogSettings {
        format,
        level,
        warnings,
    })
}

fn zap_level(level: &str) -> Result<&'static str, Error> {
    match level {
        "debug" => Ok("debug"),
        "info" => Ok("info"),
        "error" | "dpanic" | "panic" | "fatal" => Ok("error"),
        number => match number.parse::<i64>() {
            Ok(n) if n >= 1 => Ok("debug"),
            Ok(0) => Ok("info"),
            _ => Err(refused(
                "zap-log-level",
                number,
                "debug, info, error, panic or an integer > 0",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::flags::{Defaults, parse_flags_from};

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        common: CommonFlags,
    }

    fn settings(args: &[&str]) -> Result<LogSettings, Error> {
        let mut all = vec!["tool"];
        all.extend_from_slice(args);
        let flags = parse_flags_from::<Flags, _, _>(&Defaults::new("tool"), all).unwrap();
        log_settings(&flags.common)
    }

    #[test]
    fn without_zap_flags_our_own_decide() {
        let s = settings(&["--log-format=console", "--log-debug"]).unwrap();
        assert_eq!((s.format, s.level), (LogFormat::Console, "debug"));
        assert_eq!(settings(&[]).unwrap().level, "info");
    }

    #[test]
    fn kubebuilders_defaults_map_onto_ours() {
        let s = settings(&[
            "--zap-log-level=info",
            "--zap-encoder=json",
            "--zap-time-encoding=rfc3339",
        ])
        .unwrap();
        assert_eq!((s.format, s.level), (LogFormat::Json, "info"));
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn zap_devel_means_console_and_debug_unless_told_otherwise() {
        let s = settings(&["--zap-devel"]).unwrap();
        assert_eq!((s.format, s.level), (LogFormat::Console, "debug"));
        let s = settings(&[
            "--zap-devel=true",
            "--zap-encoder=json",
            "--zap-log-level=error",
        ])
        .unwrap();
        assert_eq!((s.format, s.level), (LogFormat::Json, "error"));
    }

    #[test]
    fn a_numeric_zap_level_is_verbosity() {
        assert_eq!(settings(&["--zap-log-level=4"]).unwrap().level, "debug");
        assert!(settings(&["--zap-log-level=-1"]).is_err());
    }

    #[test]
    fn flags_without_meaning_here_warn_and_bad_values_are_refused() {
        let s = settings(&["--zap-stacktrace-level=error", "--zap-time-encoding=epoch"]).unwrap();
        assert_eq!(s.warnings.len(), 2);
        let err = settings(&["--zap-encoder=xml"]).unwrap_err().to_string();
        assert!(
            err.contains("--zap-encoder") && err.contains("xml"),
            "{err}"
        );
    }
}
