"""A Bradley-Terry reward model: the policy's network with a scalar head, trained on pairs.

r_phi(x, y) = w^T h_last + b, h_last the last hidden state at the final token (eos) of x + y
(``readout="head"``), optionally plus the trunk's log-likelihood log p_phi(y | x)
(``readout="head+logprob"``, what the shipped ``tiny-addition-rm`` uses); trained with
``labkit.core.bradley_terry_loss``: L = -log sigma(r(x, y_w) - r(x, y_l))
(InstructGPT 2203.02155 eq. 1; TRL's RewardTrainer). :meth:`RewardModel.as_reward` turns it into
a reward function with TRL's signature, so GRPO or PPO can optimise it: stage 2 of RLHF.
"""

from __future__ import annotations

import json
import pathlib

import torch

from labkit.algos.base import StepRecord, Trainer
from labkit.algos.config import RewardModelConfig
from labkit.core import bradley_terry_loss
from labkit.core.logprobs import token_logprobs
from labkit.core.options import RM_READOUTS, choose
from labkit.models.policy import CHECKPOINTS, load_policy
from labkit.models.rollout import tokenize_pairs
from labkit.runs.log import load_jsonl, save_jsonl


class RewardModel(torch.nn.Module):
    """``RewardModel("tiny")``: a causal LM trunk (its own copy) and a linear scalar head.

    ``readout="head"``: r(x, y) = w^T h_eos + b, InstructGPT's and TRL's reward model.
    ``readout="head+logprob"``: r(x, y) = w^T h_eos + b + log p_phi(y + eos | x), the trunk's
    own LM head added (its log-likelihood of the completion, the quantity DPO's implicit reward
    beta log pi/pi_ref is built from, 2305.18290 eq. 5). Checking a sum is as hard as doing it:
    the scalar head alone must rebuild a digit comparison from the eos state and ranks the
    policy's near misses (75 vs 74) barely above chance after 1000 steps, while the LM head
    already predicts each digit, so Bradley-Terry training sharpens a ranker that exists.
    """

    def __init__(self, model="tiny", tokenizer=None, readout: str = "head"):
        super().__init__()
        choose("readout", readout, RM_READOUTS)
        if isinstance(model, str):
            model, tokenizer = load_policy(model)
        self.lm, self.tokenizer, self.readout = model, tokenizer, readout
        self.head = torch.nn.Linear(model.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, prompts: list[str], completions: list[str]) -> torch.Tensor:
        """r(x, y) for each (prompt, completion + eos): [B]."""
        dev = self.head.weight.device
        b = tokenize_pairs(self.tokenizer, list(zip(prompts, completions)), dev)
        ids = torch.cat([b.prompt_ids, b.completion_ids], 1)  # [B, P+T]
        attn = torch.cat([b.prompt_mask, b.completion_mask], 1)  # [B, P+T]
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        out = self.lm(
            input_ids=ids, attention_mask=attn, position_ids=pos, output_hidden_states=True
        )
        P = b.prompt_ids.shape[1]
        last = P + b.lengths - 1  # [B] the eos position
        h = out.hidden_states[-1][torch.arange(len(prompts), device=dev), last]  # [B, H]
        r = self.head(h).squeeze(-1)  # [B]
        if self.readout == "head":
            return r
        logp = token_logprobs(out.logits[:, P - 1 : -1], b.completion_ids)  # [B, T]
        return r + (logp * b.completion_mask).sum(-1)  # [B]

    def save(self, path) -> None:
        """Write the trunk (``save_pretrained``), its tokenizer and ``reward_head.json``."""
        self.lm.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        head = {
            "readout": self.readout,
            "weight": self.head.weight[0].tolist(),
            "bias": self.head.bias.item(),
        }
        with open(pathlib.Path(path) / "reward_head.json", "w") as f:
            json.dump(head, f)

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
            w, lo = self.pair_scores(pairs[i : i + batch_size])
            hits += (w > lo).sum().item()
        return hits / len(pairs)

    def as_reward(self, name: str = "reward_model"):
        """A reward function ``fn(completions, prompts, **kw) -> list[float]`` (TRL's signature)."""

        @torch.no_grad()
        def reward(completions, prompts, **kwargs):
            self.eval()
            return self(list(prompts), list(completions)).tolist()

        reward.__name__ = name
        reward.labkit_inline = True  # a torch model: in the trainer's process, no fork
        return reward


class RewardModelTrainer(Trainer):
    """``RewardModelTrainer("tiny", pairs=[...], heldout=..., readout="head").train()``: fits a
    :class:`RewardModel` (``trainer.model``) with the Bradley-Terry loss, as any trainer: run
    folder, curves, checkpoints, ``from_run``. Metrics: ``loss``, ``accuracy``, ``margin``
    (batch), ``grad_norm``, ``lr``, and every ``eval_every`` steps and at the end
    ``heldout/accuracy`` (``heldout`` a list of pairs) or ``heldout/<name>/accuracy`` (a dict
    name -> pairs)."""

    config_class = RewardModelConfig
    algorithm = "reward_model"
    fused_adamw = False  # as when the shipped checkpoints were made: they rebuild bit for bit

    def __init__(
        self,
        model="tiny",
        pairs=(),
        heldout=None,
        task=None,
        config: RewardModelConfig | None = None,
        tokenizer=None,
        run_name: str | None = None,
        readout: str = "head",
        device=None,
        dtype=None,
        **overrides,
    ):
        self.pairs, self.heldout, self.readout = list(pairs), heldout, readout
        if not self.pairs:
            raise ValueError(
                "pairs is empty: give preference pairs {'prompt', 'chosen', "
                "'rejected'} (labkit.pairs builds them)"
            )
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

    def load_model(self, model, tokenizer):
        rm = RewardModel(model, tokenizer, self.readout)
        return rm, rm.tokenizer

    def on_log_ready(self) -> None:
        if self.log.path is not None:
            save_jsonl(self.log.path / "pairs.jsonl", self.pairs)
            save_jsonl(self.log.path / "heldout.jsonl", [{"heldout": self.heldout}])

    def run_config(self) -> dict:
        return {**super().run_config(), "readout": self.readout, "pairs": len(self.pairs)}

    @classmethod
    def restore_kwargs(cls, run_dir, meta: dict) -> dict:
        return {
            **super().restore_kwargs(run_dir, meta),
            "readout": meta["readout"],
            "pairs": load_jsonl(run_dir / "pairs.jsonl"),
            "heldout": load_jsonl(run_dir / "heldout.jsonl")[0]["heldout"],
        }

    def train_step(self) -> StepRecord:
        c, rm = self.config, self.model
        rm.train()
        w, lo = rm.pair_scores([self.rng.choice(self.pairs) for _ in range(c.batch_size)])  # [B]
        loss, stats = bradley_terry_loss(w, lo)
        grad_norm = self.optimizer_step(loss)
        m = {**{k: float(v) for k, v in stats.items()}, "grad_norm": float(grad_norm)}
        step = self.global_step + 1
        if self.heldout and (step % c.eval_every == 0 or step == c.max_steps):
            m.update(heldout_accuracies(rm, self.heldout))
        return StepRecord(m)


def train_reward_model(
    pairs: list[dict],
    model="tiny",
    tokenizer=None,
    heldout=None,
    config: RewardModelConfig | None = None,
    progress: bool = True,
    readout: str = "head",
    run_name: str | None = None,
    **kw,
):
    """Fit a :class:`RewardModel` on pairs with the Bradley-Terry loss: (rm, RunLog).

    ``model``: the trunk to start from (``"tiny"``: the policy's network; ``"tiny-random"``:
    fresh); ``readout``: see :class:`RewardModel`; the log's metrics: see
    :class:`RewardModelTrainer`.
    """
    trainer = RewardModelTrainer(
        model,
        pairs,
        heldout,
        config=config,
        tokenizer=tokenizer,
        run_name=run_name,
        readout=readout,
        **kw,
    )
    log = trainer.train(progress=progress)
    return trainer.model, log


def heldout_accuracies(rm: RewardModel, heldout) -> dict:
    """``{"heldout/accuracy": ...}`` for a list of pairs, ``{"heldout/<name>/accuracy": ...}``
    for a dict name -> pairs."""
    if isinstance(heldout, dict):
        return {f"heldout/{k}/accuracy": rm.accuracy(v) for k, v in heldout.items()}
    return {"heldout/accuracy": rm.accuracy(heldout)}


REWARD_MODELS = {
    "tiny-addition-rm": CHECKPOINTS / "tiny-addition-rm",
    # lab 36's weak ensemble: the scalar head alone, seeds 0-2 (scripts/make_reward_model.py)
    **{f"tiny-addition-weak-rm-{k}": CHECKPOINTS / f"tiny-addition-weak-rm-{k}" for k in range(3)},
}


def load_reward_model(name: str = "tiny-addition-rm") -> RewardModel:
    """A saved :class:`RewardModel`: a shipped name (``tiny-addition-rm``, made by
    ``scripts/make_reward_model.py``) or a folder written by :meth:`RewardModel.save`;
    ``rm.card`` holds the folder's ``labkit_card.json`` (training history, held-out figures).

    >>> rm = load_reward_model(); rm.readout
    'head+logprob'
    """
    path = REWARD_MODELS.get(name, pathlib.Path(name).expanduser())
    if not (pathlib.Path(path) / "reward_head.json").exists():
        raise FileNotFoundError(
            f"no reward model at {path}: pass one of {sorted(REWARD_MODELS)} "
            "or a folder written by RewardModel.save (shipped: run "
            "`python scripts/make_reward_model.py` to rebuild it)"
        )
    with open(pathlib.Path(path) / "reward_head.json") as f:
        head = json.load(f)
    rm = RewardModel(str(path), readout=head["readout"])
    with torch.no_grad():
        rm.head.weight[0] = torch.tensor(head["weight"], device=rm.head.weight.device)
        rm.head.bias.fill_(head["bias"])
    card = pathlib.Path(path) / "labkit_card.json"  # how it was made and measured, if saved
    rm.card = json.loads(card.read_text()) if card.exists() else {}
    return rm.eval()
