"""einc from Python: compile an ein program (or an ONNX model) and run it.

    import einc
    model = einc.compile("net.ein")                 # or source text, or a .onnx file
    model.load_state_dict(torch_model.state_dict(), strict=False)
    out = model(x=array)                            # {"y": array}

``compile`` runs the einc command (``$EINC``, else ``einc`` on PATH) with
``--shared``, builds the file with the command einc writes on its first
line, and loads the library with ctypes.  The model is a thin layer over
the library's C API (see einc(1)): tensors are named by their ein name
or their external name, arrays are row-major, and every failure raises
EincError with einc's or the library's message.  ``einc.safetensors``
reads and writes safetensors files with numpy alone.
"""

import ctypes
import operator
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import weakref
from collections import namedtuple

import numpy as np

from . import safetensors

__all__ = ["compile", "Model", "EincError", "TensorInfo", "safetensors"]


class EincError(Exception):
    """einc refused the program, its build failed, or the compiled program
    reported an error (the message is einc's or the library's)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


TensorInfo = namedtuple("TensorInfo", "name ext_name kind is_output shape elem")
TensorInfo.__doc__ = """A tensor of the model: kind is "input", "weight" or "computed";
elem "f32", "f16", "bf16", "i8", "i16", "i32", "i64", "u8" or "bool"; ext_name the name
it is loaded and set by."""

LoadResult = namedtuple("LoadResult", "missing_keys unexpected_keys")

_KINDS = {0: "input", 1: "weight", 2: "computed"}
_ELEMS = {0: "f32", 1: "f16", 2: "bf16", 3: "i8", 4: "i16", 5: "i32", 6: "i64", 7: "u8",
          8: "bool"}
_NP = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i8": np.int8,
       "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}


class _Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ext_name", ctypes.c_char_p),
                ("kind", ctypes.c_int), ("is_output", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("count", ctypes.c_size_t),
                ("elem", ctypes.c_int), ("nbytes", ctypes.c_size_t)]


def _einc_command():
    exe = os.environ.get("EINC") or shutil.which("einc")
    if not exe:
        raise EincError("cannot find the einc command: put it on PATH or set EINC")
    return exe


def _run(cmd, cwd, what):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise EincError(f"{what}: cannot run '{cmd[0]}': {e.strerror}") from None
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).decode("utf-8", "replace").strip()
        raise EincError(msg or f"{what} failed (exit status {p.returncode})", p.returncode)
    return p


def compile(source, target="c", consts=None, options=(), workdir=None):
    """Compile an ein program and load it.

    source: a path to a .ein file, a .onnx model (imported with
    ``einc --from=onnx``, its initializers loaded as the weights), or the
    text of a program.  target: "c" (the CPU) or "cuda".  consts: values
    for ``const``s (``-D NAME=VALUE``, integers).  options: further einc
    options (``["-O1"]``; einc runs in the caller's folder, so relative
    paths are the caller's).  workdir: where to build (default: a
    temporary folder, removed with the model).
    """
    if target not in ("c", "cuda"):
        raise ValueError(f"target must be 'c' or 'cuda', not {target!r}")
    einc = _einc_command()
    if os.sep in einc:
        einc = os.path.abspath(einc)
    defines = []
    for k, v in (consts or {}).items():
        try:
            defines += ["-D", f"{k}={operator.index(v)}"]
        except TypeError:
            raise EincError(f"const {k}: {v!r} is not an integer") from None
    tmp = None
    if workdir is None:
        tmp = workdir = tempfile.mkdtemp(prefix="einc-")
    workdir = os.path.abspath(workdir)
    try:
        text = None
        path = os.fspath(source) if isinstance(source, os.PathLike) else source
        if not isinstance(path, str):
            raise TypeError("source must be a path or the text of a program")
        if "\n" in path or not os.path.exists(path):
            if path.endswith((".ein", ".onnx")) and "\n" not in path:
                raise EincError(f"cannot open '{path}': no such file")
            text = path
        weights = None
        if text is not None:
            src = os.path.join(workdir, "model.ein")
            with open(src, "w") as f:
                f.write(text)
        elif path.endswith(".onnx"):
            stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0]) or "model"
            src = os.path.join(workdir, stem + ".ein")
            weights = os.path.join(workdir, stem + ".safetensors")
            _run([einc, "--from=onnx", os.path.abspath(path), "-o", src], None, "einc")
        else:
            src = os.path.abspath(path)
        stem = os.path.splitext(os.path.basename(src))[0]
        out = os.path.join(workdir, stem + (".cu" if target == "cuda" else ".c"))
        # einc runs where the caller is, so that relative paths in options
        # (-I DIR, --tune-db=FILE) mean what they say; the build in workdir
        cmd = [einc, src, "-o", out, "--shared"] + defines + list(options)
        _run(cmd, None, "einc")
        with open(out) as f:
            first = f.readline()
            head = f.read(4096)
        m = re.match(r"\s*(?:/\*|//)\s*build:\s*(.*?)\s*(?:\*/)?\s*$", first)
        if not m:
            raise EincError(f"{out}: no build command on its first line")
        _run(shlex.split(m.group(1)), workdir, "building the library")
        lib = os.path.join(workdir, stem + ".so")
        name = re.search(r"Model '(\w+)'", head)
        if not name:
            raise EincError(f"{out}: no model name in its header")
        model = Model(lib, name.group(1), target, _cleanup=tmp)
        tmp = None
        if weights:
            model.load_weights(weights)
        return model
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


class Model:
    """A compiled program: ``model(**inputs)`` runs it.  Made by
    einc.compile, or from a shared library einc's --shared output built."""

    def __init__(self, library, model_name, target="c", _cleanup=None):
        # dlopen returns the library already loaded from the same path, even
        # where the file was built anew since: load a copy of its own
        fd, copy = tempfile.mkstemp(prefix="einc-", suffix=".so")
        os.close(fd)
        try:
            shutil.copyfile(library, copy)
            self._lib = lib = ctypes.CDLL(copy)
        except OSError as e:
            raise EincError(f"cannot load '{library}': {e}") from None
        finally:
            os.unlink(copy)
        self.name = model_name
        self.target = target
        self._cuda = target == "cuda"
        m = model_name
        P = ctypes.c_void_p

        def fn(suffix, res, *args):
            try:
                f = getattr(lib, f"{m}_{suffix}")
            except AttributeError:
                raise EincError(f"'{library}' has no model '{m}' ({m}_{suffix})") from None
            f.restype = res
            f.argtypes = list(args)
            return f

        self._create = fn("create", ctypes.c_int, ctypes.POINTER(P))
        self._destroy = fn("destroy", ctypes.c_int, P)
        self._last_error = fn("last_error", ctypes.c_char_p, P)
        self._load = fn("load_weights", ctypes.c_int, P, ctypes.c_char_p)
        self._set = fn("set_tensor", ctypes.c_int, P, ctypes.c_char_p, P, ctypes.c_size_t)
        self._get = fn("get_tensor", ctypes.c_int, P, ctypes.c_char_p, P, ctypes.c_size_t)
        self._run_named = fn("run_named", ctypes.c_int, P, *([P] if self._cuda else []))
        self._set_threads = fn("set_threads", ctypes.c_int, P, ctypes.c_int)
        count = fn("tensor_count", ctypes.c_int)()
        at = fn("tensor_at", ctypes.POINTER(_Info), ctypes.c_int)
        out_at = fn("output_at", ctypes.POINTER(_Info), ctypes.c_int)
        self.tensors = []
        for i in range(count):
            self.tensors.append(self._info(at(i).contents))
        self.outputs = []
        k = 0
        while out_at(k):
            self.outputs.append(self._info(out_at(k).contents))
            k += 1
        self.inputs = [t for t in self.tensors if t.kind == "input"]
        self.weights = [t for t in self.tensors if t.kind == "weight"]
        self._run = getattr(lib, f"{m}_run")
        self._run.restype = ctypes.c_int
        self._by_name = {}
        for t in self.tensors:
            self._by_name[t.name] = t
            self._by_name.setdefault(t.ext_name, t)
        ctx = P()
        rc = self._create(ctypes.byref(ctx))
        self._ctx = ctx
        self._finalizer = weakref.finalize(self, Model._free, self._destroy, ctx, _cleanup)
        if rc != 0:
            msg = self._last_error(ctx).decode("utf-8", "replace")
            self.close()
            raise EincError(msg, rc)

    @staticmethod
    def _free(destroy, ctx, cleanup):
        if ctx:
            destroy(ctx)
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)

    @staticmethod
    def _info(c):
        shape = tuple(c.shape[d] for d in range(c.rank))
        return TensorInfo(c.name.decode(), c.ext_name.decode(), _KINDS[c.kind],
                          bool(c.is_output), shape, _ELEMS[c.elem])

    def close(self):
        """Free the context (and the build folder of einc.compile); the
        model cannot be used after."""
        self._finalizer()

    def _live(self):
        """The context, or EincError once the model is closed."""
        if not self._finalizer.alive:
            raise EincError(f"model '{self.name}' is closed")
        return self._ctx

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, rc):
        if rc != 0:
            raise EincError(self._last_error(self._live()).decode("utf-8", "replace"), rc)

    def _tensor(self, name):
        t = self._by_name.get(name)
        if t is None:
            raise EincError(f"the model has no tensor named '{name}'")
        return t

    @staticmethod
    def _host_array(t, value):
        """value as a C-contiguous array of t's element type and shape:
        converted where numpy's same_kind casting allows (f64 to f32, i64
        to i32), else EincError (a float for an integer tensor)."""
        if _is_torch(value):
            import torch
            if t.elem == "bf16" and value.dtype == torch.bfloat16:
                value = value.detach().cpu().contiguous().view(torch.int16).numpy().view(np.uint16)
            elif value.dtype == torch.bfloat16:
                value = value.detach().cpu().float().numpy()
            else:
                value = value.detach().cpu().numpy()
        try:
            a = np.asarray(value)
        except (ValueError, TypeError) as e:
            raise EincError(f"tensor '{t.name}': {e}") from None
        want = np.dtype(np.float32 if t.elem == "bf16" else _NP[t.elem])
        if not (t.elem == "bf16" and a.dtype == np.uint16) and \
                not np.can_cast(a.dtype, want, casting="same_kind"):
            raise EincError(f"tensor '{t.name}' holds {t.elem}, not {a.dtype}")
        if t.elem == "bf16" and a.dtype != np.uint16:
            a = safetensors._to_bf16_bits(np.asarray(a, dtype=np.float32))
        a = np.asarray(a, dtype=_NP[t.elem], order="C")       # keeps rank 0
        if a.shape != t.shape:
            raise EincError(f"tensor '{t.name}' has shape {list(t.shape)}, "
                            f"not {list(a.shape)}")
        return a

    def set_tensor(self, name, value):
        """Set an input or a weight (numpy array, torch tensor or sequence)."""
        t = self._tensor(name)
        a = self._host_array(t, value)
        self._check(self._set(self._live(), t.name.encode(), a.ctypes.data, a.nbytes))

    def get_tensor(self, name):
        """A copy of a tensor that holds a value, as a numpy array."""
        t = self._tensor(name)
        a = np.empty(t.shape, dtype=_NP[t.elem])
        self._check(self._get(self._live(), t.name.encode(), a.ctypes.data, a.nbytes))
        return safetensors._from_bf16_bits(a) if t.elem == "bf16" else a

    def set_threads(self, n):
        """Compute the runs from now on with at most n threads (C target:
        OpenMP's, which oneDNN and the matrix products share; fewer where
        the context measured fewer faster; 0: OpenMP's default)."""
        self._check(self._set_threads(self._live(), int(n)))

    def load_weights(self, path):
        """Load the weights found in a safetensors file (by external name)."""
        self._check(self._load(self._live(), os.fsencode(path)))

    def load_state_dict(self, state_dict, strict=True):
        """Set the weights from a mapping of names (external or ein) to
        arrays or tensors.  strict: every weight must be given and every
        key must name one (else EincError, nothing set).  Returns the
        missing and unexpected keys."""
        todo, unexpected = [], []
        for key, value in state_dict.items():
            t = self._by_name.get(key)
            if t is None or t.kind != "weight":
                unexpected.append(key)
            else:
                todo.append((t, value))
        given = {t.name for t, _ in todo}
        missing = [t.ext_name for t in self.weights if t.name not in given]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append("missing: " + ", ".join(missing))
            if unexpected:
                parts.append("unexpected: " + ", ".join(unexpected))
            raise EincError("load_state_dict: " + "; ".join(parts))
        arrays = [(t, self._host_array(t, v)) for t, v in todo]     # check all first
        ctx = self._live()
        for t, a in arrays:
            self._check(self._set(ctx, t.name.encode(), a.ctypes.data, a.nbytes))
        return LoadResult(missing, unexpected)

    def state_dict(self):
        """Every weight that was set, by external name, as numpy arrays."""
        out = {}
        for t in self.weights:
            try:
                out[t.ext_name] = self.get_tensor(t.name)
            except EincError:
                pass
        return out

    def __call__(self, /, **inputs):
        """Run the model on the inputs (by ein or external name).  Returns
        {output name: array}: numpy arrays, or torch tensors when the
        inputs are torch tensors (on the CUDA target: CUDA tensors, run on
        the current stream).  Arrays already of the right type and layout
        are passed without copying."""
        ctx = self._live()
        given = {}
        for key, value in inputs.items():
            t = self._by_name.get(key)
            if t is None or t.kind != "input":
                raise EincError(f"the model has no input named '{key}'")
            if t.name in given:
                raise EincError(f"input '{t.name}' is given twice")
            given[t.name] = value
        missing = [t.name for t in self.inputs if t.name not in given]
        if missing:
            raise EincError("missing input" + ("s " if len(missing) > 1 else " ") +
                            ", ".join(f"'{n}'" for n in missing))
        use_torch = any(_is_torch(v) for v in given.values())
        if use_torch:
            return self._call_torch(given)
        if self._cuda:
            for t in self.inputs:
                self.set_tensor(t.name, given[t.name])
            self._check(self._run_named(ctx, None))
            return {t.name: self.get_tensor(t.name) for t in self.outputs}
        keep = [self._host_array(t, given[t.name]) for t in self.inputs]
        outs = [np.empty(t.shape, dtype=_NP[t.elem]) for t in self.outputs]
        args = [ctypes.c_void_p(a.ctypes.data) for a in keep + outs]
        self._check(self._run(ctx, *args))
        return {t.name: (safetensors._from_bf16_bits(a) if t.elem == "bf16" else a)
                for t, a in zip(self.outputs, outs)}

    def _call_torch(self, given):
        import torch
        dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
              "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
              "u8": torch.uint8, "bool": torch.bool}
        dev = torch.device("cuda") if self._cuda else torch.device("cpu")
        keep = []
        for t in self.inputs:
            v = given[t.name]
            if not _is_torch(v):
                v = torch.from_numpy(self._host_array(t, v))
            if not torch.can_cast(v.dtype, dt[t.elem]) and \
                    not (t.elem == "bf16" and v.dtype.is_floating_point):
                raise EincError(f"tensor '{t.name}' holds {t.elem}, not {v.dtype}")
            v = v.detach().to(device=dev, dtype=dt[t.elem]).contiguous()
            if tuple(v.shape) != t.shape:
                raise EincError(f"tensor '{t.name}' has shape {list(t.shape)}, "
                                f"not {list(v.shape)}")
            keep.append(v)
        outs = [torch.empty(t.shape, dtype=dt[t.elem], device=dev) for t in self.outputs]
        args = [ctypes.c_void_p(v.data_ptr()) for v in keep + outs]
        if self._cuda:
            args.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        self._check(self._run(self._live(), *args))
        return {t.name: v for t, v in zip(self.outputs, outs)}

    def __repr__(self):
        return (f"<einc.Model {self.name}: inputs {[t.name for t in self.inputs]}, "
                f"outputs {[t.name for t in self.outputs]}>")
