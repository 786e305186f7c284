-- The inbox: one row per (scope, message_id) whose business transaction
-- committed. The primary key is the idempotency check.
CREATE TABLE {inbox} (
    scope           text        NOT NULL,
    message_id      text        NOT NULL,
    source          text        NOT NULL DEFAULT '',
    source_position text        NOT NULL DEFAULT '',
    partition_key   text        NOT NULL DEFAULT '',
    payload_hash    bytea       NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, message_id)
);
-- For the purge by age.
CREATE INDEX {prefix}inbox_received_at_idx ON {inbox} (received_at);

-- Failed attempts, written in their own transaction so that the count
-- survives the rollback of the failed work.
CREATE TABLE {attempts} (
    scope           text        NOT NULL,
    message_id      text        NOT NULL,
    attempts        integer     NOT NULL,
    last_error      text        NOT NULL,
    first_failed_at timestamptz NOT NULL,
    last_failed_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, message_id)
);
CREATE INDEX {prefix}attempts_last_failed_at_idx ON {attempts} (last_failed_at);

-- Messages that will not be processed: too many failures, a permanent
-- error, or no message id (message_id = '').
CREATE TABLE {dead_letters} (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope            text        NOT NULL,
    message_id       text        NOT NULL,
    source           text        NOT NULL DEFAULT '',
    source_position  text        NOT NULL DEFAULT '',
    partition_key    text        NOT NULL DEFAULT '',
    payload          bytea       NOT NULL,
    payload_hash     bytea       NOT NULL,
    headers          jsonb       NOT NULL DEFAULT '[]',
    attempts         integer     NOT NULL,
    reason           text        NOT NULL,
    last_error       text        NOT NULL,
    received_at      timestamptz NOT NULL,
    dead_lettered_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX {prefix}dead_letters_key_idx ON {dead_letters} (scope, message_id) WHERE message_id <> '';
CREATE INDEX {prefix}dead_letters_at_idx ON {dead_letters} (dead_lettered_at);

-- Drift: a processed id seen again with another payload hash.
CREATE TABLE {drift} (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope           text        NOT NULL,
    message_id      text        NOT NULL,
    source          text        NOT NULL DEFAULT '',
    source_position text        NOT NULL DEFAULT '',
    stored_hash     bytea       NOT NULL,
    received_hash   bytea       NOT NULL,
    detected_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX {prefix}drift_detected_at_idx ON {drift} (detected_at);
