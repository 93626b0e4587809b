//! Tests of the egress proxy and its settings, one module a subject, in one test binary.

mod manual_settings;
mod proxy;
mod tls;
