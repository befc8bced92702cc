"""Random graphs from NNSmith 0.1.0 (the ``fuzz`` extra), converted to our IR and HLO text.

NNSmith builds graphs by solving shape constraints with z3; its ``core`` dialect has no MatMul and
no int8 widening, so this module registers an ``accv`` dialect (through ``mark_materialize``) of
operator classes whose meaning is given by :func:`to_graph`, the converter from NNSmith's GraphIR
to a :class:`~semantics.ir.Graph`:

=================  ===============================================================================
accv operator      HLO it becomes
=================  ===============================================================================
MatMul             ``dot`` of two rank-2 tensors (same element type in and out)
MatMulWide         ``dot`` s8 x s8 -> s32 (Gemmini's and AMX's widening multiply)
Add Sub Mul Max    ``add`` / ``subtract`` / ``multiply`` / ``maximum`` / ``minimum`` with NumPy
Min                broadcasting made explicit (``reshape`` + ``broadcast``)
Neg, Exp           ``negate``, ``exponential``
ReLU               ``maximum(x, broadcast(0))``
Clamp              ``clamp(lo, x, hi)`` with scalar bounds drawn at generation
Div                ``divide`` (floats)
Softmax            ``divide(exp(x), broadcast(reduce-add(exp(x), last dim)))`` (QKV's attention)
ReduceSum/Max      ``reduce`` over one dimension
Transpose          ``transpose`` swapping two dimensions
Reshape, Expand    ``reshape``, ``broadcast``
Slice, Concat2     ``slice`` along one axis, ``concatenate`` of two tensors
CastI32            ``convert`` s8 -> s32
Sat8               ``convert(clamp(-128, x, 127))`` s32 -> s8 (Gemmini's saturating mvout)
Requant            ``convert(clamp(-128.0, round-nearest-even(convert_f32(x) * 0.5), 127.0))`` s32 -> s8:
                   requantization by 1/2 (Gemmini's mvout with acc_scale 0.5); in no target's
                   default list: the shipped Gemmini description lets the compiler pick acc_scale
                   1.0 only, so the RTL scale unit's rounding is reached by campaigns whose
                   description also offers 0.5 (tests/fuzz/test_inject_layers.py)
=================  ===============================================================================

NNSmith has no bfloat16. A target that computes in bf16 (``qkv``) gets float32 graphs whose f32
tensors are all written as bf16 in the HLO (``float_as="bf16"``); the dot then multiplies bf16.

NNSmith seeds the process-global ``random``, numpy and z3 state from its ``seed`` and bounds its
search by wall time, so one generator runs per worker process (never in threads) and the campaign
stores the generated HLO text with its seed: a case stays reproducible where regeneration is not.
Each generation starts from a fresh z3 context (z3's models depend on the declarations an earlier
generation left in the global one), so a seed gives the same graph whatever ran before it in the
process, as long as the solver finishes within NNSmith's time bound.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass

import numpy as np

from semantics.dtypes import DTYPES
from semantics.errors import AccvError
from semantics.graph import GraphBuilder
from semantics.hlo_printer import print_hlo
from semantics.ir import Attrs, Graph, Literal
from semantics.types import TensorType

__all__ = ["GenerationError", "NNSMITH_OPSETS", "available", "generate", "to_graph"]


# NNSmith warns at import that its optional graph drawing needs pygraphviz; nothing here draws graphs
warnings.filterwarnings("ignore", message="Install pygraphviz", category=UserWarning)


class GenerationError(AccvError):
    """NNSmith could not produce or the converter could not translate a graph (names the op)."""


def available() -> tuple[bool, str]:
    """(True, "") where nnsmith is importable, else (False, the reason)."""
    try:
        import nnsmith  # noqa: F401
    except ImportError as e:
        return False, f"nnsmith is not installed (pip install 'accv[fuzz]'): {e}"
    return True, ""


_DIALECT: dict[str, type] | None = None


def _dialect() -> dict[str, type]:
    """Register the ``accv`` operator classes once per process; name -> class."""
    global _DIALECT
    if _DIALECT is not None:
        return _DIALECT
    from nnsmith.abstract import op as O
    from nnsmith.abstract.dtype import DType
    from nnsmith.abstract.tensor import AbsTensor

    I8, I32, F32 = DType.int8, DType.int32, DType.float32
    NUM = [I8, I32, F32]
    reg = O.mark_materialize("accv")
    out: dict[str, type] = {}

    def put(name: str, cls: type) -> None:
        cls.__name__ = cls.__qualname__ = name
        out[name] = reg(cls)

    class _MM(O.BinaryOpBase):
        in_dtypes = [(d, d) for d in (I8, I32, F32)]
        out_dtypes = [(d,) for d in (I8, I32, F32)]

        def __init__(self) -> None:
            super().__init__()
            self.inp_ranks = [(2,), (2,)]
            self.out_ranks = [(2,)]

        def type_transfer(self, ins: list) -> list:
            return [AbsTensor([ins[0].shape[0], ins[1].shape[1]], self._out(ins[0].dtype))]

        def _out(self, d: DType) -> DType:
            return d

        def requires(self, ins: list) -> list:
            return [ins[0].shape[1] == ins[1].shape[0]]

        def deduct_inp_ranks_and_dtype(self, outs: list) -> list:
            d = self._in(outs[0].dtype)
            return [(2, d), (2, d)]

        def _in(self, d: DType) -> DType:
            return d

    put("MatMul", type("MatMul", (_MM,), {}))
    put("MatMulWide", type("MatMulWide", (_MM,), {"in_dtypes": [(I8, I8)], "out_dtypes": [(I32,)],
                                                  "_out": lambda self, d: I32,
                                                  "_in": lambda self, d: I8}))
    for nm in ("Add", "Sub", "Mul", "Max", "Min"):
        put(nm, type(nm, (O.BcastBinaryOp1,), {"in_dtypes": [(d, d) for d in NUM],
                                                "out_dtypes": [(d,) for d in NUM]}))
    put("Div", type("Div", (O.BcastBinaryOp,), {"in_dtypes": [(F32, F32)], "out_dtypes": [(F32,)]}))
    un = {"in_dtypes": [(d,) for d in NUM], "out_dtypes": [(d,) for d in NUM]}
    put("Neg", type("Neg", (O.ElementWiseUnaryOp,), {"in_dtypes": [(d,) for d in (I8, I32, F32)],
                                                     "out_dtypes": [(d,) for d in (I8, I32, F32)]}))
    put("ReLU", type("ReLU", (O.ElementWiseUnaryOp,), dict(un)))
    put("Exp", type("Exp", (O.ElementWiseUnaryOp,), {"in_dtypes": [(F32,)], "out_dtypes": [(F32,)]}))

    class _Clamp(O.ElementWiseUnaryOp):
        def type_transfer(self, ins: list) -> list:
            if "lo" not in self.extra_attrs:
                a, b = sorted(random.sample(range(-100, 101), 2))
                self.extra_attrs.update(lo=a, hi=b)
            return [ins[0]]

    put("Clamp", type("Clamp", (_Clamp,), dict(un)))

    class _Softmax(O.ElementWiseUnaryOp):
        in_dtypes = [(F32,)]
        out_dtypes = [(F32,)]

        def __init__(self) -> None:
            super().__init__()
            self.inp_ranks = [(1, 2, 3)]
            self.out_ranks = [(1, 2, 3)]

    put("Softmax", type("Softmax", (_Softmax,), {}))
    red = {"in_dtypes": [(d,) for d in NUM], "out_dtypes": [(d,) for d in NUM]}
    put("ReduceSum", type("ReduceSum", (O.ReduceSum,), dict(red)))
    put("ReduceMax", type("ReduceMax", (O.ReduceMax,), dict(red)))
    put("Transpose", type("Transpose", (O.Transpose,), dict(un)))
    put("Reshape", type("Reshape", (O.Reshape,), dict(un)))
    put("Expand", type("Expand", (O.ExpandLast1,), dict(un)))
    put("Slice", type("Slice", (O.Slice,), dict(un)))
    put("Concat2", type("Concat2", (O.Concat2,), {"in_dtypes": [(d, d) for d in NUM],
                                                  "out_dtypes": [(d,) for d in NUM]}))
    put("Sat8", type("Sat8", (O.ElementWiseUnaryOp,), {"in_dtypes": [(I32,)], "out_dtypes": [(I8,)]}))
    out["Sat8"].deduct_inp_ranks_and_dtype = lambda self, outs: [(outs[0].ndims, I32)]
    out["Sat8"].type_transfer = lambda self, ins: [AbsTensor(list(ins[0].shape), I8)]
    put("Requant", type("Requant", (O.ElementWiseUnaryOp,), {"in_dtypes": [(I32,)], "out_dtypes": [(I8,)]}))
    out["Requant"].deduct_inp_ranks_and_dtype = lambda self, outs: [(outs[0].ndims, I32)]
    out["Requant"].type_transfer = lambda self, ins: [AbsTensor(list(ins[0].shape), I8)]
    put("CastI32", type("CastI32", (O.ElementWiseUnaryOp,), {"in_dtypes": [(I8,)], "out_dtypes": [(I32,)]}))
    out["CastI32"].deduct_inp_ranks_and_dtype = lambda self, outs: [(outs[0].ndims, I8)]
    out["CastI32"].type_transfer = lambda self, ins: [AbsTensor(list(ins[0].shape), I32)]
    _DIALECT = out
    return out


@dataclass(frozen=True)
class NNOpSet:
    """One target's NNSmith operator list (accv dialect names) and NNSmith dtypes; ``float_as``
    is the HLO element type NNSmith's float32 becomes."""

    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    float_as: str = "f32"


#: per target, chosen from fuzz/opsets.py's operators that NNSmith can express
NNSMITH_OPSETS: dict[str, NNOpSet] = {
    "gemmini": NNOpSet(("MatMulWide", "Add", "ReLU", "Sat8", "Clamp", "Max", "Mul", "Transpose", "Reshape",
                        "Expand", "Slice", "Concat2", "CastI32"),
                       ("int8", "int32")),
    "qkv": NNOpSet(("MatMul", "Softmax", "Exp", "Div", "ReduceSum", "ReduceMax", "Add", "Sub", "Mul", "Max",
                    "Transpose", "Reshape", "Expand", "Slice", "Concat2"), ("float32",), float_as="bf16"),
    "amx": NNOpSet(("MatMul", "MatMulWide", "Add", "Sub", "Mul", "Max", "Min", "Neg", "ReLU", "Clamp",
                    "Transpose", "Reshape", "Expand", "Slice", "Concat2", "CastI32", "Div"),
                   ("int8", "int32", "float32")),
}

_DT = {"int8": "s8", "int32": "s32", "uint8": "u8", "float32": "f32"}


def generate(target: str, seed: int, max_nodes: int = 5, timeout_ms: int = 2000) -> Graph:
    """A graph for ``target`` from NNSmith's symbolic generator, seeded with ``seed`` (re-seeds the
    process-global random / numpy / z3 state). Raises GenerationError."""
    from nnsmith.abstract.dtype import DType
    from nnsmith.graph_gen import model_gen

    if target not in NNSMITH_OPSETS:
        raise GenerationError(f"nnsmith: no operator list for target '{target}' (known: {', '.join(NNSMITH_OPSETS)})")
    spec = NNSMITH_OPSETS[target]
    d = _dialect()
    import z3

    # a fresh z3 context for NNSmith (the models z3 returns depend on what the context declared
    # before), and the process's own context back afterwards: z3 terms the prover and the SMT
    # encoder made before this call live in that one, and mixing contexts is an error
    saved = z3.z3._main_ctx
    z3.z3._main_ctx = None
    try:
        gen = model_gen(opset=[d[o] for o in spec.ops], method="symbolic-cinit", max_nodes=max_nodes, seed=seed,
                        timeout_ms=timeout_ms, rank_choices=[1, 2], dtype_choices=[DType(x) for x in spec.dtypes],
                        max_elem_per_tensor=1024, concr_ph_dim_rng=(1, 24))
        ir = gen.make_concrete()
    except Exception as e:  # noqa: BLE001 - NNSmith raises assorted internal errors on unlucky seeds
        raise GenerationError(f"nnsmith seed {seed}: {type(e).__name__}: {e}") from None
    finally:
        z3.z3._main_ctx = saved
    return to_graph(ir, f"nnsmith_{target}_{seed}", spec.float_as)


def to_graph(ir: object, name: str, float_as: str = "f32") -> Graph:
    """Convert NNSmith's GraphIR to a Graph (see the module docstring for each operator's HLO)."""
    return _Converter(name, float_as).run(ir)


class _Converter:
    def __init__(self, name: str, float_as: str) -> None:
        self.gb = GraphBuilder(name)
        self.cb = self.gb.computation("main")
        self.float_as = float_as
        self.n = 0
        self.nparams = 0
        self.env: dict[str, str] = {}
        self.regions: dict[tuple[str, str], str] = {}

    def dt(self, nn_dtype: object):  # noqa: ANN201 - semantics DType
        s = str(nn_dtype)
        if s not in _DT:
            raise GenerationError(f"nnsmith: dtype {s} has no HLO counterpart here")
        h = _DT[s]
        return DTYPES[self.float_as if h == "f32" else h]

    def add(self, opcode: str, operands: list[str], declared: TensorType | None = None, **attrs: object) -> str:
        self.n += 1
        nm = f"{opcode.replace('-', '_')}.{self.n}"
        self.cb.add(nm, opcode, operands, Attrs(tuple(attrs.items())), declared=declared)
        return nm

    def type_of(self, v: str) -> TensorType:
        t = self.cb.type_of(v)
        assert isinstance(t, TensorType)
        return t

    def scalar(self, value: float, dt) -> str:  # noqa: ANN001
        return self.add("constant", [], literal=Literal.from_array(np.array(value).astype(dt.np)))

    def bcast_to(self, v: str, shape: tuple[int, ...]) -> str:
        t = self.type_of(v)
        if t.shape == shape:
            return v
        off = len(shape) - t.rank
        keep = [i for i, n in enumerate(t.shape) if not (n == 1 and shape[off + i] != 1)]
        if len(keep) != t.rank:
            v = self.add("reshape", [v], TensorType(t.dtype, tuple(t.shape[i] for i in keep)))
        return self.add("broadcast", [v], TensorType(t.dtype, shape), dimensions=tuple(off + i for i in keep))

    def region(self, fn: str, dt) -> str:  # noqa: ANN001
        key = (fn, dt.name)
        if key not in self.regions:
            name = f"region_{fn}_{dt.name}"
            rb = self.gb.computation(name)
            t = TensorType(dt, ())
            rb.add("x", "parameter", [], Attrs.of(index=0), declared=t)
            rb.add("y", "parameter", [], Attrs.of(index=1), declared=t)
            rb.add("r", fn, ["x", "y"], root=True)
            self.gb.add_computation(rb.build())
            self.regions[key] = name
        return self.regions[key]

    def reduce(self, x: str, fn: str, dims: tuple[int, ...]) -> str:
        dt = self.type_of(x).dtype
        if fn == "add":
            init = 0
        elif dt.is_float:
            init = -np.inf
        else:
            init = dt.min
        return self.add("reduce", [x, self.scalar(init, dt)], dimensions=dims, to_apply=self.region(fn, dt))

    def run(self, ir: object) -> Graph:
        last = None
        for inst in ir.insts:  # type: ignore[attr-defined]
            op = inst.iexpr.op
            kind = type(op).__name__
            args = [self.env[a] for a in inst.iexpr.args]
            outs = inst.retvals()
            ot = ir.vars[outs[0]]  # type: ignore[attr-defined]
            shape = tuple(int(s) for s in ot.shape)
            tt = TensorType(self.dt(ot.dtype), shape)
            if kind in ("Input", "Constant", "Placeholder"):
                nm = f"p{self.nparams}"
                self.cb.add(nm, "parameter", [], Attrs.of(index=self.nparams), declared=tt)
                self.nparams += 1
            else:
                nm = self.op(kind, op, args, tt)
            self.env[outs[0]] = nm
            last = nm
        if last is None or self.nparams == 0:
            raise GenerationError("nnsmith: empty graph")
        self.cb.set_root(last)
        self.gb.add_computation(self.cb.build(), entry=True)
        return self.gb.build()

    def op(self, kind: str, op: object, a: list[str], tt: TensorType) -> str:
        binary = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Max": "maximum", "Min": "minimum",
                  "Div": "divide"}
        if kind in ("MatMul", "MatMulWide"):
            return self.add("dot", a, tt, lhs_batch_dims=(), rhs_batch_dims=(), lhs_contracting_dims=(1,),
                            rhs_contracting_dims=(0,))
        if kind in binary:
            return self.add(binary[kind], [self.bcast_to(x, tt.shape) for x in a])
        if kind == "Neg":
            return self.add("negate", a)
        if kind == "Exp":
            return self.add("exponential", a)
        if kind == "ReLU":
            return self.add("maximum", [a[0], self.bcast_to(self.scalar(0, tt.dtype), tt.shape)])
        if kind == "Clamp":
            lo, hi = op.extra_attrs["lo"], op.extra_attrs["hi"]  # type: ignore[attr-defined]
            if tt.dtype.name == "s8" or not tt.dtype.is_signed and not tt.dtype.is_float:
                lo, hi = max(lo, tt.dtype.min), max(min(hi, tt.dtype.max), max(lo, tt.dtype.min))
            return self.add("clamp", [self.scalar(lo, tt.dtype), a[0], self.scalar(hi, tt.dtype)])
        if kind == "Softmax":
            t = self.type_of(a[0])
            e = self.add("exponential", a)
            s = self.reduce(e, "add", (t.rank - 1,))
            sb = self.add("broadcast", [s], t, dimensions=tuple(range(t.rank - 1)))
            return self.add("divide", [e, sb])
        if kind in ("ReduceSum", "ReduceMax"):
            dim = int(op.extra_attrs["reduce_dim"])  # type: ignore[attr-defined]
            return self.reduce(a[0], "add" if kind == "ReduceSum" else "maximum", (dim,))
        if kind == "Transpose":
            r = self.type_of(a[0]).rank
            perm = list(range(r))
            d0, d1 = op.extra_attrs["dim0"], op.extra_attrs["dim1"]  # type: ignore[attr-defined]
            perm[d0], perm[d1] = perm[d1], perm[d0]
            return self.add("transpose", a, dimensions=tuple(perm))
        if kind == "Reshape":
            return self.add("reshape", a, tt)
        if kind == "Expand":
            return self.bcast_to(a[0], tt.shape)
        if kind == "Slice":
            t = self.type_of(a[0])
            axis = int(op.extra_attrs["axis"])  # type: ignore[attr-defined]
            start, step = int(op.start), int(op.step)  # type: ignore[attr-defined]
            end = t.shape[axis] if op.end == op.INT_MAX else int(op.end)  # type: ignore[attr-defined]
            sl = tuple((start, end, step) if i == axis else (0, n, 1) for i, n in enumerate(t.shape))
            return self.add("slice", a, slice=sl)
        if kind == "Concat2":
            return self.add("concatenate", a, dimensions=(int(op.extra_attrs["axis"]),))  # type: ignore[attr-defined]
        if kind == "Sat8":
            x = self.add("clamp", [self.scalar(-128, DTYPES["s32"]), a[0], self.scalar(127, DTYPES["s32"])])
            return self.add("convert", [x], tt)
        if kind == "Requant":
            f32 = DTYPES["f32"]
            shape = self.type_of(a[0]).shape
            x = self.add("convert", a, TensorType(f32, shape))
            x = self.add("multiply", [x, self.bcast_to(self.scalar(0.5, f32), shape)])
            x = self.add("round-nearest-even", [x])
            x = self.add("clamp", [self.scalar(-128.0, f32), x, self.scalar(127.0, f32)])
            return self.add("convert", [x], tt)
        if kind == "CastI32":
            return self.add("convert", a, tt)
        raise GenerationError(f"nnsmith: operator {kind} has no converter")


def generate_hlo(target: str, seed: int, max_nodes: int = 5) -> str:
    """:func:`generate` as HLO text."""
    return print_hlo(generate(target, seed, max_nodes))
