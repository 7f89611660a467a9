"""gdn_torch's refusals, each with the message a user sees: bad specs and
spec lists, rank layouts outside their grid, process groups without
torch.distributed, the native half's rank checks, result dimensions it will
not evaluate, transformers modules it cannot replace, and distributed
layers given CPU tensors. On the CPU."""
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import gdn_torch  # noqa: E402
from gdn_torch import compiler, distributed, hf, ops  # noqa: E402


def refused(what, action):
    try:
        action()
    except Exception as error:  # noqa: BLE001 (the message is the point)
        print(f"{what}: {type(error).__name__}: {str(error).splitlines()[0]}")
    else:
        print(f"{what}: ACCEPTED")


refused("cp_mode", lambda: gdn_torch.LayerSpec("qwen3_next", 256, 2, 4, cp_ranks=2, cp_mode="ring"))
refused("sp_ranks", lambda: gdn_torch.LayerSpec("qwen3_next", 256, 2, 4, sp_ranks=0))
refused("spec kind", lambda: compiler.spec_from_dict({"kind": "mamba"}))
refused("rank layout", lambda: distributed.RankLayout(2, 2, sp_rank=2))
refused("groups", lambda: distributed.layout_from_groups(None, None))
refused("dimension", lambda: ops.compile_dim("__import__('os').getpid()"))
refused("dimension attribute", lambda: ops.compile_dim("args[0].data"))
ext = gdn_torch.load_extension()
refused("open_rank rank", lambda: ext.open_rank(0, "threads:errors", [], 3, 2, 1, 1000, []))
refused("open_rank sp", lambda: ext.open_rank(0, "threads:errors", [], 0, 4, 3, 1000, []))
refused("open_rank id", lambda: ext.open_rank(0, "", [], 0, 2, 1, 1000, []))
refused("close_rank", lambda: ext.close_rank(12345))

module = torch.nn.Linear(2, 2)
refused("hf module", lambda: hf.spec_of(module))

spec = gdn_torch.LayerSpec("qwen3_next", 256, 2, 4)
layer = gdn_torch.GatedDeltaNet(spec, device="cpu",
                                ranks=distributed.RankLayout(1, 2, 0, 1, "threads:errors"),
                                cp_mode="chunkwise")
x, cu = torch.zeros(4, 256, dtype=torch.bfloat16), torch.tensor([0, 8], dtype=torch.int32)
refused("distributed layer, CPU tensors", lambda: layer(x, cu))
prog = layer.program
refused("distributed function, interpreter",
        lambda: ops.call(prog.library, prog.plain.name, [x, cu, *layer.weights()], False, 0))

# chunk_gated_delta_rule's keyword options: what FLA refuses, what it
# computes and gdn_torch does not, and a misspelt name (FLA's hints pass).
q = torch.zeros(1, 4, 1, 128, dtype=torch.bfloat16)
v = torch.zeros(1, 4, 2, 128, dtype=torch.bfloat16)
g, beta = torch.zeros(1, 4, 2), torch.zeros(1, 4, 2)
rule = gdn_torch.chunk_gated_delta_rule
refused("head_first", lambda: rule(q, q, v, g, beta, head_first=False))
refused("chunk_size", lambda: rule(q, q, v, g, beta, chunk_size=128))
refused("use_gate_in_kernel", lambda: rule(q, q, v, g, beta, use_gate_in_kernel=True))
refused("A_log", lambda: rule(q, q, v, g, beta, A_log=torch.zeros(2)))
refused("misspelt option", lambda: rule(q, q, v, g, beta, cu_seqlen=torch.tensor([0, 4])))
