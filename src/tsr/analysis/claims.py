"""docs/claims.md's verdict tables, rebuilt from the run ledgers and the rule.

The rows of the page live in a spec (``measurements/claims/claims.yaml``): each row's headline
and criterion, and per regime either a reading of a run ledger (a JSON Lines archive of runs,
``tsr archive``; docs/rundir.md) or, for runs that are no longer kept, the cell as it was
measured (``cell:``, with its machine as far as it was recorded). :func:`build` computes every
cell, applies the rule of :mod:`tsr.analysis.verdicts` and renders the first-screen table and
one table per claim; :func:`write` puts them between the page's ``<!-- claims:NAME -->`` and
``<!-- /claims -->`` markers, :func:`check` says which blocks differ (``python -m
tsr.analysis.claims [--write]``).

One machine per reading: a pair compared by seed is a pair only when both runs were made on one
kind of machine (:data:`tsr.analysis.machines.KEYS`). A reading whose pairs mix machines is
refused (:class:`MixedMachines`) unless its spec says ``mixed: unpaired``; it is then computed
unpaired (each side's mean and standard error, combined as if independent) and its verdict is
``unpaired``, never holds. A family (each order, each benchmark) does not hold when one of its
paired members does not; otherwise a family with an unpaired member is unpaired.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .claims_probe import probe_cell_parts
from .claims_signatures import signature_cell_parts
from .machines import machine_key, machine_name
from .verdicts import FAILS, HOLDS, OPEN, UNPAIRED, count_verdict, margin, number_text, standard_error, verdict

REGIMES = ("default", "near-calibrated", "real base")
RANK = {FAILS: 0, UNPAIRED: 1, OPEN: 2, HOLDS: 3}
ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "measurements" / "claims" / "claims.yaml"
PAGE = ROOT / "docs" / "claims.md"


class MixedMachines(ValueError):
    """A reading's pairs were made on different kinds of machine."""


@dataclass(frozen=True)
class Run:
    source: str
    method: str
    order: str
    seed: int
    machine: tuple
    metrics: dict


@dataclass
class Cell:
    """One row's reading in one regime."""
    measured: str            # "mean ± se (n)" or "passed/total (n)"
    verdict: str
    machine: str
    member: str = ""         # the decisive member of a family
    source: str = ""         # the ledger, or where the committed cell's runs were
    margin: float = math.nan  # how far the criterion is met, in standard errors (decisive = lowest)
    members: list = field(default_factory=list)  # a ledger family's every member, as cells


@dataclass
class Row:
    id: str
    claim: str
    headline: str
    criterion: str
    cells: dict[str, Cell] = field(default_factory=dict)


# --- the ledgers -------------------------------------------------------------------------------

def _get(config: dict, dotted: str):
    for part in dotted.split("."):
        config = config.get(part) if isinstance(config, dict) else None
    return config


def load_ledger(file: Path, orders: dict[str, dict[str, list[str]]], drop: dict | None = None) -> list[Run]:
    """The finished runs of a ledger; an order given as a task list is named from ``orders``."""
    runs, seen = [], {}
    for n, line in enumerate(Path(file).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        config = yaml.safe_load(rec["config.yaml"])
        if any(_get(config, k) == v for k, v in (drop or {}).items()):
            continue
        source, order = config["stream"]["source"], config["stream"]["order"]
        if isinstance(order, list):
            named = [k for k, v in orders.get(source, {}).items() if v == order]
            if not named:
                raise ValueError(f"{file}:{n}: order {'>'.join(order)} has no name in the spec")
            order = named[0]
        machine = json.loads(rec["run.json"]).get("machine") or {}
        run = Run(source, config["method"]["name"], order, int(config["seed"]),
                  machine_key(machine), json.loads(rec["results.json"])["metrics"])
        key = (run.source, run.method, run.order, run.seed)
        if key in seen:
            raise ValueError(f"{file}:{n}: a second run of {key} (the first at line {seen[key]}); "
                             "the spec's drop must tell them apart")
        seen[key] = n
        runs.append(run)
    return runs


# --- the statistics ----------------------------------------------------------------------------


def _pick(runs: list[Run], source: str, method: str, order: str) -> dict[int, Run]:
    return {r.seed: r for r in runs if (r.source, r.method, r.order) == (source, method, order)}


@dataclass
class Reading:
    mean: float
    se: float
    n: int
    machines: set
    paired: bool = True
    member: str = ""


def difference(a: dict[int, Run], b: dict[int, Run], metric: str, member: str = "") -> Reading:
    """``a - b`` paired by seed where every pair shares a machine, else unpaired."""
    seeds = sorted(set(a) & set(b))
    machines = {a[s].machine for s in seeds} | {b[s].machine for s in seeds}
    if all(a[s].machine == b[s].machine for s in seeds):
        d = [a[s].metrics[metric] - b[s].metrics[metric] for s in seeds]
        return Reading(statistics.fmean(d), standard_error(d), len(d), machines, True, member)
    va, vb = [a[s].metrics[metric] for s in seeds], [b[s].metrics[metric] for s in seeds]
    se = math.hypot(standard_error(va), standard_error(vb))
    return Reading(statistics.fmean(va) - statistics.fmean(vb), se, len(seeds), machines, False, member)


def statistic(a: dict[int, Run], metric: str, member: str = "") -> Reading:
    """``a``'s metric over its seeds (on more than one kind of machine: unpaired)."""
    v = [r.metrics[metric] for r in a.values()]
    machines = {r.machine for r in a.values()}
    return Reading(statistics.fmean(v), standard_error(v), len(v), machines, len(machines) == 1, member)


def range_half(a: dict[str, dict[int, Run]], b: dict[str, dict[int, Run]], metric: str, member: str) -> Reading:
    """``a``'s range of order means minus half of ``b``'s (unpaired se: each range's two ends'
    standard errors combined, as the orders audit's range row); its orders' runs on more than one
    kind of machine make it unpaired."""
    def rng(cells):
        stats = [(statistics.fmean([r.metrics[metric] for r in c.values()]),
                  standard_error([r.metrics[metric] for r in c.values()])) for c in cells.values()]
        hi, lo = max(stats), min(stats)
        return hi[0] - lo[0], math.hypot(hi[1], lo[1])
    (ra, sa), (rb, sb) = rng(a), rng(b)
    runs = [r for cells in (a, b) for c in cells.values() for r in c.values()]
    n = min(len(c) for cells in (a, b) for c in cells.values())
    machines = {r.machine for r in runs}
    return Reading(ra - rb / 2, math.hypot(sa, sb / 2), n, machines, len(machines) == 1, member)


def readings(spec: dict, runs: list[Run]) -> list[Reading]:
    """The members of one ledger reading (one member unless it is a family)."""
    kind, metric = spec["kind"], spec.get("metric", "overall")
    sources = spec.get("sources") or [spec["source"]]
    orders = spec.get("orders", ["canonical"])
    out = []
    for src in sources:
        if kind == "difference":
            for o in orders:
                out.append(difference(_pick(runs, src, spec["a"], o), _pick(runs, src, spec["b"], o), metric,
                                      f"{src} {o}" if len(sources) > 1 else o))
        elif kind == "orders":  # each order − the first, one method
            for o in orders[1:]:
                out.append(difference(_pick(runs, src, spec["a"], o), _pick(runs, src, spec["a"], orders[0]),
                                      metric, o))
        elif kind == "statistic":
            out.append(statistic(_pick(runs, src, spec["a"], orders[0]), metric, src if len(sources) > 1 else ""))
        elif kind == "range-half":
            out.append(range_half({o: _pick(runs, src, spec["a"], o) for o in orders},
                                  {o: _pick(runs, src, spec["b"], o) for o in orders}, metric, src))
        else:
            raise ValueError(f"unknown reading kind {kind!r}")
    for r in out:
        if not r.n:
            raise ValueError(f"{spec}: no runs for {r.member or 'its reading'}")
    return out


# --- verdicts and cells ------------------------------------------------------------------------

def ledger_cell(spec: dict, runs: list[Run], criterion: str, source: str) -> Cell:
    members = readings(spec, runs)
    mixed = [m for m in members if not m.paired]
    if mixed and spec.get("mixed") != UNPAIRED:
        names = ", ".join(m.member or "the reading" for m in mixed)
        raise MixedMachines(f"{source}: {names}: pairs made on {len(mixed[0].machines)} kinds of machine "
                            f"({'; '.join(sorted(machine_name(x) for x in mixed[0].machines))}); "
                            "set mixed: unpaired to read it unpaired")
    judged = [(m, verdict(m.mean, m.se, m.n, criterion) if m.paired else UNPAIRED,
               margin(m.mean, m.se, criterion)) for m in members]
    paired_fails = [j for j in judged if j[1] == FAILS]
    # the worst verdict decides (a member under 5 seeds leaves the family inconclusive), then the margin
    pool = paired_fails or [j for j in judged if j[1] == UNPAIRED] or [j for j in judged if j[1] == OPEN] or judged
    m, v, g = min(pool, key=lambda j: j[2])
    machines = sorted({machine_name(x) for r in members for x in r.machines})
    each = [Cell(number_text(r.mean, r.se, r.n, criterion, rv), rv,
                 " + ".join(sorted({machine_name(x) for x in r.machines})), r.member, source, rg)
            for r, rv, rg in judged] if len(members) > 1 else []
    return Cell(number_text(m.mean, m.se, m.n, criterion, v), v, " + ".join(machines),
                m.member if len(members) > 1 else "", source, g, each)


def committed_cell(spec: dict, criterion: str) -> Cell:
    measured = str(spec["cell"])
    count = re.fullmatch(r"(\d+)/(\d+) \((\d+)\)", measured)
    if count:
        needed = int(re.match(r"≥ (\d+) of", criterion).group(1))
        v = count_verdict(int(count[1]), int(count[2]), needed, int(count[3]))
        g = int(count[1]) - needed
    else:
        stat = re.fullmatch(r"([+−-]?[\d.]+) ± ([\d.]+) \((\d+)\)", measured)
        if not stat:
            raise ValueError(f"a committed cell the rule cannot read: {measured!r}")
        mean, se = float(stat[1].replace("−", "-")), float(stat[2])
        v, g = verdict(mean, se, int(stat[3]), criterion), margin(mean, se, criterion)
    return Cell(measured, v, spec.get("machine", "not recorded"), str(spec.get("member", "")),
                spec.get("runs", ""), g)


def build(spec_file: Path = SPEC) -> tuple[dict, list[Row]]:
    spec = yaml.safe_load(Path(spec_file).read_text(encoding="utf-8"))
    ledgers: dict[str, list[Run]] = {}
    rows = []
    for r in spec["rows"]:
        row = Row(r["id"], re.match(r"C\d+", r["id"]).group(0), r["headline"], r["criterion"])
        for regime in REGIMES:
            c = r.get(regime)
            if not c:
                continue
            if "probe" in c:  # a probe ledger's relation checks (tsr.analysis.claims_probe)
                parts = probe_cell_parts(c, ROOT, row.criterion)
                if parts is not None:  # no complete seed yet: no cell
                    measured, v, machines, g = parts
                    row.cells[regime] = Cell(measured, v, machines, "", c["probe"], g)
            elif "signatures" in c:  # a signature audit's per-seed scores (tsr.analysis.claims_signatures)
                parts = signature_cell_parts(c, ROOT, row.criterion)
                if parts is not None:  # under two seeds: no cell
                    measured, v, machines, g, member = parts
                    row.cells[regime] = Cell(measured, v, machines, member, c["signatures"], g)
            elif "ledger" in c:
                name = c["ledger"]
                if name not in ledgers:
                    info = spec["ledgers"][name]
                    files = info["file"] if isinstance(info["file"], list) else [info["file"]]
                    ledgers[name] = [run for f in files for run in load_ledger(ROOT / f, spec["orders"], info.get("drop"))]
                source = spec["ledgers"][name]["file"]
                row.cells[regime] = ledger_cell(c, ledgers[name], row.criterion,
                                                " + ".join(source) if isinstance(source, list) else source)
            else:
                row.cells[regime] = committed_cell(c, row.criterion)
        rows.append(row)
    return spec, rows


# --- the page ----------------------------------------------------------------------------------

def claim_verdict(cells: list[Cell]) -> tuple[str, Cell | None]:
    """A claim holds in a regime when every measured row holds; it does not hold when one does
    not; unpaired when one is unpaired and none fails; inconclusive otherwise. The decisive row:
    the weakest of the worst verdict."""
    if not cells:
        return "not measured", None
    worst = min(cells, key=lambda c: (RANK[c.verdict], c.margin))
    return worst.verdict, worst


def summary_table(spec: dict, rows: list[Row]) -> str:
    lines = ["| claim | the paper says | " + " | ".join(REGIMES) + " |", "|---" * (2 + len(REGIMES)) + "|"]
    for claim, text in spec["claims"].items():
        mine = [r for r in rows if r.claim == claim]
        cells = []
        for regime in REGIMES:
            got = [(r, r.cells[regime]) for r in mine if regime in r.cells]
            v, cell = claim_verdict([c for _, c in got])
            if cell is None:
                why = (spec.get("unmeasured") or {}).get(regime, {}).get(claim)
                cells.append(f"not measured: {why}" if why else "not measured")
                continue
            rid = next(r.id for r, c in got if c is cell)
            held = sum(c.verdict == HOLDS for _, c in got)
            count = f"; {held} of {len(got)} rows hold" if len(got) > 1 else ""
            member = f" ({cell.member})" if cell.member else ""
            cells.append(f"**{v}**: {rid}{member} {cell.measured}, {cell.machine}{count}")
        lines.append(f"| [{claim}](#{claim.lower()}) | {text} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def claim_table(rows: list[Row], claim: str) -> str:
    """A claim's rows, one line per measured regime (the decisive member named after the
    number), and under a ledger family's line each of its members (``· member``)."""
    lines = ["| row | headline | criterion | regime | measured | verdict | machine |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.claim != claim:
            continue
        for regime in REGIMES:
            c = r.cells.get(regime)
            if c is None:
                continue
            member = f", {c.member}" if c.member else ""
            lines.append(f"| {r.id} | {r.headline} | {r.criterion} | {regime} | {c.measured}{member} | "
                         f"{c.verdict} | {c.machine} |")
            lines += [f"| | · {m.member} | {r.criterion} | {regime} | {m.measured} | {m.verdict} | {m.machine} |"
                      for m in c.members]
    return "\n".join(lines)


def blocks(spec_file: Path = SPEC) -> dict[str, str]:
    """Every generated block of the page, by marker name: ``status`` and one per claim."""
    spec, rows = build(spec_file)
    out = {"status": summary_table(spec, rows)}
    out |= {claim: claim_table(rows, claim) for claim in spec["claims"]}
    return out


MARK = re.compile(r"(<!-- claims:(\S+) -->\n)((?:(?!<!-- claims:).)*?)(<!-- /claims -->)", re.S)


def printed(page: Path = PAGE) -> dict[str, str]:
    return {m[2]: m[3].rstrip("\n") for m in MARK.finditer(Path(page).read_text(encoding="utf-8"))}


def check(page: Path = PAGE, spec_file: Path = SPEC) -> list[str]:
    """The names of the blocks whose printed text differs from what the ledgers give (or missing)."""
    want, have = blocks(spec_file), printed(page)
    return [name for name in want if have.get(name) != want[name]]


def write(page: Path = PAGE, spec_file: Path = SPEC) -> list[str]:
    want = blocks(spec_file)
    text = Path(page).read_text(encoding="utf-8")
    missing = [name for name in want if f"<!-- claims:{name} -->" not in text]
    if missing:
        raise ValueError(f"{page}: no marker for {', '.join(missing)}")
    new = MARK.sub(lambda m: m[1] + (want[m[2]] + "\n" if m[2] in want else m[3]) + m[4], text)
    Path(page).write_text(new, encoding="utf-8")
    return [n for n in want if n in text]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--write" in argv:
        write()
        return 0
    stale = check()
    if stale:
        print(f"{PAGE}: blocks that differ from the ledgers: {', '.join(stale)} (python -m tsr.analysis.claims --write)")
        return 1
    print(f"{PAGE}: every generated block matches the ledgers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
