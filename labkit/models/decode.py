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
cache preallocated for the whole rollout (written in place, never concatenated). The prompt
goes through the same equations once per distinct prompt (:meth:`LlamaDecoder.prefill`: a causal
mask that skips left padding, the LM head on the last position only, the keys and values copied
to each of the prompt's rows); HF's prompt forward (``labkit.models.prefix.prompt_forward``) spends
most of its time building masks and caches on such small batches. Everything else (LoRA, other
architectures, autocast, a rope scaling) takes HF's forward for the prompt and
:class:`HFDecoder` for the steps. The two agree to float32 rounding (``tests/test_decode.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from labkit.models import prefix


class HFDecoder:
    """``decoder(tok [B], pos [B]) -> logits [B, V]``: HF's forward with its ``past``."""

    def __init__(self, model, past, attn: torch.Tensor):
        self.model, self.past, self.attn = model, past, attn  # attn [B, P] 1 = a real token

    def __call__(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.attn = torch.cat([self.attn, self.attn.new_ones(self.attn.shape[0], 1)], 1)
        out = self.model(
            input_ids=tok[:, None],
            attention_mask=self.attn,
            position_ids=pos[:, None],
            **prefix.with_cache(self.model, self.past),
            use_cache=True,
        )
        self.past = prefix.cache_of(out)
        return out.logits[:, -1]  # [B, V]


class LlamaDecoder:
    """The lean step for a plain Llama (module docstring): :meth:`prefill`, then one call per
    new token. ``attn`` [B, P] is the prompts' attention mask (1 = a real token)."""

    def __init__(self, model, attn: torch.Tensor, max_new_tokens: int):
        cfg, body = model.config, model.model
        self.H, self.KV, self.D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.eps, self.lm_head = cfg.rms_norm_eps, model.lm_head.weight
        self.embed, self.norm = body.embed_tokens.weight, body.norm.weight
        self.inv_freq, self.scale = body.rotary_emb.inv_freq, body.rotary_emb.attention_scaling
        self.layers = [
            (
                layer.input_layernorm.weight,
                torch.cat(
                    [
                        layer.self_attn.q_proj.weight,
                        layer.self_attn.k_proj.weight,
                        layer.self_attn.v_proj.weight,
                    ]
                ).T,  # [hidden, (H+2KV) D]
                layer.self_attn.o_proj.weight.T,
                layer.post_attention_layernorm.weight,
                torch.cat([layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight]).T,
                layer.mlp.down_proj.weight.T,
            )
            for layer in body.layers
        ]
        B, P = attn.shape
        self.S = P + max_new_tokens  # cache slots: the prompt, then one per new token
        self.cache = [
            (
                self.embed.new_zeros(B, self.KV, self.S, self.D),  # K [B, KV, S, D]
                self.embed.new_zeros(B, self.KV, self.S, self.D),
            )
            for _ in self.layers
        ]
        self.keep = torch.zeros(B, 1, 1, self.S, dtype=torch.bool, device=attn.device)
        self.keep[:, 0, 0, :P] = attn.bool()  # [B, 1, 1, S] keys a query may see
        self.n = P  # slots filled

    def _rope(self, pos: torch.Tensor, dtype: torch.dtype):
        freqs = pos[..., None].float() * self.inv_freq.float()  # [..., D/2], in fp32 as HF does
        emb = torch.cat([freqs, freqs], -1)  # [..., D]
        return (emb.cos() * self.scale).to(dtype), (emb.sin() * self.scale).to(dtype)

    def _rotate(self, qk: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = self.D // 2
        return qk * cos + torch.cat([-qk[..., half:], qk[..., :half]], -1) * sin

    def prefill(
        self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, shared=None
    ) -> torch.Tensor:
        """Run the left-padded prompts [B, P] into the cache, each distinct prompt once
        (``shared``: :func:`labkit.models.prefix.distinct_prompts` of them, when the caller has
        it): logits [B, V] that predict each row's first new token."""
        shared = shared or prefix.distinct_prompts(prompt_ids, prompt_mask)
        ids, mask, index = (prompt_ids, prompt_mask, None) if shared is None else shared
        H, KV, D, (U, P) = self.H, self.KV, self.D, ids.shape
        x = F.embedding(ids, self.embed)  # [U, P, hidden]
        cos, sin = (c[:, None] for c in self._rope((mask.cumsum(-1) - 1).clamp(min=0), x.dtype))
        see = prefix.packed_mask(mask, mask.new_zeros(U, 0, 0))  # [U, 1, P, P]: a packed row
        # with no completions is the causal mask over the prompt (a padded query sees itself)
        last = len(self.layers) - 1
        for i, ((w_in, w_qkv, w_o, w_post, w_gu, w_down), (K, V)) in enumerate(
            zip(self.layers, self.cache)
        ):
            h = F.rms_norm(x, (x.shape[-1],), w_in, self.eps)  # [U, P, hidden]
            qkv = (h @ w_qkv).view(U, P, H + 2 * KV, D).transpose(1, 2)  # [U, H+2KV, P, D]
            qk, v = self._rotate(qkv[:, : H + KV], cos, sin), qkv[:, H + KV :]
            q, k = qk[:, :H], qk[:, H:]  # [U, H, P, D], [U, KV, P, D]
            K[:, :, :P], V[:, :, :P] = (k, v) if index is None else (k[index], v[index])
            if i == last:  # only the last position goes on to the LM head
                q, see, x = q[:, :, -1:], see[:, :, -1:], x[:, -1:]
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=see, enable_gqa=KV != H)
            x = x + o.transpose(1, 2).reshape(U, -1, H * D) @ w_o  # [U, P or 1, hidden]
            g, u = (F.rms_norm(x, (x.shape[-1],), w_post, self.eps) @ w_gu).chunk(2, -1)
            x = x + (F.silu(g) * u) @ w_down
        logits = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.eps) @ self.lm_head.T
        return logits if index is None else logits[index]  # [B, V]

    def __call__(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        H, KV, D, s = self.H, self.KV, self.D, self.n
        x = F.embedding(tok, self.embed)  # [B, hidden]
        cos, sin = (c[:, None] for c in self._rope(pos, x.dtype))  # [B, 1, D]
        self.keep[:, 0, 0, s] = True
        keep = self.keep[..., : s + 1]  # [B, 1, 1, s+1]
        for (w_in, w_qkv, w_o, w_post, w_gu, w_down), (K, V) in zip(self.layers, self.cache):
            h = F.rms_norm(x, (x.shape[-1],), w_in, self.eps)  # [B, hidden]
            q, k, v = (h @ w_qkv).view(-1, H + 2 * KV, D).split([H, KV, KV], 1)  # [B, *, D]
            qk = self._rotate(torch.cat([q, k], 1), cos, sin)  # [B, H+KV, D]: both at once
            K[:, :, s], V[:, :, s] = qk[:, H:], v  # the new key and value, in place
            o = F.scaled_dot_product_attention(
                qk[:, :H, None],
                K[:, :, : s + 1],
                V[:, :, : s + 1],
                attn_mask=keep,
                enable_gqa=KV != H,
            )  # [B, H, 1, D]
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
    return (
        rope == "default"
        and not cfg.attention_bias
        and not cfg.mlp_bias
        and cfg.hidden_act == "silu"
        and getattr(cfg, "pretraining_tp", 1) == 1
        and p.dtype in (torch.float32, torch.float64)
        and not autocast
    )


def decoder(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, max_new_tokens: int):
    """Run the prompts (each distinct one once) and return ``(step, logits [B, V])``: the step
    function for sampling ``max_new_tokens`` more tokens (lean when :func:`lean_ok`, else HF's)
    and the logits of each row's first new token."""
    if lean_ok(model):
        step = LlamaDecoder(model, prompt_mask, max_new_tokens)
        return step, step.prefill(prompt_ids, prompt_mask)
    past, logits, _ = prefix.prompt_forward(model, prompt_ids, prompt_mask)
    return HFDecoder(model, past, prompt_mask), logits
