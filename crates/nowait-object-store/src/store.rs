//! [`NowaitStore`]: `object_store::local::LocalFileSystem` whose reads go
//! through nowait.

use std::fmt;
use std::io;
use std::ops::Range;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path as FsPath, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use nowait::fs::RangeOptions;
use nowait::{Buf, Engine, EngineFile};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result,
};

/// The store's name in errors (`object_store::Error::Generic::store`).
const STORE: &str = "NowaitStore";

/// The largest piece of a `get` one engine read asks for: a range up to
/// this comes back as one `Bytes` (what `GetResult::bytes` then hands out
/// without a copy); a longer one streams in pieces this size, two in
/// flight.
pub const GET_PIECE: usize = 8 << 20;

/// Local files as an [`ObjectStore`], read through nowait: `get`,
/// `get_range`, `get_ranges`, `head` and `get_opts` (ranges, `if_*`
/// conditions, `head`) open the file and read it through the engine, with
/// no thread hop per read; `get_ranges` has every range in flight at once
/// ([`nowait::fs::read_ranges`]: nearby ranges merged, long ones split).
/// Writes, lists, copies, renames and deletes are
/// [`LocalFileSystem`]'s own, so paths, prefixes, errors, ETags and
/// last-modified times are the same as with it: a drop-in.
///
/// Reads open the file on the calling thread (`open(2)` and `fstat(2)`;
/// `LocalFileSystem` sends them to tokio's blocking pool with the read).
///
/// Every read answers as `LocalFileSystem` does (checked side by side in
/// the crate's tests over every `GetRange` form, `head`, the `if_*`
/// conditions, empty and zero-length ranges, ranges past the end,
/// directories, symlinks and missing paths): the same bytes, range and
/// metadata, or an error of the same kind. `get_opts` with `head: true`
/// returns the range's payload, as `LocalFileSystem` does, and reads
/// nothing until it is polled. `get` of a directory is `NotFound`;
/// `get_ranges` of one is `Ok` for `[]` or only empty ranges and `Generic`
/// (`EISDIR`) otherwise. Two differences, on purpose: error messages are
/// this store's own (they name the range as asked and what to do), and a
/// `get_ranges` range whose start is after its end is a `Generic` error
/// naming it (`LocalFileSystem` computes its length with an overflow).
#[derive(Clone)]
pub struct NowaitStore {
    local: LocalFileSystem,
    engine: Engine,
    ranges: RangeOptions,
    direct: bool,
}

impl fmt::Debug for NowaitStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NowaitStore")
            .field("local", &self.local)
            .field("engine", &self.engine)
            .field("direct", &self.direct)
            .finish()
    }
}

impl fmt::Display for NowaitStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NowaitStore({})", self.local)
    }
}

/// An error building or reaching the engine, in object_store's terms.
fn generic(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: source.into(),
    }
}

impl NowaitStore {
    /// The whole filesystem (as [`LocalFileSystem::new`]), read through the
    /// process's shared engine ([`nowait::fs::engine`]).
    pub fn new() -> Result<NowaitStore> {
        Self::over(LocalFileSystem::new())
    }

    /// Paths under `prefix` (as [`LocalFileSystem::new_with_prefix`]: an
    /// error if it does not exist).
    pub fn new_with_prefix(prefix: impl AsRef<FsPath>) -> Result<NowaitStore> {
        Self::over(LocalFileSystem::new_with_prefix(prefix)?)
    }

    /// Reads through nowait for this `LocalFileSystem` (its prefix, its
    /// write options).
    pub fn over(local: LocalFileSystem) -> Result<NowaitStore> {
        Ok(NowaitStore {
            local,
            engine: nowait::fs::engine().map_err(generic)?,
            ranges: RangeOptions::default(),
            direct: false,
        })
    }

    /// Read through this engine instead of the shared one.
    pub fn with_engine(mut self, engine: &Engine) -> Self {
        self.engine = engine.clone();
        self
    }

    /// How `get_ranges` merges and splits (see [`RangeOptions`]).
    pub fn with_range_options(mut self, ranges: RangeOptions) -> Self {
        self.ranges = ranges;
        self
    }

    /// Read with `O_DIRECT` where the filesystem takes it (as
    /// [`nowait::Direct::Auto`]: elsewhere buffered): the page cache is neither
    /// used nor filled, as for a scan that should not evict the hot set.
    pub fn with_direct(mut self, on: bool) -> Self {
        self.direct = on;
        self
    }

    /// The `LocalFileSystem` that does everything but the reads.
    pub fn local(&self) -> &LocalFileSystem {
        &self.local
    }

    /// Open `location` for reading: the descriptor and its metadata (what
    /// `LocalFileSystem` reads them from), and the engine's file over it; a
    /// directory is `NotFound`, as `LocalFileSystem::get_opts` has it.
    fn open(&self, location: &Path, path: &FsPath) -> Result<(EngineFile, std::fs::Metadata)> {
        match self.open_any(location, path)? {
            Opened::File(file, meta) => Ok((file, meta)),
            Opened::Directory => Err(not_found(location, "is a directory")),
        }
    }

    /// [`NowaitStore::open`], telling a directory apart (`open(2)` takes
    /// one; only reading it fails, with `EISDIR`).
    fn open_any(&self, location: &Path, path: &FsPath) -> Result<Opened> {
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        let file = if self.direct {
            o.custom_flags(libc::O_DIRECT);
            match o.open(path) {
                // The filesystem takes no O_DIRECT: read it buffered.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => std::fs::File::open(path),
                r => r,
            }
        } else {
            o.open(path)
        }
        .map_err(|e| open_error(e, location, path))?;
        let meta = file.metadata().map_err(|e| open_error(e, location, path))?;
        if meta.is_dir() {
            return Ok(Opened::Directory);
        }
        let file = nowait::File::from_std(file).map_err(|e| match e {
            nowait::Error::IsDirectory { .. } => not_found(location, "is a directory"),
            e => generic(e),
        })?;
        Ok(Opened::File(self.engine.file(file), meta))
    }
}

/// What a location opened as.
enum Opened {
    /// A file: the engine's file and its metadata.
    File(EngineFile, std::fs::Metadata),
    /// A directory (nothing to read).
    Directory,
}

/// A `GetRange` in words, for an error (object_store's `Display` for it
/// writes an HTTP range, `bytes=start-(end-1)`, which has no form for an
/// empty or inverted range).
fn describe(r: &GetRange) -> String {
    match r {
        GetRange::Bounded(b) => format!("{}..{}", b.start, b.end),
        GetRange::Offset(o) => format!("from byte {o} to the end"),
        GetRange::Suffix(n) => format!("the last {n} bytes"),
    }
}

fn not_found(location: &Path, why: &str) -> object_store::Error {
    object_store::Error::NotFound {
        path: location.to_string(),
        source: io::Error::new(io::ErrorKind::NotFound, why.to_string()).into(),
    }
}

fn open_error(e: io::Error, location: &Path, path: &FsPath) -> object_store::Error {
    match e.kind() {
        io::ErrorKind::NotFound => object_store::Error::NotFound {
            path: location.to_string(),
            source: e.into(),
        },
        _ => generic(format!("cannot open {}: {e}", path.display())),
    }
}

/// The ETag `LocalFileSystem` gives a file (inode, modification time in
/// microseconds, size), so conditional requests work across both stores.
fn etag(meta: &std::fs::Metadata) -> String {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .unwrap_or_default()
        .as_micros();
    format!("\"{:x}-{mtime:x}-{:x}\"", meta.ino(), meta.len())
}

fn object_meta(location: &Path, meta: &std::fs::Metadata) -> Result<ObjectMeta> {
    let modified = meta
        .modified()
        .map_err(|e| generic(format!("no modification time for {location}: {e}")))?;
    Ok(ObjectMeta {
        location: location.clone(),
        last_modified: modified.into(),
        size: meta.len(),
        e_tag: Some(etag(meta)),
        version: None,
    })
}

/// A range read short of its end: the file is shorter than it was (or
/// than the range says), as `LocalFileSystem` reports it.
fn short(path: &FsPath, range: &Range<u64>, got: usize) -> object_store::Error {
    generic(format!(
        "range {}..{} of {} ends past the end of the file: {got} bytes read of {} asked; ask \
         for a range inside the object (head gives its size)",
        range.start,
        range.end,
        path.display(),
        range.end - range.start
    ))
}

/// One piece of a `get`, read with one engine read, as `Bytes` (no copy).
async fn read_piece(file: EngineFile, path: PathBuf, range: Range<u64>) -> Result<Bytes> {
    let len = (range.end - range.start) as usize;
    let align = if file.file().is_direct() {
        (file.file().dio_align().mem as usize).max(nowait::PAGE)
    } else {
        nowait::PAGE
    };
    let (r, buf) = file.read_at(Buf::with_align(len, align), range.start).await;
    let n = r.map_err(|e| generic(format!("cannot read {}: {e}", path.display())))?;
    if n < len {
        return Err(short(&path, &range, n));
    }
    Ok(buf.into_bytes())
}

#[async_trait]
impl ObjectStore for NowaitStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.local.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.local.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let path = self.local.path_to_filesystem(location)?;
        let (file, meta) = self.open(location, &path)?;
        let meta = object_meta(location, &meta)?;
        options.check_preconditions(&meta)?;
        let range = match &options.range {
            Some(r) => r.as_range(meta.size).map_err(|e| {
                generic(format!(
                    "requested range {} of {location} ({} bytes) is invalid: {e}; ask for a \
                     non-empty range that starts inside the object",
                    describe(r),
                    meta.size
                ))
            })?,
            None => 0..meta.size,
        };
        // `head` changes nothing, as with `LocalFileSystem`: the payload
        // is the range's, and reads nothing until it is polled (`head()`
        // takes the metadata and drops it unread).
        let pieces: Vec<Range<u64>> = (range.start..range.end)
            .step_by(GET_PIECE)
            .map(|s| s..(s + GET_PIECE as u64).min(range.end))
            .collect();
        let payload = stream::iter(pieces)
            .map(move |r| read_piece(file.clone(), path.clone(), r))
            .buffered(2)
            .boxed();
        Ok(GetResult {
            payload: GetResultPayload::Stream(payload),
            attributes: Default::default(),
            range,
            meta,
            // 0.14 only (0.13's `GetResult` has no extensions).
            #[cfg(feature = "object_store_014")]
            extensions: Default::default(),
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let path = self.local.path_to_filesystem(location)?;
        let (file, meta) = match self.open_any(location, &path)? {
            Opened::File(file, meta) => (file, meta),
            // As `LocalFileSystem`: nothing to read is nothing read (`[]`,
            // or empty ranges); anything else fails as reading a directory
            // does.
            Opened::Directory if ranges.iter().all(|r| r.start == r.end) => {
                return Ok(vec![Bytes::new(); ranges.len()]);
            }
            Opened::Directory => {
                return Err(generic(format!(
                    "cannot read ranges of {}: {}; name a file, not a directory",
                    path.display(),
                    io::Error::from_raw_os_error(libc::EISDIR)
                )));
            }
        };
        let got = nowait::fs::read_ranges_with(&file, ranges, &self.ranges)
            .await
            .map_err(|e| generic(format!("cannot read ranges of {}: {e}", path.display())))?;
        for (r, b) in ranges.iter().zip(&got) {
            if (b.len() as u64) < r.end - r.start {
                if r.start >= meta.len() {
                    return Err(generic(format!(
                        "range {}..{} of {location} starts at or past its end ({} bytes)",
                        r.start,
                        r.end,
                        meta.len()
                    )));
                }
                return Err(short(&path, r, b.len()));
            }
        }
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.local.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.local.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.local.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.local.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.local.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.local.rename_opts(from, to, options).await
    }
}
