"""Task signatures: zero-training probes of a task, and the similarity that compares two.

One small interface for every signature (:class:`SignatureSpec`): ``take(learner, batches,
state)`` maps a task's probe batches, the learner and an adapter state (the shared
initialisation: the fixed A0 and B0 = 0 of the run) to a vector or a distribution, and
``similarity(source, target)`` maps two of them to a score, higher meaning "more alike". The
registry :data:`SIGNATURES` holds the seven signatures of the reference paper (Table 2) and this
project's candidates; docs/signatures.md lists their definitions, the choices the paper leaves
open, and their costs.

``gradb`` is the paper's Eq. 5, the one TSR routes on: the mean over m probe batches of the
gradient of the LM loss w.r.t. every LoRA B factor at the shared initialisation, flattened
across layers; ``gradb_norm`` normalises each batch's gradient before averaging;
``gradb_last4`` keeps the last four blocks only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Literal, Mapping, Sequence

import torch

from ..data.collate import Batch
from ..errors import ConfigError
from ..model.adapter import State
from ..model.learner import Learner
from . import sig_gradient as grad
from . import sig_hidden as hid
from .routing import cosine
from .sig_pack import shape as signature_shape
from .sig_gradient import batch_gradb  # noqa: F401  (re-exported: callers import it from here)

SignatureKind = Literal["gradb", "gradb_norm", "gradb_last4"]
# the kinds TSR can route on and the default audit of `tsr probe --signatures`
SIGNATURE_KINDS: tuple[str, ...] = ("gradb", "gradb_norm", "gradb_last4")

PROBE_BATCHES = 10  # the paper's m: probe batches per signature (Appendix "Full-stream setup")


@dataclass(frozen=True)
class SignatureSpec:
    """A signature: how to take it and how to compare two. ``params`` are the keyword defaults
    of ``take`` (recorded in audits so a table says what it measured)."""

    name: str
    family: str  # "representation", "gradient" or "rule" (this project's candidates)
    signal: str  # one line: what it measures
    take: Callable[..., Any]
    similarity: Callable[[Any, Any], float]
    params: Mapping[str, Any] = field(default_factory=dict)
    paper: bool = True


def _spec(name, family, signal, fn, similarity, paper=True, **params) -> SignatureSpec:
    return SignatureSpec(name, family, signal, partial(fn, **params) if params else fn, similarity, params, paper)


SIGNATURES: dict[str, SignatureSpec] = {s.name: s for s in (
    _spec("proto", "representation", "input similarity (mean hidden state)", hid.proto, hid.proto_similarity,
          layer=-1, pooling="mean"),
    _spec("hiddenot", "representation", "distribution geometry (OT over hidden states)", hid.hidden_cloud,
          partial(hid.ot_similarity, reg=0.0), layer=-1, pooling="mean"),
    _spec("jointot", "representation", "label-aware distribution (OTDD: OT over hidden states and "
          "label-conditional clouds)", hid.otdd_cloud, partial(hid.ot_similarity, label_weight=1.0, reg=0.0),
          layer=-1, pooling="mean"),
    _spec("jointot_emb", "representation", "OT over hidden states + answer embeddings (ours: jointot's first "
          "reading)", hid.joint_cloud, partial(hid.ot_similarity, label_weight=1.0, reg=0.0), paper=False,
          layer=-1, pooling="mean"),
    _spec("fisher", "gradient", "gradient magnitude (diagonal empirical Fisher of the B factors, per example)",
          grad.fisher, cosine, per_example=True),
    _spec("fisher_batch", "gradient", "squared batch-mean gradients of the B factors (ours: fisher's first "
          "reading)", grad.fisher, cosine, paper=False, per_example=False),
    _spec("gradb", "gradient", "gradient direction (Eq. 5)", grad.gradb, cosine),
    _spec("gradb_norm", "gradient", "gradient direction, each batch normalised", grad.gradb, cosine,
          normalise=True),
    _spec("gradb_last4", "gradient", "gradient direction, last four blocks", grad.gradb, cosine, last_blocks=4),
    _spec("gradb_contrast", "rule", "gradient of the rule: true answers minus permuted answers",
          grad.gradb_contrast, cosine, paper=False, seed=0),
    _spec("gradb_noanswer", "rule", "gradient direction with the answer words' output directions projected out",
          grad.gradb_noanswer, grad.noanswer_similarity, paper=False),
)}


def signature_names(text: str | Sequence[str] | None, where: str = "--signatures") -> list[str]:
    """Names from a comma-separated list (``all``: every signature); an unknown name is a
    one-line :class:`ConfigError`."""
    items = [x.strip() for x in text.split(",")] if isinstance(text, str) else list(text or [])
    items = [x for x in items if x]
    if not items:
        return list(SIGNATURE_KINDS)
    if items == ["all"]:
        return list(SIGNATURES)
    for item in items:
        if item not in SIGNATURES:
            raise ConfigError(f"{where}: unknown signature {item!r} (known: all, {', '.join(SIGNATURES)})")
    return list(dict.fromkeys(items))


def take(name: str, learner: Learner, batches: Sequence[Batch], state: State | None = None) -> Any:
    """The signature ``name`` of the task ``batches`` come from, at ``state`` (default: the shared
    initialisation). The adapter, ``.grad`` buffers and random streams are left as they were."""
    if name not in SIGNATURES:
        raise ValueError(f"unknown signature kind {name!r}")
    return SIGNATURES[name].take(learner, batches, learner.init_state if state is None else state)


def similarity(name: str, source: Any, target: Any) -> float:
    return float(SIGNATURES[name].similarity(source, target))


def similarities(name: str, sources: Sequence[tuple[str, Any]], target: Any) -> list[float]:
    """``target``'s similarity to each named source signature (TSR's routing scores); a source
    without a signature of ``target``'s kind and sizes is a RuntimeError naming it."""
    missing = [n for n, s in sources if s is None or signature_shape(s) != signature_shape(target)]
    if missing:
        raise RuntimeError(f"tasks {missing} have no comparable signature in the task memory")
    return [similarity(name, s, target) for _, s in sources]


def probe_signature(learner: Learner, batches: Sequence[Batch], kind: SignatureKind = "gradb") -> torch.Tensor:
    """A gradient-B signature (``SIGNATURE_KINDS``) at the shared initialisation: what TSR routes on."""
    if kind not in SIGNATURE_KINDS:
        raise ValueError(f"unknown signature kind {kind!r}")
    return take(kind, learner, batches)


__all__ = ["SIGNATURES", "SIGNATURE_KINDS", "SignatureSpec", "batch_gradb", "probe_signature", "signature_names",
           "similarities", "similarity", "take"]
