-- The commit guard: a batch transaction commits only through the
-- processor. Every claim marks its transaction with a row here (one per
-- backend, updated in place); the deferred trigger refuses the COMMIT
-- unless the processor's own commit statement set txinbox.commit first.
-- A handler that runs COMMIT as SQL gets an error and the whole batch
-- transaction rolls back, so no inbox row commits without its effect.
CREATE TABLE {tx_guard} (
    backend_pid integer PRIMARY KEY,
    batches     bigint  NOT NULL DEFAULT 0
);
CREATE FUNCTION {tx_guard_check}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('txinbox.commit', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'txinbox: a batch transaction may only be committed by the processor (did a handler run COMMIT?); it was rolled back'
            USING ERRCODE = '2D000';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER {prefix}tx_guard AFTER INSERT OR UPDATE ON {tx_guard}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {tx_guard_check}();
