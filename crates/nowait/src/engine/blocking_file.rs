//! The blocking front end, for plain threads: the same reads with the same
//! semantics as the async front end (owned buffers handed back, cancel-safe
//! batches), driven by [`block_on`], which parks the calling thread until the
//! engine wakes it.
//!
//! Any number of threads may read through one [`crate::Engine`] at once:
//! each reads through a ring of its own (up to the engine's cap on rings,
//! past which threads share them), and their reads are in flight together.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use super::handle::{Engine, EngineFile};
use super::read_many::{ManyItem, ReadMany};
use super::yielding::with_plain_wakes;
use crate::buf::Buf;
use crate::error::Result;
use crate::file::{Direct, File};

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    static THREAD_WAKER: Waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
}

/// Run a future to completion on the calling thread, parking it
/// (`futex(2)` through [`thread::park`]) while the future waits.
///
/// A minimal executor: enough for nowait's futures, which need nothing but a
/// [`Waker`]. Do not call it from inside an async runtime's worker thread.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let waker = THREAD_WAKER
        .try_with(Waker::clone)
        .unwrap_or_else(|_| Waker::from(Arc::new(ThreadWaker(thread::current()))));
    let mut cx = Context::from_waker(&waker);
    loop {
        // Reschedules wake this thread directly, even inside a tokio task.
        match with_plain_wakes(|| fut.as_mut().poll(&mut cx)) {
            Poll::Ready(v) => return v,
            // A spurious unpark only costs another poll.
            Poll::Pending => thread::park(),
        }
    }
}

/// A file read from plain threads: [`EngineFile`]'s reads, blocking.
#[derive(Debug, Clone)]
pub struct BlockingFile {
    file: EngineFile,
}

impl From<EngineFile> for BlockingFile {
    fn from(file: EngineFile) -> Self {
        BlockingFile { file }
    }
}

impl Engine {
    /// Open `path` (see [`File::open`]) for blocking reads through this engine.
    pub fn open_blocking(&self, path: impl AsRef<Path>, direct: Direct) -> Result<BlockingFile> {
        Ok(self.open(path, direct)?.into())
    }
}

impl BlockingFile {
    /// The async handle for the same file.
    pub fn as_async(&self) -> &EngineFile {
        &self.file
    }

    /// The underlying file.
    pub fn file(&self) -> &File {
        self.file.file()
    }

    /// Read up to `buf.capacity()` bytes at `offset`, waiting for the result.
    /// Returns the bytes read (fewer only at end of file) and the buffer.
    pub fn read_at(&self, buf: Buf, offset: u64) -> (io::Result<usize>, Buf) {
        block_on(self.file.read_at(buf, offset))
    }

    /// Read exactly `buf.capacity()` bytes at `offset`.
    pub fn read_exact_at(&self, buf: Buf, offset: u64) -> (io::Result<()>, Buf) {
        block_on(self.file.read_exact_at(buf, offset))
    }

    /// Start many reads at once and iterate over them as they finish.
    /// Dropping the iterator early abandons the rest safely.
    pub fn read_many<I>(&self, reads: I) -> BlockingMany
    where
        I: IntoIterator<Item = (u64, Buf)>,
    {
        BlockingMany {
            inner: self.file.read_many(reads),
        }
    }
}

/// Iterator of [`BlockingFile::read_many`]: each read as it finishes.
#[derive(Debug)]
pub struct BlockingMany {
    inner: ReadMany,
}

impl Iterator for BlockingMany {
    type Item = ManyItem;

    fn next(&mut self) -> Option<ManyItem> {
        block_on(self.inner.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.inner.remaining();
        (n, Some(n))
    }
}
