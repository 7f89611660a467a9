"""gdn_torch.packing.check_offsets_on_host on the offsets issue reports
found accepted: prints one line per case. Loads packing.py by path, so no
torch is needed."""
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("packing", sys.argv[1] + "/packing.py")
packing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(packing)

cases = [
    ("valid", [0, 100, 128], 128),
    ("zero-length sequences", [0, 0, 100, 100, 128], 128),
    ("empty", [], 0),
    ("first not 0", [3, 100, 128], 128),
    ("decreasing", [0, 100, 50, 128], 128),
    ("last not T", [0, 100, 120], 128),
    ("beyond int32", [0, 2**32, 2**32 + 28], 2**32 + 28),
]
for name, values, tokens in cases:
    print(f"{name}: {packing.check_offsets_on_host(values, tokens) or 'ok'}")
