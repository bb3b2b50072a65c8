//! The planner engine: one wasmtime engine loading the sandboxed planner component
//! ([`planner`]), its precompiled-artifact cache ([`artifact_cache`]), the capabilities the
//! component gets ([`sandbox`]) and the limits of each call ([`limits`]).

pub mod artifact_cache;
pub mod limits;
pub mod planner;
pub mod sandbox;
pub mod session;
