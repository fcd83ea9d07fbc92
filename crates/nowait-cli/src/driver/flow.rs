//! fio's token flow between jobs (`flow`, `flow_id`, `flow_sleep`; fio's
//! `flow.c`): the jobs of one flow group share a count of reads, and a job
//! reads only while its own share of that count is at most its share of
//! the group's weights. A job leaves its group when it ends, taking its
//! reads and weight with it, so the others are not held back by it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One flow group's shared counts.
#[derive(Debug)]
struct Group {
    /// Reads of the group (fio starts it at 1).
    count: AtomicU64,
    /// The weights of the group's jobs.
    weight: AtomicU64,
}

/// The flow groups of a run, by `flow_id`.
#[derive(Debug, Default)]
pub struct Flows(HashMap<u32, Arc<Group>>);

impl Flows {
    /// A job of weight `weight` joins group `id` (fio adds every job's
    /// weight when the jobs are set up, before any runs).
    pub fn join(&mut self, id: u32, weight: u32) -> Option<Member> {
        if weight == 0 {
            return None;
        }
        let g = self.0.entry(id).or_insert_with(|| {
            Arc::new(Group {
                count: AtomicU64::new(1),
                weight: AtomicU64::new(0),
            })
        });
        g.weight.fetch_add(u64::from(weight), Ordering::Relaxed);
        Some(Member {
            group: g.clone(),
            weight: u64::from(weight),
            count: 0,
        })
    }
}

/// A job's place in its flow group.
#[derive(Debug)]
pub struct Member {
    group: Arc<Group>,
    weight: u64,
    count: u64,
}

impl Member {
    /// Whether the job may read now (fio's `flow_threshold_exceeded`, the
    /// other way round): if so the read is counted.
    pub fn may_read(&mut self) -> bool {
        let total = self.group.count.load(Ordering::Relaxed).max(1);
        let weights = self.group.weight.load(Ordering::Relaxed).max(1);
        let share = self.count as f64 / total as f64;
        let due = self.weight as f64 / weights as f64;
        if share > due {
            return false;
        }
        self.group.count.fetch_add(1, Ordering::Relaxed);
        self.count += 1;
        true
    }
}

impl Drop for Member {
    /// The job ended: its reads and weight leave the group.
    fn drop(&mut self) {
        self.group.count.fetch_sub(self.count, Ordering::Relaxed);
        self.group.weight.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights 2 and 1: of the reads allowed, two thirds go to the first.
    #[test]
    fn reads_follow_the_weights() {
        let mut f = Flows::default();
        let mut a = f.join(0, 2).unwrap();
        let mut b = f.join(0, 1).unwrap();
        let (mut na, mut nb) = (0, 0);
        for _ in 0..3000 {
            na += u32::from(a.may_read());
            nb += u32::from(b.may_read());
        }
        let r = f64::from(na) / f64::from(nb);
        assert!((1.9..2.1).contains(&r), "{na} / {nb}");
        drop(a);
        // Alone in its group, b is never held back.
        assert!((0..100).all(|_| b.may_read()));
        assert!(f.join(1, 0).is_none());
    }
}
