//! The SVG charts of a report: [`render_svg`], the time per item of every record, one bar per
//! library grouped by workload and size; and [`render_ratio_svg`], Strata's median divided by
//! the fastest peer's, one bar per workload and size on a logarithmic axis around 1×.
//!
//! Both are drawn on a `Canvas`, which measures every text it places with `text_width`, an
//! upper estimate of the width a sans-serif font renders it at.
//!
//! Invariant: no text is clipped: the label column is as wide as the widest row label, and the
//! chart as wide as the rightmost text the canvas placed (and at least `MIN_WIDTH`), by
//! `text_width`. Rows keep the order of first appearance in the results, and work a library
//! cannot do is written in place of its bar.

use std::fmt::Write as _;
use std::ops::RangeInclusive;

use super::{
    BenchRecord, Cell, ITEMS_DIFFER, Report, best_peer, cell, format_duration_ns, format_ratio,
    format_size, items_differ, libraries, workload_rows,
};
use crate::harness::STRATA;

/// The narrowest a chart is drawn, so small reports keep a readable plot.
const MIN_WIDTH: f64 = 980.0;
/// The space around the chart's content, left and right.
const MARGIN: f64 = 16.0;
/// The space between the row labels and the plot.
const LABEL_GAP: f64 = 10.0;
/// Where the plot starts at the least, so charts with short labels keep one layout.
const MIN_PLOT_X: f64 = 230.0;
/// The width of the plot area, where the bars are drawn.
const PLOT_W: f64 = 620.0;
/// The height of one bar.
const BAR_H: f64 = 13.0;
/// The space below each bar.
const BAR_GAP: f64 = 3.0;
/// The space below each group of bars.
const GROUP_GAP: f64 = 14.0;
/// Where the plot starts, below the title, the line about the run and the legend.
const TOP: f64 = 104.0;
/// The font size of labels and most text (the document's default).
const FONT: f64 = 12.0;
/// The font size of the values beside the bars.
const SMALL: f64 = 11.0;
/// The font size of the title.
const TITLE: f64 = 17.0;
/// The grey of secondary text.
const GREY: &str = "#555555";

/// The width `text` takes at `size` pixels, `bold` or not, in the charts' sans-serif font: an
/// upper estimate of 0.6 em a character (0.65 em bold), wider than the average character of
/// the common sans-serif fonts, so text placed by it is never clipped.
pub(super) fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    let em = if bold { 0.65 } else { 0.6 };
    text.chars().count() as f64 * size * em
}

/// How a text is drawn: its font size and weight, where it hangs from its x, and its colour.
#[derive(Clone, Copy)]
struct Style {
    size: f64,
    bold: bool,
    italic: bool,
    anchor: Anchor,
    fill: Option<&'static str>,
}

/// Where a text hangs from its x.
#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    Start,
    Middle,
    End,
}

impl Style {
    /// Plain text of the default size, starting at its x.
    const PLAIN: Style = Style {
        size: FONT,
        bold: false,
        italic: false,
        anchor: Anchor::Start,
        fill: None,
    };
    /// A row label: bold, ending at its x.
    const LABEL: Style = Style {
        bold: true,
        anchor: Anchor::End,
        ..Style::PLAIN
    };
    /// A value beside a bar.
    const VALUE: Style = Style {
        size: SMALL,
        ..Style::PLAIN
    };
    /// A grey note starting at its x.
    const NOTE: Style = Style {
        fill: Some(GREY),
        ..Style::PLAIN
    };
    /// A grey axis label centred on its x.
    const AXIS: Style = Style {
        anchor: Anchor::Middle,
        ..Style::NOTE
    };

    /// The horizontal extent of `text` drawn at `x` in this style.
    fn extent(self, x: f64, text: &str) -> (f64, f64) {
        let width = text_width(text, self.size, self.bold);
        match self.anchor {
            Anchor::Start => (x, x + width),
            Anchor::Middle => (x - width / 2.0, x + width / 2.0),
            Anchor::End => (x - width, x),
        }
    }
}

/// The elements of a chart, in drawing order, and the rightmost point any text reaches.
struct Canvas {
    body: String,
    right: f64,
}

impl Canvas {
    fn new() -> Canvas {
        Canvas {
            body: String::new(),
            right: 0.0,
        }
    }

    /// Adds a shape (a `<rect>` or `<line>`) as written.
    fn shape(&mut self, element: &str) {
        self.body.push_str(element);
        self.body.push('\n');
    }

    /// Adds `text` (escaped here) at (`x`, `y`) in `style`, widening the chart to hold it.
    fn text(&mut self, x: f64, y: f64, style: Style, text: &str) {
        self.right = self.right.max(style.extent(x, text).1);
        let _ = write!(self.body, "<text x=\"{x:.1}\" y=\"{y:.1}\"");
        match style.anchor {
            Anchor::Start => {}
            Anchor::Middle => self.body.push_str(" text-anchor=\"middle\""),
            Anchor::End => self.body.push_str(" text-anchor=\"end\""),
        }
        if style.size != FONT {
            let _ = write!(self.body, " font-size=\"{}\"", style.size);
        }
        if style.bold {
            self.body.push_str(" font-weight=\"bold\"");
        }
        if style.italic {
            self.body.push_str(" font-style=\"italic\"");
        }
        if let Some(fill) = style.fill {
            let _ = write!(self.body, " fill=\"{fill}\"");
        }
        let _ = writeln!(self.body, ">{}</text>", escape_xml(text));
    }

    /// The SVG document: `height` tall, as wide as its widest text needs.
    fn finish(self, height: f64) -> String {
        let width = (self.right + MARGIN).max(MIN_WIDTH).ceil();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"{FONT}\">"
        );
        let _ = writeln!(
            out,
            "<rect width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>"
        );
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

/// Writes the title and a line about the run: when, on what, and how far to trust it.
fn header(canvas: &mut Canvas, title: &str, report: &Report) {
    let title_style = Style {
        size: TITLE,
        bold: true,
        ..Style::PLAIN
    };
    canvas.text(MARGIN, 26.0, title_style, title);
    let machine = &report.machine;
    let mut about = vec![
        report.date.clone(),
        format!("{} {}, {} cores", machine.os, machine.arch, machine.cores),
    ];
    about.extend(machine.cpu.clone());
    if report.quick {
        about.push("quick run (rough numbers)".to_owned());
    }
    if !report.optimized {
        about.push("unoptimised build: do not trust these numbers".to_owned());
    }
    canvas.text(MARGIN, 46.0, Style::NOTE, &about.join(" · "));
}

/// Writes a legend of swatches and names on one line.
fn legend<'a>(canvas: &mut Canvas, entries: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut x = MARGIN;
    for (name, colour) in entries {
        canvas.shape(&format!(
            "<rect x=\"{x:.1}\" y=\"58\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
        ));
        canvas.text(x + 16.0, 69.0, Style::PLAIN, name);
        x += 16.0 + text_width(name, FONT, false) + 24.0;
    }
}

/// Where the plot starts: right of the widest of `labels` (bold, as rows are labelled), and
/// at [`MIN_PLOT_X`] at the least.
fn plot_x<'a>(labels: impl IntoIterator<Item = &'a String>) -> f64 {
    let widest = labels
        .into_iter()
        .map(|label| text_width(label, FONT, true))
        .fold(0.0, f64::max);
    (MARGIN + widest + LABEL_GAP).max(MIN_PLOT_X)
}

/// A logarithmic horizontal axis: the powers of ten `lo..=hi` across the plot.
struct LogAxis {
    lo: f64,
    hi: f64,
    plot_x: f64,
}

impl LogAxis {
    /// Where `value` falls, clamped to the plot.
    fn x_of(&self, value: f64) -> f64 {
        let frac = (value.max(f64::MIN_POSITIVE).log10() - self.lo) / (self.hi - self.lo);
        self.plot_x + frac.clamp(0.0, 1.0) * PLOT_W
    }

    /// The exponents of the axis's gridlines.
    fn decades(&self) -> RangeInclusive<i32> {
        (self.lo as i32)..=(self.hi as i32)
    }

    /// Draws a gridline per power of ten from `top` to `bottom`, labelled above and below.
    fn gridlines(&self, canvas: &mut Canvas, top: f64, bottom: f64, label: fn(i32) -> String) {
        for decade in self.decades() {
            let x = self.x_of(10_f64.powi(decade));
            let text = label(decade);
            canvas.shape(&format!(
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"#dddddd\"/>",
                top - 14.0
            ));
            canvas.text(x, top - 18.0, Style::AXIS, &text);
            canvas.text(x, bottom + 16.0, Style::AXIS, &text);
        }
    }

    /// Writes the axis's title centred under the plot.
    fn title(&self, canvas: &mut Canvas, bottom: f64, title: &str) {
        canvas.text(
            self.plot_x + PLOT_W / 2.0,
            bottom + 34.0,
            Style::AXIS,
            title,
        );
    }
}

/// One workload and size of the time chart: a bar per library (its index in [`libraries`])
/// that has a record or cannot do the work.
struct ChartGroup<'a> {
    label: String,
    /// Whether the libraries of this workload and size count items differently.
    items_differ: bool,
    bars: Vec<(usize, Cell<'a>)>,
}

/// The bar colours of Strata and the peers the benchmark knows, so a library keeps its colour
/// from one chart to the next whoever else ran.
const KNOWN_COLOURS: [(&str, &str); 4] = [
    (STRATA, "#d62728"),
    ("bevy_ecs", "#1f77b4"),
    ("hecs", "#2ca02c"),
    ("shipyard", "#ff7f0e"),
];

/// The colours of other libraries, by their place in [`libraries`], repeating after four.
const OTHER_COLOURS: [&str; 4] = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

/// The bar colour of `library`, the `index`-th in [`libraries`] order.
fn colour_of(library: &str, index: usize) -> &'static str {
    KNOWN_COLOURS
        .iter()
        .find(|(known, _)| *known == library)
        .map_or(OTHER_COLOURS[index % OTHER_COLOURS.len()], |(_, colour)| {
            colour
        })
}

/// The label of a row: `workload · size`.
fn row_label(workload: &str, size: u64) -> String {
    format!("{workload} · {}", format_size(size))
}

/// The groups of the time chart: one per workload and size, with a bar per library that has a
/// record or is marked unsupported.
fn chart_groups<'a>(report: &'a Report, libraries: &[&str]) -> Vec<ChartGroup<'a>> {
    workload_rows(&report.results)
        .into_iter()
        .map(|(workload, size)| {
            let items_differ = items_differ(report, workload, size);
            let mut label = row_label(workload, size);
            if items_differ {
                label.push(' ');
                label.push_str(ITEMS_DIFFER.0);
            }
            ChartGroup {
                label,
                items_differ,
                bars: libraries
                    .iter()
                    .enumerate()
                    .map(|(index, library)| (index, cell(report, library, workload, size)))
                    .filter(|(_, cell)| !matches!(cell, Cell::Missing))
                    .collect(),
            }
        })
        .collect()
}

/// Renders a report as an SVG chart: one group of horizontal bars per workload and size, one
/// bar per library (coloured as in the legend, each known library always in the same colour),
/// each as long as the time per item on a logarithmic axis with a gridline per power of ten,
/// its value written beside it. Work a library cannot do is written in place of its bar.
pub fn render_svg(report: &Report) -> String {
    let libraries = libraries(report);
    let groups = chart_groups(report, &libraries);
    let mut canvas = Canvas::new();
    header(
        &mut canvas,
        "Strata benchmark: time per item (median ÷ items, log scale, shorter is faster)",
        report,
    );
    let colours: Vec<&str> = libraries
        .iter()
        .enumerate()
        .map(|(index, library)| colour_of(library, index))
        .collect();
    legend(&mut canvas, libraries.iter().copied().zip(colours));
    if groups.is_empty() {
        canvas.text(MARGIN, TOP + 10.0, Style::PLAIN, "No workloads were run.");
        return canvas.finish(TOP + 48.0);
    }
    let n_bars: usize = groups.iter().map(|group| group.bars.len()).sum();
    let bottom = TOP + groups.len() as f64 * GROUP_GAP + n_bars as f64 * (BAR_H + BAR_GAP);
    let (lo, hi) = log_range(report.results.iter().map(|r| r.ns_per_item));
    let axis = LogAxis {
        lo,
        hi,
        plot_x: plot_x(groups.iter().map(|group| &group.label)),
    };
    axis.gridlines(&mut canvas, TOP, bottom, decade_label);
    let mut y = TOP;
    for group in &groups {
        y = time_group(&mut canvas, &axis, &libraries, group, y);
    }
    axis.title(&mut canvas, bottom, "time per item");
    let any_differ = groups.iter().any(|group| group.items_differ);
    if any_differ {
        let note = format!("{} {}", ITEMS_DIFFER.0, ITEMS_DIFFER.1);
        canvas.text(MARGIN, bottom + 54.0, Style::NOTE, &note);
    }
    canvas.finish(bottom + if any_differ { 66.0 } else { 48.0 })
}

/// Draws one group of the time chart from `y` down: its label, then a bar per library (or the
/// mark of work it cannot do); returns where the next group starts.
fn time_group(
    canvas: &mut Canvas,
    axis: &LogAxis,
    libraries: &[&str],
    group: &ChartGroup<'_>,
    mut y: f64,
) -> f64 {
    let group_h = group.bars.len() as f64 * (BAR_H + BAR_GAP);
    let label_x = axis.plot_x - LABEL_GAP;
    canvas.text(label_x, y + group_h / 2.0 + 4.0, Style::LABEL, &group.label);
    for (index, cell) in &group.bars {
        let library = libraries[*index];
        let colour = colour_of(library, *index);
        let plot_x = axis.plot_x;
        match cell {
            Cell::Measured(record) => {
                let end = axis.x_of(record.ns_per_item).max(plot_x + 1.0);
                canvas.shape(&format!(
                    "<rect x=\"{plot_x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR_H}\" \
                     fill=\"{colour}\"><title>{}</title></rect>",
                    end - plot_x,
                    escape_xml(&bar_title(record))
                ));
                let value = format_duration_ns(record.ns_per_item);
                canvas.text(end + 4.0, y + BAR_H - 2.0, Style::VALUE, &value);
            }
            Cell::Unsupported | Cell::Missing => {
                canvas.shape(&format!(
                    "<rect x=\"{plot_x:.1}\" y=\"{y:.1}\" width=\"4\" height=\"{BAR_H}\" \
                     fill=\"{colour}\"/>"
                ));
                let style = Style {
                    italic: true,
                    fill: Some("#777777"),
                    ..Style::VALUE
                };
                let text = format!("{library} unsupported");
                canvas.text(plot_x + 8.0, y + BAR_H - 2.0, style, &text);
            }
        }
        y += BAR_H + BAR_GAP;
    }
    y + GROUP_GAP
}

/// The tooltip of a record's bar.
fn bar_title(record: &BenchRecord) -> String {
    format!(
        "{}: {} per item, {} per run",
        record.library,
        format_duration_ns(record.ns_per_item),
        format_duration_ns(record.median_ns)
    )
}

/// One row of the ratio chart: a workload and size that Strata and at least one peer measured.
struct RatioRow<'a> {
    label: String,
    /// Strata's median divided by the fastest peer's.
    ratio: f64,
    /// The fastest peer.
    peer: &'a str,
}

/// The rows of the ratio chart, in order of first appearance; workloads that Strata or every
/// peer lacks (or whose medians are not positive) have none.
fn ratio_rows(report: &Report) -> Vec<RatioRow<'_>> {
    workload_rows(&report.results)
        .into_iter()
        .filter_map(|(workload, size)| {
            let Cell::Measured(strata) = cell(report, STRATA, workload, size) else {
                return None;
            };
            let peer = best_peer(report, workload, size)?;
            let ratio = strata.median_ns / peer.median_ns;
            (ratio.is_finite() && ratio > 0.0).then(|| RatioRow {
                label: row_label(workload, size),
                ratio,
                peer: &peer.library,
            })
        })
        .collect()
}

/// The colour of a ratio bar where Strata is faster than every peer, and where it is not.
const FASTER: &str = "#1a9850";
/// See [`FASTER`].
const SLOWER: &str = "#d73027";

/// Renders the comparison a reader wants first: for every workload and size that Strata and a
/// peer both measured, one bar of Strata's median divided by the fastest peer's (the same work
/// for every library), on a logarithmic axis with a line at 1×: bars to its left are where
/// Strata is faster, to its right where it is slower, each labelled with the ratio and the
/// peer.
pub fn render_ratio_svg(report: &Report) -> String {
    let rows = ratio_rows(report);
    let mut canvas = Canvas::new();
    header(
        &mut canvas,
        "Strata ÷ fastest peer, median per run (log scale; below 1× Strata is faster)",
        report,
    );
    legend(
        &mut canvas,
        [("Strata faster", FASTER), ("Strata slower", SLOWER)],
    );
    if rows.is_empty() {
        let text = "No workload has records of both Strata and a peer.";
        canvas.text(MARGIN, TOP + 10.0, Style::PLAIN, text);
        return canvas.finish(TOP + 48.0);
    }
    let bottom = TOP + rows.len() as f64 * (BAR_H + BAR_GAP) + GROUP_GAP;
    // The axis always holds 1×, the line every bar starts from.
    let (lo, hi) = log_range(rows.iter().map(|row| row.ratio).chain([1.0]));
    let axis = LogAxis {
        lo,
        hi,
        plot_x: plot_x(rows.iter().map(|row| &row.label)),
    };
    axis.gridlines(&mut canvas, TOP, bottom, ratio_label);
    let one = axis.x_of(1.0);
    let mut y = TOP;
    for row in &rows {
        ratio_bar(&mut canvas, &axis, row, y);
        y += BAR_H + BAR_GAP;
    }
    canvas.shape(&format!(
        "<line x1=\"{one:.1}\" y1=\"{:.1}\" x2=\"{one:.1}\" y2=\"{bottom:.1}\" stroke=\"#000000\" \
         stroke-width=\"1.5\"/>",
        TOP - 14.0
    ));
    axis.title(
        &mut canvas,
        bottom,
        "Strata ÷ fastest peer (median per run)",
    );
    canvas.finish(bottom + 48.0)
}

/// Draws one row of the ratio chart at `y`: its label, a bar from 1× to the ratio, and the
/// ratio with the peer right of whichever end is further right.
fn ratio_bar(canvas: &mut Canvas, axis: &LogAxis, row: &RatioRow<'_>, y: f64) {
    let label_x = axis.plot_x - LABEL_GAP;
    canvas.text(label_x, y + BAR_H - 2.0, Style::LABEL, &row.label);
    let (one, end) = (axis.x_of(1.0), axis.x_of(row.ratio));
    let (left, right) = (one.min(end), one.max(end));
    let colour = if row.ratio < 1.0 { FASTER } else { SLOWER };
    let text = format!("{}× ({})", format_ratio(row.ratio), row.peer);
    canvas.shape(&format!(
        "<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR_H}\" \
         fill=\"{colour}\"><title>{}</title></rect>",
        (right - left).max(1.0),
        escape_xml(&format!("{}: Strata ÷ {text}", row.label))
    ));
    canvas.text(right + 4.0, y + BAR_H - 2.0, Style::VALUE, &text);
}

/// The label of the ratio axis's gridline at 10^`decade`: `0.1×`, `1×`, `10×`.
fn ratio_label(decade: i32) -> String {
    format!("{}×", 10_f64.powi(decade))
}

/// The powers of ten the axis spans: from the one at or below the smallest positive value to
/// the one at or above the largest, at least one decade apart.
fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for value in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(value.log10().floor());
        hi = hi.max(value.log10().ceil());
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    (lo, hi.max(lo + 1.0))
}

/// The label of the time axis's gridline at 10^`decade` nanoseconds: `1 ns`, `10 µs`,
/// `0.1 ns`.
fn decade_label(decade: i32) -> String {
    let (shift, unit) = match decade {
        ..3 => (0, "ns"),
        3..6 => (3, "µs"),
        6..9 => (6, "ms"),
        _ => (9, "s"),
    };
    format!("{} {unit}", 10_f64.powi(decade - shift))
}

/// Makes free text safe inside SVG (XML) text and attributes.
fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
