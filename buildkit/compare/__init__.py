"""A wheel compared with what lies outside it, beside the gate (:mod:`buildkit.gate` judges facts;
this package fetches and reads what it is judged against):

* :mod:`~buildkit.compare.diff` two wheels compared, and the last release found on an index;
* :mod:`~buildkit.compare.baseline` the no-regression rule (:mod:`buildkit.gate.rules.regression`)
  run against the last release on an index;
* :mod:`~buildkit.compare.torch_exports` what a torch exports (a wheel, a folder, an image's),
  cached per sha256 under the cache home, for the ``torch-abi`` rule.

Nothing is imported here.
"""
