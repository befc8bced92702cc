"""Intel AMX (tiles, TMUL) plus the AVX-512 subset of the oneDNN kernels K1-K5 of the Act paper
(appendix E), from the Intel SDM pseudocode (../shared/reference/amx.md). Addresses: HBM in bytes
(offsets from the base pointer the emitted C function receives), tiles and zmm registers by number.

State:
  tiles = ([8, 16], u8[64])   tmm0..tmm7, 16 rows x 64 bytes each (palette 1); an instruction
                              reads or writes a whole tile, tiles[t:+1, 0:+16] = u8[1,16,64].
  zmm   = ([32], u8[64])      zmm0..zmm31 as 64 bytes; f32[16] / s32[16] / u32[16] lanes are
                              little-endian bitcast-convert views (u8[16,4] <-> f32[16]).

Tile configuration (LDTILECFG) is not a modelled instruction. Palette 1 is fixed; each tile's
``rows`` / ``colsb`` are attributes α of the instructions that depend on them (tileloadd,
tilestored, tdpbusd: m = rows of C and A, 4k = colsb of A = 4 * rows of B, 4n = colsb of C and B).
The emitter (:mod:`.emit_c`) derives one palette-1 configuration from a program and
rejects a program that uses one tile with two different shapes, so the α values are exactly the
configuration the hardware runs with; each instruction declares the shape it uses its tiles
with (``config``), and the compiler's phase 2 keeps differently shaped uses on different tiles. As in the SDM, every tile write fills the whole 16 x 64-byte
register: bytes past colsb and rows past rows are zeroed (write_row_and_zero, zero_upper_rows);
tilezero zeroes the whole tile.

Restrictions of the model (a program outside them is rejected by a constraint, never mis-modelled):
  * tileloadd / tilestored stride is an α attribute with ``stride >= colsb`` (rows do not overlap):
    a strided access is one HBM data slice d0[addr : +(rows-1)*stride + colsb] whose semantics
    picks the rows. Overlapping strides (stride < colsb, stride 0 broadcasts) are not modelled.
    tilestored keeps the HBM bytes between rows (they are an input of its semantics).
  * tileloadd / tilestored colsb is a multiple of 4 (the hardware raises #UD otherwise).
  * start_row is 0 (no restarted, interrupted tile loads); base + stride*r is read with a
    non-negative stride only.
  * tdpbusd / tdpbf16ps need three distinct tiles (the SDM raises #UD otherwise).
  * Floating point: the HLO dialect's f32 operations read subnormals as zero and flush tiny
    results (DAZ/FTZ, docs/semantics.md). TDPBF16PS does exactly that whatever MXCSR says; the
    AVX-512 float instructions do it with MXCSR.DAZ = MXCSR.FTZ = 1 and RC = nearest-even, which
    the emitted C prologue sets (and restores). NaN results: NaN exactly where the hardware gives
    NaN; the NaN itself follows the dialect (an operand's NaN quieted, a fresh NaN 0xffc00000).
    Run natively on a Sapphire Rapids host (tests/compilers/test_amx_native.py), everything else
    is bit-identical, but the hardware's NaN differs in: TDPBF16PS (a fresh NaN is 0x7fc00000, a
    bf16 NaN operand's payload is kept differently) and VADDPS / VMULPS / VFMADD231PS with two NaN
    operands (another operand's NaN is chosen). Those NaN bits are not modelled.

Costs are illustrative defaults (Sapphire Rapids-like: a 16-cycle TMUL op, 8-cycle tile load and
store, 1-cycle AVX-512 op), not measurements.
"""

from __future__ import annotations

from ...isa import Accelerator

HBM_SIZE = 1 << 23       # bytes of the memory a program addresses: 8 MiB, a BERT-base FFN layer (128 x 3072 x 768) with its packed copies (5.6 MB)
TILES, TILE_ROWS, TILE_BYTES = 8, 16, 64
ZMMS = 32

ROWS = tuple(range(1, TILE_ROWS + 1))
# TILELOADD / TILESTORED fault (#UD) on a colsb that is not a multiple of 4: seen on a Sapphire
# Rapids host (colsb 1-3, 5-7, 9-11, 63 raise SIGILL; LDTILECFG and TILEZERO accept any colsb), so
# the model's domain holds the multiples of 4 only and a program outside it is rejected
COLSB = tuple(range(4, TILE_BYTES + 1, 4))
STRIDE = tuple(range(1, 4097))
DWORDS = tuple(range(1, 17))          # k (A.colsb / 4 = B.rows) and n (C.colsb / 4)

# an HLO fragment that reads zmm operand ``p`` (parameter index ``i``) as f32[16] named ``name``
def _f32(name: str, i: int) -> str:
    return (f"  {name}_b = u8[1,64] parameter({i})\n"
            f"  {name}_r = u8[16,4] reshape({name}_b)\n"
            f"  {name} = f32[16] bitcast-convert({name}_r)\n")


def _out_f32(v: str) -> str:
    return (f"  out_r = u8[16,4] bitcast-convert({v})\n"
            f"  ROOT y = u8[1,64] reshape(out_r)\n")


def _binary_ps(op: str) -> str:
    return ("ENTRY e {\n" + _f32("a", 0) + _f32("b", 1)
            + f"  s = f32[16] {op}(a, b)\n" + _out_f32("s") + "}")


# x86 MAXPS / MINPS: DAZ on both sources (a subnormal reads as a zero of its sign), then
# dst = (src1 OP src2) ? src1 : src2 -- so a NaN in either source, or two zeros of any signs, give
# src2 (unlike HLO maximum/minimum). ``maximum(v, v)`` / ``minimum(v, v)`` is exactly DAZ(v) with a
# NaN kept as is (its payload passes intact); rewrite_rules/x86.py states the same form.
def _maxmin_ps(direction: str) -> str:
    keep = "maximum" if direction == "GT" else "minimum"
    return ("ENTRY e {\n" + _f32("a", 0) + _f32("b", 1)
            + f"  pick = pred[16] compare(a, b), direction={direction}\n"
            f"  ad = f32[16] {keep}(a, a)\n"
            f"  bd = f32[16] {keep}(b, b)\n"
            "  s = f32[16] select(pick, ad, bd)\n" + _out_f32("s") + "}")


# x86 CVTPS2DQ / CVTTPS2DQ: the f32 lane rounded to nearest even (rne) or truncated (HLO's
# convert truncates), then s32; NaN and values outside [-2^31, 2^31) give 0x80000000.
def _cvt_ps2dq(name: str, rne: bool) -> str:
    rounded = "  n = f32[16] round-nearest-even(f)\n" if rne else ""
    v = "n" if rne else "f"
    return (f"ENTRY {name} {{\n"
            "  x = u8[1,64] parameter(0)\n"
            "  r = u8[16,4] reshape(x)\n"
            "  f = f32[16] bitcast-convert(r)\n" + rounded +
            "  lo = f32[] constant(-2147483648)\n"
            "  hi = f32[] constant(2147483648)\n"
            "  lob = f32[16] broadcast(lo), dimensions={}\n"
            "  hib = f32[16] broadcast(hi), dimensions={}\n"
            f"  ge = pred[16] compare({v}, lob), direction=GE\n"
            f"  lt = pred[16] compare({v}, hib), direction=LT\n"
            "  ok = pred[16] and(ge, lt)\n"
            f"  i = s32[16] convert({v})\n"
            "  ind = s32[] constant(-2147483648)\n"
            "  indb = s32[16] broadcast(ind), dimensions={}\n"
            "  s = s32[16] select(ok, i, indb)\n"
            "  o = u8[16,4] bitcast-convert(s)\n"
            "  ROOT y = u8[1,64] reshape(o)\n}")


# integer lanes of a zmm operand: ``dt`` lanes of ``nb`` bytes (s32: 16 x 4, s8 / u8: 64 x 1)
_LANES = {"s32": (16, 4), "s8": (64, 1), "u8": (64, 1)}


def _int_lanes(name: str, i: int, dt: str) -> str:
    lanes, nb = _LANES[dt]
    if nb == 1:
        view = f"  {name}_r = u8[64] reshape({name}_b)\n"
        return (f"  {name}_b = u8[1,64] parameter({i})\n" + view
                + (f"  {name} = {dt}[64] bitcast-convert({name}_r)\n" if dt != "u8" else f"  {name} = u8[64] copy({name}_r)\n"))
    return (f"  {name}_b = u8[1,64] parameter({i})\n"
            f"  {name}_r = u8[{lanes},{nb}] reshape({name}_b)\n"
            f"  {name} = {dt}[{lanes}] bitcast-convert({name}_r)\n")


def _binary_int(op: str, dt: str) -> str:
    """A lane-wise HLO ``op`` on ``dt`` lanes (integer add / subtract / multiply wrap, as x86's
    VPADD / VPSUB / VPMULL keep the low bits; minimum / maximum signed or unsigned by ``dt``)."""
    lanes, nb = _LANES[dt]
    out = (f"  o = u8[{lanes},{nb}] bitcast-convert(s)\n" if nb > 1 else
           ("  o = u8[64] bitcast-convert(s)\n" if dt != "u8" else "  o = u8[64] copy(s)\n"))
    return ("ENTRY e {\n" + _int_lanes("a", 0, dt) + _int_lanes("b", 1, dt)
            + f"  s = {dt}[{lanes}] {op}(a, b)\n" + out + "  ROOT y = u8[1,64] reshape(o)\n}")


_TDPBUSD = """
ENTRY tdpbusd {
  c = u8[1,16,64] parameter(0)
  a = u8[1,16,64] parameter(1)
  b = u8[1,16,64] parameter(2)
  c4 = u8[16,16,4] reshape(c)
  c32 = s32[16,16] bitcast-convert(c4)
  cs = s32[`m`,`n`] slice(c32), slice={[0:`m`], [0:`n`]}
  a2 = u8[16,64] reshape(a)
  as = u8[`m`,`4 * k`] slice(a2), slice={[0:`m`], [0:`4 * k`]}
  a32 = s32[`m`,`4 * k`] convert(as)
  b2 = u8[16,64] reshape(b)
  bs = u8[`k`,`4 * n`] slice(b2), slice={[0:`k`], [0:`4 * n`]}
  bsg = s8[`k`,`4 * n`] bitcast-convert(bs)
  b3 = s8[`k`,`n`,4] reshape(bsg)
  bt = s8[`k`,4,`n`] transpose(b3), dimensions={0,2,1}
  b4 = s8[`4 * k`,`n`] reshape(bt)
  b32 = s32[`4 * k`,`n`] convert(b4)
  d = s32[`m`,`n`] dot(a32, b32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = s32[`m`,`n`] add(cs, d)
  z = s32[] constant(0)
  p = s32[16,16] pad(s, z), padding=0_`16 - m`x0_`16 - n`
  pb = u8[16,16,4] bitcast-convert(p)
  ROOT y = u8[1,16,64] reshape(pb)
}"""


def build() -> Accelerator:
    amx = Accelerator("amx", hbm_size=HBM_SIZE,
                      doc="Intel AMX (palette 1) + AVX-512 subset of the oneDNN kernels (Act appendix E)")
    amx.add_data_model("tiles", access=[TILES, TILE_ROWS], elem=[TILE_BYTES], dtype="u8",
                       doc="tmm0..tmm7, 16 rows x 64 bytes (palette 1)")
    amx.add_data_model("zmm", access=[ZMMS], elem=[64], dtype="u8", doc="zmm0..zmm31, 512 bits each")
    tile = lambda v: ("tiles", [v, 0], [1, TILE_ROWS])  # noqa: E731
    zmm = lambda v: ("zmm", [v], [1])  # noqa: E731

    # ---------------------------------------------------------------------------------------
    # AMX
    # ---------------------------------------------------------------------------------------

    # (1) tilezero tmm(t): the whole tile becomes zero
    amx.add_instruction(
        "tilezero", alpha={}, beta=["t"], inputs=[], output=tile("t"), cycles=1,
        doc="TILEZERO: tile t = 0 (all 16 rows x 64 bytes)",
        semantics="""
ENTRY tilezero {
  z = u8[] constant(0)
  ROOT y = u8[1,16,64] broadcast(z), dimensions={}
}""")

    # (2) tileloadd tmm(t), [addr + stride*r]: row r < rows reads colsb bytes; the rest is zeroed
    amx.add_instruction(
        "tileloadd", alpha={"rows": ROWS, "colsb": COLSB, "stride": STRIDE}, beta=["t", "addr"],
        inputs=[("d0", ["addr"], ["(rows - 1) * stride + colsb"])], output=tile("t"),
        constraints=["stride >= colsb"], cycles=8, hbm_bytes="rows * colsb", config={"t": ["rows", "colsb"]},
        doc="TILELOADD: row r of tile t = HBM[addr + r*stride : +colsb] for r < rows, zero elsewhere",
        classes={"stride": {"dense": "stride == colsb", "strided": "stride != colsb"}},
        semantics="""
ENTRY tileloadd {
  x = u8[`(rows - 1) * stride + colsb`] parameter(0)
  z = u8[] constant(0)
  p = u8[`rows * stride`] pad(x, z), padding=0_`stride - colsb`
  r = u8[`rows`,`stride`] reshape(p)
  s = u8[`rows`,`colsb`] slice(r), slice={[0:`rows`], [0:`colsb`]}
  t = u8[16,64] pad(s, z), padding=0_`16 - rows`x0_`64 - colsb`
  ROOT y = u8[1,16,64] reshape(t)
}""")

    # (3) tilestored [addr + stride*r], tmm(t): colsb bytes of each of rows rows; bytes between
    #     rows keep their value
    amx.add_instruction(
        "tilestored", alpha={"rows": ROWS, "colsb": COLSB, "stride": STRIDE}, beta=["t", "addr"],
        inputs=[tile("t"), ("d0", ["addr"], ["(rows - 1) * stride + colsb"])],
        output=("d0", ["addr"], ["(rows - 1) * stride + colsb"]),
        constraints=["stride >= colsb"], cycles=8, hbm_bytes="rows * colsb", config={"t": ["rows", "colsb"]},
        doc="TILESTORED: HBM[addr + r*stride : +colsb] = row r of tile t for r < rows",
        classes={"stride": {"dense": "stride == colsb", "strided": "stride != colsb"}},
        semantics="""
ENTRY tilestored {
  x = u8[1,16,64] parameter(0)
  old = u8[`(rows - 1) * stride + colsb`] parameter(1)
  z = u8[] constant(0)
  t = u8[16,64] reshape(x)
  s = u8[`rows`,`colsb`] slice(t), slice={[0:`rows`], [0:`colsb`]}
  sp = u8[`rows`,`stride`] pad(s, z), padding=0_0x0_`stride - colsb`
  op = u8[`rows * stride`] pad(old, z), padding=0_`stride - colsb`
  o = u8[`rows`,`stride`] reshape(op)
  col = s32[`rows`,`stride`] iota(), iota_dimension=1
  cb = s32[] constant(`colsb`)
  cbb = s32[`rows`,`stride`] broadcast(cb), dimensions={}
  mine = pred[`rows`,`stride`] compare(col, cbb), direction=LT
  m = u8[`rows`,`stride`] select(mine, sp, o)
  f = u8[`rows * stride`] reshape(m)
  ROOT y = u8[`(rows - 1) * stride + colsb`] slice(f), slice={[0:`(rows - 1) * stride + colsb`]}
}""")

    # (4) tdpbusd tmm(c), tmm(a), tmm(b): C[i][j] (s32, wrapping) +=
    #     sum_kk sum_{q<4} u8(A[i][4kk+q]) * s8(B[kk][4j+q]); B in VNNI layout (k rows x 4n bytes)
    amx.add_instruction(
        "tdpbusd", alpha={"m": ROWS, "k": DWORDS, "n": DWORDS}, beta=["c", "a", "b"],
        inputs=[tile("c"), tile("a"), tile("b")], output=tile("c"),
        constraints=["c != a", "c != b", "a != b"], cycles=16,
        config={"c": ["m", "4 * n"], "a": ["m", "4 * k"], "b": ["k", "4 * n"]},
        doc="TDPBUSD: C[m x n s32] += A[m x 4k u8] . B[k x 4n s8, VNNI]; rest of C zeroed",
        semantics=_TDPBUSD)

    # (5) tdpbf16ps tmm(c), tmm(a), tmm(b): per (i, j) two f32 FMA chains over kk from +0.0 (even
    #     and odd bf16 lanes; DAZ in, FTZ out, RNE), then C[i][j] + (even + odd). The chains are
    #     dots (the dialect's dot is exactly a sequential f32 FMA chain with DAZ/FTZ); one zero
    #     term is prepended so the chain starts from +0.0 also when k = 1 (a one-term dot is a
    #     plain multiply, whose -0.0 the hardware's +0.0 + (-0.0) would not keep).
    amx.add_instruction(
        "tdpbf16ps", alpha={"m": ROWS, "k": DWORDS, "n": DWORDS}, beta=["c", "a", "b"],
        inputs=[tile("c"), tile("a"), tile("b")], output=tile("c"),
        constraints=["c != a", "c != b", "a != b"], cycles=16,
        config={"c": ["m", "4 * n"], "a": ["m", "4 * k"], "b": ["k", "4 * n"]},
        doc="TDPBF16PS: C[m x n f32] += A[m x 2k bf16] . B[k x 2n bf16 pairs]; even/odd chains",
        semantics="""
ENTRY tdpbf16ps {
  c = u8[1,16,64] parameter(0)
  a = u8[1,16,64] parameter(1)
  b = u8[1,16,64] parameter(2)
  c4 = u8[16,16,4] reshape(c)
  cf = f32[16,16] bitcast-convert(c4)
  cs = f32[`m`,`n`] slice(cf), slice={[0:`m`], [0:`n`]}
  a3 = u8[16,32,2] reshape(a)
  ah = bf16[16,32] bitcast-convert(a3)
  as = bf16[`m`,`2 * k`] slice(ah), slice={[0:`m`], [0:`2 * k`]}
  af = f32[`m`,`2 * k`] convert(as)
  ap = f32[`m`,`k`,2] reshape(af)
  ae3 = f32[`m`,`k`,1] slice(ap), slice={[0:`m`], [0:`k`], [0:1]}
  ao3 = f32[`m`,`k`,1] slice(ap), slice={[0:`m`], [0:`k`], [1:2]}
  ae = f32[`m`,`k`] reshape(ae3)
  ao = f32[`m`,`k`] reshape(ao3)
  b3 = u8[16,32,2] reshape(b)
  bh = bf16[16,32] bitcast-convert(b3)
  bs = bf16[`k`,`2 * n`] slice(bh), slice={[0:`k`], [0:`2 * n`]}
  bf = f32[`k`,`2 * n`] convert(bs)
  bp = f32[`k`,`n`,2] reshape(bf)
  be3 = f32[`k`,`n`,1] slice(bp), slice={[0:`k`], [0:`n`], [0:1]}
  bo3 = f32[`k`,`n`,1] slice(bp), slice={[0:`k`], [0:`n`], [1:2]}
  be = f32[`k`,`n`] reshape(be3)
  bo = f32[`k`,`n`] reshape(bo3)
  z = f32[] constant(0)
  ae0 = f32[`m`,`k + 1`] pad(ae, z), padding=0_0x1_0
  ao0 = f32[`m`,`k + 1`] pad(ao, z), padding=0_0x1_0
  be0 = f32[`k + 1`,`n`] pad(be, z), padding=1_0x0_0
  bo0 = f32[`k + 1`,`n`] pad(bo, z), padding=1_0x0_0
  even = f32[`m`,`n`] dot(ae0, be0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  odd = f32[`m`,`n`] dot(ao0, bo0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[`m`,`n`] add(even, odd)
  s = f32[`m`,`n`] add(cs, t)
  p = f32[16,16] pad(s, z), padding=0_`16 - m`x0_`16 - n`
  pb = u8[16,16,4] bitcast-convert(p)
  ROOT y = u8[1,16,64] reshape(pb)
}""")

    # ---------------------------------------------------------------------------------------
    # AVX-512 (EVEX, 512-bit, no masking)
    # ---------------------------------------------------------------------------------------

    # (6) vmovups zmm(dst), [addr]
    amx.add_instruction(
        "vmovups_load", alpha={}, beta=["dst", "addr"], inputs=[("d0", ["addr"], [64])], output=zmm("dst"),
        hbm_bytes=64, doc="VMOVUPS zmm, m512: zmm[dst] = HBM[addr : +64]",
        semantics="""
ENTRY vmovups_load {
  x = u8[64] parameter(0)
  ROOT y = u8[1,64] reshape(x)
}""")

    # (7) vmovups [addr], zmm(src)
    amx.add_instruction(
        "vmovups_store", alpha={}, beta=["src", "addr"], inputs=[zmm("src")], output=("d0", ["addr"], [64]),
        hbm_bytes=64, doc="VMOVUPS m512, zmm: HBM[addr : +64] = zmm[src]",
        semantics="""
ENTRY vmovups_store {
  x = u8[1,64] parameter(0)
  ROOT y = u8[64] reshape(x)
}""")

    # (8) vpxord zmm(dst), zmm(a), zmm(b)   (vpxord z, z, z is the zeroing idiom)
    amx.add_instruction(
        "vpxord", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VPXORD: zmm[dst] = zmm[a] ^ zmm[b]",
        semantics="""
ENTRY vpxord {
  a = u8[1,64] parameter(0)
  b = u8[1,64] parameter(1)
  ROOT y = u8[1,64] xor(a, b)
}""")

    # (8b) vpandd zmm(dst), zmm(a), zmm(b): dword-lane bitwise and (clears sign bits with a mask)
    amx.add_instruction(
        "vpandd", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VPANDD: zmm[dst] = zmm[a] & zmm[b] (u32 lanes)",
        semantics="""
ENTRY vpandd {
  a_b = u8[1,64] parameter(0)
  a_r = u8[16,4] reshape(a_b)
  a = u32[16] bitcast-convert(a_r)
  b_b = u8[1,64] parameter(1)
  b_r = u8[16,4] reshape(b_b)
  b = u32[16] bitcast-convert(b_r)
  s = u32[16] and(a, b)
  o = u8[16,4] bitcast-convert(s)
  ROOT y = u8[1,64] reshape(o)
}""")

    # (9) vbroadcastss zmm(dst), [addr]
    amx.add_instruction(
        "vbroadcastss", alpha={}, beta=["dst", "addr"], inputs=[("d0", ["addr"], [4])], output=zmm("dst"),
        hbm_bytes=4, doc="VBROADCASTSS zmm, m32: the f32 at HBM[addr] in all 16 lanes",
        semantics="""
ENTRY vbroadcastss {
  x = u8[4] parameter(0)
  b = u8[16,4] broadcast(x), dimensions={1}
  ROOT y = u8[1,64] reshape(b)
}""")

    # (10) vfmadd231ps zmm(dst), zmm(a), zmm(b): dst = a * b + dst, one rounding
    amx.add_instruction(
        "vfmadd231ps", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b"), zmm("dst")],
        output=zmm("dst"), doc="VFMADD231PS: zmm[dst] = fma(zmm[a], zmm[b], zmm[dst]) (f32)",
        semantics="ENTRY e {\n" + _f32("a", 0) + _f32("b", 1) + _f32("c", 2)
        + "  s = f32[16] fma(a, b, c)\n" + _out_f32("s") + "}")

    # (11) vaddps zmm(dst), zmm(a), zmm(b)
    amx.add_instruction(
        "vaddps", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VADDPS: zmm[dst] = zmm[a] + zmm[b] (f32)", semantics=_binary_ps("add"))

    # (12) vaddps zmm(dst), zmm(a), [addr]   (K4's listing adds a memory operand)
    amx.add_instruction(
        "vaddps_mem", alpha={}, beta=["dst", "a", "addr"], inputs=[zmm("a"), ("d0", ["addr"], [64])],
        output=zmm("dst"), hbm_bytes=64, doc="VADDPS zmm, zmm, m512: zmm[dst] = zmm[a] + HBM[addr : +64] (f32)",
        semantics="ENTRY e {\n" + _f32("a", 0)
        + "  m = u8[64] parameter(1)\n  mr = u8[16,4] reshape(m)\n  b = f32[16] bitcast-convert(mr)\n"
        + "  s = f32[16] add(a, b)\n" + _out_f32("s") + "}")

    # (13) vmulps zmm(dst), zmm(a), zmm(b)
    amx.add_instruction(
        "vmulps", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VMULPS: zmm[dst] = zmm[a] * zmm[b] (f32)", semantics=_binary_ps("multiply"))

    # (14) vmaxps zmm(dst), zmm(a), zmm(b): a > b ? a : b (after DAZ); NaN or both zero -> b
    amx.add_instruction(
        "vmaxps", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VMAXPS: zmm[dst] = a > b ? a : b per lane (x86 rule: NaN or two zeros give b)",
        semantics=_maxmin_ps("GT"))

    # (15) vminps zmm(dst), zmm(a), zmm(b): a < b ? a : b (after DAZ); NaN or both zero -> b
    amx.add_instruction(
        "vminps", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VMINPS: zmm[dst] = a < b ? a : b per lane (x86 rule: NaN or two zeros give b)",
        semantics=_maxmin_ps("LT"))

    # (16) vcvtdq2ps zmm(dst), zmm(src): s32 -> f32, round to nearest even
    amx.add_instruction(
        "vcvtdq2ps", alpha={}, beta=["dst", "src"], inputs=[zmm("src")], output=zmm("dst"),
        doc="VCVTDQ2PS: s32 lanes -> f32 (RNE)",
        semantics="""
ENTRY vcvtdq2ps {
  x = u8[1,64] parameter(0)
  r = u8[16,4] reshape(x)
  i = s32[16] bitcast-convert(r)
  f = f32[16] convert(i)
  o = u8[16,4] bitcast-convert(f)
  ROOT y = u8[1,64] reshape(o)
}""")

    # (17) vcvtps2dq zmm(dst), zmm(src): f32 -> s32 rounding to nearest even (MXCSR.RC = RNE);
    #      NaN and values outside [-2^31, 2^31) give the integer indefinite 0x80000000
    amx.add_instruction(
        "vcvtps2dq", alpha={}, beta=["dst", "src"], inputs=[zmm("src")], output=zmm("dst"),
        doc="VCVTPS2DQ: f32 lanes -> s32 (RNE; NaN / out of range -> 0x80000000)",
        semantics=_cvt_ps2dq("vcvtps2dq", rne=True))

    # (17b) vcvttps2dq zmm(dst), zmm(src): f32 -> s32 truncating (toward zero, whatever MXCSR.RC);
    #       the same integer indefinite
    amx.add_instruction(
        "vcvttps2dq", alpha={}, beta=["dst", "src"], inputs=[zmm("src")], output=zmm("dst"),
        doc="VCVTTPS2DQ: f32 lanes -> s32 (truncation; NaN / out of range -> 0x80000000)",
        semantics=_cvt_ps2dq("vcvttps2dq", rne=False))

    # (18) vpmovusdb xmm(dst), zmm(src): u32 lanes -> u8 with unsigned saturation; the 16 bytes
    #      land in the low 128 bits of zmm(dst), the upper 384 bits are zeroed (EVEX)
    amx.add_instruction(
        "vpmovusdb", alpha={}, beta=["dst", "src"], inputs=[zmm("src")], output=zmm("dst"),
        doc="VPMOVUSDB xmm, zmm: min(u32 lane, 255) -> bytes 0..15 of zmm[dst], rest zero",
        semantics="""
ENTRY vpmovusdb {
  x = u8[1,64] parameter(0)
  r = u8[16,4] reshape(x)
  u = u32[16] bitcast-convert(r)
  c = u32[] constant(255)
  cb = u32[16] broadcast(c), dimensions={}
  m = u32[16] minimum(u, cb)
  b = u8[16] convert(m)
  z = u8[] constant(0)
  p = u8[64] pad(b, z), padding=0_48
  ROOT y = u8[1,64] reshape(p)
}""")

    # (19) vpmovusdb [addr], zmm(src): the same 16 saturated bytes stored to HBM
    amx.add_instruction(
        "vpmovusdb_store", alpha={}, beta=["src", "addr"], inputs=[zmm("src")], output=("d0", ["addr"], [16]),
        hbm_bytes=16, doc="VPMOVUSDB m128, zmm: HBM[addr : +16] = min(u32 lane, 255)",
        semantics="""
ENTRY vpmovusdb_store {
  x = u8[1,64] parameter(0)
  r = u8[16,4] reshape(x)
  u = u32[16] bitcast-convert(r)
  c = u32[] constant(255)
  cb = u32[16] broadcast(c), dimensions={}
  m = u32[16] minimum(u, cb)
  ROOT y = u8[16] convert(m)
}""")

    # (20) vmovdqu8 zmm(dst){k}{z}, [addr] with k = the low n bits: n bytes loaded, the rest zero
    #      (AVX512BW; masked-off bytes are not read, so the load never reaches past HBM[addr + n])
    amx.add_instruction(
        "vmovdqu8_load", alpha={"n": tuple(range(1, 65))}, beta=["dst", "addr"], inputs=[("d0", ["addr"], ["n"])],
        output=zmm("dst"), cycles=2, hbm_bytes="n",
        doc="VMOVDQU8 zmm{k}{z}, m512 (k = low n bits): zmm[dst] = HBM[addr : +n], bytes n..63 zero",
        semantics="""
ENTRY vmovdqu8_load {
  x = u8[`n`] parameter(0)
  z = u8[] constant(0)
  p = u8[64] pad(x, z), padding=0_`64 - n`
  ROOT y = u8[1,64] reshape(p)
}""")

    # (21) vmovdqu8 [addr]{k}, zmm(src) with k = the low n bits: n bytes stored, the rest of HBM kept
    amx.add_instruction(
        "vmovdqu8_store", alpha={"n": tuple(range(1, 65))}, beta=["src", "addr"], inputs=[zmm("src")],
        output=("d0", ["addr"], ["n"]), cycles=2, hbm_bytes="n",
        doc="VMOVDQU8 m512{k}, zmm (k = low n bits): HBM[addr : +n] = zmm[src] bytes 0..n-1",
        semantics="""
ENTRY vmovdqu8_store {
  x = u8[1,64] parameter(0)
  r = u8[64] reshape(x)
  ROOT y = u8[`n`] slice(r), slice={[0:`n`]}
}""")

    # (22-32) integer lanes: VPADDD / VPSUBD / VPMULLD / VPMINSD / VPMAXSD (s32 x 16, AVX512F),
    #         VPADDB / VPSUBB / VPMINSB / VPMAXSB (s8 x 64) and VPMINUB / VPMAXUB (u8 x 64, AVX512BW)
    for name, op, dt, what in (
            ("vpaddd", "add", "s32", "+ (wrapping)"), ("vpsubd", "subtract", "s32", "- (wrapping)"),
            ("vpmulld", "multiply", "s32", "* (low 32 bits)"), ("vpminsd", "minimum", "s32", "min (signed)"),
            ("vpmaxsd", "maximum", "s32", "max (signed)"),
            ("vpaddb", "add", "s8", "+ (wrapping)"), ("vpsubb", "subtract", "s8", "- (wrapping)"),
            ("vpminsb", "minimum", "s8", "min (signed)"), ("vpmaxsb", "maximum", "s8", "max (signed)"),
            ("vpminub", "minimum", "u8", "min (unsigned)"), ("vpmaxub", "maximum", "u8", "max (unsigned)")):
        amx.add_instruction(
            name, alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
            doc=f"{name.upper()}: zmm[dst] = zmm[a] {what} zmm[b] per {dt} lane", semantics=_binary_int(op, dt))

    # (33) tdpbssd tmm(c), tmm(a), tmm(b): as tdpbusd with A signed (s8 x s8, the middle end's
    #      GEMM tiles); last, so the paper kernels' instruction order is unchanged
    amx.add_instruction(
        "tdpbssd", alpha={"m": ROWS, "k": DWORDS, "n": DWORDS}, beta=["c", "a", "b"],
        inputs=[tile("c"), tile("a"), tile("b")], output=tile("c"),
        constraints=["c != a", "c != b", "a != b"], cycles=16,
        config={"c": ["m", "4 * n"], "a": ["m", "4 * k"], "b": ["k", "4 * n"]},
        doc="TDPBSSD: C[m x n s32] += A[m x 4k s8] . B[k x 4n s8, VNNI]; rest of C zeroed",
        semantics=_TDPBUSD.replace("ENTRY tdpbusd", "ENTRY tdpbssd").replace(
            "  a32 = s32[`m`,`4 * k`] convert(as)",
            "  asg = s8[`m`,`4 * k`] bitcast-convert(as)\n  a32 = s32[`m`,`4 * k`] convert(asg)"))

    # (34) vpermt2b zmm(dst), zmm(idx), zmm(b) with dst = a on entry (AVX512_VBMI): byte i of the
    #      result is byte idx[i] & 127 of the 128 bytes a ++ b (the middle end's repacking of
    #      row-major weights into the VNNI layout); last, as tdpbssd
    amx.add_instruction(
        "vpermt2b", alpha={}, beta=["dst", "a", "idx", "b"], inputs=[zmm("a"), zmm("idx"), zmm("b")],
        output=zmm("dst"),
        doc="VPERMT2B: zmm[dst] = (zmm[a] ++ zmm[b])[zmm[idx] & 127] per byte (as the intrinsic "
            "_mm512_permutex2var_epi8: any dst; the C compiler adds the move the destructive encoding needs)",
        semantics="""
ENTRY vpermt2b {
  a = u8[1,64] parameter(0)
  i = u8[1,64] parameter(1)
  b = u8[1,64] parameter(2)
  ab = u8[2,64] concatenate(a, b), dimensions={0}
  t = u8[128] reshape(ab)
  ir = u8[64] reshape(i)
  m = u8[] constant(127)
  mb = u8[64] broadcast(m), dimensions={}
  k = u8[64] and(ir, mb)
  k32 = s32[64] convert(k)
  k2 = s32[64,1] reshape(k32)
  g = u8[64] gather(t, k2), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
  ROOT y = u8[1,64] reshape(g)
}""")

    # (35) vpmovdb xmm(dst), zmm(src): each s32 lane's low byte (truncation) into the low 128 bits
    #      of zmm(dst), the upper 384 bits zeroed (EVEX): the store of an s8 x s8 -> s8 dot, whose
    #      sums wrap modulo 256
    amx.add_instruction(
        "vpmovdb", alpha={}, beta=["dst", "src"], inputs=[zmm("src")], output=zmm("dst"),
        doc="VPMOVDB xmm, zmm: the low byte of each u32 lane -> bytes 0..15 of zmm[dst], rest zero",
        semantics="""
ENTRY vpmovdb {
  x = u8[1,64] parameter(0)
  r = u8[16,4] reshape(x)
  s = u8[16,1] slice(r), slice={[0:16], [0:1]}
  b = u8[16] reshape(s)
  z = u8[] constant(0)
  p = u8[64] pad(b, z), padding=0_48
  ROOT y = u8[1,64] reshape(p)
}""")

    # (36) vpaddsb zmm(dst), zmm(a), zmm(b) (AVX512BW): s8 lanes added with signed saturation (the
    #      residual add of two int8 activations, :mod:`compilers.middle.glue`); last, as tdpbssd
    amx.add_instruction(
        "vpaddsb", alpha={}, beta=["dst", "a", "b"], inputs=[zmm("a"), zmm("b")], output=zmm("dst"),
        doc="VPADDSB: zmm[dst] = sat8(zmm[a] + zmm[b]) per s8 lane (signed saturation)",
        semantics="ENTRY vpaddsb {\n" + _int_lanes("a", 0, "s8") + _int_lanes("b", 1, "s8") + """  a32 = s32[64] convert(a)
  b32 = s32[64] convert(b)
  s32s = s32[64] add(a32, b32)
  lo = s32[] constant(-128)
  hi = s32[] constant(127)
  c = s32[64] clamp(lo, s32s, hi)
  c8 = s8[64] convert(c)
  o = u8[64] bitcast-convert(c8)
  ROOT y = u8[1,64] reshape(o)
}""")
    amx.tile_only = ("tdpbssd", "vpermt2b", "vpmovdb", "vpaddsb")
    return amx
