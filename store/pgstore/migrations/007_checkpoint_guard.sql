-- The commit guard armed by the checkpoint's own row: a batch transaction
-- that moves a checkpoint (offsets as the inbox, a Kafka batch saving its
-- watermark) writes that row anyway, so the row event arms the guard's
-- deferred check without a tx_guard row. Only in a batch transaction
-- (the processor's mark, txinbox.batch, set with its BEGIN): a checkpoint
-- written elsewhere (a claim committed on its own, an operator's UPDATE)
-- is not checked.
CREATE CONSTRAINT TRIGGER {prefix}checkpoints_guard AFTER INSERT OR UPDATE ON {checkpoints}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (current_setting('txinbox.batch', true) = 'open')
    EXECUTE FUNCTION {tx_guard_check}();
