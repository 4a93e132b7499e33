//! Reading a Machine's bootstrap data (an Ignition v3 config in the data Secret's `value` key)
//! into the settings an Agent needs: the machine config pool and the token and headers for the
//! ignition request.
//!
//! The config must have exactly one `ignition.config.merge[]` entry. The pool is the text after
//! the last `/` of its `source`; an `Authorization` header must be `Bearer <token>`; every other
//! header is passed on. Unlike upstream, which fails the reconcile silently, a bad config is an
//! [`Error::InvalidObject`] naming the Secret and the field, surfaced on the AgentMachine as
//! condition `BootstrapDataReady` False/`BootstrapDataInvalid`.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::{Error, Result};

/// What the bootstrap data says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BootstrapData {
    /// The machine config pool (last URL segment of the merge source).
    pub machine_config_pool: String,
    /// The bearer token, when the config has an `Authorization` header.
    pub token: Option<String>,
    /// The other HTTP headers.
    pub headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Config {
    ignition: Ignition,
}

#[derive(Deserialize)]
struct Ignition {
    #[serde(default)]
    config: IgnitionConfig,
}

#[derive(Deserialize, Default)]
struct IgnitionConfig {
    #[serde(default)]
    merge: Vec<Resource>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resource {
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    http_headers: Vec<Header>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

/// Parses the bootstrap data of Secret `secret` (its `data.value`).
pub fn parse(secret: &str, value: &[u8]) -> Result<BootstrapData> {
    let invalid =
        |field: &str, reason: String| Error::invalid(format!("Secret {secret}"), field, reason);
    let config: Config = serde_json::from_slice(value)
        .map_err(|e| invalid("data.value", format!("is not an Ignition config: {e}")))?;
    let [merge] = config.ignition.config.merge.as_slice() else {
        return Err(invalid(
            "data.value: ignition.config.merge",
            format!(
                "must have exactly one entry, has {}",
                config.ignition.config.merge.len()
            ),
        ));
    };
    let source = merge.source.as_deref().unwrap_or_default();
    let machine_config_pool = source.rsplit_once('/').map_or("", |(_, p)| p).to_owned();
    let mut data = BootstrapData {
        machine_config_pool,
        ..BootstrapData::default()
    };
    for header in &merge.http_headers {
        let value = header.value.clone().unwrap_or_default();
        if header.name.eq_ignore_ascii_case("Authorization") {
            let token = value.strip_prefix("Bearer ").ok_or_else(|| {
                invalid(
                    "data.value: ignition.config.merge[0].httpHeaders",
                    "the Authorization header must be \"Bearer <token>\"".into(),
                )
            })?;
            data.token = Some(token.to_owned());
        } else {
            data.headers.insert(header.name.clone(), value);
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYPERSHIFT: &str = r#"{"ignition":{"version":"3.2.0","config":{"merge":[{
        "source":"https://ignition.example.com/ignition",
        "httpHeaders":[{"name":"Authorization","value":"Bearer s3cr3t"},{"name":"NodePool","value":"ns/pool"}]}]}}}"#;

    #[test]
    fn a_hypershift_config_gives_pool_token_and_headers() {
        let data = parse("ns/user-data", HYPERSHIFT.as_bytes()).unwrap();
        assert_eq!(data.machine_config_pool, "ignition");
        assert_eq!(data.token.as_deref(), Some("s3cr3t"));
        assert_eq!(data.headers["NodePool"], "ns/pool");
    }

    #[test]
    fn two_merge_entries_are_refused_naming_the_field() {
        let config = r#"{"ignition":{"config":{"merge":[{"source":"a"},{"source":"b"}]}}}"#;
        let err = parse("ns/d", config.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            err,
            "Secret ns/d: field data.value: ignition.config.merge: must have exactly one entry, has 2"
        );
    }

    #[test]
    fn an_authorization_header_without_bearer_is_refused() {
        let config = r#"{"ignition":{"config":{"merge":[{"source":"a/b",
            "httpHeaders":[{"name":"Authorization","value":"Basic x"}]}]}}}"#;
        let err = parse("ns/d", config.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("Bearer"), "{err}");
    }

    #[test]
    fn text_that_is_not_json_is_refused() {
        let err = parse("ns/d", b"#cloud-config").unwrap_err().to_string();
        assert!(
            err.starts_with("Secret ns/d: field data.value: is not an Ignition config"),
            "{err}"
        );
    }
}
