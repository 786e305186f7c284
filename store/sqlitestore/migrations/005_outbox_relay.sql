-- What the outbox relay (package outbox) needs: routing (topic, key,
-- headers as JSON text), retries (attempts, next_attempt_at, last_error),
-- rows that failed for good (failed_at: the outbox's dead letters), the
-- target's proof of delivery (receipt), and a lease: SQLite has no SKIP
-- LOCKED, so a relay marks the rows it sends (lease_owner, lease_until)
-- in a short write transaction instead of holding the write lock while it
-- sends. Times are UTC text of fixed width, as in the other tables.
ALTER TABLE {outbox} ADD COLUMN topic           TEXT    NOT NULL DEFAULT '';
ALTER TABLE {outbox} ADD COLUMN key             TEXT    NOT NULL DEFAULT '';
ALTER TABLE {outbox} ADD COLUMN headers         TEXT;
ALTER TABLE {outbox} ADD COLUMN attempts        INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {outbox} ADD COLUMN next_attempt_at TEXT;
ALTER TABLE {outbox} ADD COLUMN last_error      TEXT;
ALTER TABLE {outbox} ADD COLUMN failed_at       TEXT;
ALTER TABLE {outbox} ADD COLUMN receipt         BLOB;
ALTER TABLE {outbox} ADD COLUMN lease_owner     TEXT;
ALTER TABLE {outbox} ADD COLUMN lease_until     TEXT;

-- The index of 004 also covered failed rows, which are never sent.
DROP INDEX IF EXISTS {prefix}outbox_unsent_idx;
-- Claims: unsent, not failed, in id order (due and lease are filtered).
CREATE INDEX {prefix}outbox_pending_idx ON {outbox} (id) WHERE sent_at IS NULL AND failed_at IS NULL;
-- Ordered relays: "is there an earlier pending row of this key?"
CREATE INDEX {prefix}outbox_pending_key_idx ON {outbox} (key, id) WHERE sent_at IS NULL AND failed_at IS NULL;
-- PurgeSent: the oldest sent rows first.
CREATE INDEX {prefix}outbox_sent_at_idx ON {outbox} (sent_at) WHERE sent_at IS NOT NULL;
-- Stats and list-failed.
CREATE INDEX {prefix}outbox_failed_idx ON {outbox} (id) WHERE failed_at IS NOT NULL;
