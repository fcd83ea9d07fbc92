//! The `sync` backend of whole-file reads (also `aio`'s, which has no open
//! operation, and whose buffered reads complete inside `io_submit`): open,
//! read until a short read, close, one file after another on the calling
//! thread.

use std::path::Path;

use super::budget::Budget;
use super::stats::Counters;
use super::whole::{failure, finish, read_blocking, Held, Sink, Step};
use crate::sys::open::c_path;

/// Read every path in order on this thread, results to `sink`.
pub(crate) fn read_batch<P: AsRef<Path>>(
    paths: &[P],
    budget: &Budget,
    counters: &Counters,
    sink: &mut Sink<'_>,
) {
    for (index, path) in paths.iter().enumerate() {
        let path = path.as_ref();
        Counters::add(&counters.files, 1);
        let first = budget
            .try_start(1)
            .expect("one file at a time fits any budget");
        let mut held = Held::new(first);
        let r = match c_path(path) {
            Ok(cpath) => read_blocking(path, &cpath, None, &mut held, budget, counters),
            Err(e) => Err(failure(path, Step::Open, e)),
        };
        finish(budget, counters, sink, index, held, r);
    }
}
