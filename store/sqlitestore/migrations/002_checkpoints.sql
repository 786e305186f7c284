-- How far each partition of a source has been processed, written in the
-- batch's own transaction (a Kafka partition's watermark).
CREATE TABLE {checkpoints} (
    scope      TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    partition  TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (scope, source, partition)
) WITHOUT ROWID;
