//! capi-agent's bootstrap data: any bytes as the `value` of a Machine's bootstrap data Secret
//! (an Ignition v3 config), parsed into the machine config pool, token and headers as a
//! reconcile does; and any text as the ignition endpoint URL written to an
//! AgentClusterInstall. Nothing may panic; a refusal names the Secret and the field.
#![no_main]

use capi_agent::bootstrap::parse;
use capi_agent::render::normalize_ignition_url;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse("ns/user-data", data) {
        Ok(parsed) => {
            assert!(!parsed.machine_config_pool.contains('/'));
            assert!(
                !parsed
                    .headers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("Authorization"))
            );
        }
        Err(err) => {
            let text = err.to_string();
            assert!(
                text.starts_with("Secret ns/user-data: field data.value"),
                "{text}"
            );
        }
    }
    if let Ok(url) = std::str::from_utf8(data) {
        let normalized = normalize_ignition_url(url);
        assert_eq!(normalize_ignition_url(&normalized), normalized, "{url:?}");
    }
});
