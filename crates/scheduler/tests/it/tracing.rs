//! What a frame tells a `tracing` subscriber: a span per frame, per stage and per system run,
//! and an event for every build diagnostic.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::schedule;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// Writes every span opened and every event on a thread that is recording, one line each,
/// `name key=value ...`. It is the process's one global subscriber: a subscriber set for a
/// scope only (`with_default`) can miss callsites whose interest another test's thread cached
/// first, which made these tests fail now and then once every test of the crate shared one
/// binary.
#[derive(Default)]
struct Recorder {
    next: AtomicU64,
}

thread_local! {
    /// The lines recorded on this thread, while it records.
    static LINES: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

fn keep(line: String) {
    LINES.with(|lines| {
        if let Some(lines) = lines.borrow_mut().as_mut() {
            lines.push(line);
        }
    });
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
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Fields(format!("span {}", span.metadata().name()));
        span.record(&mut fields);
        keep(fields.0);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(format!("event {}", event.metadata().level()));
        event.record(&mut fields);
        keep(fields.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// What `f` told the subscriber, on this thread.
fn recorded(f: impl FnOnce()) -> Vec<String> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Recorder::default())
            .expect("no other subscriber is set in this test binary");
    });
    LINES.with(|lines| *lines.borrow_mut() = Some(Vec::new()));
    f();
    LINES.with(|lines| lines.borrow_mut().take().unwrap_or_default())
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
