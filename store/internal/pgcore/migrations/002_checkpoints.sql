-- How far each partition of a source has been processed, written in the
-- batch's own transaction (a Kafka partition's watermark).
CREATE TABLE {checkpoints} (
    scope      text        NOT NULL,
    source     text        NOT NULL,
    partition  text        NOT NULL,
    position   bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, source, partition)
);
