//! The `uring` backend of whole-file reads: `IORING_OP_OPENAT2` (which
//! tries the cached lookup inline and hands only a miss to io-wq), `READ`
//! and `CLOSE` on one ring the calling thread drives. Where the kernel takes
//! them, the file opens into a direct descriptor (a slot of the ring's
//! sparse file table) and its first read is hard-linked behind the open, so
//! a file costs one submission for open and read; the close follows once the
//! read has said whether the file is whole. Where it does not, the ordinary
//! descriptor table: the open's answer is the read's descriptor.
//!
//! The close is not chained behind the first read: a first read that fills
//! its buffer leaves more of the file to read, and a chained close would
//! have closed it already. The close goes out with the next submission, so
//! it costs no system call of its own.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::path::Path;
use std::sync::OnceLock;

use io_uring::{opcode, squeue, types, IoUring, Probe};

use super::budget::{Budget, Grant};
use super::stats::Counters;
use super::whole::{failure, finish, growth, next_after, too_large, Held, Next, Sink, Step};
use crate::error::Error;
use crate::sys::open::{c_path, read_flags_bits};

/// What this kernel's io_uring offers whole-file reads, asked once per
/// process by trying each on a ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UringPaths {
    /// Direct descriptors: a sparse registered file table
    /// (`IORING_REGISTER_FILES2`) and an open into a slot the kernel picks
    /// (`IORING_FILE_INDEX_ALLOC`, Linux 5.19).
    pub direct: bool,
    /// An open and a read of the descriptor it makes, hard-linked in one
    /// submission (`IOSQE_IO_HARDLINK` with a direct descriptor).
    pub linked: bool,
}

/// Probe io_uring for whole-file reads: `Err` says why it cannot read
/// files by path (no ring, or one of `OPENAT2`, `READ`, `CLOSE` missing).
pub(crate) fn probe() -> &'static Result<UringPaths, String> {
    static PROBED: OnceLock<Result<UringPaths, String>> = OnceLock::new();
    PROBED.get_or_init(probe_now)
}

fn probe_now() -> Result<UringPaths, String> {
    let mut ring = IoUring::new(8).map_err(|e| format!("io_uring_setup answered {e}"))?;
    let mut ops = Probe::new();
    ring.submitter()
        .register_probe(&mut ops)
        .map_err(|e| format!("IORING_REGISTER_PROBE answered {e}"))?;
    for (code, name) in [
        (opcode::OpenAt2::CODE, "IORING_OP_OPENAT2"),
        (opcode::Read::CODE, "IORING_OP_READ"),
        (opcode::Close::CODE, "IORING_OP_CLOSE"),
    ] {
        if !ops.is_supported(code) {
            return Err(format!("this kernel's io_uring has no {name}"));
        }
    }
    let direct = ring.submitter().register_files_sparse(2).is_ok() && direct_open_works(&mut ring);
    let linked = direct && linked_open_read_works(&mut ring);
    Ok(UringPaths { direct, linked })
}

/// The probes' `open_how`: `/`, read only, as a directory, into a direct
/// descriptor (so without `O_CLOEXEC`). A static: the kernel may still
/// read it after a failed wait.
static PROBE_HOW: types::OpenHow =
    types::OpenHow::new().flags((libc::O_RDONLY | libc::O_NOCTTY | libc::O_DIRECTORY) as u64);

/// `OPENAT2` of `/` into a slot the kernel allocates, then its close.
fn direct_open_works(ring: &mut IoUring) -> bool {
    let open = opcode::OpenAt2::new(types::Fd(libc::AT_FDCWD), c"/".as_ptr(), &PROBE_HOW)
        .file_index(Some(types::DestinationSlot::auto_target()))
        .build()
        .user_data(1);
    let Some([slot]) = run(ring, &[open]) else {
        return false;
    };
    if slot < 0 {
        return false;
    }
    let close = opcode::Close::new(types::Fixed(slot as u32))
        .build()
        .user_data(1);
    matches!(run(ring, &[close]), Some([0]))
}

/// `/` opened into slot 1, read through the slot in the same hard-linked
/// submission (a directory's read answers EISDIR: the slot was there; EBADF
/// would say the read ran before the open filled it), then closed.
fn linked_open_read_works(ring: &mut IoUring) -> bool {
    // A static: memory the kernel may write into outlives a failed wait.
    // Rust code never reads or references it (only this raw pointer).
    static mut PROBE_BYTES: [u8; 16] = [0; 16];
    let bytes = (&raw mut PROBE_BYTES).cast::<u8>();
    let open = opcode::OpenAt2::new(types::Fd(libc::AT_FDCWD), c"/".as_ptr(), &PROBE_HOW)
        .file_index(types::DestinationSlot::try_from_slot_target(1).ok())
        .build()
        .flags(squeue::Flags::IO_HARDLINK)
        .user_data(1);
    let read = opcode::Read::new(types::Fixed(1), bytes, 16)
        .build()
        .flags(squeue::Flags::IO_HARDLINK)
        .user_data(2);
    let close = opcode::Close::new(types::Fixed(1)).build().user_data(3);
    matches!(run(ring, &[open, read, close]), Some([0, r, 0]) if r == -libc::EISDIR)
}

/// Submit `entries`, wait for all of them; their results in user data
/// order (1, 2, …). `None` if the kernel refuses the submission or a wait.
fn run<const N: usize>(ring: &mut IoUring, entries: &[squeue::Entry; N]) -> Option<[i32; N]> {
    // SAFETY: every pointer the entries carry (a path literal, the static
    // `open_how` and probe buffer) is 'static, so valid whenever the kernel
    // uses it.
    unsafe { ring.submission().push_multiple(entries).ok()? };
    let mut out = [i32::MIN; N];
    let mut seen = 0;
    while seen < N {
        match ring.submit_and_wait(N - seen) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(_) => return None,
        }
        for cqe in ring.completion() {
            let i = cqe.user_data() as usize;
            if (1..=N).contains(&i) && out[i - 1] == i32::MIN {
                out[i - 1] = cqe.result();
                seen += 1;
            }
        }
    }
    Some(out)
}

/// A ring set up for whole-file reads, kept by the reader between batches.
pub(crate) struct Ring {
    ring: IoUring,
    /// Files in flight at most (and slots in the sparse table).
    slots: u32,
    direct: bool,
    linked: bool,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("slots", &self.slots)
            .field("direct", &self.direct)
            .field("linked", &self.linked)
            .finish()
    }
}

impl Ring {
    /// A ring for `slots` files in flight, with the features `probe` found.
    pub(crate) fn new(slots: usize, features: &UringPaths) -> Result<Ring, Error> {
        let slots = slots.clamp(1, 4096) as u32;
        let entries = (slots * 2).next_power_of_two();
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))
            .map_err(|source| Error::Kernel {
                what: "io_uring_setup",
                source,
            })?;
        let direct = features.direct && ring.submitter().register_files_sparse(slots).is_ok();
        // io-wq starts at most 4 bounded workers a CPU for the requests that
        // must wait (an open whose lookup needs I/O, an uncached read): fewer
        // than the files in flight on a small machine, so cold files would
        // queue behind each other. Let it run one per slot (a limit, not
        // threads started; refused before 5.15, when the default stays).
        let _ = ring.submitter().register_iowq_max_workers(&mut [slots, 0]);
        Ok(Ring {
            ring,
            slots,
            direct,
            linked: direct && features.linked,
        })
    }

    pub(crate) fn slots(&self) -> usize {
        self.slots as usize
    }
}

const OPEN: u64 = 1;
const READ: u64 = 2;
const CLOSE: u64 = 3;

fn user_data(slot: usize, op: u64) -> u64 {
    (slot as u64) << 2 | op
}

/// One file in flight.
struct Flight<'p> {
    index: usize,
    path: &'p Path,
    /// The path and `open_how`, alive until the open's completion.
    cpath: CString,
    how: Box<types::OpenHow>,
    held: Held,
    /// The descriptor (ordinary table), or the slot's (direct).
    fd: Option<i32>,
    /// Requests in the ring.
    ops: u8,
    /// The open failed, or the file's outcome is decided (delivered).
    delivered: bool,
    open_failed: bool,
    /// Submission round the open went out in.
    open_round: u64,
    /// Bytes the read in flight asked for.
    asked: usize,
    /// Waiting for the budget's growth turn or room.
    waiting: bool,
}

/// Read every path on `ring`, results to `sink` as files finish.
pub(crate) fn read_batch<P: AsRef<Path>>(
    ring: &mut Ring,
    paths: &[P],
    budget: &Budget,
    counters: &Counters,
    sink: &mut Sink<'_>,
) -> Result<(), Error> {
    let cap = ring.slots().min(budget.limits().files_in_flight()).max(1);
    let mut flights: Vec<Option<Flight<'_>>> = (0..cap).map(|_| None).collect();
    let mut free: Vec<usize> = (0..cap).rev().collect();
    let mut next = 0usize;
    let mut round = 0u64;
    let mut busy = 0usize;
    let r = (|| -> Result<(), Error> {
        loop {
            // New files, while a slot and the budget allow.
            while next < paths.len() && !free.is_empty() {
                let Some(first) = budget.try_start(cap) else {
                    break;
                };
                let slot = free.pop().expect("checked non-empty");
                let path = paths[next].as_ref();
                let index = next;
                next += 1;
                Counters::add(&counters.files, 1);
                let held = Held::new(first);
                let cpath = match c_path(path) {
                    Ok(c) => c,
                    Err(e) => {
                        finish(
                            budget,
                            counters,
                            sink,
                            index,
                            held,
                            Err(failure(path, Step::Open, e)),
                        );
                        free.push(slot);
                        continue;
                    }
                };
                let how = Box::new(types::OpenHow::new().flags(read_flags_bits(ring.direct)));
                flights[slot] = Some(Flight {
                    index,
                    path,
                    cpath,
                    how,
                    held,
                    fd: None,
                    ops: 0,
                    delivered: false,
                    open_failed: false,
                    open_round: round + 1,
                    asked: 0,
                    waiting: false,
                });
                busy += 1;
                start(ring, &mut flights[slot], slot)?;
            }
            // Files waiting to grow.
            for (slot, flight) in flights.iter_mut().enumerate() {
                if matches!(flight, Some(f) if f.waiting) {
                    continue_read(ring, flight, slot, budget, counters, sink)?;
                }
            }
            if busy == 0 && next >= paths.len() {
                return Ok(());
            }
            // Submit what was queued; the opens answered inside this call
            // are the ones io_uring completed inline.
            round += 1;
            let queued = ring.ring.submission().len();
            if queued > 0 {
                enter(ring, 0)?;
            }
            let got = drain(
                ring,
                Slots {
                    flights: &mut flights,
                    free: &mut free,
                    busy: &mut busy,
                },
                round,
                budget,
                counters,
                sink,
            )?;
            // Nothing answered yet: wait for one. (Files waiting to grow
            // wait on those with requests in the ring: the budget's
            // arithmetic leaves room for one to grow beside the others.)
            if got == 0 && flights.iter().flatten().any(|f| f.ops > 0) {
                enter(ring, 1)?;
                drain(
                    ring,
                    Slots {
                        flights: &mut flights,
                        free: &mut free,
                        busy: &mut busy,
                    },
                    0,
                    budget,
                    counters,
                    sink,
                )?;
            }
        }
    })();
    if r.is_err() {
        // Requests the kernel still holds may write into their buffers:
        // those are never freed (a leak, not a write into freed memory).
        for f in flights.into_iter().flatten() {
            if f.ops > 0 {
                std::mem::forget(f);
            }
        }
    }
    r
}

/// `io_uring_enter`: submit, and wait for `want` completions.
fn enter(ring: &mut Ring, want: usize) -> Result<(), Error> {
    loop {
        match ring.ring.submit_and_wait(want) {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            // The completion queue is full: the caller reaps first.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
            Err(source) => {
                return Err(Error::Kernel {
                    what: "io_uring_enter",
                    source,
                })
            }
        }
    }
}

fn push(ring: &mut Ring, entries: &[squeue::Entry]) -> Result<(), Error> {
    loop {
        // SAFETY: each entry's pointers (path, `open_how`, the buffer's
        // spare capacity) belong to a `Flight` that stays in its slot,
        // unmoved and untouched, until the entry's completion is reaped
        // (`drain`), and on an error the flight is leaked, never freed.
        if unsafe { ring.ring.submission().push_multiple(entries) }.is_ok() {
            return Ok(());
        }
        enter(ring, 0)?;
    }
}

/// The open, and where the kernel allows, the first read linked behind it.
fn start(ring: &mut Ring, flight: &mut Option<Flight<'_>>, slot: usize) -> Result<(), Error> {
    let f = flight.as_mut().expect("a started flight");
    let mut open = opcode::OpenAt2::new(types::Fd(libc::AT_FDCWD), f.cpath.as_ptr(), &*f.how);
    if ring.direct {
        open = open.file_index(types::DestinationSlot::try_from_slot_target(slot as u32).ok());
    }
    let open = open.build().user_data(user_data(slot, OPEN));
    if ring.linked {
        let asked = f.held.buf.capacity().min(crate::MAX_READ);
        let ptr = f.held.buf.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        let read = opcode::Read::new(types::Fixed(slot as u32), ptr, asked as u32)
            .offset(0)
            .build()
            .user_data(user_data(slot, READ));
        f.asked = asked;
        f.ops = 2;
        push(ring, &[open.flags(squeue::Flags::IO_HARDLINK), read])
    } else {
        f.ops = 1;
        push(ring, &[open])
    }
}

/// The next read of a file, after growing its buffer if it is full.
fn continue_read(
    ring: &mut Ring,
    flight: &mut Option<Flight<'_>>,
    slot: usize,
    budget: &Budget,
    counters: &Counters,
    sink: &mut Sink<'_>,
) -> Result<(), Error> {
    let f = flight.as_mut().expect("a live flight");
    let limit = budget.limits().max_file_size;
    if f.held.buf.len() as u64 > limit {
        let e = too_large(f.path, budget);
        deliver(f, budget, counters, sink, Err(e));
        return close_file(ring, f, slot);
    }
    if f.held.buf.len() == f.held.buf.capacity() {
        let want = growth(f.held.buf.capacity(), limit);
        match budget.grow(want, &mut f.held.turn) {
            Grant::Bytes(n) => {
                f.held.buf.reserve_exact(n);
                f.held.reserved += n;
                f.waiting = false;
            }
            Grant::Later => {
                f.waiting = true;
                return Ok(());
            }
        }
    }
    let offset = f.held.buf.len() as u64;
    let asked = (f.held.buf.capacity() - f.held.buf.len()).min(crate::MAX_READ);
    let ptr = f.held.buf.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    let read = match (ring.direct, f.fd) {
        (true, _) => opcode::Read::new(types::Fixed(slot as u32), ptr, asked as u32),
        (false, Some(fd)) => opcode::Read::new(types::Fd(fd), ptr, asked as u32),
        (false, None) => unreachable!("a read before its open answered"),
    };
    let read = read.offset(offset).build().user_data(user_data(slot, READ));
    f.asked = asked;
    f.ops += 1;
    push(ring, &[read])
}

/// The file's outcome is known: deliver it ([`close_file`] follows).
fn deliver(
    f: &mut Flight<'_>,
    budget: &Budget,
    counters: &Counters,
    sink: &mut Sink<'_>,
    r: Result<(), Error>,
) {
    f.waiting = false;
    f.delivered = true;
    let held = std::mem::replace(&mut f.held, Held::new(0));
    finish(budget, counters, sink, f.index, held, r);
}

/// Close a delivered file's descriptor (in slot `slot`).
fn close_file(ring: &mut Ring, f: &mut Flight<'_>, slot: usize) -> Result<(), Error> {
    let close = match (ring.direct, f.fd) {
        (true, _) => opcode::Close::new(types::Fixed(slot as u32)),
        (false, Some(fd)) => opcode::Close::new(types::Fd(fd)),
        (false, None) => return Ok(()),
    };
    f.ops += 1;
    push(ring, &[close.build().user_data(user_data(slot, CLOSE))])
}

/// A batch's slots as [`drain`] changes them: the files in flight by
/// slot, the free slots, and how many are taken.
struct Slots<'a, 'p> {
    flights: &'a mut [Option<Flight<'p>>],
    free: &'a mut Vec<usize>,
    busy: &'a mut usize,
}

/// Reap every completion waiting; `round` nonzero names the submission
/// just made (opens completing in it were answered inline).
fn drain(
    ring: &mut Ring,
    slots: Slots<'_, '_>,
    round: u64,
    budget: &Budget,
    counters: &Counters,
    sink: &mut Sink<'_>,
) -> Result<usize, Error> {
    let Slots {
        flights,
        free,
        busy,
    } = slots;
    let mut n = 0;
    loop {
        let Some(cqe) = ring.ring.completion().next() else {
            break;
        };
        n += 1;
        let slot = (cqe.user_data() >> 2) as usize;
        let op = cqe.user_data() & 3;
        let res = cqe.result();
        let f = flights[slot]
            .as_mut()
            .expect("a completion for a live flight");
        f.ops -= 1;
        match op {
            OPEN => {
                if round != 0 && f.open_round == round {
                    Counters::add(&counters.opens_inline, 1);
                } else {
                    Counters::add(&counters.opens_punted, 1);
                }
                if res < 0 {
                    f.open_failed = true;
                    let e = failure(f.path, Step::Open, -res);
                    f.delivered = true;
                    let held = std::mem::replace(&mut f.held, Held::new(0));
                    finish(budget, counters, sink, f.index, held, Err(e));
                } else {
                    if !ring.direct {
                        f.fd = Some(res);
                    }
                    if !ring.linked {
                        continue_read(ring, &mut flights[slot], slot, budget, counters, sink)?;
                    }
                }
            }
            READ if f.open_failed || f.delivered => {}
            READ => {
                Counters::add(&counters.reads, 1);
                let offset = f.held.buf.len() as u64;
                let r = if res < 0 { Err(-res) } else { Ok(res as usize) };
                if let Ok(got) = r {
                    debug_assert!(got <= f.asked);
                    let len = f.held.buf.len();
                    // io_uring wrote the bytes, which Memcheck cannot see.
                    crate::sys::valgrind::mark_defined(f.held.buf.as_ptr() as usize + len, got);
                    // SAFETY: the kernel wrote `got` bytes (at most the
                    // `asked` it was given) at the start of the spare
                    // capacity this read pointed at; the buffer was not
                    // touched while the read was in flight.
                    unsafe { f.held.buf.set_len(len + got) };
                }
                match next_after(r, offset, f.asked) {
                    Next::Done => {
                        let r = if f.held.buf.len() as u64 > budget.limits().max_file_size {
                            Err(too_large(f.path, budget))
                        } else {
                            Ok(())
                        };
                        deliver(f, budget, counters, sink, r);
                        close_file(ring, f, slot)?;
                    }
                    Next::More | Next::Again => {
                        continue_read(ring, &mut flights[slot], slot, budget, counters, sink)?
                    }
                    Next::Fail(e) => {
                        let asked = f.asked;
                        let err = failure(f.path, Step::Read { offset, len: asked }, e);
                        deliver(f, budget, counters, sink, Err(err));
                        close_file(ring, f, slot)?;
                    }
                }
            }
            // A close of a read-only descriptor has nothing to lose; its
            // answer only frees the slot.
            _ => {}
        }
        let f = flights[slot].as_ref().expect("still live");
        if f.ops == 0 && f.delivered {
            flights[slot] = None;
            free.push(slot);
            *busy -= 1;
        }
    }
    Ok(n)
}
