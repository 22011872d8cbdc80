"""Tests of an INSTALLED buildkit-refops wheel against pure torch (run them where the wheel is installed,
after torch: `python -m unittest discover -s tests` or pytest). stdlib unittest, so a runtime image
without pytest runs them too."""

from __future__ import annotations

import unittest

import torch

import refops
from refops import selftest


class RmsNormMatchesTorch(unittest.TestCase):
    def test_cases_match_the_pure_torch_reference(self) -> None:
        for seed, (shape, dtype, eps) in enumerate(selftest.CASES):
            with self.subTest(shape=shape, dtype=dtype, eps=eps):
                x, weight = selftest.inputs(shape, dtype, seed)
                got = refops.rms_norm(x, weight, eps)
                self.assertEqual(got.shape, x.shape)
                self.assertEqual(got.dtype, dtype)
                torch.testing.assert_close(got, refops.rms_norm_reference(x, weight, eps))

    def test_against_torch_rms_norm(self) -> None:
        x, weight = selftest.inputs((6, 96), torch.float32, 7)
        expected = torch.nn.functional.rms_norm(x, (96,), weight, eps=1e-6)
        torch.testing.assert_close(refops.rms_norm(x, weight, 1e-6), expected)

    def test_non_contiguous_input(self) -> None:
        x, weight = selftest.inputs((8, 16), torch.float32, 3)
        view = x.t()  # 16 x 8, strided
        w = weight[:8].contiguous()
        self.assertFalse(view.is_contiguous())
        torch.testing.assert_close(refops.rms_norm(view, w), refops.rms_norm_reference(view, w))

    def test_a_wrong_result_is_caught(self) -> None:
        x, weight = selftest.inputs((3, 5), torch.float32, 1)
        with self.assertRaises(AssertionError):
            torch.testing.assert_close(refops.rms_norm(x, weight), refops.rms_norm_reference(x, weight * 2))

    def test_meta_tensors_give_the_shape(self) -> None:
        out = torch.ops.refops.rms_norm(torch.empty(4, 3, 10, device="meta"), torch.empty(10, device="meta"))
        self.assertEqual(out.device.type, "meta")
        self.assertEqual(tuple(out.shape), (4, 3, 10))

    def test_operator_schema(self) -> None:
        schema = torch.ops.refops.rms_norm.default._schema
        self.assertEqual(schema.name, "refops::rms_norm")
        self.assertEqual([(a.name, str(a.type)) for a in schema.arguments], [("x", "Tensor"), ("weight", "Tensor"), ("eps", "float")])
        self.assertAlmostEqual(schema.arguments[2].default_value, 1e-6)
        self.assertEqual([str(r.type) for r in schema.returns], ["Tensor"])
        x, weight = selftest.inputs((2, 4), torch.float32, 0)
        torch.testing.assert_close(torch.ops.refops.rms_norm(x, weight), refops.rms_norm(x, weight, 1e-6))


class ChecksRaise(unittest.TestCase):
    def test_torch_check_messages(self) -> None:
        for name, call, expected in selftest.REFUSED:
            with self.subTest(name), self.assertRaisesRegex(RuntimeError, expected.replace("[", r"\[")):
                call()

    def test_device_mismatch_names_both_devices(self) -> None:
        with self.assertRaisesRegex(RuntimeError, "x is on cpu but weight is on meta"):
            torch.ops.refops.rms_norm(torch.ones(2, 4), torch.empty(4, device="meta"))

    def test_selftest_passes(self) -> None:
        self.assertEqual(selftest.run(), [])


if __name__ == "__main__":
    unittest.main()
