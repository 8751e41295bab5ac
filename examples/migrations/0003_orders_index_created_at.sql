-- Unsafe: CREATE INDEX takes SHARE, which lets reads through and stops every
-- write to orders until the index is built (and queues behind any writer).
CREATE INDEX orders_created_at_idx ON orders (created_at);
