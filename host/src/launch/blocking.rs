//! Running synchronous run-file calls (locks, fsyncs, directory scans) off the runtime
//! threads (X2).

use std::io;

/// Runs `f` on tokio's blocking pool and returns its result; a panic inside `f` becomes an
/// `io::Error` rather than a crash of the caller.
pub(crate) async fn blocking<T, F>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(join) => Err(io::Error::other(format!("a blocking launch step failed: {join}"))),
    }
}

/// [`blocking`] for calls that cannot fail.
pub(crate) async fn blocking_value<T, F>(f: F) -> Option<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f).await.ok()
}
