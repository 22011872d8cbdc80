"""Judging a wheel file (:func:`judge_wheel`), the layer between the gate, which judges facts and
opens no wheel, and its users (``build``, ``check``, ``publish``, ``split``): the wheel opened once,
inspected and read for what the configuration asks (:mod:`~buildkit.judge.wheel`), then evaluated;
the ROCm SDK's wheels read into the gate's ROCm-from-pip facts (:mod:`~buildkit.judge.rocm_pip`)."""

from __future__ import annotations

from buildkit.judge.wheel import Judgement, judge_wheel, judge_wheels

__all__ = ["Judgement", "judge_wheel", "judge_wheels"]
