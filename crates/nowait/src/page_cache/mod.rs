//! Everything about the page cache, in one room: the cache-first try
//! (`preadv2(2)` with `RWF_NOWAIT`) over any destination, the cache policy
//! (keep, drop with `RWF_DONTCACHE`, adaptive) and the per-read decision,
//! and the one memory of which filesystems refuse which flag. Each answer
//! comes from the kernel (a probe read, a refusal), never a version string.
//!
//! - [`refusal`] — [`Refusal`] (a read flag a filesystem refused, and why)
//!   and the process-wide memory of refusals ([`refused_filesystems`]).
//! - [`nowait`] — the `RWF_NOWAIT` policy ([`NowaitMode`], its thresholds),
//!   the per-file hit ratio, how a try ended ([`CacheTry`]) and the
//!   counters ([`NowaitStats`]).
//! - [`policy`] — what a buffered read leaves in the page cache
//!   ([`CachePolicy`]), the per-file state ([`CacheState`]) and the
//!   `RWF_DONTCACHE` counters ([`DontcacheStats`]).
//! - `try_read.rs`: the try itself ([`File::try_read_cached`](crate::File::try_read_cached)).
//! - `decide.rs`: the policy on an open file, and each read's decision with
//!   the system calls it makes ([`File::set_cache_policy`](crate::File::set_cache_policy)).

pub(crate) mod decide;
pub mod nowait;
pub mod policy;
pub mod refusal;
pub(crate) mod try_read;

pub use nowait::{CacheTry, CacheTryCounts, NowaitMode, NowaitState, NowaitStats};
pub use policy::{CachePolicy, CacheState, DontcacheStats, DontcacheSupport};
pub use refusal::{refused_filesystems, ReadFlag, Refusal, RefusedFs};
