-- The outbox of txinbox serve's "outbox" effect: each payload of a new
-- message, written in the inbox transaction, for a relay or downstream
-- readers. (scope, message_id, part) is a stable id for the receiver.
CREATE TABLE {outbox} (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope        text        NOT NULL,
    message_id   text        NOT NULL,
    part         integer     NOT NULL,
    source       text        NOT NULL DEFAULT '',
    content_type text        NOT NULL DEFAULT '',
    payload      bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    sent_at      timestamptz,
    UNIQUE (scope, message_id, part)
);
CREATE INDEX {prefix}outbox_unsent_idx ON {outbox} (id) WHERE sent_at IS NULL;
