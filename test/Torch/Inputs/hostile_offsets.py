"""gdn_torch's cu_seqlens checks with torch: the cases a new user hit
(2 sequences of 100 and 28 tokens) through chunk_gated_delta_rule and
GatedDeltaNet, each raising before any kernel runs; then the device path
(offsets already on the GPU), whose asynchronous assertion stops a bad run
at the next synchronisation, each case in a process of its own because the
assertion ends the CUDA context. Prints one line per case.

usage: hostile_offsets.py PYTHON_DIR [--device-case NAME]
"""
import subprocess
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import gdn_torch  # noqa: E402
from gdn_torch.packing import prepare_cu_seqlens  # noqa: E402

T = 128
DEVICE_CASES = {
    "valid": [0, 100, 128],
    "valid-int64": [0, 100, 128],
    "decreasing": [0, 100, 50, 128],
    "last-not-T": [0, 100, 120],
    "first-not-0": [3, 100, 128],
}


def layer_case(name):
    """The compiled layer with invalid offsets on the device: no Python-side
    check runs; the library's first kernel stops with a device-side
    assertion after printing the status record."""
    layer = gdn_torch.GatedDeltaNet(gdn_torch.LayerSpec("qwen3_next", hidden=256, key_heads=2,
                                                        value_heads=4), device="cuda")
    x = torch.randn(T, 256, device="cuda", dtype=torch.bfloat16)
    y = layer(x, torch.tensor(DEVICE_CASES[name[len("layer-"):]], dtype=torch.int32, device="cuda"))
    torch.cuda.synchronize()
    print(f"{name}: accepted, finite {bool(y.isfinite().all())}")


def device_case(name):
    if name.startswith("layer-"):
        return layer_case(name)
    dtype = torch.int64 if name.endswith("int64") or name != "valid" else torch.int32
    cu = torch.tensor(DEVICE_CASES[name], dtype=dtype, device="cuda")
    out = prepare_cu_seqlens(cu, T, cu.device)
    torch.cuda.synchronize()
    print(f"{name}: accepted, {out.dtype}, {out.tolist()}")


def run(name, fn):
    try:
        fn()
        print(f"{name}: accepted")
    except (TypeError, ValueError) as error:
        print(f"{name}: {type(error).__name__}: {error}")


def main():
    if len(sys.argv) > 3 and sys.argv[2] == "--device-case":
        device_case(sys.argv[3])
        return
    device = "cuda" if torch.cuda.is_available() else "cpu"
    q = torch.randn(1, T, 2, 128, device=device, dtype=torch.bfloat16)
    v = torch.randn(1, T, 4, 128, device=device, dtype=torch.bfloat16)
    g = -torch.rand(1, T, 4, device=device)
    beta = torch.rand(1, T, 4, device=device)

    def delta_rule(cu):
        return lambda: gdn_torch.chunk_gated_delta_rule(q, q, v, g, beta, cu_seqlens=cu)

    run("float offsets", delta_rule(torch.tensor([0.5, 100.5, 128.5])))
    run("int64 above 2^32", delta_rule(torch.tensor([0, 2**32 + 100, 2**32 + 128])))
    run("decreasing", delta_rule(torch.tensor([0, 100, 50, 128], dtype=torch.int32)))
    run("last not T", delta_rule(torch.tensor([0, 100, 120], dtype=torch.int32)))
    run("first not 0", delta_rule(torch.tensor([3, 100, 128], dtype=torch.int32)))
    run("2-D offsets", delta_rule(torch.tensor([[0, 100, 128]], dtype=torch.int32)))
    layer = gdn_torch.GatedDeltaNet(gdn_torch.LayerSpec("qwen3_next", hidden=256, key_heads=2,
                                                        value_heads=4), device=device)
    x = torch.randn(T, 256, device=device, dtype=torch.bfloat16)
    run("layer, float offsets", lambda: layer(x, torch.tensor([0.0, 100.0, 128.0])))
    run("layer, last not T", lambda: layer(x, torch.tensor([0, 100, 127])))
    # validate=False: the values are not read (the hot loop's opt-out).
    out = prepare_cu_seqlens(torch.tensor([0, 100, 50, 128]), T, device, validate=False)
    print(f"unchecked: {out.dtype}, {out.tolist()}")
    if device != "cuda":
        return
    for name in [*DEVICE_CASES, "layer-valid", "layer-decreasing", "layer-last-not-T"]:
        proc = subprocess.run([sys.executable, __file__, sys.argv[1], "--device-case", name],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            print(proc.stdout.strip())
        else:
            asserted = "device-side assert" in proc.stderr or "Assertion" in proc.stderr
            # Device printf goes to stdout.
            record = [line for line in (proc.stdout + proc.stderr).splitlines()
                      if line.startswith("gdn: invalid")]
            # Without an assertion, the subprocess's own last words say why.
            why = [] if asserted else proc.stderr.strip().splitlines()[-1:]
            print(f"{name}: stopped at the next synchronisation"
                  f"{' (device-side assertion)' if asserted else ''}, exit {proc.returncode}"
                  + (f"; {record[0]}" if record else "") + "".join(f"; {w}" for w in why))


if __name__ == "__main__":
    main()
