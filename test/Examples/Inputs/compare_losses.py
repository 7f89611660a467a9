"""Two training runs' losses (JSON lists from train_hybrid.py --losses),
step by step: the largest relative difference, and whether every step is
within the given bound."""
import json
import sys

a, b = (json.load(open(path)) for path in sys.argv[1:3])
bound = float(sys.argv[3])
if len(a) != len(b) or not a:
    print(f"FAILED: {len(a)} and {len(b)} steps")
    sys.exit(1)
worst = max(range(len(a)), key=lambda i: abs(a[i] - b[i]) / abs(a[i]))
diff = abs(a[worst] - b[worst]) / abs(a[worst])
print(f"{len(a)} steps: largest relative difference {diff:.2e} at step {worst + 1} "
      f"({a[worst]:.5f} vs {b[worst]:.5f}); last {a[-1]:.4f} vs {b[-1]:.4f}; "
      f"{'within' if diff <= bound else 'OVER'} {bound:g}")
