-- Unsafe: a volatile default fills every existing row, so the table is
-- rewritten under ACCESS EXCLUSIVE (no read, no write until it is done), and
-- the ALTER first queues behind any long transaction on orders.
ALTER TABLE orders ADD COLUMN tracking_token uuid NOT NULL DEFAULT gen_random_uuid();
