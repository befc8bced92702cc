"""The middle end: operators larger than one instruction sequence holds, tiled before phase 1.

- :mod:`.gemm`: recognition of a quantized GEMM layer (s8 x s8 -> s32, optional bias, scale,
  rounding, clamp to s8, ReLU) in an HLO graph.
- :mod:`.gemm_bf16`: recognition of an f32 GEMM layer of bf16 operands (no bias, no tail).
- :mod:`.tiled`: the tiled form with padding for remainders, as an HLO graph, and the identities
  that make it equal to the original.
- :mod:`.schedule`: the outer schedule (blocks and capacities read from the target's
  :class:`~.schedule.TileTarget`, loop order, operand reuse, on-chip placement decided once) and
  its composition from per-shape micro-kernels into one :class:`compilers.program.Program`.
- :mod:`.conv`: a quantized convolution layer, its taps-as-GEMMs identity and its direct-tiling
  schedule over the same micro-kernels.
- :mod:`.rows`: row blocks of a kernel row-wise in one input, each block height compiled by Act
  once and repeated with moved HBM addresses.
- :mod:`.compile`: the entry :func:`compilers.compile.compile` calls first
  (:func:`~.compile.compile_tiled`), which also gives a tiled float layer its numeric contract.

No target name appears here; a target offers tiling through ``TargetPackage.tiles``.
"""

from .gemm import Gemm, Tail, recognize
from .tiled import tiled_graph

__all__ = ["Gemm", "Tail", "recognize", "tiled_graph"]
