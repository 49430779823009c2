//! Medians and friends over samples in microseconds.

use serde::{Deserialize, Serialize};

/// What a list of samples comes to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub runs: usize,
    pub median_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub p90_us: f64,
    pub max_us: f64,
}

/// Summarises `samples` (any order). An empty list gives zeros.
pub fn summarize(samples: &[f64]) -> Summary {
    let mut s: Vec<f64> = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return Summary {
            runs: 0,
            median_us: 0.0,
            mean_us: 0.0,
            min_us: 0.0,
            p90_us: 0.0,
            max_us: 0.0,
        };
    }
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Summary {
        runs: n,
        median_us: median,
        mean_us: s.iter().sum::<f64>() / n as f64,
        min_us: s[0],
        p90_us: s[((n * 9) / 10).min(n - 1)],
        max_us: s[n - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(summarize(&[3.0, 1.0, 2.0]).median_us, 2.0);
        assert_eq!(summarize(&[4.0, 1.0, 2.0, 3.0]).median_us, 2.5);
        let s = summarize(&[5.0, 1.0]);
        assert_eq!((s.min_us, s.max_us, s.mean_us), (1.0, 5.0, 3.0));
        assert_eq!(summarize(&[]).runs, 0);
    }
}
