//! [`NowaitParquetReader`]: arrow-rs's Parquet `AsyncFileReader` over a
//! nowait file (feature `parquet`).
//!
//! ```
//! use futures_util::TryStreamExt;
//! use nowait_object_store::parquet::NowaitParquetReader;
//! use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("t.parquet");
//! # nowait_object_store::parquet::write_sample(&path, 4, 1000)?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let rows = rt.block_on(async {
//!     let reader = NowaitParquetReader::open(&path)?;
//!     let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
//!     let projection = ProjectionMask::leaves(builder.parquet_schema(), [0, 2]);
//!     let row_groups = vec![1, 3];
//!     // Fetch row group 3's column chunks while row group 1 decodes.
//!     let stream = builder
//!         .with_projection(projection.clone())
//!         .with_row_groups(row_groups.clone())
//!         .build()?;
//!     let batches: Vec<_> = stream.try_collect().await?;
//!     Ok::<_, Box<dyn std::error::Error>>(batches.iter().map(|b| b.num_rows()).sum::<usize>())
//! })?;
//! assert_eq!(rows, 2000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Prefetch: once the reader knows the row groups and columns the stream
//! will read ([`NowaitParquetReader::with_prefetch`], the same ones given to
//! the builder), a request for one row group's column chunks also starts
//! the reads of the next ones', up to a byte budget
//! ([`NowaitParquetReader::with_prefetch_budget`], default
//! [`DEFAULT_PREFETCH_BUDGET`]; always at least the next row group). They
//! run on a thread of the reader's own (started with the first read-ahead,
//! ended when the reader is dropped; its reads go through that thread's
//! ring of the same engine, every row group's at once). The decoding
//! thread then does no I/O work for them: a cached row group's copy out of
//! the page cache, most of a cached read's cost, which a read on the
//! decoding thread's own ring makes there at once (the page cache answers
//! it in its first poll), runs on another core; an uncached one's reads
//! wait for the device while earlier row groups decode. The next request
//! takes what is already there. One thread hop per row group, not per
//! read; memory: at most the budget in row groups read ahead (or one row
//! group, if it is larger).

use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::path::Path as FsPath;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::future::{BoxFuture, FutureExt, RemoteHandle};
use futures_util::stream::{FuturesUnordered, StreamExt};
use nowait::fs::RangeOptions;
use nowait::{Direct, Engine, EngineFile};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::ProjectionMask;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

/// A Parquet file read through nowait for arrow-rs's async reader
/// (`ParquetRecordBatchStreamBuilder::new(reader)`): `get_byte_ranges`
/// reads every range of a request at once ([`nowait::fs::read_ranges`]),
/// the footer is read with one suffix read, and the next row group can be
/// read while the current one decodes ([`NowaitParquetReader::with_prefetch`]).
pub struct NowaitParquetReader {
    file: EngineFile,
    size: u64,
    ranges: RangeOptions,
    metadata: Option<Arc<ParquetMetaData>>,
    /// Row groups to read ahead, in the order the stream reads them, and
    /// the columns it reads.
    plan: Option<(Vec<usize>, ProjectionMask)>,
    /// Column chunk ranges per row group of the plan (from the metadata).
    plan_ranges: Vec<Vec<Range<u64>>>,
    /// The row groups read ahead, in plan order: position in the plan and
    /// reads.
    ahead: VecDeque<Ahead>,
    /// The most bytes of row groups read ahead at once.
    budget: u64,
    /// The read-ahead thread, once started.
    ahead_queue: Option<AheadQueue>,
    stats: Arc<PrefetchStats>,
}

/// How read-ahead went ([`NowaitParquetReader::prefetch_stats`]).
#[derive(Debug, Default)]
pub struct PrefetchStats {
    /// Row groups whose reads were started ahead.
    pub started: AtomicU64,
    /// Requests served from a row group read ahead.
    pub used: AtomicU64,
}

struct Ahead {
    at: usize,
    ranges: Vec<Range<u64>>,
    reads: BoxFuture<'static, io::Result<Vec<Bytes>>>,
}

/// The default read-ahead budget of a reader given `with_prefetch`:
/// enough row groups of a projection to cover a decode's worth of device
/// waits, a few of a full scan's (an arrow-rs row group is often 8–128 MiB
/// whole; a projection's chunks of it far less).
pub const DEFAULT_PREFETCH_BUDGET: u64 = 64 << 20;

/// The read-ahead thread's queue: each future is one row group's reads;
/// the thread runs every one it is given at once. Dropping the sender ends
/// the thread (a future whose handle was dropped ends at its next poll).
type AheadQueue = futures_channel::mpsc::UnboundedSender<BoxFuture<'static, ()>>;

/// Start a read-ahead thread.
fn ahead_thread() -> io::Result<AheadQueue> {
    let (tx, mut rx) = futures_channel::mpsc::unbounded::<BoxFuture<'static, ()>>();
    std::thread::Builder::new()
        .name("nowait-pq-ahead".into())
        .spawn(move || {
            nowait::block_on(async move {
                let mut running = FuturesUnordered::new();
                loop {
                    futures_util::select! {
                        reads = rx.next() => match reads {
                            Some(r) => running.push(r),
                            None => break,
                        },
                        () = running.select_next_some() => {}
                    }
                }
            })
        })?;
    Ok(tx)
}

fn io_err(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ParquetError {
    ParquetError::External(e.into())
}

impl NowaitParquetReader {
    /// Open `path` buffered through the process's shared engine.
    pub fn open(path: impl AsRef<FsPath>) -> io::Result<NowaitParquetReader> {
        let engine = nowait::fs::engine()?;
        Self::open_with(&engine, path, Direct::Off)
    }

    /// Open `path` through `engine`, direct or buffered.
    pub fn open_with(
        engine: &Engine,
        path: impl AsRef<FsPath>,
        direct: Direct,
    ) -> io::Result<NowaitParquetReader> {
        Self::new(engine.open(path, direct)?)
    }

    /// Read `file` (its size is read now).
    pub fn new(file: EngineFile) -> io::Result<NowaitParquetReader> {
        let size = file.file().len()?;
        Ok(NowaitParquetReader {
            file,
            size,
            ranges: RangeOptions::default(),
            metadata: None,
            plan: None,
            plan_ranges: Vec::new(),
            ahead: VecDeque::new(),
            budget: DEFAULT_PREFETCH_BUDGET,
            ahead_queue: None,
            stats: Arc::default(),
        })
    }

    /// How a request's ranges are merged and split (see [`RangeOptions`]).
    pub fn with_range_options(mut self, ranges: RangeOptions) -> Self {
        self.ranges = ranges;
        self
    }

    /// Read the next row groups ahead while the current one decodes: give
    /// the row groups the stream reads, in its order (all of them when the
    /// builder is given none), and its projection — the same as the
    /// builder's `with_row_groups` and `with_projection`. Costs at most the
    /// budget ([`NowaitParquetReader::with_prefetch_budget`]) of memory
    /// more, or one row group's projected column chunks if they are larger.
    pub fn with_prefetch(mut self, row_groups: Vec<usize>, projection: ProjectionMask) -> Self {
        self.plan = Some((row_groups, projection));
        self.plan_ranges.clear();
        self
    }

    /// The most bytes of row groups (their projected column chunks) read
    /// ahead at once, with [`NowaitParquetReader::with_prefetch`]; the next
    /// row group is read ahead whatever its size.
    pub fn with_prefetch_budget(mut self, bytes: u64) -> Self {
        self.budget = bytes;
        self
    }

    /// Counters of the read-ahead, shared: take them before handing the
    /// reader to a stream builder.
    pub fn prefetch_stats(&self) -> Arc<PrefetchStats> {
        self.stats.clone()
    }

    /// The column chunk ranges of each planned row group, once the
    /// metadata is known.
    fn planned(&mut self) -> &[Vec<Range<u64>>] {
        if self.plan_ranges.is_empty() {
            if let (Some((groups, projection)), Some(meta)) = (&self.plan, &self.metadata) {
                let all: Vec<usize> = (0..meta.num_row_groups()).collect();
                let groups = if groups.is_empty() { &all } else { groups };
                self.plan_ranges = groups
                    .iter()
                    .filter(|&&g| g < meta.num_row_groups())
                    .map(|&g| {
                        meta.row_group(g)
                            .columns()
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| projection.leaf_included(*i))
                            .map(|(_, c)| {
                                let (start, len) = c.byte_range();
                                start..start + len
                            })
                            .collect()
                    })
                    .collect();
            }
        }
        &self.plan_ranges
    }

    /// The plan's row group whose column chunks hold `ranges`, if any.
    fn plan_index(&mut self, ranges: &[Range<u64>]) -> Option<usize> {
        let first = ranges.first()?;
        self.planned().iter().position(|g| {
            g.iter()
                .any(|c| c.start <= first.start && first.end <= c.end)
        })
    }

    /// Start reading plan entry `at` and hand its reads to the kernel.
    fn read_ahead(&mut self, at: usize) {
        let Some(ranges) = self.planned().get(at).cloned() else {
            return;
        };
        let (file, opts) = (self.file.clone(), self.ranges.clone());
        let r = ranges.clone();
        let reads = async move { nowait::fs::read_ranges_with(&file, &r, &opts).await };
        if self.ahead_queue.is_none() {
            self.ahead_queue = ahead_thread().ok();
        }
        let (remote, handle) = reads.remote_handle();
        let remote = remote.boxed();
        let reads = match &self.ahead_queue {
            Some(q) => match q.unbounded_send(remote) {
                Ok(()) => handle.boxed(),
                Err(back) => Self::here(back.into_inner(), handle),
            },
            None => Self::here(remote, handle),
        };
        self.stats.started.fetch_add(1, Ordering::Relaxed);
        self.ahead.push_back(Ahead { at, ranges, reads });
    }

    /// Read ahead the row groups after plan entry `at`, as many as the
    /// budget holds (the next one always).
    fn top_up(&mut self, at: usize) {
        let bytes = |g: &[Range<u64>]| g.iter().map(|r| r.end - r.start).sum::<u64>();
        let mut held: u64 = self.ahead.iter().map(|a| bytes(&a.ranges)).sum();
        let mut next = self.ahead.back().map_or(at + 1, |a| a.at + 1);
        while let Some(g) = self.planned().get(next) {
            let b = bytes(g);
            if !self.ahead.is_empty() && held + b > self.budget {
                break;
            }
            self.read_ahead(next);
            held += b;
            next += 1;
        }
    }

    /// The read-ahead on this thread's ring, where no thread could be
    /// started for it.
    fn here(
        remote: BoxFuture<'static, ()>,
        handle: RemoteHandle<io::Result<Vec<Bytes>>>,
    ) -> BoxFuture<'static, io::Result<Vec<Bytes>>> {
        Self::submitted(
            async move {
                let ((), out) = futures_util::join!(remote, handle);
                out
            }
            .boxed(),
        )
    }

    /// `reads` polled until submitted (a read's first poll queues it, the
    /// next submits the ring's queue): the kernel then reads while this
    /// thread decodes. The result is collected by the request that wants
    /// it, with its own waker.
    fn submitted(
        mut reads: BoxFuture<'static, io::Result<Vec<Bytes>>>,
    ) -> BoxFuture<'static, io::Result<Vec<Bytes>>> {
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..2 {
            if let Poll::Ready(r) = reads.poll_unpin(&mut cx) {
                return std::future::ready(r).boxed();
            }
        }
        reads
    }

    /// Each of `ranges` cut from `have` (the bytes of `held`), if every one
    /// lies inside one of them.
    fn cut(ranges: &[Range<u64>], held: &[Range<u64>], have: &[Bytes]) -> Option<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| {
                let i = held
                    .iter()
                    .position(|h| h.start <= r.start && r.end <= h.end)?;
                let from = (r.start - held[i].start) as usize;
                let to = (r.end - held[i].start) as usize;
                (to <= have[i].len()).then(|| have[i].slice(from..to))
            })
            .collect()
    }

    async fn fetch(&mut self, ranges: Vec<Range<u64>>) -> Result<Vec<Bytes>> {
        let at = self.plan_index(&ranges);
        // Read ahead already? Take it (and drop what the stream skipped).
        let mut out = None;
        if let Some(at) = at {
            while self.ahead.front().is_some_and(|a| a.at < at) {
                self.ahead.pop_front();
            }
            if self.ahead.front().is_some_and(|a| a.at == at) {
                let ahead = self.ahead.pop_front().expect("checked");
                let have = ahead.reads.await.map_err(io_err)?;
                out = Self::cut(&ranges, &ahead.ranges, &have);
                if out.is_some() {
                    self.stats.used.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.top_up(at);
        } else {
            self.ahead.clear();
        }
        let got = match out {
            Some(v) => v,
            None => nowait::fs::read_ranges_with(&self.file, &ranges, &self.ranges)
                .await
                .map_err(io_err)?,
        };
        for (r, b) in ranges.iter().zip(&got) {
            if (b.len() as u64) < r.end - r.start {
                return Err(ParquetError::EOF(format!(
                    "range {}..{} of {} ends past the end of the file ({} bytes)",
                    r.start,
                    r.end,
                    self.file.file().path().display(),
                    self.size
                )));
            }
        }
        Ok(got)
    }
}

impl AsyncFileReader for NowaitParquetReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            let mut v = self.fetch(vec![range]).await?;
            Ok(v.pop().unwrap_or_default())
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        self.fetch(ranges).boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        async move {
            if let Some(m) = &self.metadata {
                return Ok(m.clone());
            }
            let opts = options.map(|o| o.metadata_options().clone());
            let mut reader = ParquetMetaDataReader::new()
                .with_metadata_options(opts)
                // The footer and most metadata in one read.
                .with_prefetch_hint(Some(64 << 10));
            if let Some(o) = options {
                reader = reader
                    .with_column_index_policy(o.column_index_policy())
                    .with_offset_index_policy(o.offset_index_policy());
            }
            let size = self.size;
            let meta = Arc::new(reader.load_and_finish(&mut *self, size).await?);
            self.metadata = Some(meta.clone());
            self.plan_ranges.clear();
            Ok(meta)
        }
        .boxed()
    }
}

/// Write a small Parquet file for examples and tests: `row_groups` row
/// groups of `rows` rows each, three columns (`id` int64, `x` float64,
/// `name` utf8).
pub fn write_sample(path: &FsPath, row_groups: usize, rows: usize) -> Result<()> {
    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
    let file = std::fs::File::create(path).map_err(io_err)?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows))
        .build();
    let mut w = None;
    for g in 0..row_groups {
        let base = (g * rows) as i64;
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(base..base + rows as i64));
        let x: ArrayRef = Arc::new(Float64Array::from_iter_values(
            (0..rows).map(|i| (base + i as i64) as f64 * 0.5),
        ));
        let name: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("row {}", base + i as i64)),
        ));
        let batch = RecordBatch::try_from_iter([("id", id), ("x", x), ("name", name)])
            .map_err(|e| io_err(e.to_string()))?;
        let writer = match &mut w {
            Some(w) => w,
            None => w.insert(parquet::arrow::ArrowWriter::try_new(
                file.try_clone().map_err(io_err)?,
                batch.schema(),
                Some(props.clone()),
            )?),
        };
        writer.write(&batch)?;
        writer.flush()?;
    }
    if let Some(w) = w {
        w.close()?;
    }
    Ok(())
}
