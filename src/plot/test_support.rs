//! Helpers the charts' tests share: decoding the PNG files they draw, where to draw
//! them, and reports with any number of strategies.

use std::path::Path;

use crate::metrics::RunReport;
use crate::testing::reference_report;

/// Width, height and the number of distinct colours of a PNG file.
pub(super) fn decode_png(path: &Path) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let bytes_per_pixel = info.line_size / info.width as usize;
    let mut colours = std::collections::HashSet::new();
    for pixel in buffer[..info.buffer_size()].chunks(bytes_per_pixel) {
        colours.insert(pixel.to_vec());
    }
    (info.width, info.height, colours.len())
}

/// Where the charts go: /tmp/plot-check/ when STALLBENCH_PLOT_CHECK is set, to look at
/// them; a temporary folder otherwise.
pub(super) fn output_dir() -> (Option<tempfile::TempDir>, std::path::PathBuf) {
    if std::env::var_os("STALLBENCH_PLOT_CHECK").is_some() {
        let dir = std::path::PathBuf::from("/tmp/plot-check");
        std::fs::create_dir_all(&dir).unwrap();
        (None, dir)
    } else {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        (Some(temp), dir)
    }
}

/// Width, height and the RGB colour of every pixel (row by row) of a PNG file.
pub(super) fn decode_rgb(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let bytes_per_pixel = info.line_size / info.width as usize;
    let pixels = buffer[..info.buffer_size()]
        .chunks(bytes_per_pixel)
        .map(|pixel| [pixel[0], pixel[1], pixel[2]])
        .collect();
    (info.width, info.height, pixels)
}

/// The sample report with one strategy per name, taking turns at copying the
/// sample's `naive` and `retry`.
pub(super) fn report_with_strategies(names: &[&str]) -> RunReport {
    let sample = reference_report();
    let mut report = RunReport {
        workload: sample.workload.clone(),
        strategies: Vec::new(),
        interruption: None,
        load_on: crate::choices::LoadOn::Primary,
        load_loop: crate::choices::LoadLoop::Closed,
    };
    for (index, name) in names.iter().enumerate() {
        let mut strategy = sample.strategies[index % 2].clone();
        strategy.strategy = name.to_string();
        strategy.summary.strategy = name.to_string();
        report.strategies.push(strategy);
    }
    report
}

/// The sample report as `run --load-only` would have it: one strategy, no
/// blocker, no DDL, a transaction in every second.
pub(super) fn load_only_report() -> RunReport {
    let mut report = reference_report();
    report.strategies.truncate(1);
    let load = &mut report.strategies[0];
    load.strategy = "load".to_string();
    load.blocker = None;
    load.attempts.clear();
    for row in &mut load.seconds {
        row.blocker_active = false;
        row.tps = row.tps.max(1);
        row.lat_p99_ms = row.lat_p99_ms.max(0.5);
    }
    report
}

/// The strategies of `compare --strategies all` (every preset), in run order.
pub(super) const ALL_STRATEGIES: &[&str] = &crate::strategy::PRESET_NAMES;
