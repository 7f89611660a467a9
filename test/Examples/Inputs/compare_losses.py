"""Two training runs' losses (JSON lists from train_hybrid.py --losses),
step by step. Runs that compute the same function in different summation
orders agree to bf16 rounding at first and drift apart as training
amplifies those roundings, so two bounds: the first 10 steps within a
relative bound (an error in the distributed computation, a missing or
doubled gradient, shows there at once), every step within an absolute one
(the curves stay together)."""
import json
import sys

a, b = (json.load(open(path)) for path in sys.argv[1:3])
early_bound, any_bound = float(sys.argv[3]), float(sys.argv[4])
if len(a) != len(b) or len(a) < 10:
    print(f"FAILED: {len(a)} and {len(b)} steps")
    sys.exit(1)
early = max(abs(x - y) / abs(x) for x, y in zip(a[:10], b[:10]))
worst = max(range(len(a)), key=lambda i: abs(a[i] - b[i]))
ok = early <= early_bound and abs(a[worst] - b[worst]) <= any_bound
print(f"{len(a)} steps: first 10 within {early:.2e} relative (bound {early_bound:g}); largest "
      f"difference {abs(a[worst] - b[worst]):.2e} at step {worst + 1} ({a[worst]:.5f} vs "
      f"{b[worst]:.5f}; bound {any_bound:g}); last {a[-1]:.4f} vs {b[-1]:.4f}: "
      f"{'the same' if ok else 'DIFFERENT'}")
print("first steps:", " ".join(f"{x:.5f}/{y:.5f}" for x, y in zip(a[:5], b[:5])))
