-- Received AS4 user messages: one row per inbox key, written in the inbox
-- transaction, with the receipt that was answered (replayed to duplicates).
CREATE TABLE IF NOT EXISTS {messages} (
    scope                text        NOT NULL,
    message_key          text        NOT NULL, -- the inbox message_id (edi.AS4Key)
    message_id           text        NOT NULL, -- eb:MessageId
    ref_to_message_id    text        NOT NULL,
    sent_at              text        NOT NULL, -- eb:Timestamp as written
    from_party           text        NOT NULL,
    from_party_type      text        NOT NULL,
    to_party             text        NOT NULL,
    to_party_type        text        NOT NULL,
    service              text        NOT NULL,
    service_type         text        NOT NULL,
    action               text        NOT NULL,
    conversation_id      text        NOT NULL,
    soap_version         text        NOT NULL,
    user_message         text        NOT NULL, -- canonical eb:UserMessage XML
    fingerprint          bytea       NOT NULL, -- its SHA-256 is the inbox payload hash
    receipt_message_id   text        NOT NULL,
    receipt_content_type text        NOT NULL,
    receipt              bytea       NOT NULL,
    received_at          timestamptz NOT NULL,
    PRIMARY KEY (scope, message_key)
);
CREATE INDEX IF NOT EXISTS {prefix}as4_messages_received_at_idx ON {messages} (received_at);

-- The payloads of each message, in eb:PartInfo order.
CREATE TABLE IF NOT EXISTS {payloads} (
    scope            text    NOT NULL,
    message_key      text    NOT NULL,
    part_index       integer NOT NULL,
    href             text    NOT NULL,
    content_id       text    NOT NULL,
    content_type     text    NOT NULL,
    mime_type        text    NOT NULL, -- PartProperties MimeType
    compression_type text    NOT NULL, -- PartProperties CompressionType
    properties       jsonb   NOT NULL,
    sha256           bytea   NOT NULL,
    data             bytea   NOT NULL,
    PRIMARY KEY (scope, message_key, part_index),
    FOREIGN KEY (scope, message_key) REFERENCES {messages} (scope, message_key) ON DELETE CASCADE
);
