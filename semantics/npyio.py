"""Reading and writing tensors as .npy files, bit-exactly for every IR dtype.

numpy stores ml_dtypes' bfloat16 as an opaque 2-byte void type (``|V2``); such arrays, and arrays
of the unsigned integer type of the right width, are read as the raw bits of the expected dtype.
Any other dtype mismatch is an error: values are never converted silently.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import InputError
from .types import TensorType

__all__ = ["load_input", "save_output"]


def load_input(path: str | Path, t: TensorType, index: int) -> np.ndarray:
    """Load one input .npy for parameter ``index`` of type ``t``.

    Raises:
        InputError: unreadable file, or dtype/shape that does not match ``t``.
    """
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read input {index} from {path}: {e}") from None
    want = t.dtype.np
    if a.dtype != want:
        if a.dtype.itemsize == want.itemsize and (a.dtype.kind == "V" or a.dtype == t.dtype.uint_np) and not t.dtype.is_pred:
            a = a.view(want)
        else:
            raise InputError(f"{path}: input {index} has dtype {a.dtype}, parameter expects {t.dtype}")
    if a.shape != t.shape:
        raise InputError(f"{path}: input {index} has shape {a.shape}, parameter expects {t.short()}")
    return a


def save_output(path: str | Path, a: np.ndarray) -> None:
    np.save(path, a, allow_pickle=False)
