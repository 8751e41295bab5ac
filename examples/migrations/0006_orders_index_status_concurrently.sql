-- 0003 done safely: CONCURRENTLY takes SHARE UPDATE EXCLUSIVE, which lets
-- reads and writes through. It cannot run in a transaction, so it is a
-- migration of its own.
CREATE INDEX CONCURRENTLY orders_status_idx ON orders (status);
