//! What a frame tells a `tracing` subscriber: a span per frame, per stage and per system run,
//! and an event for every build diagnostic.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::schedule;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Writes every span opened and every event, one line each, `name key=value ...`.
#[derive(Default)]
struct Recorder {
    lines: Mutex<Vec<String>>,
    next: AtomicU64,
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Fields(format!("span {}", span.metadata().name()));
        span.record(&mut fields);
        self.lines.lock().unwrap().push(fields.0);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(format!("event {}", event.metadata().level()));
        event.record(&mut fields);
        self.lines.lock().unwrap().push(fields.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn recorded(f: impl FnOnce()) -> Vec<String> {
    let recorder = std::sync::Arc::new(Recorder::default());
    tracing::subscriber::with_default(recorder.clone(), f);
    recorder.lines.lock().unwrap().clone()
}

#[test]
fn a_frame_opens_spans_for_itself_each_stage_and_each_system_run() {
    let mut s = schedule(
        "
        move_things
        late phase=Last
        rarely every=10
        ",
    );
    s.build();
    let lines = recorded(|| {
        s.run_frame(0.001, |_, _, _| Ok::<(), ()>(())).unwrap();
    });
    let spans: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("span frame") || l.starts_with("span system"))
        .collect();
    assert_eq!(
        spans,
        [
            "span frame dt=0.001",
            "span system name=move_things id=0",
            "span system name=late id=1",
        ],
        "the interval system was not due, so it has no span"
    );
    let stages = lines.iter().filter(|l| l.starts_with("span stage")).count();
    assert_eq!(stages, 5, "one per frame stage; no fixed step was due");
}

#[test]
fn build_diagnostics_become_events_by_severity() {
    let mut s = schedule(
        "
        a after=c
        b after=a
        c after=b
        d after=nowhere
        ",
    );
    let lines = recorded(|| {
        s.build();
    });
    let events: Vec<&String> = lines.iter().filter(|l| l.starts_with("event")).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events.iter().any(|e| e.starts_with("event WARN")),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e.starts_with("event INFO")),
        "{events:?}"
    );
}
