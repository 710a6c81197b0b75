"""Supervised fine-tuning (the cold start of the R1 recipe): teach the format, then do RL.

Cross-entropy on the completion tokens only (the prompt is context, not a target):
L = -mean over valid tokens of log pi(y_t | x, y_<t). :class:`SFTTrainer` is a
:class:`~labkit.algos.base.Trainer`, so an SFT run has a run folder, curves, checkpoints and
``from_run``; :func:`sft` is the one-call form the scripts and RLHF's stage 1 use.
"""

from __future__ import annotations

from collections.abc import Callable

from labkit.algos.base import StepRecord, Trainer
from labkit.algos.config import SFTConfig
from labkit.core.logprobs import masked_mean
from labkit.models.rollout import completion_logprobs, tokenize_pairs
from labkit.runs.log import load_jsonl, save_jsonl


class SFTTrainer(Trainer):
    """``SFTTrainer(model, pairs=[(prompt, target), ...], max_steps=100).train()``: each step
    draws ``batch_size`` pairs with replacement; metrics: ``loss``, ``grad_norm``, ``lr``."""

    config_class = SFTConfig
    algorithm = "sft"
    fused_adamw = False  # as when the shipped checkpoints were made: they rebuild bit for bit

    def __init__(
        self,
        model="tiny",
        pairs=(),
        task=None,
        config: SFTConfig | None = None,
        tokenizer=None,
        run_name: str | None = None,
        device=None,
        dtype=None,
        **overrides,
    ):
        self.pairs = [tuple(p) for p in pairs]
        if not self.pairs:
            raise ValueError("pairs is empty: give (prompt, target) pairs to learn from")
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

    def on_log_ready(self) -> None:
        if self.log.path is not None:
            save_jsonl(
                self.log.path / "pairs.jsonl", [{"prompt": p, "target": t} for p, t in self.pairs]
            )

    def run_config(self) -> dict:
        return {**super().run_config(), "pairs": len(self.pairs)}

    @classmethod
    def restore_kwargs(cls, run_dir, meta: dict) -> dict:
        rows = load_jsonl(run_dir / "pairs.jsonl")
        return {
            **super().restore_kwargs(run_dir, meta),
            "pairs": [(r["prompt"], r["target"]) for r in rows],
        }

    def draw_pairs(self) -> list[tuple[str, str]]:
        """The step's batch: ``batch_size`` pairs drawn uniformly with replacement."""
        return [self.rng.choice(self.pairs) for _ in range(self.config.batch_size)]

    def train_step(self) -> StepRecord:
        batch = tokenize_pairs(self.tokenizer, self.draw_pairs(), self.device)
        self.model.train()
        loss = -masked_mean(completion_logprobs(self.model, batch), batch.completion_mask)
        grad_norm = self.optimizer_step(loss)
        return StepRecord({"loss": loss.item(), "grad_norm": float(grad_norm)})


def sft(
    model,
    tokenizer,
    pairs: list[tuple[str, str]],
    steps: int,
    batch_size: int = 128,
    learning_rate: float = 3e-3,
    seed: int = 0,
    stop: Callable[[int], bool] | None = None,
    eval_every: int = 50,
    progress: bool = True,
) -> list[float]:
    """Train ``model`` in place on (prompt, target) pairs for ``steps`` steps; ``stop(step)``,
    asked every ``eval_every`` steps, may end it early. Returns the loss of every step.

    The learning rate warms up over 20 steps, then stays (:class:`SFTConfig`'s defaults).
    """
    trainer = SFTTrainer(
        model,
        pairs,
        tokenizer=tokenizer,
        max_steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
    )
    trainer.algorithm = "cold-start SFT"  # the progress bar's name

    def ask(t, m):
        if stop is not None and t.global_step % eval_every == 0 and stop(t.global_step):
            t.stop()

    return trainer.train(progress=progress, callback=ask).metrics["loss"].tolist()
