#===- distributed.py - the ranks a distributed layer runs on ---------------===#
#
# A layer compiled for SP x CP ranks (LayerSpec sp_ranks, cp_ranks) runs, on
# each rank, the same program with its collectives on the SP and CP groups
# bound to that rank's gdnrt context (docs/parallel.md, docs/runtime.md).
# This module makes that rank (torch.ops.gdn_torch.open_rank) and keeps one
# per grid and device for the process, shared by every layer on it:
#
#   - from torch.distributed process groups: the SP group and the CP group
#     of this process (Megatron's grid: world rank = cp_rank * sp + sp_rank);
#     NCCL's unique id goes from the grid's first rank to the others through
#     the default process group's store (no collective, no GPU work), and
#     gdnrt joins its own NCCL communicator;
#   - from a gdnrt rendezvous: "threads:<name>" puts the ranks in threads of
#     one process on one GPU (gdnrt's threads backend, for tests and for
#     debugging a P-rank program), "tcp:<host>:<port>" or "file:<path>" in
#     processes.
#
# Inputs arrive as the framework shards them: SP and CP take the rank's rows
# of x (T / (sp * cp) of them, the shard layout the spec names) and the
# global cu_seqlens; every rank holds the whole weights, and their gradients
# come back reduced, the same on every rank.
#
#===------------------------------------------------------------------------===#

import dataclasses
import threading

import torch

from .ops import extension


@dataclasses.dataclass(frozen=True)
class RankLayout:
    """Where this rank sits in the SP x CP grid, and how its ranks meet."""
    sp_ranks: int
    cp_ranks: int
    sp_rank: int = 0
    cp_rank: int = 0
    rendezvous: str = ""      # a gdnrt rendezvous; "" to exchange NCCL's id over `store`
    store_key: str = ""       # the key of the id in the default store
    timeout_ms: int = 300000

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
    # Every rank of the grid names it alike: the global ranks of its groups.
    members = sorted(set(dist.get_process_group_ranks(sp_group) if sp_group is not None else [])
                     | set(dist.get_process_group_ranks(cp_group) if cp_group is not None else []))
    grid = members or [dist.get_rank()]
    key = f"gdn_torch/unique_id/{sp}x{cp}/{min(grid)}-{max(grid)}-{len(grid)}"
    return RankLayout(sp, cp, sp_rank, cp_rank, store_key=key, timeout_ms=timeout_ms)


_ranks = {}
_openings = {}
_lock = threading.Lock()


def open_rank(layout, device):
    """The handle of this process's rank for `layout` on `device` (made on
    first use, then shared). Blocks until every rank of the grid has joined,
    or fails after the layout's timeout naming the missing ones."""
    device = torch.device(device)
    key = (layout, device.index if device.index is not None else torch.cuda.current_device(),
           threading.get_ident() if layout.rendezvous.startswith("threads:") else 0)
    with _lock:
        if key in _ranks:
            return _ranks[key]
    ops = extension()
    unique_id = []
    if not layout.rendezvous:
        # Every rank opens the grid's ranks in the same order: the count
        # makes each opening's key its own.
        with _lock:
            _openings[layout.store_key] = _openings.get(layout.store_key, 0) + 1
            opening = _openings[layout.store_key]
        unique_id = _exchange_unique_id(layout, f"{layout.store_key}/{opening}")
    handle = ops.open_rank(key[1], layout.rendezvous, unique_id, layout.rank, layout.size,
                           layout.sp_ranks, layout.timeout_ms)
    with _lock:
        _ranks[key] = handle
    return handle


def close_ranks():
    """Destroys every rank this thread or process opened (their
    communicators, then their contexts)."""
    ops = extension()
    with _lock:
        mine = [k for k in _ranks if k[2] in (0, threading.get_ident())]
        handles = [_ranks.pop(k) for k in mine]
    for handle in handles:
        ops.close_rank(handle)


def _exchange_unique_id(layout, key):
    """NCCL's unique id, made by the grid's first rank and read by the others
    from the default store (a host key-value exchange: no GPU work)."""
    import datetime

    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if layout.rank == 0:
        unique_id = list(extension().unique_id())
        store.set(key, bytes(b & 0xFF for b in unique_id))
        return unique_id
    store.wait([key], datetime.timedelta(milliseconds=layout.timeout_ms))
    return [b if b < 128 else b - 256 for b in store.get(key)]
