-- no-transaction
-- 0004 done safely, each statement committing on its own: NOT VALID takes
-- SHARE ROW EXCLUSIVE only for a moment (and gives up after 500 ms rather
-- than queue); VALIDATE then checks every payment under SHARE UPDATE
-- EXCLUSIVE, which blocks no read and no write.
SET lock_timeout = '500ms';
ALTER TABLE payments ADD CONSTRAINT payments_order_id_cascade_fk
    FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE payments VALIDATE CONSTRAINT payments_order_id_cascade_fk;
