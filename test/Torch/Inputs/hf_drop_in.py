"""gdn_torch.hf in place of transformers' GDN modules, on the CPU (the
operator's CPU kernel is the interpreter, float64 with the compiled
program's bf16 storage) or, given "cuda", on a GPU (the generated kernels).

For Qwen3-Next's and Qwen3.5's module (hidden 256, 2 key and 4 value heads
of 128, conv 4; random bf16-rounded weights):
  - packed sequences (cu_seq_lens_q; and position_ids alone): against
    transformers' module in float64 run on each sequence alone, and (CPU)
    each sequence's rows equal to the compiled layer on that sequence
    alone, bit for bit (nothing crosses a boundary);
  - a padded batch with an attention mask (left and right padding): every
    real token against the module in float64 on the same batch, and (CPU)
    each row's real tokens equal to them packed alone, bit for bit;
  - with a cache (transformers' DynamicCache), a prefill of a padded batch,
    a second prefill chunk continuing it and three decoded tokens, against
    the module in float64 with its own cache: every output, the cache's
    states and its token count; and the two chunks against one call over
    both;
then a small model whose GDN layers are replaced: same state_dict keys,
the forward runs and a backward reaches every GDN parameter, and greedy
decoding with a cache gives the logits of the unreplaced model.
The float64 comparisons are held to 1e-2: the compiled program's bf16
storage alone puts these 41- and 27-token samples at 4.7-5.3e-3 (a wrong
weight mapping or a leak across sequences is O(1)).
"""
import sys

sys.path.insert(0, sys.argv[1])
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cpu"
import torch  # noqa: E402

import gdn_torch.hf as hf  # noqa: E402

# On a GPU every tensor and module is made there; the bit-for-bit claims
# (the same program on a sequence alone and in a pack) are the
# interpreter's: on a GPU the projections' GEMMs differ with the row count.
torch.set_default_device(DEVICE)
torch.manual_seed(0)
BOUND = 1e-2


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


def config(kind):
    if kind == "qwen3_next":
        from transformers import Qwen3NextConfig as Config
        from transformers.models.qwen3_next.modeling_qwen3_next import \
            Qwen3NextGatedDeltaNet as Module
    else:
        from transformers import Qwen3_5TextConfig as Config
        from transformers.models.qwen3_5.modeling_qwen3_5 import \
            Qwen3_5GatedDeltaNet as Module
    cfg = Config(hidden_size=256, linear_num_key_heads=2, linear_num_value_heads=4,
                 linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
                 num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
                 num_attention_heads=2, num_key_value_heads=1, head_dim=64,
                 intermediate_size=256, vocab_size=64, rms_norm_eps=1e-6)
    return cfg, Module


for kind in ("qwen3_next", "qwen3_5"):
    cfg, Module = config(kind)
    reference = Module(cfg, 0)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            if name == "A_log":
                p.copy_(torch.empty_like(p).uniform_(1, 16).log())
            elif name in ("dt_bias", "norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_((torch.randn_like(p) * 0.05).to(torch.bfloat16).float())
    exact = Module(cfg, 0).double()
    exact.load_state_dict(reference.state_dict())
    ours = hf.TransformersGatedDeltaNet(reference)
    print(f"{kind}: state_dict keys unchanged:", list(ours.state_dict()) == list(reference.state_dict()))

    lengths = [5, 1, 0, 17, 9]
    cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
    x = (torch.randn(1, int(cu[-1]), 256) * 0.5).to(torch.bfloat16)
    y = ours(x, cu_seq_lens_q=cu).detach()
    positions = torch.cat([torch.arange(n) for n in lengths if n]).unsqueeze(0)
    y_positions = ours(x, position_ids=positions).detach()
    alone, separate = [], True
    for i, n in enumerate(lengths):
        if n == 0:
            continue
        start = int(cu[i])
        alone.append(exact(x[:, start:start + n].double()).detach())
        one = ours(x[:, start:start + n], cu_seq_lens_q=torch.tensor([0, n], dtype=torch.int32))
        separate &= torch.equal(one.detach(), y[:, start:start + n])
    error = rel(y, torch.cat(alone, 1))
    print(f"{kind}: packed (cu_seq_lens_q) vs each sequence alone in float64: "
          f"{'within' if error < BOUND else 'OVER'} {BOUND}")
    if DEVICE == "cpu":
        print(f"{kind}: packed == each sequence alone, bit for bit:", separate)
    print(f"{kind}: packed (position_ids) == packed (cu_seq_lens_q):", torch.equal(y_positions, y))

    batch = (torch.randn(3, 12, 256) * 0.5).to(torch.bfloat16)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[0, 9:] = 0   # right padding
    mask[1, :4] = 0   # left padding
    y_batch = ours(batch, attention_mask=mask).detach()
    want = exact(batch.double(), attention_mask=mask).detach()
    keep = mask.bool()
    error = rel(y_batch[keep], want[keep])
    print(f"{kind}: padded batch vs the module in float64, real tokens: "
          f"{'within' if error < BOUND else 'OVER'} {BOUND}")
    rows = all(torch.equal(ours(batch[r:r + 1, keep[r]], cu_seq_lens_q=torch.tensor(
        [0, int(keep[r].sum())], dtype=torch.int32)).detach()[0], y_batch[r, keep[r]])
        for r in range(3))
    if DEVICE == "cpu":
        print(f"{kind}: padded rows' real tokens == the same tokens alone, bit for bit:", rows)

    # Generation: prefill (left padding in row 1), a second prefill chunk,
    # then decoding one token at a time, each model with its own cache.
    from transformers import DynamicCache
    ours_cache, exact_cache = DynamicCache(config=cfg), DynamicCache(config=cfg)
    if not hasattr(ours_cache, "get_conv_state"):
        import transformers
        print(f"{kind}: cache: transformers {transformers.__version__}'s Cache has no "
              f"get_conv_state; the replaced module's own forward runs with a cache")
        continue
    prompt = (torch.randn(2, 9, 256) * 0.5).to(torch.bfloat16)
    chunk = (torch.randn(2, 6, 256) * 0.5).to(torch.bfloat16)
    steps = (torch.randn(2, 3, 256) * 0.5).to(torch.bfloat16)
    prompt_mask = torch.ones(2, 9, dtype=torch.long)
    prompt_mask[1, :3] = 0
    calls = [("prefill", prompt, prompt_mask), ("second chunk", chunk, None)] + \
        [(f"decode {i}", steps[:, i:i + 1], None) for i in range(3)]
    outputs = {}
    with torch.no_grad():
        for name, inputs, mask in calls:
            # In the module's dtype, as a model hands it (decoding runs the
            # module's own forward, whose weights are float32 here).
            got = ours(inputs.float(), cache=ours_cache, attention_mask=mask)
            want = exact(inputs.double(), cache=exact_cache, attention_mask=mask)
            keep = mask.bool() if mask is not None else torch.ones(inputs.shape[:2], dtype=torch.bool)
            outputs[name] = got
            conv = rel(ours_cache.get_conv_state(0)[..., 1:], exact_cache.get_conv_state(0)[..., 1:])
            state = rel(ours_cache.get_recurrent_state(0), exact_cache.get_recurrent_state(0))
            worst = max(rel(got[keep], want[keep]), conv, state)
            print(f"{kind}: cache, {name}: output, conv and recurrent state vs the module in "
                  f"float64: {'within' if worst < BOUND else 'OVER'} {BOUND}; tokens counted "
                  f"{int(ours_cache.get_seq_length())} == {int(exact_cache.get_seq_length())}")
        whole = ours(torch.cat([prompt, chunk], 1)[:1].float()).detach()
        parts = torch.cat([outputs["prefill"][:1], outputs["second chunk"][:1]], 1)
    error = rel(parts, whole)
    print(f"{kind}: cache, prefill + second chunk vs one call over both: "
          f"{'within' if error < BOUND else 'OVER'} {BOUND}")

import copy  # noqa: E402

from transformers import Qwen3NextForCausalLM  # noqa: E402

cfg, _ = config("qwen3_next")
model = Qwen3NextForCausalLM(cfg)
unreplaced = copy.deepcopy(model)
keys = list(model.state_dict())
print("model: replaced", hf.replace_gated_deltanet(model), "GDN layer(s); keys unchanged:",
      list(model.state_dict()) == keys)
ids = torch.randint(0, 64, (1, 20))
out = model(input_ids=ids, labels=ids)
out.loss.backward()
gdn = model.model.layers[0].linear_attn
print("model: loss finite:", bool(torch.isfinite(out.loss)), "; every GDN parameter has a gradient:",
      all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in gdn.parameters()))

# Greedy decoding with a cache: the prompt prefilled by the compiled layer,
# the next tokens decoded by the replaced module's forward on its cache.
model.zero_grad(set_to_none=True)
prompt = torch.randint(0, 64, (2, 11))
mask = torch.ones(2, 11, dtype=torch.long)
mask[1, :4] = 0
worst, tokens = 0.0, prompt
with torch.no_grad():
    ours_out = model(input_ids=prompt, attention_mask=mask, use_cache=True)
    want_out = unreplaced(input_ids=prompt, attention_mask=mask, use_cache=True)
    for step in range(4):
        worst = max(worst, rel(ours_out.logits[:, -1], want_out.logits[:, -1]))
        token = want_out.logits[:, -1].argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, token], 1)
        mask = torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], 1)
        ours_out = model(input_ids=token, attention_mask=mask, use_cache=True,
                         past_key_values=ours_out.past_key_values)
        want_out = unreplaced(input_ids=token, attention_mask=mask, use_cache=True,
                              past_key_values=want_out.past_key_values)
print(f"model: greedy decoding with a cache, logits of 4 steps vs the unreplaced model: "
      f"{'within' if worst < BOUND else 'OVER'} {BOUND}")
generated = model.generate(prompt, attention_mask=mask[:, :11], max_new_tokens=5, do_sample=False)
print(f"model: generate() runs: {tuple(generated.shape)}")
