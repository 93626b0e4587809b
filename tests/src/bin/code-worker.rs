//! A script's interpreter in a process of its own, for the tests of code mode in a worker
//! (`CodeTool::in_worker`): what the `tools` binary runs as `tools __code-worker`.

fn main() -> std::process::ExitCode {
    if tool_sandbox::shut_in().is_err() {
        return std::process::ExitCode::FAILURE;
    }
    tool_runtime::code::serve_worker()
}
