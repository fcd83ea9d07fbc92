//! # nowait-object-store — local files as an `object_store`, read through nowait
//!
//! [`NowaitStore`] is an [`object_store::ObjectStore`] for local files, a
//! drop-in for [`object_store::local::LocalFileSystem`]: `get`,
//! `get_range`, `get_ranges`, `head` and `get_opts` read through the
//! nowait engine (io_uring, `RWF_NOWAIT` page-cache-first reads, a ring per
//! thread: no thread hop per read, and every range of a `get_ranges` call
//! in flight at once); writes, lists, copies, renames and deletes are
//! `LocalFileSystem`'s. Anything that reads through `object_store` —
//! arrow-rs's Parquet reader (`ParquetObjectReader`), DataFusion — reads
//! through nowait with it.
//!
//! ```
//! use nowait_object_store::object_store::{path::Path, ObjectStore, ObjectStoreExt};
//! use nowait_object_store::NowaitStore;
//! # let dir = tempfile::tempdir()?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let store = NowaitStore::new_with_prefix(dir.path())?;
//!     let at = Path::from("data/blob");
//!     store.put(&at, vec![7u8; 1 << 20].into()).await?;       // LocalFileSystem's put
//!     let whole = store.get(&at).await?.bytes().await?;        // read through nowait
//!     assert_eq!(whole.len(), 1 << 20);
//!     let parts = store.get_ranges(&at, &[0..10, 4096..8192]).await?; // both in flight at once
//!     assert_eq!(parts[1].len(), 4096);
//!     assert_eq!(store.head(&at).await?.size, 1 << 20);
//!     Ok::<_, nowait_object_store::object_store::Error>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # DataFusion, and the object_store version
//!
//! The store implements one `object_store`: 0.14 with the default feature
//! `object_store_014` (arrow-rs 60), or 0.13 with
//! `default-features = false, features = ["object_store_013"]` (DataFusion
//! 55, arrow-rs 59), so it is the same trait the engine takes. Registering
//! it in a DataFusion 55 `SessionContext` for every `file://` URL:
//!
//! ```ignore
//! ctx.register_object_store(&url::Url::parse("file://")?, Arc::new(NowaitStore::new()?));
//! ```
//!
//! `docs/bench/datafusion-count` is a whole program that does this and
//! counts a Parquet file's rows (built by hand: DataFusion is not built in
//! CI); it type-checks against DataFusion 55.2 with `object_store_013`,
//! and fails with E0277 (two `object_store` versions) with the default.
//!
//! Concurrent `get_ranges` calls share the engine's one limit of reads and
//! bytes in flight ([`nowait::EngineBuilder::range_budget`]; a store on its
//! own engine: [`NowaitStore::with_engine`]).
//!
//! With the feature `parquet`, [`parquet::NowaitParquetReader`] is an
//! arrow-rs `AsyncFileReader` over a nowait file: a row group's column
//! chunks are fetched in one batch, and the next row group's can be
//! fetched while the current one decodes.
#![deny(unsafe_code)]
#![warn(missing_docs)]

/// The `object_store` the store implements: 0.14 (feature
/// `object_store_014`, the default) or 0.13 (feature `object_store_013`:
/// DataFusion 55). Name its types through this path to be sure they are
/// the ones [`NowaitStore`] speaks.
#[cfg(all(feature = "object_store_013", not(feature = "object_store_014")))]
pub extern crate object_store_013 as object_store;
/// The `object_store` the store implements: 0.14 (feature
/// `object_store_014`, the default) or 0.13 (feature `object_store_013`:
/// DataFusion 55). Name its types through this path to be sure they are
/// the ones [`NowaitStore`] speaks.
#[cfg(feature = "object_store_014")]
pub extern crate object_store_014 as object_store;
#[cfg(not(any(feature = "object_store_013", feature = "object_store_014")))]
compile_error!(
    "nowait-object-store needs one object_store version: enable the feature \
     `object_store_014` (the default) or `object_store_013` (DataFusion 55)"
);

#[cfg(feature = "parquet")]
pub mod parquet;
mod store;

pub use store::{NowaitStore, GET_PIECE};
