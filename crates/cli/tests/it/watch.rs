//! `strata run --watch`: a running place (the binary, in real time) takes its files' new
//! versions between frames; a broken file keeps the old version and is reported with its file
//! and line; Ctrl-C ends the run cleanly, saving with `--save`.

use crate::common::scratch;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// How long a change may take to show before a test fails (the run is paced at 60 frames a
/// second, and a change is read once the folder has been quiet for a tenth of a second).
const PATIENCE: Duration = Duration::from_secs(10);

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn say(word: &str) -> String {
    format!("return system {{ run = function(world) print('{word}') end }}")
}

/// A live run of the binary, its output read line by line as it comes.
struct Running {
    child: Child,
    out: Receiver<String>,
    err: Receiver<String>,
    /// Every line of standard output so far.
    seen: Vec<String>,
}

fn lines(reader: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    receive
}

impl Running {
    fn start(root: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("run")
            .arg(root)
            .args(["--watch", "--threads", "1"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = lines(child.stdout.take().unwrap());
        let err = lines(child.stderr.take().unwrap());
        Self {
            child,
            out,
            err,
            seen: Vec::new(),
        }
    }

    /// Reads standard output until a line equal to `want`; returns how many lines came before
    /// it since this call started.
    fn until(&mut self, want: &str) -> usize {
        let started = Instant::now();
        let mut before = 0;
        while started.elapsed() < PATIENCE {
            if let Ok(line) = self.out.recv_timeout(Duration::from_millis(50)) {
                self.seen.push(line.clone());
                if line == want {
                    return before;
                }
                before += 1;
            }
        }
        panic!(
            "no line {want:?} in {PATIENCE:?}; last lines: {:?}",
            self.tail()
        );
    }

    /// Reads standard error until a line containing `want`, and returns it.
    fn error(&mut self, want: &str) -> String {
        let started = Instant::now();
        while started.elapsed() < PATIENCE {
            if let Ok(line) = self.err.recv_timeout(Duration::from_millis(50))
                && line.contains(want)
            {
                return line;
            }
        }
        panic!("no error naming {want:?} in {PATIENCE:?}");
    }

    fn tail(&self) -> &[String] {
        &self.seen[self.seen.len().saturating_sub(5)..]
    }

    /// Interrupts the run as Ctrl-C does, and returns its exit code and the rest of its
    /// standard output.
    fn interrupt(mut self) -> (Option<i32>, Vec<String>) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let code = self.child.wait().unwrap().code();
        let rest: Vec<String> = self.out.try_iter().collect();
        (code, rest)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_changed_system_takes_effect_within_a_few_frames_and_a_broken_one_keeps_the_old_version() {
    let root = scratch("system").join("place");
    write(&root, "place.toml", "frame_rate = 60\nseed = 2\n");
    write(&root, "systems/say.luau", &say("v1"));
    let mut run = Running::start(&root, &["--frames", "3000"]);
    run.until("v1");
    write(&root, "systems/say.luau", &say("v2"));
    let frames = run.until("v2");
    assert!(frames <= 40, "v2 ran {frames} frames after the change");
    assert!(
        run.seen
            .contains(&"reloaded systems/say.luau: replaced (its state starts afresh)".to_owned()),
        "{:?}",
        run.tail()
    );
    // A syntax error on line 2: reported with the file and line; v2 runs on.
    write(
        &root,
        "systems/say.luau",
        "return system { run = function(world)\n  print('v3'\nend }",
    );
    let error = run.error("systems/say.luau:");
    assert!(error.contains("previous version keeps running"), "{error}");
    let after = run.seen.len();
    run.until("v2");
    run.until("v2");
    assert!(
        run.seen[after..].iter().all(|l| l == "v2"),
        "{:?}",
        run.tail()
    );
    // Fixed: picked up.
    write(&root, "systems/say.luau", &say("v4"));
    run.until("v4");
    // A new system file adds a system, a deleted one removes it.
    write(&root, "systems/hello.luau", &say("hello"));
    run.until("hello");
    std::fs::remove_file(root.join("systems/say.luau")).unwrap();
    run.until("reloaded systems/say.luau: removed");
    let (code, rest) = run.interrupt();
    assert_eq!(code, Some(0), "Ctrl-C ends the run cleanly");
    assert!(!rest.iter().any(|l| l == "v4"), "say is gone: {rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("world hash")),
        "the summary is printed: {rest:?}"
    );
}

#[test]
fn a_changed_component_is_redefined_with_its_adoption_reported() {
    let root = scratch("component").join("place");
    write(&root, "place.toml", "frame_rate = 60\nseed = 2\n");
    write(
        &root,
        "components/Counter.luau",
        "return component { fields = { n = integer(0) } }",
    );
    write(
        &root,
        "systems/count.luau",
        "return system { run = function(world)
            for _, c in world:query({ with = { Counter } }) do
                c.n += 1
                if c.n == 5 then print('five') end
            end
        end }",
    );
    write(
        &root,
        "setup.luau",
        "Instance.new('Part', world.workspace):AddComponent(Counter)",
    );
    let save = root.parent().unwrap().join("world.strata");
    let mut run = Running::start(&root, &["--save", save.to_str().unwrap()]);
    run.until("five");
    write(
        &root,
        "components/Counter.luau",
        "return component { fields = { n = integer(0), label = text('x') } }",
    );
    run.until("reloaded components/Counter.luau: redefined");
    run.until("definitions synced:");
    // A broken definition: reported, and the rows keep counting under the old one.
    write(
        &root,
        "components/Counter.luau",
        "return component { fields = { n = } }",
    );
    run.error("components/Counter.luau");
    write(&root, "setup.luau", "print('changed')");
    run.error("setup.luau changed");
    let (code, _) = run.interrupt();
    assert_eq!(code, Some(0));
    let world = strata::World::load_from_path(&save).expect("Ctrl-C saved the world");
    let counter = world.component("Counter").unwrap();
    assert!(
        world.field(counter, "label").is_ok(),
        "saved with the new definition"
    );
}
