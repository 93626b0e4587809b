//! The network of one sandboxed command: an egress proxy started for it, the sandbox that lets
//! it reach only that proxy, the questions about new hosts, and the refusals for its result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tool_egress::{AskAnswer, AskRequest, Asker, EgressProxy, Reason, Refusal};
use tool_runtime::words::excerpt;
use tool_runtime::{PermissionKind, PermissionRequest, ToolContext, context::CallAsker};
use tool_sandbox::{Network, NetworkNamespace, Probe, Sandbox, SandboxPolicy};

use crate::Workspace;

/// A command's proxy (the `egress` feature).
pub(crate) type Proxy = EgressProxy;

/// A command's proxy, and what starting it changed.
pub(crate) struct CommandNetwork {
    /// The proxy, kept as long as the command runs.
    pub(crate) proxy: EgressProxy,
    /// The sandbox with TCP to the proxy's port only.
    pub(crate) sandbox: Arc<Sandbox>,
}

/// What the command gets: its proxy, or the reason it has none (said in its result).
pub(crate) enum Prepared {
    /// No egress, or the command is not sandboxed with the network off: nothing changes.
    Unchanged,
    /// The command reaches the network through this proxy.
    Proxy(CommandNetwork),
    /// The egress could not be used; the network stays off, for this reason.
    Off(String),
}

/// Starts a proxy for `command` when the workspace has an egress, or the command is `granted`
/// the network ([`Workspace::granted_egress`]), and `sandbox` confines the command with the
/// network off: in a network namespace made for the command, where the proxy's listener is the
/// only thing to connect to, when this process can make one. Hosts no rule names are asked
/// about through `ctx`'s permission hook, from the proxy's tasks (for as long as the command
/// runs).
pub(crate) async fn prepare(
    ws: &Workspace,
    ctx: &ToolContext,
    command: &str,
    sandbox: &Sandbox,
    granted: bool,
) -> Prepared {
    let granted = granted.then(|| ws.granted_egress());
    let Some(egress) = granted.as_ref().or(ws.egress()) else { return Prepared::Unchanged };
    let policy = sandbox.policy();
    if !policy.is_enforced() || policy.network != Network::Off {
        return Prepared::Unchanged;
    }
    let asker = host_asker(ctx.asker(), command);
    let probe = Probe::get();
    // In a network namespace of its own, the proxy listening there is all the command can reach;
    // without one, Landlock's TCP rule lets it reach the proxy's port on any address, and the
    // sandbox's report says so.
    // Not when every Unix socket is allowed: the abstract ones live in this machine's namespace.
    let namespace =
        if probe.network_namespace && !policy.all_unix_sockets { spare_namespace().await } else { None };
    let (proxy, namespace) = match namespace {
        Some((namespace, listener)) => (egress.serve(listener, Some(asker)), Some(namespace)),
        None => (egress.start_asking(asker).await, None),
    };
    let proxy = match proxy {
        Ok(proxy) => proxy,
        Err(e) => return Prepared::Off(format!("the network proxy could not start ({e})")),
    };
    let confined = match namespace {
        // The proxy listens on the same port in every namespace: the sandbox for it is built
        // once per policy.
        Some(_) => confined_for_namespaces(policy, probe),
        None => confine(policy, proxy.port(), probe),
    };
    match confined {
        Ok(sandbox) => {
            let sandbox = match namespace {
                Some(namespace) => sandbox.in_network_namespace(namespace),
                None => sandbox,
            };
            Prepared::Proxy(CommandNetwork { proxy, sandbox: Arc::new(sandbox) })
        }
        Err(reason) => Prepared::Off(reason),
    }
}

/// A network namespace with the proxy's listener in it, for one command: the one made ahead
/// for it, and another made in the background for the next command, so that making one (about
/// a millisecond) is not on a command's way.
async fn spare_namespace() -> Option<(NetworkNamespace, std::net::TcpListener)> {
    static SPARE: Mutex<Option<(NetworkNamespace, std::net::TcpListener)>> = Mutex::new(None);
    let taken = SPARE.lock().unwrap_or_else(|p| p.into_inner()).take();
    let made = match taken {
        Some(made) => Some(made),
        None => tokio::task::spawn_blocking(NetworkNamespace::with_listener).await.ok()?.ok(),
    };
    tokio::task::spawn_blocking(|| {
        if let Ok(next) = NetworkNamespace::with_listener() {
            SPARE.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(next);
        }
    });
    made
}

/// [`confine`] to [`NetworkNamespace::PROXY_PORT`], built once for each policy and shared by
/// the commands (a clone of a few handles each: the ruleset, the filter, the namespace).
fn confined_for_namespaces(policy: &SandboxPolicy, probe: Probe) -> Result<Sandbox, String> {
    type Built = Vec<(SandboxPolicy, Result<Sandbox, String>)>;
    static BUILT: Mutex<Built> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, sandbox)) = built.iter().find(|(known, _)| known == policy) {
        return sandbox.clone();
    }
    let sandbox = confine(policy, NetworkNamespace::PROXY_PORT, probe);
    // A few policies per process (the workspace's, an escalation's): the oldest goes past 8.
    if built.len() == 8 {
        drop(built.remove(0));
    }
    built.push((policy.clone(), sandbox.clone()));
    sandbox
}

/// `policy` with TCP allowed to `port` only, on a kernel with `probe`'s layers; the reason
/// when the kernel cannot confine TCP to one port.
fn confine(policy: &SandboxPolicy, port: u16, probe: Probe) -> Result<Sandbox, String> {
    let confined = policy.clone().with_network(Network::Proxy { port });
    let cannot = |missing: &[String]| {
        format!("the kernel cannot confine TCP to the proxy's port ({})", missing.join("; "))
    };
    match Sandbox::with_probe(confined, probe) {
        // Without Landlock's TCP rule (a best-effort sandbox on an older kernel), seccomp alone
        // would let the command connect anywhere: the network stays off instead.
        Ok(sandbox) if sandbox.report().layers.contains(&"landlock-tcp") => Ok(sandbox),
        Ok(sandbox) => Err(cannot(&sandbox.report().missing)),
        Err(e) => Err(cannot(e.missing())),
    }
}

/// The refusals since the last call, as notes for the result, and as metadata. When a host
/// was refused for want of a rule, the last line says how the model can ask for the network.
pub(crate) fn refusals(proxy: &EgressProxy, can_escalate: bool) -> (Option<String>, Vec<Refusal>) {
    let refusals = proxy.drain_refusals();
    let mut lines: Vec<String> =
        tool_egress::summarize(&refusals).iter().map(|line| format!("[{line}]")).collect();
    let unnamed =
        refusals.iter().any(|r| matches!(r.reason, Reason::NotAllowed { .. } | Reason::AskRefused { .. }));
    if unnamed && can_escalate {
        lines.push(ASK_NOTE.to_owned());
    }
    let note = (!lines.is_empty()).then(|| lines.join("\n"));
    (note, refusals)
}

/// How the model asks for more network than the rules give.
const ASK_NOTE: &str = "[if the command needs that host, call bash again with `sandbox: \"network\"` and a \
`justification`: the user is asked to let this command use the network]";

/// The refusals as a result's `network_refusals` metadata.
pub(crate) fn refusals_metadata(refusals: &[Refusal]) -> serde_json::Value {
    refusals
        .iter()
        .map(|r| {
            json!({
                "host": r.host,
                "port": r.port,
                "protocol": r.protocol.to_string(),
                "message": r.to_string(),
            })
        })
        .collect()
}

/// After this many hosts were refused for one command, the rest are refused without asking: a
/// command trying host after host must not flood the person with questions.
pub(crate) const MAX_REFUSED_QUESTIONS: usize = 3;

/// The answers given for one command, by host and port.
#[derive(Default)]
struct Answers {
    given: HashMap<(String, u16), Option<String>>,
    refused: usize,
}

/// Asks the call's permission hook about a host no rule names, as a
/// [`PermissionKind::NetworkHost`] request. The answer holds for the rest of the command (a
/// client that opens many connections, or retries, asks once), and after
/// [`MAX_REFUSED_QUESTIONS`] refusals no more questions are asked.
fn host_asker(asker: CallAsker, command: &str) -> Asker {
    let command: Arc<str> = command.into();
    let answers: Arc<Mutex<Answers>> = Arc::default();
    tool_egress::asker(move |request: AskRequest| {
        let (asker, command, answers) = (asker.clone(), command.clone(), answers.clone());
        async move {
            let key = (request.host.clone(), request.port);
            {
                let answers = answers.lock().unwrap_or_else(|p| p.into_inner());
                match answers.given.get(&key) {
                    Some(None) => return AskAnswer::AllowOnce,
                    Some(Some(reason)) => return AskAnswer::Refused { reason: reason.clone() },
                    None if answers.refused >= MAX_REFUSED_QUESTIONS => {
                        return AskAnswer::Refused {
                            reason: format!(
                                "{MAX_REFUSED_QUESTIONS} hosts were already refused for this command, so no more \
                                 are asked about"
                            ),
                        };
                    }
                    None => {}
                }
            }
            let AskRequest { host, port, protocol } = &request;
            let description = format!(
                "let the command `{}` connect to `{host}` on port {port} ({protocol}) for the rest of its run; \
                 no network rule allows that host",
                excerpt(&command)
            );
            let permission = PermissionRequest::new(
                PermissionKind::NetworkHost { command: command.to_string(), host: host.clone(), port: *port },
                description.clone(),
            )
            .with_details(json!({
                // Who asks, in an MCP client's refusal: "the user declined it (the network proxy asked them)".
                "rule": "the network proxy",
                "command": &*command,
                "host": host,
                "port": port,
                "protocol": protocol.to_string(),
            }));
            let answer = match asker.ask(permission).await {
                Ok(()) => None,
                Err(e) => {
                    // The hook's own words, without the description the result already shows.
                    let message = e.message();
                    let prefix = format!("Permission denied ({description}): ");
                    Some(message.strip_prefix(&prefix).unwrap_or(message).to_owned())
                }
            };
            let mut answers = answers.lock().unwrap_or_else(|p| p.into_inner());
            answers.refused += usize::from(answer.is_some());
            answers.given.insert(key, answer.clone());
            match answer {
                None => AskAnswer::AllowOnce,
                Some(reason) => AskAnswer::Refused { reason },
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_sandbox::Fallback;

    #[test]
    fn without_landlocks_tcp_rule_the_network_stays_off_even_at_best_effort() {
        let root = std::env::temp_dir();
        let old = Probe {
            landlock_abi: Some(3),
            seccomp: true,
            mount_namespace: false,
            user_namespaces: false,
            network_namespace: false,
        };
        for fallback in [Fallback::Refuse, Fallback::BestEffort] {
            let policy = SandboxPolicy::workspace_write(&root).with_fallback(fallback);
            let reason = confine(&policy, 3128, old).map(|_| ()).unwrap_err();
            assert!(reason.starts_with("the kernel cannot confine TCP to the proxy's port ("), "{reason}");
            assert!(reason.contains("Landlock ABI 4"), "{reason}");
        }
        let probe = Probe::get();
        if probe.landlock_abi.is_some_and(|abi| abi >= 4) && probe.seccomp {
            let sandbox = confine(&SandboxPolicy::workspace_write(&root), 3128, probe).unwrap();
            assert_eq!(sandbox.report().network, Network::Proxy { port: 3128 });
        }
    }
}
