//! `NowaitParquetReader` under arrow-rs's async reader: the same batches as
//! arrow-rs's synchronous reader over the file, with and without a
//! projection and row-group selection, with and without read-ahead (which
//! must then serve every row group but the first), on both tokio runtimes.
#![cfg(feature = "parquet")]

use std::sync::atomic::Ordering;

use arrow_array::RecordBatch;
use futures_util::TryStreamExt;
use nowait_object_store::parquet::{write_sample, NowaitParquetReader};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};

/// Whether two lists of batches hold the same rows, however they are cut.
fn same_rows(a: &[RecordBatch], b: &[RecordBatch]) -> bool {
    let (mut i, mut j, mut oi, mut oj) = (0, 0, 0, 0);
    while i < a.len() && j < b.len() {
        let n = (a[i].num_rows() - oi).min(b[j].num_rows() - oj);
        if a[i].slice(oi, n).columns() != b[j].slice(oj, n).columns() {
            return false;
        }
        (oi, oj) = (oi + n, oj + n);
        if oi == a[i].num_rows() {
            (i, oi) = (i + 1, 0);
        }
        if oj == b[j].num_rows() {
            (j, oj) = (j + 1, 0);
        }
    }
    i == a.len() && j == b.len() && !a.is_empty()
}

#[test]
fn batches_match_the_sync_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write_sample(&path, 9, 2000).unwrap();
    for mt in [false, true] {
        let rt = if mt {
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
        for (groups, leaves) in [(vec![], vec![0, 1, 2]), (vec![0, 3, 4, 8], vec![2, 0])] {
            let sync = {
                let b =
                    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap())
                        .unwrap();
                let mask = ProjectionMask::leaves(b.parquet_schema(), leaves.clone());
                let b = b.with_projection(mask);
                let b = if groups.is_empty() {
                    b
                } else {
                    b.with_row_groups(groups.clone())
                };
                b.build().unwrap().collect::<Result<Vec<_>, _>>().unwrap()
            };
            // No read-ahead; one row group ahead at a time (a budget of one
            // byte); every row group ahead at once.
            for budget in [None, Some(1), Some(u64::MAX)] {
                let prefetch = budget.is_some();
                let (got, stats) = rt.block_on(async {
                    tokio::time::timeout(std::time::Duration::from_secs(60), async {
                        let meta = ParquetRecordBatchStreamBuilder::new(
                            NowaitParquetReader::open(&path).unwrap(),
                        )
                        .await
                        .unwrap();
                        let mask = ProjectionMask::leaves(meta.parquet_schema(), leaves.clone());
                        let mut reader = NowaitParquetReader::open(&path).unwrap();
                        if let Some(b) = budget {
                            reader = reader
                                .with_prefetch(groups.clone(), mask.clone())
                                .with_prefetch_budget(b);
                        }
                        let stats = reader.prefetch_stats();
                        let b = ParquetRecordBatchStreamBuilder::new(reader)
                            .await
                            .unwrap()
                            .with_projection(mask);
                        let b = if groups.is_empty() {
                            b
                        } else {
                            b.with_row_groups(groups.clone())
                        };
                        let mut stream = b.build().unwrap();
                        let (mut got, mut threads) = (Vec::new(), 0);
                        while let Some(batch) = stream.try_next().await.unwrap() {
                            got.push(batch);
                            threads = threads.max(ahead_threads());
                        }
                        (got, (stats, threads))
                    })
                    .await
                    .expect("the scan hung")
                });
                // The same rows (the two readers cut batches differently:
                // the async one at row-group ends).
                let what = format!("groups {groups:?} leaves {leaves:?} budget {budget:?}");
                assert!(same_rows(&got, &sync), "{what}");
                let n = if groups.is_empty() { 9 } else { groups.len() } as u64;
                let (stats, threads) = stats;
                let used = stats.used.load(Ordering::Relaxed);
                if prefetch {
                    assert_eq!(used, n - 1, "every row group but the first was read ahead");
                    let started = stats.started.load(Ordering::Relaxed);
                    assert_eq!(started, n - 1, "{what}: each read ahead once");
                    assert_eq!(threads, 1, "{what}: one read-ahead thread while it reads");
                } else {
                    assert_eq!(used, 0);
                    assert_eq!(threads, 0, "{what}");
                }
                // The read-ahead thread ends with its reader.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while ahead_threads() > 0 {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "{what}: the read-ahead thread outlived its reader"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
    }
}

/// Threads of this process reading row groups ahead (named by the reader).
fn ahead_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == "nowait-pq-ahead")
        .count()
}
