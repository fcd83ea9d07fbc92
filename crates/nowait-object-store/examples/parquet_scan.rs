//! A Parquet scan with arrow-rs's async reader through `LocalFileSystem`
//! and through nowait, side by side (docs/BENCHMARKS.md, "Parquet scans").
//!
//! ```text
//! cargo run --release -p nowait-object-store --features parquet --example parquet_scan -- \
//!     FILE [--generate GIB] [--scan proj|full] [--via VIA] [--cache cached|uncached] [--rt ct|mt] [--check]
//! ```
//!
//! `--generate` writes FILE first (32 columns, 16 int64 and 16 float64
//! of pseudo-random values, snappy, no dictionary, 34 000 rows a row group:
//! ~8.0 MB a row group on disk; `--generate 2.2` writes 272 row groups,
//! 2.02 GiB) unless it exists. `--scan proj` reads 3 of the 32
//! columns of every 4th row group (many small ranges), `full` everything
//! (large ranges). `--via`:
//!
//! * `local`: an `AsyncFileReader` over `LocalFileSystem` (`StoreReader`
//!   below, what arrow-rs's deprecated `ParquetObjectReader` does:
//!   `get_range`/`get_ranges` of the store; `LocalFileSystem::get_ranges`
//!   is a `spawn_blocking` of one `pread` after another);
//! * `store`: the same reader over `NowaitStore`;
//! * `reader`: `NowaitParquetReader` (a row group's ranges in one batch);
//! * `prefetch`: `NowaitParquetReader::with_prefetch` (the next row
//!   group's reads in flight while the current one decodes);
//! * `memory`: decode alone: the file read into memory first (not timed:
//!   neither its wall nor its CPU time is counted), then arrow-rs's
//!   synchronous reader over those bytes.
//!
//! Every via reads the footer once, through its own reader.
//! `--cache cached` reads the whole file once first (not timed) so every
//! page is in the page cache; `--cache uncached` drops the file's pages
//! first (`POSIX_FADV_DONTNEED`). One line of JSON: wall and CPU seconds,
//! context switches, rows, batches, and with `--check` a digest of every
//! value decoded (in order), the same for every via when they read the
//! same data (the digest's CPU time is then counted too: time runs
//! without it).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::future::{BoxFuture, FutureExt};
use futures_util::TryStreamExt;
use nowait_object_store::object_store::local::LocalFileSystem;
use nowait_object_store::object_store::path::Path;
use nowait_object_store::object_store::{ObjectStore, ObjectStoreExt};
use nowait_object_store::parquet::NowaitParquetReader;
use nowait_object_store::NowaitStore;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};

/// arrow-rs's `AsyncFileReader` over any `ObjectStore` (as its deprecated
/// `ParquetObjectReader`, without a runtime of its own).
struct StoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
}

impl AsyncFileReader for StoreReader {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(e.into()))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<std::ops::Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(e.into()))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a parquet::arrow::arrow_reader::ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<parquet::file::metadata::ParquetMetaData>>> {
        async move {
            let size = self.size;
            let m = parquet::file::metadata::ParquetMetaDataReader::new()
                .with_prefetch_hint(Some(64 << 10))
                .load_and_finish(&mut *self, size)
                .await?;
            Ok(Arc::new(m))
        }
        .boxed()
    }
}

const ROWS_PER_GROUP: usize = 34_000;
const COLUMNS: usize = 32;

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn generate(path: &std::path::Path, gib: f64) {
    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
    let groups =
        (gib * (1u64 << 30) as f64 / (ROWS_PER_GROUP * COLUMNS * 8) as f64).ceil() as usize;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .set_dictionary_enabled(false)
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let tmp = path.with_extension("partial");
    let file = std::fs::File::create(&tmp).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut w: Option<parquet::arrow::ArrowWriter<std::fs::File>> = None;
    for _ in 0..groups {
        let cols: Vec<(String, ArrayRef)> = (0..COLUMNS)
            .map(|c| {
                let a: ArrayRef = if c % 2 == 0 {
                    // Values of a few significant bytes: snappy finds some.
                    Arc::new(Int64Array::from_iter_values(
                        (0..ROWS_PER_GROUP).map(|_| (next() >> (8 * (c % 8))) as i64),
                    ))
                } else {
                    Arc::new(Float64Array::from_iter_values(
                        (0..ROWS_PER_GROUP).map(|_| (next() >> 11) as f64 / (1u64 << 53) as f64),
                    ))
                };
                (format!("c{c}"), a)
            })
            .collect();
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let writer = w.get_or_insert_with(|| {
            parquet::arrow::ArrowWriter::try_new(
                file.try_clone().unwrap(),
                batch.schema(),
                Some(props.clone()),
            )
            .unwrap()
        });
        writer.write(&batch).unwrap();
        writer.flush().unwrap();
    }
    w.unwrap().close().unwrap();
    std::fs::rename(&tmp, path).unwrap();
    eprintln!("wrote {} ({groups} row groups)", path.display());
}

#[derive(Clone, Copy, Default)]
struct Usage {
    user: f64,
    sys: f64,
    csw: i64,
}

fn usage() -> Usage {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a writable rusage; RUSAGE_SELF is valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    // SAFETY: zeroed and filled by the call.
    let ru = unsafe { ru.assume_init() };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Usage {
        user: s(ru.ru_utime),
        sys: s(ru.ru_stime),
        csw: ru.ru_nvcsw + ru.ru_nivcsw,
    }
}

/// The scan: (row groups, projection) for the file's metadata.
fn selection(
    scan: &str,
    meta: &parquet::file::metadata::ParquetMetaData,
    schema: &parquet::schema::types::SchemaDescriptor,
) -> (Vec<usize>, ProjectionMask) {
    let n = meta.num_row_groups();
    match scan {
        "proj" => (
            (0..n).step_by(4).collect(),
            ProjectionMask::leaves(schema, [0, 11, 22]),
        ),
        _ => ((0..n).collect(), ProjectionMask::all()),
    }
}

/// Rows, batches and (with `check`) a digest of the values decoded.
#[derive(Default)]
struct Tally {
    rows: usize,
    batches: usize,
    /// Per column of the projection: FNV-1a over its values' bits, in
    /// order (whatever the batch sizes).
    columns: Vec<u64>,
}

impl Tally {
    fn add(&mut self, batch: &arrow_array::RecordBatch, check: bool) {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float64Type, Int64Type};
        self.rows += batch.num_rows();
        self.batches += 1;
        if !check {
            return;
        }
        self.columns
            .resize(batch.num_columns(), 0xcbf2_9ce4_8422_2325);
        for (h, col) in self.columns.iter_mut().zip(batch.columns()) {
            let bits: Box<dyn Iterator<Item = u64>> =
                if let Some(a) = col.as_primitive_opt::<Int64Type>() {
                    Box::new(a.values().iter().map(|&v| v as u64))
                } else {
                    let a = col.as_primitive::<Float64Type>();
                    Box::new(a.values().iter().map(|v| v.to_bits()))
                };
            for v in bits {
                *h = (*h ^ v).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }

    /// The columns' digests in one.
    fn digest(&self) -> Option<u64> {
        (!self.columns.is_empty()).then(|| {
            self.columns.iter().fold(0xcbf2_9ce4_8422_2325, |d, &h| {
                (d ^ h).wrapping_mul(0x0000_0100_0000_01b3)
            })
        })
    }
}

/// Scan through `reader`, whose metadata is `meta` (read through it).
async fn stream_scan<R: AsyncFileReader + Unpin + Send + 'static>(
    reader: R,
    meta: ArrowReaderMetadata,
    scan: &str,
    check: bool,
) -> Tally {
    let (groups, mask) = selection(scan, meta.metadata(), meta.parquet_schema());
    let stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, meta)
        .with_projection(mask)
        .with_row_groups(groups)
        .build()
        .unwrap();
    let mut tally = Tally::default();
    stream
        .try_for_each(|b| {
            tally.add(&b, check);
            std::future::ready(Ok(()))
        })
        .await
        .unwrap();
    tally
}

async fn scan(
    path: std::path::PathBuf,
    scan: String,
    via: String,
    preloaded: Option<Bytes>,
    check: bool,
) -> Tally {
    let dir = path.parent().unwrap().to_path_buf();
    let name = Path::from(path.file_name().unwrap().to_str().unwrap());
    match via.as_str() {
        "local" | "store" => {
            let store: Arc<dyn ObjectStore> = if via == "local" {
                Arc::new(LocalFileSystem::new_with_prefix(&dir).unwrap())
            } else {
                Arc::new(NowaitStore::new_with_prefix(&dir).unwrap())
            };
            let size = std::fs::metadata(&path).unwrap().len();
            let mut reader = StoreReader {
                store,
                path: name,
                size,
            };
            let meta = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
                .await
                .unwrap();
            stream_scan(reader, meta, &scan, check).await
        }
        "reader" | "prefetch" => {
            // The footer first, through the reader (which keeps it), to
            // know the plan.
            let mut reader = NowaitParquetReader::open(&path).unwrap();
            let meta = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
                .await
                .unwrap();
            if via == "prefetch" {
                let (groups, mask) = selection(&scan, meta.metadata(), meta.parquet_schema());
                reader = reader.with_prefetch(groups, mask);
            }
            stream_scan(reader, meta, &scan, check).await
        }
        "memory" => {
            let bytes = preloaded.expect("the file's bytes, read before the clock starts");
            let b = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
            let (groups, mask) = selection(&scan, b.metadata(), b.parquet_schema());
            let r = b
                .with_projection(mask)
                .with_row_groups(groups)
                .build()
                .unwrap();
            let mut tally = Tally::default();
            for batch in r {
                tally.add(&batch.unwrap(), check);
            }
            tally
        }
        v => panic!("--via {v}? (local, store, reader, prefetch, memory)"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = std::path::PathBuf::from(args.first().expect("FILE"));
    if let Ok(g) = arg(&args, "--generate", "").parse::<f64>() {
        if !path.exists() {
            generate(&path, g);
        }
    }
    let (scan_kind, via, cache, rt_kind) = (
        arg(&args, "--scan", "proj"),
        arg(&args, "--via", "local"),
        arg(&args, "--cache", "cached"),
        arg(&args, "--rt", "ct"),
    );
    let check = args.iter().any(|a| a == "--check");
    match cache.as_str() {
        "uncached" => nowait::File::open(&path, nowait::Direct::Off)
            .unwrap()
            .drop_cache()
            .unwrap(),
        // Every page in the page cache (as `cat FILE > /dev/null`).
        "cached" => {
            std::io::copy(
                &mut std::fs::File::open(&path).unwrap(),
                &mut std::io::sink(),
            )
            .unwrap();
        }
        c => panic!("--cache {c}? (cached, uncached)"),
    }
    // Decode alone: the bytes in memory before the clock starts.
    let preloaded = (via == "memory").then(|| Bytes::from(std::fs::read(&path).unwrap()));
    let rt = if rt_kind == "mt" {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let u0 = usage();
    let t0 = Instant::now();
    let (p, s, v, m) = (
        path.clone(),
        scan_kind.clone(),
        via.clone(),
        preloaded.clone(),
    );
    let tally = rt.block_on(async move { tokio::spawn(scan(p, s, v, m, check)).await.unwrap() });
    let wall = t0.elapsed().as_secs_f64();
    let u = usage();
    // Freed after the clock stops, as it was read before it started.
    drop(preloaded);
    let digest = tally
        .digest()
        .map_or(String::new(), |d| format!(",\"digest\":\"{d:016x}\""));
    println!(
        "{{\"scan\":\"{scan_kind}\",\"via\":\"{via}\",\"cache\":\"{cache}\",\"rt\":\"{rt_kind}\",\"wall_s\":{wall:.3},\"user_s\":{:.3},\"sys_s\":{:.3},\"ctxsw\":{},\"rows\":{},\"batches\":{}{digest}}}",
        u.user - u0.user,
        u.sys - u0.sys,
        u.csw - u0.csw,
        tally.rows,
        tally.batches,
    );
}
