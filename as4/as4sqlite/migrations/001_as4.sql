-- Received AS4 user messages: one row per inbox key, written in the inbox
-- transaction, with the receipt that was answered (replayed to duplicates).
-- Times are UTC text of fixed width, as in the inbox tables.
CREATE TABLE IF NOT EXISTS {messages} (
    scope                TEXT NOT NULL,
    message_key          TEXT NOT NULL, -- the inbox message_id (edi.AS4Key)
    message_id           TEXT NOT NULL, -- eb:MessageId
    ref_to_message_id    TEXT NOT NULL,
    sent_at              TEXT NOT NULL, -- eb:Timestamp as written
    from_party           TEXT NOT NULL,
    from_party_type      TEXT NOT NULL,
    to_party             TEXT NOT NULL,
    to_party_type        TEXT NOT NULL,
    service              TEXT NOT NULL,
    service_type         TEXT NOT NULL,
    action               TEXT NOT NULL,
    conversation_id      TEXT NOT NULL,
    soap_version         TEXT NOT NULL,
    user_message         TEXT NOT NULL, -- canonical eb:UserMessage XML
    fingerprint          BLOB NOT NULL, -- its SHA-256 is the inbox payload hash
    receipt_message_id   TEXT NOT NULL,
    receipt_content_type TEXT NOT NULL,
    receipt              BLOB NOT NULL,
    received_at          TEXT NOT NULL,
    PRIMARY KEY (scope, message_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {prefix}as4_messages_received_at_idx ON {messages} (received_at);

-- The payloads of each message, in eb:PartInfo order.
CREATE TABLE IF NOT EXISTS {payloads} (
    scope            TEXT    NOT NULL,
    message_key      TEXT    NOT NULL,
    part_index       INTEGER NOT NULL,
    href             TEXT    NOT NULL,
    content_id       TEXT    NOT NULL,
    content_type     TEXT    NOT NULL,
    mime_type        TEXT    NOT NULL, -- PartProperties MimeType
    compression_type TEXT    NOT NULL, -- PartProperties CompressionType
    properties       TEXT    NOT NULL, -- JSON array of {"name", "type", "value"}
    sha256           BLOB    NOT NULL,
    data             BLOB    NOT NULL,
    PRIMARY KEY (scope, message_key, part_index),
    FOREIGN KEY (scope, message_key) REFERENCES {messages} (scope, message_key) ON DELETE CASCADE
);
