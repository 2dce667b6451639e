#!/usr/bin/python3
"""test_einc.py - the Python module (python/einc): shapes, element types,
constants, errors, state_dict round trips and einc.safetensors.  Numbers
are checked against numpy or PyTorch, never against einc itself.  Needs
EINC (the einc binary)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402

import einc  # noqa: E402
from einc import safetensors  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

PROGRAM = """\
const N = 2, K = 3, M = 4
input  x "in.x" : f32[N, K]
weight w "lin.weight" : f32[M, K], b "lin.bias" : f32[M]
weight h : f16[M]
y[i, j] += x[i, k] * w[j, k]
z[i, j] : f16[N, M] = y[i, j] + b[j] + h[j]
output y, z
"""


def reference(x, w, b, h):
    y = x.astype(np.float64) @ w.astype(np.float64).T
    return y, y + b + h.astype(np.float64)


class Module(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = einc.compile(PROGRAM)
        rng = np.random.default_rng(1)
        cls.sd = {"lin.weight": rng.standard_normal((4, 3)).astype(np.float32),
                  "lin.bias": rng.standard_normal(4).astype(np.float32),
                  "h": rng.standard_normal(4).astype(np.float16)}
        cls.x = rng.standard_normal((2, 3)).astype(np.float32)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_tensors(self):
        m = self.model
        self.assertEqual([(t.name, t.ext_name, t.shape, t.elem) for t in m.inputs],
                         [("x", "in.x", (2, 3), "f32")])
        self.assertEqual([(t.name, t.ext_name, t.shape, t.elem) for t in m.weights],
                         [("w", "lin.weight", (4, 3), "f32"), ("b", "lin.bias", (4,), "f32"),
                          ("h", "h", (4,), "f16")])
        self.assertEqual([(t.name, t.shape, t.elem) for t in m.outputs],
                         [("y", (2, 4), "f32"), ("z", (2, 4), "f16")])

    def test_call_numpy(self):
        self.model.load_state_dict(self.sd)
        out = self.model(x=self.x)
        self.assertEqual(sorted(out), ["y", "z"])
        self.assertEqual(out["y"].dtype, np.float32)
        self.assertEqual(out["z"].dtype, np.float16)
        self.assertEqual(out["y"].shape, (2, 4))
        y, z = reference(self.x, *(self.sd[k] for k in ("lin.weight", "lin.bias", "h")))
        np.testing.assert_allclose(out["y"], y, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(out["z"].astype(np.float64), z, rtol=1e-3, atol=1e-3)
        # by the external name, from a list, from float64 (converted)
        out2 = self.model(**{"in.x": self.x.astype(np.float64).tolist()})
        np.testing.assert_array_equal(out2["y"], out["y"])
        # one thread, then back to OpenMP's default; a bad count refused
        self.model.set_threads(1)
        np.testing.assert_allclose(self.model(x=self.x)["y"], y, rtol=1e-6, atol=1e-6)
        self.model.set_threads(0)
        with self.assertRaises(einc.EincError) as e:
            self.model.set_threads(-2)
        self.assertIn("a thread count of -2", str(e.exception))

    @unittest.skipIf(torch is None, "no torch")
    def test_call_torch(self):
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in self.sd.items()})
        out = self.model(x=torch.from_numpy(self.x))
        self.assertIsInstance(out["y"], torch.Tensor)
        self.assertEqual(out["z"].dtype, torch.float16)
        y, _ = reference(self.x, *(self.sd[k] for k in ("lin.weight", "lin.bias", "h")))
        np.testing.assert_allclose(out["y"].numpy(), y, rtol=1e-6, atol=1e-6)

    def test_state_dict_round_trip(self):
        self.model.load_state_dict(self.sd)
        got = self.model.state_dict()
        self.assertEqual(sorted(got), sorted(self.sd))
        for k in self.sd:
            np.testing.assert_array_equal(got[k], self.sd[k])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            safetensors.save(got, path)
            other = einc.compile(PROGRAM)
            other.load_weights(path)
            np.testing.assert_array_equal(other(x=self.x)["y"], self.model(x=self.x)["y"])
            other.close()

    def test_consts(self):
        with einc.compile(PROGRAM, consts={"N": 5}) as m:
            self.assertEqual(m.inputs[0].shape, (5, 3))
            self.assertEqual(m.outputs[1].shape, (5, 4))

    def test_errors(self):
        with self.assertRaisesRegex(einc.EincError, r"model\.ein:2:15: error: unknown tensor 'q'"):
            einc.compile("input x : f32[4]\ny[i] = x[i] + q[i]\noutput y\n")
        with self.assertRaisesRegex(einc.EincError, "no such file"):
            einc.compile("/nonexistent/net.ein")
        with einc.compile(PROGRAM) as fresh:
            with self.assertRaisesRegex(einc.EincError, "weight 'w' was never loaded or set"):
                fresh(x=self.x)
            with self.assertRaisesRegex(einc.EincError, r"missing: lin.weight, lin.bias, h"):
                fresh.load_state_dict({})
            with self.assertRaisesRegex(einc.EincError, r"unexpected: extra"):
                fresh.load_state_dict(dict(self.sd, extra=np.zeros(1)))
            r = fresh.load_state_dict({"lin.bias": self.sd["lin.bias"], "extra": 1}, strict=False)
            self.assertEqual(sorted(r.missing_keys), ["h", "lin.weight"])
            self.assertEqual(r.unexpected_keys, ["extra"])
            with self.assertRaisesRegex(einc.EincError, r"has shape \[4, 3\], not \[3, 4\]"):
                fresh.load_state_dict(dict(self.sd, **{"lin.weight": np.zeros((3, 4))}))
            with self.assertRaisesRegex(einc.EincError, "has shape"):
                fresh(x=self.x[:1])
            with self.assertRaisesRegex(einc.EincError, "no input named 'y'"):
                fresh(x=self.x, y=self.x)
            with self.assertRaisesRegex(einc.EincError, "missing input 'x'"):
                fresh()
            with tempfile.TemporaryDirectory() as d:
                bad = os.path.join(d, "bad.safetensors")
                with open(bad, "wb") as f:
                    f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
                with self.assertRaises(einc.EincError) as cm:
                    fresh.load_weights(bad)
                self.assertIn("bad.safetensors", str(cm.exception))
        with self.assertRaises(ValueError):
            einc.compile(PROGRAM, target="tpu")

    def test_closed(self):
        m = einc.compile(PROGRAM)
        m.load_state_dict(self.sd)
        m.close()
        m.close()
        for use in (lambda: m(x=self.x), lambda: m.get_tensor("w"),
                    lambda: m.set_tensor("w", self.sd["lin.weight"]), lambda: m.set_threads(1),
                    lambda: m.load_state_dict(self.sd)):
            with self.assertRaisesRegex(einc.EincError, "model 'model' is closed"):
                use()

    def test_conversions(self):
        """Values convert where numpy's same_kind casting allows, else are
        refused; rank 0 from numpy and Python scalars; an input named self."""
        src = ("input self : f32[], k : i32[2]\nweight g : f32[]\n"
               "y[i] = self[] * g[] + k[i]\noutput y\n")
        with einc.compile(src) as m:
            m.load_state_dict({"g": np.float32(2)})
            y = m(**{"self": np.array(3.0), "k": [1, 2]})["y"]
            np.testing.assert_array_equal(y, np.array([7, 8], np.float32))
            with self.assertRaisesRegex(einc.EincError, "tensor 'k' holds i32, not float64"):
                m(**{"self": 1.0, "k": [0.5, 1.9]})
            if torch is not None:
                with self.assertRaisesRegex(einc.EincError, "holds i32, not torch.float32"):
                    m(**{"self": torch.tensor(1.0), "k": torch.tensor([0.5, 1.9])})
                y = m(**{"self": torch.tensor(3.0, dtype=torch.bfloat16),
                         "k": torch.tensor([1, 2])})["y"]
                np.testing.assert_array_equal(y.numpy(), np.array([7, 8], np.float32))
        with self.assertRaisesRegex(einc.EincError, "const N: 2.5 is not an integer"):
            einc.compile(PROGRAM, consts={"N": 2.5})

    def test_paths(self):
        """Relative workdir and -I name the caller's folders; a program built
        again in the same workdir is the new one."""
        with tempfile.TemporaryDirectory() as d:
            cwd = os.getcwd()
            os.chdir(d)
            try:
                os.mkdir("inc")
                with open("inc/sq.ein", "w") as f:
                    f.write("def sq(x : f32[N]) -> y {\n  y[i] = x[i] * x[i]\n}\n")
                os.mkdir("wd")
                src = 'import "sq.ein"\ninput x : f32[3]\ny = sq(x)\noutput y\n'
                with einc.compile(src, options=["-I", "inc"], workdir="wd") as m:
                    np.testing.assert_array_equal(m(x=[1, 2, 3])["y"], [1, 4, 9])
                with einc.compile("input x : f32[4]\ny[i] = x[i] * 10\noutput y\n",
                                  workdir="wd") as m:
                    np.testing.assert_array_equal(m(x=[1, 2, 3, 4])["y"], [10, 20, 30, 40])
            finally:
                os.chdir(cwd)
        old = os.environ.get("EINC")
        os.environ["EINC"] = "/nonexistent/einc"
        try:
            with self.assertRaisesRegex(einc.EincError, "cannot run '/nonexistent/einc'"):
                einc.compile(PROGRAM)
        finally:
            os.environ["EINC"] = old


class Safetensors(unittest.TestCase):
    def test_round_trip(self):
        t = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3),
             "f16": np.array([1.5, -2], np.float16), "i64": np.array([[1, -2]], np.int64),
             "u8": np.array([255], np.uint8), "bool": np.array([True, False]),
             "scalar": np.array(3.0, np.float64)}
        data = safetensors.dumps(t, metadata={"format": "pt"})
        back = safetensors.loads(data)
        self.assertEqual(sorted(back), sorted(t))
        for k in t:
            self.assertEqual(back[k].dtype, t[k].dtype)
            np.testing.assert_array_equal(back[k], t[k])
        # the header is padded to 8 bytes, the keys sorted
        n = int.from_bytes(data[:8], "little")
        self.assertEqual(n % 8, 0)

    def test_bf16(self):
        a = np.array([1.0, 3.140625, -0.5, 1 + 2 ** -9], np.float32)
        back = safetensors.loads(safetensors.dumps({"b": safetensors.bf16(a)}))["b"]
        np.testing.assert_array_equal(back, np.array([1.0, 3.140625, -0.5, 1.0], np.float32))

    @unittest.skipIf(torch is None, "no torch")
    def test_torch_values(self):
        back = safetensors.loads(safetensors.dumps({"t": torch.ones(2, 2),
                                                    "b": torch.ones(3, dtype=torch.bfloat16)}))
        np.testing.assert_array_equal(back["t"], np.ones((2, 2), np.float32))
        np.testing.assert_array_equal(back["b"], np.ones(3, np.float32))

    def test_malformed(self):
        for data, msg in [(b"\x01", "shorter than"), (b"\xff" * 8 + b"{}", "exceeds"),
                          (b"\x02\x00\x00\x00\x00\x00\x00\x00[]", "not a JSON object"),
                          (b"\x04\x00\x00\x00\x00\x00\x00\x00{]  ", "not valid JSON")]:
            with self.assertRaisesRegex(safetensors.SafetensorsError, msg):
                safetensors.loads(data)
        h = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}'
        with self.assertRaisesRegex(safetensors.SafetensorsError, "do not fit"):
            safetensors.loads(len(h).to_bytes(8, "little") + h + b"\0" * 8)
        with self.assertRaisesRegex(safetensors.SafetensorsError, "no safetensors type"):
            safetensors.dumps({"c": np.array([1j])})
        with self.assertRaisesRegex(safetensors.SafetensorsError, "named __metadata__"):
            safetensors.dumps({"__metadata__": np.zeros(1)})
        h = b'{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}'
        with self.assertRaisesRegex(safetensors.SafetensorsError, "bad dtype, shape"):
            safetensors.loads(len(h).to_bytes(8, "little") + h + b"\0" * 4)
        with tempfile.TemporaryDirectory() as d:
            for data, msg in [(b"\x01", "shorter than"), (b"\xff" * 8 + b"{}", "exceeds"),
                              (b"\x03\x00\x00\x00\x00\x00\x00\x00[1]", "not a JSON object")]:
                with open(os.path.join(d, "m.safetensors"), "wb") as f:
                    f.write(data)
                with self.assertRaisesRegex(safetensors.SafetensorsError, msg):
                    safetensors.read_metadata(os.path.join(d, "m.safetensors"))
        # rank 0 stays rank 0, bf16 too
        back = safetensors.loads(safetensors.dumps({"s": safetensors.bf16(np.float32(2.5))}))
        self.assertEqual(back["s"].shape, ())


if __name__ == "__main__":
    unittest.main(verbosity=2)
