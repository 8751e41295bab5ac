\sleep 18446744073709551615 us
\sleep 18446744073709551615 s
\set n -1
\sleep :n ms
\set m 9223372036854775807
\sleep :m s
\sleep :scale
SELECT 1;
