-- What the outbox relay (package outbox) needs: routing (topic, key,
-- headers), retries (attempts, next_attempt_at, last_error), rows that
-- failed for good (failed_at: the outbox's dead letters) and the target's
-- proof of delivery (receipt). A relay claims rows with FOR UPDATE SKIP
-- LOCKED, so PostgreSQL needs no lease columns.
ALTER TABLE {outbox}
    ADD COLUMN topic           text    NOT NULL DEFAULT '',
    ADD COLUMN key             text    NOT NULL DEFAULT '',
    ADD COLUMN headers         jsonb,
    ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz,
    ADD COLUMN last_error      text,
    ADD COLUMN failed_at       timestamptz,
    ADD COLUMN receipt         bytea;

-- The index of 004 also covered failed rows, which are never sent: replace
-- it by one of the rows a relay may still send. The index lives in the
-- table's schema, which the template does not name: look it up.
DO $$
DECLARE s text;
BEGIN
    SELECT n.nspname INTO s FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = '{outbox}'::regclass;
    EXECUTE format('DROP INDEX IF EXISTS %I.%I', s, '{prefix}outbox_unsent_idx');
END $$;
-- Claims: unsent, not failed, in id order (next_attempt_at is filtered).
CREATE INDEX {prefix}outbox_pending_idx ON {outbox} (id) WHERE sent_at IS NULL AND failed_at IS NULL;
-- Ordered relays: "is there an earlier pending row of this key?"
CREATE INDEX {prefix}outbox_pending_key_idx ON {outbox} (key, id) WHERE sent_at IS NULL AND failed_at IS NULL;
-- PurgeSent: the oldest sent rows first.
CREATE INDEX {prefix}outbox_sent_at_idx ON {outbox} (sent_at) WHERE sent_at IS NOT NULL;
-- Stats and list-failed.
CREATE INDEX {prefix}outbox_failed_idx ON {outbox} (id) WHERE failed_at IS NOT NULL;
