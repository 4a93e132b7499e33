//! sprig's path functions, with Go's `path` semantics (`osBase` and friends are the same
//! on Linux, where `filepath` also uses `/`).

use gotmpl::Value;

use super::args::{Outcome, str_arg, want};
use crate::template::go_value::string;

/// Go's `path.Clean`: lexical simplification of `.`, `..` and repeated slashes.
pub(crate) fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

fn base_of(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_owned();
    }
    match trimmed.rfind('/') {
        Some(i) => trimmed[i + 1..].to_owned(),
        None => trimmed.to_owned(),
    }
}

fn dir_of(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    clean(dir)
}

fn ext_of(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_owned();
        }
    }
    String::new()
}

pub(super) fn base(args: &[Value]) -> Outcome {
    want("base", args, 1)?;
    Ok(string(base_of(str_arg(&args[0])?)))
}

pub(super) fn dir(args: &[Value]) -> Outcome {
    want("dir", args, 1)?;
    Ok(string(dir_of(str_arg(&args[0])?)))
}

pub(super) fn clean_fn(args: &[Value]) -> Outcome {
    want("clean", args, 1)?;
    Ok(string(clean(str_arg(&args[0])?)))
}

pub(super) fn ext(args: &[Value]) -> Outcome {
    want("ext", args, 1)?;
    Ok(string(ext_of(str_arg(&args[0])?)))
}

pub(super) fn is_abs(args: &[Value]) -> Outcome {
    want("isAbs", args, 1)?;
    Ok(Value::Bool(str_arg(&args[0])?.starts_with('/')))
}
