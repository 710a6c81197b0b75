"""DPO on preference pairs (Rafailov et al. 2023, 2305.18290), given or built from rollouts.

One step: draw ``batch_size`` pairs, compute the summed log-probs log pi(y_w | x), log pi(y_l | x)
of the policy (with grad) and of the frozen reference (or the LoRA policy with its adapter off),
then ``labkit.core.dpo_loss``: L = -log sigma(beta [(log pi - log pi_ref)(y_w) -
(log pi - log pi_ref)(y_l)]). Pairs are ``{"prompt", "chosen", "rejected"}`` dicts (TRL's
format); ``pairs=None`` builds them from the initial policy's rollouts (:mod:`labkit.algos.pairs`).
Runs with a name write ``runs/<name>/pairs.jsonl`` and checkpoints (:mod:`labkit.runs.checkpoint`):
``DPOTrainer.from_run`` resumes, ``DPOTrainer.fork`` branches at a step with a changed beta, ...
``sync_ref_model`` refreshes pi_ref every ``ref_model_sync_steps`` steps (TR-DPO,
``labkit.algos.reference``).
Departures from TRL: pairs are drawn with replacement; IPO uses token-averaged log-probs (TRL).
"""

from __future__ import annotations

import torch

from labkit.algos.base import StepRecord, Trainer
from labkit.algos.config import DPOConfig
from labkit.algos.pairs import rollout_pairs
from labkit.core import dpo_loss
from labkit.models.policy import frozen_copy, is_peft
from labkit.models.rollout import completion_logprobs, tokenize_pairs
from labkit.runs.log import load_jsonl, save_jsonl


def sequence_logprobs(model, tokenizer, prompts, completions, average: bool = False):
    """sum_t log pi(y_t | x, y_<t) of each completion (+ eos): [B]; the mean when ``average``."""
    batch = tokenize_pairs(
        tokenizer, list(zip(prompts, completions)), next(model.parameters()).device
    )
    return batch_sequence_logprobs(model, batch, average)


def sequence_logp(logp: torch.Tensor, mask: torch.Tensor, average: bool = False) -> torch.Tensor:
    """sum_t log pi(y_t | x, y_<t) over the completion tokens: [B, T] -> [B]; the mean over
    them when ``average`` (IPO's, TRL's).

    >>> sequence_logp(torch.tensor([[-1.0, -2.0, -5.0]]), torch.tensor([[1.0, 1.0, 0.0]]))
    tensor([-3.])
    """
    total = (logp * mask).sum(-1)  # [B]
    return total / mask.sum(-1) if average else total


def batch_sequence_logprobs(model, batch, average: bool = False, temperature: float = 1.0):
    """:func:`sequence_logprobs` of an already tokenized batch (:func:`tokenize_pairs`, or a
    rollout's rows), log pi at ``temperature`` (:func:`completion_logprobs`)."""
    logp = completion_logprobs(model, batch, temperature)  # [B, T]
    return sequence_logp(logp, batch.completion_mask.float(), average)  # [B]


class DPOTrainer(Trainer):
    """``DPOTrainer(model="tiny", pairs=None, max_steps=50).train()``; ``.log`` as GRPO's."""

    algorithm = "dpo"
    config_class = DPOConfig

    def __init__(
        self,
        model="tiny",
        pairs=None,
        task="addition",
        config: DPOConfig | None = None,
        tokenizer=None,
        run_name: str | None = None,
        device=None,
        dtype=None,
        **overrides,
    ):
        self.pairs = pairs
        super().__init__(
            model,
            task,
            config,
            tokenizer,
            run_name=run_name,
            device=device,
            dtype=dtype,
            **overrides,
        )

    def setup(self) -> None:
        c = self.config
        if self.pairs is None:
            prompts = self.task.sample_prompts(c.pair_prompts, self.rng)
            self.pairs = rollout_pairs(
                self.model,
                self.tokenizer,
                self.task,
                prompts,
                c.num_generations,
                c.pair_mode,
                seed=c.seed,
                max_completion_length=c.max_completion_length,
            )
        if not self.pairs:
            raise ValueError(
                "no preference pairs: give pairs=[{'prompt', 'chosen', 'rejected'}]"
                " or raise pair_prompts / num_generations"
            )
        self.pairs = list(self.pairs)
        self.ref_model = None if is_peft(self.model) else frozen_copy(self.model)

    def on_log_ready(self) -> None:
        if self.log.path is not None:
            save_jsonl(self.log.path / "pairs.jsonl", self.pairs)

    def run_config(self) -> dict:
        return {**super().run_config(), "pairs": len(self.pairs)}

    @classmethod
    def restore_kwargs(cls, run_dir, meta: dict) -> dict:
        return {
            **super().restore_kwargs(run_dir, meta),
            "pairs": load_jsonl(run_dir / "pairs.jsonl"),
        }

    def postfix(self, m: dict) -> dict:
        return {"loss": f"{m['loss']:.3f}", "acc": f"{m['rewards/accuracies']:.2f}"}

    def pair_batch(self, pairs):
        """The chosen then the rejected completions of ``pairs``, tokenized once for pi and pi_ref."""
        prompts = [p["prompt"] for p in pairs] * 2
        texts = [p["chosen"] for p in pairs] + [p["rejected"] for p in pairs]
        return tokenize_pairs(self.tokenizer, list(zip(prompts, texts)), self.device)

    def logps(self, batch, reference: bool = False):
        """(chosen [B], rejected [B]) sequence log-probs of a :meth:`pair_batch` under pi (or
        pi_ref)."""
        avg = self.config.loss_type == "ipo"
        if reference and self.ref_model is None:  # LoRA: the adapter switched off is pi_ref
            with self.model.disable_adapter():
                lp = batch_sequence_logprobs(self.model, batch, avg)
        else:
            model = self.ref_model if reference else self.model
            lp = batch_sequence_logprobs(model, batch, avg)  # [2B]
        return lp.chunk(2)

    def train_step(self) -> StepRecord:
        c = self.config
        batch = self.pair_batch([self.rng.choice(self.pairs) for _ in range(c.batch_size)])
        with torch.no_grad():
            ref_w, ref_l = self.logps(batch, reference=True)
        self.model.train()
        pi_w, pi_l = self.logps(batch)
        loss, stats = dpo_loss(pi_w, pi_l, ref_w, ref_l, c.beta, c.loss_type)
        grad_norm = self.optimizer_step(loss)
        return StepRecord(
            {
                **{k: float(v) for k, v in stats.items()},
                "logps/chosen": pi_w.mean().item(),
                "logps/rejected": pi_l.mean().item(),
                "grad_norm": float(grad_norm),
            }
        )
