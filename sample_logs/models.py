"""The weights the stories serve: DeepSeek-V3 and its EAGLE-3 draft, and Llama-architecture models."""

from __future__ import annotations

from .config import MLA_KV_BYTES, Model

V3 = Model(
    path="/models/DeepSeek-V3",
    arch="DeepseekV3ForCausalLM",
    role="target",
    weights_gb=61.87,
    load_seconds=600.0,
    shards=163,
    kv_bytes_per_token=MLA_KV_BYTES,
    mla=True,
    graph_seconds=32.0,
    graph_gb=1.27,
)
V3_EAGLE3 = Model(
    path="/models/DeepSeek-V3-EAGLE3",
    arch="LlamaForCausalLMEagle3",
    role="draft",
    weights_gb=1.21,
    load_seconds=9.0,
    shards=1,
    kv_bytes_per_token=2 * 128 * 2,
    mla=False,
    graph_seconds=14.0,
    graph_gb=0.38,
)


def llama(path: str, weights_gb: float, kv_bytes: int, shards: int, load_seconds: float) -> Model:
    return Model(
        path=path,
        arch="LlamaForCausalLM",
        role="target",
        weights_gb=weights_gb,
        load_seconds=load_seconds,
        shards=shards,
        kv_bytes_per_token=kv_bytes,
        mla=False,
        graph_seconds=11.0,
        graph_gb=0.52,
    )
