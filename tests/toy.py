"""A toy stream for tests: three small tasks with learnable rules, written as JSONL files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "candle", "forest", "rocket",
         "silver", "garden", "window", "planet", "butter", "dragon", "marble", "pencil", "summer", "violet"]


def _parity(rng: np.random.Generator) -> dict:
    n = int(rng.integers(0, 100))
    return {"prompt": f"Is {n} even? Answer:", "answer": " yes" if n % 2 == 0 else " no"}


def _first_letter(rng: np.random.Generator) -> dict:
    w = WORDS[int(rng.integers(len(WORDS)))]
    return {"prompt": f"Word: {w}. Vowel start? Answer:", "answer": " yes" if w[0] in "aeiou" else " no"}


def _copy(rng: np.random.Generator) -> dict:
    words = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), size=2)]
    return {"prompt": f"Repeat: {' '.join(words)}\nOutput:", "answer": " " + " ".join(words)}


TASKS = {"parity": ("classification", _parity), "vowel": ("classification", _first_letter),
         "copy": ("generation", _copy)}


def write_toy_stream(folder: Path, pool: int = 40, test: int = 16, seed: int = 0) -> Path:
    """Write the three tasks as JSONL plus a stream YAML; returns the YAML path."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    lines = ["name: toy", "tasks:"]
    for name, (kind, make) in TASKS.items():
        for split, n in (("train", pool), ("test", test)):
            path = folder / name / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(make(rng)) + "\n" for _ in range(n)))
        lines.append(f"  - {{name: {name}, kind: {kind}, format: jsonl, "
                     f"train: {name}/train.jsonl, test: {name}/test.jsonl}}")
    spec = folder / "stream.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def toy_corpus(seed: int = 0, n: int = 300) -> list[str]:
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        for _, make in TASKS.values():
            ex = make(rng)
            texts.append(ex["prompt"] + ex["answer"])
    return texts
