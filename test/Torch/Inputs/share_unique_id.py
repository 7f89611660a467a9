"""gdn_torch.distributed hands NCCL's unique id from the grid's first rank
to every other rank of an SP 2 x CP 2 grid made of torch.distributed groups
(4 CPU processes, gloo; Megatron's order, SP innermost): every rank ends
with the same id and its own grid rank, and with the same list of where
every rank's progress service answers, in grid order. No GPU needed (no
communicator is joined)."""
import os
import socket
import sys

sys.path.insert(0, sys.argv[1])
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def main(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    sp_groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    cp_groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    from gdn_torch import distributed
    layout = distributed.layout_from_groups(sp_groups[rank // 2], cp_groups[rank % 2])
    unique_id = distributed._share_unique_id(layout)
    peers = distributed._share_progress_peers(layout)
    own = f"127.0.0.1:{distributed.extension().progress_port()}"
    out[rank] = (layout.rank, layout.sp_rank, layout.cp_rank, tuple(unique_id),
                 tuple(peers), peers[layout.rank] == own)
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(main, args=(4, port, out), nprocs=4)
    ids = {out[r][3] for r in range(4)}
    for r in range(4):
        grid, sp, cp = out[r][:3]
        print(f"process {r}: grid rank {grid} (sp {sp}, cp {cp})")
    print(f"one unique id of {len(out[0][3])} bytes on every rank: {len(ids) == 1}")
    lists = {out[r][4] for r in range(4)}
    ports = {peer.split(":")[1] for peer in out[0][4]}
    print(f"one list of {len(out[0][4])} progress peers on every rank: {len(lists) == 1}, "
          f"{len(ports)} distinct ports, each rank's own at its grid rank: "
          f"{all(out[r][5] for r in range(4))}")
