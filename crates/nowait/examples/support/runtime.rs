//! The tokio runtime the examples compare on: multi-thread with 2 workers
//! (this machine's cores) or current-thread, with the reactor enabled.

/// A runtime with its I/O driver: `multi` = 2 workers, else current-thread.
pub fn tokio_runtime(multi: bool) -> tokio::runtime::Runtime {
    if multi {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
    }
    .expect("runtime")
}
