//! The dispatcher: runs one call or a model turn's batch under the parallel policy, with hooks,
//! timeouts, cancellation, panic isolation and events.

mod cancel;
mod gate;
mod messages;
mod record;
mod repeat;
mod run;

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::call::{Arguments, ToolCall, ToolResult};
use crate::context::{ContextSink, Dependencies, SessionState, Shared};
use crate::error::ToolError;
use crate::events::EventSink;
use crate::hooks::{AfterHook, BeforeHook};
use crate::output_store::OutputStore;
use crate::permission::{DefaultPermissions, PermissionHook};
use crate::registry::Registry;
use crate::truncate::TruncationLimits;

use record::{Outcome, Pending};

/// What the repeat guard does when the same call comes `threshold` times in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepeatAction {
    /// Ask the permission hook with a `RepeatedCall` request (the default hook refuses).
    #[default]
    Ask,
    /// Refuse the call with a permission-denied result.
    Refuse,
}

/// Guards against a model looping: the same tool with the same arguments, many times in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatGuard {
    /// How many identical calls in a row trigger the guard (counting the current one); 0 turns
    /// the guard off. Default: 3.
    pub threshold: u32,
    /// What happens from that call on. Default: [`RepeatAction::Ask`].
    pub action: RepeatAction,
}

impl Default for RepeatGuard {
    fn default() -> Self {
        RepeatGuard { threshold: 3, action: RepeatAction::Ask }
    }
}

impl RepeatGuard {
    /// No repeat guard.
    pub const DISABLED: RepeatGuard = RepeatGuard { threshold: 0, action: RepeatAction::Ask };

    /// Triggers at `threshold` identical calls in a row with `action`.
    pub fn new(threshold: u32, action: RepeatAction) -> Self {
        RepeatGuard { threshold, action }
    }
}

/// Options for one call.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Time limit for this call; wins over the tool's and the dispatcher's.
    pub timeout: Option<Duration>,
    /// Who answers for the person behind this call when a permission hook has nobody of its
    /// own to ask (an MCP server's client, through elicitation). The call's tool reaches it
    /// through [`ToolContext::ask`](crate::ToolContext::ask) from any task, and hooks read it as
    /// [`PermissionRequest::asker`](crate::PermissionRequest::asker) and
    /// [`HookCall::asker`](crate::HookCall::asker).
    pub asker: Option<Arc<dyn PermissionHook>>,
    /// Where this call's progress and metadata also go, besides the dispatcher's event sink (an
    /// MCP server's progress notifications).
    pub sink: Option<Arc<dyn ContextSink>>,
    /// Who answers the questions the call's tool puts to the person behind the call
    /// ([`user_question`](crate::user_question)): an MCP server's client, through elicitation.
    pub user: Option<Arc<dyn crate::user_question::UserAsker>>,
    /// The turn this call belongs to: an id the host gives every call of one model message
    /// (any text; the host chooses it, and it is shown as given). The call's tool reads it as
    /// [`ToolContext::turn_id`](crate::ToolContext::turn_id).
    pub turn: Option<Arc<str>>,
    /// Who takes over the rest of the call's work when its tool would leave it running in the
    /// background ([`handoff`](crate::handoff)): an MCP server whose client supports tasks.
    pub tasks: Option<Arc<dyn crate::handoff::TaskTaker>>,
    /// Who asks a model for completions for the call ([`sampling`](crate::sampling)): an MCP
    /// server's client that declared `sampling`.
    pub sampler: Option<Arc<dyn crate::sampling::Sampler>>,
    /// The call that makes this one (a script of code mode calling a tool): its id, given in
    /// this call's `queued` event ([`ToolEvent::Queued`](crate::events::ToolEvent::Queued)).
    pub parent: Option<Arc<str>>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("asker", &self.asker.is_some())
            .field("sink", &self.sink.is_some())
            .field("user", &self.user.is_some())
            .field("turn", &self.turn)
            .field("tasks", &self.tasks.is_some())
            .field("sampler", &self.sampler.is_some())
            .field("parent", &self.parent)
            .finish()
    }
}

impl CallOptions {
    /// Options with a time limit.
    pub fn with_timeout(timeout: Duration) -> Self {
        CallOptions { timeout: Some(timeout), ..CallOptions::default() }
    }

    /// These options with `asker` answering for the person behind the call.
    pub fn asker(mut self, asker: Arc<dyn PermissionHook>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// These options with `user` answering the questions of the call's tool.
    pub fn user(mut self, user: Arc<dyn crate::user_question::UserAsker>) -> Self {
        self.user = Some(user);
        self
    }

    /// These options with the call in turn `turn`.
    pub fn turn(mut self, turn: impl Into<Arc<str>>) -> Self {
        self.turn = Some(turn.into());
        self
    }

    /// These options with `sink` receiving the call's progress and metadata.
    pub fn sink(mut self, sink: Arc<dyn ContextSink>) -> Self {
        self.sink = Some(sink);
        self
    }
}

type SkipCheck = dyn Fn() -> bool + Send + Sync;

/// Finds the calls of exclusive tools that only read, so that they run beside parallel calls
/// (see [`DispatcherBuilder::read_only_calls`]).
pub trait ReadOnlyCalls: Send + Sync + 'static {
    /// Whether this call of `tool` with these validated `arguments` only reads.
    fn runs_read_only(&self, tool: &str, arguments: &serde_json::Value) -> bool;
}

/// How long a stopped call may take to return its partial result, unless configured: long
/// enough for a tool that watches its token to kill what it started and hand back its output,
/// short enough that a stopped call comes back at once for the person waiting on it.
pub(crate) const DEFAULT_CANCEL_GRACE: Duration = Duration::from_millis(200);

/// Configures a [`Dispatcher`].
#[must_use]
pub struct DispatcherBuilder {
    registry: Arc<Registry>,
    /// What every call's context shares, but the session state, which the builder holds apart.
    deps: Dependencies,
    permissions: Arc<dyn PermissionHook>,
    session_id: String,
    session: SessionState,
    max_concurrency: Option<usize>,
    /// `None` until set: the default guard, unless the dispatcher's user has another default.
    repeat: Option<RepeatGuard>,
    config: Config,
}

/// The settings a call's stages read: its hooks, limits, output store and event sink. A
/// dispatcher derived from another (another session, another registry) has the same.
#[derive(Clone)]
struct Config {
    before: Vec<Arc<dyn BeforeHook>>,
    after: Vec<Arc<dyn AfterHook>>,
    default_timeout: Option<Duration>,
    cancel_grace: Duration,
    truncation: TruncationLimits,
    store: Option<Arc<OutputStore>>,
    events: Option<Arc<dyn EventSink>>,
    skip: Option<Arc<SkipCheck>>,
    /// Finds calls of exclusive tools that only read (a read-only shell command).
    read_only_calls: Option<Arc<dyn ReadOnlyCalls>>,
}

impl fmt::Debug for DispatcherBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DispatcherBuilder")
            .field("registry", &self.registry)
            .field("default_timeout", &self.config.default_timeout)
            .field("max_concurrency", &self.max_concurrency)
            .field("repeat", &self.repeat)
            .field("truncation", &self.config.truncation)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl DispatcherBuilder {
    /// Replaces all dependencies.
    pub fn dependencies(mut self, deps: Dependencies) -> Self {
        self.deps = deps;
        self
    }

    /// Registers (or overrides) one dependency, fetched by tools as `Dep<T>` or `ctx.dep::<T>()`.
    pub fn dependency<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.deps.insert(value);
        self
    }

    /// Registers (or overrides) one dependency shared with others, as a `T`: a dependency is
    /// looked up by its type, so an `Arc<T>` given to [`DispatcherBuilder::dependency`] would be
    /// found as `Arc<T>`.
    pub fn dependency_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.deps.insert_arc(value);
        self
    }

    /// Sets the permission hook that answers `ToolContext::ask` and the repeat guard
    /// (default: [`DefaultPermissions`]); a shared hook is an `Arc` of one.
    pub fn permissions(mut self, hook: impl PermissionHook) -> Self {
        self.permissions = Arc::new(hook);
        self
    }

    /// Lets calls of exclusive tools that `check` finds only read (a read-only shell command)
    /// run beside parallel calls, as a `parallel` tool's calls do. A permission policy that
    /// classifies commands installs its own.
    pub fn read_only_calls(mut self, check: Arc<dyn ReadOnlyCalls>) -> Self {
        self.config.read_only_calls = Some(check);
        self
    }

    /// Adds a hook that runs before each call's tool, after the ones already added.
    pub fn before_hook(mut self, hook: impl BeforeHook) -> Self {
        self.config.before.push(Arc::new(hook));
        self
    }

    /// Adds a hook that runs after each call's tool, after the ones already added.
    pub fn after_hook(mut self, hook: impl AfterHook) -> Self {
        self.config.after.push(Arc::new(hook));
        self
    }

    /// How long a cancelled or timed-out call may take to hand back what it has (default
    /// 200 ms). Its token is cancelled first; a tool that watches it
    /// (like `bash`) returns its partial output, which becomes the result. A tool still running
    /// after the grace is dropped (with it, what it started) and the result says the call was
    /// cancelled or timed out, naming the time limit. So a stopped call returns at most this long
    /// after the cancellation or the time limit.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.config.cancel_grace = grace;
        self
    }

    /// The time limit of calls whose tool and options set none.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.config.default_timeout = Some(timeout);
        self
    }

    /// Runs at most `limit` calls at once (at least 1).
    pub fn max_concurrency(mut self, limit: usize) -> Self {
        self.max_concurrency = Some(limit.max(1));
        self
    }

    /// Configures the repeat guard (default: ask after 3 identical calls in a row; off in an
    /// MCP server, whose clients repeat calls for good reasons).
    pub fn repeat_guard(mut self, guard: RepeatGuard) -> Self {
        self.repeat = Some(guard);
        self
    }

    /// Uses `guard` unless [`DispatcherBuilder::repeat_guard`] was called: a server's default
    /// that its user's choice overrides.
    pub fn repeat_guard_unless_set(mut self, guard: RepeatGuard) -> Self {
        self.repeat.get_or_insert(guard);
        self
    }

    /// The truncation limits of tools whose policy sets none (default: 1990 lines, 47232 bytes,
    /// keep the head).
    pub fn truncation_defaults(mut self, limits: TruncationLimits) -> Self {
        self.config.truncation = limits;
        self
    }

    /// Saves the full text of every truncated output to `store` (or a shared `Arc` of one), so
    /// the model can read it back.
    pub fn output_store(mut self, store: impl Into<Arc<OutputStore>>) -> Self {
        self.config.store = Some(store.into());
        self
    }

    /// Sets the session id that tools and hooks see.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = id.into();
        self
    }

    /// Sets the session state shared by every call of this dispatcher.
    pub fn session_state(mut self, state: SessionState) -> Self {
        self.session = state;
        self
    }

    /// Sends lifecycle events to `sink` (for example an `mpsc::UnboundedSender<ToolEvent>`, or
    /// a shared `Arc` of a sink).
    pub fn events(mut self, sink: impl EventSink) -> Self {
        self.config.events = Some(Arc::new(sink));
        self
    }

    /// Consulted before each call starts; once it returns `true`, that call and the rest of the
    /// batch are skipped (for example because the user typed a new message).
    pub fn skip_check(mut self, check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.config.skip = Some(Arc::new(check));
        self
    }

    /// Builds the dispatcher.
    pub fn build(self) -> Dispatcher {
        Dispatcher {
            inner: Arc::new_cyclic(|me| Inner {
                me: me.clone(),
                registry: self.registry,
                shared: Arc::new(Shared {
                    session_id: self.session_id,
                    deps: Arc::new(self.deps),
                    session: self.session,
                    permissions: self.permissions,
                }),
                gate: gate::Gate::default(),
                cap: self.max_concurrency.map(|n| Arc::new(Semaphore::new(n))),
                outer: None,
                repeat: self.repeat.unwrap_or_default(),
                last_call: Mutex::new(None),
                config: self.config,
            }),
        }
    }
}

/// A dispatcher's parallel gate, and a nested one's caller's.
type Gates = (gate::Gate, Option<Arc<gate::Outer>>);

pub(crate) struct Inner {
    /// This dispatcher, for the contexts of its calls ([`ToolContext::dispatcher`]).
    ///
    /// [`ToolContext::dispatcher`]: crate::ToolContext::dispatcher
    me: Weak<Inner>,
    registry: Arc<Registry>,
    /// What every call's context shares: session id and state, dependencies, permission hook.
    shared: Arc<Shared>,
    /// The parallel gate ([`gate`]) and the concurrency cap.
    gate: gate::Gate,
    cap: Option<Arc<Semaphore>>,
    /// For a nested dispatcher, the changes lock of the one it was made from
    /// ([`Dispatcher::detach`]).
    outer: Option<Arc<gate::Outer>>,
    /// The repeat guard ([`repeat`]) and the call it compares the next one with.
    repeat: RepeatGuard,
    last_call: Mutex<Option<repeat::LastCall>>,
    /// What the stages read ([`run`]).
    config: Config,
}

/// Runs tool calls: lookup, validation, the parallel/exclusive gate, hooks, timeouts,
/// cancellation, panic isolation, truncation and events. Cheap to clone; clones share the gate,
/// the session and the repeat guard.
///
/// The gate is one `RwLock` per dispatcher: a `parallel` tool's call holds a read guard, an
/// [`ungated`](crate::ToolSpec::ungated) one nothing, any other a write guard. A batch takes
/// the guards itself, one call after the other in the order of the calls, and moves each into
/// its call's task; since the lock is fair, an exclusive call
/// starts only after every earlier call has finished, and no later call starts before it has
/// finished. A call's `started` event is emitted once it holds its guard and its `finished`
/// event before it lets go, so the event stream alone shows the gate at work.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("registry", &self.inner.registry)
            .field("default_timeout", &self.inner.config.default_timeout)
            .field("repeat", &self.inner.repeat)
            .field("session_id", &self.inner.shared.session_id)
            .finish_non_exhaustive()
    }
}

/// Why a batch starts no more calls: every later call gets this result.
enum BatchStop {
    Cancelled,
    Skipped,
}

enum Slotted {
    Done(Box<Outcome>),
    Running(JoinHandle<Outcome>, Arc<Pending>),
}

impl Dispatcher {
    /// A dispatcher over `registry` with default settings.
    pub fn new(registry: impl Into<Arc<Registry>>) -> Self {
        Self::builder(registry).build()
    }

    /// Starts configuring a dispatcher over `registry`.
    pub fn builder(registry: impl Into<Arc<Registry>>) -> DispatcherBuilder {
        DispatcherBuilder {
            registry: registry.into(),
            deps: Dependencies::new(),
            permissions: Arc::new(DefaultPermissions),
            session_id: String::new(),
            session: SessionState::new(),
            max_concurrency: None,
            repeat: None,
            config: Config {
                before: Vec::new(),
                after: Vec::new(),
                default_timeout: None,
                cancel_grace: DEFAULT_CANCEL_GRACE,
                truncation: TruncationLimits::default(),
                store: None,
                events: None,
                skip: None,
                read_only_calls: None,
            },
        }
    }

    /// The registry calls are looked up in.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// The dependencies tools receive.
    pub fn dependencies(&self) -> &Dependencies {
        &self.inner.shared.deps
    }

    /// The session state shared by every call.
    pub fn session(&self) -> &SessionState {
        &self.inner.shared.session
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.inner.shared.session_id
    }

    /// A dispatcher for another session of the same application: the same registry,
    /// dependencies, hooks, limits, output store, event sink and concurrency cap, with its own
    /// session id, an empty session state, its own parallel gate and its own repeat guard (one
    /// client's exclusive call does not wait for another client's).
    pub fn new_session(&self, session_id: String) -> Dispatcher {
        let shared = &self.inner.shared;
        let shared = Arc::new(Shared {
            session_id,
            deps: shared.deps.clone(),
            session: SessionState::new(),
            permissions: shared.permissions.clone(),
        });
        self.derive(self.inner.registry.clone(), shared, (gate::Gate::default(), None))
    }

    /// The same dispatcher over another registry: the session (id and state), dependencies,
    /// hooks, limits, output store, event sink, parallel gate and concurrency cap are shared
    /// with `self`, so a call on either waits for the other's exclusive calls. The repeat guard
    /// starts afresh. Calls already running on `self` finish on its registry.
    pub fn with_registry(&self, registry: impl Into<Arc<Registry>>) -> Dispatcher {
        let gates = (self.inner.gate.clone(), self.inner.outer.clone());
        self.derive(registry.into(), self.inner.shared.clone(), gates)
    }

    /// A dispatcher with `self`'s hooks, limits, output store, event sink and concurrency cap
    /// over the given registry, session and parallel gates, with a fresh repeat guard.
    fn derive(&self, registry: Arc<Registry>, shared: Arc<Shared>, gates: Gates) -> Dispatcher {
        self.derive_capped(registry, shared, gates, self.inner.cap.clone())
    }

    fn derive_capped(
        &self,
        registry: Arc<Registry>,
        shared: Arc<Shared>,
        (gate, outer): Gates,
        cap: Option<Arc<Semaphore>>,
    ) -> Dispatcher {
        let inner = &self.inner;
        Dispatcher {
            inner: Arc::new_cyclic(|me| Inner {
                me: me.clone(),
                registry,
                shared,
                gate,
                cap,
                outer,
                repeat: inner.repeat,
                last_call: Mutex::new(None),
                config: inner.config.clone(),
            }),
        }
    }

    /// A dispatcher for the calls that a running call makes itself (a script's tool calls) over
    /// `registry`: the same session (id and state), dependencies, permission hook, hooks, limits,
    /// output store and event sink as `self`, so that each nested call is validated, asked
    /// about, hooked, limited, truncated and reported as a model's call is. It has a parallel
    /// gate and a repeat guard of its own and no concurrency cap: the running call holds its
    /// guard and permit of `self`, which its own calls would otherwise wait for forever. Among
    /// themselves, nested calls keep the parallel policy: `parallel` tools overlap, others run
    /// one at a time. A call that returns while its calls go on (a script that goes on in the
    /// background) says so with [`Dispatcher::detach`] before it returns.
    ///
    /// A running call reaches its dispatcher with [`ToolContext::dispatcher`], and passes on its
    /// asker with [`ToolContext::nested_call_options`].
    ///
    /// [`ToolContext::dispatcher`]: crate::ToolContext::dispatcher
    /// [`ToolContext::nested_call_options`]: crate::ToolContext::nested_call_options
    pub fn nested(&self, registry: impl Into<Arc<Registry>>) -> Dispatcher {
        let gates = (gate::Gate::default(), Some(Arc::new(self.inner.gate.outer())));
        self.derive_capped(registry.into(), self.inner.shared.clone(), gates, None)
    }

    /// Says that the call that made this [nested](Dispatcher::nested) dispatcher returns while
    /// its calls go on (a script left running in the background): from now on each call it
    /// starts that is exclusive also takes turns with the exclusive calls of the dispatcher it
    /// was made from (a model's `edit`, `write`, `bash`): it waits for the one running, and the
    /// next waits for it. It never waits for that dispatcher's gate itself, where a call that
    /// waits for the nested calls' end (`code_output`) may hold a turn; calls of `parallel`
    /// tools on both sides still overlap. Among themselves, the nested calls keep their own
    /// gate. A call already running goes on, as a command that went to the background does. No
    /// effect on a dispatcher not made by [`Dispatcher::nested`].
    pub fn detach(&self) {
        if let Some(outer) = &self.inner.outer {
            outer.detached.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> Dispatcher {
        Dispatcher { inner }
    }

    /// How long a stopped call may take to hand back what it has
    /// ([`DispatcherBuilder::cancel_grace`]).
    pub fn cancel_grace(&self) -> Duration {
        self.inner.config.cancel_grace
    }

    /// Runs one call. Every failure, including a `Fatal` error, comes back as an error result;
    /// use [`Dispatcher::try_run`] to receive a `Fatal` error as `Err`.
    pub async fn run(&self, call: ToolCall, cancel: CancellationToken) -> ToolResult {
        self.run_inline(call, CallOptions::default(), cancel).await.result
    }

    /// Runs one call with options (such as a per-call timeout).
    pub async fn run_with(
        &self,
        call: ToolCall,
        options: CallOptions,
        cancel: CancellationToken,
    ) -> ToolResult {
        self.run_inline(call, options, cancel).await.result
    }

    /// Runs one call; a `Fatal` error escapes as `Err`, every other failure is an error result.
    pub async fn try_run(
        &self,
        call: ToolCall,
        options: CallOptions,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let outcome = self.run_inline(call, options, cancel).await;
        match outcome.fatal {
            Some(error) => Err(error),
            None => Ok(outcome.result),
        }
    }

    /// Runs one call in the caller's task: the tool's panics are caught where it is polled, so
    /// it needs no task of its own. The call's state is in this future, not on the heap, since
    /// most callers await it where they made it; one that moves it around (into a task, through
    /// wrappers) boxes it first, as an MCP server does.
    /// If the caller drops the future, the call's token is cancelled (so work the tool started
    /// learns it at once) and its finished event still goes out, as for a call in a task.
    async fn run_inline(&self, call: ToolCall, options: CallOptions, cancel: CancellationToken) -> Outcome {
        let inner = &self.inner;
        let (pending, arguments) = inner.queue(0, call, options);
        let ready = match inner.prepare(pending, arguments) {
            Ok(ready) => ready,
            Err(outcome) => return *outcome,
        };
        let mut dropped = FinishOnDrop { inner, pending: Some(ready.pending.clone()) };
        let slot = match inner.try_acquire(ready.turn()) {
            Some(slot) => Some(slot),
            None => inner.acquire(ready.turn(), &cancel).await,
        };
        let outcome = match slot {
            None => inner.cancelled_before_start(&ready.pending),
            Some(slot) if inner.should_skip() => {
                drop(slot);
                inner.skipped(&ready.pending)
            }
            Some(slot) => {
                let outcome = inner.run_call(ready, cancel).await;
                drop(slot);
                outcome
            }
        };
        dropped.pending = None;
        outcome
    }

    /// Runs the calls of one model turn and returns exactly one result per call, in the order of
    /// the calls. Only a `Fatal` error escapes as `Err`; it cancels the calls still running.
    pub fn run_batch(
        &self,
        calls: Vec<ToolCall>,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Vec<ToolResult>, ToolError>> + Send + '_ {
        self.run_batch_with(calls.into_iter().map(|call| (call, CallOptions::default())), cancel)
    }

    /// [`Dispatcher::run_batch`] with options per call.
    pub async fn run_batch_with(
        &self,
        calls: impl IntoIterator<Item = (ToolCall, CallOptions)>,
        cancel: CancellationToken,
    ) -> Result<Vec<ToolResult>, ToolError> {
        let inner = &self.inner;
        let mut calls = calls.into_iter().peekable();
        let first = calls.next();
        // A lone call runs in this task, as `run` does: a task of its own would buy nothing.
        if calls.peek().is_none() {
            let Some((call, options)) = first else { return Ok(Vec::new()) };
            let outcome = self.run_inline(call, options, cancel).await;
            return match outcome.fatal {
                Some(error) => Err(error),
                None => Ok(vec![outcome.result]),
            };
        }
        // Cancelled by the caller's token, by a fatal error, or when this future is dropped.
        let batch = cancel.child_token();
        let _cancel_on_drop = batch.clone().drop_guard();

        let pending: Vec<(Arc<Pending>, Arguments)> = first
            .into_iter()
            .chain(calls)
            .enumerate()
            .map(|(i, (call, options))| inner.queue(i, call, options))
            .collect();
        let mut slots = Vec::with_capacity(pending.len());
        let mut stop = None;
        for (pending, arguments) in pending {
            if stop.is_none() && batch.is_cancelled() {
                stop = Some(BatchStop::Cancelled);
            }
            match stop {
                Some(BatchStop::Cancelled) => {
                    slots.push(Slotted::Done(Box::new(inner.cancelled_before_start(&pending))));
                    continue;
                }
                Some(BatchStop::Skipped) => {
                    slots.push(Slotted::Done(Box::new(inner.skipped(&pending))));
                    continue;
                }
                None => {}
            }
            let ready = match inner.prepare(pending, arguments) {
                Ok(ready) => ready,
                Err(outcome) => {
                    slots.push(Slotted::Done(outcome));
                    continue;
                }
            };
            // Guards are taken here, in the order of the calls, and moved into each call's task:
            // taking them inside the tasks would let the runtime reorder them.
            // A guard may come free only because a cancelled call let go of it: check the token
            // after taking it too.
            let slot = match inner.try_acquire(ready.turn()) {
                Some(slot) => Some(slot),
                None => inner.acquire(ready.turn(), &batch).await,
            };
            let slot = match slot {
                Some(slot) if !batch.is_cancelled() => slot,
                _ => {
                    stop = Some(BatchStop::Cancelled);
                    slots.push(Slotted::Done(Box::new(inner.cancelled_before_start(&ready.pending))));
                    continue;
                }
            };
            if inner.should_skip() {
                drop(slot);
                stop = Some(BatchStop::Skipped);
                slots.push(Slotted::Done(Box::new(inner.skipped(&ready.pending))));
                continue;
            }
            let pending = ready.pending.clone();
            let task = run::execute(inner.clone(), ready, slot, batch.clone());
            slots.push(Slotted::Running(tokio::spawn(task), pending));
        }

        let mut results = Vec::with_capacity(slots.len());
        let mut fatal = None;
        for slot in slots {
            let outcome = match slot {
                Slotted::Done(outcome) => *outcome,
                Slotted::Running(handle, pending) => match handle.await {
                    Ok(outcome) => outcome,
                    Err(error) => inner.task_failed(&pending, error),
                },
            };
            if fatal.is_none() {
                fatal = outcome.fatal;
            }
            results.push(outcome.result);
        }
        match fatal {
            Some(error) => Err(error),
            None => Ok(results),
        }
    }
}

/// Ends a call whose future was dropped with a cancelled result and its finished event.
struct FinishOnDrop<'a> {
    inner: &'a Inner,
    pending: Option<Arc<Pending>>,
}

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            self.inner.dropped(&pending);
        }
    }
}

impl Inner {
    fn should_skip(&self) -> bool {
        self.config.skip.as_ref().is_some_and(|check| check())
    }
}
