#===- distributed.py - the ranks a distributed layer runs on ---------------===#
#
# A layer compiled for SP x CP ranks (LayerSpec sp_ranks, cp_ranks) runs, on
# each rank, the same program with its collectives on the SP and CP groups
# bound to that rank's gdnrt context (docs/parallel.md, docs/runtime.md).
# This module makes that rank (torch.ops.gdn_torch.open_rank) and keeps one
# per grid and device for the process, shared by every layer on it:
#
#   - from torch.distributed process groups: the SP group and the CP group
#     of this process (Megatron's grid: grid rank = cp_rank * sp + sp_rank);
#     NCCL's unique id goes from the grid's first rank to the others by two
#     object broadcasts at set-up (along the first SP rank's CP group, then
#     along each SP group), and gdnrt joins its own NCCL communicator; two
#     object all-gathers (along the SP group, then the CP group) tell every
#     rank where the others' gdnrt progress services answer, so that a
#     collective that times out names the ranks that never entered it;
#   - from a gdnrt rendezvous: "threads:<name>" puts the ranks in threads of
#     one process on one GPU (gdnrt's threads backend, for tests and for
#     debugging a P-rank program), "tcp:<host>:<port>" or "file:<path>" in
#     processes. Threads ranks must run their backward with
#     torch.autograd.set_multithreading_enabled(False): PyTorch's autograd
#     runs every CUDA backward of a device on one worker thread, where one
#     rank's collective would wait for a rank queued behind it.
#
# Inputs arrive as the framework shards them: SP and CP take the rank's rows
# of x (T / (sp * cp) of them, the shard layout the spec names) and the
# global cu_seqlens; every rank holds the whole weights, and their gradients
# come back reduced, the same on every rank.
#
#===------------------------------------------------------------------------===#

import dataclasses
import os
import socket
import threading
import warnings

import torch

from .ops import extension


@dataclasses.dataclass(frozen=True)
class RankLayout:
    """Where this rank sits in the SP x CP grid, and how its ranks meet:
    a gdnrt `rendezvous`, or (empty) NCCL's unique id passed along the
    torch.distributed `sp_group` and `cp_group`."""
    sp_ranks: int
    cp_ranks: int
    sp_rank: int = 0
    cp_rank: int = 0
    rendezvous: str = ""
    timeout_ms: int = 300000
    sp_group: object = dataclasses.field(default=None, compare=False, hash=False)
    cp_group: object = dataclasses.field(default=None, compare=False, hash=False)
    groups: tuple = ()  # the groups' global ranks: what tells one grid from another

    def __post_init__(self):
        if not (0 <= self.sp_rank < self.sp_ranks and 0 <= self.cp_rank < self.cp_ranks):
            raise ValueError(f"rank (sp {self.sp_rank}, cp {self.cp_rank}) is outside the "
                             f"{self.sp_ranks} x {self.cp_ranks} grid")

    @property
    def size(self):
        return self.sp_ranks * self.cp_ranks

    @property
    def rank(self):
        """This rank in the grid, SP innermost (gdnrt_comm_split_grid's order)."""
        return self.cp_rank * self.sp_ranks + self.sp_rank


def layout_from_groups(sp_group=None, cp_group=None, timeout_ms=300000):
    """The RankLayout of this process in torch.distributed's `sp_group` and
    `cp_group` (either may be None: a group of one)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("gdn_torch: sp_group / cp_group need torch.distributed initialised "
                           "(init_process_group)")
    sp = dist.get_world_size(sp_group) if sp_group is not None else 1
    cp = dist.get_world_size(cp_group) if cp_group is not None else 1
    sp_rank = dist.get_rank(sp_group) if sp_group is not None else 0
    cp_rank = dist.get_rank(cp_group) if cp_group is not None else 0
    groups = tuple(tuple(dist.get_process_group_ranks(g)) if g is not None else ()
                   for g in (sp_group, cp_group))
    return RankLayout(sp, cp, sp_rank, cp_rank, timeout_ms=timeout_ms, sp_group=sp_group,
                      cp_group=cp_group, groups=groups)


_ranks = {}
_opening = {}
_lock = threading.Lock()


def _key(layout, device):
    device = torch.device(device)
    return layout, device.index if device.index is not None else torch.cuda.current_device()


def open_rank(layout, device):
    """The handle of this process's rank for `layout` on `device` (made on
    first use, then shared by every layer of the grid). Blocks until every
    rank of the grid has joined, or fails after the layout's timeout naming
    the missing ones."""
    key = _key(layout, device)
    with _lock:
        if key in _ranks:
            return _ranks[key]
        gate = _opening.setdefault(key, threading.Lock())
    with gate:  # one opening per rank, however many threads ask at once
        with _lock:
            if key in _ranks:
                return _ranks[key]
        unique_id, peers = [], []
        if not layout.rendezvous:
            unique_id = _share_unique_id(layout)
            peers = _share_progress_peers(layout)
        handle = extension().open_rank(key[1], layout.rendezvous, unique_id, layout.rank,
                                       layout.size, layout.sp_ranks, layout.timeout_ms,
                                       peers)
        with _lock:
            _ranks[key] = handle
        return handle


def close_rank(layout, device):
    """Destroys the rank of `layout` on `device`, if open (its communicators,
    then its context, once no call holds them)."""
    with _lock:
        handle = _ranks.pop(_key(layout, device), None)
    if handle is not None:
        extension().close_rank(handle)


def close_ranks():
    """Destroys every rank this process opened."""
    with _lock:
        handles = list(_ranks.values())
        _ranks.clear()
    for handle in handles:
        extension().close_rank(handle)


def _share_unique_id(layout):
    """NCCL's unique id, made by the grid's first rank: broadcast along the
    CP group of the SP ranks 0 (which holds it), then along every SP group.
    Set-up only: two small object broadcasts."""
    import torch.distributed as dist

    ops = extension()
    unique_id = list(ops.unique_id()) if layout.rank == 0 else None
    if layout.cp_group is not None and layout.sp_rank == 0:
        box = [unique_id]
        dist.broadcast_object_list(box, src=dist.get_global_rank(layout.cp_group, 0),
                                   group=layout.cp_group)
        unique_id = box[0]
    if layout.sp_group is not None:
        box = [unique_id]
        dist.broadcast_object_list(box, src=dist.get_global_rank(layout.sp_group, 0),
                                   group=layout.sp_group)
        unique_id = box[0]
    return unique_id


def _share_progress_peers(layout):
    """Where every rank of the grid answers questions about its progress:
    "host:port" of its gdnrt progress service, in grid order (SP innermost),
    gathered along this rank's SP group, then its CP group. A rank that
    cannot run a service says port 0; the others then name it as such.
    Set-up only: two small object all-gathers."""
    import torch.distributed as dist

    try:
        port = extension().progress_port()
    except RuntimeError as error:
        warnings.warn(f"gdn_torch: no progress service on this rank ({error}); a "
                      "collective that times out will not name the missing ranks")
        port = 0
    own = f"{_reachable_host()}:{port}"
    row = [own]
    if layout.sp_group is not None:
        row = [None] * layout.sp_ranks
        dist.all_gather_object(row, own, group=layout.sp_group)
    grid = [row]
    if layout.cp_group is not None:
        grid = [None] * layout.cp_ranks
        dist.all_gather_object(grid, row, group=layout.cp_group)
    return [peer for cp_row in grid for peer in cp_row]


def _reachable_host():
    """This host's IPv4 address as the other ranks reach it: the one its
    route to MASTER_ADDR (torchrun's rendezvous host) leaves from, else its
    name's, else the loopback (every rank on this host)."""
    master = os.environ.get("MASTER_ADDR")
    if master:
        try:
            # A datagram socket's connect sends nothing: it only picks the
            # route, and with it this end's address.
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((master, int(os.environ.get("MASTER_PORT", "29500"))))
                return probe.getsockname()[0]
        except (OSError, ValueError):
            pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
