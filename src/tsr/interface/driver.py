"""The one driver of the audits' commands (``tsr audit NAME``, ``tsr probe``): each command is
built from its audit's ``Params`` dataclass (:mod:`tsr.experiments.audit`), its items become
those params by the run config's own parser and coercion, and the audit is conducted with
this console as its reporter.

Every field of ``Params`` is a ``key=value`` item (``seeds=0,1,2``, ``targets=stance``: a list
is comma-separated, or a YAML list); every other ``key=value`` item, and one CONFIG, is the run
config's. A field also keeps its old option spelling (``--seeds 0,1,2``), an alias kept for
one release that gives the same params. The session flags (``--workers``, ``--executor``,
``--report-only``, ``--uneven-seeds``) say how the audit runs, not what it measures."""

from __future__ import annotations

import argparse
import dataclasses
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from rich.console import Console

from ..errors import ConfigError
from .args import Default, ITEMS, add, add_executor_flags, add_uneven_seeds, add_workers, executor, split_items
from .grid_output import AuditLines

PARAMS = "params (key=value; the --flag spelling is the same param, kept for one release)"
SESSION = "how it runs"


def add_audit(sub, audit) -> argparse.ArgumentParser:
    """The command of ``audit`` on the subparsers ``sub``: its items, one option per param (whose
    help gives the param's ``key=``, type, default and meaning) and its session flags."""
    p = add(sub, audit.name, audit.summary, _command, audit.examples)
    p.set_defaults(audit_object=audit, audit_command=p.prog)
    p.add_argument("items", nargs="*", metavar=f"{audit.positional[1]} | key=value" if audit.positional else ITEMS)
    group = p.add_argument_group(PARAMS)
    hints = get_type_hints(audit.Params)
    for f in dataclasses.fields(audit.Params):
        _add_param(group, audit.Params, f, hints[f.name])
    session = p.add_argument_group(SESSION) if audit.flags else None
    if "workers" in audit.flags:
        add_workers(session)
    if "report_only" in audit.flags:
        session.add_argument("--report-only", action="store_true", help="train nothing: report what is saved so far "
                             "(a partial audit, e.g. while another command runs it)")
    if "uneven_seeds" in audit.flags:
        add_uneven_seeds(session)
    if "executor" in audit.flags:
        add_executor_flags(session)
    return p


def flag_of(f: dataclasses.Field) -> str:
    """The old option spelling of a param: ``--n-max`` for ``n_max``, or the one it declares."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def fallback_of(params: type, f: dataclasses.Field) -> Default | None:
    """Where the default a param's help prints is defined: elsewhere (``default_from``, ``shows``),
    or its own default when it has one worth printing."""
    where = f.metadata.get("default_from") or f.metadata.get("shows")
    if where:
        return Default(where)
    if f.default not in (None, (), "", False):
        return Default(f"{params.__module__}:{params.__qualname__}.{f.name}")
    return None


def _add_param(group, params: type, f: dataclasses.Field, hint: Any) -> None:
    fallback = fallback_of(params, f)
    text = f.metadata.get("help", "")
    if fallback is not None and "%(fallback)s" not in text:
        text += " (default %(fallback)s)"
    kwargs: dict[str, Any] = {"dest": f.name, "help": f"{f.name}={shape(hint)}: {text}"}
    if hint is bool:
        kwargs.update(action="store_const", const="true")
    else:
        kwargs["metavar"] = shape(hint)
        if "bare" in f.metadata:
            kwargs.update(nargs="?", const=f.metadata["bare"])
    action = group.add_argument(flag_of(f), **kwargs)
    action.fallback = fallback  # read by the help formatter (argparse expands %(name)s from the action)


def shape(hint: Any) -> str:
    """How a param's value is written: ``N``, ``X``, ``TEXT``, ``true|false``, ``N,...``, ``a|b``."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return "|".join(shape(a) for a in get_args(hint) if a is not type(None))
    if origin is Literal:
        return "|".join(map(str, get_args(hint)))
    if origin in (tuple, list):
        return shape(get_args(hint)[0]) + ",..."
    return {int: "N", float: "X", bool: "true|false"}.get(hint, "TEXT")


def params_of(audit, args: argparse.Namespace) -> tuple[Any, str | None, list[str]]:
    """The audit's params from the command line (its ``key=value`` items and its old options),
    the run config, and the config's overrides; an unknown key, a param given twice or a value
    of the wrong type is one :class:`ConfigError` line naming it."""
    fields = {f.name: f for f in dataclasses.fields(audit.Params)}
    items, given, spelled = list(args.items or []), {}, {}
    for name, f in fields.items():
        value = getattr(args, name, None)
        if value is not None and "bare" in f.metadata and "=" in value:  # a bare option, then a key=value item
            items, value = [*items, value], f.metadata["bare"]
        if value is not None:
            given[name], spelled[name] = value, flag_of(f)
    plain = [i for i in items if "=" not in i]
    if audit.positional and plain:
        if len(plain) > 1:
            raise ConfigError(f"more than one {audit.positional[1]} given ({plain[0]!r} and {plain[1]!r})")
        given.setdefault(audit.positional[0], plain[0])
        spelled.setdefault(audit.positional[0], audit.positional[1])
        plain = []
    config, overrides = split_items(plain) if audit.config else (None, [])
    if plain and not audit.config:
        raise ConfigError(f"{args.audit_command} runs no config: {plain[0]!r} is not key=value")
    for item in (i for i in items if "=" in i):
        key = item.split("=", 1)[0].strip()
        if key in fields:
            if key in given:
                raise ConfigError(f"{key}: given twice ({spelled[key]} and {item})")
            given[key], spelled[key] = _parsed(item)[key], key
        else:
            _check_run_key(audit, args.audit_command, key, list(fields))
            overrides.append(item)
    return _build(audit.Params, given, spelled), config, overrides


def _parsed(item: str) -> dict:
    from ..config.layers import parse_override  # the run config's own parser: YAML values, one-line errors

    return parse_override(item)


def _check_run_key(audit, command: str, key: str, params: list[str]) -> None:
    """A key that is neither a param nor (for an audit that runs a config) a run config key is an error."""
    from ..config import RunConfig

    top = [f.name for f in dataclasses.fields(RunConfig)]
    if audit.config and key.split(".")[0] in top:
        return
    where = f"; a run config key starts with one of: {', '.join(top)}" if audit.config else ""
    raise ConfigError(f"unknown key {key!r} (the params of {command}: {', '.join(params)}{where})")


def _build(params: type, given: dict[str, Any], spelled: dict[str, str]) -> Any:
    """The params dataclass from the given values, each coerced to its field's type (by
    :func:`tsr.schema.coerce`; a list also from comma-separated text or one value); an error
    of a value given by its old option names that option."""
    from ..schema import build

    hints = get_type_hints(params)
    values = {}
    for name, raw in given.items():
        try:
            values[name] = _coerced(hints[name], raw, name)
        except ConfigError as err:
            raise (ConfigError(f"{spelled[name]}: {err}") if spelled[name].startswith("-") else err) from None
    return build(params, values)


def _coerced(hint: Any, value: Any, path: str) -> Any:
    """``value`` as ``hint``; where that fails and ``hint`` takes a list, a comma-separated text
    (``0,1,2``) or one value (``seeds=0``) as that list."""
    from ..schema import coerce

    try:
        return coerce(hint, value, path)
    except ConfigError:
        if not _takes_list(hint) or isinstance(value, (list, tuple, dict)):
            raise
    items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else [value]
    return coerce(hint, items, path)


def _takes_list(hint: Any) -> bool:
    options = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    return any(get_origin(o) in (tuple, list) for o in options)


def command_line(args: argparse.Namespace, name: str) -> str | None:
    """``tsr audit NAME ...`` as it was typed (None when called without an argument list), for the report."""
    return f"tsr audit {name} " + " ".join(args.argv_tail) if args.argv_tail else None


def _command(args: argparse.Namespace, console: Console) -> int:
    from ..experiments.audit import Session, conduct

    audit = args.audit_object
    params, config, overrides = params_of(audit, args)
    with AuditLines(console) as lines:
        session = Session(config, tuple(overrides), getattr(args, "workers", 1),
                          executor(args) if "executor" in audit.flags else None, getattr(args, "report_only", False),
                          getattr(args, "uneven_seeds", False), command_line(args, audit.name), lines)
        report = conduct(audit, params, session)
    console.print(report.text)
    console.print(f"saved to {report.out}")
    return 0
