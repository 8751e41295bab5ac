-- Unsafe: deleting a customer should delete their orders, so a cascading
-- foreign key replaces the plain one (dropped in a later release). Adding it
-- takes SHARE ROW EXCLUSIVE on both tables and checks every order while
-- holding it: no write to orders or customers until the check is done.
ALTER TABLE orders ADD CONSTRAINT orders_customer_id_cascade_fk
    FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE;
