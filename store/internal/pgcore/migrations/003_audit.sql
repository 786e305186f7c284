-- An operator's decisions: forgetting a key, replaying or dropping a dead
-- letter. Dropped dead letters stay dead (redeliveries are refused) but
-- leave the default listing.
ALTER TABLE {dead_letters} ADD COLUMN dropped_at timestamptz;
CREATE TABLE {audit} (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text        NOT NULL,
    action     text        NOT NULL,
    scope      text        NOT NULL,
    message_id text        NOT NULL,
    reason     text        NOT NULL,
    detail     text        NOT NULL DEFAULT ''
);
