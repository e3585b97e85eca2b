"""Op-support tables: what each accelerator family can run, as data with a reason and a source.

One TOML file per architecture family lives in ``tables/`` (``static-schedule.toml`` for the Groq
TSP, ``bsp-tiles.toml`` for Graphcore IPUs, ...), on top of ``common.toml``, which holds the rules
every graph compiler shares. A file named after a chip (``tables/sn40l.toml``) may add entries for
that chip alone. Each entry says *why* (``reason``), *what to do* (``fix``), which ``ak.port``
recipe does it (``recipe``) and *where the rule comes from* (``source``): a vendor document, or
``illustrative: ...`` when no vendor published it and accelkit chose it to teach a rewrite,
``unconfirmed: ...`` when it comes from secondary material, ``derived: ...`` when it follows from a
published design. Sources name the public evidence with its address.

An illustrative restriction is never more than a warning: accelkit cannot show that the vendor's
compiler refuses it, so the check says "probably worth changing" and compile goes ahead
(:func:`evidence` classifies a source; :func:`load_table` caps the severity).

Three sections, all optional in a family file::

    [rules.host-sync]              # a rule by name; a family file overrides common.toml's fields
    severity = "warning"           # "error" | "warning" | "none" (rule off for this family)

    [[ops]]                        # ops the family does not run (matched on the ATen name)
    ops = ["aten.gelu.default"]
    when = { approximate = "none" }  # only when the op's keyword arguments say so
    reason = "..."; fix = "..."; recipe = "tanh-gelu"; source = "illustrative: ..."

    [[dtypes]]                     # what happens to a dtype the chip lacks (catalog's ``dtypes``)
    dtype = "int64"
    severity = "warning"

A vendor that publishes the ops it *supports* (AWS Neuron) gets an allow-list instead of (or beside) ``[[ops]]``:
groups of ATen kinds, each with its evidence, and one ``[unlisted]`` entry for an op on no list (views and
tracing bookkeeping are never listed: every compiler folds them)::

    [[supported]]
    ops = ["addmm", "mm", "_softmax"]
    source = "AWS Neuron docs, 'Supported Operators' (https://...)"

    [unlisted]
    reason = "..."; fix = "..."; source = "derived: ..."
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from accelkit.errors import SpecError
from accelkit.graph.cost import VIEW_OPS

TABLES_DIR = Path(__file__).with_name("tables")

# Kinds no allow-list names: views and tracing bookkeeping, which every compiler folds away
_NEVER_LISTED = VIEW_OPS | {"getitem", "_assert_tensor_metadata", "_assert_scalar", "_assert_async", "sym_size",
                            "sym_numel", "sym_stride", "sym_constrain_range_for_size", "lift_fresh_copy"}

SEVERITIES = ("error", "warning", "none")
EVIDENCE = ("vendor", "derived", "unconfirmed", "illustrative")  # strongest first


def evidence(source: str) -> str:
    """How firm a rule's ``source`` is: ``vendor`` (a vendor document, paper or the PyTorch docs), ``derived``,
    ``unconfirmed`` or ``illustrative`` (accelkit's own choice, no public evidence either way)."""
    head = source.split(":", 1)[0].strip().lower()
    return head if head in EVIDENCE[1:] else "vendor"


def _capped(severity: str, source: str) -> str:
    """An illustrative restriction is a warning at most (see the module docstring)."""
    return "warning" if severity == "error" and evidence(source) == "illustrative" else severity

RULE_NAMES = (
    "data-dependent-control-flow",  # Python `if` on a tensor value: no graph
    "host-sync",                    # .item() / _local_scalar_dense: value leaves the device
    "non-tensor-output",            # forward returns something that is not a tensor
    "capture-error",                # torch.export failed for another reason
    "custom-op",                    # an op outside ATen (a C++ / torch.library extension): no kernel anywhere
    "inplace-on-input",             # forward writes into a caller's tensor
    "dynamic-input",                # an input dimension declared variable (dynamic_dims=)
    "data-dependent-shape",         # nonzero / unique / masked_select: output size from the data
    "loss-outside-model",           # training: the loss is not computed in forward
    "too-large",                    # parameters do not fit the memory of one chip, all tiers together
    "dtype",                        # fallback for a dtype the chip lacks and no [[dtypes]] entry covers
)


@dataclass(frozen=True)
class Rule:
    """One named rule of a family: its severity on that family, the explanation and the fix."""

    name: str
    kind: str
    severity: str
    reason: str
    fix: str
    recipe: str | None
    source: str

    @property
    def enabled(self) -> bool:
        return self.severity != "none"

    @property
    def evidence(self) -> str:
        return evidence(self.source)


@dataclass(frozen=True)
class OpRule:
    """Ops (ATen overload names like ``aten.lstm.input``, or short kinds like ``lstm``) a family lacks."""

    ops: tuple[str, ...]
    when: tuple[tuple[str, Any], ...]  # keyword-argument values that must all match
    severity: str
    reason: str
    fix: str
    recipe: str | None
    source: str

    def matches(self, op: str, kind: str, kwargs: dict[str, Any]) -> bool:
        if op not in self.ops and kind not in self.ops:
            return False
        defaults = _schema_defaults(op)
        return all(kwargs.get(k, defaults.get(k)) == v for k, v in self.when)


@dataclass(frozen=True)
class SupportedOps:
    """A group of ATen kinds (``"addmm"``) or overloads a family runs, with where the list comes from."""

    ops: frozenset[str]
    source: str


@dataclass(frozen=True)
class DtypeRule:
    """What a family does with a dtype its chips lack (``float64``, ``int64``...)."""

    dtype: str
    severity: str
    reason: str
    fix: str
    recipe: str | None
    source: str


@dataclass(frozen=True)
class SupportTable:
    """The merged support table of one target: common rules, the family's file, the chip's file."""

    family: str
    sdk: str
    files: tuple[str, ...]
    rules: dict[str, Rule]
    ops: tuple[OpRule, ...]
    dtypes: dict[str, DtypeRule]
    supported: tuple[SupportedOps, ...] = ()  # an allow-list (empty: every op not in ``ops`` runs)
    unlisted: OpRule | None = None  # what an op on no ``supported`` list gets

    def rule(self, name: str) -> Rule:
        return self.rules[name]

    def listed(self, op: str, kind: str) -> SupportedOps | None:
        """The allow-list group that names this op (by kind or overload), or None."""
        return next((g for g in self.supported if kind in g.ops or op in g.ops), None)

    def op_rule(self, op: str, kind: str, kwargs: dict[str, Any]) -> OpRule | None:
        """The first entry that says this op (with these keyword arguments) does not run here; with an
        allow-list, :attr:`unlisted` for an op on no list (views and tracing bookkeeping excepted)."""
        rule = next((r for r in self.ops if r.severity != "none" and r.matches(op, kind, kwargs)), None)
        if rule is not None or self.unlisted is None or self.unlisted.severity == "none":
            return rule
        if kind in _NEVER_LISTED or not op.startswith("aten.") or self.listed(op, kind) is not None:
            return None
        return replace(self.unlisted, ops=(op,))

    def entries(self) -> list[dict[str, str]]:
        """Every entry as a flat row (for a notebook table): what, severity, recipe, source."""
        rows = [{"what": f"rule {r.name}", "severity": r.severity, "recipe": r.recipe or "",
                 "evidence": evidence(r.source), "source": r.source} for r in self.rules.values()]
        rows += [{"what": "op " + ", ".join(r.ops) + "".join(f" {k}={v}" for k, v in r.when),
                  "severity": r.severity, "recipe": r.recipe or "", "evidence": evidence(r.source),
                  "source": r.source} for r in self.ops]
        rows += [{"what": f"dtype {d.dtype}", "severity": d.severity, "recipe": d.recipe or "",
                  "evidence": evidence(d.source), "source": d.source} for d in self.dtypes.values()]
        rows += [{"what": f"supported: {len(g.ops)} ops ({', '.join(sorted(g.ops)[:6])}, ...)", "severity": "none",
                  "recipe": "", "evidence": evidence(g.source), "source": g.source} for g in self.supported]
        if self.unlisted is not None:
            rows.append({"what": "any op on no supported list", "severity": self.unlisted.severity, "recipe": "",
                         "evidence": evidence(self.unlisted.source), "source": self.unlisted.source})
        return rows


@cache
def _schema_defaults(op: str) -> dict[str, Any]:
    """Default keyword values of an ATen overload ("aten.gelu.default" -> {"approximate": "none"})."""
    import torch

    parts = op.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return {}
    try:
        overload = getattr(getattr(torch.ops.aten, parts[1]), parts[2])
    except AttributeError:
        return {}
    return {a.name: a.default_value for a in overload._schema.arguments if a.has_default_value()}


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path.name}: not valid TOML: {e}", where=str(path)) from None


def _text(raw: dict[str, Any], key: str, origin: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise SpecError(f"{origin}: field '{key}' must be text (got {value!r})", where=origin)
    return value


def _severity(raw: dict[str, Any], origin: str, default: str = "error") -> str:
    sev = raw.get("severity", default)
    if sev not in SEVERITIES:
        raise SpecError(f"{origin}: severity must be one of {', '.join(SEVERITIES)} (got {sev!r})", where=origin)
    return str(sev)


def _merge_rules(rules: dict[str, Rule], raw: dict[str, Any], origin: str) -> None:
    for name, fields in raw.items():
        if name not in RULE_NAMES:
            raise SpecError(f"{origin}: unknown rule {name!r}", where=origin,
                            fix="known rules: " + ", ".join(RULE_NAMES))
        if not isinstance(fields, dict):
            raise SpecError(f"{origin}: rules.{name} must be a table", where=origin)
        base = rules.get(name)
        if base is None:
            rules[name] = Rule(
                name=name, kind=_text(fields, "kind", origin, name), severity=_severity(fields, origin),
                reason=_text(fields, "reason", origin), fix=_text(fields, "fix", origin),
                recipe=fields.get("recipe"), source=_text(fields, "source", origin),
            )
        else:  # a family file overrides only the fields it gives
            rules[name] = replace(base, **{k: (_severity(fields, origin) if k == "severity" else v)
                                           for k, v in fields.items()})


def _load_ops(raw: list[Any], origin: str) -> list[OpRule]:
    out = []
    for i, e in enumerate(raw):
        ops = e.get("ops")
        if not isinstance(ops, list) or not ops:
            raise SpecError(f"{origin}: [[ops]] entry {i + 1} needs ops = [\"aten.name.overload\", ...]", where=origin)
        out.append(OpRule(
            ops=tuple(ops), when=tuple(sorted(e.get("when", {}).items())), severity=_severity(e, origin),
            reason=_text(e, "reason", origin), fix=_text(e, "fix", origin), recipe=e.get("recipe"),
            source=_text(e, "source", origin),
        ))
    return out


def _load_supported(raw: list[Any], origin: str) -> list[SupportedOps]:
    out = []
    for i, e in enumerate(raw):
        ops = e.get("ops")
        if not isinstance(ops, list) or not ops or not all(isinstance(o, str) for o in ops):
            raise SpecError(f"{origin}: [[supported]] entry {i + 1} needs ops = [\"addmm\", ...]", where=origin)
        out.append(SupportedOps(frozenset(ops), _text(e, "source", origin)))
    return out


def _load_dtypes(raw: list[Any], origin: str) -> dict[str, DtypeRule]:
    out = {}
    for e in raw:
        d = _text(e, "dtype", origin)
        out[d] = DtypeRule(dtype=d, severity=_severity(e, origin), reason=_text(e, "reason", origin),
                           fix=_text(e, "fix", origin), recipe=e.get("recipe"), source=_text(e, "source", origin))
    return out


@cache
def load_table(family: str | None, chip: str | None = None) -> SupportTable:
    """The support table for ``family`` (and ``chip``): common.toml, then the family's, then the chip's.
    ``family=None``: the rules every graph compiler shares (common.toml alone), for checks without a target."""
    rules: dict[str, Rule] = {}
    ops: list[OpRule] = []
    dtypes: dict[str, DtypeRule] = {}
    supported: list[SupportedOps] = []
    unlisted: OpRule | None = None
    files = []
    sdk = ""
    for stem in ("common", family, chip):
        if stem is None:
            continue
        path = TABLES_DIR / f"{stem}.toml"
        if not path.exists():
            if stem == family:
                raise SpecError(f"no op-support table for family {family!r} ({path.name})", where=str(path))
            continue
        raw = _read(path)
        files.append(path.name)
        sdk = raw.get("sdk", sdk)
        _merge_rules(rules, raw.get("rules", {}), path.name)
        ops = _load_ops(raw.get("ops", []), path.name) + ops  # the more specific file is matched first
        dtypes.update(_load_dtypes(raw.get("dtypes", []), path.name))
        supported += _load_supported(raw.get("supported", []), path.name)
        if "unlisted" in raw:
            unlisted = _load_ops([{**raw["unlisted"], "ops": ["*"]}], path.name)[0]
    missing = [n for n in RULE_NAMES if n not in rules]
    if missing:
        raise SpecError(f"common.toml lacks rule(s) {', '.join(missing)}")
    rules = {n: replace(r, severity=_capped(r.severity, r.source)) for n, r in rules.items()}
    ops = [replace(o, severity=_capped(o.severity, o.source)) for o in ops]
    dtypes = {n: replace(d, severity=_capped(d.severity, d.source)) for n, d in dtypes.items()}
    if unlisted is not None:
        unlisted = replace(unlisted, severity=_capped(unlisted.severity, unlisted.source))
    return SupportTable(family=family or "any", sdk=str(sdk), files=tuple(files), rules=rules, ops=tuple(ops),
                        dtypes=dtypes, supported=tuple(supported), unlisted=unlisted)


def table_for(spec: Any) -> SupportTable:
    """The support table for an :class:`~accelkit.hardware.AcceleratorSpec`."""
    return load_table(spec.family, spec.name.lower())


__all__ = ["EVIDENCE", "RULE_NAMES", "SEVERITIES", "DtypeRule", "OpRule", "Rule", "SupportTable", "SupportedOps",
           "evidence", "load_table", "table_for"]
