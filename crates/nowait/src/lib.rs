//! # nowait — fast asynchronous file reads on Linux
//!
//! nowait reads files without parking a thread per I/O. It probes what the
//! machine and each file can do (io_uring and its setup flags, O_DIRECT
//! alignment from `statx`, the filesystem), picks the fastest path, falls
//! back cleanly where a mechanism is missing (io_uring blocked by seccomp →
//! a `pread` loop), and finishes short reads and retries itself so a result
//! shorter than asked means end of file, nothing else.
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
//!     let req = Read { file: &file, offset: i * 4096, len: 4096, buf: Buf::new(4096), user_data: i };
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
//! The modules, one concept each: [`probe`] (what the machine and a file can
//! do), [`File`] (an open file and what was learned about it), [`Buf`] and
//! [`BufPool`] (owned aligned buffers), [`Queue`] (slots, submit and reap,
//! short-read completion, errno mapping), [`backend`] (the written contract
//! and one file per backend), [`sys`] (raw system calls), [`pattern`] (the
//! verifiable data pattern).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
mod buf;
mod error;
mod file;
pub mod pattern;
pub mod probe;
mod queue;
pub mod sys;

pub use backend::{BackendChoice, BackendKind, BackendStats, MAX_READ};
pub use buf::{Buf, BufPool, PAGE};
pub use error::{Error, Result};
pub use file::{DioAlignment, Direct, File, FileKind};
pub use queue::{
    BackendReport, Completion, Queue, QueueBuilder, QueueStats, Read, Rejected, MAX_DEPTH,
};
