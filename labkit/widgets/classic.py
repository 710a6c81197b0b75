"""Live explorers for the classic labs: sliders, a run button, one FigureWidget each.

The runs last seconds, so they execute in the kernel thread; the figure still updates while
they run (kernel -> browser messages are sent at once), inside ``batch_update()``. Each widget
is an ``ipywidgets.VBox``; ``.fig`` is its single ``go.FigureWidget`` (tests read its data; a
static figure where custom widgets cannot render: :mod:`labkit.widgets.frontend`).
"""

from __future__ import annotations

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go

from labkit.classic import (
    ControlConfig,
    PGConfig,
    cliff_walking,
    estimators,
    greedy_path,
    gridworld,
    policy_evaluation,
    random_walk,
    td_control,
    train_pg,
    value_iteration,
)
from labkit.classic.control import METHODS
from labkit.classic.prediction import bias_variance
from labkit.plots.classic import bias_variance_curves, grid_traces, smooth, value_and_curve
from labkit.widgets.frontend import figure_widget, place


def _slider(description: str, value: float, lo: float, hi: float, step: float) -> W.FloatSlider:
    return W.FloatSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        continuous_update=False,
        readout_format=".2f",
    )


def _run_button(on_click) -> W.Button:
    button = W.Button(description="Run", button_style="primary")
    button.add_class("lk-run")
    button.on_click(lambda _: on_click())
    return button


def _set_grid(fig: go.FigureWidget, mdp, V, policy, path) -> None:
    """Overwrite traces 0-2 (heatmap, arrows, path) with new values, in place."""
    for i, tr in enumerate(grid_traces(mdp, V, policy, path)):
        if i == 0:
            fig.data[0].update(z=tr.z, text=tr.text)
        else:
            fig.data[i].update(x=tr.x, y=tr.y, text=tr.text)


class ValueIterationExplorer(W.VBox):
    """V_k after k sweeps of value iteration, with its greedy arrows: sliders gamma and k."""

    def __init__(self, mdp=None):
        self.mdp = mdp if mdp is not None else gridworld()
        self.gamma = _slider("γ", 0.9, 0.0, 0.99, 0.01)
        self.sweep = W.IntSlider(
            value=1, min=0, max=50, description="sweep k", continuous_update=True
        )
        self.status = W.HTML()
        self.fig = figure_widget(
            value_and_curve(
                self.mdp,
                np.zeros(self.mdp.n_states),
                None,
                {"max |V_k+1 - V_k|": [1.0]},
                window=1,
                curve_title="change per sweep (log)",
            )
        )
        self.fig.update_yaxes(type="log", row=1, col=2)
        self.gamma.observe(lambda _: self._solve(), "value")
        self.sweep.observe(lambda _: self._show(), "value")
        super().__init__([W.HBox([self.gamma, self.sweep]), self.status, place(self.fig)])
        self.add_class("lk-vi-explorer")
        self._solve()

    def _solve(self) -> None:
        _, _, _, stats = value_iteration(self.mdp, self.gamma.value, tol=1e-10, record=True)
        self.history = np.vstack([np.zeros(self.mdp.n_states), stats["history"]])  # [K + 1, S]
        self.sweep.max = len(self.history) - 1
        self._show()

    def _show(self) -> None:
        from labkit.classic.dp import greedy, q_from_v

        k = min(self.sweep.value, len(self.history) - 1)
        V = self.history[k]
        pi = greedy(q_from_v(self.mdp, V, self.gamma.value))
        deltas = np.abs(np.diff(self.history, axis=0)).max(1) + 1e-16  # [K]
        with self.fig.batch_update():
            _set_grid(
                self.fig,
                self.mdp,
                V,
                pi,
                greedy_path(self.mdp, q_from_v(self.mdp, V, self.gamma.value)),
            )
            self.fig.data[3].update(x=np.arange(1, len(deltas) + 1), y=deltas)
        self.status.value = (
            f"sweep {k} of {len(self.history) - 1}; V(start) = {V[int(self.mdp.p0.argmax())]:.4f}"
        )


class TDControlExplorer(W.VBox):
    """Q-learning / SARSA / expected SARSA, live: Q heatmap, greedy arrows and path, returns.

    One learning curve per method is kept, so running SARSA after Q-learning compares them.
    """

    def __init__(self, mdp=None, episodes: int = 500, every: int = 25):
        self.mdp = mdp if mdp is not None else cliff_walking()
        self.every = every
        self.method = W.Dropdown(options=METHODS, value="q_learning", description="method")
        self.epsilon = _slider("ε", 0.1, 0.0, 0.5, 0.01)
        self.alpha = _slider("α", 0.5, 0.01, 1.0, 0.01)
        self.gamma = _slider("γ", 1.0, 0.5, 1.0, 0.01)
        self.episodes = W.IntSlider(
            value=episodes, min=10, max=2000, step=10, description="episodes"
        )
        self.run = _run_button(self.train)
        self.status = W.HTML()
        curves = {m: [] for m in METHODS}
        self.fig = figure_widget(
            value_and_curve(
                self.mdp,
                np.zeros(self.mdp.n_states),
                None,
                curves,
                curve_title="return per episode",
            )
        )
        controls = W.VBox(
            [
                W.HBox([self.method, self.episodes, self.run]),
                W.HBox([self.epsilon, self.alpha, self.gamma]),
            ]
        )
        super().__init__([controls, self.status, place(self.fig)])
        self.add_class("lk-td-control")

    def config(self) -> ControlConfig:
        return ControlConfig(
            method=self.method.value,
            episodes=self.episodes.value,
            alpha=self.alpha.value,
            gamma=self.gamma.value,
            epsilon=self.epsilon.value,
        )

    def train(self) -> tuple[np.ndarray, dict]:
        """Run with the current slider values, redrawing every ``every`` episodes."""
        cfg = self.config()
        curve = self.fig.data[3 + METHODS.index(cfg.method)]

        def draw(n, Q, stats):
            with self.fig.batch_update():
                _set_grid(self.fig, self.mdp, Q.max(1), Q.argmax(1), greedy_path(self.mdp, Q))
                curve.update(x=np.arange(1, n + 1), y=smooth(stats["returns"], 10))
            self.status.value = (
                f"{cfg.method}: episode {n}/{cfg.episodes}, mean return of "
                f"the last 50: {np.mean(stats['returns'][-50:]):.1f}"
            )

        return td_control(self.mdp, cfg, callback=draw, every=self.every)


class PredictionExplorer(W.VBox):
    """MC, TD(0), n-step TD, TD(lambda) on the random walk: bias² / variance / RMSE curves."""

    def __init__(self, runs: int = 100, episodes: int = 50):
        self.mdp, self.pi = random_walk(), np.full((7, 2), 0.5)
        self.V_true = policy_evaluation(self.mdp, self.pi, 1.0)
        self.alpha = _slider("α (0 = 1/N)", 0.1, 0.0, 0.5, 0.01)
        self.lam = _slider("λ", 0.5, 0.0, 1.0, 0.05)
        self.n = W.IntSlider(value=3, min=1, max=10, description="n")
        self.runs = W.IntSlider(value=runs, min=10, max=500, step=10, description="runs")
        self.episodes = episodes
        self.run = _run_button(self.update)
        self.fig = figure_widget(bias_variance_curves(self._measure(runs=2)))
        super().__init__(
            [W.HBox([self.alpha, self.lam, self.n]), W.HBox([self.runs, self.run]), place(self.fig)]
        )
        self.add_class("lk-prediction")

    def _measure(self, runs: int) -> dict:
        alpha = self.alpha.value or None  # 0 on the slider means the sample average 1/N(s)
        methods = estimators(7, 1.0, alpha, n=self.n.value, lam=self.lam.value, V0=0.5)
        return bias_variance(self.mdp, self.pi, self.V_true, methods, runs, self.episodes)

    def update(self) -> dict:
        out = self._measure(self.runs.value)
        with self.fig.batch_update():
            for i, (name, st) in enumerate(out.items()):
                for j, y in enumerate((st["bias2"], st["var"], np.sqrt(st["mse"]))):
                    self.fig.data[3 * i + j].update(y=y[1:], name=name)
        return out


class PGExplorer(W.VBox):
    """REINFORCE / baseline / actor-critic with GAE(λ), live: critic V, policy arrows, returns."""

    def __init__(self, mdp=None, iterations: int = 150, every: int = 10):
        self.mdp = mdp if mdp is not None else gridworld(step_reward=-0.05)
        self.every = every
        self.advantage = W.Dropdown(
            options=("reward_to_go", "baseline", "gae"), value="gae", description="advantage"
        )
        self.lam = _slider("λ", 0.95, 0.0, 1.0, 0.05)
        self.gamma = _slider("γ", 1.0, 0.5, 1.0, 0.01)
        self.lr = W.FloatLogSlider(
            value=0.1, base=10, min=-3, max=0, description="lr", continuous_update=False
        )
        self.iterations = W.IntSlider(
            value=iterations, min=10, max=500, step=10, description="updates"
        )
        self.run = _run_button(self.train)
        self.status = W.HTML()
        curves = {k: [] for k in self.advantage.options}
        self.fig = figure_widget(
            value_and_curve(
                self.mdp,
                np.zeros(self.mdp.n_states),
                None,
                curves,
                curve_title="mean return per batch",
            )
        )
        super().__init__(
            [
                W.HBox([self.advantage, self.iterations, self.run]),
                W.HBox([self.lam, self.gamma, self.lr]),
                self.status,
                place(self.fig),
            ]
        )
        self.add_class("lk-pg")

    def train(self):
        cfg = PGConfig(
            advantage=self.advantage.value,
            lam=self.lam.value,
            gamma=self.gamma.value,
            learning_rate=self.lr.value,
            iterations=self.iterations.value,
        )
        curve = self.fig.data[3 + list(self.advantage.options).index(cfg.advantage)]

        def draw(it, theta, V, stats):
            pi = theta.argmax(-1).numpy()
            with self.fig.batch_update():
                _set_grid(self.fig, self.mdp, V.numpy(), pi, greedy_path(self.mdp, theta.numpy()))
                curve.update(x=np.arange(1, it + 1), y=smooth(stats["return"], 5))
            self.status.value = (
                f"{cfg.advantage}: update {it}/{cfg.iterations}, "
                f"return {np.mean(stats['return'][-5:]):.3f}"
            )

        return train_pg(self.mdp, cfg, callback=draw, every=self.every)
