//! fio's random numbers, bit for bit: the combined Tausworthe generators
//! (`random_generator=tausworthe`, 32-bit, and `tausworthe64`), fio's
//! maximal-length LFSR (`random_generator=lfsr`), the per-job seeds fio
//! derives from `randseed`/`randrepeat` and the job's thread number, the
//! random map that makes a `randread` pass visit every block once (fio's
//! `axmap`: the same answers, written here as a bitmap with summary levels),
//! and the step that turns one random number into a block number
//! (`__get_next_rand_offset` in fio's `io_u.c`).
//!
//! Everything here is pure: no clock, no I/O. The streams are checked against
//! fio's own offsets (`ioengine=null`, `write_iolog`) in this module's tests.

mod lfsr;
mod map;

pub use lfsr::{Lfsr, LfsrError};
pub use map::{BlockMap, FileBlocks};

/// One of fio's combined Tausworthe generators: `tausworthe` (three 32-bit
/// components, period about 2^88) or `tausworthe64` (five 64-bit components,
/// about 2^258). fio's `struct frand_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FioRand {
    /// `tausworthe`: 32-bit outputs.
    Taus32([u32; 3]),
    /// `tausworthe64`: 64-bit outputs.
    Taus64([u64; 5]),
}

/// `(2^31)+(2^17)+(2^7)` as fio's seeding writes it: in C `^` is xor, so this
/// is 29 + 19 + 5.
const SEED_START: u64 = 53;

/// The lower bounds each component must exceed (L'Ecuyer's erratum: the top
/// bits of each component must not all be zero).
const MIN32: [u32; 3] = [1, 7, 15];
const MIN64: [u64; 5] = [1, 7, 15, 33, 49];

/// fio's `__seed`: a component below its bound is moved up by the bound.
fn lift<T: PartialOrd + std::ops::Add<Output = T> + Copy>(x: T, m: T) -> T {
    if x < m {
        x + m
    } else {
        x
    }
}

impl FioRand {
    /// fio's `init_rand_seed(state, seed, use64)`: a 32-bit generator takes
    /// the low 32 bits of `seed`. The components are filled from a linear
    /// congruential sequence mixed with the seed, then the generator is
    /// stepped six times.
    pub fn new(seed: u64, use64: bool) -> FioRand {
        let mut g = if use64 {
            let mut s = [0u64; 5];
            let mut prev = SEED_START;
            for (i, c) in s.iter_mut().enumerate() {
                *c = lift(prev.wrapping_mul(6_906_969_069) ^ seed, MIN64[i]);
                prev = *c;
            }
            FioRand::Taus64(s)
        } else {
            let seed = seed as u32;
            let mut s = [0u32; 3];
            let mut prev = SEED_START as u32;
            for (i, c) in s.iter_mut().enumerate() {
                *c = lift(prev.wrapping_mul(69_069) ^ seed, MIN32[i]);
                prev = *c;
            }
            FioRand::Taus32(s)
        };
        for _ in 0..6 {
            g.rand();
        }
        g
    }

    /// Whether this is `tausworthe64`.
    pub fn is_64(&self) -> bool {
        matches!(self, FioRand::Taus64(_))
    }

    /// The next output (fio's `__rand`): 32 bits wide for `tausworthe`.
    #[inline(always)]
    pub fn rand(&mut self) -> u64 {
        match self {
            FioRand::Taus32(s) => u64::from(taus32(s)),
            FioRand::Taus64(s) => {
                // (shift-left a, shift-right b, mask c, shift-left d) per component.
                const P: [(u32, u32, u64, u32); 5] = [
                    (1, 53, 0xffff_ffff_ffff_fffe, 10),
                    (24, 50, 0xffff_ffff_ffff_fe00, 5),
                    (3, 23, 0xffff_ffff_ffff_f000, 29),
                    (5, 24, 0xffff_ffff_fffe_0000, 23),
                    (3, 33, 0xffff_ffff_ff80_0000, 8),
                ];
                for (c, &(a, b, m, d)) in s.iter_mut().zip(P.iter()) {
                    let x = ((*c << a) ^ *c) >> b;
                    *c = ((*c & m) << d) ^ x;
                }
                s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
            }
        }
    }

    /// The largest output (fio's `rand_max`).
    pub fn max(&self) -> u64 {
        match self {
            FioRand::Taus32(_) => u64::from(u32::MAX),
            FioRand::Taus64(_) => u64::MAX,
        }
    }

    /// A number in (0, 1] (fio's `__rand_0_1`): `(r + 1) / 2^bits`.
    pub fn next_0_1(&mut self) -> f64 {
        let span = self.max() as f64 + 1.0;
        (self.rand() as f64 + 1.0) / span
    }

    /// A number in `start..=end` (fio's `rand_between`): the output scaled
    /// by `(end - start + 1) / 2^bits`, truncated. The 32-bit generator
    /// works in 32 bits as fio does (`rand32_upto` truncates the span).
    pub fn between(&mut self, start: u64, end: u64) -> u64 {
        let r = self.rand();
        match self {
            FioRand::Taus32(_) => {
                let span = (end.wrapping_sub(start) as u32).wrapping_add(1);
                // fio converts through `int`; spans here are far below 2^31.
                let v = f64::from(span) * (r as f64 / 4_294_967_296.0);
                start.wrapping_add(v as i32 as u32 as u64)
            }
            FioRand::Taus64(_) => {
                let span = end.wrapping_sub(start).wrapping_add(1);
                let v = span as f64 * (r as f64 / 18_446_744_073_709_551_616.0);
                start.wrapping_add(v as u64)
            }
        }
    }
}

/// One step of fio's 32-bit Tausworthe generator over its three components
/// (each: shift left, xor, shift right, mask, shift left), and its output.
#[inline(always)]
pub fn taus32(s: &mut [u32; 3]) -> u32 {
    s[0] = ((s[0] & 0xffff_fffe) << 12) ^ (((s[0] << 13) ^ s[0]) >> 19);
    s[1] = ((s[1] & 0xffff_fff8) << 4) ^ (((s[1] << 2) ^ s[1]) >> 25);
    s[2] = ((s[2] & 0xffff_fff0) << 17) ^ (((s[2] << 3) ^ s[2]) >> 11);
    s[0] ^ s[1] ^ s[2]
}

/// `random_generator=`: which generator picks random blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generator {
    /// `tausworthe` (fio's default): 32-bit outputs.
    #[default]
    Tausworthe,
    /// `lfsr`: every block exactly once per pass, without a map.
    Lfsr,
    /// `tausworthe64`: 64-bit outputs.
    Tausworthe64,
}

impl Generator {
    /// fio's names, in fio's order.
    pub const NAMES: [(&'static str, Generator); 3] = [
        ("tausworthe", Generator::Tausworthe),
        ("lfsr", Generator::Lfsr),
        ("tausworthe64", Generator::Tausworthe64),
    ];

    /// The generator `random_generator=NAME` names.
    pub fn from_name(name: &str) -> Option<Generator> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, g)| g)
    }

    /// fio's `check_rand_gen_limits`: a file of more than 2^32 - 1 blocks
    /// exceeds the 32-bit generator; when `random_generator` was not given,
    /// fio switches to `tausworthe64` (and says so), otherwise it keeps the
    /// asked generator with a warning.
    pub fn for_blocks(asked: Option<Generator>, blocks: u64) -> Generator {
        match asked {
            Some(g) => g,
            None if blocks > u64::from(u32::MAX) => Generator::Tausworthe64,
            None => Generator::Tausworthe,
        }
    }
}

/// The streams fio seeds for each job, in fio's order (`FIO_RAND_*_OFF` in
/// `fio.h`): each gets its own seed from [`JobSeeds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Stream {
    /// Block sizes of reads (`bsrange`, `bssplit`).
    BsRead = 0,
    /// Block sizes of writes.
    BsWrite,
    /// Block sizes of trims.
    BsTrim,
    /// Verify.
    Verify,
    /// The read/write mix.
    Mix,
    /// Which file is next (`file_service_type`).
    File,
    /// Random blocks (the offset generator, the LFSR, distributions).
    Block,
    /// File sizes (`filesize` ranges).
    FileSize,
    /// Trims.
    Trim,
    /// Buffer contents.
    Buf,
    /// `percentage_random`: random or sequential, reads.
    SeqRandRead,
    /// `percentage_random`, writes.
    SeqRandWrite,
    /// `percentage_random`, trims.
    SeqRandTrim,
    /// `startdelay` ranges.
    StartDelay,
    /// Dedupe.
    Dedupe,
    /// `rate_process=poisson`, reads.
    PoissonRead,
    /// `zoned` and `zoned_abs` distributions: which zone.
    Zone,
    /// `rate_process=poisson`, writes.
    PoissonWrite,
    /// `rate_process=poisson`, trims.
    PoissonTrim,
}

/// How many seeds fio 3.35 and later derive per job (`FIO_RAND_NR_OFFS` in
/// fio 3.42 is 24; each seed depends only on the ones before it, so the
/// first [`Stream`]s are the same whatever the count).
pub const SEED_COUNT: usize = 24;

/// fio's `FIO_RANDSEED`, the seed of the offset stream before fio 3.35.
const FIO_RANDSEED_OLD: u64 = 0xb189_9bed;
/// The multiplier fio steps its seed chain with.
const SEED_STEP: u64 = 0x9e37_0001;
/// `randseed`'s default.
pub const DEFAULT_RANDSEED: u64 = 0x89;

/// Which of fio's seeding rules to follow. fio 3.35 changed them: before,
/// with the default `randrepeat=1` the offset stream was seeded from a
/// constant and the job's number whatever `randseed` said (so `randseed`
/// did not move random offsets); since, every stream comes from `randseed`.
/// Offsets are otherwise chosen the same way in fio 3.33 and 3.42.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Seeding {
    /// fio 3.35 and later.
    #[default]
    Since3_35,
    /// fio 3.34 and earlier (Debian 12 ships 3.33).
    Before3_35,
}

impl Seeding {
    /// The rules of fio `major.minor`.
    pub fn of_version(major: u32, minor: u32) -> Seeding {
        if (major, minor) < (3, 35) {
            Seeding::Before3_35
        } else {
            Seeding::Since3_35
        }
    }
}

/// The options that decide a job's seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedOptions {
    /// `randrepeat` (default true): the same streams on every run.
    pub randrepeat: bool,
    /// `randseed`, when the job file sets it (default [`DEFAULT_RANDSEED`]).
    pub randseed: Option<u64>,
    /// `allrandrepeat` (before fio 3.35 a separate option, default false;
    /// since, another name for `randrepeat`).
    pub allrandrepeat: bool,
}

impl Default for SeedOptions {
    fn default() -> SeedOptions {
        SeedOptions {
            randrepeat: true,
            randseed: None,
            allrandrepeat: false,
        }
    }
}

impl SeedOptions {
    /// Whether the seeds come from the operating system: `randrepeat=0`
    /// without `randseed` (fio reads `/dev/urandom`).
    pub fn needs_entropy(&self) -> bool {
        !self.randrepeat && self.randseed.is_none()
    }

    /// Whether each `loops` pass starts the streams again from their seeds
    /// (fio re-seeds when `randrepeat` is in force at run time; setting
    /// `randseed` turns it off, so later passes go on with the stream).
    pub fn reseeds_each_loop(&self) -> bool {
        self.randrepeat && self.randseed.is_none()
    }
}

/// A job's seeds, one per [`Stream`] (fio's `td->rand_seeds[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSeeds {
    seeds: [u64; SEED_COUNT],
}

impl JobSeeds {
    /// The seeds fio gives the job numbered `thread_number` (1-based, in the
    /// order fio adds jobs: each job, then its `numjobs` clones, file after
    /// file). `random` is whether the job does random I/O (fio 3.34 and
    /// earlier override the offset seed only then). `entropy` is asked for
    /// only when [`SeedOptions::needs_entropy`]; it must give fresh random
    /// words (the operating system's), as fio reads `/dev/urandom`.
    pub fn new(
        opts: &SeedOptions,
        thread_number: u64,
        random: bool,
        seeding: Seeding,
        entropy: impl FnOnce() -> [u64; SEED_COUNT],
    ) -> JobSeeds {
        let mut seeds = if opts.needs_entropy() {
            entropy()
        } else {
            let mut seed = opts.randseed.unwrap_or(DEFAULT_RANDSEED);
            for _ in 0..4 {
                seed = seed.wrapping_mul(SEED_STEP);
            }
            let mut s = [0u64; SEED_COUNT];
            for (i, v) in s.iter_mut().enumerate() {
                *v = seed.wrapping_mul(thread_number).wrapping_add(i as u64);
                seed = seed.wrapping_mul(SEED_STEP);
            }
            s
        };
        if seeding == Seeding::Before3_35 {
            // fio 3.34 and earlier: `allrandrepeat` replaces every seed, and
            // `randrepeat` (as given: `randseed` turns it off only later)
            // replaces the offset seed of a random job.
            let base = FIO_RANDSEED_OLD.wrapping_mul(thread_number);
            if opts.allrandrepeat {
                for (i, v) in seeds.iter_mut().enumerate() {
                    *v = base.wrapping_add(i as u64);
                }
            }
            if random && opts.randrepeat {
                seeds[Stream::Block as usize] = base;
            }
        }
        JobSeeds { seeds }
    }

    /// The seed of `stream`.
    pub fn get(&self, stream: Stream) -> u64 {
        self.seeds[stream as usize]
    }

    /// A generator seeded for `stream` (fio's `init_rand_seed`).
    pub fn rand(&self, stream: Stream, use64: bool) -> FioRand {
        FioRand::new(self.get(stream), use64)
    }
}

#[cfg(test)]
mod tests;
