"""AlphaZero's loop on tic-tac-toe: self-play with PUCT search, training on the search's results,
and the scores that say whether it worked.

Silver et al. 2017 (Nature 550, Methods) and 2018 (Science 362); the seed's training loop (002):
1. play games against itself, each move from the search's visit counts pi(a|s) ~ N(s, a)^(1/tau)
   (``labkit.classic.alphazero.search``, Dirichlet noise at the root);
2. record (s, pi_MCTS, z) for every position, z the result for the player to move there;
3. fit p_theta -> pi_MCTS and v_theta -> z:  l = (z - v)^2 - pi^T log p + c ||theta||^2;
4. repeat.

Departures, at toy scale: a replay buffer of the latest positions and the 8 board symmetries
(AlphaGo Zero's augmentation); tau = 1 for the first ``temperature_moves`` moves, then the most
visited move; c ||theta||^2 as Adam's weight decay; one network, trained continuously (no
evaluator gating, as in AlphaZero).

Scoring: the exact game values (``labkit.classic.mcts.minimax``) over every reachable position
give the raw network's value error and how often its top move is optimal; matches against a
random player and pure MCTS (UCB + random playouts) at the same number of simulations give a
score (wins + draws / 2) / games.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch

from labkit.classic._threads import one_thread
from labkit.classic.alphazero import (
    SYMMETRIES,
    Evaluator,
    PolicyValueNet,
    encode,
    search,
    value_target,
)
from labkit.classic.mcts import EMPTY, legal, mcts, minimax, play, play_game, to_move, winner


@dataclass
class AlphaZeroConfig:
    """Self-play and training on tic-tac-toe (names from the AlphaZero pseudocode where it
    has them)."""

    iterations: int = 40  # self-play + training rounds
    games_per_iteration: int = 10  # self-play games a round
    num_simulations: int = 32  # PUCT simulations per move
    c_puct: float = 1.5  # exploration constant in U(s, a)
    root_dirichlet_alpha: float = 0.5  # Dir(alpha) noise at the root in self-play
    root_exploration_fraction: float = 0.25  # eps: P = (1 - eps) p + eps eta
    temperature_moves: int = 3  # tau = 1 for these first moves, then the most visited
    updates_per_iteration: int = 100  # gradient steps a round
    batch_size: int = 64  # positions per gradient step
    buffer_size: int = 20000  # latest positions kept, symmetries included
    learning_rate: float = 3e-3  # Adam
    weight_decay: float = 1e-4  # c
    hidden: int = 64  # width of the trunk
    train: bool = True  # False: the untrained network, searched the same way (a control)
    seed: int = 0

    def __post_init__(self):
        for name in ("iterations", "games_per_iteration", "num_simulations", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if not 0.0 <= self.root_exploration_fraction <= 1.0 or self.c_puct <= 0:
            raise ValueError("need 0 <= root_exploration_fraction <= 1 and c_puct > 0")


def self_play_game(evaluate: Evaluator, cfg: AlphaZeroConfig, rng: np.random.Generator):
    """One game against itself: [(board, pi [9], z for the player to move)] per position."""
    board, history = EMPTY, []
    noise = (cfg.root_dirichlet_alpha, cfg.root_exploration_fraction)
    while legal(board):
        N = search(board, evaluate, cfg.num_simulations, cfg.c_puct, noise=noise, rng=rng)  # [9]
        pi = N / N.sum()
        history.append((board, pi))
        a = rng.choice(9, p=pi) if len(history) <= cfg.temperature_moves else int(N.argmax())
        board = play(board, a)
    z = winner(board)
    return [(s, pi, value_target(s, z)) for s, pi in history]


def augment(records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each (board, pi, z) under the 8 symmetries: x [8n, 27], pi [8n, 9], z [8n]."""
    xs, pis, zs = [], [], []
    for board, pi, z in records:
        for perm in SYMMETRIES:
            xs.append(encode(tuple(np.asarray(board)[perm])))
            pis.append(pi[perm])
            zs.append(z)
    return (
        np.array(xs, dtype=np.float32).reshape(-1, 27),
        np.array(pis, dtype=np.float32).reshape(-1, 9),
        np.array(zs, dtype=np.float32),
    )


def alphazero_loss(
    logits: torch.Tensor, v: torch.Tensor, pi: torch.Tensor, z: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """l = (z - v)^2 - pi^T log p, the mean over the batch (Silver et al. 2017, eq. 1;
    the c ||theta||^2 term is the optimizer's weight decay). logits: [B, 9] of p, v: [B],
    pi: [B, 9] the search's visit distribution, z: [B] the result for the player to move.

    >>> logits, pi = torch.zeros(1, 9), torch.eye(9)[:1]  # p uniform, the search chose cell 0
    >>> loss, stats = alphazero_loss(logits, torch.tensor([0.5]), pi, torch.tensor([1.0]))
    >>> round(loss.item(), 4)  # (1 - 0.5)^2 + log 9 = 0.25 + 2.1972
    2.4472
    """
    value_loss = ((z - v) ** 2).mean()  # []
    policy_loss = -(pi * torch.log_softmax(logits, -1)).sum(-1).mean()  # []
    stats = {"loss/value": value_loss.detach(), "loss/policy": policy_loss.detach()}
    return value_loss + policy_loss, stats


@cache
def positions() -> tuple[tuple[int, ...], ...]:
    """Every position reachable from the empty board with the game still on (4,520)."""
    seen, frontier = set(), [EMPTY]
    while frontier:
        s = frontier.pop()
        if s in seen or not legal(s):
            continue
        seen.add(s)
        frontier += [play(s, a) for a in legal(s)]
    return tuple(sorted(seen))


@cache
def _exact() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Encoded positions [n, 27], their value for the mover [n], optimal-move masks [n, 9]."""
    boards = positions()
    v = np.array([minimax(s) * to_move(s) for s in boards], dtype=np.float32)
    best = np.zeros((len(boards), 9), dtype=bool)
    for i, s in enumerate(boards):
        for a in legal(s):
            best[i, a] = minimax(play(s, a)) == minimax(s)
    return np.array([encode(s) for s in boards]), v, best


def position_scores(net: PolicyValueNet) -> dict:
    """The raw network (no search) against the exact game: mean (v - v*)^2 over every
    reachable position, and the fraction whose top legal move is minimax-optimal."""
    x, v_star, best = _exact()
    with torch.no_grad():
        logits, v = net(torch.from_numpy(x))
    legal_mask = x[:, 18:27] > 0  # the empty plane
    top = np.where(legal_mask, logits.numpy(), -np.inf).argmax(1)
    return {
        "value error": float(((v.numpy() - v_star) ** 2).mean()),
        "optimal move rate": float(best[np.arange(len(top)), top].mean()),
    }


@one_thread
def train_alphazero(
    cfg: AlphaZeroConfig, callback: Callable[[int, dict], None] | None = None
) -> tuple[PolicyValueNet, dict]:
    """``cfg.iterations`` rounds of self-play and training; returns (network, stats), per
    round: "loss/value", "loss/policy" (mean over its updates), "value error" and "optimal
    move rate" (:func:`position_scores`), "positions" (in the buffer). ``callback(round,
    stats)`` after each (round 0: the untrained network, before any game).

    >>> net, st = train_alphazero(AlphaZeroConfig(iterations=1, games_per_iteration=1,
    ...                                           num_simulations=4, updates_per_iteration=1))
    >>> len(st["value error"]), st["positions"][-1] > 0
    (2, True)
    """
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    net = PolicyValueNet(cfg.hidden).eval()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    keys = ("loss/value", "loss/policy", "value error", "optimal move rate", "positions")
    stats, buffer, no_loss = {k: [] for k in keys}, augment([]), dict.fromkeys(keys[:2], np.nan)
    _record(stats, net, no_loss, positions=0, it=0, callback=callback)
    for it in range(1, cfg.iterations + 1):
        if cfg.train:
            evaluate = Evaluator(net)  # fixed during the round's games
            games = [self_play_game(evaluate, cfg, rng) for _ in range(cfg.games_per_iteration)]
            new = augment([r for g in games for r in g])
            buffer = tuple(np.concatenate([b, n])[-cfg.buffer_size :] for b, n in zip(buffer, new))
            losses = _train_round(net, opt, buffer, cfg, rng=rng)
        else:
            losses = no_loss
        _record(stats, net, losses, positions=len(buffer[0]), it=it, callback=callback)
    return net, stats


def _train_round(net, opt, data, cfg: AlphaZeroConfig, *, rng: np.random.Generator) -> dict:
    x, pi, z = (torch.from_numpy(d) for d in data)
    net.train()
    seen = []
    for _ in range(cfg.updates_per_iteration):
        i = torch.from_numpy(rng.integers(len(x), size=cfg.batch_size))
        loss, info = alphazero_loss(*net(x[i]), pi[i], z[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen.append(info)
    net.eval()
    return {k: float(torch.stack([s[k] for s in seen]).mean()) for k in seen[0]}


def _record(stats: dict, net, losses: dict, *, positions: int, it: int, callback) -> None:
    for k, v in (losses | position_scores(net) | {"positions": positions}).items():
        stats[k].append(v)
    if callback is not None:
        callback(it, stats)


def alphazero_player(net: PolicyValueNet, n_simulations: int, c_puct: float = 1.5):
    """``fn(board) -> move``: PUCT search with the network, no noise, the most visited move."""
    evaluate = Evaluator(net.eval())
    return lambda board: int(search(board, evaluate, n_simulations, c_puct).argmax())


def mcts_player(n_simulations: int, rng: np.random.Generator):
    """``fn(board) -> move``: pure MCTS (UCB, random playouts), ``labkit.classic.mcts``."""
    return lambda board: mcts(board, n_simulations, seed=int(rng.integers(1 << 30)))["best"]


def match(player, opponent, games: int, rng: np.random.Generator) -> dict:
    """``games`` games, half with ``player`` as X; wins, draws, losses (for ``player``) and
    the score (wins + draws / 2) / games. Players as in ``labkit.classic.mcts.play_game``.

    >>> first = lambda board: legal(board)[0]
    >>> match(first, first, 2, np.random.default_rng(0))["score"]  # X wins both
    0.5
    """
    results = []
    for g in range(games):
        if g % 2 == 0:
            results.append(play_game(player, opponent, rng))
        else:
            results.append(-play_game(opponent, player, rng))
    w, d, losses = results.count(1), results.count(0), results.count(-1)
    return {"wins": w, "draws": d, "losses": losses, "score": (w + d / 2) / games}
