//! Where each read of a thread goes: the workload's side of the driver.
//! The driver asks a thread's [`Reads`] for the next read (which file,
//! which offset) and tells it when a measured read completed; the offset
//! generator and the scenarios' streams are `Reads`.

use std::time::Duration;

/// Where each read of a thread goes, and what else its completion records.
pub trait Reads: Send {
    /// The next read: an index into the driver's files, and the offset.
    fn next(&mut self) -> (usize, u64);

    /// A measured read of file `file` completed with completion latency
    /// `clat` (from its push in the driver's `Mode::Serve` and at depth 1;
    /// else from the return of its submit call).
    #[inline]
    fn done(&mut self, _file: usize, _clat: Duration) {}
}
