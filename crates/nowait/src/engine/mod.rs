//! The async engine: a shareable handle ([`Engine`], `Clone + Send + Sync`)
//! that gives every thread reading through it a ring of its own, the files
//! read through it ([`EngineFile`]), their reads as futures ([`ReadAt`],
//! [`ReadMany`]) and the blocking front end over them ([`BlockingFile`]).
//!
//! It needs no runtime: any executor that hands a future a
//! [`std::task::Waker`] can drive it.
//!
//! # How a read travels
//!
//! * A thread's first read builds its **ring**: a [`crate::Queue`] of
//!   [`QueueBuilder::depth`](crate::QueueBuilder::depth) reads and a table
//!   of op states next to it (an op index is the read's `user_data`;
//!   nothing is allocated per read). A
//!   future takes the ring of the thread that first polls it and keeps it
//!   until its read is collected. Rings are locked one by one, never all at
//!   once: on the common path only the owning thread takes its ring's lock.
//! * A future's first `poll` tries a buffered read from the page cache with
//!   `preadv2(RWF_NOWAIT)` ([`EngineBuilder::queue`]): a hit is ready then
//!   and there, with no op and no lock. Otherwise it pushes its read, then
//!   reschedules its own task
//!   and returns `Pending`, so the reads of the other tasks the executor
//!   polls in the same tick join the ring. The next poll submits them all
//!   and reaps without waiting: with io_uring one `io_uring_enter(2)` for
//!   the batch. Reads served from the page cache complete inside that call
//!   (when the first poll did not already find them there); their futures
//!   collect them on their second poll without a system call.
//! * Every reap stores other ops' results in their op state and wakes their
//!   wakers *after the ring's lock is dropped*. A task that migrated to
//!   another thread collects from its read's ring all the same.
//! * Progress when every task is parked: the backend signals the ring's
//!   eventfd for every completion. Who waits on it is the [`Notifier`]: a
//!   task per ring on the tokio runtime's reactor (feature `tokio`), or the
//!   engine's poller thread, which also ticks backends that cannot signal,
//!   watches reactor-driven rings in case their runtime stops, and closes
//!   the rings of exited threads.
//!
//! # Cancellation
//!
//! Dropping a future whose read is in flight marks its op *abandoned*. The
//! queue keeps owning the buffer in its slot until the kernel's completion is
//! reaped (that is the queue's own invariant); whoever reaps it then drops
//! the buffer and frees the op. Nothing is handed out or freed before the
//! kernel is done with it.
//!
//! # Shutdown
//!
//! [`EngineFile`]s, and the futures made from them, hold the engine's rings
//! alive, so dropping every [`Engine`] handle while reads are in flight
//! loses nothing: those reads finish and are delivered. Reads made on an
//! [`EngineFile`] after its engine is gone fail with
//! [`Error::Closed`](crate::Error::Closed). When the last file and future
//! are gone the rings are dropped, on the thread that dropped the last of
//! them: the poller is stopped and each
//! ring's queue waits for every completion the kernel still owes (abandoned
//! reads included) before any buffer is freed, so that drop can block for
//! as long as a device takes to finish them.
//! A thread that exits leaves its ring to the poller thread, which reaps it
//! until nothing is in flight and then closes it.
//!
//! # Files, bottom to top
//!
//! `notifier.rs` (who wakes a parked task: [`Notifier`], [`PollerMode`],
//! the tick constants, the poller's kick), `tokio_reactor.rs` (completions
//! through tokio's reactor, feature `tokio`), `engine_stats.rs`
//! ([`EngineStats`], [`RingReport`]), `ring_state.rs` (one ring's state
//! behind its two locks: its queue, and its op table with the line for a
//! free op: start, reap, collect, abandon), `ring.rs` (one
//! thread's ring: its queue, notifier and locks), `registry.rs` (an engine's
//! rings: the thread-local lookup, the cap, thread exit), `poller_thread.rs`
//! (the engine's poller thread), `handle.rs` ([`Engine`], [`EngineFile`] and
//! the rings they share), `builder.rs` ([`EngineBuilder`]), `yielding.rs`
//! (how a read gives the executor its turn), `first_poll.rs` (the
//! page-cache try of a read's first poll), `ring_poll.rs` (the three phases
//! every read future's poll on a ring goes through), `read_at.rs`
//! ([`ReadAt`], [`ReadExactAt`]), `read_many.rs` ([`ReadMany`]),
//! `blocking_file.rs` ([`block_on`], [`BlockingFile`]). Beside them,
//! `budget.rs` ([`InFlightLimit`]: the engine's one limit of range reads
//! and bytes in flight, shared by every concurrent range read).

mod blocking_file;
pub(crate) mod budget;
mod builder;
mod engine_stats;
mod first_poll;
mod handle;
mod notifier;
mod poller_thread;
mod read_at;
mod read_many;
mod registry;
mod ring;
mod ring_poll;
mod ring_state;
#[cfg(feature = "tokio")]
mod tokio_reactor;
pub(crate) mod yielding;

pub use blocking_file::{block_on, BlockingFile, BlockingMany};
pub use budget::{BudgetStats, InFlightLimit, DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_READS};
pub use builder::{EngineBuilder, DEFAULT_MAX_RINGS};
pub use engine_stats::{EngineStats, RingReport};
pub use handle::{Engine, EngineFile};
pub use notifier::{Notifier, PollerMode, TICK, WATCHDOG_TICK};
pub use read_at::{ReadAt, ReadExactAt};
pub use read_many::{ManyItem, Next, ReadMany};
pub use yielding::{YIELD_BYTES, YIELD_READS};
