-- An operator's decisions: forgetting a key, replaying or dropping a dead
-- letter. Dropped dead letters stay dead (redeliveries are refused) but
-- leave the default listing.
ALTER TABLE {dead_letters} ADD COLUMN dropped_at TEXT;
CREATE TABLE {audit} (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    scope      TEXT NOT NULL,
    message_id TEXT NOT NULL,
    reason     TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT ''
);
