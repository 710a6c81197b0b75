"""One decoding step at a time: HF's forward over its KV cache, or a lean loop for plain Llamas.

Sampling calls the model once per new token with a batch of B rows x 1 token. On the CPU such
a call is ~40 small ops per layer inside HF's modules (separate q/k/v and gate/up projections,
rotary and RMSNorm in pieces, a cache that grows by concatenation, a 4-D mask rebuilt per
call), and their fixed costs, not the FLOPs, decide the step's time. For a plain
``LlamaForCausalLM`` (the ``tiny`` policies, SmolLM2) in fp32 or fp64 without autocast,
:class:`LlamaDecoder` runs the same equations over the same weights in ~15 ops per layer:

    h = RMSNorm(x);  [q k v] = h W_qkv^T;  q, k = RoPE(q), RoPE(k);  K[:, :, s] = k, V[:, :, s] = v
    x = x + softmax(q K^T / sqrt(d) + mask) V W_o^T
    h = RMSNorm(x);  [g u] = h W_gu^T;  x = x + (silu(g) * u) W_down^T;  logits = RMSNorm(x) W_lm^T

with W_qkv, W_gu stacked once per rollout (the weights do not change while sampling) and the
cache preallocated for the whole rollout (written in place, never concatenated). It starts from
the cache HF's prompt forward made (``labkit.models.prefix.prompt_forward``). Everything else
(LoRA, other architectures, autocast, a rope scaling) takes :class:`HFDecoder`. The two agree to
rounding (float64 test: ``tests/test_decode.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class HFDecoder:
    """``decoder(tok [B], pos [B]) -> logits [B, V]``: HF's forward with its ``past``."""

    def __init__(self, model, past, attn: torch.Tensor):
        self.model, self.past, self.attn = model, past, attn  # attn [B, P] 1 = a real token

    def __call__(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.attn = torch.cat([self.attn, self.attn.new_ones(self.attn.shape[0], 1)], 1)
        out = self.model(input_ids=tok[:, None], attention_mask=self.attn,
                         position_ids=pos[:, None], past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        return out.logits[:, -1]  # [B, V]


class LlamaDecoder:
    """The lean step for a plain Llama (module docstring); ``past`` is HF's prompt cache."""

    def __init__(self, model, past, attn: torch.Tensor, max_new_tokens: int):
        cfg, body = model.config, model.model
        self.H, self.KV, self.D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.eps, self.lm_head = cfg.rms_norm_eps, model.lm_head.weight
        self.embed, self.norm = body.embed_tokens.weight, body.norm.weight
        self.inv_freq, self.scale = body.rotary_emb.inv_freq, body.rotary_emb.attention_scaling
        self.layers = [(layer.input_layernorm.weight,
                        torch.cat([layer.self_attn.q_proj.weight, layer.self_attn.k_proj.weight,
                                   layer.self_attn.v_proj.weight]).T,  # [hidden, (H+2KV) D]
                        layer.self_attn.o_proj.weight.T, layer.post_attention_layernorm.weight,
                        torch.cat([layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight]).T,
                        layer.mlp.down_proj.weight.T) for layer in body.layers]
        B, P = attn.shape
        self.S = P + max_new_tokens  # cache slots: the prompt, then one per new token
        self.cache = []
        for layer in past.layers:  # HF's DynamicCache: keys/values [B, KV, P, D]
            k = layer.keys.new_zeros(B, self.KV, self.S, self.D)  # [B, KV, S, D]
            v = torch.zeros_like(k)
            k[:, :, :P], v[:, :, :P] = layer.keys, layer.values
            self.cache.append((k, v))
        self.keep = torch.zeros(B, 1, 1, self.S, dtype=torch.bool, device=attn.device)
        self.keep[:, 0, 0, :P] = attn.bool()  # [B, 1, 1, S] keys a query may see
        self.n = P  # slots filled

    def _rope(self, pos: torch.Tensor, dtype: torch.dtype):
        freqs = pos[:, None].float() * self.inv_freq.float()  # [B, D/2], in fp32 as HF does
        emb = torch.cat([freqs, freqs], -1)[:, None]  # [B, 1, D]
        return (emb.cos() * self.scale).to(dtype), (emb.sin() * self.scale).to(dtype)

    def __call__(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        H, KV, D, s = self.H, self.KV, self.D, self.n
        x = F.embedding(tok, self.embed)  # [B, hidden]
        cos, sin = self._rope(pos, x.dtype)  # [B, 1, D]
        self.keep[:, 0, 0, s] = True
        keep = self.keep[..., :s + 1]  # [B, 1, 1, s+1]
        for (w_in, w_qkv, w_o, w_post, w_gu, w_down), (K, V) in zip(self.layers, self.cache):
            h = F.rms_norm(x, (x.shape[-1],), w_in, self.eps)  # [B, hidden]
            q, k, v = (h @ w_qkv).view(-1, H + 2 * KV, D).split([H, KV, KV], 1)  # [B, *, D]
            qk = torch.cat([q, k], 1)  # [B, H+KV, D]: one rotation for both
            half = D // 2
            qk = qk * cos + torch.cat([-qk[..., half:], qk[..., :half]], -1) * sin
            K[:, :, s], V[:, :, s] = qk[:, H:], v  # the new key and value, in place
            o = F.scaled_dot_product_attention(qk[:, :H, None], K[:, :, :s + 1], V[:, :, :s + 1],
                                               attn_mask=keep, enable_gqa=KV != H)  # [B, H, 1, D]
            x = torch.addmm(x, o.reshape(x.shape[0], -1), w_o)  # x + o W_o^T
            g, u = (F.rms_norm(x, (x.shape[-1],), w_post, self.eps) @ w_gu).chunk(2, -1)
            x = torch.addmm(x, F.silu(g) * u, w_down)  # [B, hidden]
        self.n = s + 1
        return F.rms_norm(x, (x.shape[-1],), self.norm, self.eps) @ self.lm_head.T  # [B, V]


def lean_ok(model) -> bool:
    """Whether :class:`LlamaDecoder` computes what ``model``'s own forward does: a plain
    ``LlamaForCausalLM`` (not wrapped by peft) with default RoPE, no biases, SiLU, fp32/fp64
    weights, and no autocast running."""
    from transformers import LlamaForCausalLM

    if type(model) is not LlamaForCausalLM:
        return False
    cfg, p = model.config, next(model.parameters())
    rope = (getattr(cfg, "rope_parameters", None) or {}).get("rope_type", "default")
    autocast = torch.is_autocast_enabled(p.device.type)
    return (rope == "default" and not cfg.attention_bias and not cfg.mlp_bias
            and cfg.hidden_act == "silu" and getattr(cfg, "pretraining_tp", 1) == 1
            and p.dtype in (torch.float32, torch.float64) and not autocast)


def decoder(model, past, attn: torch.Tensor, max_new_tokens: int):
    """The step function for sampling ``max_new_tokens`` more tokens after the prompt cache
    ``past`` (attention mask ``attn`` [B, P]): lean when :func:`lean_ok`, else HF's."""
    if lean_ok(model):
        return LlamaDecoder(model, past, attn, max_new_tokens)
    return HFDecoder(model, past, attn)
