//! The system calls only the command makes, apart from the engine's: CPU
//! time, context switches and page faults (`getrusage(2)`, of the process
//! or of one thread), free space (`statvfs(2)`), access advice
//! (`posix_fadvise(2)`) and how much of a file is in the page cache
//! (`mincore(2)`).
//!
//! The crate's one kernel-facing module, and the only place it allows
//! unsafe code: one `getrusage` call, written by hand because rustix 1.x
//! has none and the engine's system layer is private to it, and `mincore`
//! over a mapping (rustix 1.x has no `mincore`). Everything else here goes
//! through rustix's safe calls.

use std::os::fd::AsFd;
use std::path::Path;

/// CPU time, context switches and page faults of the whole process
/// (every thread), or of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Voluntary context switches (the task slept).
    pub ctx_voluntary: u64,
    /// Involuntary context switches (the task was preempted).
    pub ctx_involuntary: u64,
    /// Minor page faults (no I/O).
    pub minflt: u64,
    /// Major page faults (I/O).
    pub majflt: u64,
}

impl Rusage {
    /// `getrusage(RUSAGE_SELF)`: every thread of the process, including
    /// io_uring's SQPOLL thread (an io thread of the process since 5.12).
    pub fn now() -> Rusage {
        Rusage::of(libc::RUSAGE_SELF)
    }

    /// `getrusage(RUSAGE_THREAD)`: the calling thread only, as fio counts
    /// a job's CPU (`fio_getrusage`).
    pub fn thread() -> Rusage {
        Rusage::of(libc::RUSAGE_THREAD)
    }

    #[allow(unsafe_code)] // rustix 1.x has no getrusage: libc's, one call (module docs).
    fn of(who: libc::c_int) -> Rusage {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `ru` is a zeroed buffer of the size getrusage writes, alive
        // across the call; RUSAGE_SELF and RUSAGE_THREAD cannot fail (only
        // EFAULT/EINVAL can).
        let r = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
        if r != 0 {
            return Rusage::default();
        }
        // SAFETY: zero-initialised, and filled by the kernel on success.
        let ru = unsafe { ru.assume_init() };
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        Rusage {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            ctx_voluntary: ru.ru_nvcsw as u64,
            ctx_involuntary: ru.ru_nivcsw as u64,
            minflt: ru.ru_minflt as u64,
            majflt: ru.ru_majflt as u64,
        }
    }

    /// `self - earlier`, saturating.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
            ctx_voluntary: self.ctx_voluntary.saturating_sub(earlier.ctx_voluntary),
            ctx_involuntary: self.ctx_involuntary.saturating_sub(earlier.ctx_involuntary),
            minflt: self.minflt.saturating_sub(earlier.minflt),
            majflt: self.majflt.saturating_sub(earlier.majflt),
        }
    }

    /// Add another thread's usage.
    pub fn add(&mut self, o: &Rusage) {
        self.user_us += o.user_us;
        self.sys_us += o.sys_us;
        self.ctx_voluntary += o.ctx_voluntary;
        self.ctx_involuntary += o.ctx_involuntary;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
    }
}

/// Bytes free for an unprivileged writer on the filesystem holding `dir`.
pub fn free_space(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// `posix_fadvise` over `offset..offset+len` (`len` 0: to the end).
pub fn fadvise(
    file: &impl AsFd,
    offset: u64,
    len: u64,
    advice: rustix::fs::Advice,
) -> std::io::Result<()> {
    let len = std::num::NonZeroU64::new(len);
    rustix::fs::fadvise(file, offset, len, advice).map_err(std::io::Error::from)
}

/// Pages of `path` resident in the page cache, and its size in pages, by
/// `mincore(2)` over a shared read-only mapping (which reads no byte and
/// faults nothing in).
#[allow(unsafe_code)] // rustix 1.x has no mincore: libc's (module docs).
pub fn resident(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    let len = usize::try_from(f.metadata()?.len())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
    if len == 0 {
        return Ok((0, 0));
    }
    let page = rustix::param::page_size();
    let pages = len.div_ceil(page);
    // SAFETY: a fresh shared read-only mapping of a file open for reading,
    // `len` bytes from 0; nothing reads through it.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr..addr+len` is the mapping made above, page-aligned;
    // `vec` has one byte for each of its pages, as mincore writes.
    let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: the mapping made above, which nothing refers to any more.
    unsafe { libc::munmap(addr, len) };
    if r != 0 {
        return Err(err);
    }
    let resident = vec.iter().filter(|&&b| b & 1 != 0).count();
    Ok((resident as u64, pages as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rusage_grows_with_work() {
        // CPU time is sampled at clock ticks: work until it shows (2 s at most).
        let (a, t0) = (Rusage::now(), std::time::Instant::now());
        let mut d = Rusage::default();
        while d.user_us + d.sys_us == 0 && t0.elapsed().as_secs() < 2 {
            std::hint::black_box((0..1_000_000u64).fold(0u64, |x, i| x.wrapping_add(i * i)));
            d = Rusage::now().since(&a);
        }
        assert!(d.user_us + d.sys_us > 0, "{d:?}");
    }

    #[test]
    fn resident_follows_reads_and_drops() {
        use std::io::Write;
        // /var/tmp: on disk (a tmpfs file is never dropped from memory).
        let mut f = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.as_file().sync_all().unwrap();
        let pages = (1 << 20) / rustix::param::page_size() as u64;
        fadvise(f.as_file(), 0, 0, rustix::fs::Advice::DontNeed).unwrap();
        let (r, n) = resident(f.path()).unwrap();
        assert_eq!(n, pages);
        assert!(r < n / 2, "{r} of {n} resident after DONTNEED");
        std::fs::read(f.path()).unwrap();
        assert_eq!(resident(f.path()).unwrap(), (pages, pages));
        assert!(resident(Path::new("/no/such/file")).is_err());
    }

    #[test]
    fn free_space_of_a_directory() {
        assert!(free_space(Path::new("/tmp")).is_some());
        assert!(free_space(Path::new("/no/such/dir")).is_none());
    }
}
