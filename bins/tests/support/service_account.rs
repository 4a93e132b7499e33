//! Running a binary as the ServiceAccount its `deploy/` directory installs: the RBAC of that
//! directory applied as the admin, and a kubeconfig with a token from the TokenRequest API.

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kcp_core::kube::api::{Api, PostParams};
use kcp_core::{ObjectClient, PatchOptions, parse_manifests};

/// `deploy/<dir>/<file>` of the checkout.
pub fn deploy_file(dir: &str, file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(dir)
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Server-side applies a manifest as the admin (field manager `real-rbac-test`, forced).
pub async fn apply(admin: &dyn ObjectClient, name: &str, yaml: &str) {
    let options = PatchOptions::apply("real-rbac-test");
    for object in parse_manifests(name, yaml).unwrap() {
        admin
            .apply(&object, &options)
            .await
            .unwrap_or_else(|e| panic!("applying {name}: {e}"));
    }
}

/// A kubeconfig at `path` for the ServiceAccount `namespace/name`, with an hour's token from
/// the TokenRequest API.
pub async fn kubeconfig(
    admin: &kcp_testbed::Endpoint,
    namespace: &str,
    name: &str,
    path: &Path,
) -> PathBuf {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.client().unwrap(), namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let token = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let endpoint = admin.with_token(&token);
    let document = kcp_testbed::kubeconfig::kubeconfig(&[("deployed", &endpoint)]);
    std::fs::write(path, document.to_string()).unwrap();
    path.to_path_buf()
}
