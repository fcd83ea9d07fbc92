//! The queue's buffer pool, registered with the backend as fixed buffers
//! (io_uring `IORING_REGISTER_BUFFERS`) where it can be: reads into them go
//! out as `READ_FIXED`.

use super::Queue;
use crate::buf::{Buf, BufPool, PAGE};

impl Queue {
    /// Allocate `count` buffers of `size` bytes and register them with the
    /// backend (io_uring fixed buffers). Returns a note for the report.
    pub(super) fn set_up_fixed_buffers(&mut self, count: usize, size: usize) -> String {
        static NEXT_REG: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        // One region the pool keeps until the queue drops it (after the
        // backend): buffers callers take and drop never free registered memory.
        let mut pool = BufPool::shared(count, size, PAGE);
        let id = NEXT_REG.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let regions = pool.register_all(id);
        let note = match self.backend.register_buffers(&regions) {
            Ok(()) => {
                self.reg_id = id;
                format!("{count} registered buffers of {size} bytes (READ_FIXED)")
            }
            Err(e) => {
                // Keep the pool (plain buffers still work) but drop the tags
                // so nothing is issued as READ_FIXED.
                for b in pool.free_mut() {
                    b.fixed = None;
                }
                match e.raw_os_error() {
                    Some(libc::ENOMEM) => format!(
                        "{count} buffers of {size} bytes, NOT registered: the locked-memory limit \
                         refused them (ENOMEM; raise ulimit -l), reads use plain buffers"
                    ),
                    Some(libc::EOPNOTSUPP) => {
                        format!("{count} buffers of {size} bytes (this backend has no registered buffers)")
                    }
                    _ => format!("{count} buffers of {size} bytes, NOT registered ({e}), reads use plain buffers"),
                }
            }
        };
        self.fixed_pool = Some(pool);
        note
    }
    /// Take a buffer from the queue's pool (see
    /// [`QueueBuilder::fixed_buffers`](crate::QueueBuilder::fixed_buffers)); reads into it use `READ_FIXED`
    /// where the backend registered the pool. `None` when the pool is empty
    /// or was not asked for.
    pub fn take_buf(&mut self) -> Option<Buf> {
        self.fixed_pool.as_mut()?.get()
    }
    /// Whether the queue's buffer pool
    /// ([`QueueBuilder::fixed_buffers`](crate::QueueBuilder::fixed_buffers))
    /// is registered with the kernel, so reads into its buffers go out as
    /// `READ_FIXED` (the report says why not when it is not).
    pub fn fixed_buffers_registered(&self) -> bool {
        self.reg_id != 0
    }

    /// Return a buffer taken with [`Queue::take_buf`].
    pub fn give_buf(&mut self, buf: Buf) {
        if let Some(p) = self.fixed_pool.as_mut() {
            p.put(buf);
        }
    }
}
