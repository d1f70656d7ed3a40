r"""Starts `python -m llama_cpp.server` (its command-line arguments follow) with three changes for the real-server
check (bench/real_server.py, docs/real-server.md); both leave what the server answers unchanged.

1. llama.cpp's extra CPU buffer types (repacked weight layouts) off: with llama-cpp-python 0.3.36 on an
   AVX-512/AMX Xeon VM they segfault in the first decode, and the server has no flag for
   `llama_model_params.use_extra_bufts` (`--extra-bufts` in bench/real_server.py keeps them).
2. Greedy decoding under a grammar checks the best token first (`--no-fast-grammar` turns it off). The
   package's sampler chain applies the grammar to every candidate before the greedy pick, 262,144 of them
   on Gemma's vocabulary: 2.6-2.9 generated tokens per second here against about 34 without a grammar. At
   temperature 0 the pick is the highest-logit token the grammar allows, so when the highest-logit token
   of all is allowed (checked against the grammar alone) it is the pick, and only when it is not is the
   grammar applied to every candidate. This is what llama.cpp's own `common_sampler_sample` does
   (`grammar_first = false`); the tokens chosen are the same, only the work differs. Sampling at a
   temperature above 0 keeps the package's chain unchanged.
3. JSON strings without raw control characters (`--json-control-chars` keeps the package's rule). The
   package's Python JSON-schema-to-grammar converter defines a string character as `[^"\\]`, so a reply
   may hold a raw newline or tab inside a string: not JSON (RFC 8259), and the client's parser rejects it
   ("Invalid control character"; 1 of the first 2 synthesis replies here). llama.cpp's own converter
   (`common/json-schema-to-grammar.cpp`) excludes them: `[^"\\\x7F\x00-\x1F]`; this uses that rule.
"""

from __future__ import annotations

import ctypes
import os
import runpy
import sys
import threading

import numpy as np

import llama_cpp.llama_cpp as low
from llama_cpp import _internals
from llama_cpp.llama import Llama

FAST_GRAMMAR = os.environ.get("GCPC_FAST_GRAMMAR", "1") == "1"
EXTRA_BUFTS = os.environ.get("GCPC_EXTRA_BUFTS", "0") == "1"
JSON_CONTROL_CHARS = os.environ.get("GCPC_JSON_CONTROL_CHARS", "0") == "1"

if not JSON_CONTROL_CHARS:
    from llama_cpp import llama_grammar

    _char = llama_grammar.PRIMITIVE_RULES["char"]
    if not _char.content.startswith(r'[^"\\]'):
        raise RuntimeError(f"llama_cpp.llama_grammar: unexpected string character rule {_char.content!r}; "
                           "check the control-character fix against this version")
    llama_grammar.PRIMITIVE_RULES["char"] = llama_grammar.BuiltinRule(
        r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])', [])

if not EXTRA_BUFTS:
    _default_model_params = low.llama_model_default_params

    def _no_extra_bufts():
        params = _default_model_params()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = _no_extra_bufts


_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
assert _TOKEN_DATA.itemsize == ctypes.sizeof(low.llama_token_data)
_greedy = threading.local()
TOP_K = 256
"""Candidates checked at once when the best is refused: if any is allowed, the best allowed of them is the best
allowed of all (every other candidate has a lower or equal logit and comes later in the order)."""
STATS = {"best": 0, "top_k": 0, "full": 0}
"""Tokens decided by the single-token check, by the top-K check and by the full grammar pass (printed at exit)."""


class GreedyGrammar:
    """A chain member in place of the grammar sampler, valid only before a greedy pick: `apply` checks the
    highest-logit candidate against the grammar and filters every candidate only when it is refused;
    `accept` advances the grammar by the chosen token, as the grammar sampler in the chain would."""

    def __init__(self, grammar: low.llama_sampler_p):
        self.grammar = grammar
        self.one = low.llama_token_data()
        self.one_array = low.llama_token_data_array(data=ctypes.pointer(self.one), size=1, selected=-1, sorted=False)

        def apply(_smpl, cur_p):
            arr = cur_p.contents
            n = int(arr.size)
            buf = (low.llama_token_data * n).from_address(ctypes.addressof(arr.data.contents))
            view = np.frombuffer(buf, dtype=_TOKEN_DATA, count=n)
            best = int(np.argmax(view["logit"]))  # the first highest, as llama.cpp's greedy sampler picks
            self.one.id, self.one.logit, self.one.p = int(view["id"][best]), float(view["logit"][best]), 0.0
            self.one_array.size, self.one_array.selected, self.one_array.sorted = 1, -1, False
            low.llama_sampler_apply(self.grammar, ctypes.byref(self.one_array))
            if self.one.logit != -np.inf:
                STATS["best"] += 1
                return
            # the best TOP_K in greedy order (higher logit first, then lower index, as the greedy scan keeps the first)
            logits = view["logit"]
            k = min(TOP_K, n)
            part = np.argpartition(-logits, k - 1)[:k]
            order = part[np.lexsort((part, -logits[part]))]
            top = np.zeros(k, dtype=_TOKEN_DATA)
            top["id"], top["logit"] = view["id"][order], logits[order]
            top_buf = (low.llama_token_data * k).from_buffer(top)
            top_array = low.llama_token_data_array(data=ctypes.cast(top_buf, ctypes.POINTER(low.llama_token_data)), size=k,
                                                   selected=-1, sorted=False)
            low.llama_sampler_apply(self.grammar, ctypes.byref(top_array))
            allowed = np.flatnonzero(top["logit"] != -np.inf)
            # exact only when no candidate outside the K can tie with it: its logit above the K-th's
            if allowed.size and (k == n or logits[order[allowed[0]]] > logits[order[-1]]):
                STATS["top_k"] += 1
                keep = int(order[allowed[0]])
                value = logits[keep]
                logits[:] = -np.inf  # the greedy pick that follows can only be this one
                logits[keep] = value
                return
            STATS["full"] += 1
            low.llama_sampler_apply(self.grammar, cur_p)

        def accept(_smpl, token):
            low.llama_sampler_accept(self.grammar, token)

        def reset(_smpl):
            low.llama_sampler_reset(self.grammar)

        self._refs = (apply, accept, reset)  # the C side holds only pointers to these
        iface = low.llama_sampler_i()
        iface.name = low.llama_sampler_i_name(0)
        iface.apply = low.llama_sampler_i_apply(apply)
        iface.accept = low.llama_sampler_i_accept(accept)
        iface.reset = low.llama_sampler_i_reset(reset)
        iface.clone = low.llama_sampler_i_clone(0)
        iface.free = low.llama_sampler_i_free(0)
        self.iface = iface
        self.sampler = low.llama_sampler()
        self.sampler.iface = ctypes.pointer(iface)
        self.sampler.ctx = None

    def close(self) -> None:
        if self.grammar is not None:
            low.llama_sampler_free(self.grammar)
            self.grammar = None
            # cumulative, once per request (bench/real_server.py reads the last line)
            print(f"greedy grammar checks: {STATS}", file=sys.stderr, flush=True)


_original_init_sampler = Llama._init_sampler
_original_add_grammar = _internals.LlamaSampler.add_grammar


def _init_sampler(self, *args, **kwargs):
    temp = kwargs.get("temp", 0.80)
    _greedy.on = FAST_GRAMMAR and temp == 0.0 and kwargs.get("logits_processor") is None
    try:
        return _original_init_sampler(self, *args, **kwargs)
    finally:
        _greedy.on = False


def _add_grammar(self, model, grammar):
    if not getattr(_greedy, "on", False):
        return _original_add_grammar(self, model, grammar)
    inner = low.llama_sampler_init_grammar(model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
    if not inner:
        raise ValueError("llama.cpp could not build the grammar")
    member = GreedyGrammar(inner)
    low.llama_sampler_chain_add(self.sampler, ctypes.pointer(member.sampler))
    # like add_custom: the chain must not free a Python-owned sampler; LlamaSampler removes these before freeing
    self.custom_samplers.append((low.llama_sampler_chain_n(self.sampler) - 1, member))
    self._exit_stack.callback(member.close)


Llama._init_sampler = _init_sampler
_internals.LlamaSampler.add_grammar = _add_grammar

if __name__ == "__main__":
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
