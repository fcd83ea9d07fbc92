//! fio's groups: which group each job thread belongs to, and how its
//! results are folded into the entries fio prints.
//!
//! A job file's jobs become threads in fio's order: each job, then its
//! `numjobs` clones, file after file. Each thread is a [`Member`] of a
//! group: the first group is 0, and a job with `stonewall` (or
//! `wait_for_previous`) or `new_group` after other jobs starts the next
//! (fio's `add_job` in `init.c`; its clones never do). A report prints one
//! entry per thread, except that a thread with `group_reporting` is folded
//! into the entry before it when that entry is of the same group
//! ([`entries`], after fio's `__show_run_stats` in `stat.c`), and one
//! summary per group ([`groups`]).
//!
//! Everything here works on any list of results that knows each one's
//! member ([`Placed`]), in thread order: the jobs, the runs, the rows.

/// Where one job thread stands in fio's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Member {
    /// fio's `groupid`, from 0.
    pub group: u32,
    /// The job's `group_reporting`: this thread is folded into the entry of
    /// the thread before it when both are of the same group.
    pub group_reporting: bool,
    /// Which of its job's threads this is: 0 for the job itself, else fio's
    /// subjob number (a job of `numjobs=4` runs subjobs 0, 3, 2, 1 in that
    /// order; the number also picks the clone's `offset_increment`, its
    /// file names' `$jobnum` and its `directory`).
    pub clone: u32,
    /// fio's thread number: 1 for the first thread, counting every clone
    /// (it seeds the thread's random streams).
    pub thread_number: u32,
}

/// A result that knows which thread it is of.
pub trait Placed {
    /// Its thread's member.
    fn member(&self) -> &Member;
}

impl Placed for Member {
    fn member(&self) -> &Member {
        self
    }
}

/// What decides a job's group (its options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupOptions {
    /// `stonewall` or `wait_for_previous` (also set on the first job of
    /// every job file after the first).
    pub stonewall: bool,
    /// `new_group`.
    pub new_group: bool,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `numjobs`: the job and its clones.
    pub numjobs: u32,
}

/// The threads of `jobs` (in file order) in fio's thread order: for each,
/// the index of its job and its member.
pub fn assign(jobs: &[GroupOptions]) -> Vec<(usize, Member)> {
    let mut out = Vec::new();
    let (mut group, mut in_group) = (0u32, 0u32);
    for (i, j) in jobs.iter().enumerate() {
        if (j.stonewall || j.new_group) && in_group > 0 {
            in_group = 0;
            group += 1;
        }
        // fio adds the job, then its clones with subjob numbers counting
        // down from numjobs - 1; clones never start a group.
        let n = j.numjobs.max(1);
        for clone in std::iter::once(0).chain((1..n).rev()) {
            in_group += 1;
            out.push((
                i,
                Member {
                    group,
                    group_reporting: j.group_reporting,
                    clone,
                    thread_number: out.len() as u32 + 1,
                },
            ));
        }
    }
    out
}

/// The entries fio prints for `items` (in thread order): each a run of
/// consecutive items, a thread joining the entry before it when it has
/// `group_reporting` and that entry is of its group.
pub fn entries<T: Placed>(items: &[T]) -> Vec<&[T]> {
    let mut out: Vec<&[T]> = Vec::new();
    let mut start = 0;
    for i in 1..=items.len() {
        let joins = items.get(i).is_some_and(|t| {
            let m = t.member();
            m.group_reporting && m.group == items[i - 1].member().group
        });
        if !joins {
            out.push(&items[start..i]);
            start = i;
        }
    }
    out
}

/// The groups of `items` (in thread order, so each group's threads are
/// consecutive): the group id and its items, one summary each.
pub fn groups<T: Placed>(items: &[T]) -> Vec<(u32, &[T])> {
    let mut out: Vec<(u32, &[T])> = Vec::new();
    let mut start = 0;
    for i in 1..=items.len() {
        let same = items
            .get(i)
            .is_some_and(|t| t.member().group == items[start].member().group);
        if !same {
            out.push((items[start].member().group, &items[start..i]));
            start = i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(stonewall: bool, new_group: bool, group_reporting: bool, numjobs: u32) -> GroupOptions {
        GroupOptions {
            stonewall,
            new_group,
            group_reporting,
            numjobs,
        }
    }

    /// Clones follow their job with subjob numbers counting down (fio's
    /// `add_job` recursion), every thread numbered in that order.
    #[test]
    fn clones_follow_their_job_counting_down() {
        let m = assign(&[job(false, false, false, 4), job(false, false, false, 1)]);
        let got: Vec<(usize, u32, u32)> = m
            .iter()
            .map(|(j, m)| (*j, m.clone, m.thread_number))
            .collect();
        assert_eq!(got, [(0, 0, 1), (0, 3, 2), (0, 2, 3), (0, 1, 4), (1, 0, 5)]);
        assert!(m.iter().all(|(_, m)| m.group == 0));
    }

    /// stonewall and new_group start a group only after other jobs: a
    /// first job's stonewall does not (fio's `prev_group_jobs`).
    #[test]
    fn stonewall_and_new_group_start_the_next_group() {
        let m = assign(&[
            job(true, false, false, 1),
            job(false, false, false, 2),
            job(true, false, false, 1),
            job(false, true, false, 1),
            job(false, false, false, 1),
        ]);
        let groups: Vec<u32> = m.iter().map(|(_, m)| m.group).collect();
        assert_eq!(groups, [0, 0, 0, 1, 2, 2]);
    }

    /// A thread with group_reporting joins the entry before it in its
    /// group; one without starts its own; a new group starts a new entry.
    #[test]
    fn entries_fold_as_fio_prints_them() {
        let m: Vec<Member> = assign(&[
            job(false, false, true, 3),
            job(false, false, false, 1),
            job(false, false, true, 2),
            job(true, false, true, 2),
        ])
        .into_iter()
        .map(|(_, m)| m)
        .collect();
        let sizes: Vec<usize> = entries(&m).iter().map(|e| e.len()).collect();
        // [a a a] [b c c] [d d]: c (group_reporting) joins b's entry.
        assert_eq!(sizes, [3, 3, 2]);
        let g: Vec<(u32, usize)> = groups(&m).iter().map(|(g, t)| (*g, t.len())).collect();
        assert_eq!(g, [(0, 6), (1, 2)]);
        let none: Vec<Member> = Vec::new();
        assert!(entries(&none).is_empty() && groups(&none).is_empty());
    }
}
