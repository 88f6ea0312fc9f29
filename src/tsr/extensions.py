"""Named extension points: what ships with tsr, what a program registers, what packages install.

A method or a benchmark is found by its name in three places, in this order:

1. the built-in table (``METHODS``, ``BENCHMARKS``), fixed when tsr is released;
2. the entries registered in this process (``tsr.register_method``, ``tsr.register_benchmark``);
3. the entry points installed packages declare in their ``pyproject.toml``
   (``[project.entry-points."tsr.methods"]``, ``"tsr.benchmarks"``), read only when a name is
   found in neither of the above, or when every name is listed.

A name means one thing: registering a name that is already taken, or two installed packages
declaring the same name, is one :class:`ConfigError` naming both sides. The registered entries
are the one process-wide table in tsr (registering is what a program does to extend it);
nothing is registered at import time.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Mapping, TypeVar

from .errors import ConfigError, reason

T = TypeVar("T")
ENTRY_POINT = "entry point"


def _entry_points(group: str) -> list:
    from importlib.metadata import entry_points

    return list(entry_points(group=group))


def _dist(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an installed package"


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # a value whose comparison fails is not the same value
        return False


class Extensions(Generic[T]):
    """The ``kind`` entries (``method``, ``benchmark``): built in, registered, and installed
    under the entry-point ``group``. ``check(name, value, where)`` validates an entry (raising a
    ConfigError that names ``where``) and returns what is stored."""

    def __init__(self, kind: str, group: str, builtin: Mapping[str, T],
                 check: Callable[[str, Any, str], T]):
        self.kind, self.group, self.builtin, self.check = kind, group, builtin, check
        self._registered: dict[str, T] = {}
        self._origin: dict[str, str] = {}

    def get(self, name: str) -> T | None:
        """The entry called ``name``, looking at installed packages only when it is not built in
        or registered; None when there is none."""
        if name in self.builtin:
            return self.builtin[name]
        if name not in self._registered:
            self.discover(only=name)
        if name not in self._registered:
            self.discover()  # an entry may bring more names with it (a method's presets)
        return self._registered.get(name)

    def register(self, name: str, value: Any, origin: str) -> T:
        """Add ``value`` as ``name``; registering an equal value again under the same name is a
        no-op, any other reuse of a name is a ConfigError."""
        value = self.check(self.valid_name(name, origin), value, origin)
        self.claim(name, origin, value)
        self._registered[name] = value
        self._origin[name] = origin
        return value

    def valid_name(self, name: Any, origin: str) -> str:
        if not isinstance(name, str) or not name.strip() or name != name.strip() or "=" in name:
            raise ConfigError(f"{origin}: {name!r} is not a valid {self.kind} name (a non-empty word)")
        return name

    def claim(self, name: str, origin: str, value: Any) -> None:
        """Fail unless ``name`` is free, or already holds ``value``."""
        self.not_builtin(name, origin)
        if name in self._registered and not _same(self._registered[name], value):
            raise ConfigError(f"{origin}: {self.kind} name {name!r} is already registered by "
                              f"{self._origin[name]}; choose another name")

    def not_builtin(self, name: str, origin: str) -> None:
        if name in self.builtin:
            raise ConfigError(f"{origin}: {self.kind} name {name!r} is taken by tsr itself (built in); "
                              "choose another name")

    def unregister(self, name: str) -> None:
        """Forget a registered entry (tests, notebooks); built-in ones stay."""
        self._registered.pop(name, None)
        self._origin.pop(name, None)

    def discover(self, only: str | None = None) -> None:
        """Register the entry points of installed packages (just ``only``'s, when given)."""
        found = [ep for ep in _entry_points(self.group) if only is None or ep.name == only]
        by_name: dict[str, list] = {}
        for ep in found:
            by_name.setdefault(ep.name, []).append(ep)
        for name, eps in by_name.items():
            origins = sorted({f"{ENTRY_POINT} {name!r} of {_dist(ep)} ({ep.value})" for ep in eps})
            if len(origins) > 1:
                raise ConfigError(f"{self.kind} name {name!r} is declared by more than one installed package: "
                                  f"{'; '.join(origins)}; uninstall one")
            origin = origins[0]
            if self._origin.get(name) == origin:
                continue  # found before
            self.not_builtin(name, origin)
            try:
                value = eps[0].load()
            except Exception as err:  # the package's own import failed: say which and why
                raise ConfigError(f"{origin}: cannot be loaded ({type(err).__name__}: {reason(err)})") from None
            self.register(name, value, origin)

    def is_local(self, name: str) -> bool:
        """Whether ``name`` was registered from Python in this process (other processes, such as a
        grid's workers, find built-in and installed entries only)."""
        return name in self._origin and not self._origin[name].startswith(ENTRY_POINT)

    def registered(self) -> dict[str, str]:
        """Name -> origin of every entry that is not built in (registered or discovered so far)."""
        return dict(self._origin)

    def names(self) -> list[str]:
        """Every name: built in, registered, and every installed package's (loaded to check them)."""
        self.discover()
        return sorted(self.builtin) + sorted(self._registered)
