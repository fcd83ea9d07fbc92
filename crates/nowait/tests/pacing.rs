//! Submission pacing (#12): batched, paced and adaptive submission give
//! byte-exact data on `uring` and `aio`, paced submission really hands at
//! most two reads to each system call, and the adaptive policy batches reads
//! that complete inside the submitting call (page cache) and paces direct
//! reads, which never do on a DEFER_TASKRUN ring. `Queue::submit_chunk`
//! says which: 2 while paced, `usize::MAX` while batched (and for backends
//! that do not pace).

mod common;

use common::{direct_dir, pattern_file, watchdog};
use nowait::{
    pattern, BackendChoice, BackendKind, Buf, Direct, File, Queue, Read, SubmitPolicy,
    UringSetupFlags,
};
use std::path::Path;
use std::time::Duration;

const SIZE: u64 = 8 << 20;
const BATCH: u64 = 32;

/// `rounds` rounds of `BATCH` 4 KiB reads pushed together, one `submit`,
/// reaped with `reap(1)`; every byte checked. Returns the queue.
fn rounds(mut q: Queue, path: &Path, direct: Direct, rounds: u64, p: &common::Progress) -> Queue {
    let f = File::open(path, direct).unwrap();
    let mut rng = common::Rng::from_env("pacing");
    let mut bufs: Vec<Buf> = (0..BATCH).map(|_| Buf::with_align(4096, 4096)).collect();
    for r in 0..rounds {
        let mut offs = Vec::new();
        for i in 0..BATCH {
            let off = rng.below(SIZE / 4096) * 4096;
            offs.push(off);
            q.push(Read {
                file: &f,
                offset: off,
                len: 4096,
                buf: bufs.pop().unwrap(),
                user_data: i,
                ioprio: 0,
                cache: None,
            })
            .map_err(|r| r.error)
            .unwrap();
        }
        q.submit().unwrap();
        let mut out = Vec::new();
        while out.len() < BATCH as usize {
            q.reap(1, Some(Duration::from_secs(10)), &mut out).unwrap();
            p.step(|| format!("round {r}: {} of {BATCH} reaped", out.len()));
        }
        for c in out {
            let off = offs[c.user_data as usize];
            assert_eq!(c.result.unwrap(), 4096, "round {r}, offset {off}");
            pattern::check(off, c.buf.as_slice()).unwrap_or_else(|m| panic!("round {r}: {m}"));
            bufs.push(c.buf);
        }
    }
    q
}

fn build(kind: BackendKind, policy: SubmitPolicy) -> Option<Queue> {
    match Queue::builder()
        .depth(BATCH as usize)
        .backend(BackendChoice::Exactly(kind))
        .submit_policy(policy)
        .build()
    {
        Ok(q) => Some(q),
        Err(e) => {
            common::skip(&format!("pacing on {kind}"), &e.to_string());
            None
        }
    }
}

#[test]
fn every_policy_reads_byte_exact_and_paced_means_two_per_call() {
    let dir = match direct_dir() {
        Ok(d) => d,
        Err(why) => {
            return common::skip(
                "every_policy_reads_byte_exact_and_paced_means_two_per_call",
                &why,
            )
        }
    };
    let path = pattern_file(dir.path(), "f", SIZE);
    for kind in [BackendKind::Uring, BackendKind::Aio] {
        for policy in [
            SubmitPolicy::Batch,
            SubmitPolicy::Paced,
            SubmitPolicy::Adaptive,
        ] {
            let path = path.clone();
            let what = format!("{kind} {policy}");
            let stats = watchdog(&what, Duration::from_secs(20), move |p| {
                let q = build(kind, policy)?;
                let q = rounds(q, &path, Direct::On, 4, p);
                Some((
                    q.backend_stats(),
                    q.submission().unwrap_or_default(),
                    q.submit_chunk(),
                ))
            });
            let Some((s, note, chunk)) = stats else {
                continue;
            };
            assert!(note.contains(policy.name()), "{what}: {note}");
            // What a caller gathering pushes for one submit is told.
            let paced_now = note.contains("now paced") || policy == SubmitPolicy::Paced;
            assert_eq!(
                chunk,
                if paced_now { 2 } else { usize::MAX },
                "{what}: {note}"
            );
            match policy {
                SubmitPolicy::Batch => {
                    assert_eq!(s.paced_submits, 0, "{what}");
                    // One call per batch plus the reaps.
                    assert!(s.syscalls < 4 * BATCH, "{what}: {} calls", s.syscalls);
                }
                SubmitPolicy::Paced => {
                    // 32 reads at most two per call: at least 16 submitting
                    // calls per round.
                    assert!(s.paced_submits >= 4 * BATCH / 2, "{what}: {s:?}");
                    assert!(s.syscalls >= 4 * BATCH / 2, "{what}: {s:?}");
                }
                SubmitPolicy::Adaptive => {}
            }
        }
    }
}

#[test]
fn adaptive_batches_cached_reads_and_paces_direct_ones() {
    let dir = match direct_dir() {
        Ok(d) => d,
        Err(why) => {
            return common::skip("adaptive_batches_cached_reads_and_paces_direct_ones", &why)
        }
    };
    let path = pattern_file(dir.path(), "f", SIZE);
    // Cached: read the file once so every read is a page-cache hit.
    std::fs::read(&path).unwrap();
    let p2 = path.clone();
    let cached = watchdog("adaptive, cached", Duration::from_secs(20), move |p| {
        let q = build(BackendKind::Uring, SubmitPolicy::Adaptive)?;
        let q = rounds(q, &p2, Direct::Off, 4, p);
        Some((q.backend_stats(), q.submission().unwrap(), q.submit_chunk()))
    });
    let Some((s, note, chunk)) = cached else {
        return;
    };
    assert!(note.contains("now batched"), "cached reads: {note}");
    assert_eq!(chunk, usize::MAX, "{note}");
    assert_eq!(s.paced_submits, 0, "{note}");
    let direct = watchdog("adaptive, direct", Duration::from_secs(20), move |p| {
        let q = build(BackendKind::Uring, SubmitPolicy::Adaptive)?;
        let q = rounds(q, &path, Direct::On, 4, p);
        Some((
            q.backend_stats(),
            q.submission().unwrap(),
            q.uring_setup(),
            q.submit_chunk(),
        ))
    });
    let Some((s, note, flags, chunk)) = direct else {
        return;
    };
    if !flags.is_some_and(|f| f.contains(UringSetupFlags::DEFER_TASKRUN)) {
        // Without deferred task work a fast device may post completions
        // inside the submitting call: nothing to assert about the choice.
        return common::skip(
            "adaptive_batches_cached_reads_and_paces_direct_ones (direct half)",
            &format!("ring without DEFER_TASKRUN: setup flags {flags:?}"),
        );
    }
    assert!(note.contains("now paced"), "direct reads: {note}");
    assert_eq!(chunk, 2, "{note}");
    assert!(
        s.paced_submits > 0 && s.pacing_switches == 1,
        "{note}: {s:?}"
    );
}

#[test]
fn backends_that_do_not_pace_never_ask_for_small_submits() {
    for kind in [BackendKind::Sync, BackendKind::Pool] {
        let q = build(kind, SubmitPolicy::Paced).expect("sync and pool always build");
        assert_eq!(q.submit_chunk(), usize::MAX, "{kind}");
    }
}
