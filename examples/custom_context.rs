//! Dependencies, a permission hook that denies, and a before-hook that rewrites arguments.
//!
//! Run with `cargo run --example custom_context`.

use std::sync::Mutex;

use tool_runtime::{
    CancellationToken, Dep, Dispatcher, PermissionKind, PermissionRequest, Registry, ToolCall, ToolContext,
    ToolError,
    hooks::{BeforeDecision, BeforeFn, PermissionDecision, PermissionFn},
    tool,
};

/// An in-memory key-value store, shared by every call through `Dep<Store>`.
#[derive(Default)]
struct Store {
    entries: Mutex<Vec<(String, String)>>,
}

/// Store a value under a key.
#[tool]
async fn put(
    store: Dep<Store>,
    /// The key; a value stored under it before is replaced.
    key: String,
    /// The value to store.
    value: String,
) -> Result<String, ToolError> {
    let mut entries = store.entries.lock().map_err(|_| ToolError::execution("the store is unavailable"))?;
    entries.retain(|(k, _)| *k != key);
    entries.push((key.clone(), value));
    Ok(format!("stored `{key}` ({} keys in all)", entries.len()))
}

/// List stored keys, at most `limit` of them.
#[tool(parallel, read_only)]
async fn keys(
    store: Dep<Store>,
    /// At most this many keys.
    #[arg(default = 10)]
    limit: usize,
) -> Result<String, ToolError> {
    let entries = store.entries.lock().map_err(|_| ToolError::execution("the store is unavailable"))?;
    let keys: Vec<&str> = entries.iter().take(limit).map(|(k, _)| k.as_str()).collect();
    Ok(format!("{} (limit {limit})", keys.join(", ")))
}

/// Delete every stored key. Asks for permission first.
#[tool(destructive)]
async fn wipe(ctx: &ToolContext, store: Dep<Store>) -> Result<String, ToolError> {
    ctx.ask(PermissionRequest::new(PermissionKind::Other { name: "wipe".into() }, "delete every stored key"))
        .await?;
    let mut entries = store.entries.lock().map_err(|_| ToolError::execution("the store is unavailable"))?;
    let n = entries.len();
    entries.clear();
    Ok(format!("deleted {n} keys"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder().with_inventory().allow(["put", "keys", "wipe"]).build()?;
    let dispatcher = Dispatcher::builder(registry)
        // A typed dependency: tools receive it as `Dep<Store>`; tests can swap in another.
        .dependency(Store::default())
        // A permission hook: here a policy, in an app a prompt to the user.
        .permissions(PermissionFn(|request: PermissionRequest| async move {
            match request.kind {
                PermissionKind::Other { name } if name == "wipe" => PermissionDecision::Deny {
                    reason: "wiping the store is not allowed in this session".into(),
                },
                _ => PermissionDecision::Allow,
            }
        }))
        // A before-hook: clamp `limit` so no call lists more than 2 keys.
        .before_hook(BeforeFn(|call: tool_runtime::hooks::HookCall| async move {
            if call.tool == "keys" && call.arguments["limit"].as_u64().is_some_and(|n| n > 2) {
                let mut args = call.arguments.clone();
                args["limit"] = 2.into();
                return Ok(BeforeDecision::Rewrite(args));
            }
            Ok(BeforeDecision::Allow)
        }))
        .build();

    let call = |id: &str, name: &str, args: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    };
    let calls = vec![
        call("c1", "put", r#"{"key": "a", "value": "1"}"#),
        call("c2", "put", r#"{"key": "b", "value": "2"}"#),
        call("c3", "put", r#"{"key": "c", "value": "3"}"#),
        call("c4", "keys", r#"{"limit": 50}"#),
        call("c5", "wipe", "{}"),
    ];
    for result in dispatcher.run_batch(calls, CancellationToken::new()).await? {
        let marker = if result.output.is_error { "error" } else { "ok" };
        println!("[{}] {} ({marker}): {}", result.call_id, result.tool, result.output.text_content());
    }
    Ok(())
}
