//! The cache policy on an open file: set it, report it, and decide each
//! buffered read (keep its pages, or send it with `RWF_DONTCACHE`), with
//! the system calls that decision makes: the per-file `RWF_DONTCACHE`
//! probe, the adaptive check's `cachestat(2)` and the page-cache budget
//! from the memory cgroup (`sys/cgroup.rs`), and `posix_fadvise` to drop a
//! file's pages. The state itself lives in `policy.rs`.

use std::os::fd::AsFd;

use crate::error::{Error, Result};
use crate::file::{File, FileKind};
use crate::page_cache::policy::{self, CachePolicy, CacheState, Scan, Uncached};
use crate::sys;

impl File {
    /// Set what this file's buffered reads leave in the page cache, for
    /// every queue and engine reading it (and every clone of this handle);
    /// `None` leaves it to each queue's or engine's own policy
    /// ([`QueueBuilder::cache`](crate::QueueBuilder::cache)). A read may
    /// still ask for its own ([`Read::cache`](crate::Read::cache),
    /// [`ReadAt::cache`](crate::ReadAt::cache)). `O_DIRECT` reads ignore it.
    ///
    /// ```no_run
    /// use nowait::{CachePolicy, Direct, File};
    /// let backup = File::open("/var/lib/db/big.dat", Direct::Off)?;
    /// backup.set_cache_policy(CachePolicy::Drop); // read once: leave the cache to others
    /// # Ok::<(), nowait::Error>(())
    /// ```
    pub fn set_cache_policy(&self, policy: impl Into<Option<CachePolicy>>) {
        self.inner.cache.set_policy(policy.into());
    }

    /// The cache policy set on the file, if any ([`File::set_cache_policy`]).
    pub fn cache_policy(&self) -> Option<CachePolicy> {
        self.inner.cache.policy()
    }

    /// The file's cache-policy state: whether its filesystem takes
    /// `RWF_DONTCACHE` (as far as this process has asked), and what the
    /// adaptive policy made of its reads so far.
    pub fn cache_state(&self) -> CacheState {
        self.inner.cache.snapshot(self.inner.fs)
    }

    /// Drop the file's pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`),
    /// as fio's `invalidate=1` does before a run.
    pub fn drop_cache(&self) -> Result<()> {
        sys::fadvise_dontneed(self.inner.file.as_fd(), 0, 0).map_err(|source| Error::Kernel {
            what: "posix_fadvise(DONTNEED)",
            source,
        })
    }

    /// What `policy` makes of a buffered read of `len` bytes at `offset`
    /// (see [`crate::page_cache::policy`]): `Yes` to send it with
    /// `RWF_DONTCACHE`. The first read of the file that wants the flag asks
    /// the kernel whether its filesystem takes it (once per file).
    #[inline]
    pub(crate) fn uncached(&self, policy: CachePolicy, offset: u64, len: usize) -> Uncached {
        let f = &*self.inner;
        if policy == CachePolicy::Keep || f.direct {
            return Uncached::No;
        }
        let want = policy == CachePolicy::Drop
            || match f.cache.scan(offset, len) {
                Scan::No | Scan::Keep => false,
                Scan::Drop => true,
                Scan::Check => self.check_scan(),
            };
        if !want {
            return Uncached::No;
        }
        let regular = f.kind == FileKind::Regular;
        if f.cache.usable(f.fs_magic, regular, || {
            sys::preadv2_dontcache_probe(f.file.as_fd())
        }) {
            Uncached::Yes
        } else {
            Uncached::Kept
        }
    }

    /// The adaptive check of a file being scanned: its size against what
    /// the page cache can hold, and, for a large file, how much of it is
    /// resident (`cachestat(2)` over the whole file). Returns whether its
    /// scan reads go uncached until the next check.
    #[cold]
    fn check_scan(&self) -> bool {
        let size = self.len().unwrap_or(0);
        let (drop, resident) = policy::verdict(size, sys::cgroup::page_cache_budget(), || {
            let pages = size.div_ceil(crate::buf::PAGE as u64).max(1);
            sys::cachestat(self.inner.file.as_fd(), 0, 0)
                .ok()
                .map(|c| c.cached as f64 / pages as f64)
        });
        self.inner.cache.settle(drop, resident)
    }
}
