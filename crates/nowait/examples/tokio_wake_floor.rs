//! How many context switches tokio itself needs per completion when
//! completions arrive in bursts, with no file I/O and no nowait code: the
//! floor under the engine's "context switches per read" on each runtime.
//!
//! The shape of an io_uring front end (tokio-uring's, or nowait's engine),
//! without the kernel: 32 tasks (`NOWAIT_BENCH_TASKS`) each "submit" a
//! request (push it on a shared list) and await its completion. A "device"
//! thread outside the runtime completes every pending request at once every
//! `NOWAIT_FLOOR_US` microseconds (default 1000) and signals one eventfd,
//! as a ring's completion eventfd is signalled. One reactor task, awaiting
//! that eventfd through tokio's reactor, wakes the tasks whose requests are
//! done. Reported per completion: voluntary and involuntary context
//! switches of the process minus the device thread's own, for tokio's
//! current-thread runtime and its multi-thread runtime with 2 workers
//! (`NOWAIT_FLOOR_ONLY=current` or `=multi` runs one of them).
//!
//! ```text
//! cargo run --release -p nowait --features tokio --example tokio_wake_floor
//! ```

use std::future::poll_fn;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

#[path = "support/runtime.rs"]
mod runtime;
#[path = "support/rusage.rs"]
mod rusage;
use rusage::Rusage;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Context switches of the calling thread so far.
fn thread_switches() -> u64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a writable buffer of the size getrusage fills;
    // RUSAGE_THREAD is a valid `who`.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if r < 0 {
        return 0;
    }
    // SAFETY: zero-initialised, and filled by the successful call.
    let ru = unsafe { ru.assume_init() };
    (ru.ru_nvcsw + ru.ru_nivcsw) as u64
}

/// The eventfd, as tokio's reactor sees it.
struct Efd(OwnedFd);

impl AsRawFd for Efd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// One request slot per task.
#[derive(Default)]
struct Slot {
    pending: bool,
    done: bool,
    waker: Option<Waker>,
}

struct Shared {
    slots: Mutex<Vec<Slot>>,
    efd: Efd,
}

fn run(multi: bool, tasks: usize, period: Duration, secs: u64) -> (u64, f64, f64) {
    let efd = rustix::event::eventfd(0, rustix::event::EventfdFlags::NONBLOCK).expect("eventfd");
    let shared = Arc::new(Shared {
        slots: Mutex::new((0..tasks).map(|_| Slot::default()).collect()),
        efd: Efd(efd),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let device_switches = Arc::new(AtomicU64::new(0));
    let device = {
        let (stop, shared, device_switches) =
            (stop.clone(), shared.clone(), device_switches.clone());
        std::thread::spawn(move || {
            let start = thread_switches();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(period);
                let mut any = false;
                for s in shared.slots.lock().unwrap().iter_mut() {
                    if s.pending {
                        s.pending = false;
                        s.done = true;
                        any = true;
                    }
                }
                if any {
                    // One signal for the whole burst.
                    let _ = rustix::io::write(&shared.efd.0, &1u64.to_ne_bytes());
                }
            }
            device_switches.store(thread_switches() - start, Ordering::Relaxed);
        })
    };
    let rt = runtime::tokio_runtime(multi);
    let total = Arc::new(AtomicU64::new(0));
    let before = Rusage::now();
    let t0 = Instant::now();
    let dur = Duration::from_secs(secs);
    rt.block_on(async {
        // The reactor task: eventfd readable -> wake every finished task.
        let reactor = {
            let shared = shared.clone();
            let fd = rustix::io::dup(&shared.efd.0).expect("dup");
            tokio::spawn(async move {
                // SAFETY: `Efd` owns the descriptor, so it stays open (and
                // is never replaced) while the AsyncFd keeps it registered.
                let afd = unsafe { AsyncFd::register(Efd(fd)) }
                    .map_err(|e| e.into_parts().1)
                    .expect("register the eventfd");
                let mut buf = [0u8; 8];
                loop {
                    let mut ready = afd.readable().await.expect("readable");
                    let _ = rustix::io::read(&afd.get_ref().0, &mut buf);
                    ready.clear_ready();
                    let wakers: Vec<Waker> = shared
                        .slots
                        .lock()
                        .unwrap()
                        .iter_mut()
                        .filter(|s| s.done)
                        .filter_map(|s| s.waker.take())
                        .collect();
                    for w in wakers {
                        w.wake();
                    }
                }
            })
        };
        let hs: Vec<_> = (0..tasks)
            .map(|i| {
                let (shared, total) = (shared.clone(), total.clone());
                tokio::spawn(async move {
                    let mut n = 0;
                    while t0.elapsed() < dur {
                        shared.slots.lock().unwrap()[i].pending = true;
                        poll_fn(|cx| {
                            let mut slots = shared.slots.lock().unwrap();
                            let s = &mut slots[i];
                            if s.done {
                                s.done = false;
                                Poll::Ready(())
                            } else {
                                s.waker = Some(cx.waker().clone());
                                Poll::Pending
                            }
                        })
                        .await;
                        n += 1;
                    }
                    total.fetch_add(n, Ordering::Relaxed);
                })
            })
            .collect();
        for h in hs {
            h.await.expect("task");
        }
        reactor.abort();
    });
    let secs = t0.elapsed().as_secs_f64();
    let ru = Rusage::now().since(&before);
    stop.store(true, Ordering::Relaxed);
    device.join().expect("device thread");
    drop(rt);
    let n = total.load(Ordering::Relaxed);
    let switches = (ru.ctx_voluntary + ru.ctx_involuntary)
        .saturating_sub(device_switches.load(Ordering::Relaxed));
    (n, n as f64 / secs, switches as f64 / n.max(1) as f64)
}

fn main() {
    let tasks = env_u64("NOWAIT_BENCH_TASKS", 32) as usize;
    let period = Duration::from_micros(env_u64("NOWAIT_FLOOR_US", 1000));
    let secs = env_u64("NOWAIT_BENCH_SECS", 2);
    println!(
        "{tasks} tasks, completions in bursts every {} µs, {secs} s per run",
        period.as_micros()
    );
    println!(
        "{:<22} {:>12} {:>14} {:>16}",
        "runtime", "completions", "per second", "ctxsw/completion"
    );
    let only = std::env::var("NOWAIT_FLOOR_ONLY").unwrap_or_default();
    for (name, multi) in [("current-thread", false), ("multi-thread, 2", true)] {
        if !only.is_empty() && only != if multi { "multi" } else { "current" } {
            continue;
        }
        let (n, rate, per) = run(multi, tasks, period, secs);
        println!("{name:<22} {n:>12} {rate:>14.0} {per:>16.3}");
    }
}
