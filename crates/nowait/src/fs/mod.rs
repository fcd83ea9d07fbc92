//! Files as async Rust reads them: [`File`] speaks tokio's `AsyncRead`,
//! `AsyncBufRead` and `AsyncSeek` (feature `tokio`) and the `futures-io`
//! ones (feature `futures-io`: smol, async-std, the `futures` crate), so
//! `read_to_end`, `BufReader`, `tokio::io::copy` and `read_exact` work on
//! it as on `tokio::fs::File`, without a thread hop per read; and
//! [`read_ranges`] reads many byte ranges of a file at once, as columnar
//! formats ask for them; and [`read`] (the drop-in for `tokio::fs::read`)
//! and [`read_files`] read whole files by path, cached ones without a
//! thread hop.
//!
//! ```
//! # #[cfg(feature = "tokio")] {
//! use tokio::io::{AsyncReadExt, AsyncSeekExt};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("data");
//! # nowait::pattern::write_file(&path, 1 << 20, |_| {})?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let mut f = nowait::fs::File::open(&path).await?;       // buffered, the shared engine
//!     let mut all = Vec::new();
//!     f.read_to_end(&mut all).await?;                         // reads ahead as it goes
//!     assert_eq!(all.len(), 1 << 20);
//!
//!     f.seek(std::io::SeekFrom::Start(4096)).await?;
//!     let mut page = [0u8; 4096];
//!     f.read_exact(&mut page).await?;
//!     nowait::pattern::check(4096, &page).unwrap();
//!
//!     let mut at = [0u8; 100];
//!     f.read_exact_at(&mut at, 12345).await?;                 // positional: the cursor stays
//!     let parts = nowait::fs::read_ranges(&f, &[0..10, 500_000..500_100]).await?;
//!     assert_eq!(&parts[1][..], &all[500_000..500_100]);
//!     Ok::<_, std::io::Error>(())
//! })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Files opened with [`File::open`] or [`File::from_std`] read through one
//! engine the process shares ([`engine`]), built on first use: every thread
//! that reads gets a ring of its own in it. [`OpenOptions::engine`] reads
//! through another.

pub mod file;
pub mod ranges;
pub mod readahead;
mod shared;
pub mod whole;

pub use file::{
    File, OpenOptions, OwnedBuf, BUFFERED_READAHEAD, DEFAULT_READAHEAD, KERNEL_READS_AHEAD,
};
pub use ranges::{read_ranges, read_ranges_with, RangeOptions};
pub use shared::engine;
pub use whole::{read, read_files, read_files_with, ReadFile, ReadFiles};
