"""Thin services between the commands (:mod:`buildkit.cli`) and the stages: the sequences of stage
calls a command makes, as library calls (no click, no printing), a module per command (see
docs/ARCHITECTURE.md). A command parses its options and calls one function here (or one function of
its stage, when that is all it needs). Nothing is imported here.
"""
