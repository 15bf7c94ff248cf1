"""Stage 1: reading and writing bytes: the strict JSON parser, safe input opening, RFC 6901 pointers,
atomic writes and publishing.  Knows the format only through ``capbench_nb.format``."""
