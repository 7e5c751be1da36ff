"""numpy-only test program (no torch): an array to summarise, then a loop whose values turn NaN at step 2.

Used by the numpy-only agent tests (run under every Python version) and the packaging tests (installed wheel).
"""

import numpy as np

grid = np.arange(12, dtype=np.float64).reshape(3, 4)
total = 0.0
for step, shift in enumerate([0.0, 0.5, 2.0, 0.25]):  # noqa: B007 - the debugger reads step
    with np.errstate(invalid="ignore"):
        roots = np.sqrt(np.array([4.0, 1.0]) - shift)  # sqrt(-1) at step 2 only
    total += float(roots[0])  # @bp
print("done", round(total, 3))
