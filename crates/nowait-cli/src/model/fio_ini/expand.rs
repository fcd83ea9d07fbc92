//! What fio substitutes in an option line before reading it
//! (`dup_and_sub_options` in fio's `options.c`): `${VAR}` from the
//! environment (empty when unset), then the reserved words `$pagesize`,
//! `$mb_memory` and `$ncpus`, and, when a reserved word was replaced and the
//! value has `+ - * /`, the value computed as `bc` computes it (integers,
//! `+ - * / % ^`, parentheses).
//!
//! fio has no `$(( ))`: arithmetic in a value is either this `bc` step or a
//! value in parentheses (`size=(8*1024)`, see [`super::arith`]).

/// The machine facts fio's reserved words stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemFacts {
    /// `$pagesize`: bytes per page.
    pub pagesize: u64,
    /// `$mb_memory`: megabytes of memory (total, not free).
    pub mb_memory: u64,
    /// `$ncpus`: CPUs configured (`sysconf(_SC_NPROCESSORS_CONF)`).
    pub ncpus: u64,
}

impl SystemFacts {
    /// This machine's: the page size and total memory from the kernel
    /// (`sysinfo`), the CPUs configured as glibc counts them (the `cpuN`
    /// entries of `/sys/devices/system/cpu`).
    pub fn this_machine() -> SystemFacts {
        let info = rustix::system::sysinfo();
        let mem = info.totalram * u64::from(info.mem_unit.max(1));
        let ncpus = std::fs::read_dir("/sys/devices/system/cpu")
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n.strip_prefix("cpu")
                            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .count() as u64
            })
            .unwrap_or(0);
        let ncpus = if ncpus == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
        } else {
            ncpus
        };
        SystemFacts {
            pagesize: rustix::param::page_size() as u64,
            mb_memory: mem / (1024 * 1024),
            ncpus,
        }
    }
}

/// Substitute `${VAR}` (fio's `fio_option_dup_subs`): every `${NAME}` with a
/// closing `}` becomes the variable's value, or nothing when it is unset.
pub fn env_vars(line: &str, var: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) => {
                if let Some(v) = var(&after[..j]) {
                    out.push_str(&v);
                }
                rest = &after[j + 1..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replace the reserved words and compute the value when fio would hand it
/// to `bc` (fio's `fio_keyword_replace` and `bc_calc`).
pub fn keywords(line: &str, facts: &SystemFacts) -> Result<String, String> {
    let words = [
        ("$pagesize", facts.pagesize),
        ("$mb_memory", facts.mb_memory),
        ("$ncpus", facts.ncpus),
    ];
    let mut s = line.to_string();
    let mut replaced = false;
    for (w, v) in words {
        if s.contains(w) {
            s = s.replace(w, &v.to_string());
            replaced = true;
        }
    }
    if !replaced || !s.contains(['+', '-', '*', '/']) || s.contains('\'') {
        return Ok(s);
    }
    let Some((key, value)) = s.split_once('=') else {
        return Ok(s);
    };
    let n = bc(value).map_err(|e| format!("`{value}` (after replacing fio's reserved words) cannot be computed as fio computes it with bc: {e}"))?;
    Ok(format!("{key}={n}"))
}

/// `${VAR}`, then the reserved words and their arithmetic.
pub fn expand(
    line: &str,
    var: &dyn Fn(&str) -> Option<String>,
    facts: &SystemFacts,
) -> Result<String, String> {
    keywords(&env_vars(line, var), facts)
}

/// Integer arithmetic as `bc` does it with `scale=0`: `+ - * / % ^`,
/// parentheses, unary minus (binding tighter than `^`, as in bc), division
/// truncating toward zero.
pub fn bc(expr: &str) -> Result<i128, String> {
    let toks: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Bc { t: &toks, i: 0 };
    let v = p.sum()?;
    if p.i != toks.len() {
        return Err(format!(
            "unexpected `{}`",
            toks[p.i..].iter().collect::<String>()
        ));
    }
    Ok(v)
}

struct Bc<'a> {
    t: &'a [char],
    i: usize,
}

impl Bc<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == '+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or("overflow")?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.i += 1;
            let r = self.power()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or("overflow")?,
                _ if r == 0 => return Err("divide by zero".into()),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<i128, String> {
        let base = self.unary()?;
        if self.peek() == Some('^') {
            self.i += 1;
            let e = self.power()?;
            return if e < 0 {
                Ok(match base {
                    1 => 1,
                    -1 if e % 2 != 0 => -1,
                    -1 => 1,
                    0 => return Err("divide by zero".into()),
                    _ => 0,
                })
            } else {
                let e = u32::try_from(e).map_err(|_| "exponent too large")?;
                base.checked_pow(e).ok_or_else(|| "overflow".into())
            };
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some('-') => {
                self.i += 1;
                Ok(-self.unary()?)
            }
            Some('(') => {
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err("missing `)`".into());
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.i += 1;
                }
                self.t[start..self.i]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .map_err(|_| "number too large".into())
            }
            Some(c) => Err(format!(
                "bc has no `{c}` here (no units: write 8*1024, not 8k)"
            )),
            None => Err("the expression ends early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FACTS: SystemFacts = SystemFacts {
        pagesize: 4096,
        mb_memory: 2048,
        ncpus: 4,
    };

    fn env(n: &str) -> Option<String> {
        match n {
            "QD" => Some("32".into()),
            "SIZE" => Some("64m".into()),
            _ => None,
        }
    }

    #[test]
    fn environment_variables_as_fio_substitutes_them() {
        assert_eq!(env_vars("iodepth=${QD}", &env), "iodepth=32");
        assert_eq!(env_vars("size=${SIZE}x${QD}", &env), "size=64mx32");
        assert_eq!(env_vars("a=${UNSET}", &env), "a=");
        assert_eq!(env_vars("a=${QD", &env), "a=${QD");
        assert_eq!(env_vars("a=$QD", &env), "a=$QD", "only the braced form");
    }

    #[test]
    fn reserved_words_and_bc_arithmetic() {
        assert_eq!(
            expand("numjobs=$ncpus", &env, &FACTS),
            Ok("numjobs=4".into())
        );
        assert_eq!(
            expand("size=8*$mb_memory", &env, &FACTS),
            Ok("size=16384".into())
        );
        assert_eq!(expand("bs=$pagesize*2", &env, &FACTS), Ok("bs=8192".into()));
        assert_eq!(
            expand("numjobs=$ncpus/3", &env, &FACTS),
            Ok("numjobs=1".into())
        );
        assert_eq!(expand("x=2^$ncpus-1", &env, &FACTS), Ok("x=15".into()));
        assert!(expand("size=$mb_memory*1g", &env, &FACTS)
            .unwrap_err()
            .contains("bc"));
        // Without a reserved word fio does no arithmetic at all.
        assert_eq!(
            expand("size=8*1024", &env, &FACTS),
            Ok("size=8*1024".into())
        );
    }

    #[test]
    fn bc_precedence() {
        assert_eq!(bc("-2^2"), Ok(4));
        assert_eq!(bc("2^3^2"), Ok(512));
        assert_eq!(bc("7%3+10/4"), Ok(3));
        assert_eq!(bc("(1+2)*3"), Ok(9));
        assert_eq!(bc("-7/2"), Ok(-3));
        assert_eq!(bc("2^-1"), Ok(0));
        assert!(bc("1/0").is_err());
    }

    /// The same answers as the `bc` fio runs, where it is installed.
    #[test]
    fn bc_agrees_with_bc() {
        let exprs = [
            "-2^2",
            "2^3^2",
            "7%3+10/4",
            "-7/2",
            "2^-1",
            "-7%2",
            "(1+2)*3-4/3",
            "2048*8/3",
        ];
        for e in exprs {
            let Ok(out) = std::process::Command::new("bc")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write as _;
                    c.stdin
                        .take()
                        .unwrap()
                        .write_all(format!("{e}\n").as_bytes())?;
                    c.wait_with_output()
                })
            else {
                crate::base::fio_check::skip(
                    "bc_agrees_with_bc",
                    "bc is not installed (apt-get install bc)",
                );
                return;
            };
            let want: i128 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            assert_eq!(bc(e), Ok(want), "{e}");
        }
    }
}
