//! Loud skips, and no quiet passes in CI: shared by the library's and the
//! CLI's test helpers (the CLI's includes this file with `#[path]`).

/// The skips `.ci/expected-skips` allows in CI: one `name: reason` a line.
fn expected_skips() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.ci/expected-skips");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(": ").map(|(name, _)| name.trim().to_string()))
        .collect()
}

/// Say that `name` (a test, or a part of one) cannot run here and why:
/// prints `SKIP <name>: <reason>`. In CI (`CI=true`) a skip is a failure
/// unless `name` is listed in `.ci/expected-skips` with the reason it is
/// expected there: a suite that quietly stops running what it should is
/// caught, not passed.
pub fn skip(name: &str, reason: &str) {
    eprintln!("SKIP {name}: {reason}");
    if std::env::var("CI").is_ok_and(|v| v == "true") && !expected_skips().iter().any(|e| e == name)
    {
        panic!(
            "SKIP {name} in CI: {reason}. CI=true makes an unexpected skip a failure: make it \
             run on the CI machine, or list `{name}: <why>` in .ci/expected-skips"
        );
    }
}

/// [`skip`] for a line `name: reason` (the name ends at the first `": "`).
pub fn skip_line(line: &str) {
    match line.split_once(": ") {
        Some((name, reason)) => skip(name, reason),
        None => skip(line, "(no reason given)"),
    }
}
