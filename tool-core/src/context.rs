//! `ToolContext`: what a running call knows about itself and can reach (deps, session, hooks).

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::handoff::{Remainder, TaskTaker};
use crate::permission::{
    DefaultPermissions, PathScreen, PermissionDecision, PermissionHook, PermissionRequest,
};
use crate::sampling::Sampler;
use crate::truncate::TruncationLimits;
use crate::user_question::{AskerDependency, UserAnswer, UserAsker};

/// Typed values registered once (a workspace, a file system, a client) and fetched by type.
#[derive(Clone, Default)]
pub struct Dependencies {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Dependencies {
    /// No dependencies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `value`, replacing any earlier value of the same type (this is how tests
    /// override a dependency).
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> &mut Self {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// Registers a value shared with others, as a `T` (not as an `Arc<T>`, which
    /// [`Dependencies::insert`] would make the key).
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) -> &mut Self {
        self.values.insert(TypeId::of::<T>(), value);
        self
    }

    /// The value of type `T`, if registered.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.values.get(&TypeId::of::<T>()).cloned().and_then(|v| v.downcast().ok())
    }

    /// Whether a value of type `T` is registered.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.values.contains_key(&TypeId::of::<T>())
    }
}

impl fmt::Debug for Dependencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dependencies").field("len", &self.values.len()).finish()
    }
}

/// State shared by every call of one session (a todo list, a cache), keyed by type.
#[derive(Clone, Default)]
pub struct SessionState {
    values: Arc<Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl SessionState {
    /// Empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The session's value of type `T`, created with `init` on first use. Put a `Mutex` or an
    /// atomic inside `T` to mutate it.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let mut values = self.values.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let entry = values.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(init()));
        match entry.clone().downcast::<T>() {
            Ok(value) => value,
            Err(_) => unreachable!("session state is keyed by TypeId"),
        }
    }

    /// The session's value of type `T`, if any.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let values = self.values.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        values.get(&TypeId::of::<T>()).cloned().and_then(|v| v.downcast().ok())
    }

    /// Ends the session's state: drops every value, and with it what the values own (the
    /// background commands of `tools-std`'s `bash`, which are killed), even a value that refers
    /// back to this state. For a host whose session ended; a later call starts afresh.
    pub fn clear(&self) {
        let values =
            std::mem::take(&mut *self.values.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        // Dropped after the lock is released: a value's `Drop` may use the state.
        drop(values);
    }
}

impl fmt::Debug for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionState").finish_non_exhaustive()
    }
}

/// A progress update from inside a running tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Work done so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    /// Total work, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
}

impl Progress {
    /// A message-only update.
    pub fn message(message: impl Into<String>) -> Self {
        Progress { message: Some(message.into()), ..Default::default() }
    }
}

/// How severe a log message is: the levels of syslog (RFC 5424), as MCP's logging names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// What happens, as it happens.
    Info,
    /// Normal but significant.
    Notice,
    /// Something that may become a problem.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Action is needed at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// Where a call's in-flight updates go (the dispatcher's event stream, an MCP session).
pub trait ContextSink: Send + Sync + 'static {
    /// A progress update.
    fn progress(&self, call_id: &str, tool: &str, update: Progress);
    /// A title and UI metadata update.
    fn metadata(&self, call_id: &str, tool: &str, title: Option<String>, metadata: Value);
    /// A log message of the call (MCP's `notifications/message`): its level, the part of the
    /// tool that logs, and the data (any JSON). Dropped unless the sink passes logs on.
    fn log(&self, call_id: &str, tool: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        let _ = (call_id, tool, level, logger, data);
    }
}

/// What a nested call reports, passed on to its parent call's caller (an MCP client following
/// the parent's progress) as the parent's: progress as a message naming the nested tool (its
/// figures are of another scale than the parent's), log messages with the nested tool as their
/// logger; titles and UI metadata stay the nested call's own.
struct NestedSink {
    caller: Arc<dyn ContextSink>,
    call_id: String,
    tool: String,
}

impl ContextSink for NestedSink {
    fn progress(&self, _call_id: &str, tool: &str, update: Progress) {
        let said = match (update.message, update.progress, update.total) {
            (Some(message), _, _) => message,
            (None, Some(done), Some(total)) => format!("{done} of {total}"),
            (None, Some(done), None) => done.to_string(),
            (None, None, _) => return,
        };
        self.caller.progress(&self.call_id, &self.tool, Progress::message(format!("{tool}: {said}")));
    }

    fn metadata(&self, _call_id: &str, _tool: &str, _title: Option<String>, _metadata: Value) {}

    fn log(&self, _call_id: &str, tool: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        self.caller.log(&self.call_id, &self.tool, level, Some(logger.unwrap_or(tool)), data);
    }
}

/// Everything a context holds: the call's own parts and the dispatcher's shared ones. A
/// dispatcher fills it in one step ([`ToolContext::for_call`]); everyone else uses the builder.
pub(crate) struct Inner {
    pub(crate) ids: Ids,
    pub(crate) cancel: CallCancel,
    pub(crate) deadline: Option<Instant>,
    pub(crate) time_limit: Option<Duration>,
    pub(crate) sinks: Vec<Arc<dyn ContextSink>>,
    /// The caller's own sink among `sinks` ([`CallOptions::sink`](crate::CallOptions)), which
    /// the calls this call makes report to as well ([`ToolContext::nested_call_options`]).
    pub(crate) caller_sink: Option<Arc<dyn ContextSink>>,
    pub(crate) truncation: TruncationLimits,
    pub(crate) shared: Arc<Shared>,
    /// Who answers for the person behind the call ([`CallOptions::asker`](crate::CallOptions)).
    pub(crate) asker: Option<Arc<dyn PermissionHook>>,
    /// Who answers the call's questions ([`CallOptions::user`](crate::CallOptions)).
    pub(crate) user: Option<Arc<dyn UserAsker>>,
    /// The turn the call belongs to ([`CallOptions::turn`](crate::CallOptions)).
    pub(crate) turn: Option<Arc<str>>,
    /// Who takes over work the call leaves running ([`CallOptions::tasks`](crate::CallOptions)).
    pub(crate) tasks: Option<Arc<dyn TaskTaker>>,
    /// Who samples for the call ([`CallOptions::sampler`](crate::CallOptions)).
    pub(crate) sampler: Option<Arc<dyn Sampler>>,
    /// The dispatcher running the call (none for a context built by hand). Weak: a dispatcher
    /// outlives its calls, and a context kept past its call must not keep the dispatcher alive.
    pub(crate) dispatcher: Option<Weak<crate::dispatch::Inner>>,
}

/// The ids of one call, as the record a dispatcher keeps of it holds them.
pub(crate) trait CallIds: Send + Sync {
    fn call_id(&self) -> &str;
    fn tool_name(&self) -> &str;
}

/// A context's call ids: its own, or read from its dispatcher's record of the call, which a call
/// then does not copy.
#[derive(Clone)]
pub(crate) enum Ids {
    Own { call_id: String, tool_name: String },
    Shared(Arc<dyn CallIds>),
}

impl Ids {
    fn call_id(&self) -> &str {
        match self {
            Ids::Own { call_id, .. } => call_id,
            Ids::Shared(ids) => ids.call_id(),
        }
    }

    fn tool_name(&self) -> &str {
        match self {
            Ids::Own { tool_name, .. } => tool_name,
            Ids::Shared(ids) => ids.tool_name(),
        }
    }
}

/// A call's cancellation. A dispatcher's call gets a token of its own only when its tool asks for
/// one: a child of the caller's token, already cancelled if the call was stopped before (most
/// tools never ask, and a child token costs an allocation and two locks of the parent).
pub(crate) enum CallCancel {
    /// The token the context was built with.
    Given(CancellationToken),
    /// A child of `caller`, made on first use; `stopped` once the dispatcher stopped the call.
    Lazy { caller: CancellationToken, own: OnceLock<CancellationToken>, stopped: AtomicBool },
}

impl CallCancel {
    /// Under `caller`: stopped when `caller` is cancelled, or by [`CallCancel::stop`].
    pub(crate) fn under(caller: CancellationToken) -> Self {
        CallCancel::Lazy { caller, own: OnceLock::new(), stopped: AtomicBool::new(false) }
    }

    fn token(&self) -> &CancellationToken {
        match self {
            CallCancel::Given(token) => token,
            CallCancel::Lazy { caller, own, stopped } => {
                let token = own.get_or_init(|| caller.child_token());
                // With the fence in `stop`: of a call stopped while its token is being made,
                // either this sees `stopped` or `stop` sees the token, so it is cancelled.
                fence(Ordering::SeqCst);
                if stopped.load(Ordering::SeqCst) {
                    token.cancel();
                }
                token
            }
        }
    }

    fn is_cancelled(&self) -> bool {
        match self {
            CallCancel::Given(token) => token.is_cancelled(),
            CallCancel::Lazy { caller, own, stopped } => {
                stopped.load(Ordering::SeqCst)
                    || caller.is_cancelled()
                    || own.get().is_some_and(CancellationToken::is_cancelled)
            }
        }
    }

    /// Stops the call alone: its own token (now or when it is made), not the caller's.
    fn stop(&self) {
        match self {
            CallCancel::Given(token) => token.cancel(),
            CallCancel::Lazy { own, stopped, .. } => {
                stopped.store(true, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                if let Some(token) = own.get() {
                    token.cancel();
                }
            }
        }
    }

    /// The token whose cancellation stops the call from outside: the caller's.
    fn caller(&self) -> &CancellationToken {
        match self {
            CallCancel::Given(token) | CallCancel::Lazy { caller: token, .. } => token,
        }
    }
}

/// What every call of one dispatcher shares: made once, not per call.
pub(crate) struct Shared {
    pub(crate) session_id: String,
    pub(crate) deps: Arc<Dependencies>,
    pub(crate) session: SessionState,
    pub(crate) permissions: Arc<dyn PermissionHook>,
}

/// What a running call knows about itself: ids, cancellation, deadline, dependencies, session
/// state, the permission hook, and a channel for progress. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Inner>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id())
            .field("tool_name", &self.tool_name())
            .field("session_id", &self.inner.shared.session_id)
            .field("deadline", &self.inner.deadline)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// Starts a context for a call of `tool_name`.
    pub fn builder(tool_name: impl Into<String>) -> ContextBuilder {
        ContextBuilder {
            call_id: String::new(),
            tool_name: tool_name.into(),
            cancel: None,
            deadline: None,
            time_limit: None,
            sinks: Vec::new(),
            truncation: TruncationLimits::default(),
            session_id: None,
            deps: None,
            session: None,
            permissions: None,
            asker: None,
            user: None,
            turn: None,
            tasks: None,
            sampler: None,
        }
    }

    /// A dispatcher's context for one call.
    pub(crate) fn for_call(inner: Inner) -> ToolContext {
        ToolContext { inner: Arc::new(inner) }
    }

    /// The id of this call (from the model's tool call).
    pub fn call_id(&self) -> &str {
        self.inner.ids.call_id()
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        self.inner.ids.tool_name()
    }

    /// The id of the turn this call belongs to, when the host gave one
    /// ([`CallOptions::turn`](crate::CallOptions)): the calls of one model message share it, so
    /// that what they did can be told apart, and undone, together.
    pub fn turn_id(&self) -> Option<&str> {
        self.inner.turn.as_deref()
    }

    /// The id of the session (conversation) this call belongs to.
    pub fn session_id(&self) -> &str {
        &self.inner.shared.session_id
    }

    /// The call's cancellation token. Long-running tools should watch it.
    pub fn cancellation_token(&self) -> &CancellationToken {
        self.inner.cancel.token()
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Stops this call (a time limit, a dropped caller): its token is cancelled, the caller's
    /// is not.
    pub(crate) fn stop(&self) {
        self.inner.cancel.stop();
    }

    /// The token that stops the call from outside, to wait on without making the call's own.
    pub(crate) fn caller_token(&self) -> &CancellationToken {
        self.inner.cancel.caller()
    }

    /// When the call's time runs out, if it has a limit.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// The time limit the deadline was set from, as the user or the tool's policy gave it: what
    /// a tool stopped at its deadline names in its result.
    pub fn time_limit(&self) -> Option<Duration> {
        self.inner.time_limit
    }

    /// The truncation limits in force for this call: the dispatcher's defaults with the tool's
    /// own `truncate(...)` settings. A tool that cuts its own output (or streams it through a
    /// [`TruncationStream`](crate::truncate::TruncationStream)) cuts to these.
    pub fn truncation(&self) -> TruncationLimits {
        self.inner.truncation
    }

    /// This context with other truncation limits; cancelling either cancels both.
    pub(crate) fn with_truncation(&self, limits: TruncationLimits) -> ToolContext {
        let inner = &self.inner;
        ToolContext {
            inner: Arc::new(Inner {
                ids: inner.ids.clone(),
                // One token for both: the call's own, made now if it was not yet.
                cancel: CallCancel::Given(inner.cancel.token().clone()),
                deadline: inner.deadline,
                time_limit: inner.time_limit,
                sinks: inner.sinks.clone(),
                caller_sink: inner.caller_sink.clone(),
                truncation: limits,
                shared: inner.shared.clone(),
                asker: inner.asker.clone(),
                user: inner.user.clone(),
                turn: inner.turn.clone(),
                tasks: inner.tasks.clone(),
                sampler: inner.sampler.clone(),
                dispatcher: inner.dispatcher.clone(),
            }),
        }
    }

    /// The dependency of type `T`.
    pub fn dep<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, ToolError> {
        self.inner.shared.deps.get::<T>().ok_or_else(|| missing_dependency::<T>(self.tool_name()))
    }

    /// All registered dependencies.
    pub fn dependencies(&self) -> &Dependencies {
        &self.inner.shared.deps
    }

    /// State shared by every call of this session.
    pub fn session(&self) -> &SessionState {
        &self.inner.shared.session
    }

    /// Asks the permission hook. `Ok(())` means go ahead; a denial is a permission-denied
    /// error carrying the hook's reason, ready to return from the tool with `?`.
    pub async fn ask(&self, request: PermissionRequest) -> Result<(), ToolError> {
        let shared = &self.inner.shared;
        ask_hook(&*shared.permissions, self.inner.asker.as_ref(), self.tool_name(), self.call_id(), request)
            .await
    }

    /// This call's way to ask its permission hook from a task it spawns, or from work that
    /// outlives it (a background command's network proxy asking about a host), with the asker
    /// the call runs with (an MCP server's client, asked through elicitation).
    ///
    /// It holds the call's ids and its permission hooks, not the context: work that outlives the
    /// call and is kept in the session state (a background command's proxy) keeps no reference
    /// back to that state, so ending the session frees it.
    pub fn asker(&self) -> CallAsker {
        CallAsker {
            tool_name: self.tool_name().into(),
            call_id: self.call_id().into(),
            asker: self.inner.asker.clone(),
            permissions: self.inner.shared.permissions.clone(),
        }
    }

    /// Who answers the questions of this call, if anyone: the one the call was given
    /// ([`CallOptions::user`](crate::CallOptions): an MCP client, by elicitation), else the
    /// application's [`AskerDependency`].
    pub fn user_asker(&self) -> Option<Arc<dyn UserAsker>> {
        self.inner
            .user
            .clone()
            .or_else(|| self.dependencies().get::<AskerDependency>().map(|asker| asker.0.clone()))
    }

    /// Hands the rest of this call's work to the caller, which runs it as a task and reports its
    /// output as the call's final result (see [`handoff`](crate::handoff)); `Err(rest)` when the
    /// caller takes no tasks (the tool then goes on as without), or already took one of this call.
    pub fn hand_off(&self, rest: Remainder) -> Result<(), Remainder> {
        match &self.inner.tasks {
            Some(tasks) => tasks.take(rest),
            None => Err(rest),
        }
    }

    /// Who asks a model for completions for this call, if anyone: the one the call was given
    /// ([`CallOptions::sampler`](crate::CallOptions): an MCP client that declared `sampling`),
    /// else the application's [`SamplerDependency`](crate::sampling::SamplerDependency).
    pub fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        self.inner.sampler.clone().or_else(|| {
            self.dependencies().get::<crate::sampling::SamplerDependency>().map(|sampler| sampler.0.clone())
        })
    }

    /// The dispatcher running this call, for a tool that makes calls of its own (a script's tool
    /// calls, through [`Dispatcher::nested`](crate::Dispatcher::nested)); `None` for a context
    /// built by hand, or once the dispatcher is gone.
    pub fn dispatcher(&self) -> Option<crate::Dispatcher> {
        self.inner.dispatcher.as_ref()?.upgrade().map(crate::Dispatcher::from_inner)
    }

    /// The options of a call this call's tool makes itself: the same asker, person to ask,
    /// turn and sampler as this call, so that a nested call is asked about and answered as this
    /// one is. Its time limit is its own, and it takes no tasks (this call waits for it).
    pub fn nested_call_options(&self) -> crate::CallOptions {
        let inner = &self.inner;
        let sink = inner.caller_sink.clone().map(|caller| {
            Arc::new(NestedSink {
                caller,
                call_id: self.call_id().to_owned(),
                tool: self.tool_name().to_owned(),
            }) as Arc<dyn ContextSink>
        });
        crate::CallOptions {
            asker: inner.asker.clone(),
            user: inner.user.clone(),
            turn: inner.turn.clone(),
            sampler: inner.sampler.clone(),
            parent: Some(Arc::from(self.call_id())),
            sink,
            ..crate::CallOptions::default()
        }
    }

    /// Whether the caller takes over work this call leaves running ([`ToolContext::hand_off`]).
    pub fn takes_tasks(&self) -> bool {
        self.inner.tasks.is_some()
    }

    /// Asks the person at the host `message` with the form `schema` (see
    /// [`user_question`](crate::user_question)). Fails, with a message the model can act on,
    /// when nobody can answer (a headless host: no MCP client that answers questions, no
    /// application asker) or asking failed.
    pub async fn ask_user(&self, message: &str, schema: &Value) -> Result<UserAnswer, ToolError> {
        let Some(asker) = self.user_asker() else {
            return Err(ToolError::execution(
                "Nobody can answer a question here: this host runs without a person to ask (no MCP client that \
                 answers questions, no asker set up by the application). Decide with what you know and say what you \
                 assumed, or stop and say what you need to know.",
            ));
        };
        asker.ask(message, schema).await.map_err(|why| {
            ToolError::execution(format!(
                "The question could not be put to the user: {why}. Decide with what you know and say what you \
                 assumed, or stop and say what you need to know."
            ))
        })
    }

    /// The screen that the paths this call finds by itself (the files a search opens, the
    /// entries a walk lists) must pass: the permission hook's deny and ask rules for them,
    /// compiled once. A path it stops is left out, and the result says how many were.
    pub fn path_screen(&self) -> PathScreen {
        self.inner.shared.permissions.path_screen(self.tool_name())
    }

    /// Reports progress to the event stream.
    pub fn progress(&self, update: Progress) {
        for sink in &self.inner.sinks {
            sink.progress(self.call_id(), self.tool_name(), update.clone());
        }
    }

    /// Logs `data` at `level` for whoever follows the call (an MCP client that set a logging
    /// level at or below it gets it as `notifications/message`); `logger` names the part of the
    /// tool that logs.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: impl Into<Value>) {
        let data = data.into();
        for sink in &self.inner.sinks {
            sink.log(self.call_id(), self.tool_name(), level, logger, &data);
        }
    }

    /// Reports a title and UI metadata to the event stream.
    pub fn metadata(&self, title: Option<String>, metadata: Value) {
        for sink in &self.inner.sinks {
            sink.metadata(self.call_id(), self.tool_name(), title.clone(), metadata.clone());
        }
    }
}

/// Asks a call's permission hook from any task, with the asker the call runs with (see
/// [`ToolContext::asker`]). Cheap to clone.
#[derive(Clone)]
pub struct CallAsker {
    tool_name: Arc<str>,
    call_id: Arc<str>,
    asker: Option<Arc<dyn PermissionHook>>,
    permissions: Arc<dyn PermissionHook>,
}

impl fmt::Debug for CallAsker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallAsker")
            .field("tool_name", &self.tool_name)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl CallAsker {
    /// Asks as [`ToolContext::ask`] does, from whatever task this runs in.
    pub async fn ask(&self, request: PermissionRequest) -> Result<(), ToolError> {
        ask_hook(&*self.permissions, self.asker.as_ref(), &self.tool_name, &self.call_id, request).await
    }
}

/// `request`, from the call `call_id` of `tool`, answered by `permissions` (with `asker` for the
/// person behind the call): a denial becomes a permission-denied error carrying the reason.
async fn ask_hook(
    permissions: &dyn PermissionHook,
    asker: Option<&Arc<dyn PermissionHook>>,
    tool: &str,
    call_id: &str,
    mut request: PermissionRequest,
) -> Result<(), ToolError> {
    tool.clone_into(&mut request.tool);
    call_id.clone_into(&mut request.call_id);
    request.asker = asker.cloned();
    match permissions.decide(&request).await {
        PermissionDecision::Allow => Ok(()),
        PermissionDecision::Deny { reason } => Err(ToolError::permission_denied(format!(
            "Permission denied ({}): {reason}",
            request.description
        ))),
    }
}

/// The empty dependency set, shared by every context built without one (it cannot change).
fn no_dependencies() -> Arc<Dependencies> {
    static EMPTY: OnceLock<Arc<Dependencies>> = OnceLock::new();
    EMPTY.get_or_init(Arc::default).clone()
}

/// [`DefaultPermissions`], shared by every context built without a hook (it holds no state).
fn default_permissions() -> Arc<dyn PermissionHook> {
    static DEFAULT: OnceLock<Arc<dyn PermissionHook>> = OnceLock::new();
    DEFAULT.get_or_init(|| Arc::new(DefaultPermissions)).clone()
}

fn missing_dependency<T>(tool: &str) -> ToolError {
    ToolError::execution(format!(
        "the tool `{tool}` is not configured correctly on this system (a dependency is missing); this is not caused by the arguments"
    ))
    .with_source(MissingDependency(type_name::<T>()))
}

#[derive(Debug)]
struct MissingDependency(&'static str);

impl fmt::Display for MissingDependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no dependency of type `{}` is registered", self.0)
    }
}

impl std::error::Error for MissingDependency {}

impl fmt::Debug for ContextBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextBuilder")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("session_id", &self.session_id)
            .field("deadline", &self.deadline)
            .field("time_limit", &self.time_limit)
            .finish_non_exhaustive()
    }
}

/// Builds a [`ToolContext`]; dispatchers make one per call, tests make them by hand.
pub struct ContextBuilder {
    call_id: String,
    tool_name: String,
    cancel: Option<CancellationToken>,
    deadline: Option<Instant>,
    time_limit: Option<Duration>,
    sinks: Vec<Arc<dyn ContextSink>>,
    truncation: TruncationLimits,
    session_id: Option<String>,
    deps: Option<Arc<Dependencies>>,
    session: Option<SessionState>,
    permissions: Option<Arc<dyn PermissionHook>>,
    asker: Option<Arc<dyn PermissionHook>>,
    user: Option<Arc<dyn UserAsker>>,
    turn: Option<Arc<str>>,
    tasks: Option<Arc<dyn TaskTaker>>,
    sampler: Option<Arc<dyn Sampler>>,
}

impl ContextBuilder {
    /// Sets the call id.
    pub fn call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = call_id.into();
        self
    }

    /// Sets the session id.
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Sets the cancellation token (default: a fresh one).
    pub fn cancellation_token(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Sets the deadline.
    pub fn deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets the time limit the deadline comes from.
    pub fn time_limit(mut self, limit: Option<Duration>) -> Self {
        self.time_limit = limit;
        self
    }

    /// Sets the dependencies.
    pub fn dependencies(mut self, deps: Arc<Dependencies>) -> Self {
        self.deps = Some(deps);
        self
    }

    /// Sets the session state.
    pub fn session(mut self, session: SessionState) -> Self {
        self.session = Some(session);
        self
    }

    /// Sets the permission hook (default: [`DefaultPermissions`]).
    pub fn permissions(mut self, hook: Arc<dyn PermissionHook>) -> Self {
        self.permissions = Some(hook);
        self
    }

    /// Sets who answers for the person behind the call (see
    /// [`CallOptions::asker`](crate::CallOptions)).
    pub fn asker(mut self, asker: Arc<dyn PermissionHook>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// Sets who answers the call's questions (see [`CallOptions::user`](crate::CallOptions)).
    pub fn user(mut self, user: Arc<dyn UserAsker>) -> Self {
        self.user = Some(user);
        self
    }

    /// Sets the turn the call belongs to (see [`CallOptions::turn`](crate::CallOptions)).
    pub fn turn(mut self, turn: impl Into<Arc<str>>) -> Self {
        self.turn = Some(turn.into());
        self
    }

    /// Sets who takes over work the call leaves running (see
    /// [`CallOptions::tasks`](crate::CallOptions)).
    pub fn tasks(mut self, tasks: Arc<dyn TaskTaker>) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// Sets who samples for the call (see [`CallOptions::sampler`](crate::CallOptions)).
    pub fn sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// Adds a sink for progress and metadata updates.
    pub fn sink(mut self, sink: Arc<dyn ContextSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Sets the truncation limits in force for the call (default: [`TruncationLimits::default`]).
    pub fn truncation(mut self, limits: TruncationLimits) -> Self {
        self.truncation = limits;
        self
    }

    /// Finishes the context.
    pub fn build(self) -> ToolContext {
        let shared = Arc::new(Shared {
            session_id: self.session_id.unwrap_or_default(),
            deps: self.deps.unwrap_or_else(no_dependencies),
            session: self.session.unwrap_or_default(),
            permissions: self.permissions.unwrap_or_else(default_permissions),
        });
        ToolContext {
            inner: Arc::new(Inner {
                ids: Ids::Own { call_id: self.call_id, tool_name: self.tool_name },
                cancel: CallCancel::Given(self.cancel.unwrap_or_default()),
                deadline: self.deadline,
                time_limit: self.time_limit,
                sinks: self.sinks,
                caller_sink: None,
                truncation: self.truncation,
                shared,
                asker: self.asker,
                user: self.user,
                turn: self.turn,
                tasks: self.tasks,
                sampler: self.sampler,
                dispatcher: None,
            }),
        }
    }
}

#[cfg(test)]
mod session_state_tests {
    use super::SessionState;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Holds the state it lives in, as a background command's proxy does through its call's
    /// context, and says when it is dropped.
    struct Cycle {
        _state: SessionState,
        dropped: Arc<AtomicBool>,
    }

    impl Drop for Cycle {
        fn drop(&mut self) {
            self.dropped.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn clear_drops_a_value_that_holds_its_own_state() {
        let state = SessionState::new();
        let dropped = Arc::new(AtomicBool::new(false));
        state.get_or_insert_with(|| Cycle { _state: state.clone(), dropped: dropped.clone() });
        drop(state.clone());
        assert!(!dropped.load(Ordering::SeqCst));
        state.clear();
        assert!(dropped.load(Ordering::SeqCst), "clear kept a value alive");
        assert!(state.get::<Cycle>().is_none());
        // A later call starts afresh.
        assert_eq!(*state.get_or_insert_with(|| 7u8), 7);
    }
}

#[cfg(test)]
mod call_asker_tests {
    use super::{CallAsker, SessionState, ToolContext};
    use crate::permission::{PermissionDecision, PermissionFn, PermissionKind, PermissionRequest};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A background command's proxy: kept in the session state, holding its call's asker.
    struct Proxy {
        asker: CallAsker,
        dropped: Arc<AtomicBool>,
    }

    impl Drop for Proxy {
        fn drop(&mut self) {
            self.dropped.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn an_asker_kept_in_the_session_state_does_not_keep_that_state_alive() {
        let state = SessionState::new();
        let hook = PermissionFn(|request: PermissionRequest| async move {
            match (request.tool.as_str(), request.call_id.as_str()) {
                ("bash", "call-7") => PermissionDecision::Allow,
                (tool, call) => PermissionDecision::Deny { reason: format!("asked as {tool} {call}") },
            }
        });
        let ctx = ToolContext::builder("bash")
            .call_id("call-7")
            .session(state.clone())
            .permissions(Arc::new(hook))
            .build();
        let dropped = Arc::new(AtomicBool::new(false));
        let proxy = state.get_or_insert_with(|| Proxy { asker: ctx.asker(), dropped: dropped.clone() });
        // It still asks, with the call's ids, after the call's context is gone.
        drop(ctx);
        let asked = proxy
            .asker
            .ask(PermissionRequest::new(PermissionKind::Other { name: "crates.io".into() }, "crates.io"))
            .await;
        assert!(asked.is_ok(), "{asked:?}");
        drop(proxy);
        drop(state);
        assert!(dropped.load(Ordering::SeqCst), "the session state was kept alive by its own value");
    }
}
