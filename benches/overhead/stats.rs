//! Summary statistics of the measured figures. NaN marks a figure that was not measured, so
//! median, min and max skip it; percentiles are taken of samples already sorted.

/// The median of the finite values; NaN if there are none.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

pub(crate) fn min(values: &[f64]) -> f64 {
    values
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::min)
}

pub(crate) fn max(values: &[f64]) -> f64 {
    values
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max)
}

/// The value at fraction `p` (0..=1) of `sorted`, nearest rank; NaN if empty.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `a[i] / b[i]` for each repetition `i`: ratios are taken within one repetition, so that a
/// slow repetition slows both sides.
pub(crate) fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}
