"""``libpvti`` (PopVision Trace Instrumentation) and the trace half of ``pva``, for Graphcore's PopVision tutorials.

Graphcore's Poplar SDK ships ``libpvti``, with which a script marks its own phases (``with
pvti.Tracepoint(channel, "Epoch:3"):``), instant events and numeric series (a loss per batch, a heatmap of weight
magnitudes); with ``PVTI_OPTIONS='{"enable":"true", "directory": "reports"}'`` in the environment the run writes a
``.pvti`` trace that the PopVision System Analyser opens, and the ``pva`` module reads back
(``pva.openTrace(path).processes[0].threads[0].events``). The tutorials ``popvision/system_analyser_instrumentation``
and ``popvision/reading_pvti_files`` teach exactly that.

Here the same calls record the same things, timed on this host's clock (MEASURED: the script's own phases, host
work included; the IPU's share of a call is the modelled one in the run's report). The trace is written as it
happens to ``<directory>/<date>_<pid>.pvti`` in accelkit's own format (JSON lines, one record each), which
:func:`openTrace` reads; the PopVision System Analyser does not open it, and ``openTrace`` refuses a trace the Poplar
SDK wrote. Without ``PVTI_OPTIONS`` enabled nothing is written, as with libpvti.
"""

from __future__ import annotations

import bisect
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from accelkit.errors import AccelkitError
from accelkit.runtime import facade_log

FORMAT = "accelkit-pvti"
VERSION = 1


class PvtiError(AccelkitError):
    """A trace this module cannot read or write."""


class _Writer:
    """The run's trace file: opened at the first record when ``PVTI_OPTIONS`` enables tracing."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.path: Path | None = None
        self.checked = False
        self.t0 = time.perf_counter_ns()
        self.next_id = 0

    def reset(self) -> None:
        with self.lock:
            self.path, self.checked, self.t0, self.next_id = None, False, time.perf_counter_ns(), 0

    def _open(self) -> Path | None:
        if self.checked:
            return self.path
        self.checked = True
        raw = os.environ.get("PVTI_OPTIONS", "")
        try:
            opts = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            raise PvtiError(f"PVTI_OPTIONS is not JSON: {raw!r}",
                            fix='e.g. PVTI_OPTIONS=\'{"enable":"true", "directory": "reports"}\'') from None
        if str(opts.get("enable", "false")).lower() != "true":
            return None
        folder = Path(str(opts.get("directory", ".")))
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%a_%b_%d_%H:%M:%S_%Y_GMT", time.gmtime())
        self.path = folder / f"{stamp}_{os.getpid()}.pvti"
        self.path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "pid": os.getpid(),
                                         "clock": "host, MEASURED (perf_counter, microseconds from the first record)"})
                             + "\n")
        print(f"accelkit: PVTI trace -> {self.path} (accelkit's JSON-lines format: pva.openTrace reads it; the "
              "times are this host's, MEASURED; the IPU's share of each call is the modelled one in the run's report)")
        return self.path

    def now_us(self) -> float:
        return (time.perf_counter_ns() - self.t0) / 1000.0

    def write(self, record: dict[str, Any]) -> None:
        with self.lock:
            path = self._open()
            if path is None:
                return
            with path.open("a") as f:
                f.write(json.dumps(record) + "\n")

    def new_id(self) -> int:
        with self.lock:
            self.next_id += 1
            return self.next_id


_writer = _Writer()
facade_log.reset_with_each_run(_writer.reset)
_stacks: dict[int, list[int]] = {}  # per thread: the ids of the open tracepoints


@dataclass(frozen=True)
class TraceChannel:
    """``pvti.createTraceChannel(name)``'s channel: a named lane of events."""

    name: str


def createTraceChannel(name: str) -> TraceChannel:  # noqa: N802 - libpvti's name
    return TraceChannel(str(name))


class Tracepoint:
    """``with pvti.Tracepoint(channel, label):`` times the block as one event (nested blocks are its children);
    ``Tracepoint.event(channel, label)`` records an instant; ``Tracepoint.begin/end`` open and close one by hand."""

    def __init__(self, channel: TraceChannel, label: str) -> None:
        if not isinstance(channel, TraceChannel):
            raise PvtiError(f"Tracepoint needs a channel from pvti.createTraceChannel, not {type(channel).__name__}",
                            fix='channel = pvti.createTraceChannel("My Application")')
        self.channel, self.label = channel, str(label)
        self._id = 0
        self._start = 0.0

    def __enter__(self) -> Tracepoint:
        stack = _stacks.setdefault(threading.get_ident(), [])
        self._parent = stack[-1] if stack else 0
        self._id = _writer.new_id()
        stack.append(self._id)
        self._start = _writer.now_us()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        stack = _stacks.get(threading.get_ident(), [])
        if stack and stack[-1] == self._id:
            stack.pop()
        end = _writer.now_us()
        _writer.write({"kind": "event", "id": self._id, "parent": self._parent, "channel": self.channel.name,
                       "label": self.label, "pid": os.getpid(), "tid": threading.get_ident(),
                       "start": self._start, "duration": end - self._start})

    _open: dict[tuple[str, str], Tracepoint] = {}

    @staticmethod
    def event(channel: TraceChannel, label: str) -> None:
        """An instant event (no duration)."""
        point = Tracepoint(channel, label)
        stack = _stacks.get(threading.get_ident(), [])
        _writer.write({"kind": "event", "id": _writer.new_id(), "parent": stack[-1] if stack else 0,
                       "channel": point.channel.name, "label": point.label, "pid": os.getpid(),
                       "tid": threading.get_ident(), "start": _writer.now_us(), "duration": 0.0})

    @staticmethod
    def begin(channel: TraceChannel, label: str) -> None:
        point = Tracepoint(channel, label)
        Tracepoint._open[(channel.name, str(label))] = point.__enter__()

    @staticmethod
    def end(channel: TraceChannel, label: str) -> None:
        point = Tracepoint._open.pop((channel.name, str(label)), None)
        if point is None:
            raise PvtiError(f"Tracepoint.end({channel.name!r}, {label!r}) without its begin",
                            fix="call Tracepoint.begin with the same channel and label first")
        point.__exit__(None, None, None)


class Series:
    """A graph's series: ``series.add(value)`` records a value at this moment."""

    def __init__(self, graph: Graph, name: str) -> None:
        self.graph, self.name = graph, str(name)

    def add(self, value: float) -> None:
        _writer.write({"kind": "series", "graph": self.graph.name, "unit": self.graph.unit, "series": self.name,
                       "time": _writer.now_us(), "value": float(value)})


class Graph:
    """``pvti.Graph(name, unit)``: a plot of one or more series over the run."""

    def __init__(self, name: str, unit: str = "", is_absolute: bool = True) -> None:
        self.name, self.unit = str(name), str(unit)

    def addSeries(self, name: str) -> Series:  # noqa: N802 - libpvti's name
        return Series(self, name)


@dataclass
class _Heatmap:
    name: str
    buckets: Sequence[float]
    unit: str = ""
    _sorted: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sorted = sorted(float(b) for b in self.buckets)
        if not self._sorted:
            raise PvtiError(f"heatmap {self.name!r} has no buckets", fix="give its bucket edges, e.g. [-16, ..., 16]")

    def add(self, values: Sequence[float]) -> None:
        """Counts of ``values`` per bucket (``len(buckets) + 1`` counts: below the first edge, between edges, above
        the last), as one column of the heatmap."""
        counts = [0] * (len(self._sorted) + 1)
        for v in values:
            counts[bisect.bisect_right(self._sorted, float(v))] += 1
        _writer.write({"kind": "heatmap", "heatmap": self.name, "unit": self.unit, "time": _writer.now_us(),
                       "buckets": self._sorted, "counts": counts})


class HeatmapDouble(_Heatmap):
    """``pvti.HeatmapDouble(name, buckets, unit)``."""


class HeatmapInt64(_Heatmap):
    """``pvti.HeatmapInt64(name, buckets, unit)``."""


# ---------------------------------------------------------------------------------------------------------------
# pva's trace reader


@dataclass
class Event:
    """One event of a trace: ``label``, ``channel``, ``start`` and ``duration`` (whole microseconds, as pva gives
    them), its ``children()``."""

    label: str
    channel: str
    start: int
    duration: int
    _children: list[Event] = field(default_factory=list, repr=False)

    def children(self) -> list[Event]:
        return list(self._children)


@dataclass
class Thread:
    tid: int
    events: list[Event]


@dataclass
class Process:
    pid: int
    threads: list[Thread]


@dataclass
class Trace:
    """What ``pva.openTrace(path)`` returns: ``processes``, each with ``threads``, each with its top-level ``events``
    in time order; and the numeric ``series`` and ``heatmaps`` the run recorded."""

    path: str
    processes: list[Process]
    series: dict[tuple[str, str], list[tuple[float, float]]]
    heatmaps: dict[str, list[tuple[float, list[int]]]]


def _records(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with path.open("rb") as f:
            head = f.readline()
            try:
                header = json.loads(head)
            except (json.JSONDecodeError, UnicodeDecodeError):
                header = None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise PvtiError(f"{path} is not a trace written by accelkit's libpvti (a PopVision trace from the "
                                "Poplar SDK opens in the PopVision System Analyser, not here)",
                                fix="give a .pvti file a run under accelkit wrote (PVTI_OPTIONS enabled)")
            if header.get("version") != VERSION:
                raise PvtiError(f"{path}: trace format version {header.get('version')!r}, this reader knows "
                                f"{VERSION}", fix="write the trace again with this accelkit")
            for n, line in enumerate(f, start=2):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        raise PvtiError(f"{path}, line {n}: not a JSON record (the run may have stopped while "
                                        "writing it)", fix="trim the last line, or run the script again") from None
    except OSError as exc:
        raise PvtiError(f"cannot read the trace {path}: {exc.strerror}", fix="check the path") from None


def openTrace(path: str | os.PathLike[str]) -> Trace:  # noqa: N802 - pva's name
    """``pva.openTrace(path)``: the trace a run under accelkit wrote (see the module docstring)."""
    p = Path(path)
    events: dict[int, tuple[int, int, int, Event]] = {}  # id -> (pid, tid, parent, event)
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    heatmaps: dict[str, list[tuple[float, list[int]]]] = {}
    for r in _records(p):
        kind = r.get("kind")
        if kind == "event":
            events[int(r["id"])] = (int(r["pid"]), int(r["tid"]), int(r.get("parent", 0)),
                                    Event(str(r["label"]), str(r["channel"]), round(float(r["start"])),
                                          round(float(r["duration"]))))
        elif kind == "series":
            series.setdefault((str(r["graph"]), str(r["series"])), []).append((float(r["time"]), float(r["value"])))
        elif kind == "heatmap":
            heatmaps.setdefault(str(r["heatmap"]), []).append((float(r["time"]), [int(c) for c in r["counts"]]))
    roots: dict[tuple[int, int], list[Event]] = {}
    for pid, tid, parent, event in events.values():
        if parent and parent in events:
            events[parent][3]._children.append(event)
        else:
            roots.setdefault((pid, tid), []).append(event)
    for _, _, _, event in events.values():
        event._children.sort(key=lambda e: e.start)
    processes: dict[int, list[Thread]] = {}
    for (pid, tid), evs in sorted(roots.items()):
        processes.setdefault(pid, []).append(Thread(tid, sorted(evs, key=lambda e: e.start)))
    return Trace(str(p), [Process(pid, threads) for pid, threads in processes.items()], series, heatmaps)


def openReport(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - pva's name
    """``pva.openReport(profile.pop)``: a Poplar graph and execution profile, which only the Poplar compiler
    writes; refused, naming what accelkit has instead."""
    raise PvtiError("pva.openReport reads a Poplar profile (profile.pop), which the Poplar compiler writes; accelkit "
                    "compiles no Poplar graph", fix="read accelkit's own compile and run reports instead "
                    "(accelkit.compile(...).report(), a Session's report and timeline); pva.openTrace reads traces")


__all__ = ["Event", "Graph", "HeatmapDouble", "HeatmapInt64", "Process", "PvtiError", "Series", "Thread", "Trace",
           "TraceChannel", "Tracepoint", "createTraceChannel", "openReport", "openTrace"]
