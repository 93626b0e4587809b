//! Code mode: the model writes one script that calls many tools, and only its result comes
//! back.
//!
//! Every tool call is otherwise a round trip of the model, and every intermediate result (a
//! search's three hundred lines, ten files read to find one function) is paid for in its
//! context. [`CodeTool`] is an ordinary tool whose argument is a JavaScript program: every tool
//! of a registry is an async function on `tools`, and what the program prints and its last
//! expression's value are the tool's result.
//!
//! ```js
//! const found = await tools.grep({ pattern: "fn parse_args", output_mode: "files_with_matches" });
//! const files = found.text.split("\n").filter(Boolean);
//! const heads = await Promise.all(files.map((path) => tools.read({ path, limit: 5 })));
//! files.forEach((path, i) => console.log(path, heads[i].text.split("\n")[0]));
//! ```
//!
//! # Nested calls are a model's calls
//!
//! Each `tools.NAME(args)` is dispatched by the dispatcher that runs the script
//! ([`Dispatcher::nested`](tool_core::Dispatcher::nested)), exactly as a model's call: the
//! arguments are validated against the tool's schema (with the same messages), permission
//! rules, the asker and before-/after-hooks decide, the tool runs under its time limit with
//! cancellation, its output is truncated (the full text kept in the output store), and the
//! events of the host show the call with the id `PARENT.N` (the script call's id, a dot, and
//! the call's number in the script). `Promise.all` over `parallel` tools runs them at the same
//! time; over other tools, one after the other, as a model's parallel calls would. Stopping the
//! script call stops its calls, and so the commands they started.
//!
//! A call resolves to `{ text, structured, is_error: false }`; a call that fails (an unknown
//! tool, invalid arguments, refused by a rule or hook, the tool's own error) throws a
//! `ToolError` with `tool`, `kind` and the `message` the model would have read, which the
//! script may catch.
//!
//! # The engine and its limits
//!
//! Scripts run in QuickJS (through `rquickjs`): it starts in well under a millisecond, has a
//! memory limit and an interrupt handler built in, and is small (see BENCHMARKS.md, "Code mode").
//! Each script has an interpreter of its own, on a thread of its own, with the intrinsics of
//! the language and no `Date`, `performance`, file system, network or process: it reaches
//! the world only through `tools`, and writes only through `console.log` and `print`. Its
//! [`Limits`] (wall time, memory, tool calls, output bytes) each stop it with a sentence
//! that tells the model what to change.
//!
//! # Where the tool goes
//!
//! The script tool is an ordinary [`Tool`](tool_core::Tool): put it in a registry beside the
//! tools it calls ([`CodeTool::beside_its_tools`]) or alone ([`CodeTool::alone`]), and every
//! provider format, the MCP server and the `tools` binary (`--code-mode`) offer it. Its
//! description is made from the registry: a TypeScript declaration of each tool (its
//! parameters, their types and docs from the JSON Schema) and a short guide. Deferred tools
//! stay out of it; the script finds them with `tools.tool_search({query})`.
//!
//! ```
//! use std::sync::Arc;
//! use tool_code::CodeTool;
//! use tool_core::{CancellationToken, Dispatcher, Registry, ToolCall, ToolOutput, ToolSpec, FnTool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let schema = serde_json::json!({
//!     "type": "object",
//!     "properties": {"name": {"type": "string", "description": "Who to greet."}},
//!     "required": ["name"],
//! });
//! let greet = FnTool::new(ToolSpec::new("greet", "Greets someone.", schema), |_, args| async move {
//!     Ok(ToolOutput::text(format!("hello, {}", args["name"].as_str().unwrap_or("?"))))
//! });
//! let tools = Arc::new(Registry::builder().tool(greet).build().unwrap());
//! let registry = CodeTool::new(tools).beside_its_tools().unwrap();
//! let dispatcher = Dispatcher::new(registry);
//!
//! let script = r#"
//!     const names = ["ada", "grace"];
//!     const greetings = await Promise.all(names.map((name) => tools.greet({ name })));
//!     greetings.map((g) => g.text).join("; ")
//! "#;
//! let call = ToolCall::new("call_1", "code", serde_json::json!({ "script": script }));
//! let result = dispatcher.run(call, CancellationToken::new()).await;
//! assert_eq!(result.output.text_content(), "hello, ada; hello, grace");
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

mod describe;
mod engine;
mod limits;
mod tool;

pub use limits::Limits;
pub use tool::{CodeTool, NAME};
