//! nowait in smol: 16 tasks on a smol executor reading and verifying a file,
//! plus one `read_many` batch. No tokio involved.
//!
//! ```text
//! cargo run --release -p nowait --example smol
//! ```

use nowait::{Buf, Direct, Engine};

const SIZE: u64 = 16 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("data");
    nowait::pattern::write_file(&path, SIZE, |_| {})?;

    let engine = Engine::new()?;
    println!("backend: {}", engine.backend().kind);
    let file = engine.open(&path, Direct::Off)?;

    smol::block_on(async {
        let tasks: Vec<_> = (0..16u64)
            .map(|t| {
                let file = file.clone();
                smol::spawn(async move {
                    for i in 0..500u64 {
                        let offset = ((t * 7919 + i * 104_729) % (SIZE / 4096)) * 4096;
                        let (r, buf) = file.read_exact_at(Buf::new(4096), offset).await;
                        r.expect("read failed");
                        nowait::pattern::check(offset, buf.as_slice()).expect("data verifies");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await;
        }

        // A batch: submitted together, collected as each finishes.
        let offsets: Vec<u64> = (0..64).map(|i| i * 65_536 + 100).collect();
        let mut many = file.read_many(offsets.iter().map(|&o| (o, Buf::new(1000))));
        let mut got = 0;
        while let Some(item) = many.next().await {
            assert_eq!(item.result.expect("read failed"), 1000);
            nowait::pattern::check(item.offset, item.buf.as_slice()).expect("data verifies");
            got += 1;
        }
        println!(
            "8000 reads and a batch of {got} verified; {:?}",
            engine.stats()
        );
    });
    Ok(())
}
