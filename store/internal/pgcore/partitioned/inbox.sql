-- The partitioned layout of the inbox (pgstore.Options.Partitioned,
-- txinbox migrate --partitioned), applied right after 001 created the
-- plain table in the same transaction of the first Migrate.
--
-- A partitioned table's unique index must contain the partition key, so
-- the key here is (scope, message_id, period): uniqueness across periods is
-- kept by the claim (queries.go, partition.go), not by the index. The
-- primary key also serves the claim's probe of older partitions.
DROP TABLE {inbox};
CREATE TABLE {inbox} (
    scope           text        NOT NULL,
    message_id      text        NOT NULL,
    source          text        NOT NULL DEFAULT '',
    source_position text        NOT NULL DEFAULT '',
    partition_key   text        NOT NULL DEFAULT '',
    payload_hash    bytea       NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz NOT NULL DEFAULT now(),
    period          bigint      NOT NULL,
    PRIMARY KEY (scope, message_id, period)
) PARTITION BY LIST (period);
-- For the row-by-row purge of rows received long before their period.
CREATE INDEX {prefix}inbox_received_at_idx ON {inbox} (received_at);

-- The periods: one partition each. The current one has ended_at NULL and
-- is switched only under the exclusive period lock.
CREATE TABLE {periods} (
    period     bigint      PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    length     interval    NOT NULL,
    ended_at   timestamptz,
    dropped_at timestamptz
);
CREATE UNIQUE INDEX {prefix}inbox_periods_current_idx ON {periods} ((true)) WHERE ended_at IS NULL;
