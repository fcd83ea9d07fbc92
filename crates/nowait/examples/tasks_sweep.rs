//! N tasks reading 4 KiB at random offsets from one file through the async
//! engine on a current-thread tokio runtime, for 3 s: IOPS and how many
//! reads the queue did inline (memory-backed files; see
//! `QueueBuilder::memory_inline`). Used in docs/BENCHMARKS.md to show a lone
//! task on a memory-backed file read inline instead of through io-wq.
//! The file's bytes are not checked (any file or device will do; the tests
//! check data).
//!
//! ```text
//! cargo run --release -p nowait --features tokio --example tasks_sweep -- /dev/shm/f 1 2 4 32
//! ```

use std::time::{Duration, Instant};

use nowait::{Buf, Direct, Engine};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: tasks_sweep FILE TASKS... (a file or block device to read)")?;
    let sweep: Vec<u64> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for tasks in if sweep.is_empty() { vec![1, 32] } else { sweep } {
        rt.block_on(run(&path, tasks))?;
    }
    Ok(())
}

async fn run(path: &str, tasks: u64) -> Result<(), Box<dyn std::error::Error>> {
    let engine = Engine::builder().build()?;
    let file = engine.open(path, Direct::Auto)?;
    let blocks = file.file().len()? / 4096;
    if blocks == 0 {
        return Err(format!("{path} is shorter than one 4 KiB block").into());
    }
    let end = Instant::now() + Duration::from_secs(3);
    let mut handles = Vec::new();
    for t in 0..tasks {
        let file = file.clone();
        handles.push(tokio::spawn(async move {
            let (mut n, mut x) = (0u64, t * 7919 + 1);
            let mut buf = Buf::with_align(4096, 4096);
            while Instant::now() < end {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let (r, b) = file.read_at(buf, (x >> 33) % blocks * 4096).await;
                r?;
                buf = b;
                n += 1;
            }
            Ok::<u64, std::io::Error>(n)
        }));
    }
    let mut total = 0;
    for h in handles {
        total += h.await??;
    }
    let st = engine.stats();
    println!(
        "{path}: {tasks} task(s): {:.1}k IOPS, {} of {} reads inline ({})",
        total as f64 / 3000.0,
        st.queue.inline,
        st.queue.pushed,
        file.file().inline_reason().unwrap_or("not memory-backed")
    );
    Ok(())
}
