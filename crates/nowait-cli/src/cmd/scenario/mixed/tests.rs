//! Unit tests of the mixed scenario.

use super::*;

use crate::base::args::words as a;

#[test]
fn options_name_the_flag() {
    for (args, flag) in [
        ("--mix=50,50", "--mix"),
        ("--f2-size=0", "--f2-size"),
        ("--runtime=abc", "--runtime"),
        ("--configs=pool:sometimes", "--configs"),
        ("--configs=uring:off", "--configs"),
        ("--zipf=1", "--zipf"),
        ("--bogus 1", "--bogus"),
    ] {
        let e = parse(&a(args)).unwrap_err();
        assert!(e.contains(flag), "{args}: {e}");
    }
    let ok = parse(&a(
        "--size 64m --runtime=300ms --verify --output-format json",
    ))
    .unwrap();
    assert_eq!(ok.sizes, [8 << 20, 64 << 20, 64 << 20]);
    assert!(ok.verify && ok.json);
    assert_eq!(ok.runtime, Duration::from_millis(300));
    assert_eq!(ok.configs.len(), 3);
}
