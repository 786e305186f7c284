-- The outbox of txinbox serve's "outbox" effect and of the relay (package
-- outbox, outbox/outboxmy): each payload of a new message, written in the
-- inbox transaction. (scope, message_id, part) is a stable id for the
-- receiver; message_id is 2040 bytes at most here, so that the unique key
-- fits InnoDB's 3072 bytes. A relay claims rows with FOR UPDATE SKIP
-- LOCKED (MySQL 8.0, MariaDB 10.6). MySQL has no partial index: the
-- pending index leads with the two columns every claim tests for NULL.
CREATE TABLE IF NOT EXISTS {outbox} (
    id              BIGINT          NOT NULL AUTO_INCREMENT PRIMARY KEY,
    scope           VARBINARY(1024) NOT NULL,
    message_id      VARBINARY(2040) NOT NULL,
    part            INT             NOT NULL,
    source          TEXT            NOT NULL DEFAULT (''),
    content_type    TEXT            NOT NULL DEFAULT (''),
    payload         LONGBLOB        NOT NULL,
    created_at      DATETIME(6)     NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    sent_at         DATETIME(6)     NULL,
    topic           TEXT            NOT NULL DEFAULT (''),
    `key`           VARBINARY(1024) NOT NULL DEFAULT '',
    headers         LONGTEXT        NULL,
    attempts        INT             NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)     NULL,
    last_error      MEDIUMTEXT      NULL,
    failed_at       DATETIME(6)     NULL,
    receipt         LONGBLOB        NULL,
    UNIQUE KEY {prefix}outbox_key_idx (scope, message_id, part),
    KEY {prefix}outbox_pending_idx (sent_at, failed_at, id),
    KEY {prefix}outbox_pending_key_idx (`key`(255), sent_at, failed_at, id),
    KEY {prefix}outbox_sent_at_idx (sent_at),
    KEY {prefix}outbox_failed_idx (failed_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
