"""A Hugging Face `config.json` as a kvtui model profile (the keys of models.yaml), so a report of
a model kvtui does not ship can be calibrated: layers, hidden size, heads, KV heads, MLP width,
vocabulary and, for a mixture of experts (Mixtral's `num_local_experts`, `num_experts_per_tok`),
the parameters one token computes with.

The parameter count is the decoder's own arithmetic (a Llama-style block: Q, K, V and O
projections, a gated MLP of three matrices, two norms; embeddings and an untied LM head):
Llama-2-7B gives 6.74 B (its card: 6.74 B), Mixtral-8x7B 46.7 B total and 12.9 B active (its
card: 46.7 B and 12.9 B).
"""

from __future__ import annotations

import os
import re

from kvtui.calibrate.files import number, read_json
from kvtui.errors import InputError

NAME = "config.json"


def find_config(report_path: str) -> str | None:
    """A config.json in the report's directory or the one above it."""
    base = report_path if os.path.isdir(report_path) else os.path.dirname(report_path)
    for d in (base, os.path.dirname(os.path.abspath(base))):
        f = os.path.join(d, NAME)
        if os.path.isfile(f):
            return f
    return None


def slug(model: str) -> str:
    """A profile name for a Hugging Face model id: `meta-llama/Llama-2-7b-hf` -> `llama-2-7b-hf`."""
    return re.sub(r"[^a-z0-9.]+", "-", model.rsplit("/", 1)[-1].lower()).strip("-") or "model"


def model_figures(path: str) -> dict:
    """models.yaml figures from a config.json; InputError when it is not a decoder's config."""
    c = read_json(path)
    if not isinstance(c, dict):
        raise InputError.one(path, None, "not a Hugging Face config.json (a JSON object)")

    def get(key: str, *alt: str, default=None) -> float:
        for k in (key, *alt):
            if c.get(k) is not None:
                return number(c[k], path, k, 1, 1e9)
        if default is None:
            raise InputError.one(path, None, f"no {key}: not a decoder model's config.json")
        return default

    layers, hidden = int(get("num_hidden_layers", "n_layer")), int(get("hidden_size", "n_embd"))
    heads = int(get("num_attention_heads", "n_head"))
    kv_heads = int(get("num_key_value_heads", default=heads))
    head_dim = int(get("head_dim", default=hidden // heads))
    inter = int(get("intermediate_size", default=4 * hidden))
    vocab = int(get("vocab_size", default=32000))
    experts = int(get("num_local_experts", "num_experts", default=1))
    routed = int(get("num_experts_per_tok", default=experts)) if experts > 1 else 1
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    mlp = 3 * hidden * inter
    router = hidden * experts if experts > 1 else 0
    embeddings = vocab * hidden * (1 if c.get("tie_word_embeddings") else 2)
    total = embeddings + layers * (attention + experts * mlp + router + 2 * hidden) + hidden
    active = embeddings + layers * (attention + routed * mlp + router + 2 * hidden) + hidden
    figures = {"params_b": round(total / 1e9, 3), "layers": layers, "hidden": hidden, "intermediate": inter,
               "attention_heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
               "source": f"{os.path.basename(os.path.dirname(os.path.abspath(path))) or '.'}/{NAME}: "
                         f"{layers} layers, hidden {hidden}, {heads} heads, {kv_heads} KV heads, MLP {inter}, "
                         f"vocabulary {vocab}" + (f", {experts} experts ({routed} per token)" if experts > 1 else "")}
    if experts > 1:
        figures["active_params_b"] = round(active / 1e9, 3)
    return figures
