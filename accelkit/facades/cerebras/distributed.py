"""``cerebras.pytorch.distributed``: the appliance's cluster settings and the data streamers' identity.

On a Cerebras appliance, input workers ("streamers") each read a shard of the data; a script asks
``is_streamer()`` / ``get_streaming_rank()`` / ``num_streamers()`` to shard its loader (gigaGPT's data.py).
The simulated run has one process, which reads all the data: it is not a streamer, so a script takes its
single-reader path. :class:`ClusterConfig` holds the appliance's cluster settings (gigaGPT parses it from its
YAML with ``HfArgumentParser``); passed to ``cstorch.backend(..., cluster_config=...)`` it is recorded, since
the simulated run is one system.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ClusterConfig:
    """The appliance's cluster settings (``cerebras.pytorch.distributed.ClusterConfig``); recorded, not simulated."""

    mgmt_address: str | None = None
    mgmt_namespace: str | None = None
    credentials_path: str | None = None
    num_csx: int = 1
    max_wgt_servers: int | None = None
    max_act_per_csx: int | None = None
    num_workers_per_csx: int | None = None
    cbcore_image: str | None = None
    job_labels: list[str] = field(default_factory=list)  # `cszoo fit ... --job_labels name=gptj` (ALCF's commands)
    job_priority: str | None = None
    mount_dirs: list[str] = field(default_factory=list)
    python_paths: list[str] = field(default_factory=list)
    job_time_sec: int | None = None
    disable_version_check: bool = False

    def __hash__(self) -> int:  # the 2.x Model Zoo caches its backend by its arguments (functools.lru_cache)
        return hash(repr(self))


def is_streamer() -> bool:
    """False: the single process of the simulated run reads all the data (no appliance streamers)."""
    return False


def get_streaming_rank() -> int:
    return 0


def num_streamers() -> int:
    return 1


def get_streaming_batch_size(effective_batch_size: int, global_rank: int | None = None) -> int:
    """The batch one streamer reads: the whole effective batch, read by the run's single process (on a cluster of
    several systems, each streamer reads its share)."""
    return int(effective_batch_size)


def num_tasks() -> int:
    """One task: the simulated run is a single process."""
    return 1


def get_ordinal() -> int:
    """This process's ordinal among the run's tasks: 0, the only one."""
    return 0


def is_master_ordinal() -> bool:
    """True: the single process of the simulated run is the one that downloads and writes (the 2.0 Model Zoo's
    loaders download only there)."""
    return True


@dataclass
class TaskSpec:
    """``cerebras.pytorch.distributed.cluster_resolver.TaskSpec``: one input worker of the cluster (the Model Zoo's
    loaders shard by it); the simulated run is the one task."""

    rank: int
    local_rank: int
    wse_id: int
    node_name: str
    roles: list[str] | None = None

    def __post_init__(self) -> None:
        if min(self.rank, self.local_rank, self.wse_id) < 0 or not self.node_name:
            raise ValueError(f"invalid task {self}: ranks and wse_id must be >= 0, node_name not empty")


@dataclass
class ClusterSpec:
    """``cerebras.pytorch.distributed.cluster_resolver.ClusterSpec``: the tasks of the cluster and this one's rank."""

    tasks: list[TaskSpec]
    rank: int
    num_csx: int
    num_workers_per_csx: int

    def __post_init__(self) -> None:
        if not self.tasks or not 0 <= self.rank < len(self.tasks):
            raise ValueError(f"invalid cluster: {len(self.tasks)} task(s), rank {self.rank}")

    def task(self, rank: int | None = None) -> TaskSpec:
        return self.tasks[self.rank if rank is None else rank]

    def num_tasks(self) -> int:
        """How many tasks the cluster has (the Model Zoo's HDF5 iterable datasets shard their files by it)."""
        return len(self.tasks)


def get_rank() -> int:
    """This process's rank: 0, the only one."""
    return 0


def get_world_size() -> int:
    """One process."""
    return 1


@dataclass
class WorkerState:
    """What ``get_worker_state()`` answers while a loader's state is taken: the samples streamed so far."""

    samples_streamed: int


_worker_states: list[WorkerState] = []


@contextlib.contextmanager
def worker_state(samples_streamed: int) -> Iterator[WorkerState]:
    """While ``cstorch.utils.data.DataLoader.state_dict()`` asks its loader for its state: the input worker's
    state that :func:`get_worker_state` answers (this one process streams every sample)."""
    _worker_states.append(WorkerState(int(samples_streamed)))
    try:
        yield _worker_states[-1]
    finally:
        _worker_states.pop()


def get_worker_state() -> WorkerState | None:
    """``cstorch.distributed.get_worker_state()``: the input worker's state (``samples_streamed``) while
    ``cstorch.utils.data.DataLoader.state_dict()`` takes the loader's state, as a checkpoint does; None at other
    times (the simulated run has no input workers apart from this process)."""
    return _worker_states[-1] if _worker_states else None


# the workers' cache of input data (the Model Zoo's loaders check its limit before copying a dataset there): no
# worker cache in a simulated run
WORKER_CACHE_ROOT = ""


def hit_worker_cache_limit(*args: object, **kwargs: object) -> bool:
    return False


__all__ = ["WORKER_CACHE_ROOT", "ClusterConfig", "ClusterSpec", "TaskSpec", "get_ordinal", "get_rank",
           "WorkerState", "get_streaming_batch_size", "get_streaming_rank", "get_world_size", "get_worker_state",
           "hit_worker_cache_limit", "is_master_ordinal", "is_streamer", "num_streamers", "num_tasks"]
