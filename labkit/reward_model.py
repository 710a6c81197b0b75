"""A Bradley-Terry reward model: the policy's network with a scalar head, trained on pairs.

r_phi(x, y) = w^T h_last + b, h_last the last hidden state at the final token (eos) of x + y;
trained with ``labkit.core.bradley_terry_loss``: L = -log sigma(r(x, y_w) - r(x, y_l))
(InstructGPT 2203.02155 eq. 1; TRL's RewardTrainer). :meth:`RewardModel.as_reward` turns it into
a reward function with TRL's signature, so GRPO or PPO can optimise it: stage 2 of RLHF.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

import torch
from tqdm.auto import tqdm

from labkit.config import _require
from labkit.core import bradley_terry_loss
from labkit.models import load_policy
from labkit.runlog import RunLog
from labkit.sft import sft_batch


@dataclass
class RewardModelConfig:
    """Hyperparameters of reward-model training."""

    learning_rate: float = 3e-4
    batch_size: int = 32
    """Pairs per step."""
    max_steps: int = 200
    max_grad_norm: float = 1.0
    seed: int = 0

    def __post_init__(self):
        _require(self.learning_rate > 0, f"learning_rate={self.learning_rate}: use a value > 0")
        _require(self.batch_size >= 1, f"batch_size={self.batch_size}: use 1 or more")
        _require(self.max_steps >= 1, f"max_steps={self.max_steps}: use 1 or more")

    def to_dict(self) -> dict:
        return asdict(self)


class RewardModel(torch.nn.Module):
    """``RewardModel("tiny")``: a causal LM trunk (its own copy) and a linear scalar head."""

    def __init__(self, model="tiny", tokenizer=None):
        super().__init__()
        if isinstance(model, str):
            model, tokenizer = load_policy(model)
        self.lm, self.tokenizer = model, tokenizer
        self.head = torch.nn.Linear(model.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, prompts: list[str], completions: list[str]) -> torch.Tensor:
        """r(x, y) for each (prompt, completion + eos): [B]."""
        b = sft_batch(self.tokenizer, list(zip(prompts, completions)))
        ids = torch.cat([b.prompt_ids, b.completion_ids], 1)  # [B, P+T]
        attn = torch.cat([b.prompt_mask, b.completion_mask], 1)  # [B, P+T]
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        h = self.lm(input_ids=ids, attention_mask=attn, position_ids=pos,
                    output_hidden_states=True).hidden_states[-1]  # [B, P+T, H]
        last = b.prompt_ids.shape[1] + b.lengths - 1  # [B] the eos position
        return self.head(h[torch.arange(len(prompts)), last]).squeeze(-1)  # [B]

    def pair_scores(self, pairs: list[dict]):
        """(r(x, y_w) [B], r(x, y_l) [B]) of preference pairs."""
        prompts = [p["prompt"] for p in pairs] * 2
        texts = [p["chosen"] for p in pairs] + [p["rejected"] for p in pairs]
        return self(prompts, texts).chunk(2)

    @torch.no_grad()
    def accuracy(self, pairs: list[dict], batch_size: int = 256) -> float:
        """Fraction of pairs ranked right: r(x, y_w) > r(x, y_l)."""
        self.eval()
        hits = 0
        for i in range(0, len(pairs), batch_size):
            w, lo = self.pair_scores(pairs[i:i + batch_size])
            hits += (w > lo).sum().item()
        return hits / len(pairs)

    def as_reward(self, name: str = "reward_model"):
        """A reward function ``fn(completions, prompts, **kw) -> list[float]`` (TRL's signature)."""

        @torch.no_grad()
        def reward(completions, prompts, **kwargs):
            self.eval()
            return self(list(prompts), list(completions)).tolist()

        reward.__name__ = name
        return reward


def train_reward_model(pairs: list[dict], model="tiny", tokenizer=None, heldout=None,
                       config: RewardModelConfig | None = None, progress: bool = True, **kw):
    """Fit a :class:`RewardModel` on pairs with the Bradley-Terry loss: (rm, RunLog).

    The log's metrics: ``loss``, ``accuracy``, ``margin`` (batch), and ``heldout/accuracy`` every
    20 steps and at the end when ``heldout`` pairs are given.
    """
    c = config or RewardModelConfig(**kw)
    torch.manual_seed(c.seed)
    rm = RewardModel(model, tokenizer)
    opt = torch.optim.AdamW(rm.parameters(), lr=c.learning_rate, weight_decay=0.0)
    rng, log = random.Random(c.seed), RunLog(None, {**c.to_dict(), "algorithm": "reward_model"})
    for step in tqdm(range(1, c.max_steps + 1), desc="reward model", disable=not progress):
        rm.train()
        w, lo = rm.pair_scores([rng.choice(pairs) for _ in range(c.batch_size)])
        loss, stats = bradley_terry_loss(w, lo)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(rm.parameters(), c.max_grad_norm)
        opt.step()
        m = {"step": step, **{k: float(v) for k, v in stats.items()}}
        if heldout and (step % 20 == 0 or step == c.max_steps):
            m["heldout/accuracy"] = rm.accuracy(heldout)
        log.log("metrics", [m])
    return rm, log
