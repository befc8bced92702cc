"""Kernels kept as a regression suite.

- :mod:`accv.regression.header`: the ``// accv: ...`` header comments of an HLO kernel file (the
  targets and backends it runs on, input files, expected-unsupported targets, cycle bounds); the one
  definition both the pytest plugin (reading) and the fuzzing campaign's reproducer writer
  (:func:`fuzz.reduce.write_reproducer`, writing) use.
- :mod:`accv.regression.plugin`: the pytest plugin (entry point ``pytest11``) that collects the
  ``*.hlo`` files under the folders named by the ``accv_kernels`` ini option as test items, one per
  (kernel, target, backend). docs/regression.md says how to use it.

The header module imports nothing above :mod:`semantics`, so the ``fuzz`` layer may use it.
"""
