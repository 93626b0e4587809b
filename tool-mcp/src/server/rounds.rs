//! Revision 2026-07-28's rounds (multi round-trip requests, SEP-2322): a call whose tool needs
//! its client (a question for the user, a completion from the model) while the request has no
//! session to send requests in.
//!
//! The call runs in a task of its own. When it asks its client something, the request's result
//! is `input_required`, carrying the questions and a `requestState` that names the call, parked
//! here; the client answers and calls the tool again with the answers and that state, and the
//! call goes on from where it waited, until it ends or asks again. The state is a random name
//! for what is kept here, never data to trust. A call whose client does not come back within
//! the elicitation time limit is cancelled (its commands killed), as is every parked call when
//! the server's state ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{CallToolResponse, InputRequest, InputRequiredResult, InputResponses};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use tool_core::{ContextSink, LogLevel, Progress};

use super::client_line::AskFailure;
use super::progress::ProgressForwarder;

/// At most this many calls wait for their clients' answers at once; past it, a call's question
/// is refused (with a sentence) rather than parked.
const MAX_PARKED: usize = 64;

/// A question of a call, and where its answer goes.
pub(crate) struct Asked {
    request: InputRequest,
    reply: oneshot::Sender<Result<Value, String>>,
}

/// Where a call's requests to its client go in rounds.
#[derive(Clone)]
pub(crate) struct RoundLine(mpsc::Sender<Asked>);

impl RoundLine {
    /// Asks the client `request` and waits for its answer (the result's JSON).
    pub(crate) async fn ask(&self, request: InputRequest, timeout: Duration) -> Result<Value, AskFailure> {
        let (reply, answer) = oneshot::channel();
        if self.0.send(Asked { request, reply }).await.is_err() {
            return Err(AskFailure::Failed("the call is no longer waiting for its client".to_owned()));
        }
        match answer.await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(why)) => Err(AskFailure::Refused(why)),
            Err(_) => Err(AskFailure::Timeout(timeout)),
        }
    }
}

/// What follows a call's progress and log messages: the client of the round in flight, none
/// while the call waits for its client to come back.
#[derive(Default)]
pub(crate) struct RoundSink(Mutex<Option<Arc<ProgressForwarder>>>);

impl RoundSink {
    fn current(&self) -> Option<Arc<ProgressForwarder>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, forwarder: Option<Arc<ProgressForwarder>>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = forwarder;
    }
}

impl ContextSink for RoundSink {
    fn progress(&self, call_id: &str, tool: &str, update: Progress) {
        if let Some(forwarder) = self.current() {
            forwarder.progress(call_id, tool, update);
        }
    }

    fn metadata(&self, _call_id: &str, _tool: &str, _title: Option<String>, _metadata: Value) {}

    fn log(&self, call_id: &str, tool: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        if let Some(forwarder) = self.current() {
            forwarder.log(call_id, tool, level, logger, data);
        }
    }
}

/// A call running in rounds.
pub(crate) struct RoundCall {
    /// The call, and what its request is answered with when it ends.
    task: JoinHandle<CallToolResponse>,
    /// Its questions, as it asks them.
    asks: mpsc::Receiver<Asked>,
    /// The questions of the last round, by the key the client answers them under.
    waiting: BTreeMap<String, oneshot::Sender<Result<Value, String>>>,
    /// How many questions it asked in all (their keys).
    asked: u64,
    /// Stops the call.
    cancel: CancellationToken,
    sink: Arc<RoundSink>,
}

impl RoundCall {
    /// Starts a call in a task of its own: `make` gets the line its questions go to and the sink
    /// its progress goes to, and gives the call's future.
    pub(crate) fn start<F>(
        cancel: CancellationToken,
        make: impl FnOnce(RoundLine, Arc<RoundSink>) -> F,
    ) -> Self
    where
        F: Future<Output = CallToolResponse> + Send + 'static,
    {
        let (to_host, asks) = mpsc::channel(16);
        let sink = Arc::new(RoundSink::default());
        let task = tokio::spawn(make(RoundLine(to_host), sink.clone()));
        RoundCall { task, asks, waiting: BTreeMap::new(), asked: 0, cancel, sink }
    }
}

impl Drop for RoundCall {
    fn drop(&mut self) {
        // Dropped unfinished (its client never came back, the server's state ended): stopped.
        if !self.task.is_finished() {
            self.cancel.cancel();
        }
    }
}

/// How one round ended.
pub(crate) enum Round {
    /// The call ended: its answer.
    Done(CallToolResponse),
    /// It waits for its client: the result to send.
    Input(InputRequiredResult),
}

/// The calls that wait for their clients, by request state.
#[derive(Default)]
pub(crate) struct ParkedCalls {
    calls: Mutex<HashMap<String, RoundCall>>,
}

impl ParkedCalls {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, RoundCall>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the call `state` names, giving it the client's `answers`; `None` when no call waits
    /// under that name (it ended, was given up, or never was).
    pub(crate) fn resume(&self, state: &str, answers: Option<InputResponses>) -> Option<RoundCall> {
        let mut call = self.calls().remove(state)?;
        let mut answers = answers.unwrap_or_default();
        for (key, reply) in std::mem::take(&mut call.waiting) {
            let _ = reply.send(answers.remove(&key).ok_or_else(|| {
                format!("the MCP client called again without an answer to the question `{key}`")
            }));
        }
        Some(call)
    }

    /// Runs one round of `call`: until it ends (its result), asks its client something (parked,
    /// the `input_required` result returned), or `cancel` fires (stopped, its result).
    pub(crate) async fn round(
        self: &Arc<Self>,
        mut call: RoundCall,
        forwarder: Arc<ProgressForwarder>,
        cancel: &CancellationToken,
        give_up_after: Duration,
    ) -> Round {
        call.sink.set(Some(forwarder.clone()));
        let round = loop {
            tokio::select! {
                biased;
                ended = &mut call.task => break Round::Done(ended.unwrap_or_else(|e| crashed(&e))),
                () = cancel.cancelled() => {
                    call.cancel.cancel();
                    let ended = (&mut call.task).await;
                    break Round::Done(ended.unwrap_or_else(|e| crashed(&e)));
                }
                Some(first) = call.asks.recv() => {
                    let mut asked = vec![first];
                    while let Ok(more) = call.asks.try_recv() {
                        asked.push(more);
                    }
                    let state = match new_state() {
                        Some(state) if self.calls().len() < MAX_PARKED => state,
                        state => {
                            let why = match state {
                                Some(_) => format!(
                                    "{MAX_PARKED} calls already wait for their clients' answers on this server"
                                ),
                                None => "this system gave no random number to name the waiting call".to_owned(),
                            };
                            for ask in asked {
                                let _ = ask.reply.send(Err(why.clone()));
                            }
                            continue;
                        }
                    };
                    let mut requests = BTreeMap::new();
                    for ask in asked {
                        call.asked += 1;
                        let key = format!("q{}", call.asked);
                        requests.insert(key.clone(), ask.request);
                        call.waiting.insert(key, ask.reply);
                    }
                    let mut result = InputRequiredResult::from_input_requests(requests);
                    result.request_state = Some(state.clone());
                    call.sink.set(None);
                    self.calls().insert(state.clone(), call);
                    give_up_later(Arc::downgrade(self), state, give_up_after);
                    return finish(forwarder, Round::Input(result)).await;
                }
            }
        };
        call.sink.set(None);
        finish(forwarder, round).await
    }
}

/// Sends what the round's forwarder holds before the round's answer.
async fn finish(forwarder: Arc<ProgressForwarder>, round: Round) -> Round {
    forwarder.finish().await;
    round
}

/// Gives up the call parked as `state` if its client has not come back after `wait`.
fn give_up_later(calls: Weak<ParkedCalls>, state: String, wait: Duration) {
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        let Some(calls) = calls.upgrade() else { return };
        let Some(mut call) = calls.calls().remove(&state) else { return };
        let why = format!(
            "the MCP client did not come back with an answer within {}",
            tool_core::words::duration(wait)
        );
        for (_, reply) in std::mem::take(&mut call.waiting) {
            let _ = reply.send(Err(why.clone()));
        }
        // Dropped: stopped, its commands killed.
    });
}

/// A request state no one can guess: 128 random bits (none without randomness: a name
/// another client could guess would let it answer for this one).
fn new_state() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn crashed(error: &tokio::task::JoinError) -> CallToolResponse {
    let output = tool_core::ToolOutput::error(format!("the call stopped before it ended ({error})"));
    crate::wire::call_tool_result(output).into()
}
