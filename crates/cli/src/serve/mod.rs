//! `strata run --serve [ADDR]`: the explorer's HTTP server. A JSON API (version 1, under
//! `/api/v1/`) reads the running world and edits it; `/api/v1/events` streams a summary of every
//! frame as server-sent events; `/` serves the explorer page, which ships in the binary.
//!
//! Invariant: the world is touched only by the thread that steps it. The server runs on a
//! thread of its own (a one-thread tokio runtime); a request that needs the world becomes a
//! [`Call`] on a channel, which the frame loop answers between two frames ([`Explorer`]), so
//! every edit lands between frames and the loop never waits on a client: it takes what is
//! queued and goes on. A handler waits for its answer at most [`ANSWER_TIMEOUT`]. Requests are
//! bounded: bodies by [`MAX_BODY`], the rate by [`MAX_RATE`] a second, open event streams by
//! [`MAX_STREAMS`], pages by [`explorer::MAX_PAGE`]; whatever is refused gets a 4xx answer
//! with a JSON error body and changes nothing.

mod explorer;
mod json;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{
    DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request as HttpRequest, State,
};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value as JsonValue, json};
use tokio::sync::{broadcast, oneshot};

pub(crate) use explorer::Explorer;

/// The API's version, the `N` of `/api/vN/`.
pub(crate) const API_VERSION: u32 = 1;

/// The largest request body taken (a component's values, a query).
const MAX_BODY: usize = 64 * 1024;

/// Requests a second the server takes, all clients together; past it, 429.
const MAX_RATE: u32 = 500;

/// How long a handler waits for the frame loop's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Frame summaries kept for a slow event-stream client before it misses some.
const EVENT_BACKLOG: usize = 64;

/// Event streams open at once, all clients together; past it, 503.
const MAX_STREAMS: usize = 16;

/// The explorer page, self-contained (its script and style are inline).
const PAGE: &str = include_str!("page.html");

/// What a request asks of the world.
#[derive(Debug)]
pub(crate) enum Request {
    World,
    Hash,
    Children {
        parent: Option<u64>,
        offset: usize,
        limit: usize,
    },
    Instance(u64),
    Query(JsonValue),
    Components,
    Systems,
    Frames(usize),
    Schedule,
    Write {
        id: u64,
        component: String,
        field: String,
        value: JsonValue,
    },
    Add {
        id: u64,
        component: String,
        values: JsonValue,
    },
    Remove {
        id: u64,
        component: String,
    },
    Create(JsonValue),
    Destroy(u64),
    Reparent {
        id: u64,
        parent: JsonValue,
    },
    Pause,
    Resume,
    Step(u64),
    Snapshot,
    Restore(u64),
}

/// Why a request was refused: the HTTP status and what to say.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

impl Refusal {
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::CONFLICT,
            message: message.into(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

/// The frame loop's answer to a request.
pub(crate) type Answer = Result<JsonValue, Refusal>;

/// A request on its way to the frame loop, with where its answer goes.
pub(crate) struct Call {
    pub(crate) request: Request,
    pub(crate) answer: oneshot::Sender<Answer>,
}

/// The server, seen from the frame loop: the calls to answer and the event stream to feed.
pub(crate) struct Server {
    pub(crate) calls: Receiver<Call>,
    pub(crate) frames: broadcast::Sender<String>,
    pub(crate) address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `address` and serves from a thread of its own.
    pub(crate) fn start(address: SocketAddr) -> Result<Self, String> {
        let listener =
            std::net::TcpListener::bind(address).map_err(|e| format!("--serve {address}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("--serve {address}: {e}"))?;
        let address = listener
            .local_addr()
            .map_err(|e| format!("--serve {address}: {e}"))?;
        let (send, calls) = channel();
        let (frames, _) = broadcast::channel(EVENT_BACKLOG);
        let (stop, stopped) = oneshot::channel::<()>();
        let shared = Shared {
            calls: send,
            frames: frames.clone(),
            rate: Mutex::new(Rate::new()),
            streams: AtomicUsize::new(0),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("--serve: {e}"))?;
        let thread = std::thread::Builder::new()
            .name("strata-serve".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, router(shared))
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .map_err(|e| format!("--serve: {e}"))?;
        Ok(Self {
            calls,
            frames,
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What every handler shares.
struct Shared {
    calls: Sender<Call>,
    frames: broadcast::Sender<String>,
    rate: Mutex<Rate>,
    /// Event streams open now.
    streams: AtomicUsize,
}

/// A one-second window counting requests.
struct Rate {
    window: Instant,
    count: u32,
}

impl Rate {
    fn new() -> Self {
        Self {
            window: Instant::now(),
            count: 0,
        }
    }

    /// Counts a request; whether it is within the rate.
    fn take(&mut self) -> bool {
        if self.window.elapsed() >= Duration::from_secs(1) {
            self.window = Instant::now();
            self.count = 0;
        }
        self.count += 1;
        self.count <= MAX_RATE
    }
}

type Shares = Arc<Shared>;

fn router(shared: Shared) -> Router {
    let shared = Arc::new(shared);
    let v1 = Router::new()
        .route("/world", get(world))
        .route("/hash", get(hash))
        .route("/instances", get(children).post(create))
        .route("/instances/{id}", get(instance).delete(destroy))
        .route("/instances/{id}/parent", post(reparent))
        .route("/instances/{id}/components", post(add))
        .route(
            "/instances/{id}/components/{component}",
            axum::routing::delete(remove),
        )
        .route(
            "/instances/{id}/components/{component}/{field}",
            post(write),
        )
        .route("/query", post(query))
        .route("/components", get(components))
        .route("/systems", get(systems))
        .route("/frames", get(frames))
        .route("/schedule", get(schedule))
        .route("/pause", post(pause))
        .route("/resume", post(resume))
        .route("/step", post(step))
        .route("/snapshots", post(snapshot))
        .route("/snapshots/{id}/restore", post(restore))
        .route("/events", get(events));
    Router::new()
        .route("/", get(page))
        .nest(&format!("/api/v{API_VERSION}"), v1)
        .fallback(|| async { Refusal::not_found("no such route") })
        .layer(middleware::from_fn_with_state(
            Arc::clone(&shared),
            limit_rate,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared)
}

async fn limit_rate(State(shared): State<Shares>, request: HttpRequest, next: Next) -> Response {
    let within = shared
        .rate
        .lock()
        .map(|mut rate| rate.take())
        .unwrap_or(false);
    if within {
        next.run(request).await
    } else {
        Refusal {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!("more than {MAX_RATE} requests a second"),
        }
        .into_response()
    }
}

/// Hands a request to the frame loop and waits for its answer.
async fn ask(shared: &Shared, request: Request) -> Response {
    let (answer, answered) = oneshot::channel();
    if shared.calls.send(Call { request, answer }).is_err() {
        return Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the run has ended".into(),
        }
        .into_response();
    }
    match tokio::time::timeout(ANSWER_TIMEOUT, answered).await {
        Ok(Ok(Ok(body))) => Json(body).into_response(),
        Ok(Ok(Err(refusal))) => refusal.into_response(),
        Ok(Err(_)) | Err(_) => Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the frame loop did not answer in time".into(),
        }
        .into_response(),
    }
}

/// A JSON request body; one that is not JSON (or is too large) is refused with a 400.
struct Body(JsonValue);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = Refusal;

    async fn from_request(request: HttpRequest, state: &S) -> Result<Self, Refusal> {
        Json::<JsonValue>::from_request(request, state)
            .await
            .map(|Json(value)| Body(value))
            .map_err(|r| Refusal::bad(format!("the body is not JSON: {}", r.body_text())))
    }
}

impl Body {
    /// The body's `key`, required.
    fn take(mut self, key: &str, what: &str) -> Result<JsonValue, Refusal> {
        self.0
            .get_mut(key)
            .map(JsonValue::take)
            .ok_or_else(|| Refusal::bad(format!("`{key}` ({what}) is required")))
    }
}

/// A query string's parameters; ones that do not parse are refused with a 400.
struct Params<T>(T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Refusal> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Params(value))
            .map_err(|r| Refusal::bad(r.body_text()))
    }
}

/// What a path names: an instance (`{id}`, checked to be a number), and the component and
/// field under it when the route has them.
struct Target {
    id: u64,
    component: String,
    field: String,
}

#[derive(serde::Deserialize)]
struct TargetPath {
    id: String,
    #[serde(default)]
    component: String,
    #[serde(default)]
    field: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Target {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Refusal> {
        let Path(path) = Path::<TargetPath>::from_request_parts(parts, state)
            .await
            .map_err(|r| Refusal::bad(r.body_text()))?;
        let id = path
            .id
            .parse()
            .map_err(|_| Refusal::bad(format!("{:?} is not an id", path.id)))?;
        Ok(Target {
            id,
            component: path.component,
            field: path.field,
        })
    }
}

async fn page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(PAGE))
}

async fn world(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::World).await
}

async fn hash(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Hash).await
}

#[derive(serde::Deserialize)]
struct Page {
    parent: Option<u64>,
    offset: Option<usize>,
    limit: Option<usize>,
}

async fn children(State(shared): State<Shares>, Params(page): Params<Page>) -> Response {
    let request = Request::Children {
        parent: page.parent,
        offset: page.offset.unwrap_or(0),
        limit: page.limit.unwrap_or(explorer::DEFAULT_PAGE),
    };
    ask(&shared, request).await
}

async fn instance(State(shared): State<Shares>, on: Target) -> Response {
    ask(&shared, Request::Instance(on.id)).await
}

async fn destroy(State(shared): State<Shares>, on: Target) -> Response {
    ask(&shared, Request::Destroy(on.id)).await
}

async fn create(State(shared): State<Shares>, Body(spec): Body) -> Response {
    ask(&shared, Request::Create(spec)).await
}

async fn reparent(State(shared): State<Shares>, on: Target, body: Body) -> Response {
    match body.take("parent", "an instance id or null") {
        Ok(parent) => ask(&shared, Request::Reparent { id: on.id, parent }).await,
        Err(refusal) => refusal.into_response(),
    }
}

async fn add(State(shared): State<Shares>, on: Target, Body(body): Body) -> Response {
    let Some(component) = body.get("component").and_then(JsonValue::as_str) else {
        return Refusal::bad("`component` (a component's name) is required").into_response();
    };
    let request = Request::Add {
        id: on.id,
        component: component.to_owned(),
        values: body.get("values").cloned().unwrap_or(json!({})),
    };
    ask(&shared, request).await
}

async fn remove(State(shared): State<Shares>, on: Target) -> Response {
    let request = Request::Remove {
        id: on.id,
        component: on.component,
    };
    ask(&shared, request).await
}

async fn write(State(shared): State<Shares>, on: Target, body: Body) -> Response {
    let value = match body.take("value", "the field's new value") {
        Ok(value) => value,
        Err(refusal) => return refusal.into_response(),
    };
    let request = Request::Write {
        id: on.id,
        component: on.component,
        field: on.field,
        value,
    };
    ask(&shared, request).await
}

async fn query(State(shared): State<Shares>, Body(spec): Body) -> Response {
    ask(&shared, Request::Query(spec)).await
}

async fn components(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Components).await
}

async fn systems(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Systems).await
}

#[derive(serde::Deserialize)]
struct Last {
    last: Option<usize>,
}

async fn frames(State(shared): State<Shares>, Params(last): Params<Last>) -> Response {
    let last = last.last.unwrap_or(explorer::FRAMES_KEPT);
    ask(&shared, Request::Frames(last)).await
}

async fn schedule(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Schedule).await
}

async fn pause(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Pause).await
}

async fn resume(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Resume).await
}

#[derive(serde::Deserialize)]
struct Steps {
    frames: Option<u64>,
}

async fn step(State(shared): State<Shares>, Params(steps): Params<Steps>) -> Response {
    ask(&shared, Request::Step(steps.frames.unwrap_or(1))).await
}

async fn snapshot(State(shared): State<Shares>) -> Response {
    ask(&shared, Request::Snapshot).await
}

async fn restore(State(shared): State<Shares>, on: Target) -> Response {
    ask(&shared, Request::Restore(on.id)).await
}

/// One open event stream, counted in [`Shared::streams`] until it closes.
struct Stream {
    shared: Shares,
    frames: broadcast::Receiver<String>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.shared.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn events(State(shared): State<Shares>) -> Response {
    if shared.streams.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        shared.streams.fetch_sub(1, Ordering::SeqCst);
        return Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!("{MAX_STREAMS} event streams are open already"),
        }
        .into_response();
    }
    let frames = shared.frames.subscribe();
    let open = Stream { shared, frames };
    let stream = futures_util::stream::unfold(open, |mut open| async move {
        loop {
            match open.frames.recv().await {
                Ok(summary) => {
                    let event = Event::default().event("frame").data(summary);
                    return Some((Ok::<_, std::convert::Infallible>(event), open));
                }
                // A slow client misses summaries; it gets the next one.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_takes_its_bound_in_a_second_and_refuses_past_it() {
        let mut rate = Rate::new();
        assert!((0..MAX_RATE).all(|_| rate.take()));
        assert!(!rate.take());
        assert!(!rate.take());
        // A new window takes requests again.
        rate.window -= Duration::from_secs(1);
        assert!(rate.take());
    }
}
