//! fio's arithmetic in option values: a numeric value that starts with `(`
//! is an expression (`size=(8*1024)`, `runtime=(2*60)`, `bs=(1+1)k`), read
//! by fio's own grammar (`exp/expression-parser.y` and `.l`, built into fio
//! only when bison and flex were found at configure time: Debian's fio 3.33
//! has it off).
//!
//! The grammar, from loosest to tightest: `+ -`, a unit suffix (`(1+2k)` is
//! 1 + 2048, `(2*4k)` is 8k), `* /`, `^` (right-associative), `%`, unary
//! minus. Integers are 32-bit, decimals and exponents make a floating value;
//! units ignore `kb_base` (`k` is 1024, `kib` 1000, `m` minutes in a time).
//! A time without any unit is in the option's default unit.
//!
//! Where fio's parser quietly answers a wrong number (dividing by zero
//! answers the dividend, a result beyond 32 bits without a unit wraps, a
//! sub-second expression for a seconds option is cut to 0) this one
//! answers an error instead.

/// An expression's value as fio's parser carries it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    /// The integer result.
    pub ival: i64,
    /// The floating result.
    pub dval: f64,
    /// Whether the expression is floating (decides how later operators
    /// compute; fio keeps the left operand's flag).
    pub has_dval: bool,
    /// Whether a unit appeared anywhere.
    pub units: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Num(Value),
    Suffix(Value),
    Op(char),
}

fn num(ival: i64, dval: f64, has_dval: bool) -> Value {
    Value {
        ival,
        dval,
        has_dval,
        units: false,
    }
}

/// fio's lexer: longest match, first rule on a tie.
fn lex(s: &str, is_time: bool) -> Result<Vec<Tok>, String> {
    // (spelling, integer, floating, floating flag); ordered as fio's rules.
    let suffixes: [(&str, i64, f64, bool); 19] = [
        ("kib", 1000, 1000.0, false),
        ("mib", 1_000_000, 1e6, false),
        ("gib", 1_000_000_000, 1e9, false),
        ("pib", 1_000_000_000_000, 1e12, false),
        ("kb", 1024, 1024.0, false),
        ("mb", 1 << 20, 1_048_576.0, false),
        ("ms", 1000, 1000.0, true),
        ("us", 1, 1.0, true),
        ("gb", 1 << 30, 1_073_741_824.0, false),
        // fio's `t`/`tb` carries 1024^5 as its floating value.
        ("tb", 1 << 40, 1_125_899_906_842_624.0, false),
        ("pb", 1 << 50, 1_125_899_906_842_624.0, false),
        ("k", 1024, 1024.0, false),
        ("g", 1 << 30, 1_073_741_824.0, false),
        ("t", 1 << 40, 1_125_899_906_842_624.0, false),
        ("p", 1 << 50, 1_125_899_906_842_624.0, false),
        ("s", 1_000_000, 1e6, false),
        ("d", 86_400_000_000, 86_400_000_000.0, false),
        ("h", 3_600_000_000, 3_600_000_000.0, false),
        ("m", 0, 0.0, false),
    ];
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'\n' | b'#' | b':' | b',' => break,
            b'+' | b'-' | b'*' | b'/' | b'(' | b')' | b'^' | b'%' => {
                out.push(Tok::Op(c as char));
                i += 1;
            }
            b'0'..=b'9' | b'.' => {
                let start = i;
                if s[i..].starts_with("0x") || s[i..].starts_with("0X") {
                    let h = s[i + 2..].bytes().take_while(u8::is_ascii_hexdigit).count();
                    if h == 0 {
                        return Err(format!("`{}` is not a number", &s[i..]));
                    }
                    let v = u32::from_str_radix(&s[i + 2..i + 2 + h], 16)
                        .map_err(|_| "a hexadecimal number beyond 32 bits")?
                        as i32;
                    out.push(Tok::Num(num(i64::from(v), f64::from(v), false)));
                    i += 2 + h;
                    continue;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let mut float = false;
                if i < b.len() && b[i] == b'.' {
                    let d = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    if d == 0 {
                        return Err(format!("`{}` is not a number", &s[start..=i]));
                    }
                    i += 1 + d;
                    float = true;
                }
                if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                    let mut j = i + 1;
                    while j < b.len() && (b[j] == b'-' || b[j] == b'+') {
                        j += 1;
                    }
                    let d = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
                    if d > 0 {
                        i = j + d;
                        float = true;
                    }
                }
                let text = &s[start..i];
                if float {
                    let t = text.replace("e+", "e").replace("E+", "E");
                    let d: f64 = t.parse().map_err(|_| format!("`{text}` is not a number"))?;
                    out.push(Tok::Num(num(d as i64, d, true)));
                } else {
                    let v: i32 = text.parse().map_err(|_| {
                        format!("`{text}` is beyond fio's 32-bit integers in expressions; write it with a unit (e.g. 4g)")
                    })?;
                    out.push(Tok::Num(num(i64::from(v), f64::from(v), false)));
                }
            }
            _ if c.is_ascii_alphabetic() => {
                let rest = s[i..].to_ascii_lowercase();
                let (spelling, mut iv, mut dv, fl) = *suffixes
                    .iter()
                    .find(|(sp, ..)| rest.starts_with(sp))
                    .ok_or_else(|| format!("`{}`: unknown unit in an expression", &s[i..]))?;
                if spelling == "m" {
                    (iv, dv) = if is_time {
                        (60_000_000, 60e6)
                    } else {
                        (1 << 20, 1_048_576.0)
                    };
                }
                out.push(Tok::Suffix(Value {
                    ival: iv,
                    dval: dv,
                    has_dval: fl,
                    units: true,
                }));
                i += spelling.len();
            }
            _ => return Err(format!("`{}` cannot appear in an expression", c as char)),
        }
    }
    Ok(out)
}

struct P {
    t: Vec<Tok>,
    i: usize,
}

fn op_bp(op: char) -> Option<(u8, u8)> {
    Some(match op {
        '+' | '-' => (10, 11),
        '*' | '/' => (30, 31),
        '^' => (40, 40),
        '%' => (50, 51),
        _ => return None,
    })
}

const SUFFIX_BP: u8 = 20;
const UMINUS_BP: u8 = 60;

impl P {
    fn peek(&self) -> Option<Tok> {
        self.t.get(self.i).copied()
    }

    fn expr(&mut self, min: u8) -> Result<Value, String> {
        let mut lhs = match self.peek() {
            Some(Tok::Num(v)) => {
                self.i += 1;
                v
            }
            Some(Tok::Op('(')) => {
                self.i += 1;
                let v = self.expr(0)?;
                if self.peek() != Some(Tok::Op(')')) {
                    return Err("a `(` without its `)`".into());
                }
                self.i += 1;
                v
            }
            Some(Tok::Op('-')) => {
                self.i += 1;
                let v = self.expr(UMINUS_BP)?;
                Value {
                    ival: v.ival.wrapping_neg(),
                    dval: -v.dval,
                    ..v
                }
            }
            Some(t) => return Err(format!("unexpected {t:?}")),
            None => return Err("the expression ends early".into()),
        };
        loop {
            match self.peek() {
                Some(Tok::Suffix(s)) if SUFFIX_BP >= min => {
                    self.i += 1;
                    let both_int = !lhs.has_dval && !s.has_dval;
                    let ival = if both_int {
                        lhs.ival.wrapping_mul(s.ival)
                    } else {
                        ((lhs.dval as i64) as f64 * s.dval) as i64
                    };
                    let dval = if both_int {
                        (lhs.ival.wrapping_mul(s.ival)) as f64
                    } else {
                        lhs.dval * s.dval
                    };
                    lhs = Value {
                        ival,
                        dval,
                        has_dval: lhs.has_dval,
                        units: true,
                    };
                }
                Some(Tok::Op(op)) => {
                    let Some((l, r)) = op_bp(op) else { break };
                    if l < min {
                        break;
                    }
                    self.i += 1;
                    let rhs = self.expr(r)?;
                    lhs = apply(op, lhs, rhs)?;
                }
                _ => break,
            }
        }
        Ok(lhs)
    }
}

fn apply(op: char, a: Value, b: Value) -> Result<Value, String> {
    let ints = !a.has_dval && !b.has_dval;
    let units = a.units || b.units;
    let keep = |ival: i64, dval: f64| Value {
        ival,
        dval,
        has_dval: a.has_dval,
        units,
    };
    Ok(match op {
        '+' | '-' | '*' => {
            let (i, d) = match op {
                '+' => (a.ival.wrapping_add(b.ival), a.dval + b.dval),
                '-' => (a.ival.wrapping_sub(b.ival), a.dval - b.dval),
                _ => (a.ival.wrapping_mul(b.ival), a.dval * b.dval),
            };
            keep(if ints { i } else { d as i64 }, d)
        }
        '/' => {
            if b.ival == 0 && ints || b.dval.abs() < 1e-20 {
                return Err("division by zero (fio would answer the dividend)".into());
            }
            let d = a.dval / b.dval;
            keep(if ints { a.ival / b.ival } else { d as i64 }, d)
        }
        '%' => {
            if !ints {
                return Err("`%` of a decimal value (fio ignores it)".into());
            }
            if b.ival == 0 {
                return Err("modulo by zero (fio would answer the dividend)".into());
            }
            let i = a.ival % b.ival;
            keep(i, i as f64)
        }
        _ => {
            let d = a.dval.powf(b.dval);
            if ints {
                let i = if b.ival == 0 {
                    1
                } else if b.ival > 0 {
                    (0..b.ival).fold(1i64, |acc, _| acc.wrapping_mul(a.ival))
                } else {
                    (a.ival as f64).powf(b.ival as f64) as i64
                };
                keep(i, d)
            } else {
                keep(d as i64, d)
            }
        }
    })
}

/// Evaluate `s` (starting with `(`) as fio's parser does; `is_time` makes
/// `m` minutes.
pub fn eval(s: &str, is_time: bool) -> Result<Value, String> {
    let t = lex(s, is_time)?;
    let mut p = P { t, i: 0 };
    let v = p.expr(0)?;
    if p.i != p.t.len() {
        return Err(format!("unexpected {:?} after the expression", p.t[p.i]));
    }
    Ok(v)
}

/// fio's cast of a unit-less result to `int` after scaling by the option's
/// implied unit: an error where fio's value would wrap.
pub fn implied(v: &Value, unit: f64) -> Result<i64, String> {
    if v.units {
        return Ok(v.ival);
    }
    let x = v.ival as f64 * unit;
    if x > f64::from(i32::MAX) || x < f64::from(i32::MIN) {
        return Err(format!(
            "{} without a unit is beyond the 32 bits fio keeps for a unit-less expression; add a unit",
            v.ival
        ));
    }
    Ok(x as i32 as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(s: &str) -> i64 {
        eval(s, false).unwrap().ival
    }

    #[test]
    fn precedence_as_fios_grammar_declares_it() {
        assert_eq!(i("(8*1024)"), 8192);
        assert_eq!(i("(1+2k)"), 1 + 2048, "a unit binds tighter than +");
        assert_eq!(i("(2*4k)"), 8192, "and looser than *");
        assert_eq!(i("(2^5%3)"), 4, "% binds tighter than ^");
        assert_eq!(i("(2^3^2)"), 512, "^ is right-associative");
        assert_eq!(i("(-2^2)"), 4, "unary minus binds tightest");
        assert_eq!(i("(10-4-3)"), 3);
        assert_eq!(i("(1+1)k"), 2048);
        assert_eq!(i("(1.5*1024)"), 1536);
        assert_eq!(i("(4kib)"), 4000, "units ignore kb_base");
        assert_eq!(i("(2m)"), 2 << 20);
        assert_eq!(
            eval("(2m)", true).unwrap().ival,
            120_000_000,
            "m is minutes in a time"
        );
        assert_eq!(eval("(5ms)", true).unwrap().ival, 5000);
        assert_eq!(i("(0x10 + 1) # note"), 17);
    }

    #[test]
    fn what_fio_would_get_wrong_is_an_error() {
        assert!(eval("(4/0)", false).is_err());
        assert!(eval("(5%0)", false).is_err());
        assert!(eval("(1.5%2)", false).is_err());
        assert!(eval("(3000000000)", false).is_err());
        assert!(implied(&eval("(65536*65536)", false).unwrap(), 1.0).is_err());
        assert_eq!(implied(&eval("(4*1g)", false).unwrap(), 1.0), Ok(4 << 30));
        assert_eq!(implied(&eval("(90)", true).unwrap(), 1e6), Ok(90_000_000));
        assert!(eval("(1+", false).is_err());
        assert!(eval("(4x)", false).is_err());
    }
}
