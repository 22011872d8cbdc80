"""A wheel compared with what lies outside it, beside the gate (:mod:`buildkit.gate` judges facts;
this package fetches and reads what it is judged against: another wheel, the last release on an
index, a torch's exports; its modules are mapped in docs/ARCHITECTURE.md).

Nothing is imported here.
"""
