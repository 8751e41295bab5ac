\set a -9223372036854775808 / -1
\set b mod(-9223372036854775808, -1)
\set c abs(-9223372036854775807 - 1)
\set d int(1e300)
\set e :x * :x
\set f -:x - 2
SELECT :a;
