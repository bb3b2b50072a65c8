//! The run-file protocol of sublaunch, shared by the host (`sublaunch`) and the detached
//! runner (`sublaunch-shim`) without linking wasmtime into the runner.

#![warn(missing_docs)]

pub mod atomic;
