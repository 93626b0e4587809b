//! Tests of dispatch, the catalog and the provider renderings, one module a subject, in one test
//! binary.

mod catalog;
mod catalog_conversation;
mod dispatch;
mod provider_extras;
mod providers;
