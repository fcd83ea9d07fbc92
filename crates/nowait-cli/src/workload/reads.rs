//! Where each read of a thread goes: the workload's side of the driver.
//! The driver asks a thread's [`Reads`] for the next read (which file,
//! which offset, how long) until it answers `None`, and tells it when a
//! measured read completed; a bench job's [`Offsets`](crate::workload::offsets::Offsets)
//! and the scenarios' streams are `Reads`.

use std::time::Duration;

/// One read: an index into the driver's files, the offset, the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// Which of the thread's files.
    pub file: u32,
    /// The length in bytes.
    pub len: u32,
    /// The byte offset.
    pub offset: u64,
}

/// Where each read of a thread goes, and what else its completion records.
pub trait Reads: Send {
    /// The next read, or `None` when the thread has read all it reads
    /// (its region, its `number_ios`); a time-based workload never ends on
    /// its own.
    fn next(&mut self) -> Option<Io>;

    /// A measured read of file `file` completed with completion latency
    /// `clat`.
    #[inline]
    fn done(&mut self, _file: usize, _clat: Duration) {}
}
