"""Explorers for the core labs: KL estimators under a mu slider, advantages of rewards you type.

Each is an ``ipywidgets.VBox`` whose ``.fig`` is its one ``go.FigureWidget`` (a static figure
where custom widgets cannot render: :mod:`labkit.widgets.frontend`); the figures are built by
:mod:`labkit.plots.kl_explorer` and :mod:`labkit.plots.advantages` and written in place inside
``batch_update()``.
"""

from __future__ import annotations

import html

import ipywidgets as W

from labkit.plots.advantages import advantages_figure
from labkit.plots.kl_explorer import SETTINGS, kl_explorer_figure, kl_explorer_table
from labkit.widgets.frontend import figure_widget, place


class KLExplorer(W.VBox):
    """k1/k2/k3 sampled from q against the exact KL: a mu slider, gaussian or categorical."""

    def __init__(self, mu: float = 1.0, setting: str = "gaussian", n: int = 20_000):
        self.n = n
        self.mu = W.FloatSlider(
            value=mu, min=0.05, max=2.0, step=0.05, description="μ", continuous_update=False
        )
        self.mu.add_class("lk-kl-mu")
        self.setting = W.Dropdown(options=SETTINGS, value=setting, description="q, p")
        self.setting.add_class("lk-kl-setting")
        self.fig = figure_widget(kl_explorer_figure(setting, mu, n))
        self.table: list[dict] = []
        self.mu.observe(lambda _: self.redraw(), "value")
        self.setting.observe(lambda _: self.redraw(), "value")
        super().__init__([W.HBox([self.setting, self.mu]), place(self.fig)])
        self.add_class("lk-kl-explorer")
        self.redraw()

    def redraw(self) -> None:
        new = kl_explorer_figure(self.setting.value, self.mu.value, self.n)
        self.table = kl_explorer_table(self.setting.value, self.mu.value, self.n)
        with self.fig.batch_update():
            for old, tr in zip(self.fig.data, new.data):
                if tr.type == "histogram":
                    old.update(x=tr.x, xbins=tr.xbins)
                else:
                    old.update(cells=tr.cells)
            self.fig.layout.title = new.layout.title
            self.fig.layout.shapes = new.layout.shapes


def parse_rewards(text: str) -> list[float]:
    """``"1, 0, 0.5"`` -> [1.0, 0.0, 0.5]; a ValueError names the bad item.

    >>> parse_rewards("1, 0  0.5")
    [1.0, 0.0, 0.5]
    """
    out = []
    for item in text.replace(",", " ").split():
        try:
            out.append(float(item))
        except ValueError:
            raise ValueError(f"{item!r} is not a number: type rewards like 1, 0, 0.5") from None
    return out


class AdvantageExplorer(W.VBox):
    """Type a batch of rewards and a group size G: each completion's advantage per scheme."""

    def __init__(self, rewards: str = "1, 0, 0, 1, 0.5, 0.5, 0.5, 0.5", G: int = 4):
        self.rewards = W.Text(value=rewards, description="rewards", layout={"width": "420px"})
        self.rewards.add_class("lk-adv-rewards")
        self.G = W.BoundedIntText(
            value=G, min=2, max=64, description="G", layout={"width": "140px"}
        )
        self.G.add_class("lk-adv-G")
        self.message = W.HTML()
        self.message.add_class("lk-adv-message")
        self.fig = figure_widget(advantages_figure(parse_rewards(rewards), G))
        self.rewards.observe(lambda _: self.redraw(), "value")
        self.G.observe(lambda _: self.redraw(), "value")
        super().__init__([W.HBox([self.rewards, self.G]), self.message, place(self.fig)])
        self.add_class("lk-adv-explorer")

    def redraw(self) -> bool:
        try:
            r, G = parse_rewards(self.rewards.value), int(self.G.value)
            if not r or len(r) % G:
                raise ValueError(
                    f"{len(r)} rewards do not split into groups of G = {G}: type a multiple of G"
                )
        except ValueError as e:
            self.message.value = f"<span class='lk-error'>{html.escape(str(e))}</span>"
            return False
        self.message.value = ""
        new = advantages_figure(r, G)
        with self.fig.batch_update():
            for old, tr in zip(self.fig.data, new.data):
                old.update(x=tr.x, y=tr.y)
            self.fig.layout.title = new.layout.title
        return True
