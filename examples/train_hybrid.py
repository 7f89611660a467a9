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
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gdn_torch  # noqa: E402


class PackedAttention(torch.nn.Module):
    """Causal softmax attention within each packed sequence (a block-diagonal
    causal mask from the sequence ids)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x, seq_ids):
        tokens, hidden = x.shape
        q, k, v = self.qkv(x).view(tokens, 3, self.heads, hidden // self.heads).unbind(1)
        position = torch.arange(tokens, device=x.device)
        mask = (seq_ids[:, None] == seq_ids[None, :]) & (position[None, :] <= position[:, None])
        o = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                           attn_mask=mask)
        return self.out(o.transpose(0, 1).reshape(tokens, hidden))


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
    def __init__(self, vocab, hidden, key_heads, value_heads, device):
        super().__init__()
        spec = gdn_torch.LayerSpec("qwen3_next", hidden, key_heads, value_heads)
        gdn = lambda: gdn_torch.GatedDeltaNet(spec, device=device, dtype=torch.float32)  # noqa: E731
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.blocks = torch.nn.ModuleList([Block(gdn(), hidden),
                                           Block(PackedAttention(hidden, 4), hidden),
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
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    device = torch.device(args.device)
    print(f"compiling the GDN layer (hidden {args.hidden}, {args.key_heads} key and "
          f"{args.value_heads} value heads) or taking it from the cache ...", flush=True)
    model = HybridModel(args.vocab, args.hidden, args.key_heads, args.value_heads, device).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, args.lr, total_steps=args.steps,
                                                   pct_start=0.1)
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters, "
          f"2 GDN layers (compiled) + 1 attention layer; {args.steps} steps of "
          f"{args.tokens} packed tokens on {device}", flush=True)

    first, recent, started = None, [], time.time()
    for step in range(1, args.steps + 1):
        ids, targets, cu, seq_ids = batch(args.tokens, args.vocab, generator)
        logits = model(ids.to(device), cu, seq_ids.to(device))
        loss = F.cross_entropy(logits.float(), targets.to(device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        value = loss.item()  # one synchronisation per step, for the log
        first = value if first is None else first
        recent = (recent + [value])[-10:]
        if step % max(1, args.steps // 20) == 0 or step == args.steps:
            done = step / args.steps
            rate = step * args.tokens / (time.time() - started)
            bar = "#" * int(30 * done) + "." * (30 - int(30 * done))
            print(f"[{bar}] step {step:4d}/{args.steps}  loss {sum(recent) / len(recent):.3f}  "
                  f"{rate:,.0f} tokens/s", flush=True)
    final = sum(recent) / len(recent)
    print(f"loss {first:.3f} -> {final:.3f} (ln {args.vocab} = {math.log(args.vocab):.3f}): "
          f"{'falling' if final < 0.5 * first else 'NOT falling'}")
    return 0 if final < 0.5 * first else 1


if __name__ == "__main__":
    sys.exit(main())
