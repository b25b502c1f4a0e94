//! `strata run --trace FILE`: the engine's `tracing` spans of a run written as a Chrome
//! trace-event file (the JSON array format that Perfetto's UI and `chrome://tracing` open).
//!
//! Every span becomes a begin and an end event on the track of the thread it ran on, so a frame
//! nests its phases and its serial systems on the main thread, and each parallel system and
//! group lane sits on the pool thread that ran it. A span is named by what it is about: a
//! system span by the system's name, a frame by its number, a phase by its stage, a group
//! lane by its script and root instance; its category
//! is the span's kind (`system`, `stage`, `world_frame`, `overlay_commit`, `save`, ...), and
//! its fields are its arguments.
//!
//! Invariant: the file is written beside its destination and renamed over it only once the
//! trace is complete, so a run that fails to finish it leaves a file that was there as it was.
//! The recorder is the process's global `tracing` subscriber, which can be set once: a second
//! `--trace` in one process is refused with a message, not a panic.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Dispatch, Subscriber};
use tracing_chrome::{ChromeLayerBuilder, EventOrSpan, FlushGuard};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::{LookupSpan, Registry};

/// A trace being recorded; [`Recording::finish`] completes the file.
pub(crate) struct Recording {
    guard: FlushGuard,
    file: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Recording {
    /// Starts recording every span of the process into a file that becomes `path` when the
    /// recording finishes.
    pub(crate) fn start(path: &Path) -> Result<Self, String> {
        let folder = match path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".strata-trace-").suffix(".tmp");
        // The permissions of a file made the usual way (the process's umask applies).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let file = builder
            .tempfile_in(folder)
            .map_err(|e| format!("cannot write in {}: {e}", folder.display()))?;
        let writer = file
            .reopen()
            .map_err(|e| format!("cannot write in {}: {e}", folder.display()))?;
        let (chrome, guard) = ChromeLayerBuilder::new()
            .writer(writer)
            .include_args(true)
            .include_locations(false)
            .name_fn(Box::new(|item| match item {
                EventOrSpan::Span(span) => span
                    .extensions()
                    .get::<Label>()
                    .map_or_else(|| span.name().to_owned(), |label| label.0.clone()),
                EventOrSpan::Event(event) => event.metadata().name().to_owned(),
            }))
            .category_fn(Box::new(|item| match item {
                EventOrSpan::Span(span) => span.name().to_owned(),
                EventOrSpan::Event(event) => event.metadata().target().to_owned(),
            }))
            .build();
        let subscriber = Registry::default().with(Labels).with(chrome);
        tracing::dispatcher::set_global_default(Dispatch::new(subscriber))
            .map_err(|_| "a trace is already being recorded in this process".to_owned())?;
        Ok(Self {
            guard,
            file,
            path: path.to_owned(),
        })
    }

    /// Completes the trace and puts the file in its place.
    pub(crate) fn finish(self) -> Result<(), String> {
        let Self { guard, file, path } = self;
        // The guard's drop closes every open span's track and flushes the writer thread.
        drop(guard);
        file.as_file()
            .sync_all()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.persist(&path)
            .map_err(|e| format!("{}: {}", path.display(), e.error))?;
        Ok(())
    }
}

/// A span's display name, kept in its extensions by [`Labels`].
struct Label(String);

/// Names spans by their subject: a system span (`system`) by the system's `name` field, a
/// frame (`world_frame`) by its `frame` number, a phase (`stage`) by its `stage`.
struct Labels;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Labels {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let kind = attrs.metadata().name();
        if !matches!(kind, "system" | "world_frame" | "stage" | "group") {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let label = match kind {
            "system" => fields.take("name"),
            "world_frame" => fields.take("frame").map(|frame| format!("frame {frame}")),
            "stage" => fields.take("stage"),
            _ => match (fields.take("script"), fields.take("root")) {
                (Some(script), Some(root)) => Some(format!("{script} #{root}")),
                _ => None,
            },
        };
        if let (Some(label), Some(span)) = (label, ctx.span(id)) {
            span.extensions_mut().insert(Label(label));
        }
    }
}

/// A span's fields, as text.
#[derive(Default)]
struct Fields(Vec<(&'static str, String)>);

impl Fields {
    fn take(&mut self, name: &str) -> Option<String> {
        let at = self.0.iter().position(|(field, _)| *field == name)?;
        Some(self.0.swap_remove(at).1)
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.0.push((field.name(), text));
    }
}
