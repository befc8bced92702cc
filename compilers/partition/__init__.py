"""Host partitioning: a graph the target cannot run whole, split into accelerator regions and
host steps, compiled and run as one program (docs/partition.md).

- :mod:`.graphs`: what the partitioner reads of a graph (placeable operators, MACs, bytes, the
  values that are free everywhere) and the sub-graph of a set of operators;
- :mod:`.search`: the partitioner (which operators run where), with the compiler as its oracle;
- :mod:`.program`: :class:`~.program.Partitioned` (steps, placement summary, contract), its text;
- :mod:`.run`: running a partitioned program with any backend (accelerator steps on the backend,
  host steps on the reference interpreter).
"""
