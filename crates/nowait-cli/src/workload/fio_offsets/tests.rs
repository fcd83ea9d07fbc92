//! Unit tests of where reads go: each compared with fio's own offsets.

use super::*;
use crate::base::fio_check;
use crate::model::fio_ini::value::{parse_bssplit, parse_random_distribution, parse_rw, KbBase};
use crate::workload::fio_random::{JobSeeds, Seeding};

/// Generate `n` reads of a one-file job.
fn ours(opts: OffsetOptions, geo: FileGeometry, file: &str, n: usize) -> Vec<(u64, u64)> {
    let seeds = JobSeeds::new(
        &opts.seeds,
        u64::from(opts.thread_number),
        opts.random(),
        opts.seeding,
        || unreachable!(),
    );
    let mut job = JobOffsets::new(opts, &seeds, geo.io_size / 512).unwrap();
    let mut f = job.file(geo, file, &seeds).unwrap();
    let mut v = Vec::new();
    let mut bytes = 0;
    while v.len() < n && bytes < geo.io_size {
        match job.next_read(&mut f) {
            Some(r) => {
                bytes += r.len;
                v.push((r.offset, r.len));
            }
            None => break,
        }
    }
    v
}

fn geo(size: u64, offset: u64) -> FileGeometry {
    FileGeometry {
        real_file_size: size + offset,
        file_offset: offset,
        io_size: size,
    }
}

/// Compare with fio for each `(fio args, our options)` case.
/// fio's arguments, how they set our options, the file.
type Case<'a> = (&'a [&'a str], &'a dyn Fn(&mut OffsetOptions), FileGeometry);

fn compare(name: &str, cases: &[Case<'_>]) {
    let Some(fios) = fio_check::fios(name) else {
        return;
    };
    for fio in &fios {
        for (args, set, geo) in cases {
            let (got, file) = fio.reads_with_file(args);
            let rw = args
                .iter()
                .find_map(|a| a.strip_prefix("--rw="))
                .unwrap_or("read");
            let mut o = OffsetOptions::new(parse_rw(rw, KbBase::Binary).unwrap(), 4096);
            o.seeding = Seeding::of_version(fio.major, fio.minor);
            set(&mut o);
            let want = ours(o, *geo, &file, got.len() + 1);
            assert_eq!(got, want, "{} {args:?}", fio.version);
        }
    }
}

/// `random_distribution=sequence` (fio 3.39+): the listed blocks in
/// order, as fio 3.42's `write_iolog` gives them for the same options
/// (and checked against any fio that has it: `NOWAIT_FIO_EXTRA`).
#[test]
fn sequence_distribution_reads_the_listed_blocks_as_fio() {
    let blocks = |list: Vec<u32>, stride: bool, n: usize| -> Vec<u64> {
        let mut o = OffsetOptions::new(parse_rw("randread", KbBase::Binary).unwrap(), 4096);
        o.distribution = DistSpec::Sequence(list);
        o.sequence_stride = stride;
        let got = ours(o, geo(48 << 10, 0), "f", n);
        assert!(got.iter().all(|&(_, len)| len == 4096), "{got:?}");
        got.iter().map(|&(off, _)| off / 4096).collect()
    };
    // fio's example, sequence-distribution.fio: 24k of a 48k file.
    assert_eq!(blocks(vec![2, 0, 1], false, 6), [2, 0, 1, 2, 0, 1]);
    assert_eq!(blocks(vec![2, 0, 1], true, 6), [2, 0, 1, 5, 3, 4]);
    // With a stride the pass ends where the pattern leaves the region.
    assert_eq!(
        blocks(vec![2, 0, 1], true, 100),
        [2, 0, 1, 5, 3, 4, 8, 6, 7, 11, 9, 10]
    );
    assert_eq!(
        blocks(vec![3, 1], true, 100),
        [3, 1, 5, 3, 7, 5, 9, 7, 11, 9]
    );
    // A listed block past the region is refused before the first read.
    let mut o = OffsetOptions::new(parse_rw("randread", KbBase::Binary).unwrap(), 4096);
    o.distribution = DistSpec::Sequence(vec![0, 12]);
    let seeds = JobSeeds::new(&o.seeds, 1, true, o.seeding, || unreachable!());
    let job = JobOffsets::new(o, &seeds, 96).unwrap();
    let e = job.file(geo(48 << 10, 0), "f", &seeds).unwrap_err();
    assert!(e.to_string().contains("block 12"), "{e}");
    let Some(fios) = fio_check::fios("sequence_distribution_reads_the_listed_blocks_as_fio") else {
        return;
    };
    for fio in fios.iter().filter(|f| (f.major, f.minor) >= (3, 39)) {
        for (stride, want) in [
            ("0", blocks(vec![2, 0, 1], false, 6)),
            ("1", blocks(vec![2, 0, 1], true, 100)),
        ] {
            let (got, _) = fio.reads_with_file(&[
                "--rw=randread",
                "--bs=4k",
                "--size=48k",
                if stride == "0" {
                    "--io_size=24k"
                } else {
                    "--io_size=96k"
                },
                "--random_distribution=sequence:2,0,1",
                &format!("--random_sequence_stride={stride}"),
            ]);
            let got: Vec<u64> = got.iter().map(|&(off, _)| off / 4096).collect();
            assert_eq!(got, want, "{} stride {stride}", fio.version);
        }
    }
}

#[test]
fn sequential_holes_and_backward_strides_match_fio() {
    compare(
        "sequential_holes_and_backward_strides_match_fio",
        &[
            (
                &["--rw=read:8k", "--bs=4k", "--size=64k"],
                &|_| {},
                geo(64 << 10, 0),
            ),
            (
                &["--rw=read:-8k", "--bs=4k", "--size=64k"],
                &|_| {},
                geo(64 << 10, 0),
            ),
            (
                &["--rw=read:-8k", "--bs=4k", "--size=64k", "--offset=32k"],
                &|_| {},
                geo(64 << 10, 32 << 10),
            ),
            (
                &["--rw=read:8k", "--bs=4k", "--size=64k", "--offset=32k"],
                &|_| {},
                geo(64 << 10, 32 << 10),
            ),
        ],
    );
}

#[test]
fn random_runs_percentage_random_and_sequencers_match_fio() {
    compare(
        "random_runs_percentage_random_and_sequencers_match_fio",
        &[
            (
                &["--rw=randread:4", "--bs=4k", "--size=256k"],
                &|_| {},
                geo(256 << 10, 0),
            ),
            (
                &[
                    "--rw=randread:4",
                    "--rw_sequencer=identical",
                    "--bs=4k",
                    "--size=256k",
                ],
                &|o| o.sequencer = Sequencer::Identical,
                geo(256 << 10, 0),
            ),
            (
                &[
                    "--rw=randread",
                    "--percentage_random=30",
                    "--bs=4k",
                    "--size=256k",
                ],
                &|o| o.percentage_random = 30,
                geo(256 << 10, 0),
            ),
            (
                &["--rw=randread", "--blockalign=1k", "--bs=4k", "--size=256k"],
                &|o| {
                    o.blockalign = Some(1024);
                    o.norandommap = true;
                },
                geo(256 << 10, 0),
            ),
        ],
    );
}

#[test]
fn block_size_ranges_and_splits_match_fio() {
    compare(
        "block_size_ranges_and_splits_match_fio",
        &[
            (
                &["--rw=randread", "--bsrange=4k-16k", "--size=1m"],
                &|o| {
                    o.max_bs = 16384;
                },
                geo(1 << 20, 0),
            ),
            (
                &["--rw=read", "--bsrange=2k-12k", "--size=1m"],
                &|o| {
                    o.min_bs = 2048;
                    o.max_bs = 12288;
                    o.min_bs_write = 2048;
                },
                geo(1 << 20, 0),
            ),
            (
                &["--rw=randread", "--bssplit=4k/20:8k/30:64k", "--size=2m"],
                &|o| {
                    o.bssplit = parse_bssplit("4k/20:8k/30:64k", KbBase::Binary)
                        .unwrap()
                        .read;
                },
                geo(2 << 20, 0),
            ),
            (
                &[
                    "--rw=randread",
                    "--bssplit=4k/50:8k/50",
                    "--size=1m",
                    "--norandommap",
                ],
                &|o| {
                    o.bssplit = parse_bssplit("4k/50:8k/50", KbBase::Binary).unwrap().read;
                    o.norandommap = true;
                },
                geo(1 << 20, 0),
            ),
            (
                &[
                    "--rw=randread",
                    "--bsrange=1k-9k",
                    "--bs_unaligned",
                    "--size=1m",
                ],
                &|o| {
                    o.min_bs = 1024;
                    o.max_bs = 9216;
                    o.bs_unaligned = true;
                    o.min_bs_write = 1024;
                },
                geo(1 << 20, 0),
            ),
        ],
    );
}

#[test]
fn zoned_distributions_match_fio() {
    compare(
        "zoned_distributions_match_fio",
        &[
            (
                &[
                    "--rw=randread",
                    "--bs=4k",
                    "--size=4m",
                    "--random_distribution=zoned:60/10:30/20:10/70",
                ],
                &|o| {
                    o.distribution =
                        parse_random_distribution("zoned:60/10:30/20:10/70", KbBase::Binary)
                            .unwrap()
                },
                geo(4 << 20, 0),
            ),
            (
                &[
                    "--rw=randread",
                    "--bs=4k",
                    "--size=4m",
                    "--random_distribution=zoned:50/5:30/15:20/",
                ],
                &|o| {
                    o.distribution =
                        parse_random_distribution("zoned:50/5:30/15:20/", KbBase::Binary).unwrap()
                },
                geo(4 << 20, 0),
            ),
            (
                &[
                    "--rw=randread",
                    "--bs=4k",
                    "--size=4m",
                    "--random_distribution=zoned_abs:50/1m:50/3m",
                ],
                &|o| {
                    o.distribution =
                        parse_random_distribution("zoned_abs:50/1m:50/3m", KbBase::Binary).unwrap()
                },
                geo(4 << 20, 0),
            ),
        ],
    );
}

#[test]
fn strided_zones_match_fio() {
    let z = |size, range, skip| {
        move |o: &mut OffsetOptions| {
            o.strided = Some(Strided {
                zone_size: size,
                zone_range: range,
                zone_skip: skip,
            })
        }
    };
    compare(
        "strided_zones_match_fio",
        &[
            (
                &[
                    "--rw=read",
                    "--bs=4k",
                    "--size=64k",
                    "--zonemode=strided",
                    "--zonesize=8k",
                    "--zoneskip=8k",
                ],
                &z(8192, 8192, 8192),
                geo(64 << 10, 0),
            ),
            (
                &[
                    "--rw=read",
                    "--bs=4k",
                    "--size=64k",
                    "--zonemode=strided",
                    "--zonesize=16k",
                    "--zonerange=8k",
                ],
                &z(16384, 8192, 0),
                geo(64 << 10, 0),
            ),
            (
                &[
                    "--rw=randread",
                    "--bs=4k",
                    "--size=256k",
                    "--zonemode=strided",
                    "--zonesize=16k",
                    "--zonerange=32k",
                    "--zoneskip=32k",
                ],
                &z(16384, 32768, 32768),
                geo(256 << 10, 0),
            ),
        ],
    );
}

/// Regions of a 1 MiB file as fio places them (read with `psync`: fio
/// reads the size of an existing file only through a real engine).
#[test]
fn regions_match_fio() {
    let Some(fios) = fio_check::fios("regions_match_fio") else {
        return;
    };
    let kb = KbBase::Binary;
    let mib = 1u64 << 20;
    let cases: [(&[&str], RegionOptions); 6] = [
        (
            &["--offset=25%", "--size=50%"],
            RegionOptions {
                offset: Size::Percent(25),
                size: Some(Size::Percent(50)),
                ..RegionOptions::whole(65536)
            },
        ),
        (
            &["--offset=25%"],
            RegionOptions {
                offset: Size::Percent(25),
                ..RegionOptions::whole(65536)
            },
        ),
        (
            &["--size=50%", "--offset=100k"],
            RegionOptions {
                offset: Size::Bytes(100 << 10),
                size: Some(Size::Percent(50)),
                ..RegionOptions::whole(65536)
            },
        ),
        (
            &["--offset=10%", "--offset_align=64k"],
            RegionOptions {
                offset: Size::Percent(10),
                offset_align: Some(65536),
                ..RegionOptions::whole(65536)
            },
        ),
        (
            &["--offset=10%"],
            RegionOptions {
                offset: Size::Percent(10),
                min_bs: 4096,
                ..RegionOptions::whole(4096)
            },
        ),
        (
            &["--size=200k"],
            RegionOptions {
                size: Some(Size::Bytes(200 << 10)),
                ..RegionOptions::whole(65536)
            },
        ),
    ];
    for fio in &fios {
        for (args, region) in &cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            std::fs::write(&path, vec![0u8; mib as usize]).unwrap();
            let bs = if region.min_bs == 4096 {
                "--bs=4k"
            } else {
                "--bs=64k"
            };
            let mut a = vec!["--rw=read", "--ioengine=psync", bs];
            a.extend_from_slice(args);
            let out = std::process::Command::new(&fio.path)
                .args([
                    "--name=t",
                    "--thread",
                    "--output=/dev/null",
                    &format!("--filename={}", path.display()),
                ])
                .arg(format!(
                    "--write_iolog={}",
                    dir.path().join("log").display()
                ))
                .args(&a)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
            let got: Vec<(u64, u64)> = log
                .lines()
                .filter_map(
                    |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                        [_, _, "read", o, n] => Some((o.parse().ok()?, n.parse().ok()?)),
                        _ => None,
                    },
                )
                .collect();
            let geo = region.geometry(mib, 0, 0).unwrap();
            let o = OffsetOptions::new(parse_rw("read", kb).unwrap(), region.min_bs);
            assert_eq!(
                got,
                ours(o, geo, "f", usize::MAX),
                "{} {args:?}",
                fio.version
            );
        }
    }
    let clone = RegionOptions {
        offset: Size::Bytes(100 << 10),
        offset_increment: Size::Bytes(200 << 10),
        ..RegionOptions::whole(65536)
    };
    assert_eq!(clone.start_offset(mib, 1), 300 << 10);
    assert!(RegionOptions {
        offset: Size::Bytes(2 * mib),
        ..RegionOptions::whole(4096)
    }
    .geometry(mib, 0, 0)
    .unwrap_err()
    .contains("past the end"));
}

#[test]
fn writes_are_refused_by_name() {
    let o = OffsetOptions::new(parse_rw("randwrite", KbBase::Binary).unwrap(), 4096);
    let seeds = JobSeeds::new(&o.seeds, 1, true, o.seeding, || unreachable!());
    let e = JobOffsets::new(o, &seeds, 10).unwrap_err();
    assert!(e.to_string().contains("rw=randwrite"), "{e}");
}

#[test]
fn time_based_random_reads_start_a_new_pass() {
    let mut o = OffsetOptions::new(parse_rw("randread", KbBase::Binary).unwrap(), 4096);
    o.time_based = true;
    let seeds = JobSeeds::new(&o.seeds, 1, true, o.seeding, || unreachable!());
    let mut job = JobOffsets::new(o, &seeds, 16).unwrap();
    let mut f = job.file(geo(64 << 10, 0), "f", &seeds).unwrap();
    let mut seen = std::collections::HashSet::new();
    for i in 0..48 {
        let r = job
            .next_read(&mut f)
            .expect("a time-based job never runs out");
        if i < 16 {
            assert!(seen.insert(r.offset), "each block once in the first pass");
        }
    }
}
