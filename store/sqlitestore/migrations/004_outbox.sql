-- The outbox of txinbox serve's "outbox" effect: each payload of a new
-- message, written in the inbox transaction, for a relay or downstream
-- readers. (scope, message_id, part) is a stable id for the receiver.
CREATE TABLE {outbox} (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    scope        TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    part         INTEGER NOT NULL,
    source       TEXT    NOT NULL DEFAULT '',
    content_type TEXT    NOT NULL DEFAULT '',
    payload      BLOB    NOT NULL,
    created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    sent_at      TEXT,
    UNIQUE (scope, message_id, part)
);
CREATE INDEX {prefix}outbox_unsent_idx ON {outbox} (id) WHERE sent_at IS NULL;
