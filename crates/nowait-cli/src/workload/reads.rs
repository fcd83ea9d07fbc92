//! Where each read of a thread goes: the workload's side of the driver.
//! The driver asks a thread's [`Reads`] for the next read (which file,
//! which offset, how long) until it answers `None`, tells it when a
//! measured read completed, and carries out its pacing, if it has any
//! (rates, think time: [`Pacing`]); fio's job reads and the scenarios'
//! streams are `Reads`.

use std::time::Duration;

pub use crate::workload::fio_rate::Pacing;

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
    /// (its size, its loops, its `number_ios`); a time-based workload never
    /// ends on its own.
    fn next(&mut self) -> Option<Io>;

    /// A measured read of file `file` completed with completion latency
    /// `clat` (from its push in the driver's `Mode::Serve` and at depth 1;
    /// else from the return of its submit call).
    #[inline]
    fn done(&mut self, _file: usize, _clat: Duration) {}

    /// The thread's pacing (rates, think time), if it has any.
    #[inline]
    fn pacing(&mut self) -> Option<&mut Pacing> {
        None
    }
}
