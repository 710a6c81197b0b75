"""DQN on a gridworld: a small network for Q(s, a; theta), experience replay, a target network.

Mnih et al. 2015 (Nature 518, "Human-level control through deep reinforcement learning");
the seed's DQN slide (002); cleanrl's ``dqn.py`` for the loop. The loss is the squared TD error

    L(theta) = E_(s,a,r,s')~D [(r + gamma (1 - done) max_a' Q(s', a'; theta^-) - Q(s, a; theta))^2]

Two switches remove each piece: ``replay=False`` learns from the newest transition only (no
buffer D, consecutive correlated samples); ``target_network=False`` uses theta itself in the
target (theta^- = theta), the target moves with every step. Two options add the best-known
repairs: ``target="double"`` is Double DQN (van Hasselt et al. 2016, 1509.06461: the online
network picks a', theta^- values it), ``head="dueling"`` the dueling head (Wang et al. 2016,
1511.06581; ``labkit.classic.dueling``). The state is one-hot.
Shape letters: B batch, S states, A actions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from labkit.classic._threads import one_thread
from labkit.classic.dueling import DuelingQNetwork
from labkit.classic.envs import TabularMDP
from labkit.core.options import choose

TARGETS = ("dqn", "double")
"""How a' in the TD target is picked: by theta^- (DQN's max) or by theta (Double DQN)."""
HEADS = ("q", "dueling")
"""The network's last layer: Q(s, .) directly, or V(s) + A(s, .) - mean A (dueling)."""


@dataclass
class DQNConfig:
    """DQN hyper-parameters (names as in cleanrl's dqn.py where it has them)."""

    total_timesteps: int = 3000  # environment steps
    learning_rate: float = 1e-3  # Adam
    gamma: float = 0.9  # discount
    batch_size: int = 32  # transitions per update (1 when replay is off)
    buffer_size: int = 5000  # replay memory D
    learning_starts: int = 200  # random-ish steps before the first update
    target_network_frequency: int = 100  # steps between theta^- <- theta
    start_e: float = 1.0  # epsilon at step 0
    end_e: float = 0.05  # epsilon after exploration_steps
    exploration_steps: int = 1500  # linear decay of epsilon
    hidden: int = 64  # width of the two hidden layers
    max_episode_steps: int = 50  # episodes are cut here (a time limit, not a terminal)
    replay: bool = True  # False: no buffer, learn from the newest transition
    target_network: bool = True  # False: bootstrap from the online network theta
    target: str = "dqn"  # one of TARGETS: "double" picks a' with theta, values it with theta^-
    head: str = "q"  # one of HEADS: "dueling" is Q = V + A - mean_a A
    seed: int = 0

    def __post_init__(self):
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        if not 0.0 <= self.end_e <= self.start_e <= 1.0:
            raise ValueError("need 0 <= end_e <= start_e <= 1 (epsilon schedule)")
        for name in (
            "total_timesteps",
            "batch_size",
            "buffer_size",
            "target_network_frequency",
            "exploration_steps",
            "hidden",
            "max_episode_steps",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0; got {self.learning_rate}")
        choose("target", self.target, TARGETS)
        choose("head", self.head, HEADS)


def q_network(
    n_states: int, n_actions: int, hidden: int = 64, device=None, *, head: str = "q"
) -> torch.nn.Module:
    """Q(s, .; theta): one-hot state [B, S] -> action values [B, A], built on ``device``;
    ``head="dueling"``: :class:`~labkit.classic.dueling.DuelingQNetwork` on the same trunk."""
    if choose("head", head, HEADS) == "dueling":
        return DuelingQNetwork(n_states, n_actions, hidden, device)
    return torch.nn.Sequential(
        torch.nn.Linear(n_states, hidden, device=device),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden, device=device),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, n_actions, device=device),
    )


def resolve_device(device=None) -> torch.device:
    """``"auto"``: cuda, then mps, then cpu; None: cpu; else ``torch.device(device)``. The rule
    of ``labkit.models.device.resolve_device`` (a sibling layer classic/ does not import).

    >>> resolve_device(), resolve_device("cpu")
    (device(type='cpu'), device(type='cpu'))
    """
    if device != "auto":
        return torch.device(device or "cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    return torch.device("mps" if mps is not None and mps.is_available() else "cpu")


def dqn_target(
    r: torch.Tensor,
    done: torch.Tensor,
    q_next: torch.Tensor,
    gamma: float,
    *,
    q_next_online: torch.Tensor | None = None,
) -> torch.Tensor:
    """The TD target y [B] (no gradient):

        DQN         y = r + gamma (1 - done) max_a' Q(s', a'; theta^-)
        Double DQN  y = r + gamma (1 - done) Q(s', argmax_a' Q(s', a'; theta); theta^-)

    r, done: [B]; q_next: [B, A] Q(s', .; theta^-) (or theta); q_next_online: [B, A]
    Q(s', .; theta), given for Double DQN (van Hasselt, Guez & Silver 2016, 1509.06461, eq. 4).

    >>> r, done = torch.tensor([1.]), torch.tensor([0.])
    >>> q_next, online = torch.tensor([[0., 4.]]), torch.tensor([[5., 3.]])  # theta^-, theta
    >>> dqn_target(r, done, q_next, 0.5).item()  # 1 + 0.5 * max(0, 4)
    3.0
    >>> dqn_target(r, done, q_next, 0.5, q_next_online=online).item()  # a' = 0: 1 + 0.5 * 0
    1.0
    """
    q_next = q_next.detach()  # [B, A]
    if q_next_online is None:  # DQN: theta^- both picks and values a'
        v_next = q_next.max(-1).values  # [B]
    else:  # Double DQN (van Hasselt et al. 2016, eq. 4): theta picks a', theta^- values it
        a_next = q_next_online.detach().argmax(-1, keepdim=True)  # [B, 1]
        v_next = q_next.gather(1, a_next).squeeze(1)  # [B]
    return r + gamma * (1.0 - done) * v_next  # [B]


def dqn_loss(
    q: torch.Tensor,
    a: torch.Tensor,
    r: torch.Tensor,
    done: torch.Tensor,
    q_next: torch.Tensor,
    gamma: float,
    *,
    q_next_online: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict]:
    """Squared TD error (y - Q(s, a; theta))^2 with y from :func:`dqn_target` (DQN's, or
    Double DQN's when ``q_next_online`` is given); no gradient through y.

    q: [B, A] Q(s, .; theta); a, r, done: [B]; q_next, q_next_online: [B, A].

    >>> q = torch.tensor([[1., 2.]], requires_grad=True)
    >>> loss, stats = dqn_loss(q, torch.tensor([1]), torch.tensor([1.]), torch.tensor([0.]),
    ...                        torch.tensor([[0., 4.]]), gamma=0.5)
    >>> loss.item(), stats["td_abs"]  # y = 1 + 0.5 * 4 = 3, Q(s, 1) = 2
    (1.0, 1.0)
    """
    y = dqn_target(r, done, q_next, gamma, q_next_online=q_next_online)  # [B]
    q_sa = q.gather(1, a.long()[:, None]).squeeze(1)  # [B]
    td = y - q_sa  # [B]
    return (td**2).mean(), {"td_abs": td.abs().mean().item(), "q_mean": q_sa.mean().item()}


class ReplayBuffer:
    """A ring buffer D of transitions (s, a, r, s', done), sampled uniformly."""

    def __init__(self, size: int):
        self.size, self.n, self.i = size, 0, 0
        self.data = np.zeros((size, 5))  # [N, 5]: s, a, r, s', done

    def add(self, s: int, a: int, r: float, s2: int, done: bool) -> None:
        self.data[self.i] = (s, a, r, s2, done)
        self.i, self.n = (self.i + 1) % self.size, min(self.n + 1, self.size)

    def sample(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        return self.data[rng.integers(self.n, size=batch_size)]  # [B, 5]


def _epsilon(cfg: DQNConfig, step: int) -> float:
    frac = min(step / cfg.exploration_steps, 1.0)
    return cfg.start_e + frac * (cfg.end_e - cfg.start_e)


def _update(net, target, opt, batch: np.ndarray, cfg: DQNConfig, eye: torch.Tensor) -> dict:
    s, a, r, s2, done = (
        torch.as_tensor(batch[:, i], device=eye.device) for i in range(5)
    )  # each [B], one host-to-device copy each
    q = net(eye[s.long()])  # [B, A]
    with torch.no_grad():
        q_next = (target if cfg.target_network else net)(eye[s2.long()])  # [B, A]
        q_next_online = net(eye[s2.long()]) if cfg.target == "double" else None  # [B, A]
    loss, stats = dqn_loss(
        q, a, r.float(), done.float(), q_next, cfg.gamma, q_next_online=q_next_online
    )
    opt.zero_grad()
    loss.backward()
    opt.step()
    return {"loss": loss.item(), **stats}


@one_thread
def train_dqn(
    mdp: TabularMDP,
    cfg: DQNConfig,
    Q_star: np.ndarray | None = None,
    callback: Callable[[int, dict], None] | None = None,
    every: int = 250,
    device=None,
) -> tuple[torch.nn.Module, dict]:
    """Train DQN for cfg.total_timesteps steps; returns (network, stats).

    ``device``: where the networks and every tensor of an update live (None: cpu; ``"auto"``:
    cuda, then mps, then cpu). The environment stays on the host: each action is one sync.

    stats: "returns" and "episode_end" (step) per episode, "loss" per update, and, every
    ``every`` steps, "eval_step", and when ``Q_star`` is given "q_error" (mean |Q(s,a; theta) -
    Q*(s,a)| over reachable non-terminal states), "max_q_bias" (mean of max_a Q(s,a; theta) -
    V*(s) there: the overestimation of van Hasselt et al. 2016, fig. 3) and "Q" (the [S, A]
    table). ``callback(step, stats)`` runs then too.

    >>> from labkit.classic.envs import gridworld
    >>> net, stats = train_dqn(gridworld(), DQNConfig(total_timesteps=300))
    >>> len(stats["loss"]) > 0
    True
    """
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    dev = resolve_device(device)
    eye = torch.eye(mdp.n_states, device=dev)  # [S, S] one-hot features
    net = q_network(mdp.n_states, mdp.n_actions, cfg.hidden, dev, head=cfg.head)
    target = q_network(mdp.n_states, mdp.n_actions, cfg.hidden, dev, head=cfg.head)
    target.load_state_dict(net.state_dict())
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)
    D = ReplayBuffer(cfg.buffer_size if cfg.replay else 1)
    stats = {"returns": [], "episode_end": [], "loss": [], "eval_step": []}
    stats |= {"q_error": [], "max_q_bias": [], "Q": []}
    s, G, t = mdp.reset(rng), 0.0, 0
    for step in range(1, cfg.total_timesteps + 1):
        if rng.random() < _epsilon(cfg, step):
            a = int(rng.integers(mdp.n_actions))
        else:
            with torch.no_grad():
                a = int(net(eye[s]).argmax())
        s2, r, done = mdp.step(s, a, rng)
        D.add(s, a, r, s2, done)
        G, t, s = G + r, t + 1, s2
        if done or t >= cfg.max_episode_steps:  # a time limit is not a terminal: keep done=0
            stats["returns"].append(G)
            stats["episode_end"].append(step)
            s, G, t = mdp.reset(rng), 0.0, 0
        if step >= cfg.learning_starts:
            batch = D.sample(cfg.batch_size, rng) if cfg.replay else D.data[:1]
            stats["loss"].append(_update(net, target, opt, batch, cfg, eye)["loss"])
        if cfg.target_network and step % cfg.target_network_frequency == 0:
            target.load_state_dict(net.state_dict())  # theta^- <- theta
        if step % every == 0 or step == cfg.total_timesteps:
            _evaluate(net, mdp, Q_star, step, stats, eye)
            if callback is not None:
                callback(step, stats)
    return net, stats


def _evaluate(net, mdp: TabularMDP, Q_star, step: int, stats: dict, eye: torch.Tensor) -> None:
    stats["eval_step"].append(step)
    if Q_star is not None:
        with torch.no_grad():
            Q = net(eye).cpu().numpy()  # [S, A]
        live = mdp.reachable & ~mdp.terminal  # [S]
        stats["q_error"].append(float(np.abs(Q - Q_star)[live].mean()))
        stats["max_q_bias"].append(float((Q.max(-1) - Q_star.max(-1))[live].mean()))
        stats["Q"].append(Q)


def q_table(net: torch.nn.Module, n_states: int) -> np.ndarray:
    """The network's Q(s, a) for every one-hot state: [S, A] (for plots and greedy paths)."""
    dev = next(net.parameters()).device
    with torch.no_grad():
        return net(torch.eye(n_states, device=dev)).cpu().numpy()


def greedy_return(mdp: TabularMDP, Q: np.ndarray, gamma: float, max_steps: int = 100) -> float:
    """Discounted return of the greedy policy argmax_a Q in a deterministic MDP, from s_0.

    Equals V*(s_0) exactly when the greedy policy is optimal.

    >>> from labkit.classic.envs import random_walk
    >>> greedy_return(random_walk(), np.array([[0., 1.]] * 7), gamma=0.5)  # 3 steps right
    0.25
    """
    rng = np.random.default_rng(0)
    s, G = int(mdp.p0.argmax()), 0.0
    for t in range(max_steps):
        s, r, done = mdp.step(s, int(Q[s].argmax()), rng)
        G += gamma**t * r
        if done:
            break
    return G
