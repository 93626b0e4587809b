//! The boxed future that the object-safe async traits (`Tool`, the hooks, permissions) return.
//!
//! A leaf module of its own, so the modules that share it need not import each other.

use std::future::Future;
use std::pin::Pin;

/// A boxed, `Send` future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
