//! The page cache as a run wants it: access advice for the job's pattern
//! (fio's `fadvise_hint`), a file read once so its pages are cached, a
//! range dropped from the cache (`posix_fadvise(2)`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use nowait::File;

use crate::base::failure::Failure;
use crate::base::sys::fadvise;
use crate::model::job::Rw;

/// Tell the kernel how the file will be read, as fio's `fadvise_hint=1`
/// does: `POSIX_FADV_RANDOM` (no readahead) for `randread`,
/// `POSIX_FADV_SEQUENTIAL` for `read`.
pub fn fadvise_access(file: &File, rw: Rw) -> std::io::Result<()> {
    let advice = match rw {
        Rw::RandRead => rustix::fs::Advice::Random,
        Rw::Read => rustix::fs::Advice::Sequential,
    };
    fadvise(file, 0, 0, advice)
}

/// Read a whole file once so its pages are cached (checking it with `verify`).
pub fn warm(f: &File, verify: bool) -> Result<(), Failure> {
    use std::os::unix::fs::FileExt;
    let err = |e: &dyn std::fmt::Display| {
        Failure::Runtime(format!("warming {}: {e}", f.path().display()))
    };
    let std_file = std::fs::File::open(f.path()).map_err(|e| err(&e))?;
    let len = f.len().map_err(|e| err(&e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < len {
        let n = std_file.read_at(&mut buf, off).map_err(|e| err(&e))?;
        if n == 0 {
            break;
        }
        if verify {
            nowait::pattern::check(off, &buf[..n]).map_err(|m| {
                Failure::Runtime(format!("--verify: {m} in {}", f.path().display()))
            })?;
        }
        off += n as u64;
    }
    Ok(())
}

/// Drop `offset..offset+len` of `f` (`len` 0: to the end) from the page
/// cache (`POSIX_FADV_DONTNEED`). Best effort: a failed drop only leaves
/// pages cached, which the reads' latencies then show.
pub fn drop_range(f: &File, offset: u64, len: u64) {
    let _ = fadvise(f, offset, len, rustix::fs::Advice::DontNeed);
}

/// Until `stop`, every 100 ms: drop all of `whole` from the page cache,
/// and all of `behind` but `window` bytes either side of `pos` (where a
/// sequential reader is), so a wrap finds nothing cached.
pub fn keep_uncached(whole: &File, behind: &File, pos: &AtomicU64, window: u64, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        drop_range(whole, 0, 0);
        let pos = pos.load(Ordering::Relaxed);
        drop_range(behind, 0, pos.saturating_sub(window));
        drop_range(behind, pos + window, 0);
    }
}
