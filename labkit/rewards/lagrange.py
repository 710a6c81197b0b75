"""A length bound as a constraint: the multiplier's term of the Lagrangian, carried through a run.

``LengthConstraint(bound=L, lam=lam0, eta=eta)`` is a reward function whose value for a
completion of c characters is -lam g(c), g(c) = c - L (:func:`labkit.core.lagrange.lagrangian_reward`
with r = 0): next to the accuracy reward at weight 1, the trainer's weighted sum is
r - lam (c - L), the Lagrangian of "maximise accuracy subject to mean length <= L". With
``eta = 0`` lam stays lam0 (a fixed penalty); with ``eta > 0`` it is learned by the projected
step :func:`~labkit.core.lagrange.dual_update`, once per training step.

Once per step: lam_k is fixed while step k is scored (every call at ``trainer_state.global_step
= k``, so the batches of DAPO's dynamic sampling share it), and when step k+1's first batch
arrives, lam_{k+1} = max(0, lam_k + eta (mean c over step k - L)). So the lam a step logs is the
one its rewards used, and the last step's own update is pending at the end of a run (kept in
:meth:`state_dict`, so a resumed run applies it). A call without ``trainer_state`` (a reward
tried on cached completions) scores with the current lam and moves nothing.

c is counted in characters of the completion as the reward receives it (on the ``tiny``
policies one token is one character; the trainer's ``len/mean`` counts tokens, eos included).
Logged every step (``log_metric``): ``<name>/lambda`` (the lam used), ``<name>/cost`` (the
batch's mean c), ``<name>/violation`` (its mean g: mean c - L).

>>> from labkit.rewards.kwargs import TrainerState
>>> f = LengthConstraint(bound=10.0, eta=0.01)
>>> step = lambda k, texts: f(texts, trainer_state=TrainerState(global_step=k))
>>> step(0, ["x" * 20, "x" * 10]), f.lam                 # lam_0 = 0: no penalty yet
([0.0, 0.0], 0.0)
>>> step(1, ["x" * 20, "x" * 10]), f.lam                 # lam_1 = 0.01 (15 - 10) = 0.05
([-0.5, 0.0], 0.05)
"""

from __future__ import annotations

from labkit.core.lagrange import constraint_cost, dual_update, lagrangian_reward
from labkit.core.options import LAGRANGE_FORMS, choose
from labkit.rewards.stateful import StatefulReward


class LengthConstraint(StatefulReward):
    """The term -lam g(c) of the Lagrangian of E[len] <= ``bound`` (characters), lam fixed
    (``eta = 0``) or learned once per step (module docstring); ``form="hinge"``: seed 002's
    -lam max(0, c - L), whose dual update can only raise lam."""

    def __init__(
        self,
        bound: float,
        *,
        lam: float = 0.0,
        eta: float = 0.0,
        form: str = "linear",
        name: str = "length_constraint",
    ):
        super().__init__(name)
        if bound <= 0 or lam < 0 or eta < 0:
            raise ValueError(
                f"bound={bound}, lam={lam}, eta={eta}: the bound must be > 0 characters, the "
                "multiplier and its step size >= 0"
            )
        self.bound, self.eta, self.form = (
            float(bound),
            float(eta),
            choose("form", form, LAGRANGE_FORMS),
        )
        self.lam0 = self.lam = float(lam)
        self._step: int | None = None  # the step whose costs are pending
        self._sum, self._n = 0.0, 0  # their g(c) summed, and how many

    def __repr__(self) -> str:  # stable across processes: the reward's version in config.json
        return (
            f"LengthConstraint(bound={self.bound:g}, lam={self.lam0:g}, eta={self.eta:g}, "
            f"form={self.form!r}, name={self.__name__!r})"
        )

    def advance(self, step: int) -> None:
        """Apply the pending step's dual update when ``step`` is a later one."""
        if self._n and step != self._step:
            # the constraint E[g(c)] <= 0: mean g = mean c - L (linear), mean max(0, c - L) (hinge)
            self.lam = float(dual_update(self.lam, self._sum / self._n, 0.0, self.eta))
            self._sum, self._n = 0.0, 0

    def score(self, completions: list, trainer_state=None, log_metric=None, **kwargs):
        c = [float(len(text)) for text in completions]  # characters
        g = [constraint_cost(x, self.bound, self.form) for x in c]
        if trainer_state is not None:  # a trainer's call: this step's costs drive the update
            self.advance(trainer_state.global_step)
            self._step = trainer_state.global_step
            self._sum, self._n = self._sum + sum(g), self._n + len(g)
        if log_metric is not None and c:
            log_metric(f"{self.__name__}/lambda", self.lam)
            log_metric(f"{self.__name__}/cost", sum(c) / len(c))
            log_metric(f"{self.__name__}/violation", sum(g) / len(g))
        return [lagrangian_reward(0.0, x, self.lam, self.bound, self.form) for x in c]

    def state_dict(self) -> dict:
        return {"lam": self.lam, "step": self._step, "sum": self._sum, "n": self._n}

    def load_state_dict(self, state: dict) -> None:
        self.lam, self._step = float(state["lam"]), state["step"]
        self._sum, self._n = float(state["sum"]), int(state["n"])
