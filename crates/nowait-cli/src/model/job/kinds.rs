//! The kinds a job's options choose between: sequential or random reads,
//! the engines nowait runs itself, zone modes, how reads are submitted,
//! the fio version whose behaviour a job file asks for, and the default
//! seeds.

/// Sequential or random reads (fio's `rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// `rw=read`: sequential reads, wrapping at the end of the region.
    Read,
    /// `rw=randread`: random block-aligned reads.
    RandRead,
}

impl Rw {
    /// fio's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::RandRead => "randread",
        }
    }
}

/// The engines nowait runs itself, in the driver, as fio's engine of the
/// same name does (the others are the library's backends, `ioengine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnEngine {
    /// fio's `null`: no I/O at all, each read complete at once (the
    /// harness's own cost per read).
    Null,
    /// fio's `sync`: `lseek(2)` then `read(2)`.
    Sync,
    /// fio's `pvsync`: `preadv(2)` with one buffer.
    Pvsync,
    /// fio's `pvsync2`: `preadv2(2)`, with `hipri` (`RWF_HIPRI`) and `nowait`
    /// (`RWF_NOWAIT`) as its flags.
    Pvsync2,
    /// fio's `mmap`: the file mapped, each read a copy out of the mapping.
    Mmap,
}

impl OwnEngine {
    /// fio's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OwnEngine::Null => "null",
            OwnEngine::Sync => "sync",
            OwnEngine::Pvsync => "pvsync",
            OwnEngine::Pvsync2 => "pvsync2",
            OwnEngine::Mmap => "mmap",
        }
    }

    /// Whether the engine reads one block at a time (fio caps the depth of
    /// its synchronous engines at 1); `null` completes any depth at once.
    pub fn synchronous(self) -> bool {
        self != OwnEngine::Null
    }
}

/// `zonemode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// `none` (default).
    #[default]
    None,
    /// `strided`: `zonesize` bytes of each `zonerange`, skipping `zoneskip`.
    Strided,
}

/// `io_submit_mode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// `inline` (default): the job's thread submits; a rate wait first
    /// waits for the reads in flight.
    #[default]
    Inline,
    /// `offload`: reads are submitted when due whatever is in flight (fio
    /// hands them to a submitting thread; nowait's job thread reaps while
    /// it waits for the next read's time instead).
    Offload,
}

/// Which fio's rules a job follows where fio versions differ (the seeds of
/// random offsets changed in fio 3.35).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FioVersion {
    /// Major version (3).
    pub major: u32,
    /// Minor version (33).
    pub minor: u32,
}

/// nowait's own seed before fio's streams drove random offsets: the
/// scenarios' streams still use it.
pub const DEFAULT_SEED: u64 = 0x6e6f_7761_6974; // "nowait"

/// fio's default `randseed`.
pub const FIO_RANDSEED: u64 = 0x89;
