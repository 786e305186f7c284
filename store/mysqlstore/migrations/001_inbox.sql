-- The inbox: one row per (scope, message_id) whose business transaction
-- committed. The key columns are binary: compared byte by byte, so that
-- no collation makes "A" and "a" (or "a" and "a ") one key, and any UTF-8
-- fits; 1024 + 2048 bytes is InnoDB's limit of 3072 bytes for one index.
-- claim_id is the batch that inserted the row (the claim reads it back
-- instead of a RETURNING clause, which MySQL lacks). Times are UTC.
CREATE TABLE IF NOT EXISTS {inbox} (
    scope           VARBINARY(1024) NOT NULL,
    message_id      VARBINARY(2048) NOT NULL,
    source          TEXT            NOT NULL,
    source_position TEXT            NOT NULL,
    partition_key   TEXT            NOT NULL,
    payload_hash    VARBINARY(64)   NOT NULL,
    received_at     DATETIME(6)     NOT NULL,
    processed_at    DATETIME(6)     NOT NULL,
    claim_id        BIGINT          NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, message_id),
    KEY {prefix}inbox_received_at_idx (received_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Failed attempts, written in their own transaction so that the count
-- survives the rollback of the failed work.
CREATE TABLE IF NOT EXISTS {attempts} (
    scope           VARBINARY(1024) NOT NULL,
    message_id      VARBINARY(2048) NOT NULL,
    attempts        INT             NOT NULL,
    last_error      MEDIUMTEXT      NOT NULL,
    first_failed_at DATETIME(6)     NOT NULL,
    last_failed_at  DATETIME(6)     NOT NULL,
    PRIMARY KEY (scope, message_id),
    KEY {prefix}attempts_last_failed_at_idx (last_failed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Messages that will not be processed. key_id is message_id, NULL when
-- the message had none: the unique key holds for the messages with an id
-- only (MySQL has no partial index).
CREATE TABLE IF NOT EXISTS {dead_letters} (
    id               BIGINT          NOT NULL AUTO_INCREMENT PRIMARY KEY,
    scope            VARBINARY(1024) NOT NULL,
    message_id       VARBINARY(2048) NOT NULL,
    key_id           VARBINARY(2048) AS (NULLIF(message_id, '')) STORED,
    source           TEXT            NOT NULL,
    source_position  TEXT            NOT NULL,
    partition_key    TEXT            NOT NULL,
    payload          LONGBLOB        NOT NULL,
    payload_hash     VARBINARY(64)   NOT NULL,
    headers          LONGTEXT        NOT NULL,
    attempts         INT             NOT NULL,
    reason           TEXT            NOT NULL,
    last_error       MEDIUMTEXT      NOT NULL,
    received_at      DATETIME(6)     NOT NULL,
    dead_lettered_at DATETIME(6)     NOT NULL,
    dropped_at       DATETIME(6)     NULL,
    UNIQUE KEY {prefix}dead_letters_key_idx (scope, key_id),
    KEY {prefix}dead_letters_at_idx (dead_lettered_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Drift: a processed id seen again with another payload hash.
CREATE TABLE IF NOT EXISTS {drift} (
    id              BIGINT          NOT NULL AUTO_INCREMENT PRIMARY KEY,
    scope           VARBINARY(1024) NOT NULL,
    message_id      VARBINARY(2048) NOT NULL,
    source          TEXT            NOT NULL,
    source_position TEXT            NOT NULL,
    stored_hash     VARBINARY(64)   NOT NULL,
    received_hash   VARBINARY(64)   NOT NULL,
    detected_at     DATETIME(6)     NOT NULL,
    KEY {prefix}drift_detected_at_idx (detected_at),
    KEY {prefix}drift_key_idx (scope, message_id(255))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- How far each partition of a source has been processed, written in the
-- batch's own transaction (a Kafka partition's watermark).
CREATE TABLE IF NOT EXISTS {checkpoints} (
    scope       VARBINARY(1024) NOT NULL,
    source      VARBINARY(1024) NOT NULL,
    `partition` VARBINARY(64)   NOT NULL,
    position    BIGINT          NOT NULL,
    updated_at  DATETIME(6)     NOT NULL,
    PRIMARY KEY (scope, source, `partition`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- An operator's decisions: forgetting a key, replaying or dropping a dead
-- letter.
CREATE TABLE IF NOT EXISTS {audit} (
    id         BIGINT          NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at         DATETIME(6)     NOT NULL,
    actor      TEXT            NOT NULL,
    action     TEXT            NOT NULL,
    scope      VARBINARY(1024) NOT NULL,
    message_id VARBINARY(2048) NOT NULL,
    reason     TEXT            NOT NULL,
    detail     TEXT            NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
