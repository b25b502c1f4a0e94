//! The results file and its renderings: [`Report`], [`BenchRecord`], [`Unsupported`],
//! [`Machine`], [`render_markdown`], and the charts of [`svg`]: [`render_svg`] and
//! [`render_ratio_svg`].
//!
//! Invariant: the JSON shape is the contract `cargo xtask bench` and later comparisons read. A
//! record always names its `library` and `mechanism`, so results of several libraries fit in one
//! file, and a record is identified by library, workload and size together; fields may be added
//! but never renamed. Rendering never reorders records of one library, and work a library cannot
//! do is shown as unsupported, never as missing or as a number.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::harness::{STRATA, WorkloadKey};

pub mod svg;

pub use svg::{render_ratio_svg, render_svg};

/// Where the ratio chart ([`render_ratio_svg`]) goes when the time chart goes to `chart`:
/// `ratios.svg` beside it (`target/bench/ratios.svg` beside `target/bench/results.svg`), or
/// `<stem>-ratios.svg` should the time chart itself be called `ratios.svg`.
pub fn ratio_chart_path(chart: &Path) -> PathBuf {
    let beside = chart.with_file_name("ratios.svg");
    if beside != chart {
        return beside;
    }
    let stem = chart
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned());
    chart.with_file_name(format!("{}-ratios.svg", stem.unwrap_or_default()))
}

/// One results file: where and when it was measured, and one record per workload run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The machine the workloads ran on.
    pub machine: Machine,
    /// When the run started, as RFC 3339 UTC (`2026-03-21T10:00:00Z`).
    pub date: String,
    /// Whether `--quick` sampling was used, which makes the numbers rougher.
    pub quick: bool,
    /// Whether the harness was built with optimisations; numbers from a debug build mislead.
    pub optimized: bool,
    /// One record per workload, in run order.
    pub results: Vec<BenchRecord>,
    /// Work a library was asked to compare on but has no way to do, with the reason; these
    /// workloads have no record. Absent in files written before the field existed.
    #[serde(default)]
    pub unsupported: Vec<Unsupported>,
}

/// A workload a library cannot do through its public API, reported instead of a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unsupported {
    /// The library, such as `bevy_ecs`.
    pub library: String,
    /// The workload's name, at every size it is registered at (such as `world_clone`).
    pub workload: String,
    /// Why the library cannot do it, in a sentence.
    pub reason: String,
}

/// The measurement of one workload of one library at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// The library measured: `strata`, or a peer crate's name.
    pub library: String,
    /// The workload's name, such as `arena_create`.
    pub workload: String,
    /// The number of items the workload works on.
    pub size: u64,
    /// The number of items one run processes, the divisor of `ns_per_item`.
    pub items: u64,
    /// The median time of one run, in nanoseconds.
    pub median_ns: f64,
    /// The fastest run, in nanoseconds.
    pub min_ns: f64,
    /// `median_ns / items`.
    pub ns_per_item: f64,
    /// The resident high-water mark at the end of the workload's warm-up run, or `null` where
    /// unknown. By default each workload runs in a fresh process, so this is that process's
    /// peak: a few MiB of baseline plus the workload's own setup, one run and its output. With
    /// `--in-process` it is the mark since the workload started, which also counts memory the
    /// allocator kept from earlier workloads.
    pub peak_rss_bytes: Option<u64>,
    /// How the library does the work, in a few words.
    pub mechanism: String,
    /// How many samples the median and minimum come from.
    pub samples: usize,
    /// The allocation calls (`alloc`, `alloc_zeroed`, `realloc`) of one run, counted in an
    /// extra run after the samples over exactly the timed region; absent where not counted
    /// (the process was not running on `strata_bench::alloc::CountingAllocator`, as in files
    /// written before the field existed). Process-wide: a parallel routine's pool threads count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_calls: Option<u64>,
    /// The bytes those calls asked for (the new size for `realloc`); absent where not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_bytes: Option<u64>,
    /// The page faults (minor and major) the process took over the same counted run: memory
    /// touched for the first time, which a fresh process pays in full. Absent where not
    /// counted or not reported by the platform. Process-wide, like the allocations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_faults: Option<u64>,
}

impl BenchRecord {
    /// The key of the workload this record measured: library, workload name and size.
    pub fn key(&self) -> WorkloadKey {
        WorkloadKey {
            library: self.library.clone(),
            name: self.workload.clone(),
            size: self.size,
        }
    }
}

/// The machine a report was measured on, as far as it is cheap to find out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Available parallelism (logical cores this process may use).
    pub cores: usize,
    /// The operating system, as Rust names it (`linux`, `macos`, `windows`).
    pub os: String,
    /// The CPU architecture, as Rust names it (`x86_64`, `aarch64`).
    pub arch: String,
    /// The CPU model, where the platform reports it.
    pub cpu: Option<String>,
    /// The compiler that built the harness (`rustc --version`), where it was known.
    pub rustc: Option<String>,
}

impl Machine {
    /// Describes the machine this process runs on.
    pub fn detect() -> Machine {
        let rustc = env!("STRATA_BENCH_RUSTC");
        Machine {
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            cpu: cpu_model(),
            rustc: (!rustc.is_empty()).then(|| rustc.to_owned()),
        }
    }
}

/// The CPU model from `/proc/cpuinfo`, where there is one.
fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// Formats a point in time as RFC 3339 UTC with whole seconds, such as `2026-03-21T10:00:00Z`.
///
/// Times before 1970 are shown as the epoch; a benchmark is never run then.
pub fn rfc3339_utc(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let secs_of_day = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60
    )
}

/// Converts days since 1970-01-01 into a proleptic Gregorian (year, month, day).
///
/// This is Howard Hinnant's `civil_from_days`, restricted to dates from 1970 on.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Formats nanoseconds with three significant figures in ns, µs, ms or s.
pub fn format_duration_ns(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", three_figures(value))
}

/// Formats a byte count in B, KiB, MiB or GiB, or `n/a` when it is unknown.
pub fn format_bytes(bytes: Option<u64>) -> String {
    const KIB: f64 = 1024.0;
    let Some(bytes) = bytes else {
        return "n/a".to_owned();
    };
    let bytes_f = bytes as f64;
    if bytes_f < KIB {
        format!("{bytes} B")
    } else if bytes_f < KIB * KIB {
        format!("{} KiB", three_figures(bytes_f / KIB))
    } else if bytes_f < KIB * KIB * KIB {
        format!("{} MiB", three_figures(bytes_f / (KIB * KIB)))
    } else {
        format!("{} GiB", three_figures(bytes_f / (KIB * KIB * KIB)))
    }
}

/// Formats the allocations of one run as `calls · bytes` (`3 · 1.50 KiB`), or `n/a` when they
/// were not counted.
pub fn format_allocations(calls: Option<u64>, bytes: Option<u64>) -> String {
    match calls {
        Some(calls) => format!("{calls} · {}", format_bytes(bytes)),
        None => "n/a".to_owned(),
    }
}

/// Formats the page faults of one run, or `n/a` when they were not counted.
pub fn format_faults(faults: Option<u64>) -> String {
    faults.map_or_else(|| "n/a".to_owned(), |n| n.to_string())
}

/// Formats a workload size compactly: `1M`, `10k`, `200`.
pub fn format_size(size: u64) -> String {
    if size != 0 && size.is_multiple_of(1_000_000) {
        format!("{}M", size / 1_000_000)
    } else if size != 0 && size.is_multiple_of(1_000) {
        format!("{}k", size / 1_000)
    } else {
        size.to_string()
    }
}

fn three_figures(value: f64) -> String {
    if value >= 99.95 {
        format!("{value:.0}")
    } else if value >= 9.995 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// Renders a report as Markdown: a heading, a line about the machine, then the tables.
///
/// With results of one library and nothing unsupported there is one table with a row per record.
/// With several libraries there is first a comparison, one row per workload and size with a cell
/// per library (Strata first, the others in order of appearance) holding the median time of one
/// run and the time per item, and the ratio of Strata's median to the fastest peer's (records
/// of one workload and size do the same work; a row whose libraries count items differently is
/// marked, since its times per item do not compare); then the work some library cannot do,
/// with reasons; then the full table of records.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::from("# Strata benchmark results\n\n");
    let machine = &report.machine;
    let mut about = vec![
        report.date.clone(),
        format!("{} {}", machine.os, machine.arch),
        format!("{} cores", machine.cores),
    ];
    about.extend(machine.cpu.clone());
    about.extend(machine.rustc.clone());
    if report.quick {
        about.push("quick run (rough numbers)".to_owned());
    }
    if !report.optimized {
        about.push("**unoptimised build: do not trust these numbers**".to_owned());
    }
    out.push_str(&escape_cell(&about.join(" · ")));
    out.push_str("\n\n");
    if report.results.is_empty() && report.unsupported.is_empty() {
        out.push_str("No workloads were run.\n");
        return out;
    }
    let libraries = libraries(report);
    if libraries.len() > 1 && !report.results.is_empty() {
        out.push_str("## Comparison\n\n");
        out.push_str(
            "Each cell is the median time of one run · the time per item (median ÷ items). \
             The last column divides Strata's median by the fastest peer's (the same work), so \
             below 1× Strata is faster; — means no record.\n\n",
        );
        out.push_str(&comparison_table(report, &libraries));
    }
    if !report.unsupported.is_empty() {
        out.push_str("\n## Not supported\n\n");
        out.push_str(
            "These libraries have no way to do this work through their public API, so the \
             workload is not registered for them and has no record.\n\n",
        );
        for u in &report.unsupported {
            let _ = writeln!(
                out,
                "- {} `{}`: {}",
                escape_cell(&u.library),
                escape_cell(&u.workload),
                escape_cell(&u.reason)
            );
        }
    }
    if libraries.len() > 1 || !report.unsupported.is_empty() {
        out.push_str("\n## All records\n\n");
    }
    if report.results.is_empty() {
        out.push_str("No workloads were run.\n");
    } else {
        out.push_str(&records_table(&report.results));
    }
    out
}

/// The libraries in `report`, records first, then unsupported entries: Strata first if
/// present, then the rest in order of first appearance.
fn libraries(report: &Report) -> Vec<&str> {
    let named = report
        .results
        .iter()
        .map(|r| r.library.as_str())
        .chain(report.unsupported.iter().map(|u| u.library.as_str()));
    let mut libraries: Vec<&str> = Vec::new();
    if named.clone().any(|library| library == STRATA) {
        libraries.push(STRATA);
    }
    for library in named {
        if !libraries.contains(&library) {
            libraries.push(library);
        }
    }
    libraries
}

fn records_table(results: &[BenchRecord]) -> String {
    let mut out = String::from(
        "| workload | size | library | median | min | ns/item | peak RSS | allocs/run | faults/run | mechanism |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape_cell(&r.workload),
            format_size(r.size),
            escape_cell(&r.library),
            format_duration_ns(r.median_ns),
            format_duration_ns(r.min_ns),
            format_duration_ns(r.ns_per_item),
            format_bytes(r.peak_rss_bytes),
            format_allocations(r.alloc_calls, r.alloc_bytes),
            format_faults(r.page_faults),
            escape_cell(&r.mechanism),
        );
    }
    out
}

/// What one library shows for one workload and size.
enum Cell<'a> {
    Measured(&'a BenchRecord),
    Unsupported,
    Missing,
}

/// The (workload, size) pairs of `results`, in order of first appearance.
fn workload_rows(results: &[BenchRecord]) -> Vec<(&str, u64)> {
    let mut rows: Vec<(&str, u64)> = Vec::new();
    for record in results {
        let key = (record.workload.as_str(), record.size);
        if !rows.contains(&key) {
            rows.push(key);
        }
    }
    rows
}

/// What `library` shows for `workload` at `size`: its record (the first, should a merged
/// file hold two), the mark of unsupported work, or nothing.
fn cell<'a>(report: &'a Report, library: &str, workload: &str, size: u64) -> Cell<'a> {
    let record = report
        .results
        .iter()
        .find(|r| r.library == library && r.workload == workload && r.size == size);
    match record {
        Some(record) => Cell::Measured(record),
        None if report
            .unsupported
            .iter()
            .any(|u| u.library == library && u.workload == workload) =>
        {
            Cell::Unsupported
        }
        None => Cell::Missing,
    }
}

/// The fastest peer (not Strata) by median for `workload` at `size`, if any was measured.
///
/// Records of one workload and size do the same work, so their medians compare whatever each
/// library counts as an item.
fn best_peer<'a>(report: &'a Report, workload: &str, size: u64) -> Option<&'a BenchRecord> {
    report
        .results
        .iter()
        .filter(|r| r.library != STRATA && r.workload == workload && r.size == size)
        .min_by(|a, b| a.median_ns.total_cmp(&b.median_ns))
}

/// Whether the records of `workload` at `size` divide by different item counts, which makes
/// their times per item incomparable (their medians still compare).
fn items_differ(report: &Report, workload: &str, size: u64) -> bool {
    let mut items = report
        .results
        .iter()
        .filter(|r| r.workload == workload && r.size == size)
        .map(|r| r.items);
    let first = items.next();
    items.any(|n| Some(n) != first)
}

/// Formats a ratio with two decimals (`0.50`, `3.00`), three significant figures from 10 on
/// (`12.3`, `250`) and in scientific notation below 0.01 (`2.5e-4`).
fn format_ratio(ratio: f64) -> String {
    if ratio >= 10.0 {
        three_figures(ratio)
    } else if ratio >= 0.01 {
        format!("{ratio:.2}")
    } else {
        format!("{ratio:.1e}")
    }
}

/// The mark of a workload whose libraries count items differently, and its explanation.
const ITEMS_DIFFER: (&str, &str) = (
    "†",
    "the libraries count items differently here, so compare the medians, not the times per item",
);

fn comparison_table(report: &Report, libraries: &[&str]) -> String {
    let mut out = String::from("| workload | size |");
    for library in libraries {
        let _ = write!(out, " {} |", escape_cell(library));
    }
    out.push_str(" strata / best peer |\n|---|---:|");
    for _ in libraries {
        out.push_str("---:|");
    }
    out.push_str("---:|\n");
    let mut any_differ = false;
    for (workload, size) in workload_rows(&report.results) {
        let _ = write!(out, "| {} | {} |", escape_cell(workload), format_size(size));
        for library in libraries {
            let text = match cell(report, library, workload, size) {
                Cell::Measured(r) => format!(
                    "{} · {}",
                    format_duration_ns(r.median_ns),
                    format_duration_ns(r.ns_per_item)
                ),
                Cell::Unsupported => "unsupported".to_owned(),
                Cell::Missing => "—".to_owned(),
            };
            let _ = write!(out, " {text} |");
        }
        let strata = match cell(report, STRATA, workload, size) {
            Cell::Measured(r) => Some(r.median_ns),
            Cell::Unsupported | Cell::Missing => None,
        };
        let mut ratio = match (strata, best_peer(report, workload, size)) {
            (Some(strata), Some(peer)) if peer.median_ns > 0.0 => format!(
                "{}× ({})",
                format_ratio(strata / peer.median_ns),
                escape_cell(&peer.library)
            ),
            _ => "—".to_owned(),
        };
        if items_differ(report, workload, size) {
            ratio.push(' ');
            ratio.push_str(ITEMS_DIFFER.0);
            any_differ = true;
        }
        let _ = writeln!(out, " {ratio} |");
    }
    if any_differ {
        let _ = write!(out, "\n{} {}.\n", ITEMS_DIFFER.0, ITEMS_DIFFER.1);
    }
    out
}

/// Makes free text safe inside a Markdown table cell.
fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn record(library: &str, workload: &str, size: u64, median_ns: f64) -> BenchRecord {
        BenchRecord {
            library: library.to_owned(),
            workload: workload.to_owned(),
            size,
            items: size,
            median_ns,
            min_ns: median_ns * 0.9,
            ns_per_item: median_ns / size as f64,
            peak_rss_bytes: Some(3 * 1024 * 1024),
            mechanism: format!("{library} way"),
            samples: 10,
            alloc_calls: Some(2),
            alloc_bytes: Some(1536),
            page_faults: Some(40),
        }
    }

    pub(crate) fn report(results: Vec<BenchRecord>) -> Report {
        Report {
            machine: Machine {
                cores: 2,
                os: "linux".to_owned(),
                arch: "x86_64".to_owned(),
                cpu: Some("Test CPU".to_owned()),
                rustc: None,
            },
            date: "2026-03-21T10:00:00Z".to_owned(),
            quick: false,
            optimized: true,
            results,
            unsupported: Vec::new(),
        }
    }

    pub(crate) fn unsupported(library: &str, workload: &str) -> Unsupported {
        Unsupported {
            library: library.to_owned(),
            workload: workload.to_owned(),
            reason: format!("{library} cannot <{workload}>"),
        }
    }

    #[test]
    fn json_shape_is_stable() {
        let mut only = record("strata", "arena_create", 1_000_000, 2.5e7);
        only.peak_rss_bytes = None;
        (only.alloc_calls, only.alloc_bytes, only.page_faults) = (None, None, None);
        let value = serde_json::to_value(report(vec![only])).expect("a report encodes");
        let keys = |v: &serde_json::Value| {
            let mut keys: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
            keys.sort();
            keys
        };
        assert_eq!(
            keys(&value),
            [
                "date",
                "machine",
                "optimized",
                "quick",
                "results",
                "unsupported"
            ]
        );
        assert_eq!(
            keys(&value["machine"]),
            ["arch", "cores", "cpu", "os", "rustc"]
        );
        let first = &value["results"][0];
        assert_eq!(
            keys(first),
            [
                "items",
                "library",
                "mechanism",
                "median_ns",
                "min_ns",
                "ns_per_item",
                "peak_rss_bytes",
                "samples",
                "size",
                "workload"
            ]
        );
        assert_eq!(first["library"], "strata");
        assert_eq!(first["size"], 1_000_000);
        assert_eq!(first["median_ns"], 2.5e7);
        assert_eq!(first["ns_per_item"], 25.0);
        assert!(first["peak_rss_bytes"].is_null());
        assert_eq!(value["machine"]["rustc"], serde_json::Value::Null);
        // Counted allocations and faults add three fields; uncounted ones leave them out.
        let counted = serde_json::to_value(record("strata", "arena_create", 1_000_000, 2.5e7))
            .expect("a record encodes");
        let counted_keys = keys(&counted);
        assert_eq!(counted_keys.len(), 13, "{counted_keys:?}");
        assert_eq!(counted["alloc_calls"], 2);
        assert_eq!(counted["alloc_bytes"], 1536);
        assert_eq!(counted["page_faults"], 40);
    }

    #[test]
    fn json_round_trips() {
        let mut original = report(vec![record("strata", "arena_create", 1000, 1234.5)]);
        original
            .unsupported
            .push(unsupported("bevy_ecs", "world_clone"));
        let text = serde_json::to_string(&original).expect("a report encodes");
        let back: Report = serde_json::from_str(&text).expect("a report decodes");
        assert_eq!(back, original);
        // Files written before `unsupported` existed still read.
        let mut old: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        old.as_object_mut()
            .expect("an object")
            .remove("unsupported");
        let results = old["results"].as_array_mut().expect("an array");
        for field in ["alloc_calls", "alloc_bytes", "page_faults"] {
            results[0].as_object_mut().expect("an object").remove(field);
        }
        let back: Report = serde_json::from_value(old).expect("an old report decodes");
        assert!(back.unsupported.is_empty());
        assert_eq!(
            (
                back.results[0].alloc_calls,
                back.results[0].alloc_bytes,
                back.results[0].page_faults
            ),
            (None, None, None)
        );
        assert_eq!(
            back.results[0].key().to_string(),
            "strata/arena_create/1000"
        );
    }

    #[test]
    fn units() {
        assert_eq!(format_duration_ns(0.5), "0.50 ns");
        assert_eq!(format_duration_ns(12.34), "12.3 ns");
        assert_eq!(format_duration_ns(999.0), "999 ns");
        assert_eq!(format_duration_ns(1_500.0), "1.50 µs");
        assert_eq!(format_duration_ns(25_000_000.0), "25.0 ms");
        assert_eq!(format_duration_ns(3.2e9), "3.20 s");
        assert_eq!(format_bytes(None), "n/a");
        assert_eq!(format_bytes(Some(512)), "512 B");
        assert_eq!(format_bytes(Some(1536)), "1.50 KiB");
        assert_eq!(format_allocations(Some(2), Some(1536)), "2 · 1.50 KiB");
        assert_eq!(format_allocations(Some(0), Some(0)), "0 · 0 B");
        assert_eq!(format_allocations(None, None), "n/a");
        assert_eq!(format_faults(Some(1_855)), "1855");
        assert_eq!(format_faults(None), "n/a");
        assert_eq!(format_bytes(Some(300 * 1024 * 1024)), "300 MiB");
        assert_eq!(format_bytes(Some(3 * 1024 * 1024 * 1024)), "3.00 GiB");
        assert_eq!(format_size(1_000_000), "1M");
        assert_eq!(format_size(20_000), "20k");
        assert_eq!(format_size(200), "200");
        assert_eq!(format_size(1_500), "1500");
        assert_eq!(format_size(0), "0");
    }

    #[test]
    fn dates() {
        let at = |secs| rfc3339_utc(UNIX_EPOCH + std::time::Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_774_087_261), "2026-03-21T10:01:01Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn the_ratio_chart_goes_beside_the_time_chart() {
        let beside = |chart: &str| ratio_chart_path(Path::new(chart));
        assert_eq!(
            beside("target/bench/results.svg"),
            Path::new("target/bench/ratios.svg")
        );
        assert_eq!(beside("chart.svg"), Path::new("ratios.svg"));
        assert_eq!(beside("out/ratios.svg"), Path::new("out/ratios-ratios.svg"));
    }

    #[test]
    fn markdown_for_one_library() {
        let mut piped = record("strata", "arena_lookup", 10_000, 45_600.0);
        piped.mechanism = "slot | map".to_owned();
        piped.peak_rss_bytes = None;
        (piped.alloc_calls, piped.alloc_bytes, piped.page_faults) = (None, None, None);
        let text = render_markdown(&report(vec![
            record("strata", "arena_create", 1_000_000, 2.5e7),
            piped,
        ]));
        assert_eq!(
            text,
            "# Strata benchmark results\n\n\
             2026-03-21T10:00:00Z · linux x86_64 · 2 cores · Test CPU\n\n\
             | workload | size | library | median | min | ns/item | peak RSS | allocs/run | faults/run | mechanism |\n\
             |---|---:|---|---:|---:|---:|---:|---:|---:|---|\n\
             | arena_create | 1M | strata | 25.0 ms | 22.5 ms | 25.0 ns | 3.00 MiB | 2 · 1.50 KiB | 40 | strata way |\n\
             | arena_lookup | 10k | strata | 45.6 µs | 41.0 µs | 4.56 ns | n/a | n/a | n/a | slot \\| map |\n"
        );
    }

    #[test]
    fn markdown_without_results_says_so() {
        let mut empty = report(Vec::new());
        empty.quick = true;
        empty.optimized = false;
        let text = render_markdown(&empty);
        assert!(text.contains("quick run (rough numbers)"), "{text}");
        assert!(text.contains("unoptimised build"), "{text}");
        assert!(text.ends_with("No workloads were run.\n"), "{text}");
    }

    #[test]
    fn markdown_compares_libraries_per_workload_and_size() {
        let mut other_items = record("hecs", "spawn", 10_000, 8_000.0);
        other_items.workload = "join".to_owned();
        other_items.items = 200;
        other_items.ns_per_item = 40.0;
        let mut strata_join = record("strata", "join", 10_000, 2_000.0);
        strata_join.items = 200;
        strata_join.ns_per_item = 10.0;
        let mut with_unsupported = report(vec![
            record("hecs", "spawn", 10_000, 2_000.0),
            record("strata", "spawn", 10_000, 1_000.0),
            record("bevy_ecs", "spawn", 10_000, 4_000.0),
            record("strata", "spawn", 1_000_000, 300_000.0),
            record("bevy_ecs", "spawn", 1_000_000, 100_000.0),
            record("hecs", "iterate", 10_000, 50.0),
            record("strata", "only_strata", 10, 5.0),
            record("hecs", "clone", 100_000, 1e6),
            other_items,
            strata_join,
        ]);
        let mut per_run = record("strata", "clone", 100_000, 250.0);
        per_run.items = 1;
        per_run.ns_per_item = 250.0;
        with_unsupported.results.push(per_run);
        with_unsupported
            .unsupported
            .push(unsupported("bevy_ecs", "clone"));
        let text = render_markdown(&with_unsupported);
        let comparison = text
            .split("## Comparison\n\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## Not supported").next())
            .and_then(|rest| rest.split_once("\n\n"))
            .map(|(_intro, table)| table)
            .expect("a comparison section");
        assert_eq!(
            comparison,
            "| workload | size | strata | hecs | bevy_ecs | strata / best peer |\n\
             |---|---:|---:|---:|---:|---:|\n\
             | spawn | 10k | 1.00 µs · 0.10 ns | 2.00 µs · 0.20 ns | 4.00 µs · 0.40 ns | 0.50× (hecs) |\n\
             | spawn | 1M | 300 µs · 0.30 ns | — | 100 µs · 0.10 ns | 3.00× (bevy_ecs) |\n\
             | iterate | 10k | — | 50.0 ns · 0.01 ns | — | — |\n\
             | only_strata | 10 | 5.00 ns · 0.50 ns | — | — | — |\n\
             | clone | 100k | 250 ns · 250 ns | 1.00 ms · 10.0 ns | unsupported | 2.5e-4× (hecs) † |\n\
             | join | 10k | 2.00 µs · 10.0 ns | 8.00 µs · 40.0 ns | — | 0.25× (hecs) |\n\
             \n\
             † the libraries count items differently here, so compare the medians, not the \
             times per item.\n"
        );
        assert!(
            text.contains(
                "## Not supported\n\n\
                 These libraries have no way to do this work through their public API, so the \
                 workload is not registered for them and has no record.\n\n\
                 - bevy_ecs `clone`: bevy_ecs cannot <clone>\n"
            ),
            "{text}"
        );
        // The full records follow, one row each.
        let records = text
            .split("## All records\n\n")
            .nth(1)
            .expect("a records section");
        assert_eq!(records.lines().count(), 2 + 11);
    }

    /// A peers-only run (Strata's workloads of these names not registered yet) still compares
    /// the peers, with no ratio.
    #[test]
    fn markdown_without_strata_records() {
        let text = render_markdown(&report(vec![
            record("bevy_ecs", "spawn", 10_000, 4_000.0),
            record("hecs", "spawn", 10_000, 2_000.0),
        ]));
        assert!(
            text.contains(
                "| workload | size | bevy_ecs | hecs | strata / best peer |\n\
                 |---|---:|---:|---:|---:|\n\
                 | spawn | 10k | 4.00 µs · 0.40 ns | 2.00 µs · 0.20 ns | — |\n"
            ),
            "{text}"
        );
    }
}
