-- The inbox: one row per (scope, message_id) whose business transaction
-- committed. Times are UTC text of fixed width (sortable).
CREATE TABLE {inbox} (
    scope           TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    source          TEXT NOT NULL DEFAULT '',
    source_position TEXT NOT NULL DEFAULT '',
    partition_key   TEXT NOT NULL DEFAULT '',
    payload_hash    BLOB NOT NULL,
    received_at     TEXT NOT NULL,
    processed_at    TEXT NOT NULL,
    PRIMARY KEY (scope, message_id)
) WITHOUT ROWID;
CREATE INDEX {prefix}inbox_received_at_idx ON {inbox} (received_at);

CREATE TABLE {attempts} (
    scope           TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,
    attempts        INTEGER NOT NULL,
    last_error      TEXT    NOT NULL,
    first_failed_at TEXT    NOT NULL,
    last_failed_at  TEXT    NOT NULL,
    PRIMARY KEY (scope, message_id)
) WITHOUT ROWID;
CREATE INDEX {prefix}attempts_last_failed_at_idx ON {attempts} (last_failed_at);

CREATE TABLE {dead_letters} (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    scope            TEXT    NOT NULL,
    message_id       TEXT    NOT NULL,
    source           TEXT    NOT NULL DEFAULT '',
    source_position  TEXT    NOT NULL DEFAULT '',
    partition_key    TEXT    NOT NULL DEFAULT '',
    payload          BLOB    NOT NULL,
    payload_hash     BLOB    NOT NULL,
    headers          TEXT    NOT NULL DEFAULT '[]',
    attempts         INTEGER NOT NULL,
    reason           TEXT    NOT NULL,
    last_error       TEXT    NOT NULL,
    received_at      TEXT    NOT NULL,
    dead_lettered_at TEXT    NOT NULL
);
CREATE UNIQUE INDEX {prefix}dead_letters_key_idx ON {dead_letters} (scope, message_id) WHERE message_id <> '';
CREATE INDEX {prefix}dead_letters_at_idx ON {dead_letters} (dead_lettered_at);

CREATE TABLE {drift} (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    scope           TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    source          TEXT NOT NULL DEFAULT '',
    source_position TEXT NOT NULL DEFAULT '',
    stored_hash     BLOB NOT NULL,
    received_hash   BLOB NOT NULL,
    detected_at     TEXT NOT NULL
);
CREATE INDEX {prefix}drift_detected_at_idx ON {drift} (detected_at);
