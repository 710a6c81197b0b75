"""Learned verifiers for the scratchpad task: a process reward model (PRM) and an outcome
reward model (ORM), the same network trained on different labels.

p_phi(step k is right | x, y_<=e_k) = sigma(w^T h_{e_k} + b), h_{e_k} the trunk's last hidden
state at the step's last token e_k. The PRM is trained with binary cross-entropy on every
process step's label (Lightman et al. 2023, arXiv 2305.20050, sec. 2.4: a PRM predicts the
correctness of each step after its last token); the ORM on the answer step's label only, read at
the eos (Cobbe et al. 2021, arXiv 2110.14168: a verifier of the final answer). Lightman's
scores of a whole solution: the PRM's product (or min) over steps, the ORM's final score.

Departures: the labels are exact (``labkit.rewards.process``), not human ones; the trunk is a
copy of the policy (as labkit's Bradley-Terry ``RewardModel``); the ORM is a pointwise
classifier of answer correctness, not a Bradley-Terry model of pairs, so the two differ only in
which labels they see.
"""

from __future__ import annotations

import copy

import torch

from labkit.algos.base import StepRecord, Trainer
from labkit.algos.config import VerifierConfig
from labkit.core.logprobs import token_logprobs
from labkit.models.rollout import tokenize_pairs
from labkit.rewards.process import step_tensors

KINDS = ("prm", "orm")


class StepVerifier(torch.nn.Module):
    """``StepVerifier(model, tokenizer, kind="prm")``: a copy of a causal LM trunk and a head;
    the logit of step k is w^T h_{e_k} + b + alpha * log p_phi(step k's tokens | before), the
    trunk's own log-likelihood of the step added (as the shipped reward model's
    ``readout="head+logprob"``: a copy of the policy already knows which sums look right).
    Initialised at w = 0, b = 2, alpha = 1; :meth:`step_logits` reads it at step ends."""

    def __init__(self, model, tokenizer, kind: str = "prm"):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r}: use one of {KINDS}")
        self.lm, self.tokenizer, self.kind = copy.deepcopy(model), tokenizer, kind
        self.head = torch.nn.Linear(model.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.constant_(self.head.bias, 2.0)
        self.alpha = torch.nn.Parameter(self.head.weight.new_ones(()))

    def forward(self, prompts: list[str], completions: list[str]):
        """(head logits [B, T], cumulative log p of the completion tokens [B, T+1] with a
        leading 0), after each completion token (eos appended)."""
        dev = self.head.weight.device
        b = tokenize_pairs(self.tokenizer, list(zip(prompts, completions)), dev)
        ids = torch.cat([b.prompt_ids, b.completion_ids], 1)  # [B, P+T]
        attn = torch.cat([b.prompt_mask, b.completion_mask], 1)  # [B, P+T]
        pos = (attn.cumsum(-1) - 1).clamp(min=0)  # [B, P+T]
        out = self.lm(
            input_ids=ids, attention_mask=attn, position_ids=pos, output_hidden_states=True
        )
        P = b.prompt_ids.shape[1]
        logp = token_logprobs(out.logits[:, P - 1 : -1], b.completion_ids) * b.completion_mask
        cum = torch.cat([logp.new_zeros(len(logp), 1), logp.cumsum(-1)], 1)  # [B, T+1]
        return self.head(out.hidden_states[-1][:, P:]).squeeze(-1), cum  # [B, T], [B, T+1]

    def step_logits(self, prompts, completions):
        """(logits [B, K], labels [B, K], valid [B, K]) at every process step's end."""
        h, cum = self(prompts, completions)  # [B, T], [B, T+1]
        ends, labels, valid = step_tensors(completions, prompts, h.shape[1], h.device)
        starts = torch.cat([ends.new_full((len(ends), 1), -1), ends[:, :-1]], 1)  # [B, K]
        seg = cum.gather(1, ends + 1) - cum.gather(1, starts + 1)  # [B, K] log p of the step
        if self.kind == "orm":  # the answer step only: the last valid step of each row
            last = valid.long().cumsum(-1) == valid.sum(-1, keepdim=True)  # [B, K]
            valid = valid & last
        return h.gather(1, ends) + self.alpha * seg, labels, valid  # [B, K] x3

    @torch.no_grad()
    def step_probs(self, prompts, completions, batch_size: int = 256) -> list[list[float]]:
        """p(step right) for every process step of each completion (the ORM: the answer
        step's only). A partial completion's answer step is meaningless: use ``[:-1]``."""
        self.eval()
        out = []
        for i in range(0, len(prompts), batch_size):
            lg, _, valid = self.step_logits(
                prompts[i : i + batch_size], completions[i : i + batch_size]
            )  # [b, K]
            p = lg.sigmoid()  # [b, K]
            out += [p[j][valid[j]].tolist() for j in range(len(p))]
        return out


def verifier_loss(v: StepVerifier, prompts, completions):
    """Binary cross-entropy of the verifier's step logits against the labels: (loss, stats)."""
    lg, y, valid = v.step_logits(prompts, completions)  # [B, K] x3
    bce = torch.nn.functional.binary_cross_entropy_with_logits(lg, y, reduction="none")  # [B, K]
    m = valid.float()  # [B, K]
    loss = (bce * m).sum() / m.sum().clamp(min=1)
    acc = (((lg > 0).float() == y).float() * m).sum() / m.sum().clamp(min=1)
    return loss, {"loss": loss.detach(), "step_accuracy": acc}


class VerifierTrainer(Trainer):
    """``VerifierTrainer(policy, tokenizer=tok, data=[(prompt, completion), ...], kind="prm")``:
    fits a :class:`StepVerifier` (``trainer.model``) on a copy of ``policy`` as any trainer
    does (run folder, curves, checkpoints): each step draws ``batch_size`` pairs with
    replacement. AdamW, the trunk at ``learning_rate``, the head and alpha (fresh, few) at
    ``head_learning_rate``. Metrics: ``loss``, ``step_accuracy``, ``grad_norm``, ``lr``."""

    config_class = VerifierConfig
    algorithm = "verifier"
    fused_adamw = False

    def __init__(
        self,
        model="tiny-think",
        data=(),
        kind: str = "prm",
        config: VerifierConfig | None = None,
        tokenizer=None,
        run_name: str | None = None,
        **overrides,
    ):
        self.data, self.kind = list(data), kind
        if not self.data:
            raise ValueError("data is empty: give (prompt, completion) pairs to learn from")
        super().__init__(model, None, config, tokenizer, run_name=run_name, **overrides)

    def load_model(self, model, tokenizer):
        policy, tokenizer = super().load_model(model, tokenizer)
        return StepVerifier(policy, tokenizer, self.kind), tokenizer

    def param_groups(self) -> list[list]:
        v = self.model  # alpha first: the order of v.parameters(), which clipping sums in
        return [[v.alpha], list(v.lm.parameters()), list(v.head.parameters())]

    def group_lrs(self) -> list[float]:
        c = self.config
        return [c.head_learning_rate, c.learning_rate, c.head_learning_rate]

    def run_config(self) -> dict:
        return {**super().run_config(), "kind": self.kind, "pairs": len(self.data)}

    def train_step(self) -> StepRecord:
        batch = [self.rng.choice(self.data) for _ in range(self.config.batch_size)]
        self.model.train()
        loss, stats = verifier_loss(self.model, [p for p, _ in batch], [c for _, c in batch])
        grad_norm = self.optimizer_step(loss)
        return StepRecord(
            {**{k: float(x) for k, x in stats.items()}, "grad_norm": float(grad_norm)}
        )


def train_verifier(
    model,
    tokenizer,
    data: list[tuple[str, str]],
    kind: str = "prm",
    *,
    steps: int = 200,
    batch_size: int = 64,
    learning_rate: float = 3e-4,
    head_learning_rate: float = 1e-2,
    seed: int = 0,
) -> tuple[StepVerifier, list[dict]]:
    """Fit a :class:`StepVerifier` on (prompt, completion) pairs (labels from
    ``labkit.rewards.process``) with a :class:`VerifierTrainer`: (verifier, one stats dict
    per step: ``loss``, ``step_accuracy``)."""
    tr = VerifierTrainer(
        model,
        data=data,
        kind=kind,
        tokenizer=tokenizer,
        max_steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        head_learning_rate=head_learning_rate,
        seed=seed,
    )
    metrics = tr.train(progress=False).metrics
    return tr.model.eval(), metrics[["loss", "step_accuracy"]].to_dict("records")


def solution_score(probs: list[float], kind: str, aggregate: str = "min") -> float:
    """A whole solution's score: the ORM's final probability; the PRM's min or product over
    steps (Lightman et al. use the product; Snell et al. 2408.03314 compare min, product, last).

    >>> solution_score([0.9, 0.5, 0.8], "prm", "min"), solution_score([0.9, 0.5], "prm", "prod")
    (0.5, 0.45)
    """
    if kind == "orm" or aggregate == "last":
        return probs[-1]
    if aggregate == "min":
        return min(probs)
    if aggregate == "prod":
        out = 1.0
        for p in probs:
            out *= p
        return out
    raise ValueError(f"aggregate={aggregate!r}: use 'min', 'prod' or 'last'")


def verifier_reward(v: StepVerifier, aggregate: str = "min", name: str | None = None):
    """The verifier as a reward function (TRL's signature): each completion's solution score
    (:func:`solution_score`), so RL can optimise a learned ORM or PRM, and exploit it."""

    def reward(completions, prompts, **kwargs):
        probs = v.step_probs(list(prompts), list(completions))
        return [solution_score(p, v.kind, aggregate) for p in probs]

    reward.__name__ = name or f"learned_{v.kind}"
    reward.labkit_inline = True  # a torch model: in the trainer's process, no fork
    return reward


@torch.no_grad()
def verifier_quality(v: StepVerifier, data: list[tuple[str, str]], batch_size: int = 256) -> dict:
    """Held-out: accuracy of p > 1/2 on the thought steps' labels and on the answers' labels,
    and the share of wrong answers among the completions the verifier calls right."""
    hits = {"thought": [0, 0], "answer": [0, 0]}
    fooled = [0, 0]
    v.eval()
    for i in range(0, len(data), batch_size):
        chunk = data[i : i + batch_size]
        lg, y, valid = v.step_logits([p for p, _ in chunk], [c for _, c in chunk])  # [b, K]
        _, _, valid_all = step_tensors(
            [c for _, c in chunk], [p for p, _ in chunk], lg.shape[1]
        )  # every step, to find the answer steps
        last = valid_all.long().cumsum(-1) == valid_all.sum(-1, keepdim=True)  # [b, K]
        ok = (lg > 0).float() == y  # [b, K]
        for name, m in (("thought", valid & ~last), ("answer", valid & last)):
            hits[name][0] += int((ok & m).sum())
            hits[name][1] += int(m.sum())
        said = (lg > 0) & valid & last  # [b, K] called right
        fooled[0] += int((said & (y == 0)).sum())
        fooled[1] += int(said.sum())
    out = {f"{k} accuracy": h[0] / h[1] if h[1] else float("nan") for k, h in hits.items()}
    return out | {"wrong among accepted": fooled[0] / fooled[1] if fooled[1] else float("nan")}
