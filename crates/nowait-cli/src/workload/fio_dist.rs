//! fio's non-uniform random distributions bit for bit
//! (`random_distribution=`): zipf and pareto (`lib/zipf.c`), normal (fio's
//! sum-of-uniforms "gauss", `lib/gauss.c`), each with fio's hash scrambling
//! of the drawn rank and its `center` shift, seeded per file as fio seeds
//! them; and the zone tables of `zoned`/`zoned_abs` (`zone-dist.c`).
//!
//! Each generator answers a range index in `0..nranges`, where a range is the
//! job's smallest block size; the offset sequencer (`fio_offsets`) turns it
//! into an offset. Checked against fio's offsets in the tests.

use super::fio_random::{FioRand, JobSeeds, SeedOptions, Seeding, Stream};
use crate::model::fio_ini::value::ZoneSplit;

/// fio's 64-bit multiplicative hash (`__hash_u64`, the golden ratio).
pub fn hash_u64(v: u64) -> u64 {
    v.wrapping_mul(0x61C8_8646_80B5_83EB)
}

fn rol(w: u32, s: u32) -> u32 {
    w.rotate_left(s)
}

/// fio's `jhash` of a file name, as fio computes it: Bob Jenkins' lookup2
/// mixing, except that fio adds one byte (not one 32-bit word) per lane for
/// each full 12-byte block, which changes the result for names longer than
/// 12 bytes; the tail is added byte by byte as in lookup3.
pub fn jhash(key: &[u8], initval: u32) -> u32 {
    let init = 0x61C8_8647u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(u32::from(k[0]));
        b = b.wrapping_add(u32::from(k[4]));
        c = c.wrapping_add(u32::from(k[8]));
        // mix
        a = a.wrapping_sub(c);
        a ^= rol(c, 4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= rol(a, 6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= rol(b, 8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= rol(c, 16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= rol(a, 19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= rol(b, 4);
        b = b.wrapping_add(a);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    for (i, &byte) in k.iter().enumerate() {
        let v = u32::from(byte) << (8 * (i % 4));
        match i / 4 {
            0 => a = a.wrapping_add(v),
            1 => b = b.wrapping_add(v),
            _ => c = c.wrapping_add(v),
        }
    }
    // final
    c ^= b;
    c = c.wrapping_sub(rol(b, 14));
    a ^= c;
    a = a.wrapping_sub(rol(c, 11));
    b ^= a;
    b = b.wrapping_sub(rol(a, 25));
    c ^= b;
    c = c.wrapping_sub(rol(b, 16));
    a ^= c;
    a = a.wrapping_sub(rol(c, 4));
    b ^= a;
    b = b.wrapping_sub(rol(a, 14));
    c ^= b;
    c = c.wrapping_sub(rol(b, 24));
    c
}

/// The seed of a file's distribution (fio's `__init_rand_distribution`):
/// the hash of the file's name (as fio names it: the path given, or
/// `directory/jobname.N.M`) times the job's thread number, times the job's
/// block seed since fio 3.35; before, the block seed alone replaces it when
/// `randrepeat` is off or `randseed` is set.
pub fn file_seed(
    file_name: &[u8],
    thread_number: u32,
    seeds: &JobSeeds,
    opts: &SeedOptions,
    seeding: Seeding,
) -> u32 {
    let h = jhash(file_name, 0).wrapping_mul(thread_number);
    match seeding {
        Seeding::Since3_35 => (u64::from(h).wrapping_mul(seeds.get(Stream::Block))) as u32,
        Seeding::Before3_35 if !opts.reseeds_each_loop() => seeds.get(Stream::Block) as u32,
        Seeding::Before3_35 => h,
    }
}

/// How many ranges a file has for a distribution: its size (the smaller of
/// the file and `io_size`) over the smaller of the read and write minimum
/// block sizes, rounded up.
pub fn nranges(file_size: u64, io_size: u64, min_bs_read: u64, min_bs_write: u64) -> u64 {
    let range = min_bs_read.min(min_bs_write).max(1);
    file_size.min(io_size).div_ceil(range)
}

/// The most terms fio sums for zipf's normalising constant (`ZIPF_MAX_GEN`).
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// A zipf or pareto generator (fio's `struct zipf_state`).
#[derive(Debug, Clone)]
pub struct Zipf {
    nranges: u64,
    theta: f64,
    zeta2: f64,
    zetan: f64,
    pareto_pow: f64,
    rand: FioRand,
    rand_off: u64,
    hash: bool,
}

impl Zipf {
    fn shared(nranges: u64, center: Option<f64>, seed: u32) -> Zipf {
        let mut rand = FioRand::new(u64::from(seed), false);
        // fio draws the offset even when a center replaces it.
        let drawn = rand.rand();
        let rand_off = match center {
            Some(c) => (nranges as f64 * c) as u64,
            None => drawn,
        };
        Zipf {
            nranges,
            theta: 0.0,
            zeta2: 0.0,
            zetan: 0.0,
            pareto_pow: 0.0,
            rand,
            rand_off,
            hash: true,
        }
    }

    /// `zipf:theta[:center]` over `nranges` ranges (fio's `zipf_init`; its
    /// constant sums at most ten million terms, as fio's does).
    pub fn new_zipf(nranges: u64, theta: f64, center: Option<f64>, seed: u32) -> Zipf {
        let mut z = Zipf::shared(nranges, center, seed);
        z.theta = theta;
        z.zeta2 = 1.0f64.powf(theta) + 0.5f64.powf(theta);
        for i in 0..nranges.min(ZIPF_MAX_GEN) {
            z.zetan += (1.0 / (i + 1) as f64).powf(theta);
        }
        z
    }

    /// `pareto:h[:center]` over `nranges` ranges (fio's `pareto_init`).
    pub fn new_pareto(nranges: u64, h: f64, center: Option<f64>, seed: u32) -> Zipf {
        let mut z = Zipf::shared(nranges, center, seed);
        z.pareto_pow = h.ln() / (1.0 - h).ln();
        z
    }

    /// Answer ranks as drawn, without fio's hash scrambling (fio does so
    /// for `file_service_type`).
    pub fn without_hash(mut self) -> Zipf {
        self.hash = false;
        self
    }

    fn finish(&self, v: u64) -> u64 {
        let v = if self.hash { hash_u64(v) } else { v };
        v.wrapping_add(self.rand_off) % self.nranges
    }

    /// The next range of a zipf generator (fio's `zipf_next`).
    pub fn next_zipf(&mut self) -> u64 {
        let n = self.nranges as f64;
        let alpha = 1.0 / (1.0 - self.theta);
        let eta = (1.0 - (2.0 / n).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan);
        let rand_uni = self.rand.rand() as f64 / f64::from(u32::MAX);
        let rand_z = rand_uni * self.zetan;
        let val: u64 = if rand_z < 1.0 {
            1
        } else if rand_z < 1.0 + 0.5f64.powf(self.theta) {
            2
        } else {
            1 + (n * (eta * rand_uni - eta + 1.0).powf(alpha)) as u64
        };
        self.finish(val - 1)
    }

    /// The next range of a pareto generator (fio's `pareto_next`).
    pub fn next_pareto(&mut self) -> u64 {
        let r = self.rand.rand() as f64 / f64::from(u32::MAX);
        let n = ((self.nranges - 1) as f64 * r.powf(self.pareto_pow)) as u64;
        self.finish(n)
    }
}

/// fio's "normal" distribution (`lib/gauss.c`): the mean of twelve uniform
/// draws, moved by a uniform deviation of `dev` percent of the file, hashed
/// and shifted by the center.
#[derive(Debug, Clone)]
pub struct Gauss {
    rand: FioRand,
    nranges: u64,
    stddev: u32,
    rand_off: u32,
    hash: bool,
}

impl Gauss {
    /// `normal:dev[:center]` over `nranges` ranges (fio's `gauss_init`).
    pub fn new(nranges: u64, dev: f64, center: Option<f64>, seed: u32) -> Gauss {
        let mut stddev = 0u32;
        if dev != 0.0 {
            stddev = ((nranges as f64 * dev) / 100.0).ceil() as u32;
            stddev = stddev.min((nranges / 2) as u32);
        }
        // fio stores `nranges * (center - 0.5)` in an unsigned int; x86-64
        // converts a negative value through a 64-bit integer.
        let rand_off = match center {
            None => 0,
            Some(c) => (nranges as f64 * (c - 0.5)) as i64 as u32,
        };
        Gauss {
            rand: FioRand::new(u64::from(seed), false),
            nranges,
            stddev,
            rand_off,
            hash: true,
        }
    }

    /// Answer ranges as drawn, without fio's hash scrambling.
    pub fn without_hash(mut self) -> Gauss {
        self.hash = false;
        self
    }

    fn dev(&mut self) -> i32 {
        let r = self.rand.rand() as u32;
        let vr = (f64::from(self.stddev) * (f64::from(r) / 4_294_967_296.0)) as i32;
        vr.wrapping_sub((self.stddev / 2) as i32)
    }

    /// The next range (fio's `gauss_next`).
    pub fn next_range(&mut self) -> u64 {
        let mut sum: u64 = 0;
        for _ in 0..12 {
            sum = sum.wrapping_add(self.rand.rand() % (self.nranges + 1));
        }
        sum = sum.div_ceil(12);
        if self.stddev != 0 {
            let mut dev = self.dev();
            // fio halves the deviation until the sum stays below the end; a
            // sum already at the end with no deviation left would loop in
            // fio forever, so it stops there.
            while (dev as i64 as u64).wrapping_add(sum) >= self.nranges && dev != 0 {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as i64 as u64);
        }
        let v = if self.hash { hash_u64(sum) } else { sum };
        v.wrapping_add(u64::from(self.rand_off)) % self.nranges
    }
}

/// One of the hundred access slots of a zoned distribution: the zone it
/// falls in, as percent of the file (`zoned`) and as bytes (`zoned_abs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZoneSlot {
    /// Start of the zone, percent.
    pub start_perc: u32,
    /// End of the zone, percent.
    pub end_perc: u32,
    /// Start of the zone, bytes.
    pub start: u64,
    /// End of the zone, bytes.
    pub end: u64,
}

/// fio's zone index (`__td_zone_gen_index`): slot `v - 1` for a draw `v` in
/// 1..=100 names the zone that draw reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneTable {
    slots: Vec<ZoneSlot>,
}

impl ZoneTable {
    /// The table of one direction's zones (shares already checked to add up
    /// to 100 by the value parser); `abs` for `zoned_abs` (sizes in bytes).
    pub fn new(zones: &[ZoneSplit], abs: bool) -> ZoneTable {
        let mut slots = vec![ZoneSlot::default(); 100];
        let (mut sprev, mut aprev, mut bprev) = (0u32, 0usize, 0u64);
        for z in zones {
            let (size_perc, size) = if abs { (0, z.size) } else { (z.size as u32, 0) };
            for s in slots.iter_mut().skip(aprev).take(z.access_perc as usize) {
                *s = ZoneSlot {
                    start_perc: sprev,
                    end_perc: sprev + size_perc,
                    start: bprev,
                    end: bprev + size,
                };
            }
            aprev += z.access_perc as usize;
            sprev += size_perc;
            bprev += size;
        }
        ZoneTable { slots }
    }

    /// The zone of draw `v` (1..=100) from the job's zone stream.
    pub fn slot(&self, v: u64) -> ZoneSlot {
        self.slots[(v.clamp(1, 100) - 1) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fio_check;

    #[test]
    fn jhash_of_short_and_long_names() {
        // Short keys are plain lookup3; fio's long-key lanes add single bytes.
        assert_eq!(jhash(b"", 0), 0x61C8_8647);
        assert_ne!(jhash(b"/tmp/a/f", 0), jhash(b"/tmp/b/f", 0));
        assert_ne!(jhash(b"0123456789abcdef", 0), jhash(b"0123456789abcdeg", 0));
    }

    #[test]
    fn zone_table_spreads_access_slots() {
        let t = ZoneTable::new(
            &[
                ZoneSplit {
                    access_perc: 60,
                    size: 10,
                },
                ZoneSplit {
                    access_perc: 40,
                    size: 90,
                },
            ],
            false,
        );
        assert_eq!(
            t.slot(1),
            ZoneSlot {
                start_perc: 0,
                end_perc: 10,
                start: 0,
                end: 0
            }
        );
        assert_eq!(t.slot(61).start_perc, 10);
        assert_eq!(t.slot(100).end_perc, 100);
    }

    fn check(dist: &str, make: impl Fn(u64, u32) -> Box<dyn FnMut() -> u64>) {
        let Some(fios) = fio_check::fios("distribution_offsets_match_fio") else {
            return;
        };
        for fio in &fios {
            let (got, file) = fio.reads_with_file(&[
                "--rw=randread",
                "--bs=4k",
                "--size=4m",
                &format!("--random_distribution={dist}"),
            ]);
            let seeds = JobSeeds::new(
                &SeedOptions::default(),
                1,
                true,
                Seeding::of_version(fio.major, fio.minor),
                || unreachable!(),
            );
            let seed = file_seed(
                file.as_bytes(),
                1,
                &seeds,
                &SeedOptions::default(),
                Seeding::of_version(fio.major, fio.minor),
            );
            let mut next = make(1024, seed);
            let want: Vec<(u64, u64)> = got.iter().map(|_| (next() * 4096, 4096)).collect();
            assert_eq!(got.len(), 1024);
            assert_eq!(got, want, "{} random_distribution={dist}", fio.version);
        }
    }

    #[test]
    fn zipf_offsets_match_fio() {
        check("zipf:1.2", |n, s| {
            let mut z = Zipf::new_zipf(n, 1.2, None, s);
            Box::new(move || z.next_zipf())
        });
        check("zipf:0.8:0.25", |n, s| {
            let mut z = Zipf::new_zipf(n, 0.8, Some(0.25), s);
            Box::new(move || z.next_zipf())
        });
    }

    #[test]
    fn pareto_offsets_match_fio() {
        check("pareto:0.3", |n, s| {
            let mut z = Zipf::new_pareto(n, 0.3, None, s);
            Box::new(move || z.next_pareto())
        });
    }

    #[test]
    fn normal_offsets_match_fio() {
        check("normal", |n, s| {
            let mut g = Gauss::new(n, 0.0, None, s);
            Box::new(move || g.next_range())
        });
        check("normal:10:0.75", |n, s| {
            let mut g = Gauss::new(n, 10.0, Some(0.75), s);
            Box::new(move || g.next_range())
        });
    }
}
