//! A run's outcome in words, shared by the text and JSON reports, the
//! scenarios and `probe`: what became of `hipri` and of `--cache`, the
//! nowait path's counters and a file's state, where clat starts.

use crate::base::units::short_ns;
use crate::measure::metrics::Measured;
use crate::measure::outcome::Outcome;
use crate::model::job::Job;

/// What became of `hipri=1` (polled completions), from the counters:
/// `None` when it was not asked for.
pub fn hipri_status(job: &Job, m: &Measured) -> Option<String> {
    if job.ioengine != nowait::BackendKind::Uring || job.hipri != Some(true) {
        return None;
    }
    let q = &m.queue;
    Some(if !job.direct {
        "not applied: only direct reads are polled (use --direct=1)".into()
    } else if q.backend.polled > 0 && q.backend.poll_fallbacks == 0 {
        format!("polled ({} reads completed by polling)", q.backend.polled)
    } else if q.backend.polled == 0 && q.backend.poll_fallbacks > 0 {
        "unsupported: device does not poll (EOPNOTSUPP), fell back to interrupts".into()
    } else if q.backend.polled == 0 {
        "unsupported: device does not poll (refused earlier on this file), interrupts used".into()
    } else {
        format!(
            "partly polled: {} polled, {} refused (EOPNOTSUPP) and resubmitted",
            q.backend.polled, q.backend.poll_fallbacks
        )
    })
}

/// What became of `--cache=drop|adaptive` (fio's `uncached=1`), from the
/// queue's counters over `ios` reads: `None` for keep (and direct reads).
pub fn cache_words(job: &Job, c: &nowait::DontcacheStats, ios: u64) -> Option<String> {
    let policy = job.normalized().cache;
    if policy == nowait::CachePolicy::Keep {
        return None;
    }
    let mut s = format!(
        "{policy}: {} of {ios} reads uncached (RWF_DONTCACHE)",
        c.uncached
    );
    if c.refused + c.kept > 0 {
        s.push_str(&format!(
            "; {} refused the flag (EOPNOTSUPP) and {} more kept as refused before: the \
             filesystem has no uncached reads, so these were read cached",
            c.refused, c.kept
        ));
    } else if policy == nowait::CachePolicy::Adaptive && c.uncached == 0 {
        s.push_str(
            "; no scan of a file too large to stay cached here, so every read kept its pages",
        );
    }
    Some(s)
}

/// One line of the nowait path's counters for text reports.
pub fn nowait_path_line(f: &nowait::NowaitStats) -> String {
    format!(
        "hits {} ({:.1}% of tries), partial {}, misses {}, refused {}, skipped {}, \
         offloads {} (worker preads {}), wakeups {}",
        f.hits,
        f.hit_ratio() * 100.0,
        f.partial_hits,
        f.misses,
        f.refused,
        f.skipped,
        f.offloads,
        f.worker_reads,
        f.wakeups
    )
}

/// A file's nowait-path state in words.
pub fn nowait_state_words(st: &nowait::NowaitState) -> String {
    match st.off {
        Some(off) => format!("off: {off}"),
        None => format!(
            "on, hit ratio {:.2}{}",
            st.hit_ratio,
            if st.adaptive_skipping {
                " (adaptive: skipping the nowait try, re-probing)"
            } else {
                ""
            }
        ),
    }
}

/// Where a run's clat starts, and the fio column it matches.
pub fn clat_from(o: &Outcome) -> &'static str {
    use nowait::BackendKind::*;
    if o.job.clat_matches_fio_lat() {
        match o.job.ioengine {
            Uring => {
                "just before the read's push: at iodepth 1 one io_uring_enter submits the read \
                 and waits for it, so clat includes the submission, as fio's lat does (compare \
                 with fio's lat)"
            }
            Aio => {
                "just before the read's push: at iodepth 1 the reap submits the read \
                 (io_submit) and then waits for it (io_getevents), so clat includes the \
                 submission, as fio's lat does (compare with fio's lat)"
            }
            Pool => {
                "just before the read's push: at iodepth 1 the push tries the read inline \
                 (preadv2 with RWF_NOWAIT, per --nowait) and the reap hands a miss to a worker \
                 thread and waits for it, so clat includes the try and the hand-off, as fio's \
                 lat would (fio has no thread-pool engine)"
            }
            _ => {
                "just before the read's push: at iodepth 1 the reap submits a direct read \
                 (io_submit, then io_getevents waits) or hands a buffered one to a worker \
                 thread after an inline RWF_NOWAIT try (per --nowait) and waits for it, so \
                 clat includes the submission, as fio's lat would (fio has no such engine)"
            }
        }
    } else if o.job.ioengine == Sync {
        "just before the pread, as fio's psync clat"
    } else {
        "the return of the submit call, as fio's io_uring and libaio clat (fio's lat, and \
         nowait's lat_ns, start before the submission)"
    }
}

/// A latency fio may not have printed: "–" when it did not (never 0).
pub fn opt_ns(ns: Option<u64>) -> String {
    ns.map_or("–".into(), |ns| short_ns(ns as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At iodepth 1 clat holds the submission, said per backend: one
    /// io_uring_enter, io_submit then io_getevents, a pool thread's hand-off.
    #[test]
    fn clat_from_names_each_backends_submission_at_iodepth_1() {
        use nowait::BackendKind::*;
        let mut r = crate::measure::row::fixture::example();
        let mut from = |k| {
            r.ours.job.ioengine = k;
            clat_from(&r.ours)
        };
        assert!(from(Uring).contains("one io_uring_enter submits"));
        let aio = from(Aio);
        assert!(
            aio.contains("(io_submit) and then waits") && !aio.contains("one "),
            "{aio}"
        );
        for k in [Pool, AioPool] {
            let p = from(k);
            assert!(
                p.contains("worker thread") && !p.contains("one system call"),
                "{p}"
            );
        }
        assert!(from(Sync).contains("before the pread"));
    }
}
