//! Where throughput stops growing as a sweep adds clients (or raises the
//! rate): the rule behind the sweep's throughput sentences, on plain data.
//!
//! A step from one value to the next counts as growth when the next value's
//! mean tps is more than [`GROWTH_MARGIN`] above this one's and, with
//! repeats, beyond the spread of the runs: the next value's lowest run
//! above this value's highest. Throughput stops growing at the first value
//! whose next step does not count; with every step counting it is still
//! growing at the last value. The margin keeps a few percent of noise from
//! reading as growth; the spread keeps one lucky repeat from doing so.

use super::spread::Spread;

/// How much more throughput the next value must give to count as growth: 10%.
pub const GROWTH_MARGIN: f64 = 0.10;

/// How the step after the value where growth stops went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// The next value gave less throughput.
    Fell,
    /// The next value gave as much or more, but not more than the margin.
    Flat,
    /// The next value gave more than the margin, but its runs overlap this
    /// value's (its lowest is not above this one's highest).
    WithinSpread,
}

/// Where a series of values' throughput stops growing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// Every step counted as growth (or there was one value only).
    StillGrowing,
    /// The step from the value at `at` to the next did not count, as `step` says.
    StopsAt { at: usize, step: Step },
}

/// How the step from `from` to `to` (each a value's mean tps over its
/// repeats) counts: `None` when it is growth.
pub fn step(from: &Spread, to: &Spread) -> Option<Step> {
    if to.median < from.median {
        Some(Step::Fell)
    } else if to.median <= from.median * (1.0 + GROWTH_MARGIN) {
        Some(Step::Flat)
    } else if to.count > 1 && from.count > 1 && to.min <= from.max {
        Some(Step::WithinSpread)
    } else {
        None
    }
}

/// Where the throughput of `values` (each value's mean tps over its repeats,
/// in the order of the swept setting) stops growing.
pub fn growth(values: &[Spread]) -> Growth {
    values
        .windows(2)
        .enumerate()
        .find_map(|(at, pair)| step(&pair[0], &pair[1]).map(|step| Growth::StopsAt { at, step }))
        .unwrap_or(Growth::StillGrowing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn once(tps: &[f64]) -> Vec<Spread> {
        tps.iter().map(|&tps| Spread::single(tps)).collect()
    }

    fn repeated(runs: &[&[f64]]) -> Vec<Spread> {
        runs.iter().map(|runs| Spread::of(runs).unwrap()).collect()
    }

    #[test]
    fn growing_at_every_step_is_still_growing() {
        assert_eq!(
            growth(&once(&[506.0, 600.0, 866.0, 1216.0, 1599.0])),
            Growth::StillGrowing
        );
        assert_eq!(growth(&once(&[468.0])), Growth::StillGrowing);
        assert_eq!(growth(&[]), Growth::StillGrowing);
        // From nothing to something is growth.
        assert_eq!(growth(&once(&[0.0, 5.0])), Growth::StillGrowing);
    }

    #[test]
    fn a_step_within_the_margin_is_flat() {
        assert_eq!(
            growth(&once(&[100.0, 200.0, 210.0, 400.0])),
            Growth::StopsAt {
                at: 1,
                step: Step::Flat
            }
        );
        // Exactly 10% more is not more than the margin.
        assert_eq!(
            growth(&once(&[100.0, 110.0])),
            Growth::StopsAt {
                at: 0,
                step: Step::Flat
            }
        );
        assert_eq!(
            growth(&once(&[0.0, 0.0])),
            Growth::StopsAt {
                at: 0,
                step: Step::Flat
            }
        );
    }

    #[test]
    fn a_step_down_falls() {
        assert_eq!(
            growth(&once(&[468.0, 366.0, 517.0, 279.0, 361.0])),
            Growth::StopsAt {
                at: 0,
                step: Step::Fell
            }
        );
    }

    #[test]
    fn with_repeats_growth_counts_only_beyond_the_runs_spread() {
        // 1 -> 2: +50% and 2's lowest (140) above 1's highest (110): growth.
        // 2 -> 4: +20% on the medians, but 4's lowest (160) is not above 2's highest (200).
        let runs = repeated(&[
            &[90.0, 100.0, 110.0],
            &[140.0, 150.0, 200.0],
            &[160.0, 180.0, 190.0],
        ]);
        assert_eq!(
            growth(&runs),
            Growth::StopsAt {
                at: 1,
                step: Step::WithinSpread
            }
        );
        let apart = repeated(&[&[90.0, 100.0, 110.0], &[140.0, 150.0, 160.0]]);
        assert_eq!(growth(&apart), Growth::StillGrowing);
    }
}
