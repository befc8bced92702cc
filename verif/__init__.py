"""Proofs about the IR, built on the SMT semantics of :mod:`semantics.smt`.

What belongs here: the prover for the rules of :mod:`rewrite_rules` (z3, per rule and claimed
dtype), the proof cache keyed by the rule's content hash, counterexample replay on the reference
interpreter, and later translation validation of compiled programs.
"""
