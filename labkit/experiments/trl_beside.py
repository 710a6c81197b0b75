"""The same batch through TRL's own code and labkit's: the GRPO-family losses, the k3 KL term and
group advantages (DPO's losses: ``trl_beside_dpo``); each side's value and its gradient w.r.t.
the log-probs.

TRL's side runs TRL's methods on a trainer that TRL built from its own config; no TRL code is
copied here. Only the one call that turns a model into log-probs is answered from the batch, so
both sides differentiate the same log-prob tensor:

    GRPO        ``GRPOTrainer._compute_loss``, its ``_get_per_token_logps_and_entropies``
                answering with the batch's log-probs (entropies 0: TRL only logs them here).
    advantages  ``GRPOTrainer._generate_and_score_completions``, TRL's only advantage code: the
                tiny policy generates, a reward function answers with the batch's rewards.

Batches are synthetic, a new shape per seed: the losses see log-prob tensors only, so where
they come from does not matter to this check. Log-probs from a transformer's logits, and the
gradient w.r.t. its parameters, are checked in ``tests/test_core_trl_parity.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import tempfile
import warnings
from unittest import mock

import pandas as pd
import torch

from labkit.core import group_advantages, policy_loss

T_MAX = 16
"""The widest completion of a batch."""
MAX_COMPLETION_LENGTH = 24
"""TRL's ``max_completion_length`` (Dr. GRPO's L_max): wider than any batch, so it is not T."""
OFF_POLICY = 0.3
"""std of log pi_old - log pi_theta per token: ratios e^{+-0.3} reach past 1 +- eps."""
PROMPT = "12+34="


@dataclasses.dataclass
class Batch:
    """One GRPO batch: B = groups x G completions of up to T tokens, right-padded (as TRL pads
    completions). Padding holds finite nonsense: both sides must ignore it."""

    logp: torch.Tensor  # [B, T] log pi_theta of the sampled tokens (what both differentiate)
    old_logp: torch.Tensor  # [B, T] log pi_old
    ref_logp: torch.Tensor  # [B, T] log pi_ref
    mask: torch.Tensor  # [B, T] long, 1 on completion tokens
    rewards: torch.Tensor  # [B]
    num_generations: int  # G
    num_items_in_batch: torch.Tensor  # [] tokens of the whole generation batch (dapo, cispo)

    @property
    def advantages(self) -> torch.Tensor:
        """GRPO's group z-scores of the rewards, [B]: the same advantages go into both losses."""
        return group_advantages(self.rewards, self.num_generations)


@dataclasses.dataclass
class Side:
    """One implementation's answer on a batch."""

    value: torch.Tensor  # the loss [] or the advantages [B]
    grad: torch.Tensor | None  # d loss / d logp, shaped like logp; None for advantages
    stats: dict  # what else the side reports: kl, clip fraction (floats)


def draw(g: torch.Generator, low: int, high: int) -> int:
    """An integer in [low, high)."""
    return int(torch.randint(low, high, (), generator=g))


def make_batch(seed: int) -> Batch:
    """A GRPO batch of random shape: G in {2, 4, 8}, 2-5 groups, 3-16 tokens, some rows short,
    ratios away from 1, rewards in {0, 0.5, 1} with ties and one all-equal group.

    >>> b = make_batch(0)
    >>> b.logp.shape == b.mask.shape and b.rewards.numel() % b.num_generations == 0
    True
    """
    g = torch.Generator().manual_seed(seed)
    G = (2, 4, 8)[draw(g, 0, 3)]
    B, T = draw(g, 2, 6) * G, draw(g, 3, T_MAX + 1)
    lengths = torch.randint(1, T + 1, (B,), generator=g)  # [B]
    mask = (torch.arange(T) < lengths[:, None]).long()  # [B, T]
    logp = -torch.empty(B, T).exponential_(generator=g)  # [B, T], log-probs < 0
    old_logp = logp + OFF_POLICY * torch.randn(B, T, generator=g)  # [B, T]
    ref_logp = logp + 0.5 * torch.randn(B, T, generator=g)  # [B, T]
    rewards = torch.randint(0, 3, (B,), generator=g) / 2  # [B]
    rewards[:G] = 1.0  # one all-equal group: std 0, advantages 0
    n = mask.sum() + draw(g, 0, B * T)  # as if the generation batch were larger
    return Batch(logp, old_logp, ref_logp, mask, rewards, G, n)


@contextlib.contextmanager
def quiet():
    """No progress bars or FutureWarnings while TRL loads the tiny policy, maps its one-row
    dataset, precomputes reference log-probs or samples (transformers' deprecation notices,
    reached through TRL, are not this lab's business)."""
    import datasets
    from transformers.utils import logging

    bars = datasets.is_progress_bar_enabled(), logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    logging.disable_progress_bar()
    try:
        with mock.patch.dict(os.environ, {"TQDM_DISABLE": "1"}), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        if bars[0]:
            datasets.enable_progress_bars()
        if bars[1]:
            logging.enable_progress_bar()


@functools.cache
def _output_dir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="labkit-trl-")  # TRL writes nothing; gone at exit


def common_args() -> dict:
    """TRL config fields for a CPU trainer that never trains."""
    return {
        "output_dir": _output_dir().name,
        "bf16": False,
        "use_cpu": True,
        "report_to": [],
        "activation_checkpointing": False,
        "disable_tqdm": True,
    }


class GivenRewards:
    """A reward function in TRL's signature that answers with the rewards it was handed."""

    __name__ = "given_rewards"  # TRL names each reward function's metrics after it

    def __init__(self) -> None:
        self.rewards: list[float] = []

    def __call__(self, completions, **kwargs) -> list[float]:
        return list(self.rewards)


@functools.cache
def _grpo_trainer(G: int, cfg: tuple, max_completion_length: int):
    """A TRL GRPOTrainer on the tiny policy, from GRPOConfig fields ``cfg`` (sorted items);
    its one reward function is a :class:`GivenRewards`."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from labkit.models.policy import BUILTIN, load_policy

    args = GRPOConfig(
        per_device_train_batch_size=G,
        num_generations=G,
        max_completion_length=max_completion_length,
        **dict(cfg),
        **common_args(),
    )
    with quiet():
        trainer = GRPOTrainer(
            model=str(BUILTIN["tiny"]),
            reward_funcs=GivenRewards(),
            args=args,
            train_dataset=Dataset.from_dict({"prompt": [PROMPT]}),
            processing_class=load_policy("tiny")[1],
        )
    trainer.current_gradient_accumulation_steps = 1  # Trainer's loop sets it; one micro-batch
    trainer.model.train()
    return trainer


def last_metrics(trainer) -> dict:
    """The metrics TRL logged on the last call, then forgotten."""
    metrics = trainer._metrics["train"]
    out = {k: v[-1] for k, v in metrics.items() if v}
    metrics.clear()
    return out


def grpo_trl(batch: Batch, **cfg) -> Side:
    """TRL's ``GRPOTrainer._compute_loss`` on ``batch``; ``cfg``: GRPOConfig fields
    (``loss_type``, ``beta``, ``epsilon``, ``epsilon_high``, ``importance_sampling_level``,
    ``use_bias_correction_kl``)."""
    trainer = _grpo_trainer(
        batch.num_generations, tuple(sorted(cfg.items())), MAX_COMPLETION_LENGTH
    )
    logp = batch.logp.clone().requires_grad_()  # [B, T]
    B, T = logp.shape
    ids = torch.ones(B, T, dtype=torch.long)  # [B, T] token ids: unused, the log-probs are given
    inputs = {
        "prompt_ids": ids[:, :1],
        "prompt_mask": ids[:, :1],
        "completion_ids": ids,
        "completion_mask": batch.mask,
        "advantages": batch.advantages,
        "old_per_token_logps": batch.old_logp,
        "ref_per_token_logps": batch.ref_logp,
        "num_items_in_batch": batch.num_items_in_batch,
    }
    given = (logp, torch.zeros_like(logp), None)  # (log-probs, entropies, MoE aux loss)
    with mock.patch.object(trainer, "_get_per_token_logps_and_entropies", return_value=given):
        loss = trainer._compute_loss(trainer.model, inputs)
    (grad,) = torch.autograd.grad(loss, logp)
    m = last_metrics(trainer)
    clipped = m.get("cispo_clip_ratio", m.get("clip_ratio/region_mean"))
    return Side(loss.detach(), grad, {"kl": m.get("kl"), "clipped": clipped})


def grpo_labkit(batch: Batch, **cfg) -> Side:
    """labkit's ``policy_loss`` on ``batch``, from the GRPOConfig fields of :func:`grpo_trl`."""
    cfg = dict(cfg)
    beta = cfg.pop("beta", 0.0)
    kl_is_correction = cfg.pop("use_bias_correction_kl", True)
    logp = batch.logp.clone().requires_grad_()  # [B, T]
    loss, st = policy_loss(
        logp,
        batch.old_logp,
        batch.advantages,
        batch.mask,
        max_completion_length=MAX_COMPLETION_LENGTH,
        ref_logp=batch.ref_logp,
        beta=beta,
        kl_is_correction=kl_is_correction,
        num_items_in_batch=batch.num_items_in_batch,
        **cfg,
    )
    (grad,) = torch.autograd.grad(loss, logp)
    clipped = st["clip/ratio_high" if cfg.get("loss_type") == "cispo" else "clip/region"]
    kl = st["kl"].item() if beta else None  # TRL logs the KL only when beta > 0
    return Side(loss.detach(), grad, {"kl": kl, "clipped": clipped.item()})


def per_token(batch: Batch, theirs: Side, ours: Side) -> pd.DataFrame:
    """One row per real token of ``batch``: its sequence and position, ratio and advantage, and
    each side's d loss / d log pi_theta with their difference."""
    i, t = batch.mask.nonzero(as_tuple=True)  # [N], [N]
    return pd.DataFrame(
        {
            "seq": i,
            "t": t,
            "ratio": (batch.logp - batch.old_logp).exp()[i, t],
            "A": batch.advantages[i],
            "dL/dlogp TRL": theirs.grad[i, t],
            "dL/dlogp labkit": ours.grad[i, t],
            "|diff|": (theirs.grad - ours.grad).abs()[i, t],
        }
    )


def advantages_trl(batch: Batch, scale_rewards: str = "group") -> Side:
    """TRL's advantages of ``batch.rewards`` from ``_generate_and_score_completions``: the tiny
    policy samples B completions of one prompt, scored by a reward that returns those rewards."""
    cfg = (("scale_rewards", scale_rewards),)
    trainer = _grpo_trainer(batch.num_generations, cfg, 2)  # two sampled tokens: nothing reads them
    trainer.reward_funcs[0].rewards = batch.rewards.tolist()
    B = batch.rewards.numel()
    with quiet():
        out = trainer._generate_and_score_completions([{"prompt": PROMPT}] * B)
    last_metrics(trainer)
    return Side(out["advantages"], None, {})


def advantages_labkit(batch: Batch, scale_rewards: str = "group") -> Side:
    """labkit's ``group_advantages`` of ``batch.rewards``."""
    return Side(group_advantages(batch.rewards, batch.num_generations, scale_rewards), None, {})


def trl_loss_types(config) -> tuple[str, ...]:
    """The loss types a TRL config class (``GRPOConfig``, ``DPOConfig``) lists in the help of
    its ``loss_type`` field, the one place TRL declares them."""
    help_text = {f.name: f for f in dataclasses.fields(config)}["loss_type"].metadata["help"]
    listed = re.search(r"(?:Supported|Possible) values are:? (.*?)\.", help_text)
    return tuple(re.findall(r"'(\w+)'", listed.group(1)))
