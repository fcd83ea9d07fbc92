//! `nowait::fs::File`: the `AsyncRead`/`AsyncBufRead`/`AsyncSeek` file of
//! tokio and futures-io, its readahead window, positional reads into
//! borrowed and owned buffers, and `read_ranges` — every byte checked
//! against the pattern, every body under a watchdog.
#![cfg(all(feature = "tokio", feature = "futures-io"))]

mod common;

use std::io::SeekFrom;
use std::path::Path;
use std::time::Duration;

use common::Rng;
use nowait::fs::{File, RangeOptions};
use nowait::{Direct, Engine};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt};

const STALL: Duration = Duration::from_secs(20);

fn rt_current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn rt_multi() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The pattern's bytes from `offset`, `len` of them.
fn expected(offset: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    nowait::pattern::fill(offset, &mut v);
    v
}

/// A directory on a filesystem that takes O_DIRECT (skipped loudly when
/// none does) and one for buffered files.
fn dirs() -> Vec<(tempfile::TempDir, Direct)> {
    let mut v = vec![(tempfile::tempdir().unwrap(), Direct::Off)];
    match common::direct_dir() {
        Ok(d) => v.push((d, Direct::On)),
        Err(why) => common::skip("fs_file direct", &why),
    }
    match common::direct_dir() {
        Ok(d) => v.push((d, Direct::Auto)),
        Err(why) => common::skip("fs_file direct", &why),
    }
    v
}

/// Wait until the engine has nothing in flight, abandoned reads included.
fn settle(engine: &Engine) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let s = engine.stats();
        if s.in_flight == 0 && s.abandoned == 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{s:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn open(engine: &Engine, path: &Path, direct: Direct, readahead: usize) -> File {
    File::options()
        .engine(engine)
        .direct(direct)
        .readahead(readahead)
        .open_now(path)
        .unwrap()
}

/// `read_to_end` returns the whole file, on both tokio runtimes, buffered
/// and O_DIRECT, for sizes around the chunk and alignment boundaries; the
/// window never grows past its limit, and on an O_DIRECT file (where every
/// large read goes through it) grows to it while the reader stays
/// sequential.
#[test]
fn read_to_end_returns_every_byte() {
    common::watchdog("read_to_end", STALL, |p| {
        let engine = Engine::new().unwrap();
        for (dir, direct) in dirs() {
            for size in [0u64, 1, 4095, 4096, (1 << 20) + 7, 20 << 20] {
                let path = common::pattern_file(dir.path(), &format!("f{size}"), size);
                for rt in [rt_current(), rt_multi()] {
                    p.step(|| format!("{direct:?} size {size}"));
                    let mut f = open(&engine, &path, direct, 4 << 20);
                    let all = rt.block_on(async {
                        let mut all = Vec::new();
                        f.read_to_end(&mut all).await.unwrap();
                        all
                    });
                    assert_eq!(all.len() as u64, size, "{direct:?}");
                    nowait::pattern::check(0, &all).unwrap();
                    assert!(f.readahead_now() <= 4 << 20);
                    if size >= 20 << 20 && direct != Direct::Off {
                        assert_eq!(f.readahead_now(), 4 << 20, "the window grew to its limit");
                    }
                }
            }
        }
        settle(&engine);
    });
}

/// Large reads of a cached buffered file come straight from the page cache
/// into the caller's buffer (one copy, by the kernel): after the first
/// window's reads find everything cached, the engine reads almost nothing
/// more. A file whose cache was dropped reads through the window, and
/// every byte still matches, through tokio's and futures-io's traits.
#[test]
fn large_reads_of_a_cached_file_skip_the_window() {
    common::watchdog("cache first", STALL, |p| {
        // A filesystem that takes O_DIRECT (ext4, xfs) answers RWF_NOWAIT
        // too; tmpfs refuses it, and there every read uses the window.
        let dir = match common::direct_dir() {
            Ok(d) => d,
            Err(why) => return common::skip("large_reads_of_a_cached_file_skip_the_window", &why),
        };
        let size: u64 = (24 << 20) + 4097;
        let path = common::pattern_file(dir.path(), "f", size);
        let engine = Engine::new().unwrap();
        let reads = |e: &Engine| {
            let s = e.stats();
            s.delivered + s.nowait.hits
        };
        for uncached in [false, true, false] {
            for futures in [false, true] {
                p.step(|| format!("uncached {uncached}, futures-io {futures}"));
                let mut f = open(&engine, &path, Direct::Off, 8 << 20);
                if uncached {
                    f.engine_file().file().drop_cache().unwrap();
                }
                let before = reads(&engine);
                let mut all = vec![0u8; size as usize + 10];
                let mut at = 0;
                rt_current().block_on(async {
                    loop {
                        let end = (at + (1 << 20)).min(all.len());
                        let n = if futures {
                            smol::io::AsyncReadExt::read(&mut f, &mut all[at..end]).await
                        } else {
                            f.read(&mut all[at..end]).await
                        }
                        .unwrap();
                        if n == 0 {
                            break;
                        }
                        at += n;
                    }
                });
                assert_eq!(at as u64, size);
                nowait::pattern::check(0, &all[..at]).unwrap();
                let engine_reads = reads(&engine) - before;
                if !uncached {
                    // 24 MiB through the window takes ~30 reads of up to
                    // 1 MiB; straight from the cache, only the first
                    // window's (256 KiB in 128 KiB reads) and none after.
                    assert!(engine_reads <= 4, "{engine_reads} engine reads");
                } else {
                    assert!(engine_reads >= 1, "a dropped cache is read by the engine");
                }
            }
        }
        settle(&engine);
    });
}

/// Unset, a buffered file's window limit follows the kernel's readahead on
/// its device (what sysfs says, read here on its own), an `O_DIRECT`
/// file's is the default; a limit given at open wins. Reads of 64 KiB go
/// through the window, which grows to its limit.
#[test]
fn the_default_window_follows_the_kernels_readahead() {
    use nowait::fs::{BUFFERED_READAHEAD, DEFAULT_READAHEAD, KERNEL_READS_AHEAD};
    use std::os::unix::fs::MetadataExt;
    common::watchdog("window limit", STALL, |p| {
        let engine = Engine::new().unwrap();
        for (dir, direct) in dirs() {
            let size: u64 = 24 << 20;
            let path = common::pattern_file(dir.path(), "f", size);
            let dev = std::fs::metadata(&path).unwrap().dev();
            let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
            let kernel = ["queue/read_ahead_kb", "../queue/read_ahead_kb"]
                .iter()
                .find_map(|a| {
                    std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/{a}")).ok()
                })
                .map(|kb| kb.trim().parse::<u64>().unwrap() << 10);
            for given in [None, Some(2 << 20)] {
                p.step(|| format!("{direct:?}, kernel {kernel:?}, given {given:?}"));
                let mut o = File::options();
                o.engine(&engine).direct(direct);
                if let Some(g) = given {
                    o.readahead(g);
                }
                let mut f = o.open_now(&path).unwrap();
                assert_eq!(f.engine_file().file().kernel_readahead(), kernel);
                let want = match (given, kernel) {
                    (Some(g), _) => g,
                    (None, Some(k)) if direct == Direct::Off && k >= KERNEL_READS_AHEAD => {
                        BUFFERED_READAHEAD
                    }
                    _ => DEFAULT_READAHEAD,
                };
                rt_current().block_on(async {
                    let mut b = vec![0u8; 64 << 10];
                    for i in 0..(size / (64 << 10)) {
                        f.read_exact(&mut b).await.unwrap();
                        nowait::pattern::check(i * (64 << 10), &b).unwrap();
                    }
                });
                assert_eq!(
                    f.readahead_now(),
                    want,
                    "{direct:?} kernel {kernel:?} given {given:?}"
                );
            }
        }
        settle(&engine);
    });
}

/// tokio's `BufReader` over the file with odd buffer and read sizes, and
/// `tokio::io::copy` into a sink, see the same bytes as the file.
#[test]
fn bufreader_and_copy_see_the_file() {
    common::watchdog("bufreader", STALL, |p| {
        let dir = tempfile::tempdir().unwrap();
        let size = (3 << 20) + 333;
        let path = common::pattern_file(dir.path(), "f", size);
        let engine = Engine::new().unwrap();
        let mut rng = Rng::from_env("bufreader_and_copy_see_the_file");
        rt_multi().block_on(async {
            let f = open(&engine, &path, Direct::Off, 1 << 20);
            let mut r = tokio::io::BufReader::with_capacity(1000, f);
            let mut at = 0u64;
            while at < size {
                let want = (1 + rng.below(70_000) as usize).min((size - at) as usize);
                let mut b = vec![0u8; want];
                r.read_exact(&mut b).await.unwrap();
                nowait::pattern::check(at, &b).unwrap();
                at += want as u64;
                p.tick();
            }
            assert!(r.fill_buf().await.unwrap().is_empty(), "end of file");

            let mut f = open(&engine, &path, Direct::Off, 1 << 20);
            let mut out = Vec::new();
            let n = tokio::io::copy(&mut f, &mut out).await.unwrap();
            assert_eq!(n, size);
            nowait::pattern::check(0, &out).unwrap();
            // The buffered traits hand out the window's own bytes.
            let mut f = open(&engine, &path, Direct::Off, 1 << 20);
            f.seek(SeekFrom::Start(10)).await.unwrap();
            let mut out = Vec::new();
            tokio::io::copy_buf(&mut f, &mut out).await.unwrap();
            nowait::pattern::check(10, &out).unwrap();
        });
    });
}

/// Seeded seeks (Start, Current back and forth, End, past the end) mixed
/// with reads of random sizes match `pread` of the same file; a seek before
/// 0 is an InvalidInput error that leaves the cursor; `stream_position`
/// does not drop the window.
#[test]
fn seeks_and_reads_match_pread() {
    common::watchdog("seeks", STALL, |p| {
        let engine = Engine::new().unwrap();
        let mut rng = Rng::from_env("seeks_and_reads_match_pread");
        for (dir, direct) in dirs() {
            let size = (6 << 20) + 5;
            let path = common::pattern_file(dir.path(), "f", size);
            let mut f = open(&engine, &path, direct, 2 << 20);
            let rt = rt_current();
            rt.block_on(async {
                let mut pos = 0u64;
                for i in 0..300 {
                    p.step(|| format!("{direct:?} step {i} at {pos}"));
                    let to = match rng.below(6) {
                        0 => SeekFrom::Start(rng.below(size + 10_000)),
                        1 => SeekFrom::Current(rng.below(300_000) as i64 - 150_000),
                        2 => SeekFrom::End(-(rng.below(100_000) as i64)),
                        3 => SeekFrom::Current(rng.below(3_000_000) as i64),
                        _ => SeekFrom::Current(0),
                    };
                    let want = match to {
                        SeekFrom::Start(n) => Some(n),
                        SeekFrom::Current(d) => pos.checked_add_signed(d),
                        SeekFrom::End(d) => size.checked_add_signed(d),
                    };
                    let got = f.seek(to).await;
                    match want {
                        Some(w) => {
                            assert_eq!(got.unwrap(), w, "{to:?}");
                            pos = w;
                        }
                        None => {
                            let e = got.unwrap_err();
                            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
                            assert!(
                                e.to_string().contains("seek to End(")
                                    || e.to_string().contains("seek to Current("),
                                "{e}"
                            );
                            assert_eq!(f.stream_position().await.unwrap(), pos);
                        }
                    }
                    let len = rng.below(200_000) as usize;
                    let mut b = vec![0u8; len];
                    let mut got = 0;
                    while got < len {
                        let n = f.read(&mut b[got..]).await.unwrap();
                        if n == 0 {
                            break;
                        }
                        got += n;
                    }
                    let avail = size.saturating_sub(pos).min(len as u64) as usize;
                    assert_eq!(got, avail, "{direct:?} read {len} at {pos}");
                    assert_eq!(b[..got], expected(pos, got)[..], "at {pos}");
                    pos += got as u64;
                }
                // A grown window survives `stream_position` (a seek to
                // where the cursor is). Reads of 64 KiB go through the
                // window on every file (larger ones may come straight from
                // the page cache).
                f.seek(SeekFrom::Start(0)).await.unwrap();
                let mut b = vec![0u8; 64 << 10];
                for _ in 0..48 {
                    f.read_exact(&mut b).await.unwrap();
                }
                let grown = f.readahead_now();
                assert!(grown > nowait::fs::readahead::INITIAL_BYTES, "{grown}");
                assert_eq!(f.stream_position().await.unwrap(), 3 << 20);
                assert_eq!(f.readahead_now(), grown);
            });
        }
        settle(&engine);
    });
}

/// Seeks that drop windows with reads in flight on a file whose cache was
/// dropped: the reads still verify, and every abandoned read is reclaimed.
#[test]
fn a_seek_drops_reads_in_flight_safely() {
    common::watchdog("seek cancels", STALL, |p| {
        let Ok(dir) = tempfile::tempdir_in("/var/tmp") else {
            return common::skip("a_seek_drops_reads_in_flight_safely", "no /var/tmp");
        };
        let size = 64u64 << 20;
        let path = common::pattern_file(dir.path(), "f", size);
        let engine = Engine::new().unwrap();
        let mut rng = Rng::from_env("a_seek_drops_reads_in_flight_safely");
        for rt in [rt_current(), rt_multi()] {
            let mut f = open(&engine, &path, Direct::Off, 8 << 20);
            f.engine_file().file().drop_cache().unwrap();
            rt.block_on(async {
                for i in 0..60 {
                    p.step(|| format!("step {i}"));
                    let at = rng.below(size - 8192);
                    f.seek(SeekFrom::Start(at)).await.unwrap();
                    let mut b = vec![0u8; 8192];
                    f.read_exact(&mut b).await.unwrap();
                    assert_eq!(b, expected(at, 8192));
                    if i % 10 == 0 {
                        f.engine_file().file().drop_cache().unwrap();
                    }
                }
            });
            drop(f);
        }
        settle(&engine);
        // The seeks really dropped reads the kernel still had.
        assert!(engine.stats().reclaimed > 0, "{:?}", engine.stats());
    });
}

/// The futures-io traits, under smol: read_to_end, seek, BufReader lines.
#[test]
fn futures_io_traits_under_smol() {
    futures_io_smol::run();
}

mod futures_io_smol {
    use super::{common, expected, File, SeekFrom, STALL};
    use smol::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncSeekExt as _};
    use smol::stream::StreamExt as _;

    pub fn run() {
        common::watchdog("futures-io", STALL, |_| {
            let dir = tempfile::tempdir().unwrap();
            let size = (2 << 20) + 9;
            let path = common::pattern_file(dir.path(), "f", size);
            let text = dir.path().join("lines");
            std::fs::write(&text, "one\ntwo\nthree").unwrap();
            smol::block_on(async {
                let mut f = File::open(&path).await.unwrap();
                let mut all = Vec::new();
                f.read_to_end(&mut all).await.unwrap();
                assert_eq!(all.len() as u64, size);
                nowait::pattern::check(0, &all).unwrap();
                assert_eq!(f.seek(SeekFrom::End(-9)).await.unwrap(), size - 9);
                let mut tail = Vec::new();
                f.read_to_end(&mut tail).await.unwrap();
                assert_eq!(tail, expected(size - 9, 9));
                let lines: Vec<String> = smol::io::BufReader::new(File::open(&text).await.unwrap())
                    .lines()
                    .map(|l| l.unwrap())
                    .collect()
                    .await;
                assert_eq!(lines, ["one", "two", "three"]);
            });
        });
    }
}

/// Positional reads into borrowed slices and owned `Vec`/`BytesMut`
/// buffers, cached and not, leave the cursor alone; `read_exact*` at end
/// of file say so.
#[test]
fn positional_reads_into_caller_buffers() {
    common::watchdog("positional", STALL, |p| {
        let engine = Engine::new().unwrap();
        for (dir, direct) in dirs() {
            let size = (1 << 20) + 100;
            let path = common::pattern_file(dir.path(), "f", size);
            let f = open(&engine, &path, direct, 1 << 20);
            rt_multi().block_on(async {
                for cached in [true, false] {
                    p.step(|| format!("{direct:?} cached {cached}"));
                    if !cached {
                        f.engine_file().file().drop_cache().unwrap();
                    }
                    let (off, len) = if direct == Direct::On {
                        (8192, 65536)
                    } else {
                        (777, 70_001)
                    };
                    let mut b = vec![0u8; len];
                    assert_eq!(f.read_at(&mut b, off).await.unwrap(), len);
                    assert_eq!(b, expected(off, len));
                    // Across the end: fewer (aligned for a strict direct file).
                    let near = if direct == Direct::On {
                        size / 4096 * 4096
                    } else {
                        size - 50
                    };
                    let mut b = vec![0u8; 8192];
                    let n = f.read_at(&mut b, near).await.unwrap();
                    assert_eq!(n as u64, size - near);
                    assert_eq!(b[..n], expected(near, n)[..]);
                    let e = f.read_exact_at(&mut b, near).await.unwrap_err();
                    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
                    assert!(e.to_string().contains("end of file"), "{e}");
                    if direct == Direct::On {
                        // A vector's memory is not aligned for O_DIRECT:
                        // only `Direct::Auto` bounces it.
                        continue;
                    }
                    // Owned buffers: appended after what they hold.
                    let mut v = Vec::with_capacity(4096 + 4096);
                    v.extend_from_slice(&[9u8; 4096]);
                    let (n, v) = f.read_owned_at(v, 4096).await;
                    assert_eq!(n.unwrap(), 4096);
                    assert_eq!(v[..4096], [9u8; 4096]);
                    assert_eq!(v[4096..], expected(4096, 4096)[..]);
                    let mut bm = bytes::BytesMut::with_capacity(12288);
                    bm.extend_from_slice(b"ab");
                    let (r, bm) = f.read_exact_owned_at(bm, 0).await;
                    r.unwrap();
                    assert_eq!(&bm[..2], b"ab");
                    assert_eq!(bm[2..], expected(0, bm.len() - 2)[..]);
                    let (r, v) = f.read_exact_owned_at(Vec::with_capacity(16384), near).await;
                    assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
                    assert_eq!(v, expected(near, (size - near) as usize));
                }
            });
            assert_eq!(f.position(), 0);
        }
    });
}

/// `from_std` starts at the descriptor's position and keeps its
/// O_DIRECT flag; a file that grows after end of file is read on.
#[test]
fn from_std_and_a_growing_file() {
    use std::io::{Seek, Write};
    common::watchdog("from_std", STALL, |_| {
        let dir = tempfile::tempdir().unwrap();
        let path = common::pattern_file(dir.path(), "f", 100_000);
        let mut std_file = std::fs::File::open(&path).unwrap();
        std_file.seek(SeekFrom::Start(1000)).unwrap();
        let mut f = File::from_std(std_file).unwrap();
        assert!(!f.engine_file().file().is_direct());
        assert_eq!(f.engine_file().file().path(), path.canonicalize().unwrap());
        rt_current().block_on(async {
            let mut rest = Vec::new();
            f.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, expected(1000, 99_000));
            // The file grows: the next read sees the new bytes.
            let mut w = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            w.write_all(&expected(100_000, 5000)).unwrap();
            let mut more = Vec::new();
            f.read_to_end(&mut more).await.unwrap();
            assert_eq!(more, expected(100_000, 5000));
        });
        if let Ok(d) = common::direct_dir() {
            use std::os::unix::fs::OpenOptionsExt;
            let path = common::pattern_file(d.path(), "g", 1 << 20);
            let fd = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
                .unwrap();
            let mut f = File::from_std(fd).unwrap();
            assert!(f.engine_file().file().is_direct());
            let all = rt_current().block_on(async {
                let mut all = Vec::new();
                f.read_to_end(&mut all).await.unwrap();
                all
            });
            nowait::pattern::check(0, &all).unwrap();
            assert_eq!(all.len(), 1 << 20);
        } else {
            common::skip("fs_file direct", "no directory takes O_DIRECT");
        }
        let e = File::from_std(std::fs::File::open(dir.path()).unwrap()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory, "{e}");
    });
}

/// `read_ranges` returns each range's bytes in the caller's order, merged,
/// split and budgeted any way, on buffered and O_DIRECT files; a range
/// past the end is short or empty; a reversed range is an error naming it.
#[test]
fn read_ranges_in_the_callers_order() {
    common::watchdog("read_ranges", STALL, |p| {
        let engine = Engine::new().unwrap();
        let mut rng = Rng::from_env("read_ranges_in_the_callers_order");
        for (dir, direct) in dirs() {
            let size = (9 << 20) + 3;
            let path = common::pattern_file(dir.path(), "f", size);
            let f = open(&engine, &path, direct, 1 << 20);
            let opts = [
                RangeOptions::default(),
                RangeOptions::default().gap(0).piece(4096).budget(1),
                RangeOptions::default()
                    .gap(1 << 20)
                    .piece(1 << 20)
                    .budget(3 << 20),
            ];
            rt_multi().block_on(async {
                for o in &opts {
                    for round in 0..5 {
                        p.step(|| format!("{direct:?} {o:?} round {round}"));
                        let n = 1 + rng.below(60) as usize;
                        let ranges: Vec<_> = (0..n)
                            .map(|_| {
                                let s = rng.below(size + 1000);
                                let long = rng.below(4) == 0;
                                s..s + rng.below(if long { 3 << 20 } else { 20_000 })
                            })
                            .collect();
                        let got = nowait::fs::read_ranges_with(&f, &ranges, o).await.unwrap();
                        assert_eq!(got.len(), ranges.len());
                        for (r, b) in ranges.iter().zip(&got) {
                            let want = size.min(r.end).saturating_sub(r.start) as usize;
                            assert_eq!(b.len(), want, "{r:?} of {size}");
                            assert_eq!(b[..], expected(r.start, want)[..], "{r:?}");
                        }
                    }
                }
                assert!(nowait::fs::read_ranges(&f, &[]).await.unwrap().is_empty());
                #[allow(clippy::reversed_empty_ranges)]
                let e = nowait::fs::read_ranges(&f, &[0..10, 10..4])
                    .await
                    .unwrap_err();
                assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
                assert!(e.to_string().contains("range 10..4"), "{e}");
            });
        }
        settle(&engine);
    });
}

#[allow(dead_code)]
fn _assert_send(f: File) -> impl Send {
    f
}

/// Concurrent `read_ranges` calls share the engine's one limit of reads
/// and bytes in flight: 32 callers whose own budgets are each far above it
/// never hold more than it together (the limit's own count, and the
/// reads the engine's rings hold, sampled by a ticker task that keeps
/// running beside them), and every byte is right.
#[test]
fn concurrent_read_ranges_share_one_budget() {
    common::watchdog("read_ranges shared budget", STALL, |p| {
        const LIMIT: usize = 1 << 20;
        const READS: usize = 8;
        // Every read to the ring, from a file not in the page cache, so
        // the callers' reads are in flight together.
        let engine = Engine::builder()
            .queue(|q| q.nowait(nowait::NowaitMode::Off))
            .range_budget(LIMIT, READS)
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let size = 16u64 << 20;
        let path = common::pattern_file(dir.path(), "f", size);
        let f = open(&engine, &path, Direct::Off, 1 << 20);
        evict(&path);
        let mut rng = Rng::from_env("concurrent_read_ranges_share_one_budget");
        let calls: Vec<Vec<std::ops::Range<u64>>> = (0..32)
            .map(|_| {
                (0..40)
                    .map(|_| {
                        let s = rng.below(size);
                        s..s + rng.below(300_000)
                    })
                    .collect()
            })
            .collect();
        p.step(|| "32 callers beside a ticker".to_string());
        let rt = rt_current();
        let (ticks, most_in_ring) = rt.block_on(async {
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let ticker = {
                let (done, engine) = (done.clone(), engine.clone());
                tokio::spawn(async move {
                    let (mut ticks, mut most) = (0u64, 0usize);
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        most = most.max(engine.stats().in_flight);
                        ticks += 1;
                        tokio::task::yield_now().await;
                    }
                    (ticks, most)
                })
            };
            let tasks: Vec<_> = calls
                .iter()
                .cloned()
                .map(|ranges| {
                    let f: nowait::EngineFile = AsRef::<nowait::EngineFile>::as_ref(&f).clone();
                    tokio::spawn(async move {
                        let o = RangeOptions::default().gap(0).piece(128 << 10);
                        let got = nowait::fs::read_ranges_with(&f, &ranges, &o).await.unwrap();
                        (ranges, got)
                    })
                })
                .collect();
            for t in tasks {
                let (ranges, got) = t.await.unwrap();
                for (r, b) in ranges.iter().zip(&got) {
                    let want = size.min(r.end).saturating_sub(r.start) as usize;
                    assert_eq!(b[..], expected(r.start, want)[..], "{r:?}");
                }
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            ticker.await.unwrap()
        });
        let b = engine.range_budget();
        assert!(b.peak_bytes <= LIMIT, "{b:?}");
        assert!(b.peak_reads <= READS, "{b:?}");
        assert!(
            most_in_ring <= READS,
            "{most_in_ring} reads in the rings: {b:?}"
        );
        assert!(
            b.waits > 0,
            "the callers never waited for one another: {b:?}"
        );
        assert_eq!((b.bytes, b.reads, b.waiting), (0, 0, 0), "{b:?}");
        assert!(ticks > 32, "the ticker ran {ticks} times");
        settle(&engine);
    });
}

/// A caller dropped while it holds its share of the engine's range limit,
/// or while it waits for one, gives it back: the next caller proceeds, and
/// nothing stays held. A piece larger than the whole limit goes alone.
#[test]
fn a_dropped_read_ranges_gives_its_share_back() {
    use std::future::Future;
    use std::task::Context;

    struct Nothing;
    impl std::task::Wake for Nothing {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    common::watchdog("read_ranges dropped share", STALL, |_| {
        const LIMIT: usize = 1 << 20;
        // Every read to the ring, so a first poll never completes one.
        let engine = Engine::builder()
            .queue(|q| q.nowait(nowait::NowaitMode::Off))
            .range_budget(LIMIT, 64)
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let size = 8u64 << 20;
        let path = common::pattern_file(dir.path(), "f", size);
        evict(&path);
        let f = open(&engine, &path, Direct::Off, 1 << 20);
        let o = RangeOptions::default().piece(LIMIT);
        let waker = std::task::Waker::from(std::sync::Arc::new(Nothing));
        let mut cx = Context::from_waker(&waker);
        #[allow(clippy::single_range_in_vec_init)]
        let ranges = [0..4 * LIMIT as u64];
        let mut a = Box::pin(nowait::fs::read_ranges_with(&f, &ranges, &o));
        let mut b = Box::pin(nowait::fs::read_ranges_with(&f, &ranges, &o));
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert_eq!(engine.range_budget().bytes, LIMIT);
        assert!(b.as_mut().poll(&mut cx).is_pending());
        assert_eq!(engine.range_budget().waiting, 1);
        // A goes: its share passes to B, which waited.
        drop(a);
        let s = engine.range_budget();
        assert_eq!((s.bytes, s.waiting), (LIMIT, 0), "{s:?}");
        // B goes before it ever used what it was granted.
        drop(b);
        let s = engine.range_budget();
        assert_eq!((s.bytes, s.reads, s.waiting), (0, 0, 0), "{s:?}");
        // The next caller proceeds, with pieces of twice the limit (each
        // alone).
        let big = RangeOptions::default().piece(2 * LIMIT);
        let got = nowait::block_on(nowait::fs::read_ranges_with(&f, &ranges, &big)).unwrap();
        assert_eq!(got[0][..], expected(0, 4 * LIMIT)[..]);
        let s = engine.range_budget();
        assert_eq!((s.bytes, s.reads, s.peak_reads), (0, 0, 1), "{s:?}");
        assert_eq!(s.peak_bytes, 2 * LIMIT, "{s:?}");
        settle(&engine);
    });
}

/// Write `path` back and drop it from the page cache (its reads then wait
/// for the device).
fn evict(path: &Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: an open descriptor; advice only, no memory involved.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}
