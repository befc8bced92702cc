"""The ``accv`` command line (:mod:`accv.cli`; ``accv prove`` in :mod:`accv.prove_cmd`, ``accv fuzz``
in :mod:`accv.fuzz_cmd`, ``accv report`` in :mod:`accv.report_cmd`), and nothing else: the library
is the top-level packages ``semantics``, ``rewrite_rules``, ``verif``, ``compilers``, ``rtl_harness``,
``check``, ``fuzz`` and ``reports``, which the commands call.
"""

__version__ = "0.1.0"
