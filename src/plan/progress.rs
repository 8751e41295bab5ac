//! Where a plan stands and what is left, told before each run: on a terminal
//! as a bar under the per-second progress lines, on a pipe as one line per
//! run (`== run 8/12: sweep 2/3 lock_timeout=1s, retry, repeat 2/2
//! (lock-timeout-retry: ...), about 1 min 40 s left ==`). A plan of one run
//! per strategy (no repeats, no sweep) keeps the short line `== retry (...) ==`.
//!
//! What is left is the runs left times the mean wall time of the runs so far
//! (before the first one ends: the load's duration plus [`SETUP_S`]).

use std::io::IsTerminal;
use std::time::Instant;

use super::Plan;

/// What a run costs beyond its load, before one has been timed: reset,
/// connecting, winding down, writing the files.
const SETUP_S: f64 = 2.0;

/// The progress of one plan's runs.
pub struct PlanProgress {
    /// How many runs the plan has.
    total: usize,
    /// When the first run started.
    started: Instant,
    /// How many runs have ended.
    done: usize,
    /// The estimate of one run before any has ended, in seconds.
    first_estimate_s: f64,
    /// Whether the plan repeats or sweeps (the long line and the bar), or not.
    long: bool,
    /// The bar on a terminal; `None` on a pipe or when quiet.
    bar: Option<indicatif::ProgressBar>,
    /// Nothing is told.
    quiet: bool,
}

impl PlanProgress {
    /// The progress of `plan`, shown on stderr unless `quiet`.
    pub fn new(plan: &Plan, quiet: bool) -> PlanProgress {
        let long = plan.runs.len() > plan.base.strategies.len();
        let bar = (long && !quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(plan.runs.len() as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("[{bar:30}] {pos}/{len} {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            crate::output::set_progress_bar(Some(bar.clone()));
            bar
        });
        PlanProgress {
            total: plan.runs.len(),
            started: Instant::now(),
            done: 0,
            first_estimate_s: plan.base.load.duration.as_secs_f64() + SETUP_S,
            long,
            bar,
            quiet,
        }
    }

    /// Tells that run `index` of `plan` starts.
    pub fn start_run(&mut self, plan: &Plan, index: usize) {
        self.done = index;
        if self.quiet {
            return;
        }
        let run = &plan.runs[index];
        let strategy = plan.strategy_of(run);
        if !self.long {
            stderrln!("== {} ({}) ==", strategy.name, strategy.describe());
            return;
        }
        let left = format_time_left(self.seconds_left());
        let place = plan.describe(run);
        match &self.bar {
            Some(bar) => {
                bar.set_position(index as u64);
                bar.set_message(format!("{place}, {left}"));
                stderrln!("== {} ({}) ==", strategy.name, strategy.describe());
            }
            None => stderrln!(
                "== run {}/{}: {place} ({}), {left} ==",
                index + 1,
                self.total,
                strategy.describe()
            ),
        }
    }

    /// The seconds the runs not yet ended will take, by the mean of those that did.
    fn seconds_left(&self) -> f64 {
        let per_run_s = if self.done == 0 {
            self.first_estimate_s
        } else {
            self.started.elapsed().as_secs_f64() / self.done as f64
        };
        per_run_s * (self.total - self.done) as f64
    }
}

impl Drop for PlanProgress {
    /// Removes the bar, so later lines are plain again.
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            crate::output::set_progress_bar(None);
            bar.finish_and_clear();
        }
    }
}

/// `about 40 s left`, `about 2 min 10 s left` (seconds rounded to 10 from a
/// minute on), `about 1 h 5 min left`.
pub fn format_time_left(seconds: f64) -> String {
    let seconds = seconds.max(0.0).round() as u64;
    let text = if seconds < 60 {
        format!("{seconds} s")
    } else if seconds < 3600 {
        let rounded = (seconds + 5) / 10 * 10;
        match rounded % 60 {
            0 => format!("{} min", rounded / 60),
            rest => format!("{} min {rest} s", rounded / 60),
        }
    } else {
        let minutes = (seconds + 30) / 60;
        format!("{} h {} min", minutes / 60, minutes % 60)
    };
    format!("about {text} left")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_reads_in_seconds_then_minutes_then_hours() {
        assert_eq!(format_time_left(0.2), "about 0 s left");
        assert_eq!(format_time_left(41.4), "about 41 s left");
        assert_eq!(format_time_left(130.0), "about 2 min 10 s left");
        assert_eq!(format_time_left(124.0), "about 2 min left");
        assert_eq!(format_time_left(3_900.0), "about 1 h 5 min left");
    }

    #[test]
    fn what_is_left_is_the_mean_run_times_the_runs_left() {
        let plan = Plan::single(crate::cli::compare_config(&[
            "stallbench",
            "compare",
            "--repeat",
            "2",
        ]));
        let mut progress = PlanProgress::new(&plan, true);
        // Before a run ended: 24 s of load and 2 s around it per run.
        assert_eq!(progress.seconds_left(), 4.0 * 26.0);
        progress.start_run(&plan, 3);
        assert!(progress.seconds_left() < 1.0, "{}", progress.seconds_left());
    }
}
