//! io_uring blocked the way Docker's default seccomp profile blocks it:
//! the engine must fall back down the ladder, say why, and still read
//! correctly — `O_DIRECT` files through native AIO and buffered files
//! through the pool, in one queue; everything through the pool when AIO
//! cannot be set up either.
//!
//! The filter is installed on one thread only (seccomp filters are per
//! thread unless synchronised), so the other tests keep io_uring.

mod common;
use common::{assert_in_child, deny_io_uring_setup_on_this_thread, deny_on_this_thread, run_child};

use common::{direct_dir, mixed_reads, pattern_file, Rng};
use nowait::{pattern, BackendChoice, BackendKind, Buf, Direct, Error, File, Queue};

/// The size of the pattern files the ladder tests read.
const SIZE: u64 = 4 << 20;

/// Reads per round in the mixed tests: unequal, so a swapped route shows.
const MIX: (usize, usize) = (40, 24);

/// A direct and a buffered handle on one pattern file, or why not.
fn direct_and_buffered() -> Result<(tempfile::TempDir, File, File), String> {
    let dir = direct_dir()?;
    let path = pattern_file(dir.path(), "mix.dat", SIZE);
    let direct = File::open(&path, Direct::On).map_err(|e| e.to_string())?;
    let buffered = File::open(&path, Direct::Off).unwrap();
    Ok((dir, direct, buffered))
}

/// Mixed reads at QD 64 on an `aio+pool` queue; the halves' own counters
/// (each counts the reads pushed to it) prove the route of every read.
fn mixed_reads_take_both_halves(q: &mut Queue, test: &str) {
    let (_dir, direct, buffered) = match direct_and_buffered() {
        Ok(f) => f,
        Err(why) => return common::skip_line(&format!("{test} mixed reads: {why}")),
    };
    assert_eq!(q.backend().kind, BackendKind::AioPool, "{:?}", q.backend());
    let mut rng = Rng::from_env(test);
    let rounds = 3;
    let (b0, st0) = (q.backend_stats(), q.stats());
    mixed_reads(q, &direct, &buffered, SIZE, MIX, rounds, &mut rng);
    let (n_direct, n_buffered) = ((MIX.0 * rounds) as u64, (MIX.1 * rounds) as u64);
    let (mut b, st) = (q.backend_stats(), q.stats());
    b.aio_reads -= b0.aio_reads;
    b.pool_reads -= b0.pool_reads;
    // Reads inside the file come back whole; a retry (EINTR/EAGAIN) would
    // add a raw read to the half that owns the file.
    let retries = st.reissued() - st0.reissued();
    assert_eq!(
        b.aio_reads + b.pool_reads,
        n_direct + n_buffered + retries,
        "{b:?}"
    );
    assert!(
        (n_direct..=n_direct + retries).contains(&b.aio_reads),
        "direct reads must go to aio: {b:?}"
    );
    assert!(
        (n_buffered..=n_buffered + retries).contains(&b.pool_reads),
        "buffered reads must go to the pool: {b:?}"
    );
}

#[test]
fn io_uring_blocked_by_seccomp_falls_back() {
    if cfg!(not(target_arch = "x86_64")) && cfg!(not(target_arch = "aarch64")) {
        common::skip_line(
            "io_uring_blocked_by_seccomp_falls_back: filter written for x86_64/aarch64 only",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 1 << 20);
    std::thread::spawn(move || {
        if let Err(why) = deny_io_uring_setup_on_this_thread() {
            common::skip_line(&format!(
                "io_uring_blocked_by_seccomp_falls_back: cannot install a seccomp filter: {why}"
            ));
            return;
        }
        // Asking for uring exactly: a clear error that names the cause and the way out.
        let e = Queue::builder()
            .backend(BackendChoice::Exactly(BackendKind::Uring))
            .build()
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                Error::BackendUnavailable {
                    backend: BackendChoice::Exactly(BackendKind::Uring),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(msg.contains("EPERM") && msg.contains("seccomp"), "{msg}");
        assert!(msg.contains("fall back"), "{msg}");

        // Auto: falls back to aio+pool, records why, reads correctly.
        let mut q = Queue::builder()
            .depth(64)
            .build()
            .expect("fallback backend");
        let report = q.backend().clone();
        assert_eq!(report.kind, BackendKind::AioPool, "{report:?}");
        assert!(
            report.reason.to_string().contains("EPERM"),
            "{}",
            report.reason
        );
        assert!(
            report
                .reason
                .to_string()
                .contains("O_DIRECT files use aio, buffered files use pool"),
            "{}",
            report.reason
        );
        assert!(
            report.detail.contains("native AIO") && report.detail.contains("thread pool"),
            "{}",
            report.detail
        );
        let f = File::open(&path, Direct::Auto).unwrap();
        let (r, b) = q.read_at(&f, 12_345, Buf::new(100_000));
        assert_eq!(r.unwrap(), 100_000);
        pattern::check(12_345, b.as_slice()).unwrap();
        mixed_reads_take_both_halves(&mut q, "io_uring_blocked_by_seccomp_falls_back");

        // The machine probe says the same, and names each file's path.
        let machine = nowait::probe::machine();
        match &machine.uring {
            nowait::probe::UringStatus::Unavailable { errno, reason } => {
                assert_eq!(*errno, libc::EPERM);
                assert!(reason.contains("seccomp"), "{reason}");
            }
            other => panic!("probe should see io_uring blocked: {other:?}"),
        }
        assert_eq!(machine.auto.as_ref().unwrap().kind, BackendKind::AioPool);
        assert!(
            machine.to_string().contains("Auto backend: aio+pool"),
            "{machine}"
        );
        let report = nowait::probe::file(&path, &machine).unwrap();
        assert_eq!(report.backend, BackendKind::AioPool);
        assert!(report.buffered_path.starts_with("pool:"), "{report}");
        match (&report.direct, &report.direct_path) {
            (Ok(_), Some(p)) => assert!(p.starts_with("aio:") && p.contains("EPERM"), "{report}"),
            (Err(why), None) => {
                common::skip_line(&format!("probe direct path: no O_DIRECT here ({why})"))
            }
            other => panic!("direct possible and direct path disagree: {other:?}"),
        }

        // AIO refused as well (fs.aio-max-nr used up: EAGAIN): everything
        // goes to the pool, and the reason says both steps.
        if let Err(why) = deny_on_this_thread(libc::SYS_io_setup, libc::EAGAIN) {
            return common::skip_line(&format!(
                "aio refused: cannot install a second filter: {why}"
            ));
        }
        let e = Queue::builder()
            .backend(BackendChoice::Exactly(BackendKind::Aio))
            .build()
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::BackendUnavailable {
                    backend: BackendChoice::Exactly(BackendKind::Aio),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("aio-max-nr"), "{e}");
        let mut q = Queue::builder().depth(64).build().expect("pool fallback");
        let report = q.backend().clone();
        assert_eq!(report.kind, BackendKind::Pool, "{report:?}");
        for want in [
            "from uring: io_uring_setup answered EPERM",
            "then from aio+pool: io_setup answered EAGAIN",
            "O_DIRECT and buffered files use pool",
        ] {
            assert!(
                report.reason.to_string().contains(want),
                "{want:?} missing: {}",
                report.reason
            );
        }
        match direct_and_buffered() {
            Ok((_dir, direct, buffered)) => {
                let mut rng = Rng::from_env("aio refused");
                mixed_reads(&mut q, &direct, &buffered, SIZE, MIX, 1, &mut rng);
                let b = q.backend_stats();
                assert_eq!(
                    (b.aio_reads, b.pool_reads),
                    (0, (MIX.0 + MIX.1) as u64 + q.stats().short_retries),
                    "{b:?}"
                );
            }
            Err(why) => common::skip_line(&format!("aio refused mixed reads: {why}")),
        }
        let machine = nowait::probe::machine();
        assert!(
            machine.aio.as_ref().is_err_and(|e| e.contains("EAGAIN")),
            "{:?}",
            machine.aio
        );
        assert_eq!(machine.auto.as_ref().unwrap().kind, BackendKind::Pool);
        let report = nowait::probe::file(&path, &machine).unwrap();
        if let Some(p) = &report.direct_path {
            assert!(p.starts_with("pool:"), "{report}");
        }
    })
    .join()
    .expect("fallback checks passed");
}

/// `NOWAIT_DISABLE_URING=1` takes the same step down as seccomp does.
#[test]
fn disabled_uring_sends_direct_reads_to_aio_and_buffered_to_pool() {
    run_child(
        "disabled_uring_sends_direct_reads_to_aio_and_buffered_to_pool_child",
        &[("NOWAIT_DISABLE_URING", "1")],
    );
}

#[test]
#[ignore = "runs in a child process started by disabled_uring_sends_direct_reads_to_aio_and_buffered_to_pool"]
fn disabled_uring_sends_direct_reads_to_aio_and_buffered_to_pool_child() {
    assert_in_child("disabled_uring_sends_direct_reads_to_aio_and_buffered_to_pool_child");
    let mut q = Queue::builder().depth(64).build().unwrap();
    let reason = q.backend().reason.to_string();
    assert!(
        reason.contains("NOWAIT_DISABLE_URING") && reason.contains("O_DIRECT files use aio"),
        "{reason}"
    );
    mixed_reads_take_both_halves(&mut q, "disabled_uring_child");
}
