//! Cancellation safety under stress: futures dropped at random points over
//! 100k reads, every completed read verified, nothing left in flight.
//! The driver is the `async_stress` example (run it under valgrind in CI).

mod common;

#[path = "../examples/async_stress.rs"]
mod stress;

use nowait::{BackendChoice, BackendKind, Engine};

#[test]
fn dropped_futures_never_leak_or_corrupt_100k_reads() {
    let seed = common::printed_seed("NOWAIT_STRESS_SEED", "async_stress");
    let dir = tempfile::tempdir().unwrap();
    let r = stress::run(
        &dir.path().join("data"),
        16 << 20,
        100_000,
        32,
        64,
        BackendChoice::Auto,
        seed,
        false,
    );
    println!("{r:?}");
    assert!(r.verified > 10_000, "{r:?}");
    assert!(r.dropped > 10_000, "{r:?}");
}

#[test]
fn dropped_futures_with_more_tasks_than_ops_keep_the_wait_line_moving() {
    let seed = common::printed_seed("NOWAIT_STRESS_SEED", "async_stress");
    let dir = tempfile::tempdir().unwrap();
    // 32 tasks over 4 ops: most futures wait in line, and many are dropped there.
    let r = stress::run(
        &dir.path().join("data"),
        4 << 20,
        20_000,
        32,
        4,
        BackendChoice::Auto,
        seed,
        false,
    );
    println!("{r:?}");
    assert!(r.verified > 1_000, "{r:?}");
}

#[test]
fn dropped_futures_on_every_backend() {
    let seed = common::printed_seed("NOWAIT_STRESS_SEED", "async_stress");
    for kind in BackendKind::ALL {
        let choice = BackendChoice::Exactly(kind);
        if let Err(e) = Engine::builder().queue(|q| q.backend(choice)).build() {
            common::skip_line(&format!("backend {kind}: {e}"));
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let r = stress::run(
            &dir.path().join("data"),
            4 << 20,
            10_000,
            16,
            32,
            choice,
            seed,
            false,
        );
        println!("{kind}: {r:?}");
        assert!(r.verified > 500, "{kind}: {r:?}");
    }
}

/// The same stress with the engine built inside the runtime: with the
/// `tokio` feature completions arrive through the runtime's reactor (the
/// notifier a tokio user gets by default), watched by the watchdog.
#[test]
fn dropped_futures_with_the_reactor_notifier() {
    let seed = common::printed_seed("NOWAIT_STRESS_SEED", "async_stress");
    let dir = tempfile::tempdir().unwrap();
    let r = stress::run(
        &dir.path().join("data"),
        16 << 20,
        50_000,
        32,
        64,
        BackendChoice::Auto,
        seed,
        true,
    );
    println!("{r:?}");
    assert!(r.verified > 5_000, "{r:?}");
    assert!(r.dropped > 5_000, "{r:?}");
}
