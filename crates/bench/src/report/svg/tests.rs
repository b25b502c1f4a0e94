//! The charts: snapshots of a small fixed report, no text outside the chart however long the
//! labels, and the properties each chart promises.

use super::*;
use crate::report::Report;
use crate::report::tests::{record, report, unsupported};

/// A small report with what the charts must handle: Strata ahead of and behind the peers,
/// work a library cannot do, libraries that count items differently, a workload only Strata
/// runs and one only a peer runs.
fn sample() -> Report {
    let mut per_run = record("strata", "clone", 100_000, 250.0);
    per_run.items = 1;
    per_run.ns_per_item = 250.0;
    let mut sample = report(vec![
        record("strata", "spawn", 10_000, 1_000.0),
        record("hecs", "spawn", 10_000, 2_000.0),
        record("bevy_ecs", "spawn", 10_000, 4_000.0),
        record("strata", "iter2", 1_000_000, 3_000_000.0),
        record("shipyard", "iter2", 1_000_000, 1_000_000.0),
        per_run,
        record("hecs", "clone", 100_000, 1e6),
        record("strata", "only_strata", 10, 5.0),
        record("hecs", "only_hecs", 10, 5.0),
    ]);
    sample.unsupported.push(unsupported("bevy_ecs", "clone"));
    sample
}

/// A report whose labels are far longer than the default label column.
fn long_labels() -> Report {
    report(vec![
        record(
            "strata",
            "overlay_run_commit_1m_4_writers_dynamic",
            1_000_000,
            5e7,
        ),
        record(
            "a_peer_with_a_long_name",
            "overlay_run_commit_1m_4_writers_dynamic",
            1_000_000,
            1e3,
        ),
        record(
            "strata",
            "store_first_write_after_snapshot_of_a_very_large_world",
            100_000,
            4e5,
        ),
        record(
            "hecs",
            "store_first_write_after_snapshot_of_a_very_large_world",
            100_000,
            1e12,
        ),
    ])
}

#[test]
fn the_time_chart_of_a_small_report() {
    insta::assert_snapshot!(render_svg(&sample()));
}

#[test]
fn the_ratio_chart_of_a_small_report() {
    insta::assert_snapshot!(render_ratio_svg(&sample()));
}

/// One `<text>` element of a chart: where it starts, how it is drawn, and what it says.
#[derive(Debug)]
struct Text {
    x: f64,
    anchor: String,
    size: f64,
    bold: bool,
    content: String,
}

/// The value of attribute `name` in the opening tag `tag`, if present.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = start + tag[start..].find('"')?;
    Some(&tag[start..end])
}

/// The chart's width and every text element in it.
fn texts(svg: &str) -> (f64, Vec<Text>) {
    let root = &svg[..svg.find('>').expect("an <svg> tag")];
    let width: f64 = attribute(root, "width")
        .and_then(|w| w.parse().ok())
        .expect("a width");
    let default_size: f64 = attribute(root, "font-size")
        .and_then(|s| s.parse().ok())
        .expect("a font size");
    let mut found = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let (tag, rest) = piece.split_once('>').expect("a closed tag");
        let content = rest.split("</text>").next().expect("a text");
        found.push(Text {
            x: attribute(tag, "x")
                .and_then(|x| x.parse().ok())
                .expect("an x"),
            anchor: attribute(tag, "text-anchor").unwrap_or("start").to_owned(),
            size: attribute(tag, "font-size").map_or(default_size, |s| s.parse().expect("a size")),
            bold: attribute(tag, "font-weight") == Some("bold"),
            content: content
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        });
    }
    (width, found)
}

/// Every text of `svg` lies between 0 and the chart's width, by its length.
#[track_caller]
fn check_nothing_clipped(svg: &str) {
    let (width, texts) = texts(svg);
    assert!(!texts.is_empty());
    for text in texts {
        let w = text_width(&text.content, text.size, text.bold);
        let (left, right) = match text.anchor.as_str() {
            "middle" => (text.x - w / 2.0, text.x + w / 2.0),
            "end" => (text.x - w, text.x),
            _ => (text.x, text.x + w),
        };
        assert!(
            left >= 0.0 && right <= width,
            "{text:?} spans {left}..{right} of {width}"
        );
    }
}

#[test]
fn no_text_is_clipped_however_long_the_labels() {
    for report in [sample(), long_labels(), report(Vec::new())] {
        check_nothing_clipped(&render_svg(&report));
        check_nothing_clipped(&render_ratio_svg(&report));
    }
    // The long labels widen the chart beyond its least width rather than leave the page.
    let (width, _) = texts(&render_svg(&long_labels()));
    assert!(width > MIN_WIDTH, "{width}");
}

#[test]
fn the_ratio_chart_has_a_bar_per_workload_both_measured() {
    let svg = render_ratio_svg(&sample());
    // spawn (Strata 0.5× hecs), iter2 (3× shipyard), clone (2.5e-4× hecs); not the workloads
    // only one side ran.
    assert_eq!(svg.matches("<title>").count(), 3, "{svg}");
    assert!(svg.contains(">0.50× (hecs)</text>"), "{svg}");
    assert!(svg.contains(">3.00× (shipyard)</text>"), "{svg}");
    assert!(svg.contains(">2.5e-4× (hecs)</text>"), "{svg}");
    assert!(
        !svg.contains("only_strata") && !svg.contains("only_hecs"),
        "{svg}"
    );
    // Faster bars end at the line at 1×, slower ones start there.
    let line = svg
        .lines()
        .find(|line| line.contains("stroke=\"#000000\""))
        .expect("the line at 1×");
    let one: f64 = attribute(line, "x1")
        .and_then(|x| x.parse().ok())
        .expect("an x");
    let bars: Vec<(f64, f64, bool)> = svg
        .lines()
        .filter(|line| line.starts_with("<rect") && line.contains("<title>"))
        .map(|bar| {
            let number = |name| -> f64 {
                attribute(bar, name)
                    .and_then(|v| v.parse().ok())
                    .expect("a number")
            };
            (number("x"), number("width"), bar.contains(FASTER))
        })
        .collect();
    assert_eq!(bars.len(), 3);
    for (x, width, faster) in bars {
        let touching = if faster { x + width } else { x };
        assert!((touching - one).abs() < 0.11, "{x} {width} {faster} {one}");
    }
    assert!(
        svg.contains(">1×</text>") && svg.contains(">0.0001×</text>"),
        "{svg}"
    );
    assert_eq!(
        svg.matches(FASTER).count(),
        3,
        "two bars and the legend: {svg}"
    );
    assert_eq!(
        svg.matches(SLOWER).count(),
        2,
        "one bar and the legend: {svg}"
    );
    let none = render_ratio_svg(&report(vec![record("strata", "spawn", 10, 1.0)]));
    assert!(
        none.contains("No workload has records of both Strata and a peer."),
        "{none}"
    );
}

#[test]
fn log_axis() {
    assert_eq!(log_range([0.55, 3.0, 120.0].into_iter()), (-1.0, 3.0));
    assert_eq!(log_range([10.0].into_iter()), (1.0, 2.0));
    assert_eq!(log_range([0.0, f64::NAN].into_iter()), (0.0, 1.0));
    assert_eq!(log_range(std::iter::empty()), (0.0, 1.0));
    let labels: Vec<String> = (-2..=10).map(decade_label).collect();
    assert_eq!(
        labels,
        [
            "0.01 ns", "0.1 ns", "1 ns", "10 ns", "100 ns", "1 µs", "10 µs", "100 µs", "1 ms",
            "10 ms", "100 ms", "1 s", "10 s"
        ]
    );
    let ratios: Vec<String> = (-2..=2).map(ratio_label).collect();
    assert_eq!(ratios, ["0.01×", "0.1×", "1×", "10×", "100×"]);
    assert_eq!(
        escape_xml("a<b & \"c\"'"),
        "a&lt;b &amp; &quot;c&quot;&apos;"
    );
    let ratios: Vec<String> = [0.5, 3.0, 9.994, 12.34, 250.0, 0.01, 0.00025]
        .into_iter()
        .map(format_ratio)
        .collect();
    assert_eq!(
        ratios,
        ["0.50", "3.00", "9.99", "12.3", "250", "0.01", "2.5e-4"]
    );
}

#[test]
fn svg_has_a_bar_per_record_and_a_legend() {
    let mut with_unsupported = report(vec![
        record("hecs", "spawn", 10_000, 2_000.0),
        record("strata", "spawn", 10_000, 1_000.0),
        record("shipyard", "spawn", 10_000, 20_000.0),
        record("hecs", "clone", 100_000, 1e6),
        record("hecs", "a<b", 10, 5.0),
    ]);
    with_unsupported
        .unsupported
        .push(unsupported("bevy_ecs", "clone"));
    let svg = render_svg(&with_unsupported);
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(svg.ends_with("</svg>\n"), "{svg}");
    assert_eq!(svg.matches("<title>").count(), 5, "{svg}");
    assert_eq!(svg.matches("bevy_ecs unsupported").count(), 1, "{svg}");
    // Strata first in the legend, then the others in order of appearance.
    let legend: Vec<usize> = ["strata", "hecs", "shipyard", "bevy_ecs"]
        .iter()
        .map(|library| {
            svg.find(&format!(">{library}</text>"))
                .expect("in the legend")
        })
        .collect();
    assert!(legend.windows(2).all(|pair| pair[0] < pair[1]), "{svg}");
    // Known libraries keep their colours, whoever else is in the chart.
    assert!(svg.contains("fill=\"#d62728\"/>\n<text x=\"32.0\" y=\"69.0\">strata</text>"));
    assert_eq!(colour_of("hecs", 0), colour_of("hecs", 3));
    assert_ne!(colour_of("other", 0), colour_of("other", 1));
    assert!(svg.contains(">a&lt;b · 10</text>"), "{svg}");
    assert!(!svg.contains("a<b"), "{svg}");
    // The shortest bar (0.1 ns per item) sits on the lowest gridline, the longest (10 ns)
    // reaches the highest.
    assert!(
        svg.contains(">0.1 ns</text>") && svg.contains(">10 ns</text>"),
        "{svg}"
    );
    assert!(svg.contains("width=\"1.0\" height=\"13\""), "{svg}");
    assert!(svg.contains("width=\"620.0\" height=\"13\""), "{svg}");
    assert!(!svg.contains('†'), "{svg}");
    let mut per_run = record("strata", "clone", 100_000, 250.0);
    per_run.items = 1;
    per_run.ns_per_item = 250.0;
    with_unsupported.results.push(per_run);
    let svg = render_svg(&with_unsupported);
    assert!(svg.contains(">clone · 100k †</text>"), "{svg}");
    assert!(
        svg.contains(">† the libraries count items differently"),
        "{svg}"
    );
    let empty = render_svg(&report(Vec::new()));
    assert!(empty.contains("No workloads were run."), "{empty}");
}
