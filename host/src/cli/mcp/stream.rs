//! The event stream over MCP (D5): the `events` tool reads it from a cursor (waiting for the
//! next event when asked), and the resource `sublaunch://events` is the same stream for
//! clients that subscribe to it: while subscribed, each append is announced with
//! `notifications/resources/updated`, and the client reads on from its cursor — so a client
//! sees every event once, in order, however many announcements it got.

use super::params::{self, EventsParams};
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceUpdatedNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch::runs::feed::Feed;

/// The stream's resource.
pub const EVENTS_URI: &str = "sublaunch://events";
/// The most events one answer holds.
const MAX_EVENTS: u64 = 1000;
/// The longest wait one call may ask for.
const MAX_WAIT_SECONDS: f64 = 300.0;
/// How long a subscription's follower waits between two looks at most.
const FOLLOW_TICK: Duration = Duration::from_secs(1);

/// The `events` tool's answer: `{events, cursor, dropped}`.
pub async fn events(root: PathBuf, params: EventsParams) -> Result<Value, String> {
    let wait = match params.wait_seconds {
        None => Duration::ZERO,
        Some(s) if s.is_finite() && (0.0..=MAX_WAIT_SECONDS).contains(&s) => Duration::from_secs_f64(s),
        Some(s) => return Err(format!("waitSeconds: {s} is not a number of seconds from 0 to 300")),
    };
    let max = params::whole(params.max, "max", 1, MAX_EVENTS)
        .map_err(|e| e.to_string())?
        .unwrap_or(MAX_EVENTS);
    let since = params.since;
    tokio::task::spawn_blocking(move || read(&root, since, usize::try_from(max).unwrap_or(1000), wait))
        .await
        .map_err(|e| e.to_string())?
}

fn read(root: &Path, since: Option<u64>, max: usize, wait: Duration) -> Result<Value, String> {
    let mut feed = Feed::new(root, since);
    let batch = feed
        .next(max, wait)
        .map_err(|e| format!("cannot read the event stream: {e}"))?;
    Ok(json!({
        "events": batch.events,
        "cursor": feed.cursor(),
        "dropped": batch.dropped,
    }))
}

/// The stream's resource, as `resources/list` names it.
pub fn resource() -> Resource {
    let mut resource = Resource::new(EVENTS_URI, "events").with_description(
        "Every run's lifecycle events, in order, each with a cursor. Read sublaunch://events?since=CURSOR for the events after a cursor; subscribe to be told when there are new ones.",
    );
    resource.mime_type = Some("application/json".into());
    resource
}

/// `resources/read` of `sublaunch://events[?since=N]`.
pub async fn read_resource(root: PathBuf, uri: &str) -> Result<ReadResourceResult, String> {
    let since = match uri.strip_prefix(EVENTS_URI) {
        Some("") => None,
        Some(query) => match query.strip_prefix("?since=").map(str::parse::<u64>) {
            Some(Ok(cursor)) => Some(cursor),
            _ => return Err(format!("{uri}: the only query is ?since=CURSOR (a whole number)")),
        },
        None => return Err(format!("{uri} is not a resource of this server ({EVENTS_URI})")),
    };
    let value = tokio::task::spawn_blocking(move || read(&root, since, 1000, Duration::ZERO))
        .await
        .map_err(|e| e.to_string())??;
    Ok(ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some("application/json".into()),
        text: value.to_string(),
        meta: None,
    }]))
}

/// Announces each append to the stream to `peer` until the connection closes (the task is
/// aborted on `resources/unsubscribe`).
pub async fn follow(root: PathBuf, peer: Peer<RoleServer>) {
    let start = sublaunch_protocol::records::stream::Stream::under(&root)
        .last_cursor()
        .ok();
    let mut feed = Some(Feed::new(&root, start));
    loop {
        let Some(mut taken) = feed.take() else { return };
        let looked = tokio::task::spawn_blocking(move || {
            let news = taken
                .next(MAX_EVENTS as usize, FOLLOW_TICK)
                .map(|b| !b.events.is_empty() || b.dropped > 0);
            (taken, news)
        })
        .await;
        let Ok((taken, news)) = looked else { return };
        feed = Some(taken);
        match news {
            Ok(true) => {
                let updated = ResourceUpdatedNotificationParam::new(EVENTS_URI);
                if peer.notify_resource_updated(updated).await.is_err() {
                    return;
                }
            }
            Ok(false) => {}
            Err(_) => tokio::time::sleep(FOLLOW_TICK).await,
        }
        if peer.is_transport_closed() {
            return;
        }
    }
}
