//! Serves a simulator until Ctrl-C and writes a kubeconfig for kubectl.
//!
//! `cargo run -p kcp-sim --example serve -- [--kcp] [kubeconfig-path]`

use kcp_sim::{Config, Server};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kcp = args.iter().any(|a| a == "--kcp");
    let path = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| "kcp-sim.kubeconfig".to_string());
    let config = if kcp {
        Config::kcp()
    } else {
        Config::default()
    };
    let sim = Server::start(config).await?;
    sim.write_kubeconfig(std::path::Path::new(&path), &[])?;
    println!("serving on {}; kubeconfig written to {path}", sim.url());
    println!("try: kubectl --kubeconfig {path} get namespaces");
    tokio::signal::ctrl_c().await?;
    sim.shutdown().await;
    Ok(())
}
