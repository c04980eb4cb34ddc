"""Decoder-only transformer configs: built-in models and Hugging Face ``config.json`` files.

Both go through :func:`parse_config`, so a built-in model is checked exactly like a user's file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError


class ModelConfigError(RooflineError):
    """A model config that roofline cannot turn into a decoder-only transformer."""


#: model types whose MLP is gated (SwiGLU / GeGLU: gate, up, down); others get the plain up/down MLP
GATED_MLP_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "gemma2", "qwen3", "qwen3_moe",
                   "olmo", "olmo2", "deepseek", "phi3", "internlm2", "yi"}
#: model types with biases on the q, k and v projections
QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "gpt2"}
#: GPT-2's layout: biases on every linear, LayerNorm (weight and bias), a learned position table
#: (``n_positions`` rows), MLP width ``n_inner`` or, when null, 4 × ``n_embd`` (as HF's GPT2MLP)
GPT2_TYPES = {"gpt2"}
#: model types whose HF config class ties the LM head to the embedding when the key is absent
#: (PretrainedConfig's default); Llama-like classes default to untied
TIED_BY_DEFAULT_TYPES = {"gpt2", "opt", "gemma", "gemma2", "bloom", "gpt_bigcode"}
ENCODER_ARCHITECTURES = re.compile(r"(Bert|Roberta|Electra|Deberta|T5|Bart|Pegasus|Marian|Whisper|Vit|Clip)", re.IGNORECASE)
ENCODER_TYPES = {"bert", "roberta", "t5", "bart", "mt5", "electra", "deberta", "deberta-v2", "whisper", "pegasus",
                 "marian", "vit", "clip"}


@dataclass(frozen=True)
class ModelConfig:
    name: str
    hidden: int  # d_model
    layers: int
    heads: int
    kv_heads: int  # < heads: grouped-query attention
    head_dim: int
    intermediate: int  # per expert for mixture-of-experts models
    vocab: int
    tied_embeddings: bool
    gated_mlp: bool
    qkv_bias: bool
    experts: int = 1
    experts_per_token: int = 1
    shared_intermediate: int = 0  # an always-on shared expert's width, with its sigmoid gate (qwen2_moe)
    linear_bias: bool = False  # biases on o_proj and the MLP too (GPT-2)
    norm_bias: bool = False  # LayerNorm with a bias (GPT-2) rather than RMSNorm's weight only
    positions: int = 0  # rows of a learned position-embedding table (GPT-2's n_positions)

    @property
    def norm_params(self) -> int:
        return self.hidden * (2 if self.norm_bias else 1)

    # --- parameter counts (what the weight bytes are made of) ---
    @property
    def attn_params(self) -> int:
        q = self.hidden * self.heads * self.head_dim
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        bias = (self.heads + 2 * self.kv_heads) * self.head_dim if self.qkv_bias else 0
        return q + kv + o + bias + (self.hidden if self.linear_bias else 0)

    @property
    def expert_params(self) -> int:
        bias = ((2 if self.gated_mlp else 1) * self.intermediate + self.hidden) if self.linear_bias else 0
        return (3 if self.gated_mlp else 2) * self.hidden * self.intermediate + bias

    @property
    def router_params(self) -> int:
        return self.hidden * self.experts if self.experts > 1 else 0

    @property
    def shared_expert_params(self) -> int:
        return 3 * self.hidden * self.shared_intermediate + self.hidden if self.shared_intermediate else 0

    @property
    def layer_params(self) -> int:
        return (self.attn_params + self.experts * self.expert_params + self.router_params + self.shared_expert_params
                + 2 * self.norm_params)

    @property
    def embedding_params(self) -> int:
        """Token (and learned position) tables: a step gathers rows of them, it does not read them whole."""
        return (self.vocab + self.positions) * self.hidden

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Every parameter, embeddings and LM head included (what model cards quote)."""
        return self.layers * self.layer_params + self.embedding_params + self.lm_head_params + self.norm_params

    @property
    def active_params(self) -> int:
        """Parameters one token uses (mixture-of-experts: only its experts)."""
        inactive = (self.experts - self.experts_per_token) * self.expert_params * self.layers
        return self.params - inactive


def _require(cfg: dict[str, Any], where: str, *names: str) -> Any:
    for n in names:
        if n in cfg and cfg[n] is not None:
            return cfg[n]
    raise ModelConfigError(f"{where}: missing field {names[0]!r}" + (f" (or {', '.join(map(repr, names[1:]))})"
                                                                      if len(names) > 1 else ""))


def _positive_int(value: Any, where: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"{where}: field {field!r} must be a positive integer, got {value!r}")
    return value


def parse_config(cfg: Any, name: str, where: str | None = None) -> ModelConfig:
    """A :class:`ModelConfig` from a Hugging Face config dict; errors name the field."""
    where = where or name
    if not isinstance(cfg, dict):
        raise ModelConfigError(f"{where}: a config must be a JSON object, got {type(cfg).__name__}")
    if cfg.get("is_encoder_decoder"):
        raise ModelConfigError(f"{where}: field 'is_encoder_decoder' is true: not a decoder-only transformer")
    mtype = str(cfg.get("model_type", ""))
    archs = [str(a) for a in cfg.get("architectures") or []]
    if mtype.lower() in ENCODER_TYPES or any(ENCODER_ARCHITECTURES.search(a) and "CausalLM" not in a for a in archs):
        raise ModelConfigError(f"{where}: field 'model_type'/'architectures' ({mtype or ', '.join(archs)}) is not a "
                               "decoder-only transformer")
    hidden = _positive_int(_require(cfg, where, "hidden_size", "n_embd", "d_model"), where, "hidden_size")
    layers = _positive_int(_require(cfg, where, "num_hidden_layers", "n_layer", "num_layers"), where, "num_hidden_layers")
    heads = _positive_int(_require(cfg, where, "num_attention_heads", "n_head"), where, "num_attention_heads")
    kv_heads = _positive_int(cfg.get("num_key_value_heads") or heads, where, "num_key_value_heads")
    if heads % kv_heads:
        raise ModelConfigError(f"{where}: field 'num_key_value_heads' ({kv_heads}) must divide num_attention_heads ({heads})")
    head_dim = cfg.get("head_dim") or hidden // heads
    head_dim = _positive_int(head_dim, where, "head_dim")
    gpt2 = mtype.lower() in GPT2_TYPES
    if gpt2 and cfg.get("n_inner") is None and cfg.get("intermediate_size") is None:
        inter = 4 * hidden
    else:
        inter = _positive_int(_require(cfg, where, "intermediate_size", "n_inner", "ffn_dim"), where,
                              "intermediate_size")
    vocab = _positive_int(_require(cfg, where, "vocab_size"), where, "vocab_size")
    act = str(cfg.get("hidden_act", cfg.get("activation_function", "")))
    gated = mtype.lower() in GATED_MLP_TYPES or act in ("silu", "swiglu")
    experts = _positive_int(cfg.get("num_local_experts") or cfg.get("num_experts") or 1, where, "num_local_experts")
    per_tok = _positive_int(cfg.get("num_experts_per_tok") or 1, where, "num_experts_per_tok")
    shared = 0
    if experts > 1 and cfg.get("moe_intermediate_size") is not None:  # Qwen-MoE: intermediate_size is the dense width
        inter = _positive_int(cfg["moe_intermediate_size"], where, "moe_intermediate_size")
        if cfg.get("shared_expert_intermediate_size"):
            shared = _positive_int(cfg["shared_expert_intermediate_size"], where, "shared_expert_intermediate_size")
    if per_tok > experts:
        raise ModelConfigError(f"{where}: field 'num_experts_per_tok' ({per_tok}) exceeds num_local_experts ({experts})")
    bias = bool(cfg.get("attention_bias", mtype.lower() in QKV_BIAS_TYPES))
    tied = cfg.get("tie_word_embeddings")
    tied = mtype.lower() in TIED_BY_DEFAULT_TYPES if tied is None else bool(tied)
    positions = _positive_int(_require(cfg, where, "n_positions", "n_ctx"), where, "n_positions") if gpt2 else 0
    return ModelConfig(name=name, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                       intermediate=inter, vocab=vocab, tied_embeddings=tied, gated_mlp=gated, qkv_bias=bias,
                       experts=experts, experts_per_token=per_tok, shared_intermediate=shared,
                       linear_bias=gpt2, norm_bias=gpt2,
                       positions=positions)


@lru_cache(maxsize=1)
def builtin_configs() -> dict[str, dict[str, Any]]:
    text = resources.files(__package__).joinpath("builtin_models.json").read_text()
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


def _key(name: str) -> str:
    """Separators dropped, so llama-3-8b, "Llama 3 8B", llama_3_8b and llama3-8b are one model."""
    return re.sub(r"[^a-z0-9.]+", "", name.lower())


def load_model(model: str | Path | ModelConfig) -> ModelConfig:
    """A built-in model by name (``llama-3-8b``, case and separators free) or a config.json path."""
    if isinstance(model, ModelConfig):
        return model
    builtins = {_key(k): k for k in builtin_configs()}
    if isinstance(model, str) and _key(model) in builtins:
        name = builtins[_key(model)]
        return parse_config(builtin_configs()[name], name)
    path = Path(model)
    if not path.exists():
        raise ModelConfigError(f"{model}: neither a built-in model ({', '.join(builtin_configs())}) nor a config file")
    if path.is_dir():
        path = path / "config.json"
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelConfigError(f"{path}: not a readable JSON config ({exc})") from None
    # a Hugging Face folder's config.json is named by its folder; any other file by its own name
    name = path.parent.name if path.name == "config.json" else path.name.removesuffix(".json").removesuffix(".config")
    return parse_config(cfg, (cfg.get("_name_or_path") if isinstance(cfg, dict) else None) or name or path.stem,
                        where=str(path))
