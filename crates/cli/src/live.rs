//! Live runs: with `--watch` or `--serve`, `strata run` steps the place in real time (one
//! frame every `1 / frame_rate` seconds), until `--frames` frames have run or Ctrl-C stops it.
//! Between frames it reloads the place's files as they change on disk (`--watch`) and answers
//! the explorer's requests (`--serve`, see `serve`).
//!
//! Invariant: the world changes only between frames, on the thread that steps it: the file
//! watcher's and the server's threads only queue events and requests, and the Ctrl-C handler
//! only raises [`STOP`]. A stop ends the run after the frame in progress, so the statistics,
//! the summary and `--save` see a whole frame.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use strata::World;
use strata_script::{Place, Reload};

use crate::serve::Explorer;

/// Raised by Ctrl-C during a live run.
static STOP: AtomicBool = AtomicBool::new(false);

/// How long a burst of file events must have been quiet (an editor's save writes, renames and
/// touches) before the place is read again.
const SETTLE: Duration = Duration::from_millis(100);

/// A live run's clock and file watcher.
pub(crate) struct Live {
    frame: Duration,
    next: Instant,
    watch: Option<Watch>,
    explorer: Option<Explorer>,
    /// The explorer's time on the frame loop's thread so far.
    explorer_time: Duration,
}

impl Live {
    /// A live run of frames `frame_rate` a second, watching the place at `root` when `watch`,
    /// serving the explorer at `serve` when given (its address, with a warning for one other
    /// than loopback, is written to `err`). Ctrl-C stops it from now on.
    pub(crate) fn start(
        frame_rate: f64,
        root: &Path,
        watch: bool,
        serve: Option<std::net::SocketAddr>,
        err: &mut dyn Write,
    ) -> Result<Self, String> {
        STOP.store(false, Ordering::SeqCst);
        match ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst)) {
            // A handler set by an earlier live run of this process raises the same flag.
            Ok(()) | Err(ctrlc::Error::MultipleHandlers) => {}
            Err(error) => return Err(format!("cannot catch Ctrl-C: {error}")),
        }
        let watch = if watch {
            Some(Watch::start(root)?)
        } else {
            None
        };
        let explorer = match serve {
            None => None,
            Some(address) => {
                let explorer = Explorer::start(address)?;
                let address = explorer.address();
                if !address.ip().is_loopback() {
                    let _ = writeln!(
                        err,
                        "warning: serving on {address}, which other machines can reach: the API \
                         reads and edits the world without asking who is calling"
                    );
                }
                let _ = writeln!(err, "explorer: http://{address}/");
                Some(explorer)
            }
        };
        Ok(Self {
            frame: Duration::from_secs_f64(1.0 / frame_rate),
            next: Instant::now(),
            watch,
            explorer,
            explorer_time: Duration::ZERO,
        })
    }

    /// The gap before a frame: waits for the frame's time, reloads changed files, answers the
    /// explorer's requests; returns whether to step a frame now (not while the explorer holds
    /// the run paused).
    pub(crate) fn gap(
        &mut self,
        place: &mut Place,
        world: &mut World,
        json: bool,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> bool {
        self.pace();
        self.reload(place, world, json, out, err);
        match &mut self.explorer {
            Some(explorer) => {
                let started = Instant::now();
                let step = explorer.serve(world, place);
                self.explorer_time += started.elapsed();
                step
            }
            None => true,
        }
    }

    /// After a frame that took `took`: the explorer records it.
    pub(crate) fn frame_done(&mut self, world: &World, took: Duration) {
        if let Some(explorer) = &mut self.explorer {
            let started = Instant::now();
            explorer.frame_done(world, took);
            self.explorer_time += started.elapsed();
        }
    }

    /// The time the explorer's work took on the frame loop's thread (answering requests,
    /// recording frames), when it serves.
    pub(crate) fn explorer_time(&self) -> Option<Duration> {
        self.explorer.as_ref().map(|_| self.explorer_time)
    }

    /// Whether Ctrl-C asked the run to end.
    pub(crate) fn stopped(&self) -> bool {
        STOP.load(Ordering::SeqCst)
    }

    /// Waits for the next frame's time. A run that fell behind (a long frame) starts counting
    /// again from now instead of hurrying to catch up.
    fn pace(&mut self) {
        let now = Instant::now();
        if self.next > now {
            std::thread::sleep(self.next - now);
            self.next += self.frame;
        } else {
            self.next = now + self.frame;
        }
    }

    /// Reloads the place into the world when its files changed since the last look, and says
    /// what the reload did: what took effect where script output goes (`out`, or `err` beside
    /// a JSON document), refusals and what a running world does not take on `err`.
    fn reload(
        &mut self,
        place: &mut Place,
        world: &mut World,
        json: bool,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) {
        let Some(watch) = &mut self.watch else { return };
        if !watch.settled(err) {
            return;
        }
        // Files touched but not changed (saved again as they were) read as the last look did.
        let newer = Place::open(&watch.root).map_err(|e| e.to_string());
        if watch.seen.as_ref() == Some(&newer) {
            return;
        }
        watch.seen = Some(newer.clone());
        let newer = match newer {
            Ok(newer) => newer,
            Err(error) => {
                let _ = writeln!(err, "error: reload: {error} (the place runs on as it was)");
                return;
            }
        };
        let reload = place.reload(world, newer);
        let applied: &mut dyn Write = if json { &mut *err } else { &mut *out };
        report_applied(&reload, applied);
        report_refused(&reload, err);
    }
}

/// Writes what took effect in a reload.
fn report_applied(reload: &Reload, out: &mut dyn Write) {
    for line in &reload.applied {
        let _ = writeln!(out, "reloaded {line}");
    }
    if let Some(sync) = &reload.sync {
        let text = sync.to_string();
        if !text.trim().is_empty() {
            let _ = writeln!(out, "definitions synced:");
            for line in text.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
}

/// Writes what a reload refused or left alone.
fn report_refused(reload: &Reload, err: &mut dyn Write) {
    for refusal in &reload.refused {
        let _ = writeln!(
            err,
            "error: {refusal} (the previous version keeps running until the file is fixed)"
        );
    }
    for line in &reload.ignored {
        let _ = writeln!(err, "warning: {line}");
    }
}

/// The place folder's file events, settled: a change is reported once the folder has been
/// quiet for [`SETTLE`].
struct Watch {
    root: PathBuf,
    events: Receiver<notify::Result<Event>>,
    /// When the last change arrived, while one waits to be reported.
    pending: Option<Instant>,
    /// The place as the last reload read it (or why it could not).
    seen: Option<Result<Place, String>>,
    /// Kept for its thread: dropping it stops the events.
    _watcher: RecommendedWatcher,
}

impl Watch {
    fn start(root: &Path) -> Result<Self, String> {
        let (sender, events) = channel();
        let mut watcher = notify::recommended_watcher(sender)
            .map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
        watcher
            .watch(root, RecursiveMode::Recursive)
            .map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
        Ok(Self {
            root: root.to_owned(),
            events,
            pending: None,
            seen: None,
            _watcher: watcher,
        })
    }

    /// Whether files of the place changed and have been quiet for [`SETTLE`] since. Reading a
    /// file is not a change; a watcher error is reported on `err` and counts as one, so the
    /// place is read again.
    fn settled(&mut self, err: &mut dyn Write) -> bool {
        loop {
            match self.events.try_recv() {
                Ok(Ok(event)) => {
                    if !matches!(event.kind, EventKind::Access(_)) {
                        self.pending = Some(Instant::now());
                    }
                }
                Ok(Err(error)) => {
                    let _ = writeln!(err, "warning: watching {}: {error}", self.root.display());
                    self.pending = Some(Instant::now());
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        match self.pending {
            Some(last) if last.elapsed() >= SETTLE => {
                self.pending = None;
                true
            }
            _ => false,
        }
    }
}
