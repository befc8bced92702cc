"""One program, one set of outputs, one verdict: ``accv check``, a campaign case and the pytest
plugin judge a backend's outputs the same way on every registered (target, backend) pair available
here. Each backend's runs are altered three ways -- not at all, every NaN given other payload bits,
one element moved by one step -- and the three paths must agree with each other and with the one
comparison rule (check/policy.py): NaN bits count where the backend observes them as the reference
models them (sim, stream, rtl) and not on AMX's C backends (emulated, native)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from accv.cli import main
from check.backends import REGISTRY, pairs, unavailable
from check.evaluate import evaluate_graph
from semantics.hlo_parser import parse_file
from tests.paths import PAPER

#: a small paper kernel per target: gemmini's outputs are integers, amx_k4's f32, qkv's bf16
KERNEL = {"gemmini": "gemmini_add", "amx": "amx_k4", "qkv": "qkv_attention"}
PLUGIN = ("-p", "check.plugin", "-p", "no:randomly", "-p", "no:cacheprovider")
CHANGED: list[int] = []


def _other_nan(o: np.ndarray) -> np.ndarray:
    """``o`` with every NaN given other payload bits (still a NaN)."""
    if o.dtype.kind not in "fV" and o.dtype.name != "bfloat16":
        return o
    bits = o.view(np.dtype(f"u{o.dtype.itemsize}")).copy()
    with np.errstate(invalid="ignore"):
        nan = np.isnan(o.astype(np.float64))
        flipped = bits ^ 1
        still = np.isnan(flipped.view(o.dtype).astype(np.float64))
    bits[nan] = np.where(still, flipped, bits ^ 2)[nan]
    CHANGED.append(int(nan.sum()))
    return bits.view(o.dtype)


def _one_step(o: np.ndarray) -> np.ndarray:
    """``o`` with its first element moved by one step (the next integer, the next float)."""
    o = o.copy()
    flat = o.reshape(-1)
    if o.dtype.kind in "iu":
        flat[0] = flat[0] + 1 if flat[0] != np.iinfo(o.dtype).max else flat[0] - 1
    else:
        flat[0] = np.nextafter(flat[0].astype(np.float32), np.float32(np.inf)).astype(o.dtype) \
            if not np.isnan(float(flat[0])) else np.array(1.0, o.dtype)
        if flat[0].tobytes() == o.reshape(-1)[0].tobytes():
            flat[0] = np.array(2.0, o.dtype)
    return o


ALTER = {"none": lambda o: o, "nan": _other_nan, "value": _one_step}


def _expected(target: str, backend: str, alter: str) -> str:
    if alter == "value":
        return "mismatch"
    if alter == "nan" and REGISTRY[backend].nan_bits and target != "gemmini":
        return "mismatch"
    return "pass"


@pytest.fixture(autouse=True, scope="module")
def _warm() -> None:
    """Compile and check each kernel once before any test: pytester restores ``sys.modules`` after
    each test, and a module first imported inside one (the rule library's, say) would come back as
    another module object beside the compiler's memoized rule sets."""
    import check.plugin  # noqa: F401
    from check.run import check_program
    from compilers.compile import compile

    for target, name in KERNEL.items():
        g = parse_file(PAPER / f"{name}.hlo")
        res = compile(g, target)
        check_program(g, res.acc, res.program, 1)


@pytest.fixture
def altered(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    def use(backend: str, alter: str) -> None:
        cls = REGISTRY[backend]
        real = cls.run

        def run(self, program, inputs):  # noqa: ANN001, ANN202
            r = real(self, program, inputs)
            r.outputs = [ALTER[alter](np.asarray(o)) for o in r.outputs]
            return r

        monkeypatch.setattr(cls, "run", run)
    return use


@pytest.mark.parametrize("alter", list(ALTER))
@pytest.mark.parametrize("target, backend", pairs(), ids=lambda x: str(x))
def test_check_campaign_and_plugin_agree(target: str, backend: str, alter: str, altered, pytester: pytest.Pytester,  # noqa: ANN001
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    why = unavailable(target, backend)
    if why is not None:
        pytest.skip(why)
    kernel = PAPER / f"{KERNEL[target]}.hlo"
    altered(backend, alter)
    CHANGED.clear()
    # accv check: its exit status says the verdict
    code = main(["check", str(kernel), "--target", target, "--backend", backend, "--check", "3", "--seed", "0",
                 "-o", str(tmp_path / "p.asm")])
    capsys.readouterr()
    cli = {0: "pass", 1: "mismatch", 6: "degenerate"}[code]
    # a campaign case of the same graph, seed and backend
    campaign = evaluate_graph(target, parse_file(kernel), (backend,), seed=0).outcome
    # the plugin: one item of the kernel on this target and backend
    pytester.makeini(textwrap.dedent(f"""
        [pytest]
        accv_kernels = kernels
        accv_targets = {target}
        accv_backends = {backend}
        accv_check = 3
        accv_seed = 0
    """))
    (pytester.path / "kernels").mkdir()
    (pytester.path / "kernels" / kernel.name).write_text(
        "".join(ln for ln in kernel.read_text().splitlines(keepends=True) if not ln.startswith("// accv:")))
    rec = pytester.inline_run(*PLUGIN)
    (report,) = [r for r in rec.getreports("pytest_runtest_logreport") if r.when == "call"]
    plugin = dict(report.user_properties).get("outcome", "mismatch" if report.failed else "?")
    assert cli == campaign == plugin == _expected(target, backend, alter), (cli, campaign, plugin)
    if alter == "nan" and target != "gemmini":
        assert sum(CHANGED) > 0, "no NaN output was altered: the NaN case checked nothing"
