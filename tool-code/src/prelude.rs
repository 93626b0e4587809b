//! The prelude (the script's globals, made from the host's functions): compiled to bytecode once
//! per process, loaded from it in each script's interpreter.
//!
//! Parsing and compiling its source took three quarters of a script's start (about 8 of 11
//! million instructions); reading the bytecode takes a small part of that. Loading bytecode is
//! `unsafe` in QuickJS (it trusts what it reads): the only bytes ever loaded are the ones this
//! module wrote, with the same interpreter, in the same process.
#![allow(unsafe_code)]

use std::sync::OnceLock;

use rquickjs::{Context, Ctx, Exception, Function, Module, Runtime, WriteOptions, promise::PromiseState};

/// The prelude's source: a module whose default export defines the globals and gives back the
/// host's functions; it does so once (a script that imports the module cannot run it again).
const SOURCE: &str = include_str!("prelude.js");

/// The module's name, in the interpreter's list of loaded modules and in its frames.
const NAME: &str = "prelude.js";

/// The prelude's function, loaded in `ctx` from the bytecode compiled at the process's first
/// script.
pub(crate) fn load<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let not_loaded =
        |why: &str| Exception::throw_internal(ctx, &format!("the prelude could not be loaded: {why}"));
    let bytes = bytecode().map_err(not_loaded)?;
    // SAFETY: `bytes` is what `Module::write` gave for the prelude (see `bytecode`), unchanged,
    // made by this build's interpreter in this process, and never freed. (This QuickJS copies
    // what it reads: its `JS_READ_OBJ_ROM_DATA` flag does nothing.)
    let module = unsafe { Module::load(ctx.clone(), bytes) }?;
    let (module, evaluated) = module.eval()?;
    // A module without `await` at its top level is evaluated at once.
    if evaluated.state() != PromiseState::Resolved {
        return Err(not_loaded("its evaluation did not end"));
    }
    module.get("default")
}

/// The prelude as bytecode, compiled at the first call in an interpreter of its own.
fn bytecode() -> Result<&'static [u8], &'static str> {
    static BYTECODE: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    let compiled = BYTECODE.get_or_init(|| {
        let runtime = Runtime::new().map_err(|e| e.to_string())?;
        // Its regular expressions are compiled with it: the full set of intrinsics.
        let context = Context::full(&runtime).map_err(|e| e.to_string())?;
        context.with(|ctx| {
            let compiled =
                Module::declare(ctx.clone(), NAME, SOURCE).and_then(|m| m.write(WriteOptions::default()));
            compiled.map_err(|e| match e {
                rquickjs::Error::Exception => ctx
                    .catch()
                    .as_exception()
                    .and_then(|e| e.message())
                    .unwrap_or_else(|| "an exception".into()),
                e => e.to_string(),
            })
        })
    });
    compiled.as_deref().map_err(String::as_str)
}
