//! Unit tests of the read loop's timing.

use std::time::{Duration, Instant};

use super::stamps::Stamps;

/// With batched submission (iodepth_batch_submit > 1) each read's slat
/// and lat start at its own push, as fio stamps each io_u's start_time,
/// not at the batch's first push; clat starts at the submit's return.
#[test]
fn batched_reads_are_timed_from_their_own_push() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    let mut s = Stamps::new(4, t0);
    for (id, at) in [(2u32, 0), (0, 1), (3, 2)] {
        s.pushed[id as usize] = t0 + us(at);
    }
    let mut slats = Vec::new();
    s.submitted(&[2, 0, 3], t0 + us(5), true, |_, d| slats.push(d));
    assert_eq!(slats, [us(5), us(4), us(3)]);
    assert_eq!(s.issued[0], t0 + us(5));
    assert_eq!(s.issued[3], t0 + us(5));
    // Carried by the reap's call: clat from the push, no slat.
    slats.clear();
    s.submitted(&[3], t0 + us(9), false, |_, d| slats.push(d));
    assert!(slats.is_empty());
    assert_eq!(s.issued[3], t0 + us(2));
}
