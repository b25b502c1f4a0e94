//! The per-system statistics table: one line per system in scheduled order.
//!
//! Invariant: the table shows exactly the statistics it is given, as the schedule recorded them
//! from the runs that happened; nothing is estimated.

use std::fmt::Write as _;
use std::time::Duration;

use strata_scheduler::{SystemId, SystemStats};

use crate::world::StoppedSystem;

/// A duration as a short human figure (ns, µs, ms or s).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.2} s", ns as f64 / 1e9)
    }
}

/// The table of `stats`: system, runs, mean and longest duration, reads, writes, visited rows
/// and errors; then a line for each system `stopped` names.
pub(crate) fn table(
    stats: &[(SystemId, String, SystemStats)],
    stopped: &[StoppedSystem],
) -> String {
    let header = [
        "system", "runs", "mean", "max", "reads", "writes", "rows", "errors",
    ];
    let rows: Vec<[String; 8]> = stats
        .iter()
        .map(|(_, name, s)| {
            [
                name.clone(),
                s.runs.to_string(),
                format_duration(s.mean_duration()),
                format_duration(s.max_duration),
                s.component_reads.to_string(),
                s.field_writes.to_string(),
                s.visited_rows.to_string(),
                s.errors.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String; 8], out: &mut String| {
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            let pad = width - cell.chars().count();
            if i == 0 {
                let _ = write!(out, "{cell}{}", " ".repeat(pad));
            } else {
                let _ = write!(out, "  {}{cell}", " ".repeat(pad));
            }
        }
        out.push('\n');
    };
    line(&header.map(String::from), &mut out);
    for row in &rows {
        line(row, &mut out);
    }
    for stop in stopped {
        let part = stop
            .part
            .as_ref()
            .map(|p| format!(" (root {p})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "stopped: {}{part} at frame {}: {}",
            stop.system, stop.frame, stop.reason
        );
    }
    out
}
