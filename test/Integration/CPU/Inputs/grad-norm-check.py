# grad-norm-check.py PARAMS METRICS TOL: the step's gradient norm (METRICS[0])
# against ||PARAMS|| in fp64 (the gradient of 1/2 sum(w^2) is w); also prints
# what one sequential fp32 sum of the squares gives, for comparison.
import sys

import numpy as np

w = np.load(sys.argv[1])
got = float(np.load(sys.argv[2]).reshape(-1)[0])
tol = float(sys.argv[3])
exact = float(np.sqrt(np.sum(w.astype(np.float64) ** 2)))
sequential = float(np.sqrt(np.cumsum((w * w).astype(np.float32), dtype=np.float32)[-1]))
error = abs(got - exact) / exact
print(f"one sequential fp32 sum: {sequential:.7g}, relative error "
      f"{abs(sequential - exact) / exact:.2g}")
verdict = "<=" if error <= tol else ">"
print(f"gradient norm {got:.7g} vs {exact:.7g}: relative error {error:.2g} "
      f"{verdict} {tol:g}")
sys.exit(0 if error <= tol else 1)
