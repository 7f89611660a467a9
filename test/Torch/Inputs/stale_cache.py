"""A cached library is reused only for the spec it was compiled from.

Before f32 projection outputs became the default, the bf16 layer had the
name the default layer has now: its manifest (no f32_projections in its
spec) must not be taken for the default's library. No torch needed.
"""
import dataclasses
import json
import os
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import compiler  # noqa: E402

cache = tempfile.mkdtemp()
os.environ["GDN_TORCH_CACHE"] = cache
spec = compiler.LayerSpec("qwen3_next", 256, 2, 4)


def write_manifest(spec_dict):
    os.makedirs(os.path.join(cache, spec.name), exist_ok=True)
    with open(os.path.join(cache, spec.name, "manifest.json"), "w") as f:
        json.dump({"name": spec.name, "library": "lib.so", "spec": spec_dict,
                   "kind": "LayerSpec", "functions": {}}, f)


older = dataclasses.asdict(spec)
del older["f32_projections"]
write_manifest(older)
print("older manifest:", "reused" if compiler.find_library(spec.name, spec) else "skipped")
write_manifest(dataclasses.asdict(spec))
print("same spec:", "reused" if compiler.find_library(spec.name, spec) else "skipped")
