//! A read flag a filesystem refused (`RWF_NOWAIT`, `RWF_DONTCACHE`), and
//! the one process-wide memory of where each flag is refused.
//!
//! A file asks the kernel about a flag at most once: a refusal (EOPNOTSUPP
//! from a filesystem without the feature, as tmpfs has no `RWF_NOWAIT`
//! reads and no uncached ones) is remembered for the file's filesystem, so
//! the next file on it never asks, and a refusal of `preadv2(2)` itself
//! (ENOSYS: the kernel lacks it; EPERM: a seccomp filter blocks it) for the
//! process. Each file keeps its own answer in one word (`FlagState`),
//! read with a relaxed load on the hot path.

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;

use crate::sys::names::{errno_name, fs_name};

/// A `preadv2(2)` read flag whose refusal the process remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadFlag {
    /// `RWF_NOWAIT`: the page cache's bytes or EAGAIN, never a wait.
    Nowait,
    /// `RWF_DONTCACHE`: an uncached buffered read.
    Dontcache,
}

impl ReadFlag {
    /// Both flags.
    pub const ALL: [ReadFlag; 2] = [ReadFlag::Nowait, ReadFlag::Dontcache];

    /// The flag's name as the kernel spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadFlag::Nowait => "RWF_NOWAIT",
            ReadFlag::Dontcache => "RWF_DONTCACHE",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ReadFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a read flag is off for a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// This file answered `preadv2` with the flag with `errno` (EOPNOTSUPP:
    /// the filesystem or device lacks the feature, as tmpfs and zram lack
    /// `RWF_NOWAIT` reads, or the kernel predates `RWF_DONTCACHE`).
    Refused {
        /// The flag refused.
        flag: ReadFlag,
        /// Filesystem of the file.
        fs: &'static str,
        /// The errno.
        errno: i32,
    },
    /// Another file on the same filesystem answered `errno`; this one never asked.
    Filesystem {
        /// The flag refused.
        flag: ReadFlag,
        /// Filesystem of the file.
        fs: &'static str,
        /// The errno.
        errno: i32,
    },
    /// `preadv2(2)` itself is refused in this process (ENOSYS: the kernel
    /// lacks it; EPERM: a seccomp filter blocks it).
    Syscall {
        /// The flag that was being used.
        flag: ReadFlag,
        /// The errno.
        errno: i32,
    },
}

impl Refusal {
    /// The flag refused.
    pub fn flag(&self) -> ReadFlag {
        match *self {
            Refusal::Refused { flag, .. }
            | Refusal::Filesystem { flag, .. }
            | Refusal::Syscall { flag, .. } => flag,
        }
    }

    /// The errno the kernel answered.
    pub fn errno(&self) -> i32 {
        match *self {
            Refusal::Refused { errno, .. }
            | Refusal::Filesystem { errno, .. }
            | Refusal::Syscall { errno, .. } => errno,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::Refused { flag, fs, errno } => {
                write!(f, "no {flag} on {fs} ({})", errno_name(errno))
            }
            Refusal::Filesystem { flag, fs, errno } => write!(
                f,
                "no {flag} on {fs} ({} from another file on it)",
                errno_name(errno)
            ),
            Refusal::Syscall { errno, .. } => write!(
                f,
                "preadv2 is refused in this process ({}{})",
                errno_name(errno),
                if errno == libc::EPERM {
                    ": blocked by seccomp?"
                } else {
                    ""
                }
            ),
        }
    }
}

/// A filesystem the process learned refuses a read flag ([`refused_filesystems`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusedFs {
    /// The flag it refuses.
    pub flag: ReadFlag,
    /// `f_type` magic number from `fstatfs(2)`.
    pub magic: i64,
    /// Its name.
    pub fs: &'static str,
    /// What `preadv2` with the flag answered.
    pub errno: i32,
}

/// Where each flag is refused, remembered for the process.
struct Memory {
    fs: Mutex<Vec<RefusedFs>>,
    /// Per flag: the errno `preadv2` itself was refused with, or 0.
    syscall: [AtomicI32; 2],
}

static MEMORY: Memory = Memory {
    fs: Mutex::new(Vec::new()),
    syscall: [AtomicI32::new(0), AtomicI32::new(0)],
};

/// Every filesystem this process learned refuses a read flag, each with
/// the flag (filter on [`RefusedFs::flag`] for one).
pub fn refused_filesystems() -> Vec<RefusedFs> {
    MEMORY.fs.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

// A file's word: `UNCHECKED`, `ON`, or `kind << 16 | errno`.
const UNCHECKED: u32 = 0;
const ON: u32 = 1;
const OFF_FILE: u32 = 2;
const OFF_FS: u32 = 3;
const OFF_SYSCALL: u32 = 4;

fn off(kind: u32, errno: i32) -> u32 {
    kind << 16 | (errno as u32 & 0xffff)
}

impl Memory {
    /// What the process already knows for a file on `fs_magic`: the off
    /// word, or `None`.
    fn known(&self, flag: ReadFlag, fs_magic: i64, regular: bool) -> Option<u32> {
        let e = self.syscall[flag.index()].load(Relaxed);
        if e != 0 {
            return Some(off(OFF_SYSCALL, e));
        }
        if !regular {
            return None;
        }
        let v = self.fs.lock().unwrap_or_else(|e| e.into_inner());
        v.iter()
            .find(|r| r.flag == flag && r.magic == fs_magic)
            .map(|r| off(OFF_FS, r.errno))
    }

    /// Remember a file's refusal with `errno`: for the process (ENOSYS,
    /// EPERM: `preadv2` itself), else for its filesystem (a regular
    /// file's: a block device node's magic is that of the filesystem
    /// holding the node, devtmpfs, which says nothing about the device).
    /// Returns the file's word.
    fn refuse(&self, flag: ReadFlag, errno: i32, fs_magic: i64, regular: bool) -> u32 {
        if matches!(errno, libc::ENOSYS | libc::EPERM) {
            self.syscall[flag.index()].store(errno, Relaxed);
            return off(OFF_SYSCALL, errno);
        }
        if regular && fs_magic != 0 {
            let mut v = self.fs.lock().unwrap_or_else(|e| e.into_inner());
            if !v.iter().any(|r| r.flag == flag && r.magic == fs_magic) {
                v.push(RefusedFs {
                    flag,
                    magic: fs_magic,
                    fs: fs_name(fs_magic),
                    errno,
                });
            }
        }
        off(OFF_FILE, errno)
    }
}

/// One file's answer to one read flag: not asked yet, taken, or why not.
/// Shared by every queue and engine reading the file; relaxed loads and
/// stores (two threads asking at once both ask, and agree).
#[derive(Debug)]
pub(crate) struct FlagState {
    flag: ReadFlag,
    word: AtomicU32,
}

impl FlagState {
    pub(crate) const fn new(flag: ReadFlag) -> FlagState {
        FlagState {
            flag,
            word: AtomicU32::new(UNCHECKED),
        }
    }

    /// True once the flag is known to be taken.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.word.load(Relaxed) == ON
    }

    /// Whether the flag may be used: on the first call for the file, the
    /// process-wide memory is consulted and, if it knows nothing, `ask`
    /// asks the kernel (`Some(errno)`: refused with it; `None`: taken, or
    /// an answer from past the flag check, which the reads themselves will
    /// tell).
    #[inline]
    pub(crate) fn usable(
        &self,
        fs_magic: i64,
        regular: bool,
        ask: impl FnOnce() -> Option<i32>,
    ) -> bool {
        match self.word.load(Relaxed) {
            ON => true,
            UNCHECKED => self.first_use(fs_magic, regular, ask),
            _ => false,
        }
    }

    #[cold]
    fn first_use(&self, fs_magic: i64, regular: bool, ask: impl FnOnce() -> Option<i32>) -> bool {
        let word = match MEMORY.known(self.flag, fs_magic, regular) {
            Some(w) => w,
            None => match ask() {
                Some(e) => MEMORY.refuse(self.flag, e, fs_magic, regular),
                None => ON,
            },
        };
        let _ = self
            .word
            .compare_exchange(UNCHECKED, word, Relaxed, Relaxed);
        self.is_on()
    }

    /// Take the flag for taken without asking (tests: a file whose reads
    /// then meet the kernel's refusal).
    #[cfg(test)]
    pub(crate) fn assume_on(&self) {
        self.word.store(ON, Relaxed);
    }

    /// Turn the flag off for the file after `errno` (EOPNOTSUPP, ENOSYS,
    /// EPERM) and remember it for its filesystem (a regular file's) or the
    /// process. Returns true if this call turned it off.
    pub(crate) fn refuse(&self, errno: i32, fs_magic: i64, regular: bool) -> bool {
        let word = MEMORY.refuse(self.flag, errno, fs_magic, regular);
        matches!(self.word.swap(word, Relaxed), ON | UNCHECKED)
    }

    /// `None` while the flag has not been asked about, else whether it is
    /// taken (`Ok`) or why not, for a file on `fs`.
    pub(crate) fn answer(&self, fs: &'static str) -> Option<Result<(), Refusal>> {
        let w = self.word.load(Relaxed);
        let (kind, errno) = (w >> 16, (w & 0xffff) as i32);
        let flag = self.flag;
        match w {
            UNCHECKED => None,
            ON => Some(Ok(())),
            _ => Some(Err(match kind {
                OFF_FS => Refusal::Filesystem { flag, fs, errno },
                OFF_SYSCALL => Refusal::Syscall { flag, errno },
                _ => Refusal::Refused { flag, fs, errno },
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_memory_keeps_each_flag_apart() {
        // Made-up magics so other tests' refusals do not interfere.
        let magic = 0x7e57_f1a9;
        let nowait = FlagState::new(ReadFlag::Nowait);
        assert!(!nowait.usable(magic, true, || Some(libc::EOPNOTSUPP)));
        let fs = refused_filesystems();
        assert!(fs
            .iter()
            .any(|r| r.magic == magic && r.flag == ReadFlag::Nowait));
        assert!(!fs
            .iter()
            .any(|r| r.magic == magic && r.flag == ReadFlag::Dontcache));
        // The same filesystem may take the other flag.
        let dontcache = FlagState::new(ReadFlag::Dontcache);
        assert!(dontcache.usable(magic, true, || None));
        // Another file on it never asks about the refused flag.
        let other = FlagState::new(ReadFlag::Nowait);
        assert!(!other.usable(magic, true, || panic!("the filesystem is known")));
        assert_eq!(
            other.answer("x"),
            Some(Err(Refusal::Filesystem {
                flag: ReadFlag::Nowait,
                fs: "x",
                errno: libc::EOPNOTSUPP
            }))
        );
        assert_eq!(
            other.answer("x").unwrap().unwrap_err().to_string(),
            "no RWF_NOWAIT on x (EOPNOTSUPP from another file on it)"
        );
        // A block device's refusal is its own, never its node's filesystem's.
        let dev = FlagState::new(ReadFlag::Dontcache);
        assert!(dev.refuse(libc::EOPNOTSUPP, 0x7e57_f1aa, false));
        assert!(!refused_filesystems().iter().any(|r| r.magic == 0x7e57_f1aa));
    }
}
