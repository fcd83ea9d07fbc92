//! Unit tests of fio's random numbers: seeds, generators, the LFSR and the
//! random map, checked against fio's own output.

use super::*;
use crate::base::fio_check;

/// fio 3.42's debug output (`--debug=random`) for job 1 with the default
/// seeds: `rand_seeds[6]`, then the first offset draws ("off rand").
#[test]
fn default_seeds_and_first_draws_match_fio() {
    let s = JobSeeds::new(
        &SeedOptions::default(),
        1,
        true,
        Seeding::Since3_35,
        || unreachable!(),
    );
    assert_eq!(s.get(Stream::BsRead), 5942511153023025289);
    assert_eq!(s.get(Stream::Block), 6803328749335347343);
    assert_eq!(s.get(Stream::FileSize), 2330239258251821200);
    let mut r = s.rand(Stream::Block, false);
    assert_eq!(
        [r.rand(), r.rand(), r.rand()],
        [4196289317, 3719163915, 2820806093]
    );
    // fio 3.33 seeds the offsets from 0xb1899bed times the job number.
    let s = JobSeeds::new(
        &SeedOptions::default(),
        1,
        true,
        Seeding::Before3_35,
        || unreachable!(),
    );
    let mut r = s.rand(Stream::Block, false);
    assert_eq!(
        [r.rand(), r.rand(), r.rand()],
        [259043585, 3179521932, 3621444214]
    );
}

#[test]
fn randseed_moves_offsets_only_since_3_35() {
    let o = SeedOptions {
        randseed: Some(1234),
        ..Default::default()
    };
    let new = JobSeeds::new(&o, 1, true, Seeding::Since3_35, || unreachable!());
    assert_eq!(new.rand(Stream::Block, false).rand(), 320323601);
    let old = JobSeeds::new(&o, 1, true, Seeding::Before3_35, || unreachable!());
    assert_eq!(old.rand(Stream::Block, false).rand(), 259043585);
    assert!(!o.reseeds_each_loop());
}

#[test]
fn entropy_is_asked_only_without_randrepeat_and_randseed() {
    let o = SeedOptions {
        randrepeat: false,
        ..Default::default()
    };
    let s = JobSeeds::new(&o, 3, true, Seeding::Since3_35, || [7; SEED_COUNT]);
    assert_eq!(s.get(Stream::Block), 7);
}

#[test]
fn tausworthe64_is_deterministic_and_uses_all_bits() {
    let mut r = FioRand::new(12345, true);
    let v: Vec<u64> = (0..64).map(|_| r.rand()).collect();
    assert!(v.iter().any(|&x| x > u64::from(u32::MAX)));
    assert_eq!(FioRand::new(12345, true).rand(), v[0]);
    let x = FioRand::new(1, true).next_0_1();
    assert!(x > 0.0 && x <= 1.0);
}

#[test]
fn between_stays_in_range() {
    let mut r = FioRand::new(99, false);
    for _ in 0..10_000 {
        let v = r.between(1, 100);
        assert!((1..=100).contains(&v), "{v}");
    }
}

#[test]
fn lfsr_visits_every_block_once_per_pass() {
    for blocks in [1u64, 2, 7, 8, 100, 1000, 4096] {
        let mut l = Lfsr::new(blocks, 0x1234_5678, 0).unwrap();
        let mut seen = vec![false; blocks as usize];
        for _ in 0..blocks {
            let b = l.next_block().expect("a block per call within a pass");
            assert!(!seen[b as usize], "block {b} twice of {blocks}");
            seen[b as usize] = true;
        }
        assert_eq!(l.next_block(), None, "pass of {blocks} is over");
    }
}

#[test]
fn lfsr_refuses_what_fio_refuses() {
    assert_eq!(Lfsr::new(0, 1, 0), Err(LfsrError::Empty));
    assert_eq!(Lfsr::new(10, 1, 16), Err(LfsrError::Spin(16)));
    // 10 blocks: a 4-bit register; a seed of all ones locks it.
    assert_eq!(Lfsr::new(10, 0xf, 0), Err(LfsrError::LockedSeed(0xf)));
}

#[test]
fn block_map_marks_runs_and_finds_the_next_free_block() {
    let mut m = BlockMap::new(200);
    assert_eq!(m.set_run(10, 5), 5);
    assert_eq!(m.set_run(8, 5), 2, "stops at the first block already read");
    assert_eq!(m.next_free(9), Some(15));
    assert_eq!(m.next_free(199), Some(0), "wraps to the start");
    for b in 0..200 {
        m.set_run(b, 1);
    }
    assert_eq!(m.next_free(5), None);
    m.reset();
    assert!(!m.is_set(10));
}

#[test]
fn block_map_summary_levels_skip_full_words() {
    // 64^3 blocks: three levels; fill all but one block far away.
    let n = 64u64 * 64 * 64;
    let mut m = BlockMap::new(n);
    let hole = n - 777;
    let mut b = 0;
    while b < n {
        let k = m.set_run(b, 64);
        b += k.max(1);
    }
    m.levels[0][(hole / 64) as usize] &= !(1 << (hole % 64));
    // Clear the summary bits above the hole, as a map that never had it set.
    let mut i = hole / 64;
    for l in 1..m.levels.len() {
        m.levels[l][(i / 64) as usize] &= !(1 << (i % 64));
        i /= 64;
    }
    assert_eq!(m.next_free(3), Some(hole));
    assert_eq!(m.next_free(hole + 5), Some(hole), "found after wrapping");
}

/// The LFSR's first output takes one step more than the rest (fio's
/// `prepare_spin`); sizes whose first state is a block show it.
#[test]
fn lfsr_offsets_match_fio() {
    let Some(fios) = fio_check::fios("lfsr_offsets_match_fio") else {
        return;
    };
    for fio in &fios {
        for blocks in [511u64, 1000, 37] {
            let size = format!("--size={}k", blocks * 4);
            let got = fio.reads(&["--rw=randread", "--bs=4k", &size, "--random_generator=lfsr"]);
            let seeds = JobSeeds::new(
                &SeedOptions::default(),
                1,
                true,
                Seeding::of_version(fio.major, fio.minor),
                || unreachable!(),
            );
            let mut l = Lfsr::new(blocks, seeds.get(Stream::Block), 0).unwrap();
            let want: Vec<(u64, u64)> = (0..blocks)
                .map(|_| (l.next_block().unwrap() * 4096, 4096))
                .collect();
            assert_eq!(got, want, "{} {blocks} blocks", fio.version);
        }
    }
}

/// Offsets of plain `randread` jobs, offset for offset against fio.
#[test]
fn randread_offsets_match_fio() {
    let Some(fios) = fio_check::fios("randread_offsets_match_fio") else {
        return;
    };
    for fio in &fios {
        for (gen, extra) in [
            (Generator::Tausworthe, ""),
            (Generator::Lfsr, "--random_generator=lfsr"),
            (Generator::Tausworthe64, "--random_generator=tausworthe64"),
        ] {
            for norandommap in [false, true] {
                let blocks = 300u64;
                let mut args = vec!["--rw=randread", "--bs=4k", "--size=1200k"];
                if !extra.is_empty() {
                    args.push(extra);
                }
                if norandommap {
                    args.push("--norandommap");
                }
                let got = fio.reads(&args);
                let seeds = JobSeeds::new(
                    &SeedOptions::default(),
                    1,
                    true,
                    Seeding::of_version(fio.major, fio.minor),
                    || unreachable!(),
                );
                let mut rng = seeds.rand(Stream::Block, gen == Generator::Tausworthe64);
                let mut file =
                    FileBlocks::new(gen, blocks, !norandommap, seeds.get(Stream::Block)).unwrap();
                let mut want = Vec::new();
                for _ in 0..got.len() {
                    let b = file.next_block(&mut rng, blocks).unwrap();
                    if let Some(m) = file.map_mut() {
                        m.set_run(b, 1);
                    }
                    want.push((b * 4096, 4096));
                }
                assert_eq!(
                    got.len() as u64,
                    blocks,
                    "{} {gen:?}: one pass",
                    fio.version
                );
                assert_eq!(
                    got, want,
                    "{} {gen:?} norandommap={norandommap}",
                    fio.version
                );
            }
        }
    }
}
