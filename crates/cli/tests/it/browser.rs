//! The explorer page in a real browser: headless Chromium, driven over the DevTools protocol,
//! loads the page served for the stress place (100,000 entities), pauses the run with the
//! page's button, selects an instance through the query console, edits a field in the
//! inspector, and the change is read back through the API. The page's screenshot is saved as
//! `explorer.png` in the test's scratch folder (the guide's image is one of these).
//!
//! Without Chromium (the Debian `chromium` package; `.ci/run` installs it) the test says so and
//! passes without running.

use crate::common::{example, http, scratch};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|dir| Path::new(dir).join(name))
                .find(|path| path.is_file())
        })
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads `reader` line by line until one contains `marker`; returns the rest of that line,
/// and keeps draining the stream so the process never blocks on it.
fn after_marker(reader: impl Read + Send + 'static, marker: &str) -> String {
    let mut lines = BufReader::new(reader);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "the process ended before printing {marker:?}"
        );
        if let Some(at) = line.find(marker) {
            let rest = line[at + marker.len()..].trim().to_owned();
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut lines, &mut std::io::sink());
            });
            return rest;
        }
    }
}

/// A GET's body as JSON.
fn get_json(address: &str, path: &str) -> Value {
    serde_json::from_str(&http(address, "GET", path, "").1).unwrap_or(Value::Null)
}

/// A minimal WebSocket client: text frames out (masked), text frames in.
struct Socket(TcpStream);

impl Socket {
    fn connect(url: &str) -> Self {
        let rest = url.strip_prefix("ws://").unwrap();
        let (host, path) = rest.split_at(rest.find('/').unwrap());
        let mut stream = TcpStream::connect(host).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: c3RyYXRhLWV4cGxvcmVyIQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        // The handshake's answer ends with an empty line.
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        assert!(
            String::from_utf8_lossy(&head).starts_with("HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        Self(stream)
    }

    fn send(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n < 65536 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x37u8, 0xfa, 0x21, 0x3d];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.0.write_all(&frame).unwrap();
    }

    /// The next text message (fragments joined).
    fn receive(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.0.read_exact(&mut head).unwrap();
            let length = match head[1] & 0x7f {
                126 => {
                    let mut n = [0u8; 2];
                    self.0.read_exact(&mut n).unwrap();
                    u64::from(u16::from_be_bytes(n))
                }
                127 => {
                    let mut n = [0u8; 8];
                    self.0.read_exact(&mut n).unwrap();
                    u64::from_be_bytes(n)
                }
                n => u64::from(n),
            };
            let mut payload = vec![0u8; length as usize];
            self.0.read_exact(&mut payload).unwrap();
            match head[0] & 0x0f {
                0x0 | 0x1 => message.extend_from_slice(&payload),
                // Pings and other control frames carry nothing the test needs.
                _ => continue,
            }
            if head[0] & 0x80 != 0 {
                return String::from_utf8(message).unwrap();
            }
        }
    }
}

/// The DevTools protocol over a page's socket.
struct Page {
    socket: Socket,
    next: u64,
}

impl Page {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.socket
            .send(&json!({ "id": id, "method": method, "params": params }).to_string());
        loop {
            let message: Value = serde_json::from_str(&self.socket.receive()).unwrap();
            if message["id"] == id {
                assert!(message["error"].is_null(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// Evaluates `script` in the page (awaiting a promise) and returns its value.
    fn eval(&mut self, script: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": script, "awaitPromise": true, "returnByValue": true }),
        );
        assert!(result["exceptionDetails"].is_null(), "{script}: {result}");
        result["result"]["value"].clone()
    }

    /// Waits until `script` evaluates to true.
    fn wait_for(&mut self, script: &str) {
        let started = Instant::now();
        while self.eval(script) != json!(true) {
            assert!(started.elapsed() < PATIENCE, "never true: {script}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|c| *c != b'=').map(value).collect();
    digits
        .chunks(4)
        .flat_map(|chunk| {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
            let bytes = n.to_be_bytes();
            bytes[1..chunk.len()].to_vec()
        })
        .collect()
}

#[test]
fn the_explorer_page_selects_and_edits_an_instance_of_the_stress_place() {
    let Some(browser) = chromium() else {
        println!("skipped: no Chromium found (install the Debian package `chromium`)");
        return;
    };
    let scratch = scratch("browser");
    let stress = example("stress");
    let mut run = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("run")
        .arg(&stress)
        .args(["--serve", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = run.stderr.take().unwrap();
    let run = Killed(run);
    let address = after_marker(err, "explorer: http://")
        .trim_end_matches('/')
        .to_owned();

    let mut chrome = Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--window-size=1400,800",
            "--remote-debugging-port=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.join("profile").display()
        ))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = chrome.stderr.take().unwrap();
    let chrome = Killed(chrome);
    let endpoint = after_marker(err, "DevTools listening on ");
    let debugger = endpoint
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let targets = get_json(&debugger, "/json/list");
    let page_url = targets
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "page")
        .and_then(|t| t["webSocketDebuggerUrl"].as_str())
        .unwrap()
        .to_owned();
    let mut page = Page {
        socket: Socket::connect(&page_url),
        next: 0,
    };
    page.call("Page.enable", json!({}));
    page.call(
        "Page.navigate",
        json!({ "url": format!("http://{address}/") }),
    );
    // The tree's first page and the systems table arrive.
    page.wait_for("document.querySelectorAll('#roots .node').length > 0");
    page.wait_for("document.querySelectorAll('#systems tr').length > 1");
    // Pause with the page's button, so the systems do not move what the test edits.
    page.eval("document.getElementById('pause').click()");
    page.wait_for("document.getElementById('state').textContent === 'paused'");
    // A query in the console, and its first match selected.
    page.eval(
        "document.getElementById('spec').value = JSON.stringify({ with: ['Position'], limit: 10 });
         document.getElementById('run').click()",
    );
    page.wait_for("document.querySelectorAll('#results .node').length === 10");
    let id = page.eval(
        "const row = document.querySelector('#results .node'); row.click(); Number(row.dataset.id)",
    );
    let id = id.as_u64().unwrap();
    page.wait_for(
        "document.querySelector('#detail input[data-component=\"Position\"][data-field=\"x\"]') !== null",
    );
    // The edit, as a user makes it: a new value typed into the field, then committed.
    page.eval(
        "const input = document.querySelector('#detail input[data-component=\"Position\"][data-field=\"x\"]');
         input.focus(); input.value = '4242.25';
         input.dispatchEvent(new Event('change')); input.blur(); true",
    );
    let started = Instant::now();
    let x = loop {
        let instance = get_json(&address, &format!("/api/v1/instances/{id}"));
        let x = instance["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "Position")
            .map(|c| c["fields"][0]["value"].clone());
        if x == Some(json!(4242.25)) || started.elapsed() > PATIENCE {
            break x;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(x, Some(json!(4242.25)), "the page's edit reached the world");
    page.wait_for("document.getElementById('message').textContent === ''");
    // The tree opens a level on demand.
    page.eval("document.querySelector('#roots .toggle').click(); true");
    page.wait_for("document.querySelectorAll('#roots ul .node').length > 0");
    // The inspector shows it too, and the picture is kept.
    page.wait_for("document.querySelector('#detail input[data-field=\"x\"]').value === '4242.25'");
    let shot = page.call("Page.captureScreenshot", json!({ "format": "png" }));
    let png = base64(shot["data"].as_str().unwrap());
    assert_eq!(&png[1..4], b"PNG");
    let file = scratch.join("explorer.png");
    std::fs::write(&file, png).unwrap();
    println!("screenshot: {}", file.display());
    drop(chrome);
    drop(run);
}
