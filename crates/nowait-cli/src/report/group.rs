//! What fio reports as one job, and its groups: every job and clone
//! (thread) on its own, or, with `group_reporting`, the threads of a
//! reporting group folded into one entry named after the group's first
//! job (fio's `__show_run_stats`: a thread joins the entry before it when
//! it reports by group and has the same `groupid`); and each group's run
//! statistics for the `Run status group` lines (fio's `group_run_stats`:
//! the shortest and longest runtime, the smallest and largest bandwidth
//! of an entry, all bytes, and the bytes over the longest runtime).

use crate::measure::disk::DiskStat;
use crate::measure::metrics::Measured;
use crate::measure::row::Row;
use crate::model::group::{self, Member, Placed};
use crate::model::job::Job;

/// One reported job (fio's `thread_stat` after folding).
pub struct Entry<'a> {
    /// The first member's job (its name, options and group).
    pub job: &'a Job,
    /// Everything the members measured, added up (`members` counts them).
    pub m: Measured,
    /// The rows whose threads are in the entry, in order.
    pub rows: Vec<usize>,
}

impl Entry<'_> {
    /// fio's `groupid`.
    pub fn groupid(&self) -> u32 {
        self.job.member.group
    }

    /// Milliseconds of the run (fio's `runtime`: the longest member's,
    /// rounded up to a whole millisecond as fio's `update_runtime` does).
    pub fn runtime_ms(&self) -> u64 {
        self.m.elapsed.as_micros().div_ceil(1000) as u64
    }

    /// Bytes per second over the runtime, as fio computes it (integers).
    pub fn bw(&self) -> u64 {
        match self.runtime_ms() {
            0 => 0,
            r => self.m.bytes * 1000 / r,
        }
    }
}

/// One thread of a row, placed in fio's report.
struct Thread<'a> {
    member: Member,
    row: usize,
    job: &'a Job,
    m: &'a Measured,
}

impl Placed for Thread<'_> {
    fn member(&self) -> &Member {
        &self.member
    }
}

/// The entries of `rows`, in thread order, folded as fio folds them
/// ([`crate::model::group::entries`]): a row's threads are its job's
/// clones, numbered from the job's thread number.
pub fn entries(rows: &[Row]) -> Vec<Entry<'_>> {
    let threads: Vec<Thread> = rows
        .iter()
        .enumerate()
        .flat_map(|(row, r)| {
            let job = &r.ours.job;
            let ms: Vec<&Measured> = match r.ours.threads.is_empty() {
                true => vec![&r.ours.measured],
                false => r.ours.threads.iter().collect(),
            };
            ms.into_iter().enumerate().map(move |(t, m)| Thread {
                member: Member {
                    clone: job.member.clone + t as u32,
                    thread_number: job.member.thread_number + t as u32,
                    ..job.member
                },
                row,
                job,
                m,
            })
        })
        .collect();
    group::entries(&threads)
        .into_iter()
        .map(|ts| {
            let mut m = ts[0].m.clone();
            m.members = m.members.max(1);
            let mut rows = vec![ts[0].row];
            for t in &ts[1..] {
                m.add(t.m);
                if rows.last() != Some(&t.row) {
                    rows.push(t.row);
                }
            }
            Entry {
                job: ts[0].job,
                m,
                rows,
            }
        })
        .collect()
}

/// A group's run statistics (reads), as fio's `group_run_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRun {
    /// The group.
    pub groupid: u32,
    /// Shortest and longest runtime of an entry, ms.
    pub min_run: u64,
    /// See `min_run`.
    pub max_run: u64,
    /// Smallest and largest bandwidth of an entry, bytes/s.
    pub min_bw: u64,
    /// See `min_bw`.
    pub max_bw: u64,
    /// Bytes read by all entries.
    pub io_bytes: u64,
    /// All bytes over the longest runtime, bytes/s (fio's `agg`).
    pub agg: u64,
}

/// The groups of `entries`, in group order; entries that read nothing
/// for any time are left out as fio leaves them out.
pub fn groups(entries: &[Entry]) -> Vec<GroupRun> {
    let mut out: Vec<GroupRun> = Vec::new();
    for e in entries {
        let id = e.groupid();
        let g = match out.iter_mut().position(|g| g.groupid == id) {
            Some(i) => &mut out[i],
            None => {
                out.push(GroupRun {
                    groupid: id,
                    min_run: 0,
                    max_run: 0,
                    min_bw: u64::MAX,
                    max_bw: 0,
                    io_bytes: 0,
                    agg: 0,
                });
                out.last_mut().expect("just pushed")
            }
        };
        let run = e.runtime_ms();
        if run == 0 {
            continue;
        }
        if g.min_run == 0 || run < g.min_run {
            g.min_run = run;
        }
        g.max_run = g.max_run.max(run);
        let bw = e.bw();
        g.min_bw = g.min_bw.min(bw);
        g.max_bw = g.max_bw.max(bw);
        g.io_bytes += e.m.bytes;
    }
    for g in &mut out {
        g.agg = (g.io_bytes * 1000).checked_div(g.max_run).unwrap_or(0);
    }
    out.sort_by_key(|g| g.groupid);
    out
}

/// The block devices of all rows, each device's counters added up over
/// the runs.
pub fn disks(rows: &[Row]) -> Vec<DiskStat> {
    let mut out: Vec<DiskStat> = Vec::new();
    for d in rows.iter().flat_map(|r| &r.ours.disks) {
        match out.iter_mut().find(|o| o.name == d.name) {
            Some(o) => o.add(d),
            None => out.push(d.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::row;
    use std::time::Duration;

    fn clones(n: usize, reporting: bool) -> Row {
        let mut r = row::example();
        r.ours.job.numjobs = n;
        r.ours.job.member.group_reporting = reporting;
        r.ours.threads = (0..n)
            .map(|i| Measured {
                ios: 100,
                bytes: 409_600,
                elapsed: Duration::from_millis(10 + i as u64),
                run_ms: 10 + i as u64,
                members: 1,
                ..Measured::default()
            })
            .collect();
        r
    }

    /// numjobs=4: four entries without group_reporting, one with it, with
    /// the counts added and the longest runtime.
    #[test]
    fn clones_fold_only_with_group_reporting() {
        let rows = [clones(4, false)];
        let e = entries(&rows);
        assert_eq!(e.len(), 4);
        assert!(e.iter().all(|e| e.m.members == 1 && e.m.ios == 100));
        let rows = [clones(4, true)];
        let e = entries(&rows);
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].m.members, e[0].m.ios, e[0].runtime_ms()),
            (4, 400, 13)
        );
        assert_eq!(e[0].m.run_ms, 10 + 11 + 12 + 13);
        let g = groups(&e);
        assert_eq!((g[0].min_run, g[0].max_run), (13, 13));
        assert_eq!(g[0].agg, 4 * 409_600 * 1000 / 13);
    }

    /// Jobs of one group with group_reporting fold into the first one's
    /// entry; a job of another group starts its own.
    #[test]
    fn jobs_of_a_group_fold_into_the_first() {
        let mut a = clones(2, true);
        a.ours.job.name = "a".into();
        let mut b = clones(1, true);
        b.ours.job.name = "b".into();
        let mut c = clones(1, true);
        c.ours.job.name = "c".into();
        c.ours.job.member.group = 1;
        let rows = [a, b, c];
        let e = entries(&rows);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].job.name.as_str(), e[0].m.members), ("a", 3));
        assert_eq!(e[0].rows, [0, 1]);
        assert_eq!((e[1].job.name.as_str(), e[1].groupid()), ("c", 1));
        let g = groups(&e);
        assert_eq!(g.iter().map(|g| g.groupid).collect::<Vec<_>>(), [0, 1]);
    }

    /// Without group_reporting each entry is its own, and the group line
    /// spans their runtimes and bandwidths.
    #[test]
    fn group_runs_span_entries() {
        let rows = [clones(3, false)];
        let g = groups(&entries(&rows));
        assert_eq!((g[0].min_run, g[0].max_run), (10, 12));
        assert_eq!(
            (g[0].min_bw, g[0].max_bw),
            (409_600 * 1000 / 12, 409_600 * 100)
        );
        assert_eq!(g[0].io_bytes, 3 * 409_600);
    }
}
