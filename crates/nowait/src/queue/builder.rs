//! Building a queue: the options, checked, and the backend set up through
//! the ladder.

use std::time::Duration;

use super::{Queue, MAX_DEPTH};
use crate::backend::ladder;
use crate::backend::pool::{self, PoolConfig};
use crate::backend::uring::{IoPoll, UringConfig};
use crate::backend::{BackendChoice, BackendKind};
use crate::error::{ConfigError, Error, Result};
use crate::page_cache::nowait::NowaitMode;
use crate::page_cache::policy::CachePolicy;

/// Builds a [`Queue`].
#[derive(Debug, Clone)]
pub struct QueueBuilder {
    depth: usize,
    backend: BackendChoice,
    pub(super) uring: UringConfig,
    pool: PoolConfig,
    fixed_buffers: Option<(usize, usize)>,
    small_direct: bool,
    memory_inline: bool,
    inline_window: Option<usize>,
    cache: CachePolicy,
}

impl Default for QueueBuilder {
    fn default() -> Self {
        QueueBuilder {
            depth: 32,
            backend: BackendChoice::Auto,
            uring: UringConfig::default(),
            pool: PoolConfig::default(),
            fixed_buffers: None,
            small_direct: true,
            memory_inline: true,
            inline_window: None,
            cache: CachePolicy::Keep,
        }
    }
}

impl QueueBuilder {
    /// Requests in flight at most (default 32, at most [`MAX_DEPTH`]).
    pub fn depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// Which backend to use (default: the best available).
    pub fn backend(mut self, choice: BackendChoice) -> Self {
        self.backend = choice;
        self
    }

    /// Let io_uring bind the ring to the building thread (`SINGLE_ISSUER`,
    /// which enables `DEFER_TASKRUN`). Default on; turn it off to move a
    /// queue between threads after first use.
    pub fn single_issuer(mut self, on: bool) -> Self {
        self.uring.single_issuer = on;
        self
    }

    /// io_uring SQPOLL: a kernel thread polls the submission queue, so
    /// submitting needs no system call while it is awake; it sleeps after
    /// `idle_ms` without work. Its CPU time counts in the process's usage.
    pub fn sqpoll(mut self, idle_ms: Option<u32>) -> Self {
        self.uring.sqpoll_idle_ms = idle_ms;
        self
    }

    /// How queued reads are handed to the kernel by `uring` and `aio`
    /// (default [`SubmitPolicy::Adaptive`]: every queued read in one system
    /// call while reads complete inside it, at most two per call while they
    /// wait on a device; see [`Queue::submission`]).
    ///
    /// [`SubmitPolicy::Adaptive`]: crate::SubmitPolicy::Adaptive
    /// [`Queue::submission`]: crate::Queue::submission
    pub fn submit_policy(mut self, policy: crate::SubmitPolicy) -> Self {
        self.uring.submit = policy;
        self
    }

    /// Polled completions for direct reads (default [`IoPoll::Auto`]: on
    /// devices whose queue polls).
    pub fn iopoll(mut self, mode: IoPoll) -> Self {
        self.uring.iopoll = mode;
        self
    }

    /// Spin on the completion queue for up to `spin` before sleeping in
    /// `io_uring_enter` (userspace completion polling; default off). The
    /// ring is then set up without deferred task work.
    pub fn spin(mut self, spin: Duration) -> Self {
        self.uring.spin = spin;
        self
    }

    /// Register files with io_uring on first use (default on).
    pub fn register_files(mut self, on: bool) -> Self {
        self.uring.register_files = on;
        self
    }

    /// Give the queue a pool of `count` page-aligned buffers of `size`
    /// bytes, registered with io_uring as fixed buffers where the backend
    /// and the locked-memory limit allow (see [`Queue::take_buf`]).
    pub fn fixed_buffers(mut self, count: usize, size: usize) -> Self {
        self.fixed_buffers = Some((count, size));
        self
    }

    /// The small direct-read path (default on): an aligned `O_DIRECT`
    /// read of at most one block ([`SMALL_READ_MAX`](crate::SMALL_READ_MAX), or the file's offset
    /// alignment if larger) into a buffer from this queue's registered pool
    /// ([`QueueBuilder::fixed_buffers`]) goes out as one `READ_FIXED` with no
    /// bounce logic, and a full result is handed straight back from `reap`.
    /// Other reads take the general path; results are identical either way.
    /// Counted in [`QueueStats::small_direct`](crate::QueueStats::small_direct).
    pub fn small_direct(mut self, on: bool) -> Self {
        self.small_direct = on;
        self
    }

    /// Inline reads of memory-backed files (default on). A file on tmpfs,
    /// ramfs or a RAM block device (zram, brd, pmem) that refuses
    /// `RWF_NOWAIT` ([`File::inline_reason`](crate::File::inline_reason)) cannot have a read tried
    /// inline by io_uring: every read goes to an io-wq kernel thread, a
    /// thread hop for what is a memory copy that never waits on a device.
    /// With this on, once the backend holds the queue's *inline window* of
    /// such reads ([`QueueBuilder::inline_window`]), further ones are read
    /// right away in `push` with `pread`, the way the `pool` backend serves
    /// a cached read with `RWF_NOWAIT`: the calling thread reads while the
    /// kernel's worker reads too, and no thread sleeps waiting for another.
    /// Results, short-read and error handling are the same as for any
    /// other read; [`QueueStats::inline`](crate::QueueStats::inline) counts them. No effect on the
    /// `sync` backend (every read is inline there) or on other files.
    pub fn memory_inline(mut self, on: bool) -> Self {
        self.memory_inline = on;
        self
    }

    /// How many reads of memory-backed files the backend holds before
    /// [`QueueBuilder::memory_inline`] reads further ones inline. Default
    /// `min(32, depth / 2)`, and with the default a read that would be the
    /// only one in flight is inline too (waiting for a kernel worker would
    /// only add its wake-up to the latency: a lone task on a deep async
    /// engine reads 5–7× faster). At depth 128, 32 reads keep one io-wq
    /// worker busy on another core while this thread reads the rest. A
    /// window set here applies as given, without the lone-read rule.
    pub fn inline_window(mut self, reads: usize) -> Self {
        self.inline_window = Some(reads);
        self
    }

    /// What buffered reads leave in the page cache when neither the read
    /// nor its file says ([`File::set_cache_policy`](crate::File::set_cache_policy)):
    /// default [`CachePolicy::Keep`]. [`CachePolicy::Drop`] sends every
    /// buffered read with `RWF_DONTCACHE` (fio's `uncached=1`: its pages
    /// are dropped once copied out, so a scan does not evict what other
    /// files depend on); [`CachePolicy::Adaptive`] does so for the scan
    /// reads of files too large to stay cached (see
    /// [`crate::page_cache::policy`]). On every backend and on inline reads;
    /// `O_DIRECT` reads ignore it, and a filesystem without uncached reads
    /// (tmpfs, FUSE) reads as usual. Counted in
    /// [`QueueStats::dontcache`](crate::QueueStats::dontcache).
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.cache = policy;
        self
    }

    /// The cache policy set with [`QueueBuilder::cache`].
    pub(crate) fn cache_policy(&self) -> CachePolicy {
        self.cache
    }

    /// The `pool` backend's `RWF_NOWAIT` path: try a buffered read
    /// on the submitting thread with `preadv2(RWF_NOWAIT)` before handing it to a worker
    /// (default [`NowaitMode::Adaptive`]). No effect on a queue's other
    /// backends; the async engine also uses it for its first polls
    /// ([`crate::EngineBuilder::queue`]).
    pub fn nowait(mut self, mode: NowaitMode) -> Self {
        self.pool.mode = mode;
        self
    }

    /// The `RWF_NOWAIT` mode set with [`QueueBuilder::nowait`].
    pub(crate) fn nowait_mode(&self) -> NowaitMode {
        self.pool.mode
    }

    /// Worker threads of the `pool` backend (1 to 1024). Default:
    /// `min(depth, max(4, 4 × CPUs))`, the bound io_uring's own worker pool
    /// uses: workers mostly sleep in `pread` waiting for the device, so
    /// their number is the pool's device queue depth.
    pub fn pool_workers(mut self, workers: usize) -> Self {
        self.pool.workers = Some(workers);
        self
    }

    /// Build the queue: set up the backend and allocate every slot.
    pub fn build(self) -> Result<Queue> {
        if self.depth == 0 || self.depth > MAX_DEPTH {
            return Err(Error::Config(ConfigError::Depth {
                depth: self.depth,
                max: MAX_DEPTH,
            }));
        }
        if let Some(w) = self.pool.workers {
            if w == 0 || w > pool::MAX_WORKERS {
                return Err(Error::Config(ConfigError::PoolWorkers {
                    workers: w,
                    max: pool::MAX_WORKERS,
                }));
            }
        }
        let (backend, report) =
            ladder::make_backend(self.backend, self.depth, self.uring, self.pool)?;
        let mut q = Queue::with_backend(backend, report, self.depth);
        q.builder = Some(self.clone());
        q.small_direct = self.small_direct;
        q.cache = self.cache;
        q.cache_code = crate::page_cache::policy::PolicyCode::of(self.cache);
        let inline_on = self.memory_inline && q.report.kind != BackendKind::Sync;
        q.inline_window = if inline_on {
            self.inline_window.unwrap_or((self.depth / 2).min(32))
        } else {
            usize::MAX
        };
        q.inline_auto = inline_on && self.inline_window.is_none();
        if let Some((count, size)) = self.fixed_buffers {
            if count == 0 || count > u16::MAX as usize || size == 0 {
                return Err(Error::Config(ConfigError::FixedBuffers { count, size }));
            }
            let note = q.set_up_fixed_buffers(count, size);
            q.report.detail.push_str(&format!("; {note}"));
        }
        Ok(q)
    }
}
