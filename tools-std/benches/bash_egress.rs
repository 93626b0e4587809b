//! What an egress adds to each `bash` call: `true` run through the tool in the default sandbox,
//! with the network off and with a proxy started for the command (a sandbox built for its port),
//! calls interleaved. Run with `cargo bench -p tools-std --bench bash_egress`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_runtime::{Registry, SessionState, ToolContext, context::Dependencies};
use tools_std::Workspace;
use tools_std::tool_egress::{Egress, EgressPolicy};

const RUNS: usize = 200;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let root = std::env::temp_dir().join(format!("tools-std-egress-bench-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let registry = Arc::new(Registry::builder().tools(tools_std::all()).build().unwrap());
    let deps = |egress: bool| {
        let mut ws = Workspace::new(&root).unwrap();
        if egress {
            ws = ws.with_egress(Egress::new(
                EgressPolicy::new().allow_host("crates.io", "bench").unwrap(),
                None,
            ));
        }
        let mut deps = Dependencies::new();
        deps.insert(ws);
        Arc::new(deps)
    };
    let (off, proxied) = (deps(false), deps(true));
    let state = SessionState::new();
    let once = |deps: Arc<Dependencies>| {
        let (registry, state) = (registry.clone(), state.clone());
        async move {
            let ctx = ToolContext::builder("bash").dependencies(deps).session(state).build();
            let started = Instant::now();
            let out = registry.call("bash", r#"{"command": "true"}"#, ctx).await.expect("bash runs");
            assert!(!out.is_error, "{}", out.text_content());
            started.elapsed()
        }
    };
    for _ in 0..10 {
        once(off.clone()).await;
        once(proxied.clone()).await;
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        without.push(once(off.clone()).await);
        with.push(once(proxied.clone()).await);
    }
    let (without, with) = (median(without), median(with));
    println!(
        "bash `true`, sandboxed, network off (median of {RUNS}):   {:>8.3} ms",
        without.as_secs_f64() * 1e3
    );
    println!(
        "bash `true`, sandboxed, with a proxy (median of {RUNS}):  {:>8.3} ms",
        with.as_secs_f64() * 1e3
    );
    println!("added by the egress: {:.3} ms", (with.as_secs_f64() - without.as_secs_f64()) * 1e3);
    let _ = std::fs::remove_dir_all(&root);
}
