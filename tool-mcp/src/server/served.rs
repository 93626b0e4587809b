//! What each session serves (its tool list and dispatcher), and replacing the registry of every
//! session of a server at once.

use std::sync::{Arc, Mutex, RwLock, Weak};

use rmcp::model::Tool;

use tool_core::Dispatcher;
use tool_core::Registry;
use tool_core::SessionState;

use super::tasks::SessionTasks;

/// The `tools/list` entries and the dispatcher that runs `tools/call`, always from the same
/// registry: a request reads both at once, so it never lists one registry and runs another.
pub(crate) struct Served {
    pub(crate) tools: Arc<Vec<Tool>>,
    pub(crate) dispatcher: Dispatcher,
}

/// One session's [`Served`], replaced as a whole. A request clones the `Arc` and lets go of the
/// lock at once, so a call in flight keeps the dispatcher it started on.
pub(crate) type Slot = Arc<RwLock<Arc<Served>>>;

pub(crate) fn current(slot: &Slot) -> Arc<Served> {
    slot.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The slots of every live session of a server and of its clones.
#[derive(Default)]
pub(crate) struct Sessions {
    slots: Mutex<Vec<Weak<RwLock<Arc<Served>>>>>,
}

impl Sessions {
    pub(crate) fn register(&self, served: Served) -> Slot {
        let slot = Arc::new(RwLock::new(Arc::new(served)));
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.push(Arc::downgrade(&slot));
        slot
    }

    /// A new session's slot, made from `from`'s current contents. Under the same lock as
    /// [`Sessions::replace`], so a session that starts during a replacement gets the new
    /// registry either way: from `from` already replaced, or replaced with the others.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn derive(&self, from: &Slot, make: impl FnOnce(&Served) -> Served) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let served = make(&current(from));
        let slot = Arc::new(RwLock::new(Arc::new(served)));
        // Sessions that ended are dropped here, so the list stays as long as the live ones.
        slots.retain(|slot| slot.strong_count() > 0);
        slots.push(Arc::downgrade(&slot));
        slot
    }

    /// Every live session serves `tools` and runs calls on `registry` from its next request on,
    /// keeping its own session state, gate and the rest of its dispatcher.
    pub(crate) fn replace(&self, tools: Vec<Tool>, registry: &Arc<Registry>) {
        let tools = Arc::new(tools);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.retain(|slot| slot.strong_count() > 0);
        for slot in slots.iter().filter_map(Weak::upgrade) {
            let mut served = slot.write().unwrap_or_else(|p| p.into_inner());
            let dispatcher = served.dispatcher.with_registry(registry.clone());
            *served = Arc::new(Served { tools: tools.clone(), dispatcher });
        }
    }
}

/// Ends one session when the last handle of its server is dropped (the client deleted it, it
/// stayed idle too long, or the server shut down): its tasks are cancelled and its session state
/// is cleared, which kills its background commands with every process they started.
///
/// Explicit, because dropping the dispatcher is not enough: a background command's network
/// proxy asks the client about hosts through the call's context, which holds the session state
/// that holds the command, so the state would outlive the session.
pub(crate) struct SessionEnd {
    pub(crate) state: SessionState,
    pub(crate) tasks: Arc<SessionTasks>,
}

impl Drop for SessionEnd {
    fn drop(&mut self) {
        self.tasks.end();
        self.state.clear();
    }
}
