//! # nowait — fast asynchronous file reads on Linux
//!
//! nowait reads files without parking a thread per I/O. It probes what the
//! machine and each file can do (io_uring and its setup flags, O_DIRECT
//! alignment from `statx`, the filesystem), picks the fastest path, falls
//! back cleanly where a mechanism is missing (io_uring blocked by seccomp →
//! native AIO for `O_DIRECT` files and a thread pool with the `RWF_NOWAIT`
//! path for buffered ones → a `pread` loop), and finishes short reads and
//! retries itself so a result shorter than asked means end of file, nothing
//! else.
//!
//! ```
//! use nowait::{Buf, Direct, Engine};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("data");
//! # nowait::pattern::write_file(&path, 1 << 20, |_| {})?;
//! let engine = Engine::new()?; // Clone + Send + Sync; no runtime of its own
//! let file = engine.open(&path, Direct::Auto)?;
//! // In any async runtime (tokio, smol, …) or, as here, a plain thread:
//! let (n, buf) = nowait::block_on(async { file.read_at(Buf::new(4096), 4096).await });
//! assert_eq!(n?, 4096);
//! nowait::pattern::check(4096, buf.as_slice()).unwrap();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The async front end ([`Engine`], [`EngineFile::read_at`],
//! [`EngineFile::read_many`]) and the blocking one ([`BlockingFile`]) need
//! no runtime and no thread per read; dropping a read in flight is safe (see
//! [`engine`] for the design). Underneath is the low-level [`Queue`], shaped
//! like a liburing ring:
//!
//! ```
//! use nowait::{Buf, Direct, File, Queue, Read};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("data");
//! # nowait::pattern::write_file(&path, 1 << 20, |_| {})?;
//! let file = File::open(&path, Direct::Auto)?;
//! let mut queue = Queue::builder().depth(32).build()?;
//! println!("backend: {} ({})", queue.backend().kind, queue.backend().reason);
//!
//! // Push a batch of reads, submit them with one system call, reap them.
//! for i in 0..16u64 {
//!     let req = Read::new(&file, i * 4096, 4096, Buf::new(4096), i);
//!     queue.push(req)?;
//! }
//! queue.submit()?;
//! let mut done = Vec::new();
//! while done.len() < 16 {
//!     queue.reap(1, None, &mut done)?;
//! }
//! for c in &done {
//!     let n = *c.result.as_ref().unwrap();
//!     nowait::pattern::check(c.user_data * 4096, &c.buf.as_slice()[..n]).unwrap();
//! }
//!
//! // Or one blocking read.
//! let (n, buf) = queue.read_at(&file, 100, Buf::new(10));
//! assert_eq!(n?, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The modules, one concept each: [`engine`] (the async and blocking front
//! ends: a ring per thread, futures, the poller), [`fs`] (an `AsyncRead`
//! file and `read_ranges` over the engine; `read`, the drop-in for
//! `tokio::fs::read`), [`paths`] (whole files by path: cached opens and
//! reads without a thread, many files under a byte budget), [`probe`] (what the machine and
//! a file can do), [`File`] (an open file and what was learned about it),
//! [`Buf`] and [`BufPool`] (owned aligned buffers), [`Queue`] (slots, submit
//! and reap, short-read completion, errno mapping), [`backend`] (the written
//! contract and one file per backend, and the ladder of fallbacks),
//! [`page_cache`] (the cache-first `RWF_NOWAIT` try over any destination,
//! what a buffered read leaves in the page cache: keep, drop with
//! `RWF_DONTCACHE`, or adaptive, so a scan does not evict the hot set, and
//! which filesystems refuse which flag),
//! [`pattern`] (the verifiable data pattern). Under them a private system
//! layer makes every system call. The layers and why they point one way:
//! docs/ARCHITECTURE.md.
//!
//! Errors: one model for every front end. Each [`Error`] has one errno
//! ([`Error::errno`]): the C API returns its negation, the Python package
//! raises it, and the [`std::io::Error`] it converts into has the kind
//! derived from it ([`Error::kind`]; [`Error::errno_in`] finds it again).
//! Its message says what was asked, what failed and what to do in words
//! that hold everywhere; a front end spells the settings a message names
//! its own way (a C constant, a Python keyword, a CLI flag) through a
//! [`Vocabulary`] ([`Error::message`]).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
mod buf;
pub mod engine;
mod error;
mod file;
pub mod fs;
mod message;
pub mod page_cache;
pub mod paths;
pub mod pattern;
pub mod probe;
pub mod probe_doc;
mod queue;
mod setting;
mod sys;

pub use backend::ladder::{BackendReason, BackendReport, Skipped};
pub use backend::uring::{IoPoll, UringSetupFlags};
pub use backend::{BackendStats, SubmitPolicy, MAX_READ};
pub use buf::{Buf, BufPool, PAGE};
pub use engine::{block_on, BlockingFile, BlockingMany};
pub use engine::{BudgetStats, InFlightLimit, DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_READS};
pub use engine::{
    Engine, EngineBuilder, EngineFile, EngineStats, Notifier, PollerMode, RingReport,
};
pub use engine::{ManyItem, Next, ReadAt, ReadExactAt, ReadMany, YIELD_BYTES, YIELD_READS};
#[doc(hidden)]
pub use error::samples as error_samples;
pub use error::{ConfigError, Error, Result};
pub use file::{AlignSource, DioAlignment, File, FileKind, MemoryBacking};
pub use message::{errno_text, Message, PlainWords, Vocabulary};
pub use page_cache::nowait::{CacheTry, CacheTryCounts, NowaitMode, NowaitState, NowaitStats};
pub use page_cache::policy::{CachePolicy, CacheState, DontcacheStats, DontcacheSupport};
pub use page_cache::refusal::{ReadFlag, Refusal};
pub use probe_doc::ProbeDoc;
pub use queue::{
    ioprio, Completion, Queue, QueueBuilder, QueueStats, Read, Rejected, IOPRIO_CLASS_BE,
    IOPRIO_CLASS_IDLE, IOPRIO_CLASS_RT, MAX_DEPTH, SMALL_READ_MAX,
};
pub use setting::{BackendChoice, BackendKind, Direct, Setting};

// The page-cache try (below the backends) bounds its reads
// with its own copy of the backends' limit.
const _: () = assert!(file::RW_MAX == MAX_READ);
