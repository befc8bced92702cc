"""The ``accv`` command-line front end (see :mod:`accv.cli`) and the composition layer under it.

The library lives in the top-level packages ``semantics``, ``rewrite_rules``, ``verif``,
``compilers``, ``rtl_harness``, ``fuzz`` and ``reports``. This package composes them:
:mod:`accv.backends` (the backend registry: (target, backend name) -> a backend) and
:mod:`accv.check` (a compiled program checked on a backend against the reference; backends as
cost models) sit above ``compilers`` and ``rtl_harness``; :mod:`accv.cli` wires everything to
the command line.
"""

__version__ = "0.1.0"
