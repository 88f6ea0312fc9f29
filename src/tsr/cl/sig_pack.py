"""Signatures as plain tensors: how a task record and a signature file store any signature.

A signature is a tensor (``gradb``, ``proto``, ``fisher``, ...), a :class:`~tsr.cl.sig_hidden.Cloud`
(``hiddenot``, ``jointot``) or a :class:`~tsr.cl.sig_gradient.Projectable` (``gradb_noanswer``).
:func:`pack` turns each into a dict of named tensors (safetensors holds nothing else) and
:func:`unpack` turns the dict back; ``unpack(pack(s))`` equals ``s`` exactly. A tensor packs
as ``{"signature": t}``, the layout task records had before the other kinds could be stored,
so older run folders still load.
"""

from __future__ import annotations

from typing import Any

import torch

from .sig_gradient import Projectable
from .sig_hidden import Cloud


def pack(signature: Any) -> dict[str, torch.Tensor]:
    if isinstance(signature, torch.Tensor):
        return {"signature": signature}
    if isinstance(signature, Cloud):
        out = {"cloud.points": signature.points}
        if signature.labels is not None:
            out["cloud.labels"] = signature.labels
        if signature.classes is not None:
            out["cloud.classes"] = signature.classes
        return out
    if isinstance(signature, Projectable):
        blocks = torch.tensor(signature.blocks, dtype=torch.int64).reshape(-1, 3)
        return {"projectable.grad": signature.grad, "projectable.blocks": blocks,
                "projectable.directions": signature.directions}
    raise TypeError(f"cannot store a signature of type {type(signature).__name__}")


def unpack(tensors: dict[str, torch.Tensor]) -> Any:
    if "signature" in tensors:
        return tensors["signature"]
    if "cloud.points" in tensors:
        return Cloud(tensors["cloud.points"], tensors.get("cloud.labels"), tensors.get("cloud.classes"))
    if "projectable.grad" in tensors:
        blocks = tuple(tuple(int(x) for x in row) for row in tensors["projectable.blocks"].tolist())
        return Projectable(tensors["projectable.grad"], blocks, tensors["projectable.directions"])
    raise KeyError(f"no signature among the tensors {sorted(tensors)}")


def shape(signature: Any) -> tuple:
    """What two signatures must share to be compared: the kind and the vector sizes (a cloud's
    number of points may differ, its feature sizes may not)."""
    if isinstance(signature, torch.Tensor):
        return ("tensor", tuple(signature.shape))
    if isinstance(signature, Cloud):
        labels = None if signature.labels is None else signature.labels.shape[1]
        return ("cloud", signature.points.shape[1], labels, signature.classes is not None)
    if isinstance(signature, Projectable):
        return ("projectable", tuple(signature.grad.shape), signature.blocks)
    return (type(signature).__name__,)
