-- 0002 done safely: the new column has no default for the existing rows, so
-- there is no rewrite (new rows get one from SET DEFAULT; old rows are filled
-- later, in batches), and lock_timeout makes the ALTER give up after 500 ms
-- instead of queueing every query on payments behind a long transaction.
SET lock_timeout = '500ms';
ALTER TABLE payments ADD COLUMN reference uuid;
ALTER TABLE payments ALTER COLUMN reference SET DEFAULT gen_random_uuid();
