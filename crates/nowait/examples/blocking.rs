//! The blocking front end: four plain threads share one engine, so their
//! reads are in flight together; then one thread reads a batch.
//!
//! ```text
//! cargo run --release -p nowait --example blocking
//! ```

use nowait::{Buf, Direct, Engine};

const SIZE: u64 = 16 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("data");
    nowait::pattern::write_file(&path, SIZE, |_| {})?;

    let engine = Engine::new()?;
    println!("backend: {}", engine.backend().kind);
    let file = engine.open_blocking(&path, Direct::Off)?;

    std::thread::scope(|s| {
        for t in 0..4u64 {
            let file = file.clone();
            s.spawn(move || {
                let mut buf = Buf::new(4096);
                for i in 0..1000u64 {
                    let offset = ((t * 7919 + i * 104_729) % (SIZE / 4096)) * 4096;
                    let (n, b) = file.read_at(buf, offset);
                    assert_eq!(n.expect("read failed"), 4096);
                    nowait::pattern::check(offset, b.as_slice()).expect("data verifies");
                    buf = b;
                }
            });
        }
    });

    let batch = (0..32u64).map(|i| (i * 100_000, Buf::new(4096)));
    let mut got = 0;
    for item in file.read_many(batch) {
        assert_eq!(item.result?, 4096);
        nowait::pattern::check(item.offset, item.buf.as_slice())?;
        got += 1;
    }
    println!(
        "4000 reads and a batch of {got} verified; {:?}",
        engine.stats()
    );
    Ok(())
}
