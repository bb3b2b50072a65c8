//! A fake model server on loopback for the real agent CLIs (tests/suite/real_agents.rs):
//! std threads and a `TcpListener`, HTTP/1.1 with keep-alive, no TLS. It speaks three wire
//! APIs, streaming (server-sent events, chunked) or not, as the request asks (`"stream": true`):
//!
//! - Anthropic Messages, `POST …/v1/messages` (Claude Code; it adds `?beta=true`), and
//!   `POST …/v1/messages/count_tokens`;
//! - OpenAI Responses, `POST …/v1/responses` (Codex);
//! - OpenAI Chat Completions, `POST …/v1/chat/completions` (pi, with an `openai-completions`
//!   provider in its models.json);
//! - `GET …/v1/models` answers an empty list (clients that probe the catalog go on).
//!
//! One server serves a whole test binary ([`ModelServer::shared`]); tests are kept apart by
//! scopes: [`ModelServer::scope`] gives a [`Scope`] whose [`Scope::base_url`] is
//! `http://127.0.0.1:PORT/s/<name>`, and every request under that prefix is recorded in the
//! scope and answered from its FIFO of scripted [`Reply`]s. With the FIFO empty the answer is
//! the scope's default (plain text `"ok"` unless [`Scope::set_default`] changed it).
//!
//! Auxiliary requests do not consume the script: a request is *main* (a turn of the
//! conversation) unless [`is_auxiliary`] recognises it — `count_tokens`, `GET`s, and Claude
//! Code's side requests (a Messages request that does not stream, or asks for one token). Auxiliary
//! requests are recorded too and get the default reply; [`Scope::main_requests`] lists the
//! main ones only.
//!
//! Usage numbers follow Anthropic's split: `input` is the uncached input, `cache_read` and
//! `cache_write` the cached parts. On the OpenAI APIs (which have no cache-write figure)
//! `input_tokens`/`prompt_tokens` is `input + cache_read + cache_write` and
//! `cached_tokens` is `cache_read`.
//!
//! For manual exploration `POST /_script/<name>` with a JSON array of replies
//! (`{"text": "…"}`, `{"json": …}`, `{"error": [status, "message"]}`, `{"drop": true}`)
//! queues them in scope `<name>`, and `MODEL_SERVER_DUMP=<dir>` appends every request to
//! `<dir>/<name>.jsonl`.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// Token counts of a reply (Anthropic's split: `input` excludes the cached parts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input: 11,
            output: 7,
            cache_read: 5,
            cache_write: 3,
        }
    }
}

/// One scripted answer of the server.
#[derive(Clone, Debug)]
pub struct Reply {
    kind: ReplyKind,
    usage: Usage,
}

#[derive(Clone, Debug)]
enum ReplyKind {
    Text(String),
    Json(Value),
    ToolCall {
        name: String,
        input: Value,
        /// Text the model says before the call (Anthropic Messages only).
        text: Option<String>,
    },
    Error {
        status: u16,
        message: String,
        retry_after_s: Option<u64>,
    },
    DropStream,
}

impl Reply {
    /// An assistant message with this text (default usage, see [`Reply::usage`]).
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            kind: ReplyKind::Text(text.into()),
            usage: Usage::default(),
        }
    }

    /// Structured output: an assistant message whose text is `value` serialised. When a
    /// Messages request offers Claude Code's `StructuredOutput` tool, the reply calls that
    /// tool with `value` as its input instead (that is how `claude --json-schema` gets it).
    pub fn json(value: Value) -> Reply {
        Reply {
            kind: ReplyKind::Json(value),
            usage: Usage::default(),
        }
    }

    /// A call of the client's tool `name` with `input`, as a model that uses a tool answers:
    /// on Anthropic Messages a `tool_use` block (stop reason `tool_use`), on OpenAI Responses
    /// a `function_call` output item (its `arguments` the JSON text of `input`).
    pub fn tool_call(name: impl Into<String>, input: Value) -> Reply {
        Reply {
            kind: ReplyKind::ToolCall {
                name: name.into(),
                input,
                text: None,
            },
            usage: Usage::default(),
        }
    }

    /// An HTTP error with the API's own error body (`{"type":"error","error":{…}}` for
    /// Anthropic, `{"error":{"message":…}}` for OpenAI).
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        Reply {
            kind: ReplyKind::Error {
                status,
                message: message.into(),
                retry_after_s: None,
            },
            usage: Usage::default(),
        }
    }

    /// Sends the response head and the stream's first event, then closes the connection
    /// mid-stream (no terminating chunk), as a dropped connection would.
    pub fn drop_stream() -> Reply {
        Reply {
            kind: ReplyKind::DropStream,
            usage: Usage::default(),
        }
    }

    /// The same tool call with `text` said before it, in a text block of its own (Anthropic
    /// Messages: a model that explains what it is about to do).
    pub fn saying(mut self, said: impl Into<String>) -> Reply {
        if let ReplyKind::ToolCall { text, .. } = &mut self.kind {
            *text = Some(said.into());
        }
        self
    }

    /// The same error with a `Retry-After: <seconds>` header, as a provider's rate limit sends.
    pub fn retry_after(mut self, seconds: u64) -> Reply {
        if let ReplyKind::Error { retry_after_s, .. } = &mut self.kind {
            *retry_after_s = Some(seconds);
        }
        self
    }

    /// The same reply with these token counts.
    pub fn usage(mut self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Reply {
        self.usage = Usage {
            input,
            output,
            cache_read,
            cache_write,
        };
        self
    }
}

/// Which wire API a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    AnthropicMessages,
    AnthropicCountTokens,
    OpenAiResponses,
    OpenAiChat,
    Models,
    Other,
}

/// A request the server received, as recorded in its scope.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The path below the scope's prefix, e.g. `/v1/messages`.
    pub path: String,
    /// The query string without `?` (empty when there is none).
    pub query: String,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when empty or not JSON).
    pub body: Value,
    pub raw_body: Vec<u8>,
    pub api: Api,
    /// Whether this request was a turn of the conversation (see [`is_auxiliary`]).
    pub main: bool,
}

impl Request {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The body's `model`.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// Whether the client asked for a stream.
    pub fn stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool).unwrap_or(false)
    }

    /// A one-line JSON record of the request (for dumps and failure messages).
    pub fn to_json(&self) -> Value {
        json!({
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            "api": format!("{:?}", self.api),
            "main": self.main,
            "body": self.body,
        })
    }
}

/// Whether a request is a side request of the client rather than a turn of the conversation:
/// `count_tokens`, anything but `POST`, anything but the three conversation APIs, and a
/// Messages request that does not stream or asks for at most one token. Claude Code's
/// conversation loop always streams (with or without tools: `--tools ""` sends `tools: []`);
/// its side requests (the quota probe: `max_tokens: 1`, content `"quota"`; title and summary
/// requests) are non-streaming `messages.create` calls. In `-p` mode with
/// `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` none were seen.
pub fn is_auxiliary(method: &str, api: Api, body: &Value) -> bool {
    if method != "POST" {
        return true;
    }
    match api {
        Api::AnthropicMessages => {
            let streams = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
            let probe = body.get("max_tokens").and_then(Value::as_u64).is_some_and(|n| n <= 1);
            !streams || probe
        }
        Api::OpenAiResponses | Api::OpenAiChat => false,
        Api::AnthropicCountTokens | Api::Models | Api::Other => true,
    }
}

#[derive(Default)]
struct ScopeState {
    replies: VecDeque<Reply>,
    default: Option<Reply>,
    requests: Vec<Request>,
    /// The limit of [`Scope::limit_for`]: its window, when it ends (from the first main
    /// request it met), and the reply.
    limited: Option<(Duration, Option<std::time::Instant>, Reply)>,
    /// How many requests got it.
    refused: usize,
}

type Scopes = Arc<Mutex<HashMap<String, Arc<Mutex<ScopeState>>>>>;

/// The fake model server: listens on 127.0.0.1 until the process ends.
pub struct ModelServer {
    addr: SocketAddr,
    scopes: Scopes,
}

/// A test's part of the server: its URL prefix, script and recorded requests.
#[derive(Clone)]
pub struct Scope {
    name: String,
    base_url: String,
    state: Arc<Mutex<ScopeState>>,
}

impl ModelServer {
    /// The server of this test binary, started on first use.
    pub fn shared() -> &'static ModelServer {
        static SERVER: OnceLock<ModelServer> = OnceLock::new();
        SERVER.get_or_init(ModelServer::start)
    }

    /// Starts a server of its own on an ephemeral loopback port.
    pub fn start() -> ModelServer {
        ModelServer::start_on(0)
    }

    /// Starts a server on this loopback port (0: any).
    pub fn start_on(port: u16) -> ModelServer {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("binding the model server");
        let addr = listener.local_addr().expect("the model server's address");
        let scopes: Scopes = Arc::default();
        let accept_scopes = scopes.clone();
        std::thread::Builder::new()
            .name("model-server".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    let scopes = accept_scopes.clone();
                    let _ = std::thread::Builder::new()
                        .name("model-server-conn".into())
                        .spawn(move || serve_connection(stream, &scopes));
                }
            })
            .expect("spawning the model server");
        ModelServer { addr, scopes }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A fresh scope called `name` (letters, digits, `-`, `_`, `.`); a scope of the same name
    /// made before is replaced.
    pub fn scope(&self, name: &str) -> Scope {
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "scope name {name:?}"
        );
        let state = Arc::new(Mutex::new(ScopeState::default()));
        self.scopes.lock().unwrap().insert(name.to_owned(), state.clone());
        Scope {
            name: name.to_owned(),
            base_url: format!("{}/s/{name}", self.url()),
            state,
        }
    }
}

impl Scope {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `http://127.0.0.1:PORT/s/<name>`: append `/v1/…` paths to it.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Queues a reply for the next main request.
    pub fn reply(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().replies.push_back(reply);
        self
    }

    /// Queues replies, in order.
    pub fn replies(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.state.lock().unwrap().replies.extend(replies);
        self
    }

    /// The reply given when the queue is empty and to auxiliary requests (default: text "ok").
    pub fn set_default(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().default = Some(reply);
        self
    }

    /// Answers every main request with `reply` (a 429, say) for `window` from the first main
    /// request it meets, the scripted replies waiting behind it, as a provider's rate limit
    /// does (from the first call, so that how long the agents take to start does not matter).
    pub fn limit_for(&self, window: Duration, reply: Reply) -> &Self {
        self.state.lock().unwrap().limited = Some((window, None, reply));
        self
    }

    /// How many main requests the limit of [`Scope::limit_for`] refused.
    pub fn refused(&self) -> usize {
        self.state.lock().unwrap().refused
    }

    /// How many scripted replies are still queued.
    pub fn pending(&self) -> usize {
        self.state.lock().unwrap().replies.len()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The conversation requests only (see [`is_auxiliary`]).
    pub fn main_requests(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.main).collect()
    }

    /// All requests as pretty JSON, for assertion messages.
    pub fn dump(&self) -> String {
        let all: Vec<Value> = self.requests().iter().map(Request::to_json).collect();
        serde_json::to_string_pretty(&all).unwrap_or_default()
    }
}

fn parse_script(body: &Value) -> Vec<Reply> {
    let mut out = Vec::new();
    for item in body.as_array().into_iter().flatten() {
        let mut reply = if let Some(text) = item.get("text").and_then(Value::as_str) {
            Reply::text(text)
        } else if let Some(value) = item.get("json") {
            Reply::json(value.clone())
        } else if let Some([status, message]) = item.get("error").and_then(Value::as_array).map(Vec::as_slice) {
            Reply::error(status.as_u64().unwrap_or(500) as u16, message.as_str().unwrap_or(""))
        } else {
            Reply::drop_stream()
        };
        if let Some([a, b, c, d]) = item.get("usage").and_then(Value::as_array).map(Vec::as_slice) {
            let n = |v: &Value| v.as_u64().unwrap_or(0);
            reply = reply.usage(n(a), n(b), n(c), n(d));
        }
        out.push(reply);
    }
    out
}

// --- HTTP ----------------------------------------------------------------------------------

struct RawRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<RawRequest> {
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                let mut trailer = String::new();
                while reader.read_line(&mut trailer).ok()? > 2 {
                    trailer.clear();
                }
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some(RawRequest {
        method,
        target,
        headers,
        body,
    })
}

fn serve_connection(stream: TcpStream, scopes: &Scopes) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut out = stream;
    while let Some(raw) = read_request(&mut reader) {
        let keep_alive = !raw
            .headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
        match handle(raw, scopes, &mut out) {
            Ok(true) if keep_alive => continue,
            _ => break,
        }
    }
    let _ = out.shutdown(Shutdown::Both);
}

/// Answers one request; `Ok(false)` when the connection must close.
fn handle(raw: RawRequest, scopes: &Scopes, out: &mut TcpStream) -> std::io::Result<bool> {
    let (path, query) = match raw.target.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (raw.target.clone(), String::new()),
    };
    let body_json: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);

    if let Some(name) = path.strip_prefix("/_script/") {
        let state = scope_state(scopes, name);
        state.lock().unwrap().replies.extend(parse_script(&body_json));
        return respond_json(out, 200, &json!({"queued": true}));
    }
    let Some(rest) = path.strip_prefix("/s/") else {
        return respond_json(out, 404, &json!({"error": {"message": format!("no scope in {path}")}}));
    };
    let (name, sub) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let state = scope_state(scopes, name);

    let api = if sub.ends_with("/messages/count_tokens") {
        Api::AnthropicCountTokens
    } else if sub.ends_with("/messages") {
        Api::AnthropicMessages
    } else if sub.ends_with("/responses") {
        Api::OpenAiResponses
    } else if sub.ends_with("/chat/completions") {
        Api::OpenAiChat
    } else if sub.ends_with("/models") {
        Api::Models
    } else {
        Api::Other
    };
    let main = !is_auxiliary(&raw.method, api, &body_json);
    let request = Request {
        method: raw.method,
        path: sub,
        query,
        headers: raw.headers,
        body: body_json,
        raw_body: raw.body,
        api,
        main,
    };
    if let Ok(dir) = std::env::var("MODEL_SERVER_DUMP") {
        let _ = std::fs::create_dir_all(&dir);
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(std::path::Path::new(&dir).join(format!("{name}.jsonl")))
        {
            let _ = writeln!(f, "{}", request.to_json());
        }
    }
    let reply = {
        let mut s = state.lock().unwrap();
        s.requests.push(request.clone());
        let now = std::time::Instant::now();
        let limited = s
            .limited
            .as_mut()
            .filter(|_| main)
            .and_then(|(window, until, reply)| (now < *until.get_or_insert(now + *window)).then(|| reply.clone()));
        s.refused += usize::from(limited.is_some());
        let scripted = if main && limited.is_none() {
            s.replies.pop_front()
        } else {
            None
        };
        limited
            .or(scripted)
            .or_else(|| s.default.clone())
            .unwrap_or_else(|| Reply::text("ok"))
    };

    match api {
        Api::AnthropicMessages => anthropic::respond(out, &request, &reply),
        Api::AnthropicCountTokens => respond_json(out, 200, &json!({"input_tokens": 42})),
        Api::OpenAiResponses => responses::respond(out, &request, &reply),
        Api::OpenAiChat => chat::respond(out, &request, &reply),
        Api::Models => respond_json(out, 200, &json!({"object": "list", "data": [], "models": []})),
        Api::Other => respond_json(out, 404, &json!({"error": {"message": "not found"}})),
    }
}

fn scope_state(scopes: &Scopes, name: &str) -> Arc<Mutex<ScopeState>> {
    scopes.lock().unwrap().entry(name.to_owned()).or_default().clone()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn respond_json(out: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<bool> {
    respond_error(out, status, body, None)
}

/// A JSON response, with `Retry-After` when given (a rate limit's).
fn respond_error(out: &mut TcpStream, status: u16, body: &Value, retry_after_s: Option<u64>) -> std::io::Result<bool> {
    let body = body.to_string();
    let retry_after = retry_after_s.map_or_else(String::new, |s| format!("retry-after: {s}\r\n"));
    write!(
        out,
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nrequest-id: req_fake{}\r\nx-request-id: req_fake{}\r\n{retry_after}\r\n{body}",
        reason(status),
        body.len(),
        next_id(),
        next_id(),
    )?;
    out.flush()?;
    Ok(true)
}

/// A chunked `text/event-stream` response being written.
struct Sse<'a> {
    out: &'a mut TcpStream,
}

impl<'a> Sse<'a> {
    fn start(out: &'a mut TcpStream) -> std::io::Result<Sse<'a>> {
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nrequest-id: req_fake{}\r\nx-request-id: req_fake{}\r\n\r\n",
            next_id(),
            next_id()
        )?;
        out.flush()?;
        Ok(Sse { out })
    }

    /// Writes `event: <name>` (when given) and `data: <json>` as one chunk.
    fn event(&mut self, name: Option<&str>, data: &str) -> std::io::Result<()> {
        let mut frame = String::new();
        if let Some(name) = name {
            frame.push_str(&format!("event: {name}\n"));
        }
        frame.push_str(&format!("data: {data}\n\n"));
        write!(self.out, "{:x}\r\n{frame}\r\n", frame.len())?;
        self.out.flush()
    }

    fn finish(self) -> std::io::Result<bool> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()?;
        Ok(true)
    }

    /// Closes the connection without the terminating chunk.
    fn drop_connection(self) -> std::io::Result<bool> {
        std::thread::sleep(Duration::from_millis(20));
        let _ = self.out.shutdown(Shutdown::Both);
        Ok(false)
    }
}

fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The reply's text: the text, or the JSON serialised.
fn reply_text(reply: &Reply) -> String {
    match &reply.kind {
        ReplyKind::Text(t) => t.clone(),
        ReplyKind::Json(v) => v.to_string(),
        _ => String::new(),
    }
}

/// Splits `text` in up to three pieces, so the deltas are really incremental.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 3 {
        return vec![text.to_owned()];
    }
    let third = chars.len() / 3;
    vec![
        chars[..third].iter().collect(),
        chars[third..2 * third].iter().collect(),
        chars[2 * third..].iter().collect(),
    ]
}

mod anthropic {
    use super::*;

    /// The name of Claude Code's structured-output tool (`--json-schema`).
    pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

    fn error_type(status: u16) -> &'static str {
        match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            _ => "api_error",
        }
    }

    fn usage_json(u: &Usage, output: u64) -> Value {
        json!({
            "input_tokens": u.input,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cache_read,
            "output_tokens": output,
        })
    }

    /// The content block of the reply: text, or a `StructuredOutput` tool call.
    fn block(request: &Request, reply: &Reply) -> (Value, Option<String>) {
        if let ReplyKind::ToolCall { name, input, .. } = &reply.kind {
            let block = json!({
                "type": "tool_use",
                "id": format!("toolu_fake{}", next_id()),
                "name": name,
                "input": input,
            });
            return (block, Some(input.to_string()));
        }
        if let ReplyKind::Json(value) = &reply.kind {
            let offers_tool = request
                .body
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|t| t["name"] == STRUCTURED_OUTPUT_TOOL));
            if offers_tool {
                let block = json!({
                    "type": "tool_use",
                    "id": format!("toolu_fake{}", next_id()),
                    "name": STRUCTURED_OUTPUT_TOOL,
                    "input": value,
                });
                return (block, Some(value.to_string()));
            }
        }
        (json!({"type": "text", "text": reply_text(reply)}), None)
    }

    pub fn respond(out: &mut TcpStream, request: &Request, reply: &Reply) -> std::io::Result<bool> {
        let model = request.model().unwrap_or("claude-fake").to_owned();
        let id = format!("msg_fake{}", next_id());
        if let ReplyKind::Error {
            status,
            message,
            retry_after_s,
        } = &reply.kind
        {
            let body = json!({
                "type": "error",
                "error": {"type": error_type(*status), "message": message},
                "request_id": format!("req_fake{}", next_id()),
            });
            return respond_error(out, *status, &body, *retry_after_s);
        }
        let u = reply.usage;
        let (block, tool_json) = block(request, reply);
        let stop_reason = if tool_json.is_some() { "tool_use" } else { "end_turn" };
        let preamble = match &reply.kind {
            ReplyKind::ToolCall { text: Some(text), .. } => Some(text.clone()),
            _ => None,
        };
        let mut content = vec![block.clone()];
        if let Some(text) = &preamble {
            content.insert(0, json!({"type": "text", "text": text}));
        }
        if !request.stream() {
            if matches!(reply.kind, ReplyKind::DropStream) {
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{{\"id\":"
                )?;
                out.flush()?;
                let _ = out.shutdown(Shutdown::Both);
                return Ok(false);
            }
            let body = json!({
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop_reason, "stop_sequence": null,
                "usage": usage_json(&u, u.output),
            });
            return respond_json(out, 200, &body);
        }
        let mut sse = Sse::start(out)?;
        let start = json!({
            "type": "message_start",
            "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": usage_json(&u, 1),
            },
        });
        sse.event(Some("message_start"), &start.to_string())?;
        if matches!(reply.kind, ReplyKind::DropStream) {
            return sse.drop_connection();
        }
        let (start_block, deltas): (Value, Vec<Value>) = match &tool_json {
            Some(input) => {
                let mut b = block.clone();
                b["input"] = json!({});
                let deltas = pieces(input)
                    .into_iter()
                    .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                    .collect();
                (b, deltas)
            }
            None => {
                let text = block["text"].as_str().unwrap_or("").to_owned();
                let deltas = pieces(&text)
                    .into_iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect();
                (json!({"type": "text", "text": ""}), deltas)
            }
        };
        let mut blocks = Vec::new();
        if let Some(text) = &preamble {
            let deltas = pieces(text)
                .into_iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect();
            blocks.push((json!({"type": "text", "text": ""}), deltas));
        }
        blocks.push((start_block, deltas));
        sse.event(Some("ping"), r#"{"type": "ping"}"#)?;
        for (index, (start_block, deltas)) in blocks.into_iter().enumerate() {
            sse.event(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": index, "content_block": start_block}).to_string(),
            )?;
            for delta in deltas {
                sse.event(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}).to_string(),
                )?;
            }
            sse.event(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": index}).to_string(),
            )?;
        }
        sse.event(
            Some("message_delta"),
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": usage_json(&u, u.output),
            })
            .to_string(),
        )?;
        sse.event(Some("message_stop"), r#"{"type":"message_stop"}"#)?;
        sse.finish()
    }
}

mod responses {
    use super::*;

    fn error_body(status: u16, message: &str) -> Value {
        let (ty, code) = match status {
            400 => ("invalid_request_error", Value::Null),
            401 => ("invalid_request_error", json!("invalid_api_key")),
            429 => ("rate_limit_exceeded", json!("rate_limit_exceeded")),
            _ => ("server_error", json!("server_error")),
        };
        json!({"error": {"message": message, "type": ty, "param": null, "code": code}})
    }

    fn usage_json(u: &Usage) -> Value {
        let input = u.input + u.cache_read + u.cache_write;
        json!({
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + u.output,
        })
    }

    pub fn respond(out: &mut TcpStream, request: &Request, reply: &Reply) -> std::io::Result<bool> {
        if let ReplyKind::Error {
            status,
            message,
            retry_after_s,
        } = &reply.kind
        {
            return respond_error(out, *status, &error_body(*status, message), *retry_after_s);
        }
        let model = request.model().unwrap_or("gpt-fake").to_owned();
        let resp_id = format!("resp_fake{}", next_id());
        let item_id = format!("msg_fake{}", next_id());
        let text = reply_text(reply);
        let created = now();
        if let ReplyKind::ToolCall { name, input, .. } = &reply.kind {
            let call = FunctionCall {
                resp_id: &resp_id,
                model: &model,
                created,
                item_id: format!("fc_fake{}", next_id()),
                call_id: format!("call_fake{}", next_id()),
                name,
                arguments: input.to_string(),
            };
            return call.respond(out, request, &reply.usage);
        }
        let response = |status: &str, output: Value, usage: Value| {
            json!({
                "id": resp_id, "object": "response", "created_at": created, "status": status,
                "error": null, "incomplete_details": null, "model": model, "output": output,
                "parallel_tool_calls": true, "previous_response_id": null,
                "usage": usage,
            })
        };
        let done_item = json!({
            "id": item_id, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        });
        if !request.stream() {
            return respond_json(
                out,
                200,
                &response("completed", json!([done_item]), usage_json(&reply.usage)),
            );
        }
        let mut seq = 0u64;
        let mut sse = Sse::start(out)?;
        let mut send = |sse: &mut Sse, mut data: Value| {
            data["sequence_number"] = json!(seq);
            seq += 1;
            let name = data["type"].as_str().unwrap_or("").to_owned();
            sse.event(Some(&name), &data.to_string())
        };
        send(
            &mut sse,
            json!({"type": "response.created", "response": response("in_progress", json!([]), Value::Null)}),
        )?;
        if matches!(reply.kind, ReplyKind::DropStream) {
            return sse.drop_connection();
        }
        send(
            &mut sse,
            json!({"type": "response.in_progress", "response": response("in_progress", json!([]), Value::Null)}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.output_item.added", "output_index": 0, "item": {
                "id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": [],
            }}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0,
                "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        )?;
        for piece in pieces(&text) {
            send(
                &mut sse,
                json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0,
                    "content_index": 0, "delta": piece, "logprobs": []}),
            )?;
        }
        send(
            &mut sse,
            json!({"type": "response.output_text.done", "item_id": item_id, "output_index": 0,
                "content_index": 0, "text": text, "logprobs": []}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.content_part.done", "item_id": item_id, "output_index": 0,
                "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.output_item.done", "output_index": 0, "item": done_item}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.completed",
                "response": response("completed", json!([done_item]), usage_json(&reply.usage))}),
        )?;
        sse.finish()
    }
}

/// A Responses `function_call` output item and the events that stream it.
struct FunctionCall<'a> {
    resp_id: &'a str,
    model: &'a str,
    created: u64,
    item_id: String,
    call_id: String,
    name: &'a str,
    arguments: String,
}

impl FunctionCall<'_> {
    fn item(&self, status: &str, arguments: &str) -> Value {
        json!({"id": self.item_id, "type": "function_call", "status": status, "call_id": self.call_id,
               "name": self.name, "arguments": arguments})
    }

    fn response(&self, status: &str, output: Value, usage: Value) -> Value {
        json!({
            "id": self.resp_id, "object": "response", "created_at": self.created, "status": status,
            "error": null, "incomplete_details": null, "model": self.model, "output": output,
            "parallel_tool_calls": true, "previous_response_id": null, "usage": usage,
        })
    }

    fn respond(&self, out: &mut TcpStream, request: &Request, usage: &Usage) -> std::io::Result<bool> {
        let usage_json = || {
            let input = usage.input + usage.cache_read + usage.cache_write;
            json!({
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": usage.cache_read},
                "output_tokens": usage.output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + usage.output,
            })
        };
        let done = self.item("completed", &self.arguments);
        if !request.stream() {
            return respond_json(out, 200, &self.response("completed", json!([done]), usage_json()));
        }
        let mut seq = 0u64;
        let mut sse = Sse::start(out)?;
        let mut send = |sse: &mut Sse, mut data: Value| {
            data["sequence_number"] = json!(seq);
            seq += 1;
            let name = data["type"].as_str().unwrap_or("").to_owned();
            sse.event(Some(&name), &data.to_string())
        };
        let started = self.response("in_progress", json!([]), Value::Null);
        send(&mut sse, json!({"type": "response.created", "response": started}))?;
        send(&mut sse, json!({"type": "response.in_progress", "response": started}))?;
        send(
            &mut sse,
            json!({"type": "response.output_item.added", "output_index": 0, "item": self.item("in_progress", "")}),
        )?;
        for piece in pieces(&self.arguments) {
            send(
                &mut sse,
                json!({"type": "response.function_call_arguments.delta", "item_id": self.item_id,
                       "output_index": 0, "delta": piece}),
            )?;
        }
        send(
            &mut sse,
            json!({"type": "response.function_call_arguments.done", "item_id": self.item_id,
                   "output_index": 0, "arguments": self.arguments}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.output_item.done", "output_index": 0, "item": done}),
        )?;
        send(
            &mut sse,
            json!({"type": "response.completed",
                   "response": self.response("completed", json!([done]), usage_json())}),
        )?;
        sse.finish()
    }
}

mod chat {
    use super::*;

    fn usage_json(u: &Usage) -> Value {
        let prompt = u.input + u.cache_read + u.cache_write;
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
            "completion_tokens_details": {"reasoning_tokens": 0},
        })
    }

    pub fn respond(out: &mut TcpStream, request: &Request, reply: &Reply) -> std::io::Result<bool> {
        if let ReplyKind::Error {
            status,
            message,
            retry_after_s,
        } = &reply.kind
        {
            let ty = if *status < 500 {
                "invalid_request_error"
            } else {
                "server_error"
            };
            let body = json!({"error": {"message": message, "type": ty, "param": null, "code": null}});
            return respond_error(out, *status, &body, *retry_after_s);
        }
        let model = request.model().unwrap_or("gpt-fake").to_owned();
        let id = format!("chatcmpl-fake{}", next_id());
        let created = now();
        let text = reply_text(reply);
        if !request.stream() {
            let body = json!({
                "id": id, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop", "logprobs": null}],
                "usage": usage_json(&reply.usage),
            });
            return respond_json(out, 200, &body);
        }
        let include_usage = request.body["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false);
        let with_usage = include_usage.then_some(Value::Null);
        let chunk = |delta: Value, finish: Value| {
            let mut c = json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
            });
            if let Some(u) = &with_usage {
                c["usage"] = u.clone();
            }
            c.to_string()
        };
        let mut sse = Sse::start(out)?;
        sse.event(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null))?;
        if matches!(reply.kind, ReplyKind::DropStream) {
            return sse.drop_connection();
        }
        for piece in pieces(&text) {
            sse.event(None, &chunk(json!({"content": piece}), Value::Null))?;
        }
        sse.event(None, &chunk(json!({}), json!("stop")))?;
        // Real OpenAI sends the usage in a last chunk with no choices, when asked.
        if include_usage {
            let last = json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": usage_json(&reply.usage),
            });
            sse.event(None, &last.to_string())?;
        }
        sse.event(None, "[DONE]")?;
        sse.finish()
    }
}
