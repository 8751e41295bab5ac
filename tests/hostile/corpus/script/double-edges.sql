\set a pow(10, 400)
\set b exp(1000)
\set c ln(0)
\set d sqrt(-1)
\set e int(:a)
\set f 1e400
\set g least(:b, :c, :d)
SELECT :g;
