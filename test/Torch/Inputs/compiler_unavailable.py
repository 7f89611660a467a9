"""A machine without the compiler (find_tool finds nothing) asked for a
program no cache holds is told the exact fill-cache entry to compile
elsewhere; the entry reads back as the spec it asked for, and is written to
argv[3] as a one-spec list for fill-cache. No torch needed."""
import json
import sys

sys.path.insert(0, sys.argv[1])
from gdn_torch import compiler  # noqa: E402

spec = compiler.DeltaRuleSpec(1, 1, 64, 64, initial_state=False, final_state=False)
compiler.find_tool = lambda name, env: None
try:
    compiler.compile_spec(spec, cache=sys.argv[2])
    raise SystemExit("compile_spec compiled without a compiler")
except compiler.CompilerUnavailable as error:
    message = str(error)
print(message)
entry = json.loads(message[message.index("{"):message.index("}") + 1])
print("the entry is the spec:", compiler.spec_from_dict(dict(entry)) == spec)
# A layer's entry reads back too (every field of LayerSpec is JSON).
layer = compiler.LayerSpec("qwen3_next", 256, 2, 4, cp_ranks=2, cp_mode="chunkwise")
print("a layer's entry is the layer:",
      compiler.spec_from_dict(json.loads(json.dumps(compiler.spec_to_dict(layer)))) == layer)
with open(sys.argv[3], "w") as out:
    json.dump([entry], out)
