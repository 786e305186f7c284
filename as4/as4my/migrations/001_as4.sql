-- Received AS4 user messages: one row per inbox key, written in the inbox
-- transaction, with the receipt that was answered (replayed to duplicates).
-- The key columns are binary and as long as the inbox's (mysqlstore):
-- compared byte by byte, so no collation makes "A" and "a" one key, and
-- any UTF-8 fits. id is what the payloads reference: a (scope,
-- message_key, part_index) key would pass InnoDB's 3072-byte index limit.
-- Times are UTC DATETIME(6), written as text.
CREATE TABLE IF NOT EXISTS {messages} (
    id                   BIGINT          NOT NULL AUTO_INCREMENT PRIMARY KEY,
    scope                VARBINARY(1024) NOT NULL,
    message_key          VARBINARY(2048) NOT NULL, -- the inbox message_id (edi.AS4Key)
    message_id           TEXT            NOT NULL, -- eb:MessageId
    ref_to_message_id    TEXT            NOT NULL,
    sent_at              TEXT            NOT NULL, -- eb:Timestamp as written
    from_party           TEXT            NOT NULL,
    from_party_type      TEXT            NOT NULL,
    to_party             TEXT            NOT NULL,
    to_party_type        TEXT            NOT NULL,
    service              TEXT            NOT NULL,
    service_type         TEXT            NOT NULL,
    action               TEXT            NOT NULL,
    conversation_id      TEXT            NOT NULL,
    soap_version         TEXT            NOT NULL,
    user_message         MEDIUMTEXT      NOT NULL, -- canonical eb:UserMessage XML
    fingerprint          MEDIUMBLOB      NOT NULL, -- its SHA-256 is the inbox payload hash
    receipt_message_id   TEXT            NOT NULL,
    receipt_content_type TEXT            NOT NULL,
    receipt              MEDIUMBLOB      NOT NULL,
    received_at          DATETIME(6)     NOT NULL,
    UNIQUE KEY {prefix}as4_messages_key_idx (scope, message_key),
    KEY {prefix}as4_messages_received_at_idx (received_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The payloads of each message, in eb:PartInfo order.
CREATE TABLE IF NOT EXISTS {payloads} (
    message_ref      BIGINT      NOT NULL, -- {messages}.id
    part_index       INT         NOT NULL,
    href             TEXT        NOT NULL,
    content_id       TEXT        NOT NULL,
    content_type     TEXT        NOT NULL,
    mime_type        TEXT        NOT NULL, -- PartProperties MimeType
    compression_type TEXT        NOT NULL, -- PartProperties CompressionType
    properties       MEDIUMTEXT  NOT NULL, -- JSON array of {"name", "type", "value"}
    sha256           BINARY(32)  NOT NULL,
    data             LONGBLOB    NOT NULL,
    PRIMARY KEY (message_ref, part_index),
    FOREIGN KEY (message_ref) REFERENCES {messages} (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
