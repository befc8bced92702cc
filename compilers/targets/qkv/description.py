"""The QKV accelerator's description (seed 000 Fig. 3): a 16 KiB scratchpad d1 = (128, bf16[64]),
an 8 KiB intermediate buffer d2 = (64, bf16[64]), a gemm unit and a softmax unit; five data-movement
and two compute instructions. Addresses: HBM in bytes, d1/d2 in rows.

The sizes below are the definition every other part reads (the encoder, the RTL harness and its
testbenches, tests): :data:`HBM_SIZE`, :data:`D1_ROWS`, :data:`D2_ROWS`, :data:`ROW`.

Costs are illustrative defaults for the compiler's cost model (a 64 B/cycle DMA, a 64x64 gemm in
64 cycles after a 64-cycle fill, softmax at one row per 4 cycles); the RTL gives measured cycles.
"""

from __future__ import annotations

from ...isa import Accelerator, NumericContract

__all__ = ["HBM_SIZE", "D1_ROWS", "D2_ROWS", "ROW", "build"]

HBM_SIZE = 1 << 20          # bytes of HBM (d0)
D1_ROWS, D2_ROWS = 128, 64  # rows of the scratchpad d1 and the intermediate buffer d2
ROW = 64                    # bf16 elements per row of d1 and d2

N = tuple(range(1, D1_ROWS + 1))   # rows moved by one instruction


def build() -> Accelerator:
    qkv = Accelerator("qkv", hbm_size=HBM_SIZE, doc="QKV accelerator of the Act paper (seed 000 Fig. 3)")
    qkv.add_data_model("d1", access=[D1_ROWS], elem=[ROW], dtype="bf16", doc="16 KiB scratchpad")
    qkv.add_data_model("d2", access=[D2_ROWS], elem=[ROW], dtype="bf16", doc="8 KiB intermediate buffer")

    # (1) load_rm: n rows from HBM, row-major
    qkv.add_instruction(
        "load_rm", alpha={"n": N}, beta=["addr_in", "addr_out"],
        inputs=[("d0", ["addr_in"], ["n * 128"])], output=("d1", ["addr_out"], ["n"]),
        cycles="2 * n", hbm_bytes="n * 128", doc="y = bitcvt(reshape(x1))",
        semantics="""
ENTRY load_rm {
  x1 = u8[`n * 128`] parameter(0)
  a = u8[`n`,64,2] reshape(x1)
  ROOT y = bf16[`n`,64] bitcast-convert(a)
}""")

    # (2) load_cm: a 64 x 64 block from HBM, transposed (column-major into d1)
    qkv.add_instruction(
        "load_cm", alpha={"n": (64,)}, beta=["addr_in", "addr_out"],
        inputs=[("d0", ["addr_in"], ["n * 128"])], output=("d1", ["addr_out"], ["n"]),
        cycles="2 * n", hbm_bytes="n * 128", doc="y = transpose(bitcvt(reshape(x1))); square blocks only",
        semantics="""
ENTRY load_cm {
  x1 = u8[`n * 128`] parameter(0)
  a = u8[`n`,64,2] reshape(x1)
  b = bf16[`n`,64] bitcast-convert(a)
  ROOT y = bf16[64,`n`] transpose(b), dimensions={1,0}
}""")

    # (3) store_rm: n rows of d1 to HBM, row-major
    qkv.add_instruction(
        "store_rm", alpha={"n": N}, beta=["addr_in", "addr_out"],
        inputs=[("d1", ["addr_in"], ["n"])], output=("d0", ["addr_out"], ["n * 128"]),
        cycles="2 * n", hbm_bytes="n * 128", doc="y = reshape(bitcvt(x1))",
        semantics="""
ENTRY store_rm {
  x1 = bf16[`n`,64] parameter(0)
  a = u8[`n`,64,2] bitcast-convert(x1)
  ROOT y = u8[`n * 128`] reshape(a)
}""")

    # (4) store_cm: a 64 x 64 block of d1 to HBM, transposed
    qkv.add_instruction(
        "store_cm", alpha={"n": (64,)}, beta=["addr_in", "addr_out"],
        inputs=[("d1", ["addr_in"], ["n"])], output=("d0", ["addr_out"], ["n * 128"]),
        cycles="2 * n", hbm_bytes="n * 128", doc="y = transpose(reshape(bitcvt(x1))); square blocks only",
        semantics="""
ENTRY store_cm {
  x1 = bf16[`n`,64] parameter(0)
  a = bf16[64,`n`] transpose(x1), dimensions={1,0}
  b = u8[64,`n`,2] bitcast-convert(a)
  ROOT y = u8[`n * 128`] reshape(b)
}""")

    # d2 is written only by gemm, 64 rows at a time (softmax rewrites in place what it reads), and
    # a demand on an on-chip buffer is met by an instruction's whole output (the tiler's slice^H
    # names slices of HBM only): a mov or softmax of fewer rows meets no demand, so the compiler
    # searches n = 64 (the first 32 rows of an attention's result exit 3). The simulator, the
    # encoder and the RTL take every n (tests/compilers/test_qkv_instructions.py,
    # tests/rtl_harness/test_qkv_rtl.py).
    d2_rows = {"n": (64,)}

    # (5) mov: n rows from d2 to d1
    qkv.add_instruction(
        "mov", alpha={"n": tuple(range(1, 65))}, beta=["addr_in", "addr_out"], search=d2_rows,
        inputs=[("d2", ["addr_in"], ["n"])], output=("d1", ["addr_out"], ["n"]),
        cycles="n", doc="y = copy(x1)",
        semantics="""
ENTRY mov {
  x1 = bf16[`n`,64] parameter(0)
  ROOT y = bf16[`n`,64] copy(x1)
}""")

    # (6) gemm: 64x64 times 64x64 from d1 into d2 (f32 accumulation, one rounding to bf16)
    qkv.add_instruction(
        "gemm", alpha={}, beta=["addr_1", "addr_2", "addr_out"],
        inputs=[("d1", ["addr_1"], [64]), ("d1", ["addr_2"], [64])], output=("d2", ["addr_out"], [64]),
        cycles=128, doc="y = dot(x1, x2)",
        semantics="""
ENTRY gemm {
  x1 = bf16[64,64] parameter(0)
  x2 = bf16[64,64] parameter(1)
  ROOT y = bf16[64,64] dot(x1, x2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}""")

    # (7) softmax: row-wise softmax of n rows of d2, in place
    qkv.add_instruction(
        "softmax", alpha={"n": tuple(range(1, 65))}, beta=["addr"], search=d2_rows,
        inputs=[("d2", ["addr"], ["n"])], output=("d2", ["addr"], ["n"]),
        cycles="4 * n", doc="y = div(exp(x1), broadcast(reduce(exp(x1))))",
        contract=NumericContract(
            "exact", doc="bit-exact: the simulator evaluates g_theta; the RTL (rtl_harness/qkv/hdl) has an exp "
                         "table generated from the reference, the reference's bf16 row sum order and an exact "
                         "divider. One declared difference: the SIGN of a NaN output (0x7fc0 vs 0xffc0) in a row "
                         "whose input holds NaNs of both signs, at an element whose own input is not NaN: the "
                         "row sum then adds two NaNs and IEEE 754 leaves open which one an add returns. The RTL "
                         "returns the accumulator's (first operand's); the reference's numpy loops return the "
                         "first operand's in full 8-wide SIMD blocks and the second's in a loop's tail, i.e. by "
                         "element position (for n a multiple of 8 the two agree)"),
        semantics="""
add_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}

ENTRY softmax {
  x1 = bf16[`n`,64] parameter(0)
  e = bf16[`n`,64] exponential(x1)
  zero = bf16[] constant(0)
  s = bf16[`n`] reduce(e, zero), dimensions={1}, to_apply=add_bf16
  b = bf16[`n`,64] broadcast(s), dimensions={0}
  ROOT y = bf16[`n`,64] divide(e, b)
}""")
    return qkv
