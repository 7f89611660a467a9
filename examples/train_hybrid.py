#!/usr/bin/env python3
#===- train_hybrid.py - a small hybrid model trained on packed sequences ---===#
#
# What a training stack does with gdn_torch, in one file: a small hybrid
# language model (Qwen3-Next's pattern, Gated DeltaNet layers with one
# softmax-attention layer between them) trained on packed sequences, THD
# layout: every batch is one buffer of tokens with its cu_seqlens, no
# padding, sequences of mixed lengths including empty ones and single tokens.
#
# The data is synthetic and learnable in context: each sequence counts from
# a random start with a random stride (mod the vocabulary), so the next token
# follows from the previous two, which the model must learn to read within
# its own sequence only. The loss falls from ln(vocab) towards 0; a layer that
# leaked tokens across sequences would see wrong strides at every boundary.
#
#   python3 examples/train_hybrid.py                      # GPU, 300 steps
#   python3 examples/train_hybrid.py --device cpu --steps 40 --tokens 128
#   python3 examples/train_hybrid.py --cp 2 --threads      # CP 2 on one GPU
#   torchrun --nproc-per-node 4 examples/train_hybrid.py --sp 2 --cp 2
#
# Distributed (--sp, --cp), every rank holds its contiguous block of each
# batch's rows (T / (sp x cp), grid rank = cp_rank x sp + sp_rank, SP
# innermost as Megatron orders them) and the whole cu_seqlens. The GDN
# layers run their compiled SP x CP program (gdn_torch.distributed) and
# return weight gradients already reduced over the grid; the rest of the
# model is per token but for attention, which gathers the keys and values
# of every rank's rows; its weights' gradients are summed over the ranks
# here. Under torchrun the ranks are processes with NCCL, one GPU each;
# with --threads they are threads of this process on one GPU (gdnrt's
# threads backend: for checking a distributed run against P = 1 without
# several GPUs). The loss is the same function as at P = 1: each rank sums
# its rows' cross entropies over the batch's token count.
#
# On the CPU the GDN layers run in gdn-run, the float64 reference
# interpreter: slow, for checking without a GPU. gdn_torch is found on
# PYTHONPATH (the source tree's python/) or installed with pip; the compiler
# as docs/torch.md says.
#
#===------------------------------------------------------------------------===#

import argparse
import math
import os
import sys
import threading
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gdn_torch  # noqa: E402


# ----------------------------------------------------------------------------
# The collectives the model's non-GDN parts need when its rows are sharded
# ----------------------------------------------------------------------------


class SingleRank:
    rank, size = 0, 1

    def all_gather(self, x):
        return x

    def reduce_scatter(self, x):
        return x

    def all_reduce_(self, x):
        return x


class ProcessRanks:
    """The ranks as torch.distributed processes (torchrun), NCCL."""

    def __init__(self):
        import torch.distributed as dist
        self.dist, self.rank, self.size = dist, dist.get_rank(), dist.get_world_size()

    def all_gather(self, x):
        out = x.new_empty((self.size * x.shape[0], *x.shape[1:]))
        self.dist.all_gather_into_tensor(out, x.contiguous())
        return out

    def reduce_scatter(self, x):
        out = x.new_empty((x.shape[0] // self.size, *x.shape[1:]))
        self.dist.reduce_scatter_tensor(out, x.contiguous())
        return out

    def all_reduce_(self, x):
        self.dist.all_reduce(x)
        return x


class ThreadWorld:
    """What the thread ranks of one process share: a barrier and a slot each."""

    def __init__(self, size):
        self.size, self.slots = size, [None] * size
        self.barrier = threading.Barrier(size, timeout=300)  # a failed rank breaks it: no hang


class ThreadRanks:
    """The ranks as threads of one process on one GPU, each on a stream of
    its own: a collective hands every rank a copy of the others' tensors,
    ordered after their producers by events, kept alive for the reading
    stream by record_stream."""

    def __init__(self, world, rank):
        self.world, self.rank, self.size = world, rank, world.size

    def _exchange(self, x):
        world, stream = self.world, torch.cuda.current_stream()
        mine = x.detach().clone()  # never written again: a peer may still be reading it
        done = torch.cuda.Event()
        done.record(stream)
        world.slots[self.rank] = (mine, done)
        world.barrier.wait()
        got = list(world.slots)
        world.barrier.wait()  # every rank has its references before a slot is reused
        for tensor, event in got:
            stream.wait_event(event)
            tensor.record_stream(stream)
        return [tensor for tensor, _ in got]

    def all_gather(self, x):
        return torch.cat(self._exchange(x))

    def reduce_scatter(self, x):
        rows = x.shape[0] // self.size
        return sum(t[self.rank * rows:(self.rank + 1) * rows] for t in self._exchange(x))

    def all_reduce_(self, x):
        return x.copy_(sum(self._exchange(x)))


class GatherRows(torch.autograd.Function):
    """Every rank's rows, in rank order; the gradient is summed back to
    each rank's own rows."""

    @staticmethod
    def forward(ctx, x, ranks):
        ctx.ranks = ranks
        return ranks.all_gather(x)

    @staticmethod
    def backward(ctx, grad):
        return ctx.ranks.reduce_scatter(grad), None


# ----------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------


class PackedAttention(torch.nn.Module):
    """Causal softmax attention within each packed sequence (a block-diagonal
    causal mask from the sequence ids). Sharded, each rank computes the
    queries of its rows against the keys and values of all rows."""

    def __init__(self, hidden, heads, ranks):
        super().__init__()
        self.heads, self.ranks = heads, ranks
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x, seq_ids):
        rows, hidden = x.shape
        everything = GatherRows.apply(x, self.ranks)
        tokens = everything.shape[0]
        q = F.linear(x, self.qkv.weight[:hidden]).view(rows, self.heads, -1)
        k, v = F.linear(everything, self.qkv.weight[hidden:]).view(tokens, 2, self.heads, -1).unbind(1)
        first = self.ranks.rank * rows
        position = torch.arange(tokens, device=x.device)
        mask = ((seq_ids[first:first + rows, None] == seq_ids[None, :])
                & (position[None, :] <= position[first:first + rows, None]))
        o = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                           attn_mask=mask)
        return self.out(o.transpose(0, 1).reshape(rows, hidden))


class Block(torch.nn.Module):
    def __init__(self, mixer, hidden):
        super().__init__()
        self.mixer, self.norm1 = mixer, torch.nn.RMSNorm(hidden)
        self.norm2 = torch.nn.RMSNorm(hidden)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden, bias=False),
                                       torch.nn.SiLU(),
                                       torch.nn.Linear(4 * hidden, hidden, bias=False))

    def forward(self, x, cu_seqlens, seq_ids):
        h = self.norm1(x)
        if isinstance(self.mixer, gdn_torch.GatedDeltaNet):
            # The compiled layer's activations are bf16; the residual stays fp32.
            h = self.mixer(h.to(torch.bfloat16), cu_seqlens).float()
        else:
            h = self.mixer(h, seq_ids)
        x = x + h
        return x + self.mlp(self.norm2(x))


class HybridModel(torch.nn.Module):
    def __init__(self, vocab, hidden, key_heads, value_heads, device, ranks=SingleRank(),
                 gdn_ranks=None, cp_mode="headwise"):
        super().__init__()
        spec = gdn_torch.LayerSpec("qwen3_next", hidden, key_heads, value_heads)
        gdn = lambda: gdn_torch.GatedDeltaNet(spec, device=device, dtype=torch.float32,  # noqa: E731
                                              cp_mode=cp_mode, **(gdn_ranks or {}))
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.blocks = torch.nn.ModuleList([Block(gdn(), hidden),
                                           Block(PackedAttention(hidden, 4, ranks), hidden),
                                           Block(gdn(), hidden)])
        self.norm = torch.nn.RMSNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids, cu_seqlens, seq_ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, cu_seqlens, seq_ids)
        return self.head(self.norm(x))


def batch(tokens, vocab, generator):
    """One packed batch of exactly `tokens` tokens: sequences of random
    lengths (some empty, some of one token), each counting from a random
    start by a random stride. Offsets are built on the CPU, as a data loader
    delivers them (gdn_torch checks them there, without a synchronisation)."""
    lengths, total = [], 0
    while total < tokens:
        kind = int(torch.randint(0, 10, (), generator=generator))
        n = 0 if kind == 0 else 1 if kind == 1 else int(torch.randint(2, 96, (), generator=generator))
        n = min(n, tokens - total)
        lengths.append(n)
        total += n
    ids, targets, seq_ids = [], [], []
    for i, n in enumerate(lengths):
        start = int(torch.randint(0, vocab, (), generator=generator))
        stride = int(torch.randint(1, 8, (), generator=generator))
        seq = (start + stride * torch.arange(n + 1)) % vocab
        ids.append(seq[:-1])
        targets.append(seq[1:])
        seq_ids.append(torch.full((n,), i))
    cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
    return torch.cat(ids), torch.cat(targets), cu, torch.cat(seq_ids)


def reduce_gradients(model, ranks):
    """Sums the gradients of the weights outside the GDN layers over the
    ranks (the GDN layers return theirs already summed), in one buffer."""
    if ranks.size == 1:
        return
    reduced = {id(p) for module in model.modules() if isinstance(module, gdn_torch.GatedDeltaNet)
               for p in module.parameters()}  # the GDN layers' own, submodules included
    grads = [p.grad for p in model.parameters() if id(p) not in reduced and p.grad is not None]
    flat = ranks.all_reduce_(torch.cat([g.reshape(-1) for g in grads]))
    for g, part in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(part.view_as(g))


def train(args, model, batches, ranks, device, log):
    """The training loop of one rank; returns the losses logged."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    # Warm up over a tenth of the steps (at least two: OneCycleLR divides by
    # the warm-up's length less one).
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, args.lr, total_steps=args.steps,
                                                   pct_start=min(0.5, max(0.1, 2.5 / args.steps)))
    rows = args.tokens // ranks.size
    first_row = ranks.rank * rows
    losses, recent, started = [], [], time.time()
    for step, (ids, targets, cu, seq_ids) in enumerate(batches, 1):
        mine = slice(first_row, first_row + rows)
        logits = model(ids[mine].to(device), cu, seq_ids.to(device))
        # This rank's share of the batch's mean: the ranks' shares sum to it.
        loss = F.cross_entropy(logits.float(), targets[mine].to(device), reduction="sum") / args.tokens
        if ranks.size > 1 and isinstance(ranks, ThreadRanks):
            # Thread ranks run their own backward: autograd's one CUDA worker
            # thread would run the ranks' backwards one after the other,
            # each waiting in a collective for the next (docs/torch.md).
            with torch.autograd.set_multithreading_enabled(False):
                loss.backward()
        else:
            loss.backward()
        reduce_gradients(model, ranks)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        value = ranks.all_reduce_(loss.detach().clone()).item()  # one synchronisation per step
        losses.append(value)
        recent = (recent + [value])[-10:]
        if step % max(1, args.steps // 20) == 0 or step == args.steps:
            done = step / args.steps
            rate = step * args.tokens / (time.time() - started)
            bar = "#" * int(30 * done) + "." * (30 - int(30 * done))
            log(f"[{bar}] step {step:4d}/{args.steps}  loss {sum(recent) / len(recent):.3f}  "
                f"{rate:,.0f} tokens/s")
    return losses


def main():
    parser = argparse.ArgumentParser(description="Train a small hybrid GDN model on packed sequences.")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=4096, help="tokens per packed batch")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--key-heads", type=int, default=2)
    parser.add_argument("--value-heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sp", type=int, default=1, help="sequence-parallel ranks")
    parser.add_argument("--cp", type=int, default=1, help="context-parallel ranks")
    parser.add_argument("--cp-mode", default="headwise", choices=["headwise", "chunkwise", "auto"])
    parser.add_argument("--threads", action="store_true",
                        help="run the SP x CP ranks as threads on one GPU (else: under torchrun)")
    parser.add_argument("--losses", default=None, help="write every step's loss there (JSON)")
    args = parser.parse_args()
    size = args.sp * args.cp
    if args.tokens % size:
        parser.error(f"--tokens {args.tokens} must split evenly over sp x cp = {size} ranks")
    processes = size > 1 and not args.threads
    if processes and int(os.environ.get("WORLD_SIZE", "1")) != size:
        parser.error(f"sp x cp = {size} ranks: run under torchrun --nproc-per-node {size}, or "
                     f"give --threads for threads on one GPU")
    if size > 1 and args.device == "cpu":
        parser.error("distributed GDN layers run on CUDA devices")

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    # Every rank sees the same batches; each takes its rows.
    batches = [batch(args.tokens, args.vocab, generator) for _ in range(args.steps)]
    ranks, device = SingleRank(), torch.device(args.device)
    if processes:
        import torch.distributed as dist
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
        ranks = ProcessRanks()
    leader = ranks.rank == 0
    say = (lambda line: print(line, flush=True)) if leader else (lambda line: None)
    say(f"compiling the GDN layer (hidden {args.hidden}, {args.key_heads} key and "
        f"{args.value_heads} value heads{f', SP {args.sp} x CP {args.cp} {args.cp_mode}' if size > 1 else ''}) "
        f"or taking it from the cache ...")
    # The same initial weights everywhere: the P = 1 model's.
    reference = HybridModel(args.vocab, args.hidden, args.key_heads, args.value_heads, device).to(device)

    def grid_groups():
        """This process's SP and CP groups (Megatron's grid, SP innermost)."""
        import torch.distributed as dist
        mine = {}
        for kind, groups in (("sp_group", [[c * args.sp + s for s in range(args.sp)] for c in range(args.cp)]),
                             ("cp_group", [[c * args.sp + s for c in range(args.cp)] for s in range(args.sp)])):
            for members in groups:  # every process makes every group, in the same order
                group = dist.new_group(members)
                if ranks.rank in members:
                    mine[kind] = group
        return mine

    def replica(rank_ranks, gdn_ranks):
        model = HybridModel(args.vocab, args.hidden, args.key_heads, args.value_heads, device,
                            rank_ranks, gdn_ranks, args.cp_mode).to(device)
        model.load_state_dict(reference.state_dict())
        return model

    say(f"model: {sum(p.numel() for p in reference.parameters()) / 1e6:.2f} M parameters, "
        f"2 GDN layers (compiled) + 1 attention layer; {args.steps} steps of "
        f"{args.tokens} packed tokens on {device}"
        + (f", {size} ranks ({'threads' if args.threads else 'processes'})" if size > 1 else ""))

    if size == 1 or processes:
        model = replica(ranks, grid_groups() if processes else None)
        losses = train(args, model, batches, ranks, device, say)
    else:
        from gdn_torch.distributed import RankLayout, close_rank
        world, results, errors = ThreadWorld(size), [None] * size, []

        def rank_main(r):
            layout = RankLayout(args.sp, args.cp, r % args.sp, r // args.sp,
                                rendezvous=f"threads:train-hybrid-{args.sp}x{args.cp}")
            try:
                rank_ranks = ThreadRanks(world, r)
                model = replica(rank_ranks, {"ranks": layout})
                torch.cuda.synchronize()  # the weights are in place before the rank's stream reads them
                with torch.cuda.stream(torch.cuda.Stream()):
                    results[r] = train(args, model, batches, rank_ranks, device,
                                       say if r == 0 else (lambda line: None))
                    torch.cuda.current_stream().synchronize()
            except BaseException as error:  # reported with its rank; the barrier lets the others go
                errors.append(f"rank {r}: {type(error).__name__}: {error}")
                world.barrier.abort()
            finally:
                close_rank(layout, device)

        threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            print("training failed:\n  " + "\n  ".join(errors), file=sys.stderr)
            return 1
        losses = results[0]
    if args.losses and leader:
        import json
        with open(args.losses, "w") as f:
            json.dump(losses, f)
    first, final = losses[0], sum(losses[-10:]) / len(losses[-10:])
    say(f"loss {first:.3f} -> {final:.3f} (ln {args.vocab} = {math.log(args.vocab):.3f}): "
        f"{'falling' if final < 0.5 * first else 'NOT falling'}")
    if processes:
        import torch.distributed as dist
        dist.destroy_process_group()
    return 0 if final < 0.5 * first else 1


if __name__ == "__main__":
    sys.exit(main())
