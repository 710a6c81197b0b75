"""DPO's loss through TRL's own code and labkit's, on the same pairs of log-probs.

TRL's side is ``DPOTrainer._compute_loss`` on a trainer TRL built from its ``DPOConfig``; the
model it calls is a stand-in that answers as TRL's fused LM head does (``FusedCausalLMOutput``,
each next-token log-prob, 0 where the label is -100), with the pairs' log-probs, and the
reference log-probs come precomputed, as ``precompute_ref_log_probs=True`` has them. See
``labkit.experiments.trl_beside`` for the GRPO side and why the batches are synthetic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from labkit.core import dpo_loss
from labkit.experiments.trl_beside import (
    PROMPT,
    T_MAX,
    Side,
    common_args,
    draw,
    last_metrics,
    quiet,
)


@dataclass
class Pairs:
    """P preference pairs laid out as TRL's DPO collator does: P chosen rows, then P rejected."""

    logp: torch.Tensor  # [2P, L - 1] log-prob of each next token (the leaf both differentiate)
    completion_mask: torch.Tensor  # [2P, L] long, 1 on completion tokens
    ref_chosen: torch.Tensor  # [P] summed reference log-probs
    ref_rejected: torch.Tensor  # [P]


def make_pairs(seed: int) -> Pairs:
    """2-8 pairs of prompt + completion + padding, 4-16 positions wide.

    >>> p = make_pairs(0)
    >>> p.logp.shape[0] == p.completion_mask.shape[0] == 2 * p.ref_chosen.numel()
    True
    """
    g = torch.Generator().manual_seed(seed)
    P, L = draw(g, 2, 9), draw(g, 4, T_MAX + 1)
    start = torch.randint(1, 3, (2 * P, 1), generator=g)  # [2P, 1] prompt tokens
    length = torch.randint(1, L - 2, (2 * P, 1), generator=g)  # [2P, 1] completion tokens
    pos = torch.arange(L)  # [L]
    completion_mask = ((pos >= start) & (pos < start + length)).long()  # [2P, L]
    logp = -torch.empty(2 * P, L - 1).exponential_(generator=g)  # [2P, L - 1]
    ref = (logp + 0.5 * torch.randn(2 * P, L - 1, generator=g)) * completion_mask[:, 1:]
    ref_chosen, ref_rejected = ref.sum(1).chunk(2)  # [P], [P]
    return Pairs(logp, completion_mask, ref_chosen, ref_rejected)


@functools.cache
def _dpo_trainer(loss_type: str, beta: float):
    """A TRL DPOTrainer on the tiny policy that takes reference log-probs from its inputs."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    from labkit.models.policy import BUILTIN, load_policy

    args = DPOConfig(
        loss_type=[loss_type], beta=beta, precompute_ref_log_probs=True, **common_args()
    )
    pairs = Dataset.from_dict({"prompt": [PROMPT], "chosen": ["46"], "rejected": ["47"]})
    with quiet():
        trainer = DPOTrainer(
            model=str(BUILTIN["tiny"]),
            args=args,
            train_dataset=pairs,
            processing_class=load_policy("tiny")[1],
        )
    trainer.model.train()
    return trainer


def dpo_trl(pairs: Pairs, loss_type: str = "sigmoid", beta: float = 0.1) -> Side:
    """TRL's ``DPOTrainer._compute_loss`` on ``pairs``; the model it calls is a stand-in that
    answers as TRL's fused LM head does, with the pairs' log-probs."""
    from trl.trainer.utils import FusedCausalLMOutput

    trainer = _dpo_trainer(loss_type, beta)
    logp = pairs.logp.clone().requires_grad_()  # [2P, L - 1]

    def fused_lm_head(*, labels, **kwargs) -> FusedCausalLMOutput:
        scored = labels[:, 1:] != -100  # [2P, L - 1] next tokens that are completion tokens
        zeros = torch.zeros_like(logp)  # entropy, mean logits, top-1 hits: only logged
        return FusedCausalLMOutput(
            log_probs=logp.masked_fill(~scored, 0.0),
            entropy=zeros,
            mean_logits=zeros,
            is_top1=torch.zeros_like(scored),
        )

    ids = torch.ones_like(pairs.completion_mask)  # [2P, L] token ids: unused
    inputs = {
        "input_ids": ids,
        "attention_mask": ids,
        "completion_mask": pairs.completion_mask,
        "ref_chosen_logps": pairs.ref_chosen,
        "ref_rejected_logps": pairs.ref_rejected,
    }
    loss = trainer._compute_loss(fused_lm_head, inputs, return_outputs=False)
    (grad,) = torch.autograd.grad(loss, logp)
    return Side(loss.detach(), grad, {"margin": last_metrics(trainer)["rewards/margins"]})


def dpo_labkit(pairs: Pairs, loss_type: str = "sigmoid", beta: float = 0.1) -> Side:
    """labkit's ``dpo_loss`` on ``pairs``: summed log-probs (IPO: their mean over the completion,
    as TRL feeds IPO)."""
    logp = pairs.logp.clone().requires_grad_()  # [2P, L - 1]
    scored = pairs.completion_mask[:, 1:]  # [2P, L - 1]
    n = scored.sum(1).clamp(min=1) if loss_type == "ipo" else torch.ones(len(scored))  # [2P]
    seq = torch.where(scored.bool(), logp, 0.0).sum(1) / n  # [2P]
    ref = torch.cat([pairs.ref_chosen, pairs.ref_rejected]) / n  # [2P]
    loss, st = dpo_loss(*seq.chunk(2), *ref.chunk(2), beta=beta, loss_type=loss_type)
    (grad,) = torch.autograd.grad(loss, logp)
    return Side(loss.detach(), grad, {"margin": st["rewards/margins"].item()})
