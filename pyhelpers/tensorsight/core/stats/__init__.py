"""Budgeted summary statistics of torch tensors and numpy arrays: the figures behind every summary line.

Used by the agent's presentation (Variables view, hover, watch, repl, the tensor viewer), ``core.summary``, the module
and gradient-norm lines, and the toolbox. Pure functions plus one small cache; no I/O. One module per concern, each
imported by name (this package re-exports nothing):

- ``figures``: what a summary is (:class:`~.figures.Stats`), what it may cost (:class:`~.figures.StatsBudget`), and
  the raw sums both kernels accumulate (:class:`~.figures.Totals`).
- ``dispatch``: the entry points that take any value (``compute_stats``, ``zero_count``, ``elements_to_read``,
  ``strided_sample``) and pick the kernel.
- ``torch_layout``: how a tensor's memory is read: plain (no ``__torch_function__``) views, expanded dimensions,
  flat views, strided samples and bounded chunks.
- ``torch_rows``: row-wise Σx and Σ|x|² of flat float data, shared by the two modules below.
- ``torch_kernel``: the reductions of a torch tensor, on any device (``tensor_stats``).
- ``torch_nonfinite``: exact NaN/+Inf/-Inf counts and finite figures of the rows that hold non-finite values.
- ``numpy_kernel``: the same figures for a numpy array (``array_stats``).
- ``cache``: :class:`~.cache.StatsCache`, results kept until a tensor changes.

Exact by default; past ``exact_elements`` the figures come from a deterministic strided sample and are marked inexact;
nothing here draws from an RNG. Nothing here mutates its input, bumps ``_version``, records autograd history, or
lets a tensor subclass's ``__torch_function__`` run.
"""
