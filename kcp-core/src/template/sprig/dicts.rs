//! sprig's dict functions: building, reading, picking and merging `map[string]interface{}`.
//!
//! Template values are immutable, so `set`, `unset`, `merge` and `mergeOverwrite` return
//! the changed dict without changing the one passed in (in Go they change it in place):
//! write `{{ $d = set $d "k" "v" }}` rather than `{{ $_ := set $d "k" "v" }}`.

use std::sync::Arc;

use gotmpl::Value;

use super::args::{Dict, Outcome, dict_arg, str_arg, str_args, strval, want, want_at_least};
use crate::template::go_value::{is_empty, list, map, string};

/// `dict k1 v1 k2 v2 ...`: keys are printed with `%v`; a key without a value maps to `""`.
pub(super) fn dict(args: &[Value]) -> Outcome {
    let mut out = Dict::new();
    for pair in args.chunks(2) {
        let key: Arc<str> = Arc::from(strval(&pair[0]));
        let value = pair.get(1).cloned().unwrap_or_else(|| string(""));
        out.insert(key, value);
    }
    Ok(map(out))
}

/// `get dict key`: the value, or `""` when missing.
pub(super) fn get(args: &[Value]) -> Outcome {
    want("get", args, 2)?;
    let d = dict_arg(&args[0])?;
    let key = str_arg(&args[1])?;
    Ok(d.and_then(|d| d.get(key))
        .cloned()
        .unwrap_or_else(|| string("")))
}

/// `set dict key value`: the dict with `key` set.
pub(super) fn set(args: &[Value]) -> Outcome {
    want("set", args, 3)?;
    let Some(d) = dict_arg(&args[0])? else {
        return Err("assignment to entry in nil map".to_owned());
    };
    let key = str_arg(&args[1])?;
    let mut out = d.clone();
    out.insert(Arc::from(key), args[2].clone());
    Ok(map(out))
}

/// `unset dict key`: the dict without `key`.
pub(super) fn unset(args: &[Value]) -> Outcome {
    want("unset", args, 2)?;
    let d = dict_arg(&args[0])?;
    let key = str_arg(&args[1])?;
    let mut out = d.cloned().unwrap_or_default();
    out.remove(key);
    Ok(map(out))
}

pub(super) fn has_key(args: &[Value]) -> Outcome {
    want("hasKey", args, 2)?;
    let d = dict_arg(&args[0])?;
    let key = str_arg(&args[1])?;
    Ok(Value::Bool(d.is_some_and(|d| d.contains_key(key))))
}

/// `pluck key dict ...`: the value of `key` in every dict that has it.
pub(super) fn pluck(args: &[Value]) -> Outcome {
    want_at_least("pluck", args, 1)?;
    let key = str_arg(&args[0])?;
    let mut out = Vec::new();
    for arg in &args[1..] {
        if let Some(v) = dict_arg(arg)?.and_then(|d| d.get(key)) {
            out.push(v.clone());
        }
    }
    Ok(list(out))
}

/// `keys dict ...`: every key of every dict. Go returns them in random map order; here
/// each dict's keys come sorted.
pub(super) fn keys(args: &[Value]) -> Outcome {
    let mut out: Vec<Arc<str>> = Vec::new();
    for arg in args {
        if let Some(d) = dict_arg(arg)? {
            out.extend(d.keys().cloned());
        }
    }
    Ok(list(out.into_iter().map(Value::String).collect()))
}

/// `values dict`: the values (sorted by key here; random order in Go).
pub(super) fn values(args: &[Value]) -> Outcome {
    want("values", args, 1)?;
    let d = dict_arg(&args[0])?;
    Ok(list(
        d.map(|d| d.values().cloned().collect()).unwrap_or_default(),
    ))
}

/// `pick dict k ...`: only the listed keys.
pub(super) fn pick(args: &[Value]) -> Outcome {
    want_at_least("pick", args, 1)?;
    let d = dict_arg(&args[0])?;
    let wanted = str_args(&args[1..])?;
    let mut out = Dict::new();
    if let Some(d) = d {
        for k in wanted {
            if let Some((key, v)) = d.get_key_value(k) {
                out.insert(key.clone(), v.clone());
            }
        }
    }
    Ok(map(out))
}

/// `omit dict k ...`: all but the listed keys.
pub(super) fn omit(args: &[Value]) -> Outcome {
    want_at_least("omit", args, 1)?;
    let d = dict_arg(&args[0])?;
    let dropped = str_args(&args[1..])?;
    let out: Dict = d
        .map(|d| {
            d.iter()
                .filter(|(k, _)| !dropped.contains(&k.as_ref()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(map(out))
}

/// mergo's deep merge of `src` into `dst` for string-keyed maps: nested dicts merge, other
/// values are taken from `src` when `dst` lacks them or holds an empty value (or always,
/// with `overwrite`); nil in `src` only overwrites with `overwrite`; a non-empty non-dict in
/// `dst` is never replaced by a dict.
fn merge_into(dst: &mut Dict, src: &Dict, overwrite: bool) {
    for (key, src_value) in src {
        let dst_value = dst.get(key);
        match src_value {
            Value::Nil => {
                if overwrite {
                    dst.insert(key.clone(), Value::Nil);
                }
            }
            Value::Map(src_map) => match dst_value {
                Some(Value::Map(dst_map)) => {
                    let mut merged = (**dst_map).clone();
                    merge_into(&mut merged, src_map, overwrite);
                    let merged_value = map(merged);
                    if is_empty(&merged_value) {
                        dst.insert(key.clone(), src_value.clone());
                    } else {
                        dst.insert(key.clone(), merged_value);
                    }
                }
                Some(existing) if !is_empty(existing) => {}
                _ => {
                    dst.insert(key.clone(), src_value.clone());
                }
            },
            Value::List(_) => {
                if overwrite || dst_value.is_none_or(is_empty) {
                    dst.insert(key.clone(), src_value.clone());
                }
            }
            _ => {
                if overwrite || dst_value.is_none_or(is_empty) {
                    dst.insert(key.clone(), src_value.clone());
                }
            }
        }
    }
}

fn merge_all(name: &str, args: &[Value], overwrite: bool) -> Outcome {
    want_at_least(name, args, 1)?;
    let mut out = dict_arg(&args[0])?.cloned().unwrap_or_default();
    for arg in &args[1..] {
        if let Some(src) = dict_arg(arg)? {
            merge_into(&mut out, src, overwrite);
        }
    }
    Ok(map(out))
}

/// `merge dst src ...`: `dst` with the missing or empty values filled from the sources.
pub(super) fn merge(args: &[Value]) -> Outcome {
    merge_all("merge", args, false)
}

/// `mergeOverwrite dst src ...`: `dst` with the sources' values taking precedence.
pub(super) fn merge_overwrite(args: &[Value]) -> Outcome {
    merge_all("mergeOverwrite", args, true)
}

/// `deepCopy v`: values are immutable, so the copy is the value itself.
pub(super) fn deep_copy(args: &[Value]) -> Outcome {
    want("deepCopy", args, 1)?;
    Ok(args[0].clone())
}

/// `dig k1 k2 ... default dict`: the value at the key path, or `default` when a key is
/// missing.
pub(super) fn dig(args: &[Value]) -> Outcome {
    if args.len() < 3 {
        return Err("dig needs at least three arguments".to_owned());
    }
    let (path, rest) = args.split_at(args.len() - 2);
    let default = &rest[0];
    let Value::Map(mut current) = rest[1].clone() else {
        return Err(format!(
            "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
            crate::template::go_value::type_name(&rest[1])
        ));
    };
    let keys: Vec<&str> = path
        .iter()
        .map(|k| {
            str_arg(k).map_err(|_| {
                format!(
                    "interface conversion: interface {{}} is {}, not string",
                    crate::template::go_value::type_name(k)
                )
            })
        })
        .collect::<Result<_, _>>()?;
    for (i, key) in keys.iter().enumerate() {
        let Some(step) = current.get(*key).cloned() else {
            return Ok(default.clone());
        };
        if i + 1 == keys.len() {
            return Ok(step);
        }
        match step {
            Value::Map(next) => current = next,
            other => {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    crate::template::go_value::type_name(&other)
                ));
            }
        }
    }
    Ok(default.clone())
}
