-- A handler's reply (txinbox.Message.Reply, package httpinbox's stored
-- responses), kept in its key's inbox row, written in the same
-- transaction, purged with the row. NULL for rows without one; adding a
-- nullable column without a default rewrites nothing.
ALTER TABLE {inbox} ADD COLUMN reply bytea;
