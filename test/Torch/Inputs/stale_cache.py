"""A cached library is reused only for the spec, architecture and compiler
it was compiled by (python/gdn_torch/compiler.py find_library).

Before f32 projection outputs became the default, the bf16 layer had the
name the default layer has now: its manifest (no f32_projections in its
spec) must not be taken for the default's library. A library another
compiler made is passed over where a compiler is; where none is (a GPU
host using a cache filled elsewhere), the newest one of the spec and
architecture is taken. No torch needed.
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


def write_manifest(spec_dict, arch, identity, when):
    folder = os.path.join(cache, compiler.library_folder(spec, arch, identity))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"name": spec.name, "library": "lib.so", "spec": spec_dict, "arch": arch,
                   "kind": "LayerSpec", "functions": {}, "compiler": identity,
                   "compiled_at": when}, f)


def found(arch="sm_90a", identity="new"):
    entry = compiler.find_library(spec, arch, identity)
    return f"{entry['compiler']} {entry['arch']}" if entry else "none"


older = dataclasses.asdict(spec)
del older["f32_projections"]
write_manifest(older, "sm_90a", "new", 1)
print("older spec, same compiler:", found())
write_manifest(dataclasses.asdict(spec), "sm_90a", "old", 2)
print("same spec, older compiler:", found())
write_manifest(dataclasses.asdict(spec), "portable", "new", 3)
print("same spec, another architecture:", found())
write_manifest(dataclasses.asdict(spec), "sm_90a", "new", 4)
print("same spec, compiler and architecture:", found())
print("no compiler here, sm_90a:", found(identity=None))
print("no compiler here, any architecture:", found(arch=None, identity=None))
