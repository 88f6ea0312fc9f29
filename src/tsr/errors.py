"""The one exception type that reaches users.

Anything the user can fix (a bad config key, a malformed data file, a missing model folder)
raises :class:`TsrError` with a single line that names the file, line or key. The CLI prints
that line and exits non-zero without a traceback; every other exception is a bug.
"""


class TsrError(Exception):
    """A user-facing error: one line, naming what is wrong and where."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class ConfigError(TsrError):
    """A config file, key or value is invalid."""


class DataError(TsrError):
    """A data file or task definition is invalid."""


class ModelError(TsrError):
    """A backbone, tokenizer or adapter setting cannot be honoured."""


class RunError(TsrError):
    """A run directory is unusable (different config, corrupt checkpoint)."""


def reason(err: BaseException) -> str:
    """Why reading a file failed, in a few words for a one-line error: the system's reason, the
    missing key, or the parser's message."""
    if isinstance(err, FileNotFoundError):
        return "No such file or directory"  # safetensors raises it without a strerror
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    if isinstance(err, KeyError):
        return f"missing {err}"
    return str(err)
