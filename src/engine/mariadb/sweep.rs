//! `--sweep` on MariaDB: the settings a MariaDB workload can be swept over
//! (`clients`, `blocker.hold`), each value applied to the workload, and the
//! sweep's own files (`sweep.csv`, `summary.md`, `sweep.png`, its page),
//! written by the same exporters as a PostgreSQL sweep's.

use std::path::Path;

use super::workload::MariadbWorkload;
use crate::cli::SweepArg;
use crate::config::{Sweep, SweepSetting};
use crate::error::Error;
use crate::metrics::RunReport;
use crate::{export, plot, results};

/// The sweep `flag` asks for, every value checked against `workload`;
/// `None` without one. A setting a MariaDB workload has no such thing for
/// is bad input naming those it has.
pub fn parse(flag: Option<&SweepArg>, workload: &MariadbWorkload) -> Result<Option<Sweep>, Error> {
    let Some(flag) = flag else {
        return Ok(None);
    };
    let setting = match SweepSetting::named(&flag.name) {
        Some(setting @ (SweepSetting::Clients | SweepSetting::BlockerHold)) => setting,
        _ => {
            return Err(Error::bad_input(format!(
                "--sweep {}: a MariaDB workload sweeps clients or blocker.hold (the report's \
                 hold); use one of those",
                flag.written
            )));
        }
    };
    let sweep = Sweep {
        setting,
        values: flag.values.clone(),
    };
    for value in &sweep.values {
        at_value(workload, &sweep, value)?;
    }
    Ok(Some(sweep))
}

/// `workload` with the swept setting at `value`: its clients, or how long
/// the report holds its transaction open.
pub fn at_value(
    workload: &MariadbWorkload,
    sweep: &Sweep,
    value: &str,
) -> Result<MariadbWorkload, Error> {
    let mut at = workload.clone();
    let bad = |expected: &str| {
        Error::bad_input(format!(
            "--sweep {}={value}: {expected}; fix the value",
            sweep.name()
        ))
    };
    match sweep.setting {
        SweepSetting::Clients => {
            at.outage.clients = value
                .parse::<usize>()
                .ok()
                .filter(|clients| *clients > 0)
                .ok_or_else(|| bad("clients must be a whole number of 1 or more"))?;
        }
        SweepSetting::BlockerHold => {
            at.outage.report_hold = humantime::parse_duration(value)
                .map_err(|_| bad("the hold must be a duration such as 5s or 500ms"))?;
        }
        _ => unreachable!("parse admits only clients and blocker.hold"),
    }
    Ok(at)
}

/// The sweep's files in `dir`, from one report per value of `sweep`:
/// `sweep.csv`, `summary.md`, `sweep.png` and its page; the console's text.
pub fn write_files(
    dir: &Path,
    sweep: &Sweep,
    workload: &str,
    reports: &[RunReport],
) -> Result<String, Error> {
    let records = export::sweep::records(sweep, &sweep.values, reports);
    let files = export::sweep::render(sweep, workload, &records)?;
    results::write_files(dir, &files)?;
    plot::draw_sweep(&records, sweep, &dir.join(results::SWEEP_PNG))?;
    export::html::pages::write_sweep_page(dir, sweep, workload, &records)?;
    Ok(export::console::sweep_text(sweep, &records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mariadb::workload::bundled;
    use std::time::Duration;

    fn flag(name: &str, values: &[&str]) -> SweepArg {
        SweepArg {
            name: name.to_string(),
            values: values.iter().map(|v| v.to_string()).collect(),
            written: format!("{name}={}", values.join(",")),
        }
    }

    #[test]
    fn clients_and_the_reports_hold_are_swept_and_other_settings_refused() {
        let workload = bundled("mariadb-add-column").unwrap();
        let sweep = parse(Some(&flag("clients", &["1", "8"])), &workload)
            .unwrap()
            .unwrap();
        assert_eq!(at_value(&workload, &sweep, "8").unwrap().outage.clients, 8);
        let sweep = parse(Some(&flag("blocker.hold", &["2s", "500ms"])), &workload)
            .unwrap()
            .unwrap();
        let at = at_value(&workload, &sweep, "500ms").unwrap();
        assert_eq!(at.outage.report_hold, Duration::from_millis(500));
        assert!(parse(None, &workload).unwrap().is_none());

        let refused = parse(Some(&flag("rate", &["10"])), &workload).unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("--sweep rate=10: a MariaDB workload sweeps clients or blocker.hold"),
            "{refused}"
        );
        let bad = parse(Some(&flag("clients", &["2", "zero"])), &workload).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "--sweep clients=zero: clients must be a whole number of 1 or more; fix the value"
        );
    }
}
