\set a random(-9223372036854775808, 9223372036854775807)
\set b random(1, 1e18)
\set c random_gaussian(-9223372036854775808, 9223372036854775807, 2)
\set d random_exponential(-9223372036854775808, 9223372036854775807, 1e-300)
\set e random(:x, :x)
SELECT :a, :b, :c, :d, :e;
