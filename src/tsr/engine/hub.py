"""Pushing an exported folder to the Hugging Face hub (``tsr export --push-to-hub REPO``), through
``huggingface_hub``: the repository is created where missing (``exist_ok``), then the folder is
uploaded as one commit. The token is huggingface_hub's own (``HF_TOKEN`` or ``hf auth login``);
``HF_ENDPOINT`` points it at another hub. The export is written first, so a failed upload loses
nothing: the message says where the folder is.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, RunError

FLAG = "--push-to-hub"


def check_repo(repo: str) -> None:
    """Refuse a repository id the hub would refuse, before any work is done."""
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError as err:
        raise ConfigError(f"{FLAG}: needs the 'huggingface_hub' package (pip install huggingface_hub)") from err
    try:
        validate_repo_id(repo)
    except HFValidationError as err:
        raise ConfigError(f"{FLAG} {repo!r}: not a repository id ({str(err).splitlines()[0]})") from None
    if repo.count("/") != 1:
        raise ConfigError(f"{FLAG} {repo!r}: give the repository as OWNER/NAME")


def push_folder(folder: Path, repo: str, private: bool = False) -> str:
    """Upload ``folder`` to the model repository ``repo``; returns the commit's URL."""
    from huggingface_hub import HfApi

    api = HfApi()
    try:
        api.create_repo(repo, repo_type="model", private=private, exist_ok=True)
        info = api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="model",
                                 commit_message=f"tsr export: {Path(folder).name}")
    except Exception as err:  # network, authentication, permission: huggingface_hub's own errors
        why = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise RunError(f"{FLAG} {repo}: the upload failed ({why}); the export is written at {folder}: "
                       f"upload it with `hf upload {repo} {folder}`") from None
    return str(getattr(info, "commit_url", None) or info)
