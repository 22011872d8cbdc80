"""Thin services between the commands (:mod:`buildkit.cli`) and the stages: the sequences of stage
calls a command makes, as library calls (no click, no printing), a module per command (see
docs/ARCHITECTURE.md). Nothing is imported here."""
