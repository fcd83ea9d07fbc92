//! 32 tokio tasks doing 4 KiB random reads through one nowait engine, every
//! byte verified. Works the same on the current-thread runtime.
//!
//! ```text
//! cargo run --release -p nowait --example tokio_random_reads
//! ```

use std::time::Instant;

use nowait::{Buf, Direct, Engine};

const SIZE: u64 = 64 << 20;
const TASKS: u64 = 32;
const READS_PER_TASK: u64 = 2_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("data");
    nowait::pattern::write_file(&path, SIZE, |_| {})?;

    let engine = Engine::new()?;
    println!(
        "backend: {} ({}); poller: {:?}",
        engine.backend().kind,
        engine.backend().reason,
        engine.poller()
    );
    let file = engine.open(&path, Direct::Auto)?;
    file.file().drop_cache()?;

    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let file = file.clone();
        tasks.push(tokio::spawn(async move {
            let mut buf = Buf::new(4096);
            let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for _ in 0..READS_PER_TASK {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let offset = (x % (SIZE / 4096)) * 4096;
                // The buffer goes in with the read and comes back with the result.
                let (n, b) = file.read_at(buf, offset).await;
                assert_eq!(n.expect("read failed"), 4096);
                nowait::pattern::check(offset, b.as_slice()).expect("data verifies");
                buf = b;
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let secs = start.elapsed().as_secs_f64();
    let reads = TASKS * READS_PER_TASK;
    println!(
        "{reads} reads verified in {secs:.2} s: {:.0} IOPS; {:?}",
        reads as f64 / secs,
        engine.stats()
    );
    Ok(())
}
