//! A short trial read that shows what a queue's adaptive submission policy
//! chooses for a file (`nowait probe`): batched or paced.

use std::path::Path;

/// Read 4 batches of 32 random 4 KiB blocks of `path` through an adaptive
/// io_uring queue and say what its submission policy chose. `None` when
/// the file is too small, cannot be opened that way, or io_uring is
/// unavailable (the probe's report says why).
pub fn submission_trial(path: &Path, direct: bool) -> Option<String> {
    use nowait::{BackendChoice, BackendKind, Buf, Direct, File, Queue, Read, SubmitPolicy};
    const BATCH: usize = 32;
    let file = File::open(path, if direct { Direct::On } else { Direct::Off }).ok()?;
    let blocks = std::fs::metadata(path).ok()?.len() / 4096;
    if blocks < 2 {
        return None;
    }
    let mut q = Queue::builder()
        .depth(BATCH)
        .backend(BackendChoice::Exactly(BackendKind::Uring))
        .submit_policy(SubmitPolicy::Adaptive)
        .build()
        .ok()?;
    let align = file.dio_align().mem as usize;
    let mut bufs: Vec<Buf> = (0..BATCH)
        .map(|_| Buf::with_align(4096, align.max(4096)))
        .collect();
    let mut x: u64 = 0x6e6f_7761_6974;
    let mut done = Vec::with_capacity(BATCH);
    for _ in 0..4 {
        for i in 0..BATCH {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let read = Read {
                file: &file,
                offset: (x % blocks) * 4096,
                len: 4096,
                buf: bufs.pop()?,
                user_data: i as u64,
                ioprio: 0,
                cache: None,
            };
            if let Err(r) = q.push(read) {
                return Some(format!("not measured ({})", r.error));
            }
        }
        if let Err(e) = q.submit() {
            return Some(format!("not measured ({e})"));
        }
        done.clear();
        while done.len() < BATCH {
            if let Err(e) = q.reap(BATCH - done.len(), None, &mut done) {
                return Some(format!("not measured ({e})"));
            }
        }
        for c in done.drain(..) {
            if let Err(e) = c.result {
                return Some(format!(
                    "not measured (a read failed: {})",
                    crate::base::flags::say(&e)
                ));
            }
            bufs.push(c.buf);
        }
    }
    let note = q.submission()?;
    Some(
        note.strip_prefix("submission ")
            .unwrap_or(&note)
            .to_string(),
    )
}
