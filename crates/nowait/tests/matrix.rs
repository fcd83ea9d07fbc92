//! The data matrix: the same scenarios on every backend the machine offers
//! (`aio+pool` included), buffered and direct, on ext4, tmpfs and xfs (loop
//! image, when root). Every byte read is checked against the offset-derived
//! pattern.

mod common;

use std::path::Path;

use common::{backends, fs_of, mixed_reads, pattern_file, LoopMount, Rng};
use nowait::{pattern, BackendChoice, BackendKind, Buf, Direct, Error, File, Queue, Read};

const FILE_SIZE: u64 = (3 << 20) + 123;
const SIZES: [usize; 10] = [1, 7, 511, 512, 4095, 4096, 4097, 65536, 131_071, 1 << 20];

fn expected(size: u64, off: u64, len: usize) -> usize {
    size.saturating_sub(off).min(len as u64) as usize
}

fn offsets(size: u64, len: usize) -> Vec<u64> {
    let last_block = size / 4096 * 4096;
    vec![
        0,
        4096,
        4096 + 13,
        1,
        size.saturating_sub(len as u64 / 2), // straddles EOF
        size - 1,
        size,        // exactly at EOF
        size + 4096, // past EOF: 0 bytes, not an error
        last_block,  // aligned, partial last block
    ]
}

/// Single reads of every size at every interesting offset.
fn single_reads(dir: &Path, label: &str) {
    let path = pattern_file(dir, "matrix.dat", FILE_SIZE);
    for direct in [Direct::Off, Direct::Auto, Direct::On] {
        let file = match File::open(&path, direct) {
            Ok(f) => f,
            Err(e @ Error::DirectUnsupported { .. }) => {
                common::skip_line(&format!("{label} {direct:?}: {e}"));
                continue;
            }
            Err(e) => panic!("{label}: open {direct:?}: {e}"),
        };
        let align = file.dio_align();
        for (kind, mut q) in backends(4) {
            let mut n_reads = 0;
            for len in SIZES {
                for off in offsets(FILE_SIZE, len) {
                    let ctx = format!(
                        "{label} {kind} {direct:?} (direct={}) off={off} len={len}",
                        file.is_direct()
                    );
                    let (r, buf) = q.read_at(&file, off, Buf::new(len));
                    assert_eq!(buf.capacity(), len, "{ctx}: buffer must come back");
                    let strict_misaligned =
                        direct == Direct::On && file.is_direct() && !align.fits(off, len, 0);
                    if strict_misaligned {
                        match r {
                            Err(Error::Misaligned { offset, len: l, .. }) => {
                                assert_eq!((offset, l), (off, len), "{ctx}");
                            }
                            other => panic!("{ctx}: expected Misaligned, got {other:?}"),
                        }
                        continue;
                    }
                    let n = r.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    assert_eq!(n, expected(FILE_SIZE, off, len), "{ctx}");
                    assert_eq!(buf.len(), n, "{ctx}");
                    pattern::check(off, buf.as_slice()).unwrap_or_else(|m| panic!("{ctx}: {m}"));
                    n_reads += 1;
                }
            }
            assert!(n_reads > 0);
            let st = q.stats();
            assert_eq!(
                st.pushed, st.completed,
                "{label} {kind}: every request handed back"
            );
            if file.is_direct() && direct == Direct::Auto {
                assert!(
                    st.bounced > 0,
                    "{label} {kind}: unaligned direct reads must have been bounced"
                );
            }
        }
    }
}

/// Many reads in flight at once: random sizes and offsets, QD 1 to 256.
fn deep_queues(dir: &Path, label: &str) {
    let path = pattern_file(dir, "deep.dat", FILE_SIZE);
    let mut rng = Rng::from_env(label);
    for direct in [Direct::Off, Direct::Auto, Direct::On] {
        let file = match File::open(&path, direct) {
            Ok(f) => f,
            Err(e) => {
                common::skip_line(&format!("{label} deep {direct:?}: {e}"));
                continue;
            }
        };
        let a = file.dio_align().offset as u64;
        for qd in [1usize, 2, 8, 32, 128, 256] {
            for (kind, mut q) in backends(qd) {
                let mut asked = Vec::with_capacity(qd);
                for i in 0..qd {
                    let (off, len) = if direct == Direct::On && file.is_direct() {
                        let blocks = 1 + rng.below(16);
                        (rng.below(FILE_SIZE / a + 2) * a, (blocks * a) as usize)
                    } else {
                        (rng.below(FILE_SIZE + 8192), 1 + rng.below(65536) as usize)
                    };
                    asked.push((off, len));
                    q.push(Read {
                        file: &file,
                        offset: off,
                        len,
                        buf: Buf::new(len),
                        user_data: i as u64,
                        ioprio: 0,
                        cache: None,
                    })
                    .unwrap_or_else(|r| panic!("{label} {kind} qd={qd}: push: {}", r.error));
                }
                assert_eq!(q.in_flight(), qd);
                q.submit().unwrap();
                let mut done = Vec::new();
                while done.len() < qd {
                    q.reap(1, None, &mut done).unwrap();
                }
                assert_eq!(
                    done.len(),
                    qd,
                    "{label} {kind} qd={qd}: exactly one completion each"
                );
                let mut seen = vec![false; qd];
                for c in done {
                    let i = c.user_data as usize;
                    assert!(!seen[i], "duplicate completion {i}");
                    seen[i] = true;
                    let (off, len) = asked[i];
                    let ctx = format!("{label} {kind} {direct:?} qd={qd} off={off} len={len}");
                    let n = c.result.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    assert_eq!(n, expected(FILE_SIZE, off, len), "{ctx}");
                    pattern::check(off, c.buf.as_slice()).unwrap_or_else(|m| panic!("{ctx}: {m}"));
                }
                assert_eq!(q.in_flight(), 0);
            }
        }
    }
}

/// An empty file and zero-length reads.
fn empty_and_zero(dir: &Path, label: &str) {
    let empty = pattern_file(dir, "empty.dat", 0);
    let small = pattern_file(dir, "small.dat", 100);
    for direct in [Direct::Off, Direct::Auto] {
        let e = File::open(&empty, direct).unwrap();
        let s = File::open(&small, direct).unwrap();
        for (kind, mut q) in backends(4) {
            let ctx = format!("{label} {kind} {direct:?}");
            let (r, b) = q.read_at(&e, 0, Buf::new(4096));
            assert_eq!(r.unwrap(), 0, "{ctx}: empty file");
            assert!(b.is_empty());
            let (r, _) = q.read_at(&s, 10, Buf::new(0));
            assert_eq!(r.unwrap(), 0, "{ctx}: zero-length read");
            let (r, b) = q.read_at(&s, 0, Buf::new(4096));
            assert_eq!(r.unwrap(), 100, "{ctx}: whole small file");
            pattern::check(0, b.as_slice()).unwrap();
            let (r, _) = q.read_exact_at(&s, 50, 100, Buf::new(100));
            match r {
                Err(Error::UnexpectedEof { got: 50, .. }) => {}
                other => panic!("{ctx}: read_exact_at past EOF: {other:?}"),
            }
        }
    }
}

/// Direct and buffered reads of one file in flight together in one queue
/// (QD 64), and which backend each went to: `aio+pool` splits them by the
/// file's direct flag, the single backends take all of them.
fn mixed_direct_and_buffered(dir: &Path, label: &str) {
    let path = pattern_file(dir, "mixed.dat", FILE_SIZE);
    let direct = match File::open(&path, Direct::On) {
        Ok(f) => f,
        Err(e) => return common::skip_line(&format!("{label} mixed: {e}")),
    };
    let buffered = File::open(&path, Direct::Off).unwrap();
    let mut rng = Rng::from_env(label);
    let (n_direct, n_buffered) = (40u64, 24u64);
    for (kind, mut q) in backends(64) {
        mixed_reads(&mut q, &direct, &buffered, FILE_SIZE, (40, 24), 2, &mut rng);
        let b = q.backend_stats();
        let st = q.stats();
        let retries = st.reissued();
        // Reads of a memory-backed file (tmpfs) past the inline window are
        // read by the queue itself, not the backend (`memory_inline`).
        let all = 2 * (n_direct + n_buffered) + retries - st.inline;
        let ctx = format!("{label} {kind}: {b:?}, {} inline", st.inline);
        if direct.inline_reason().is_none() {
            assert_eq!(st.inline, 0, "{ctx}");
        }
        match kind {
            BackendKind::AioPool => {
                assert_eq!(b.aio_reads + b.pool_reads, all, "{ctx}");
                assert!(
                    (2 * n_direct - st.inline.min(2 * n_direct)..=2 * n_direct + retries)
                        .contains(&b.aio_reads),
                    "{ctx}"
                );
            }
            BackendKind::Aio => assert_eq!((b.aio_reads, b.pool_reads), (all, 0), "{ctx}"),
            BackendKind::Pool => assert_eq!((b.aio_reads, b.pool_reads), (0, all), "{ctx}"),
            BackendKind::Uring | BackendKind::Sync => {
                assert_eq!((b.aio_reads, b.pool_reads), (0, 0), "{ctx}")
            }
        }
    }
}

fn whole_matrix(dir: &Path, label: &str) {
    single_reads(dir, label);
    deep_queues(dir, label);
    empty_and_zero(dir, label);
    mixed_direct_and_buffered(dir, label);
}

#[test]
fn matrix_on_ext4() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let fs = fs_of(dir.path());
    if fs != "ext4" {
        common::skip_line(&format!(
            "matrix_on_ext4: {} is on {fs}, not ext4 (set TMPDIR to an ext4 directory)",
            dir.path().display()
        ));
        return;
    }
    whole_matrix(dir.path(), "ext4");
}

#[test]
fn matrix_on_tmpfs() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || fs_of(shm) != "tmpfs" {
        common::skip_line("matrix_on_tmpfs: /dev/shm is not a tmpfs here");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    whole_matrix(dir.path(), "tmpfs");
}

#[test]
fn matrix_on_xfs_loop() {
    let m = match LoopMount::new("mkfs.xfs", 300) {
        Ok(m) => m,
        Err(why) => {
            common::skip_line(&format!("matrix_on_xfs_loop: {why}"));
            return;
        }
    };
    assert_eq!(fs_of(m.dir.path()), "xfs");
    whole_matrix(m.dir.path(), "xfs");
}

/// The default (Auto) queue works and says what it chose.
#[test]
fn auto_backend_reports_its_choice() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "auto.dat", 10_000);
    let file = File::open(&path, Direct::Off).unwrap();
    let mut q = Queue::builder()
        .backend(BackendChoice::Auto)
        .build()
        .unwrap();
    assert!(!q.backend().reason.to_string().is_empty());
    let (r, b) = q.read_at(&file, 1234, Buf::new(5000));
    assert_eq!(r.unwrap(), 5000);
    pattern::check(1234, b.as_slice()).unwrap();
}

/// `reap(0, …)` collects what is already finished without waiting; polling
/// with it alone must eventually hand back every read (a front end that
/// sleeps on an eventfd relies on this).
#[test]
fn reap_min_zero_collects_finished_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "poll.dat", 1 << 20);
    let file = File::open(&path, Direct::Off).unwrap();
    for (kind, mut q) in backends(16) {
        for i in 0..16u64 {
            let r = Read {
                file: &file,
                offset: i * 4096,
                len: 4096,
                buf: Buf::new(4096),
                user_data: i,
                ioprio: 0,
                cache: None,
            };
            q.push(r).map_err(|r| r.error).unwrap();
        }
        q.submit().unwrap();
        let mut out = Vec::new();
        for _ in 0..100_000 {
            q.reap(0, None, &mut out).unwrap();
            if out.len() == 16 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        assert_eq!(
            out.len(),
            16,
            "{kind}: reap(0) polling must collect every read"
        );
        for c in out {
            assert_eq!(c.result.unwrap(), 4096);
            pattern::check(c.user_data * 4096, c.buf.as_slice()).unwrap();
        }
    }
}
