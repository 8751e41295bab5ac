\set x 1 \
\
\