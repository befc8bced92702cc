"""Gemmini (ucb-bar/gemmini), DIM x DIM int8 systolic array, compiler-level instructions.

Facts: ../shared/reference/gemmini.md (gathered from Gemmini's README, Scala sources, the
gemmini-rocc-tests headers and the Spike functional model; no Gemmini code is copied). The
machine-level command stream (funct/rs1/rs2 words, config state) is modelled separately in
:mod:`compilers.targets.gemmini.stream`, with an encoder from these instructions to that stream and
an independent simulator of it; the property test checks that the two levels agree.

The sizes below are the definition every other part reads (the stream model, the RTL harness and
its testbenches, tests, benchmarks): :data:`DIM`, :data:`SPAD_ROWS`, :data:`ACC_ROWS`,
:data:`HBM_SIZE`, and the array's result width :data:`ARRAY_BITS`.

Buffers (addresses: HBM in bytes, spad/acc in rows)::

    d0   = ([8 MiB], u8[])           HBM (the operands and result of a 12544x64x256 layer fit)
    spad = ([16384, DIM], s8[])      scratchpad: 4 banks x 4096 rows of DIM int8
    acc  = ([1024, DIM], s32[])      accumulator: 2 banks x 512 rows of DIM int32
    pe   = ([DIM, DIM], s32[])       the array's latched state: WS weights or OS partial sums

spad and acc have two access dimensions [row, column] and an empty element shape, so a move of
``rows x cols`` (cols <= DIM) is the slice ``spad[a:+rows, 0:+cols]``, as Act's public model does.
The array state ``pe`` is an explicit buffer because the formalism has no hidden state: every
instruction is a pure function of its input slices.

Numeric contract: every instruction is **exact** (bit-exact with the stream model and with
Gemmini's gold-model rules); scales are fp32 bit patterns in α (``u32`` constant + bitcast):

- mvin to the scratchpad: ``x -> f32 -> x * scale (f32, RNE) -> round half to even -> saturate
  to int8``. (DAZ/FTZ in the HLO multiply cannot change the result: a product below 2^-126
  rounds to 0 either way.)
- mvout from the accumulator, scaled: ``x int32 -> f32 (RNE) -> * acc_scale (f32, RNE) ->
  round half to even -> saturate to int8 -> ReLU (after the clip)``.
- results written by the array to the scratchpad: OS rounding right shift by ``shift`` (round
  half to even, gemmini.md's ROUNDING_RIGHT_SHIFT), saturate to int8, then ReLU; WS: shift 0.
- the array computes in 20-bit two's complement (spatialArrayOutputType = SInt(20)), which this
  model **reproduces**: every array result is wrapped to 20 bits (sign-extended into int32)
  before it is written. One WS tile or one OS step cannot overflow 20 bits for DIM <= 31 (the
  wrap is then the identity); a long OS accumulation chain wraps as the RTL does. (Spike computes
  in int32; the RTL and the Gemmini CI agree with it only while no partial sum overflows.)
- accumulator adds (bit 30, ``accumulate=1``) wrap in int32.

Differences from real Gemmini (deliberate):

1. Scales come from a finite α domain (:data:`SCALES`: 0, powers of two 2^-24..2^4, k/16 for
   k <= 64, a few negative and irregular values); no NaN, infinity or subnormal scales.
2. mvin from HBM address 0 loads zeros in Spike; the compiler level forbids ``dram = 0``
   (constraint ``dram >= 1``); the stream model implements the zero load.
3. Moves are at most DIM columns (one DIM-wide block; MAX_BYTES = 64 would allow 4 int8 blocks
   per mvin); A_stride = C_stride = 1 and no A transpose (the stream model implements the
   config fields, the encoder sets 1/1, A untransposed, and B_transpose only for ``preload_ws_t``,
   whose rows / cols follow Spike's gemmini.cc: they bound B as the array sees it); mvin into the
   accumulator uses scale 1.0.
4. One ``pe`` register for both dataflows: weights preloaded in WS and partial sums in OS are
   the same state (in the RTL they are different registers), so a program that switches
   dataflow without a fresh preload reads the other dataflow's values. The encoder and the
   stream model follow the same rule, so the two levels still agree.
5. Preload/compute pairing: ``preload_*`` must be immediately followed by its ``matmul_*`` and
   ``store_os_*`` must immediately follow ``matmul_os`` (they become one PRELOAD + COMPUTE
   command pair); the simulator accepts any order, the encoder rejects other orders.
6. Not modelled: pooling, norm (config rs1[1:0] = 3), the loop FSMs (funct 8-13, 15-21),
   activations other than ReLU, the TLB (FLUSH is a no-op), bank conflicts and timing.

Costs are estimates (no RTL measurement here): the DMA moves one DIM-element row per cycle;
a compute streams DIM rows through the DIM x DIM array (DIM*DIM MACs per cycle) in DIM cycles;
a preload takes DIM cycles.
"""

from __future__ import annotations

import struct

from ...isa import Accelerator, NumericContract

__all__ = ["DIM", "SPAD_ROWS", "ACC_ROWS", "HBM_SIZE", "ARRAY_BITS", "STRIDES", "SCALES", "ONE", "WS_MATMULS",
           "f32_bits", "bits_f32", "build"]

DIM = 16                 # the systolic array is DIM x DIM; a scratchpad / accumulator row holds DIM elements
SPAD_ROWS = 16384        # scratchpad rows (4 banks x 4096)
ACC_ROWS = 1024          # accumulator rows (2 banks x 512)
HBM_SIZE = 1 << 23       # bytes of HBM / DRAM (d0): 8 MiB, the operands of a 12544x64x256 layer
ARRAY_BITS = 20          # the array computes in 20-bit two's complement (spatialArrayOutputType = SInt(20))
STRIDES = tuple(range(1, 4097))


def f32_bits(x: float) -> int:
    """The fp32 bit pattern of ``x`` as an unsigned int."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def _scales() -> tuple[int, ...]:
    vals = {0.0, -1.0, -0.5, -1.5, -0.25, 1 / 3, 2 / 3, 0.1, 0.7, 0.123456, 1e-3, 3.14159}
    vals |= {2.0 ** -k for k in range(0, 25)} | {2.0 ** k for k in range(1, 5)}
    vals |= {k / 16 for k in range(1, 65)}
    return tuple(sorted({f32_bits(v) for v in vals}))


#: the fp32 bit patterns a scale attribute may take (difference 1 in the module doc)
SCALES = _scales()
ONE = f32_bits(1.0)

_ZERO_CONTRACT = NumericContract("exact", doc="bit-exact: integer arithmetic, fp32 scale with one RNE "
                                              "rounding, round half to even, saturation")


def _rows(dim: int) -> tuple[int, ...]:
    return tuple(range(1, dim + 1))


# --- HLO fragments (backtick placeholders are α expressions; @D is DIM) -------------------------

def _dram_read(eb: int, dtype: str) -> str:
    """Lines reading a strided rows x cols block of ``dtype`` (``eb`` bytes) from parameter 0 -> v."""
    w = "`cols`" if eb == 1 else f"`cols * {eb}`"
    lines = f"""
  x = u8[`(rows - 1) * stride + cols * {eb}`] parameter(0)
  z8 = u8[] constant(0)
  xp = u8[`rows * stride`] pad(x, z8), padding=0_`stride - cols * {eb}`
  xr = u8[`rows`,`stride`] reshape(xp)
  xb = u8[`rows`,{w}] slice(xr), slice={{[0:`rows`], [0:`cols * {eb}`]}}"""
    if eb == 1:
        return lines + f"\n  v = {dtype}[`rows`,`cols`] bitcast-convert(xb)"
    return lines + f"""
  x4 = u8[`rows`,`cols`,{eb}] reshape(xb)
  v = {dtype}[`rows`,`cols`] bitcast-convert(x4)"""


def _dram_write(eb: int, src: str) -> str:
    """Lines writing the bytes of ``src`` (rows x cols) into the strided old HBM slice (parameter 1)."""
    if eb == 1:
        b = f"  b = u8[`rows`,`cols`] bitcast-convert({src})"
    else:
        b = f"""  b4 = u8[`rows`,`cols`,{eb}] bitcast-convert({src})
  b = u8[`rows`,`cols * {eb}`] reshape(b4)"""
    return f"""
  old = u8[`(rows - 1) * stride + cols * {eb}`] parameter(1)
  z8 = u8[] constant(0)
  op = u8[`rows * stride`] pad(old, z8), padding=0_`stride - cols * {eb}`
  o2 = u8[`rows`,`stride`] reshape(op)
{b}
  i0 = s32[] constant(0)
  u = u8[`rows`,`stride`] dynamic-update-slice(o2, b, i0, i0)
  f = u8[`rows * stride`] reshape(u)
  ROOT y = u8[`(rows - 1) * stride + cols * {eb}`] slice(f), slice={{[0:`(rows - 1) * stride + cols * {eb}`]}}"""


def _scale_to_s8(src: str, shape: str, scale: str, out: str) -> str:
    """``out`` = saturate_int8(round_half_even(f32(src) * scale))."""
    return f"""
  sf = f32[{shape}] convert({src})
  sk = u32[] constant(`{scale}`)
  sc = f32[] bitcast-convert(sk)
  scb = f32[{shape}] broadcast(sc), dimensions={{}}
  sm = f32[{shape}] multiply(sf, scb)
  sr = f32[{shape}] round-nearest-even(sm)
  flo = f32[] constant(-128)
  fhi = f32[] constant(127)
  scl = f32[{shape}] clamp(flo, sr, fhi)
  {out} = s8[{shape}] convert(scl)"""


def _relu(src: str, shape: str, out: str) -> str:
    """ReLU selected by α ``relu`` (max with -128 is the identity on int8)."""
    return f"""
  rl = s8[] constant(`-128 * (1 - relu)`)
  rlb = s8[{shape}] broadcast(rl), dimensions={{}}
  ROOT {out} = s8[{shape}] maximum({src}, rlb)"""


def _wrap20(src: str, out: str, shape: str = "@D,@D") -> str:
    """``out`` = ``src`` (of ``shape``) wrapped to ARRAY_BITS-bit two's complement (shift left,
    arithmetic right)."""
    return f"""
  w12 = s32[] constant({32 - ARRAY_BITS})
  w12b = s32[{shape}] broadcast(w12), dimensions={{}}
  wl = s32[{shape}] shift-left({src}, w12b)
  {out} = s32[{shape}] shift-right-arithmetic(wl, w12b)"""


def _accumulate(src: str, shape: str) -> str:
    """ROOT y = src + old * accumulate (old is the last parameter)."""
    return f"""
  ak = s32[] constant(`accumulate`)
  akb = s32[{shape}] broadcast(ak), dimensions={{}}
  ao = s32[{shape}] multiply(old, akb)
  ROOT y = s32[{shape}] add({src}, ao)"""


def _sat_s8(src: str, shape: str, out: str) -> str:
    return f"""
  ilo = s32[] constant(-128)
  ihi = s32[] constant(127)
  icl = s32[{shape}] clamp(ilo, {src}, ihi)
  {out} = s8[{shape}] convert(icl)"""


def _rounding_shift(src: str, shape: str, out: str) -> str:
    """gemmini.md ROUNDING_RIGHT_SHIFT(x, shift), shift >= 0: round half to even."""
    def bc(name: str, value: str) -> str:
        return (f"  {name}s = s32[] constant(`{value}`)\n"
                f"  {name} = s32[{shape}] broadcast({name}s), dimensions={{}}")
    return f"""
{bc("sh", "shift")}
{bc("sh1", "max(shift - 1, 0)")}
{bc("on", "min(shift, 1)")}
{bc("msk", "(1 << max(shift - 1, 0)) - 1")}
{bc("one", "1")}
{bc("zr", "0")}
  sq = s32[{shape}] shift-right-arithmetic({src}, sh)
  r0 = s32[{shape}] shift-right-arithmetic({src}, sh1)
  rb = s32[{shape}] and(r0, on)
  st = s32[{shape}] and({src}, msk)
  stp = pred[{shape}] compare(st, zr), direction=NE
  sti = s32[{shape}] convert(stp)
  lsb = s32[{shape}] and(sq, one)
  t = s32[{shape}] or(sti, lsb)
  inc = s32[{shape}] and(rb, t)
  {out} = s32[{shape}] add(sq, inc)"""


#: the weight-stationary computes a preload_ws is fused with
WS_MATMULS = ("matmul_ws_acc", "matmul_ws_spad", "matmul_ws_bias_acc", "matmul_ws_bias_spad")


def _entry(name: str, body: str, dim: int) -> str:
    return (f"ENTRY {name} {{" + body + "\n}").replace("@D", str(dim))


def build(dim: int = DIM) -> Accelerator:
    D = dim
    R = _rows(D)
    g = Accelerator("gemmini", hbm_size=HBM_SIZE,
                    doc=f"Gemmini, DIM={D} int8 systolic array (WS and OS), compiler-level instructions")
    g.add_data_model("spad", access=[SPAD_ROWS, D], elem=[], dtype="s8", doc=f"scratchpad, {SPAD_ROWS} rows of {D} int8")
    g.add_data_model("acc", access=[ACC_ROWS, D], elem=[], dtype="s32", doc=f"accumulator, {ACC_ROWS} rows of {D} int32")
    g.add_data_model("pe", access=[D, D], elem=[], dtype="s32",
                     doc="the array's latched state (WS weights / OS partial sums, 20-bit values)")
    ex = _ZERO_CONTRACT
    mv = {"rows": R, "cols": R, "stride": STRIDES}
    # coverage classes (InstrDef.alpha_class): a move's rows dense in HBM or strided; a scale 1.0 or not
    dense1 = {"stride": {"dense": "stride == cols", "strided": "stride > cols"}}
    dense4 = {"stride": {"dense": "stride == cols * 4", "strided": "stride > cols * 4"}}
    one = {"scale": {"1.0": f"scale == {ONE}"}}

    # (1) mvin_spad: rows x cols int8 from HBM (row stride in bytes) into the scratchpad, scaled
    g.add_instruction(
        "mvin_spad", alpha={**mv, "scale": SCALES}, beta=["dram", "sp"],
        inputs=[("d0", ["dram"], ["(rows - 1) * stride + cols"])], output=("spad", ["sp", 0], ["rows", "cols"]),
        constraints=["stride >= cols", "dram >= 1"], contract=ex, cycles="rows", hbm_bytes="rows * cols",
        doc="y = sat8(rne(f32(x) * scale)); MVIN, load slot 0", search={"scale": (ONE,)}, classes={**dense1, **one},
        semantics=_entry("mvin_spad", _dram_read(1, "s8") + _scale_to_s8("v", "`rows`,`cols`", "scale", "ROOT y"), D))

    # (2) mvin_acc: rows x cols int32 from HBM into the accumulator, overwrite or accumulate (bit 30)
    g.add_instruction(
        "mvin_acc", alpha={**mv, "accumulate": (0, 1)}, beta=["dram", "ac"],
        inputs=[("d0", ["dram"], ["(rows - 1) * stride + cols * 4"]), ("acc", ["ac", 0], ["rows", "cols"])],
        output=("acc", ["ac", 0], ["rows", "cols"]),
        constraints=["stride >= cols * 4", "dram >= 1"], contract=ex, cycles="rows", hbm_bytes="rows * cols * 4",
        doc="y = x + accumulate * old (int32, wraps); MVIN2, load slot 1", classes=dense4,
        semantics=_entry("mvin_acc", _dram_read(4, "s32") + "\n  old = s32[`rows`,`cols`] parameter(1)"
                         + _accumulate("v", "`rows`,`cols`"), D))

    # (2b) mvin_acc_bcast: one int32 row from HBM repeated into rows accumulator rows (the bias of
    #      a tiled layer: MVIN2 with config_ld stride 0, as Gemmini's own tiled matmul loads a
    #      repeating bias); for the middle end's tiles only (Accelerator.tile_only)
    g.add_instruction(
        "mvin_acc_bcast", alpha={"rows": R, "cols": R, "accumulate": (0, 1)}, beta=["dram", "ac"],
        inputs=[("d0", ["dram"], ["cols * 4"]), ("acc", ["ac", 0], ["rows", "cols"])],
        output=("acc", ["ac", 0], ["rows", "cols"]),
        constraints=["dram >= 1"], contract=ex, cycles="rows", hbm_bytes="cols * 4",
        doc="y = broadcast(x row) + accumulate * old (int32, wraps); MVIN2 with stride 0, load slot 1",
        semantics=_entry("mvin_acc_bcast", """
  x = u8[`cols * 4`] parameter(0)
  x4 = u8[`cols`,4] reshape(x)
  r = s32[`cols`] bitcast-convert(x4)
  v = s32[`rows`,`cols`] broadcast(r), dimensions={1}
  old = s32[`rows`,`cols`] parameter(1)""" + _accumulate("v", "`rows`,`cols`"), D))

    # (3) mvin_acc_s8: rows x cols int8 from HBM widened to int32 (shrunk), overwrite or accumulate
    g.add_instruction(
        "mvin_acc_s8", alpha={**mv, "accumulate": (0, 1)}, beta=["dram", "ac"],
        inputs=[("d0", ["dram"], ["(rows - 1) * stride + cols"]), ("acc", ["ac", 0], ["rows", "cols"])],
        output=("acc", ["ac", 0], ["rows", "cols"]),
        constraints=["stride >= cols", "dram >= 1"], contract=ex, cycles="rows", hbm_bytes="rows * cols",
        doc="y = s32(x) + accumulate * old; MVIN3, load slot 2 (shrunk, scale 1.0)", classes=dense1,
        semantics=_entry("mvin_acc_s8", _dram_read(1, "s8") + "\n  v32 = s32[`rows`,`cols`] convert(v)"
                         + "\n  old = s32[`rows`,`cols`] parameter(1)" + _accumulate("v32", "`rows`,`cols`"), D))

    # (4) mvout_spad: rows x cols int8 from the scratchpad to HBM (raw bytes)
    g.add_instruction(
        "mvout_spad", alpha=mv, beta=["sp", "dram"],
        inputs=[("spad", ["sp", 0], ["rows", "cols"]), ("d0", ["dram"], ["(rows - 1) * stride + cols"])],
        output=("d0", ["dram"], ["(rows - 1) * stride + cols"]),
        constraints=["stride >= cols"], contract=ex, cycles="rows", hbm_bytes="rows * cols",
        doc="HBM rows <- x (bytes between rows kept); MVOUT", classes=dense1,
        semantics=_entry("mvout_spad", "\n  x = s8[`rows`,`cols`] parameter(0)" + _dram_write(1, "x"), D))

    # (5) mvout_acc: accumulator -> int8 HBM, scaled by acc_scale, saturated, optional ReLU (bit 29 = 0)
    g.add_instruction(
        "mvout_acc", alpha={**mv, "scale": SCALES, "relu": (0, 1)}, beta=["ac", "dram"],
        inputs=[("acc", ["ac", 0], ["rows", "cols"]), ("d0", ["dram"], ["(rows - 1) * stride + cols"])],
        output=("d0", ["dram"], ["(rows - 1) * stride + cols"]),
        constraints=["stride >= cols"], contract=ex, cycles="rows", hbm_bytes="rows * cols",
        doc="y = relu?(sat8(rne(f32(x) * acc_scale))); MVOUT with config_st(act, acc_scale)", search={"scale": (ONE,)},
        classes={**dense1, **one},
        semantics=_entry("mvout_acc", "\n  x = s32[`rows`,`cols`] parameter(0)"
                         + _scale_to_s8("x", "`rows`,`cols`", "scale", "q")
                         + _relu("q", "`rows`,`cols`", "rq").replace("ROOT ", "") + _dram_write(1, "rq"), D))

    # (6) mvout_acc_raw: accumulator -> int32 HBM, no scaling or activation (bit 29 = 1)
    g.add_instruction(
        "mvout_acc_raw", alpha=mv, beta=["ac", "dram"],
        inputs=[("acc", ["ac", 0], ["rows", "cols"]), ("d0", ["dram"], ["(rows - 1) * stride + cols * 4"])],
        output=("d0", ["dram"], ["(rows - 1) * stride + cols * 4"]),
        constraints=["stride >= cols * 4"], contract=ex, cycles="rows", hbm_bytes="rows * cols * 4",
        doc="HBM rows <- x as int32 bytes; MVOUT from acc address with bit 29", classes=dense4,
        semantics=_entry("mvout_acc_raw", "\n  x = s32[`rows`,`cols`] parameter(0)" + _dram_write(4, "x"), D))

    preload_sem = """
  x = s8[`rows`,`cols`] parameter(0)
  x32 = s32[`rows`,`cols`] convert(x)
  z = s32[] constant(0)
  ROOT y = s32[@D,@D] pad(x32, z), padding=0_`@D - rows`x0_`@D - cols`"""

    # (7) preload_ws: weights B (rows x cols of the scratchpad) into the array, zero elsewhere
    g.add_instruction(
        "preload_ws", alpha={"rows": R, "cols": R}, beta=["b"],
        inputs=[("spad", ["b", 0], ["rows", "cols"])], output=("pe", [0, 0], [D, D]),
        contract=ex, cycles=D, doc="pe = pad(s32(B)); PRELOAD(B, C) fused with the next matmul_ws_* (WS)",
        semantics=_entry("preload_ws", preload_sem, D), followed_by=WS_MATMULS)

    # (8-11) matmul_ws[_bias]_{acc,spad}: C = [D +] A x pe, 20-bit array arithmetic
    mm = {"a_rows": R, "a_cols": R, "c_rows": R, "c_cols": R}
    for bias in (False, True):
        for dest in ("acc", "spad"):
            name = "matmul_ws" + ("_bias" if bias else "") + "_" + dest
            inputs = [("spad", ["a", 0], ["a_rows", "a_cols"]), ("pe", [0, 0], [D, D])]
            body = """
  a = s8[`a_rows`,`a_cols`] parameter(0)
  w = s32[@D,@D] parameter(1)
  a32 = s32[`a_rows`,`a_cols`] convert(a)
  z = s32[] constant(0)
  ap = s32[@D,@D] pad(a32, z), padding=0_`@D - a_rows`x0_`@D - a_cols`
  p = s32[@D,@D] dot(ap, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""
            k = 2
            if bias:
                inputs.append(("spad", ["d", 0], ["c_rows", "c_cols"]))
                body += f"""
  d = s8[`c_rows`,`c_cols`] parameter({k})
  d32 = s32[`c_rows`,`c_cols`] convert(d)
  dp = s32[@D,@D] pad(d32, z), padding=0_`@D - c_rows`x0_`@D - c_cols`
  pd = s32[@D,@D] add(p, dp)"""
                k += 1
            body += _wrap20("pd" if bias else "p", "r")
            body += "\n  rs = s32[`c_rows`,`c_cols`] slice(r), slice={[0:`c_rows`], [0:`c_cols`]}"
            alpha = dict(mm)
            if dest == "acc":
                alpha["accumulate"] = (0, 1)
                inputs.append(("acc", ["c", 0], ["c_rows", "c_cols"]))
                body += f"\n  old = s32[`c_rows`,`c_cols`] parameter({k})" + _accumulate("rs", "`c_rows`,`c_cols`")
                doc = "C = wrap20([D +] A x pe) (+ old if accumulate)"
            else:
                alpha["relu"] = (0, 1)
                body += _sat_s8("rs", "`c_rows`,`c_cols`", "q") + _relu("q", "`c_rows`,`c_cols`", "y")
                doc = "C = relu?(sat8(wrap20([D +] A x pe)))"
            g.add_instruction(
                name, alpha=alpha, beta=["a"] + (["d"] if bias else []) + ["c"], inputs=inputs,
                output=(dest, ["c", 0], ["c_rows", "c_cols"]), contract=ex, cycles=D,
                # A's rows past c_rows reach no output row: a_rows = c_rows computes the same C
                # from fewer bytes, at the same cost
                search_where=["a_rows <= c_rows"],
                doc=doc + "; [PRELOAD] COMPUTE_PRELOADED (after preload_ws) or COMPUTE_ACCUMULATED (WS)",
                semantics=_entry(name, body, D))

    # (12) preload_os: initial partial sums D (rows x cols of the scratchpad) into the array
    g.add_instruction(
        "preload_os", alpha={"rows": R, "cols": R}, beta=["d"],
        inputs=[("spad", ["d", 0], ["rows", "cols"])], output=("pe", [0, 0], [D, D]),
        contract=ex, cycles=D, doc="pe = pad(s32(D)); PRELOAD(D, C) fused with the next matmul_os (OS)",
        semantics=_entry("preload_os", preload_sem, D), followed_by=("matmul_os",))

    # (13) preload_os_zero: zero partial sums (D = GARBAGE_ADDR)
    g.add_instruction(
        "preload_os_zero", alpha={}, beta=[], inputs=[], output=("pe", [0, 0], [D, D]),
        contract=ex, cycles=D, doc="pe = 0; PRELOAD(GARBAGE, C) fused with the next matmul_os (OS)",
        followed_by=("matmul_os",),
        semantics=_entry("preload_os_zero", """
  z = s32[] constant(0)
  ROOT y = s32[@D,@D] broadcast(z), dimensions={}""", D))

    # (14) matmul_os: pe[:a_rows, :b_cols] = wrap20(pe + A x B) there. The array's rows past
    #      a_rows and columns past b_cols meet A's and B's zero padding: they keep their value
    #      (already 20-bit), so the output is the block, not the whole array. A store of a
    #      partial block then reads what this instruction wrote, not a slice of it (a demand on
    #      the block meets the output exactly: partial row blocks compile).
    g.add_instruction(
        "matmul_os", alpha={"a_rows": R, "a_cols": R, "b_rows": R, "b_cols": R}, beta=["a", "b"],
        inputs=[("spad", ["a", 0], ["a_rows", "a_cols"]), ("spad", ["b", 0], ["b_rows", "b_cols"]),
                ("pe", [0, 0], [D, D])],
        output=("pe", [0, 0], ["a_rows", "b_cols"]), contract=ex, cycles=D,
        # A's columns past b_rows meet B's zero padding (and B's rows past a_cols A's): the product
        # is the one of depth min(a_cols, b_rows), read from fewer bytes, at the same cost
        search_where=["a_cols == b_rows"],
        doc="pe[:a_rows, :b_cols] = wrap20(pe + A x B) there; COMPUTE_PRELOADED (after preload_os*) or COMPUTE_ACCUMULATED (OS)",
        semantics=_entry("matmul_os", """
  a = s8[`a_rows`,`a_cols`] parameter(0)
  b = s8[`b_rows`,`b_cols`] parameter(1)
  pe = s32[@D,@D] parameter(2)
  s = s32[`a_rows`,`b_cols`] slice(pe), slice={[0:`a_rows`], [0:`b_cols`]}
  a32 = s32[`a_rows`,`a_cols`] convert(a)
  b32 = s32[`b_rows`,`b_cols`] convert(b)
  z = s32[] constant(0)
  ap = s32[`a_rows`,@D] pad(a32, z), padding=0_0x0_`@D - a_cols`
  bp = s32[@D,`b_cols`] pad(b32, z), padding=0_`@D - b_rows`x0_0
  p = s32[`a_rows`,`b_cols`] dot(ap, bp), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ps = s32[`a_rows`,`b_cols`] add(s, p)""" + _wrap20("ps", "ROOT y", "`a_rows`,`b_cols`"), D))

    # (15) store_os_acc: OS results (pe) to the accumulator, raw int32, overwrite or accumulate
    g.add_instruction(
        "store_os_acc", alpha={"rows": R, "cols": R, "accumulate": (0, 1)}, beta=["c"],
        inputs=[("pe", [0, 0], ["rows", "cols"]), ("acc", ["c", 0], ["rows", "cols"])],
        output=("acc", ["c", 0], ["rows", "cols"]), contract=ex, cycles=D, preceded_by=("matmul_os",),
        doc="C = pe (+ old if accumulate); the C of the preceding matmul_os's PRELOAD",
        semantics=_entry("store_os_acc", """
  x = s32[`rows`,`cols`] parameter(0)
  old = s32[`rows`,`cols`] parameter(1)""" + _accumulate("x", "`rows`,`cols`"), D))

    # (16) store_os_spad: OS results to the scratchpad: rounding right shift, saturate, ReLU
    g.add_instruction(
        "store_os_spad", alpha={"rows": R, "cols": R, "shift": tuple(range(0, 32)), "relu": (0, 1)}, beta=["c"],
        inputs=[("pe", [0, 0], ["rows", "cols"])], output=("spad", ["c", 0], ["rows", "cols"]),
        contract=ex, cycles=D, preceded_by=("matmul_os",),
        # shift 0: the saturating store of a layer's int8 result (another shift needs the
        # rounding shift written out in the kernel, which no user form or generator writes)
        search={"shift": (0,)},
        doc="C = relu?(sat8(rshift_rne(pe, shift))); config_ex sys_shift/act",
        semantics=_entry("store_os_spad", "\n  x = s32[`rows`,`cols`] parameter(0)"
                         + _rounding_shift("x", "`rows`,`cols`", "sx") + _sat_s8("sx", "`rows`,`cols`", "q")
                         + _relu("q", "`rows`,`cols`", "y"), D))

    # (17) preload_ws_t: weights stored transposed (B^T, cols x rows of the scratchpad: PyTorch's
    #      [N, K] weights moved in as they are) into the array as B, rows x cols (K x N) as the
    #      array sees it: PRELOAD with config_ex B_transpose = 1 (Spike's gemmini.cc convention:
    #      rows / cols bound the operand as the array sees it, element (i, j) is scratchpad row
    #      b + j, column i); last, for the middle end's tiles only (Accelerator.tile_only)
    g.add_instruction(
        "preload_ws_t", alpha={"rows": R, "cols": R}, beta=["b"],
        inputs=[("spad", ["b", 0], ["cols", "rows"])], output=("pe", [0, 0], [D, D]),
        contract=ex, cycles=D, doc="pe = pad(s32(transpose(B^T))); PRELOAD(B, C) with B_transpose, fused with the "
                                   "next matmul_ws_* (WS)",
        semantics=_entry("preload_ws_t", """
  x = s8[`cols`,`rows`] parameter(0)
  t = s8[`rows`,`cols`] transpose(x), dimensions={1,0}
  x32 = s32[`rows`,`cols`] convert(t)
  z = s32[] constant(0)
  ROOT y = s32[@D,@D] pad(x32, z), padding=0_`@D - rows`x0_`@D - cols`""", D), followed_by=WS_MATMULS)
    g.tile_only = ("mvin_acc_bcast", "preload_ws_t")
    return g
