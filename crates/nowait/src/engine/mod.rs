//! The async engine and its blocking front end: a ring per thread, futures
//! for any executor, and the threads and reactor tasks that wake them.
//! The design is described in [`Engine`]'s file (`engine/handle.rs`) and in
//! docs/ASYNC.md.

mod blocking_file;
mod engine_stats;
mod handle;
mod notifier;
mod op_table;
mod poller_thread;
mod read_at;
mod registry;
mod ring;
#[cfg(feature = "tokio")]
mod tokio_reactor;

pub use blocking_file::{block_on, BlockingFile, BlockingMany};
pub use engine_stats::{EngineStats, RingReport};
pub use handle::{Engine, EngineBuilder, EngineFile, DEFAULT_MAX_RINGS};
pub use notifier::{Notifier, PollerMode, TICK, WATCHDOG_TICK};
pub use read_at::{ManyItem, Next, ReadAt, ReadExactAt, ReadMany};
