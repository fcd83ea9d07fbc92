//! Unit tests of the value parsers, each read as fio reads it.

use super::*;

#[test]
fn sizes_follow_kb_base_as_fio_reads_them() {
    let b = KbBase::Binary;
    let d = KbBase::Decimal;
    assert_eq!(parse_bytes("4k", b), Ok(4096));
    assert_eq!(parse_bytes("4KB", b), Ok(4096));
    assert_eq!(parse_bytes("4kib", b), Ok(4000));
    assert_eq!(parse_bytes("4ki", b), Ok(4096), "fio reads `ki` as `k`");
    assert_eq!(parse_bytes("4kib", d), Ok(4096));
    assert_eq!(parse_bytes("4k", d), Ok(4000));
    assert_eq!(parse_bytes("1g", b), Ok(1 << 30));
    assert_eq!(parse_bytes("2t", b), Ok(2 << 40));
    assert_eq!(parse_bytes("4096b", b), Ok(4096));
    assert_eq!(parse_bytes("0x1000", b), Ok(4096));
    assert_eq!(parse_size("50%", b), Ok(Size::Percent(50)));
    assert!(parse_size("150%", b).is_err());
    assert!(parse_bytes("1.5g", b)
        .unwrap_err()
        .0
        .contains("unknown unit"));
    assert!(parse_bytes("4 k", b).is_err());
    assert!(
        parse_bytes(" 4k", b).unwrap_err().0.contains("blank"),
        "fio reads ` 4k` as 4"
    );
    assert_eq!(parse_bytes(" 4096", b), Ok(4096));
    assert_eq!(parse_bytes("(8*1024)", b), Ok(8192));
    assert_eq!(parse_time_us("(2*60)", TimeUnit::Seconds), Ok(120_000_000));
    assert_eq!(parse_time_us("(1m)", TimeUnit::Seconds), Ok(60_000_000));
    assert!(parse_time_us("(5ms)", TimeUnit::Seconds).is_err());
    assert_eq!(parse_time_us("(5ms)", TimeUnit::Micros), Ok(5000));
    assert!(parse_bytes("-4k", b).is_err());
    assert_eq!(parse_signed_bytes("-8k", b), Ok(-8192));
}

#[test]
fn times_default_to_the_options_unit() {
    assert_eq!(parse_time_us("10", TimeUnit::Seconds), Ok(10_000_000));
    assert_eq!(parse_time_us("10", TimeUnit::Micros), Ok(10));
    assert_eq!(parse_time_us("5ms", TimeUnit::Seconds), Ok(5000));
    assert_eq!(parse_time_us("2m", TimeUnit::Micros), Ok(120_000_000));
    assert_eq!(parse_time_us("1H", TimeUnit::Micros), Ok(3_600_000_000));
    assert!(parse_time_us("10sec", TimeUnit::Seconds)
        .unwrap_err()
        .0
        .contains("microseconds"));
}

#[test]
fn per_ddir_lists_fill_as_fio_does() {
    let p = |s| parse_per_ddir(s, ListSeps::Any, |v| parse_bytes(v, KbBase::Binary)).unwrap();
    assert_eq!(p("4k"), PerDdir::all(Some(4096)));
    assert_eq!(
        p("4k,8k"),
        PerDdir {
            read: Some(4096),
            write: Some(8192),
            trim: Some(8192)
        }
    );
    assert_eq!(
        p("4k:8k"),
        PerDdir {
            read: Some(4096),
            write: Some(8192),
            trim: Some(8192)
        }
    );
    assert_eq!(
        p(",8k"),
        PerDdir {
            read: None,
            write: Some(8192),
            trim: Some(8192)
        }
    );
    assert_eq!(p("4k,"), PerDdir::all(Some(4096)));
    let r = parse_per_ddir("1k-4k,8k-16k", ListSeps::Comma, |v| {
        parse_range(v, KbBase::Binary)
    })
    .unwrap();
    assert_eq!(r.read, Some((1024, 4096)));
    assert_eq!(r.trim, Some((8192, 16384)));
    assert_eq!(parse_range("16k:4k", KbBase::Binary), Ok((4096, 16384)));
}

#[test]
fn bssplit_fills_missing_shares_and_sorts() {
    let s = parse_bssplit("4k/10:64k/50:32k", KbBase::Binary).unwrap();
    assert_eq!(
        s.read,
        vec![
            BsSplit { bs: 4096, perc: 10 },
            BsSplit {
                bs: 32768,
                perc: 40
            },
            BsSplit {
                bs: 65536,
                perc: 50
            }
        ]
    );
    assert_eq!(s.trim, s.read);
    let s = parse_bssplit("4k,8k/50:16k", KbBase::Binary).unwrap();
    assert_eq!(
        s.read,
        vec![BsSplit {
            bs: 4096,
            perc: 100
        }]
    );
    assert_eq!(s.write.len(), 2);
    assert!(parse_bssplit("4k/90:8k:16k/20:32k", KbBase::Binary).is_err());
}

#[test]
fn distributions_and_rw_postfixes() {
    let b = KbBase::Binary;
    assert_eq!(
        parse_random_distribution("zipf", b),
        Ok(DistSpec::Zipf {
            theta: 1.1,
            center: None
        })
    );
    assert_eq!(
        parse_random_distribution("pareto:0.3:0.5", b),
        Ok(DistSpec::Pareto {
            h: 0.3,
            center: Some(0.5)
        })
    );
    assert!(parse_random_distribution("zipf:1", b).is_err());
    assert!(parse_random_distribution("normal:100", b).is_err());
    let DistSpec::Zoned(z) = parse_random_distribution("zoned:60/10:30/20:10/70", b).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        z.read[1],
        ZoneSplit {
            access_perc: 30,
            size: 20
        }
    );
    assert!(parse_random_distribution("zoned:60/10:30/20", b)
        .unwrap_err()
        .0
        .contains("90"));
    // fio's examples/rand-zones.fio: the last zone's size is what is left.
    let DistSpec::Zoned(z) = parse_random_distribution("zoned:50/5:30/15:20/", b).unwrap() else {
        panic!()
    };
    assert_eq!(
        z.read[2],
        ZoneSplit {
            access_perc: 20,
            size: 80
        }
    );
    assert_eq!(
        parse_bssplit("4k/:8k/50", b).unwrap().read[0],
        BsSplit { bs: 4096, perc: 50 }
    );
    let DistSpec::ZonedAbs(z) = parse_random_distribution("zoned_abs:60/1m:40/2m", b).unwrap()
    else {
        panic!()
    };
    assert_eq!(z.read[1].size, 2 << 20);
    assert_eq!(
        parse_rw("read:-8k", b),
        Ok(RwSpec {
            mode: RwMode::Read,
            seq_nr: 1,
            seq_add: -8192
        })
    );
    assert_eq!(
        parse_rw("randread:8", b),
        Ok(RwSpec {
            mode: RwMode::RandRead,
            seq_nr: 8,
            seq_add: 0
        })
    );
    assert!(parse_rw("randread:0", b).is_err());
    assert_eq!(
        parse_rw("randrw", b).unwrap().mode,
        RwMode::Writes("randrw")
    );
}
