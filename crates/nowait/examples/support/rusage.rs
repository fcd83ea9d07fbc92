//! CPU time and context switches for the peer benchmarks (`getrusage(2)`),
//! shared by the examples with `#[path]`. Written with libc because rustix
//! has no `getrusage`; the library itself does not need it.

/// CPU time and context switches of this process (all threads).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rusage {
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Voluntary context switches.
    pub ctx_voluntary: u64,
    /// Involuntary context switches.
    pub ctx_involuntary: u64,
}

impl Rusage {
    /// This process's usage so far (`RUSAGE_SELF`).
    pub fn now() -> Rusage {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `ru` is a writable buffer of the size getrusage fills;
        // RUSAGE_SELF is a valid `who`.
        let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
        if r < 0 {
            // Only EFAULT/EINVAL are possible, and neither with these arguments.
            return Rusage::default();
        }
        // SAFETY: zero-initialised, and filled by the successful call.
        let ru = unsafe { ru.assume_init() };
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        Rusage {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            ctx_voluntary: ru.ru_nvcsw as u64,
            ctx_involuntary: ru.ru_nivcsw as u64,
        }
    }

    /// `self - earlier`, saturating at zero.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
            ctx_voluntary: self.ctx_voluntary.saturating_sub(earlier.ctx_voluntary),
            ctx_involuntary: self.ctx_involuntary.saturating_sub(earlier.ctx_involuntary),
        }
    }
}
