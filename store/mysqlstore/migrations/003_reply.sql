-- The reply a handler left for later duplicates (txinbox.Config.Replies,
-- package httpinbox's stored answers), in the message's inbox row; NULL
-- for none. A column added last is an instant change on MariaDB 10.3+
-- and MySQL 8.0.12+ (no table copy); Migrate takes a "Duplicate column"
-- answer (a migration cut short after this statement) as done.
ALTER TABLE {inbox} ADD COLUMN reply LONGBLOB NULL;
