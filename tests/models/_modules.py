"""_modules.py - helpers for the references written with torch.nn modules
(bert, gpt2, mobilenetv2, unet): build a module once, give it the .ein
file's weights by their state-dict names ('.' -> '_'), in the tensors'
dtype, in eval mode.  A module is cached on the identity of the tensors
it was given, so that the benchmarks (tests/bench/cpu.py) time its
forward pass, as a PyTorch user runs a model, not its construction.
(Files starting with '_' are not models: tests/num/run.py skips them.)"""

import torch

_CACHE = {}


def loaded(key, build, weights):
    """build() -> an nn.Module whose state-dict names, with '.' -> '_',
    are keys of `weights` (num_batches_tracked excepted); returned with
    those values, in eval mode, cached on (key, the weights' storage)."""
    ident = (key,) + tuple(sorted((k, v.data_ptr(), v.dtype, tuple(v.shape))
                                  for k, v in weights.items()))
    m = _CACHE.get(ident)
    if m is not None:
        return m
    m = build()
    dtype = next(iter(weights.values())).dtype
    m = m.to(dtype)
    state = {}
    for name, old in m.state_dict().items():
        if name.endswith("num_batches_tracked"):
            state[name] = old
            continue
        w = name.replace(".", "_")
        if w not in weights:
            raise KeyError("module wants weight %s (%s)" % (w, name))
        state[name] = weights[w]
    m.load_state_dict(state)
    m.eval()
    for p in m.parameters():
        p.requires_grad_(False)
    _CACHE.clear()                  # one model at a time: free the last
    _CACHE[ident] = m
    return m
