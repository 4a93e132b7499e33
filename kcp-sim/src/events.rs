//! How the events of one watch are written: JSON lines (`{"type":..,"object":..}`), the same
//! with each object shown as a one-row `meta.k8s.io/v1` Table (`kubectl get -w`) or as its
//! metadata alone, or length-delimited protobuf `WatchEvent` frames of the object or its
//! metadata, for a client whose first acceptable answer is protobuf.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Value, json};

use crate::status::ApiError;
use crate::table::{Column, render_table};

/// The encoder of one watch's events, fixed when the watch starts.
#[derive(Debug, Clone)]
pub enum EventEncoder {
    /// One JSON line per event.
    Json,
    /// One JSON line per event whose object is a Table of one row, as kube-apiserver answers a
    /// watch with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`: every event carries
    /// the column definitions, and the row's object follows `includeObject` (metadata only by
    /// default).
    Table {
        /// The columns of the watched kind.
        columns: Vec<Column>,
        /// The `includeObject` query parameter.
        include: Option<String>,
        /// The Table's version of `meta.k8s.io`.
        version: &'static str,
    },
    /// Length-delimited protobuf `WatchEvent` frames.
    Protobuf {
        /// `Some(version)`: each object as its `PartialObjectMetadata` of
        /// `meta.k8s.io/<version>` (client-go's metadata informers).
        metadata: Option<&'static str>,
    },
    /// One JSON line per event whose object is its `PartialObjectMetadata` of
    /// `meta.k8s.io/<version>` (ERROR objects stay Statuses).
    Metadata(&'static str),
}

/// A JSON watch event line.
pub fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(object.len() + 32);
    out.put_slice(b"{\"type\":\"");
    out.put_slice(kind.as_bytes());
    out.put_slice(b"\",\"object\":");
    out.put_slice(object);
    out.put_slice(b"}\n");
    out.freeze()
}

impl EventEncoder {
    /// The `Content-Type` of the stream.
    pub fn content_type(&self) -> &'static str {
        match self {
            EventEncoder::Json | EventEncoder::Table { .. } | EventEncoder::Metadata(_) => {
                "application/json"
            }
            EventEncoder::Protobuf { .. } => crate::protobuf::WATCH_MEDIA_TYPE,
        }
    }

    /// The frame of one event; `object` is the object's JSON. BOOKMARK and ERROR objects are
    /// never tabulated.
    pub fn event(&self, kind: &str, object: &[u8]) -> Bytes {
        match self {
            EventEncoder::Json => event_line(kind, object),
            EventEncoder::Table {
                columns,
                include,
                version,
            } if !matches!(kind, "BOOKMARK" | "ERROR") => {
                match table_of(columns, include.as_deref(), version, object) {
                    Ok(table) => event_line(kind, &table),
                    Err(err) => self.error(&err),
                }
            }
            EventEncoder::Table { .. } => event_line(kind, object),
            EventEncoder::Metadata(_) if kind == "ERROR" => event_line(kind, object),
            EventEncoder::Metadata(version) => match serde_json::from_slice::<Value>(object) {
                Ok(parsed) => {
                    let partial = crate::media::partial(&parsed, version);
                    event_line(kind, &serde_json::to_vec(&partial).unwrap_or_default())
                }
                Err(e) => self.error(&ApiError::internal(format!(
                    "stored object unreadable: {e}"
                ))),
            },
            EventEncoder::Protobuf { metadata } => {
                let event = serde_json::from_slice::<Value>(object)
                    .map_err(|e| ApiError::internal(format!("stored object unreadable: {e}")))
                    .map(|o| match metadata {
                        Some(version) if kind != "ERROR" => crate::media::partial(&o, version),
                        _ => o,
                    })
                    .and_then(|o| {
                        crate::protobuf::encode_watch_event(&json!({"type": kind, "object": o}))
                    });
                match event {
                    Ok(frame) => frame,
                    Err(err) => self.error(&err),
                }
            }
        }
    }

    /// An ERROR event carrying `err` as a Status.
    pub fn error(&self, err: &ApiError) -> Bytes {
        let status = err.to_status();
        if matches!(self, EventEncoder::Protobuf { .. })
            && let Ok(frame) =
                crate::protobuf::encode_watch_event(&json!({"type": "ERROR", "object": status}))
        {
            return frame;
        }
        event_line("ERROR", &serde_json::to_vec(&status).unwrap_or_default())
    }
}

fn table_of(
    columns: &[Column],
    include: Option<&str>,
    version: &str,
    object: &[u8],
) -> Result<Vec<u8>, ApiError> {
    let value: Value = serde_json::from_slice(object)
        .map_err(|e| ApiError::internal(format!("stored object unreadable: {e}")))?;
    let rv = value
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let table = render_table(
        columns,
        &[value],
        include,
        version,
        &rv,
        jiff::Timestamp::now(),
    );
    serde_json::to_vec(&table).map_err(|e| ApiError::internal(format!("encoding a table: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::table::crd_columns;

    fn object() -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "7", "labels": {"a": "b"}}}))
        .unwrap()
    }

    #[test]
    fn json_events_wrap_the_object_unchanged() {
        assert_eq!(
            &EventEncoder::Json.event("ADDED", br#"{"a":1}"#)[..],
            b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n"
        );
    }

    #[test]
    fn table_events_carry_a_one_row_table_with_metadata_only() {
        let enc = EventEncoder::Table {
            columns: crd_columns(&[]),
            include: None,
            version: "v1",
        };
        let line = enc.event("MODIFIED", &object());
        let event: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(event["type"], "MODIFIED");
        let table = &event["object"];
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["metadata"]["resourceVersion"], "7");
        assert_eq!(table["columnDefinitions"][0]["name"], "Name");
        assert_eq!(table["rows"].as_array().unwrap().len(), 1);
        assert_eq!(table["rows"][0]["cells"][0], "c");
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["rows"][0]["object"]["metadata"]["labels"]["a"], "b");
    }

    #[test]
    fn table_events_include_the_whole_object_when_asked() {
        let enc = EventEncoder::Table {
            columns: crd_columns(&[]),
            include: Some("Object".into()),
            version: "v1",
        };
        let event: Value = serde_json::from_slice(&enc.event("ADDED", &object())).unwrap();
        assert_eq!(event["object"]["rows"][0]["object"]["kind"], "ConfigMap");
    }

    #[test]
    fn bookmarks_stay_plain_objects_in_table_watches() {
        let enc = EventEncoder::Table {
            columns: crd_columns(&[]),
            include: None,
            version: "v1",
        };
        let event: Value = serde_json::from_slice(&enc.event("BOOKMARK", &object())).unwrap();
        assert_eq!(event["object"]["kind"], "ConfigMap");
    }

    #[test]
    fn protobuf_events_are_frames_and_unencodable_objects_become_error_frames() {
        let frame = EventEncoder::Protobuf { metadata: None }.event("ADDED", &object());
        assert_eq!(
            u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize,
            frame.len() - 4
        );
        let widget = br#"{"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w"}}"#;
        let error = EventEncoder::Protobuf { metadata: None }.event("ADDED", widget);
        assert!(error.windows(5).any(|w| w == b"ERROR"));
    }

    #[test]
    fn metadata_protobuf_events_carry_the_objects_metadata_of_any_kind() {
        let widget = br#"{"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":1}}"#;
        let encoder = EventEncoder::Protobuf {
            metadata: Some("v1"),
        };
        let frame = encoder.event("ADDED", widget);
        let event = crate::protobuf::decode_watch_event(&frame[4..]).unwrap();
        assert_eq!(
            event,
            json!({"type": "ADDED", "object": {"apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadata", "metadata": {"name": "w"}}})
        );
    }
}
