//! Runs the example controller of [`kcp_examples::config_generator`].
//!
//! ```text
//! cargo run -p kcp-examples --bin config-generator -- crd | kubectl apply -f -
//! cargo run -p kcp-examples --bin config-generator -- run <namespace>
//! ```
//!
//! It serves no metrics endpoint of its own: kcp-manager does that for the project's
//! binaries; here the controller-runtime series are printed when it stops.

use std::process::ExitCode;

use kcp_core::runtime::ControllerMetrics;
use kcp_core::runtime::metrics::encode;
use kcp_examples::config_generator::{ConfigMapGenerator, run};
use kube::CustomResourceExt as _;
use prometheus_client::registry::Registry;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt().with_env_filter("info").init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["crd"] => match serde_saphyr::to_string(&ConfigMapGenerator::crd()) {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("encoding the CRD: {e}");
                ExitCode::FAILURE
            }
        },
        ["run", namespace] => {
            let client = match kube::Client::try_default().await {
                Ok(client) => client,
                Err(e) => {
                    eprintln!("connecting with the current kubeconfig: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let mut registry = Registry::default();
            let metrics = ControllerMetrics::register(&mut registry);
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            run(client, namespace.to_string(), metrics, stop).await;
            print!("{}", encode(&registry));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: config-generator crd | config-generator run <namespace>");
            ExitCode::from(2)
        }
    }
}
