"""Two training runs' losses (JSON lists from train_hybrid.py --losses).
Runs that compute the same function in different summation orders agree to
rounding at first, then training amplifies the roundings: while the loss
falls steeply a step earlier or later moves it by several percent. So two
bounds: the first 5 steps within a relative bound (an error in the
distributed computation, a missing or doubled gradient, shows there at
once; measured 5e-5 on an H100), and the mean of the last 10 steps within
another (the runs end in the same place)."""
import json
import sys

a, b = (json.load(open(path)) for path in sys.argv[1:3])
early_bound, final_bound = float(sys.argv[3]), float(sys.argv[4])
if len(a) != len(b) or len(a) < 10:
    print(f"FAILED: {len(a)} and {len(b)} steps")
    sys.exit(1)
early = max(abs(x - y) / abs(x) for x, y in zip(a[:5], b[:5]))
final_a, final_b = sum(a[-10:]) / 10, sum(b[-10:]) / 10
final = abs(final_a - final_b) / abs(final_a)
ok = early <= early_bound and final <= final_bound
print(f"{len(a)} steps: first 5 within {early:.2e} relative (bound {early_bound:g}); last 10 "
      f"{final_a:.4f} vs {final_b:.4f}, {final:.1e} apart (bound {final_bound:g}): "
      f"{'the same' if ok else 'DIFFERENT'}")
print("first steps:", " ".join(f"{x:.5f}/{y:.5f}" for x, y in zip(a[:5], b[:5])))
