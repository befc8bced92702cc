"""The operator and dtype lists of the random-graph campaigns, per target.

Each list restricts :func:`semantics.gen.random_graph` to what one target's compiler is meant to
handle: the opcodes it draws steps from and the element types the graph may use. These are the
one definition; ``tests/compilers/test_act_random.py`` (fixed seeds on every test run),
``bench/random_campaign.py`` (``--target T --ops N``) and the AMX program set
(:mod:`fuzz.amx_programs`) use them.
A list's number is the ``N`` of ``(target, N)`` in :data:`OPSETS`; a later list of a target adds
operators to (or replaces) the earlier one's, to reach further into the compiler.

:data:`CAMPAIGN_GENERATORS` names the generators a campaign draws each target's cases from when
``--generator`` is not given.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["AMX_1", "AMX_2", "CAMPAIGN_GENERATORS", "GEMMINI_1", "GEMMINI_2", "GEMMINI_WS", "GENERATOR_WITHHOLD",
           "OPSETS", "OpSet", "QKV_1", "QKV_2", "QKV_3"]


class OpSet(NamedTuple):
    """One list: opcodes and element types, each comma-separated as on a command line
    (``random_graph(seed, ops=s.ops.split(","), dtypes=s.dtypes.split(","))``)."""

    ops: str
    dtypes: str


#: Gemmini's int8 matrix unit: contractions with the elementwise work around them and the
#: data movement of its mvin / mvout (the first list found the output-equal-to-an-input bug).
GEMMINI_1 = OpSet("dot,add,convert,clamp,broadcast,transpose,maximum,multiply,reshape", "s8,s32")
#: ... with slices and concatenations (tiles taken from and put into larger tensors).
GEMMINI_2 = OpSet(GEMMINI_1.ops + ",slice,concatenate", "s8,s32")

#: QKV's bf16 attention operators (gemm, softmax's exp / reduce / divide) and data movement.
QKV_1 = OpSet("dot,exponential,reduce,divide,transpose,broadcast,reshape,add,multiply,maximum,subtract,convert,"
              "slice,concatenate", "bf16,f32")
#: ... with selects, comparisons, pads, reverses, iotas and the remaining elementwise operators.
QKV_2 = OpSet(QKV_1.ops + ",select,compare,pad,reverse,negate,abs,iota,minimum", "bf16,f32,s32")
#: the attention operators with copies, tuples read back by get-tuple-element, dynamic slices,
#: bitcasts, fma, rsqrt, tanh and log, most of which QKV has no instruction for.
QKV_3 = OpSet("dot,exponential,reduce,divide,transpose,broadcast,reshape,copy,tuple,get-tuple-element,dynamic-slice,"
              "dynamic-update-slice,bitcast-convert,fma,rsqrt,tanh,log", "bf16,f32")

#: AMX's tile multiplies (u8 / s8 into s32, f32) with AVX-512 elementwise work and data movement.
AMX_1 = OpSet("dot,convert,add,multiply,maximum,minimum,broadcast,transpose,reshape,clamp,slice", "u8,s8,s32,f32")
#: ... with subtract, select, compare, pad, reverse, concatenate, abs, negate, divide and bf16.
AMX_2 = OpSet(AMX_1.ops + ",subtract,select,compare,pad,reverse,concatenate,abs,negate,divide",
              "u8,s8,s32,f32,bf16")

#: every list by (target, number)
OPSETS: dict[tuple[str, int], OpSet] = {
    ("gemmini", 1): GEMMINI_1, ("gemmini", 2): GEMMINI_2,
    ("qkv", 1): QKV_1, ("qkv", 2): QKV_2, ("qkv", 3): QKV_3,
    ("amx", 1): AMX_1, ("amx", 2): AMX_2,
}

#: the generators of a target's campaign cases by default (case i uses entry i % len). NNSmith's and
#: semantics.gen's small random graphs seldom reach a matrix unit: with host partitioning a 3-minute
#: campaign over them (and QKV's blocks) had 17% of its Gemmini and AMX cases and every QKV case of
#: theirs ``unsupported`` (nothing in them any instruction computes), and few Gemmini or AMX passes
#: used the array or a tile multiply. Eight cases in ten of Gemmini and AMX come from
#: fuzz/layers_gen.py's layer chains (every one offloads its matrix work; two of Gemmini's in the
#: output-stationary dataflow, ``layers_os``); QKV, which runs only
#: 64 x 64 bf16 blocks (NNSmith's dimensions go up to 24, semantics.gen's to 5), draws from
#: fuzz/blocks.py and fuzz/layers_gen.py, with one NNSmith case in ten kept for the record of what
#: it cannot run.
#: Gemmini's weight-stationary instructions: withheld from the compiler for the ``layers_os``
#: cases, whose programs then use the output-stationary dataflow (``preload_os`` / ``_zero``,
#: ``matmul_os``, ``store_os_acc``), which the compiler never picks while both are on offer. The
#: ``layers_bias`` cases withhold ``mvin_acc_s8`` (the int8 load into the accumulator), so an int8
#: bias goes through the array's D input (``matmul_ws_bias_acc`` / ``_spad``)
GEMMINI_WS = ("matmul_ws_acc", "matmul_ws_spad", "matmul_ws_bias_acc", "matmul_ws_bias_spad", "preload_ws",
              "preload_ws_t")
#: instructions withheld from the compiler for a (target, generator)'s cases
GENERATOR_WITHHOLD: dict[tuple[str, str], tuple[str, ...]] = {("gemmini", "layers_os"): GEMMINI_WS,
                                                              ("gemmini", "layers_bias"): ("mvin_acc_s8",)}

CAMPAIGN_GENERATORS: dict[str, tuple[str, ...]] = {
    "gemmini": ("layers", "nnsmith", "layers", "layers_os", "layers_bias", "gen", "layers", "layers_os", "layers_bias",
                "layers"),
    "qkv": ("blocks", "layers", "blocks", "layers", "blocks", "layers", "blocks", "layers", "blocks", "nnsmith"),
    "amx": ("layers", "nnsmith", "layers", "layers", "layers", "gen", "layers", "layers", "layers", "layers"),
}
