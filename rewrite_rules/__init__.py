"""IR-to-IR rewrite rules as data.

What belongs here: the rule library (one module per family: slice, dot, broadcast, ...), each rule
with a stable name that reads as its equation, a one-line description, the dtypes it is claimed
for, pattern variables and preconditions. Proofs of these rules live in :mod:`verif`; the
compiler loads only rules whose proofs are cached as passed (seed 000 §2.1, §5.2.1).
"""
