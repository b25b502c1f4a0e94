//! `strata run --serve`: every route of the explorer's API against the binary serving on an
//! ephemeral loopback port, for what it answers and for each way a request is refused (a 4xx
//! with a JSON error body that changes nothing).

use crate::common::{example, http};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The binary serving a place; killed when dropped.
struct Served {
    child: Child,
    address: String,
}

impl Served {
    fn start(place: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args([
                "run",
                &example(place),
                "--threads",
                "1",
                "--serve",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let address = loop {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "the run ended");
            if let Some(rest) = line.trim().strip_prefix("explorer: http://") {
                break rest.trim_end_matches('/').to_owned();
            }
        };
        // Standard error drains on its own, so the run never blocks writing to it.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut err, &mut std::io::sink());
        });
        Self { child, address }
    }

    /// One request; the status and the body as JSON (or as a string when it is not JSON).
    fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let (status, text) = self.raw(method, path, body);
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    fn raw(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        http(&self.address, method, path, body.unwrap_or(""))
    }

    fn get(&self, path: &str) -> Value {
        let (status, value) = self.call("GET", path, None);
        assert_eq!(status, 200, "GET {path}: {value}");
        value
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let (status, value) = self.call("POST", path, Some(&body.to_string()));
        assert_eq!(status, 200, "POST {path} {body}: {value}");
        value
    }

    fn hash(&self) -> String {
        self.get("/api/v1/hash")["hash"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The id of the first instance holding `component`.
fn holder(served: &Served, component: &str) -> u64 {
    let page = served.post("/api/v1/query", json!({ "with": [component], "limit": 1 }));
    page["items"][0]["id"].as_u64().unwrap()
}

#[test]
fn every_read_route_answers() {
    let served = Served::start("tour");
    assert!(served.raw("GET", "/", None).1.contains("Strata explorer"));
    let world = served.get("/api/v1/world");
    assert_eq!(world["api"], 1);
    assert!(world["frame"].as_u64().is_some() && world["instances"].as_u64().unwrap() > 10);
    assert_eq!(served.hash().len(), 16);
    let roots = served.get("/api/v1/instances");
    assert_eq!(roots["items"][0]["class"], "DataModel");
    let game = roots["items"][0]["id"].as_u64().unwrap();
    let children = served.get(&format!("/api/v1/instances?parent={game}&limit=1"));
    assert_eq!(children["items"].as_array().unwrap().len(), 1);
    assert!(children["total"].as_u64().unwrap() >= 2, "{children}");
    let mover = holder(&served, "Position");
    let detail = served.get(&format!("/api/v1/instances/{mover}"));
    let position = detail["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Position")
        .unwrap();
    assert!(position["fields"][0]["value"].is_number(), "{position}");
    let found = served.post("/api/v1/query", json!({ "name": "drone", "limit": 2 }));
    assert!(found["total"].as_u64().unwrap() >= 1, "{found}");
    let since = served.post(
        "/api/v1/query",
        json!({ "with": ["Position"], "changed_since": 0 }),
    );
    assert!(since["total"].as_u64().unwrap() >= 1, "{since}");
    let components = served.get("/api/v1/components");
    let health = components["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Health")
        .unwrap();
    assert_eq!(health["file"], "components/Health.luau");
    assert!(health["source"].as_str().unwrap().contains("component"));
    let systems = served.get("/api/v1/systems");
    let moving = systems["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "move")
        .unwrap();
    assert_eq!(moving["stage"], "Frame(Update)");
    assert!(moving["runs"].as_u64().unwrap() > 0);
    // The last 5 frames' timings, once 5 frames have run.
    let started = Instant::now();
    while served.get("/api/v1/world")["frame"].as_u64().unwrap() < 6 {
        assert!(started.elapsed() < Duration::from_secs(20), "frames run");
        std::thread::sleep(Duration::from_millis(20));
    }
    let frames = served.get("/api/v1/frames?last=5");
    let frames = frames["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 5);
    assert!(
        frames
            .windows(2)
            .all(|w| w[1]["frame"].as_u64() > w[0]["frame"].as_u64()),
        "{frames:?}"
    );
    let schedule = served.get("/api/v1/schedule");
    assert!(schedule["diagnostics"].is_array() && schedule["conflicts"].is_array());
}

#[test]
fn edits_land_between_frames_and_do_what_they_say() {
    let served = Served::start("tour");
    served.post("/api/v1/pause", json!({}));
    let frame = served.get("/api/v1/world")["frame"].as_u64().unwrap();
    let mover = holder(&served, "Position");
    let written = served.post(
        &format!("/api/v1/instances/{mover}/components/Position/x"),
        json!({ "value": 1234.5 }),
    );
    assert_eq!(written["changed"], true);
    let detail = served.get(&format!("/api/v1/instances/{mover}"));
    assert!(detail.to_string().contains("1234.5"), "{detail}");
    assert_eq!(
        served.get("/api/v1/world")["frame"].as_u64().unwrap(),
        frame,
        "no frame ran while paused"
    );
    // Snapshot, then create, name, reparent, give a component, take it, destroy.
    let snapshot = served.post("/api/v1/snapshots", json!({}))["snapshot"]
        .as_u64()
        .unwrap();
    let instances = served.get("/api/v1/world")["instances"].clone();
    let game = served.get("/api/v1/instances")["items"][0]["id"]
        .as_u64()
        .unwrap();
    let folder = served.post(
        "/api/v1/instances",
        json!({ "class": "Folder", "parent": game, "name": "Made" }),
    )["id"]
        .as_u64()
        .unwrap();
    let part = served.post("/api/v1/instances", json!({ "class": "Part" }))["id"]
        .as_u64()
        .unwrap();
    served.post(
        &format!("/api/v1/instances/{part}/parent"),
        json!({ "parent": folder }),
    );
    assert_eq!(
        served.get(&format!("/api/v1/instances/{part}"))["parent"],
        folder
    );
    served.post(
        &format!("/api/v1/instances/{part}/components"),
        json!({ "component": "Health", "values": { "current": 5.0 } }),
    );
    let health = served.get(&format!("/api/v1/instances/{part}"));
    assert!(health.to_string().contains("\"Health\""), "{health}");
    let (status, removed) = served.call(
        "DELETE",
        &format!("/api/v1/instances/{part}/components/Health"),
        None,
    );
    assert_eq!((status, removed["removed"].clone()), (200, json!(true)));
    let (status, destroyed) = served.call("DELETE", &format!("/api/v1/instances/{folder}"), None);
    assert_eq!(status, 200);
    assert_eq!(destroyed["destroyed"], json!([folder, part]));
    // Stepping runs exactly the frames asked for.
    served.post("/api/v1/step?frames=2", json!({}));
    let started = Instant::now();
    while served.get("/api/v1/world")["frame"].as_u64().unwrap() < frame + 2 {
        assert!(started.elapsed() < Duration::from_secs(10), "the steps ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        served.get("/api/v1/world")["frame"].as_u64().unwrap(),
        frame + 2
    );
    // The restore takes all of it back (ids issued since stay issued, so the hash, which
    // covers the id counter, is not compared).
    served.post(&format!("/api/v1/snapshots/{snapshot}/restore"), json!({}));
    let world = served.get("/api/v1/world");
    assert_eq!(world["frame"].as_u64().unwrap(), frame);
    assert_eq!(world["instances"], instances);
    assert_eq!(
        served.get(&format!("/api/v1/instances/{mover}")),
        detail,
        "the mover as it was"
    );
    served.post("/api/v1/resume", json!({}));
}

#[test]
fn refused_requests_get_a_json_error_and_change_nothing() {
    let served = Served::start("tour");
    let (status, body) = served.call("POST", "/api/v1/step", Some("{}"));
    assert_eq!(status, 409, "stepping a running world: {body}");
    served.post("/api/v1/pause", json!({}));
    let hash = served.hash();
    let mover = holder(&served, "Position");
    let game = served.get("/api/v1/instances")["items"][0]["id"]
        .as_u64()
        .unwrap();
    let huge = format!("{{\"value\": \"{}\"}}", "x".repeat(70_000));
    let write = format!("/api/v1/instances/{mover}/components/Position/x");
    for (method, path, body, status) in [
        ("POST", write.as_str(), Some("{not json"), 400),
        ("POST", write.as_str(), Some("{\"value\": \"fast\"}"), 400),
        ("POST", write.as_str(), Some("{}"), 400),
        ("POST", write.as_str(), Some(huge.as_str()), 400),
        (
            "POST",
            "/api/v1/instances/999999/components/Position/x",
            Some("{\"value\": 1}"),
            404,
        ),
        (
            "POST",
            &format!("/api/v1/instances/{mover}/components/Nothing/x"),
            Some("{\"value\": 1}"),
            404,
        ),
        (
            "POST",
            &format!("/api/v1/instances/{mover}/components/Position/w"),
            Some("{\"value\": 1}"),
            404,
        ),
        ("GET", "/api/v1/instances/abc", None, 400),
        ("GET", "/api/v1/instances/999999", None, 404),
        ("GET", "/api/v1/instances?limit=5000", None, 400),
        ("GET", "/api/v1/instances?parent=999999", None, 404),
        ("GET", "/api/v1/frames?last=100000", None, 400),
        (
            "POST",
            "/api/v1/query",
            Some("{\"with\": [\"Nothing\"]}"),
            404,
        ),
        (
            "POST",
            "/api/v1/query",
            Some("{\"with\": [\"Position\"], \"limit\": 5000}"),
            400,
        ),
        (
            "POST",
            "/api/v1/query",
            Some("{\"wiht\": [\"Position\"]}"),
            400,
        ),
        ("POST", "/api/v1/query", Some("[1, 2]"), 400),
        // The game is locked: it can be neither moved nor destroyed.
        ("DELETE", &format!("/api/v1/instances/{game}"), None, 409),
        (
            "POST",
            &format!("/api/v1/instances/{game}/parent"),
            Some(&format!("{{\"parent\": {mover}}}")),
            409,
        ),
        (
            "POST",
            &format!("/api/v1/instances/{mover}/components"),
            Some("{\"component\": \"Position\"}"),
            409,
        ),
        (
            "POST",
            "/api/v1/instances",
            Some("{\"class\": \"Spaceship\"}"),
            404,
        ),
        (
            "POST",
            "/api/v1/instances",
            Some("{\"class\": \"Part\", \"parent\": 999999}"),
            404,
        ),
        ("POST", "/api/v1/step?frames=0", Some("{}"), 400),
        ("POST", "/api/v1/snapshots/77/restore", Some("{}"), 404),
        ("GET", "/api/v2/world", None, 404),
    ] {
        let (got, answer) = served.call(method, path, body);
        assert_eq!(got, status, "{method} {path}: {answer}");
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{method} {path}: a JSON error body, not {answer}"
        );
        assert_eq!(served.hash(), hash, "{method} {path} changed the world");
    }
}

#[test]
fn the_event_stream_sends_a_summary_of_each_frame() {
    let served = Served::start("tour");
    let mut stream = TcpStream::connect(&served.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /api/v1/events HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut frames = Vec::new();
    let mut line = String::new();
    while frames.len() < 3 {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(data) = line.trim().strip_prefix("data: ") {
            let summary: Value = serde_json::from_str(data).unwrap();
            frames.push(summary["frame"].as_u64().unwrap());
            assert!(summary["systems"].is_array(), "{summary}");
        }
    }
    assert!(frames.windows(2).all(|w| w[1] > w[0]), "{frames:?}");
}

#[test]
fn requests_past_the_rate_are_refused() {
    let served = std::sync::Arc::new(Served::start("tour"));
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Eight clients at once, until one is refused (or far more requests than a second allows
    // have gone by).
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let served = std::sync::Arc::clone(&served);
            let refused = std::sync::Arc::clone(&refused);
            std::thread::spawn(move || {
                let mut statuses = Vec::new();
                for _ in 0..500 {
                    if refused.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let status = served.raw("GET", "/", None).0;
                    if status == 429 {
                        refused.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    statuses.push(status);
                }
                statuses
            })
        })
        .collect();
    let statuses: Vec<u16> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert!(statuses.contains(&429), "some requests are refused");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429));
}

#[test]
fn serving_beyond_loopback_is_only_on_request_and_warns() {
    let run = |serve: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["run", &example("tour"), "--frames", "2", "--serve", serve])
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let loopback = run("127.0.0.1:0");
    assert!(
        loopback.contains("explorer: http://127.0.0.1:"),
        "{loopback}"
    );
    assert!(!loopback.contains("warning"), "{loopback}");
    let everywhere = run("0.0.0.0:0");
    assert!(
        everywhere.contains("warning: serving on 0.0.0.0:"),
        "{everywhere}"
    );
    // A flag without an address serves on the loopback default.
    let help = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("127.0.0.1:7878"));
}

#[test]
fn clients_that_never_read_hold_no_frame_back_and_open_streams_are_bounded() {
    let served = Served::start("tour");
    // Sixteen event streams opened and never read.
    let idle: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut stream = TcpStream::connect(&served.address).unwrap();
            write!(
                stream,
                "GET /api/v1/events HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            stream
        })
        .collect();
    let frame = |served: &Served| served.get("/api/v1/world")["frame"].as_u64().unwrap();
    let before = frame(&served);
    let started = Instant::now();
    // The frames go on at their pace (60 a second) while the streams' buffers fill.
    while frame(&served) < before + 120 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the frame loop waited on clients that do not read"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A seventeenth stream is refused: its answer's status line says so (a stream taken
    // would answer 200 and never end, so only the status line is read).
    let started = Instant::now();
    loop {
        let mut stream = TcpStream::connect(&served.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET /api/v1/events HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut status = String::new();
        BufReader::new(stream).read_line(&mut status).unwrap();
        if status.contains(" 503 ") {
            break;
        }
        // The sixteen may not all be counted yet.
        assert!(started.elapsed() < Duration::from_secs(10), "{status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(idle);
}

#[test]
fn frames_waiting_to_be_stepped_are_bounded() {
    let served = Served::start("tour");
    served.post("/api/v1/pause", json!({}));
    let frame = served.get("/api/v1/world")["frame"].as_u64().unwrap();
    // A paused run steps its frames one gap at a time, at 60 a second: most of a thousand are
    // still waiting when the next request for a thousand more comes.
    served.post("/api/v1/step?frames=1000", json!({}));
    let (status, body) = served.call("POST", "/api/v1/step?frames=1000", Some("{}"));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("still to step"),
        "{body}"
    );
    served.post("/api/v1/resume", json!({}));
    assert!(served.get("/api/v1/world")["frame"].as_u64().unwrap() >= frame);
}
