\set x 1 +:
SELECT :x;
