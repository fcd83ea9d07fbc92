//! A comparison of nowait's fio engine with fio's own: the runs of each
//! side in the order they ran (`--abba`: fio, nowait, nowait, fio per
//! set), each side's median and spread, and the ratio of the medians,
//! which is the headline ratio.

/// The runs of a comparison, in the order they ran, with each side's
/// median and spread (`nowait`: fio with `ioengine=nowait`; `fio`: fio
/// with its own engine).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Compare {
    /// `abba` (fio, nowait, nowait, fio per set) or `once` (fio, nowait).
    pub order: String,
    /// Each run: `nowait` or `fio`, and its IOPS (`null`: the run failed).
    pub runs: Vec<(String, Option<f64>)>,
    /// Indices into `runs` of the runs SIGINT cut short, left out of the
    /// medians.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interrupted: Vec<usize>,
    /// nowait's IOPS over its runs that were not interrupted (`null`: none).
    pub nowait: Option<Spread>,
    /// fio's IOPS over its runs that succeeded.
    pub fio: Option<Spread>,
    /// nowait's median / fio's median.
    pub ratio_of_medians: Option<f64>,
}

/// Median, smallest and largest of a set of runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    /// The median (the mean of the middle two of an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// Of `v`; `None` if empty.
    pub fn of(mut v: Vec<f64>) -> Option<Spread> {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => return None,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

impl Compare {
    /// From the runs in order, each `("nowait" | "fio", IOPS)`, and the
    /// indices of those SIGINT cut short (left out of the medians).
    pub fn new(order: &str, runs: &[(&str, Option<f64>)], interrupted: &[usize]) -> Compare {
        let side = |t: &str| {
            runs.iter()
                .enumerate()
                .filter(|(i, r)| r.0 == t && !interrupted.contains(i))
                .filter_map(|(_, r)| r.1)
                .collect()
        };
        let nowait = Spread::of(side("nowait"));
        let fio = Spread::of(side("fio"));
        Compare {
            order: order.into(),
            runs: runs.iter().map(|(t, i)| (t.to_string(), *i)).collect(),
            interrupted: interrupted.to_vec(),
            nowait,
            fio,
            ratio_of_medians: match (nowait, fio) {
                (Some(n), Some(f)) if f.median > 0.0 => Some(n.median / f.median),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abba_runs_give_medians_spread_and_ratio() {
        let runs = [
            ("fio", Some(60.0)),
            ("nowait", Some(50.0)),
            ("nowait", Some(54.0)),
            ("fio", None),
            ("fio", Some(62.0)),
            ("nowait", Some(52.0)),
        ];
        let c = Compare::new("abba", &runs, &[]);
        assert_eq!(
            c.nowait,
            Some(Spread {
                median: 52.0,
                min: 50.0,
                max: 54.0
            })
        );
        assert_eq!(c.fio.unwrap().median, 61.0);
        assert!((c.ratio_of_medians.unwrap() - 52.0 / 61.0).abs() < 1e-12);
        let back: Compare = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    /// Runs SIGINT cut short are left out of the medians and the ratio.
    #[test]
    fn interrupted_runs_are_left_out_of_medians_and_ratios() {
        let runs = [
            ("fio", Some(20_000.0)),
            ("nowait", Some(10_000.0)),
            ("nowait", Some(300.0)),
        ];
        let c = Compare::new("abba", &runs, &[2]);
        assert_eq!(c.nowait.unwrap().median, 10_000.0);
        assert_eq!(c.ratio_of_medians, Some(0.5));
        // Every nowait run cut short: no median, no ratio.
        let c = Compare::new("abba", &runs[..2], &[1]);
        assert_eq!((c.nowait, c.ratio_of_medians), (None, None));
    }
}
