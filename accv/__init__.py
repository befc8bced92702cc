"""The ``accv`` command-line front end (see :mod:`accv.cli`).

The library lives in the top-level packages ``semantics``, ``rewrite_rules``, ``verif``,
``compilers``, ``rtl_harness``, ``fuzz`` and ``reports``; this package only wires them to the CLI.
"""

__version__ = "0.1.0"
