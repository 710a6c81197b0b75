"""AlphaZero's search on tic-tac-toe: MCTS guided by a policy-value network (PUCT).

Silver et al. 2017 ("Mastering the game of Go without human knowledge", Nature 550; Methods)
and 2018 ("A general reinforcement learning algorithm that masters chess, shogi and Go through
self-play", Science 362); the seed's AlphaZero slide (002). ``labkit.classic.mcts`` is the same
loop with UCB and random playouts; here each simulation does

    selection   a = argmax_a Q(s, a) + U(s, a),  U = c_puct P(s, a) sqrt(N(s)) / (1 + N(s, a))
    expansion   at a new leaf s_L: (p, v) = f_theta(s_L), P(s_L, .) = p on the legal moves
    evaluation  v (no playout); a finished game scores its result instead
    backup      N(s, a) += 1, W(s, a) += the value for the player to move at s (sign flips
                at every ply), Q = W / N

and the move is drawn from pi(a|s) ~ N(s, a)^(1/tau). Boards are ``labkit.classic.mcts``'s
(9 cells, 1 = X, -1 = O). Departures: N(s) in U is 1 + sum_b N(s, b), the visit that expanded
s counted too, as the published pseudocode counts every node below the root (with the bare sum
every U is 0 at a node's first selection and the first legal move would win the tie, whatever
the prior), here the root too; c_puct is a constant (the pseudocode's grows with N(s) as
log((1 + N(s) + 19652) / 19652) + 1.25, flat at these counts); the tree is keyed by board, so
transpositions share statistics.
Shape letters: B batch, 9 cells (the actions).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from labkit.classic.mcts import legal, play, to_move, winner

SYMMETRIES = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        [6, 3, 0, 7, 4, 1, 8, 5, 2],
        [8, 7, 6, 5, 4, 3, 2, 1, 0],
        [2, 5, 8, 1, 4, 7, 0, 3, 6],
        [2, 1, 0, 5, 4, 3, 8, 7, 6],
        [0, 3, 6, 1, 4, 7, 2, 5, 8],
        [6, 7, 8, 3, 4, 5, 0, 1, 2],
        [8, 5, 2, 7, 4, 1, 6, 3, 0],
    ]
)
"""The 8 symmetries of the board (4 rotations, each mirrored): new cell i holds old cell
SYMMETRIES[k, i]. AlphaGo Zero augmented with them; AlphaZero dropped them (chess has none)."""


def encode(board: tuple[int, ...]) -> np.ndarray:
    """The board from the view of the player to move: planes (mine, theirs, empty) -> [27].

    >>> encode((1, 0, 0, 0, 0, 0, 0, 0, 0)).reshape(3, 9)[:, :2].tolist()  # O to move
    [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    """
    b = np.asarray(board) * to_move(board)  # [9] +1 mine, -1 theirs
    return np.concatenate([b == 1, b == -1, b == 0]).astype(np.float32)


def value_target(board: tuple[int, ...], z: int) -> int:
    """The value target of a position: the game's result z (+1 X won, -1 O won, 0 draw) from
    the view of the player to move there, z x to_move(s). It flips sign with the mover.

    >>> value_target((0,) * 9, z=1), value_target((1, 0, 0, 0, 0, 0, 0, 0, 0), z=1)
    (1, -1)
    """
    return z * to_move(board)


class PolicyValueNet(torch.nn.Module):
    """f_theta(s) = (p, v): encoded board [B, 27] -> a shared trunk of two ReLU layers ->
    policy logits [B, 9] and a value tanh(.) in [-1, 1] [B] (AlphaZero's two heads on a small
    MLP instead of a residual tower)."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.trunk = torch.nn.Sequential(
            torch.nn.Linear(27, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
        )
        self.policy, self.value = torch.nn.Linear(hidden, 9), torch.nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)  # [B, H]
        return self.policy(h), torch.tanh(self.value(h))[:, 0]  # [B, 9], [B]


class Evaluator:
    """(p over the legal moves [9], v for the player to move) of a board, from a network in
    eval mode; cached by board (the network does not change during a search or a game)."""

    def __init__(self, net: PolicyValueNet):
        self.net, self.cache = net, {}

    def __call__(self, board: tuple[int, ...]) -> tuple[np.ndarray, float]:
        if board not in self.cache:
            with torch.no_grad():
                logits, v = self.net(torch.from_numpy(encode(board))[None])
            logits = logits[0].numpy().astype(np.float64)
            mask = np.asarray(board) == 0  # [9] legal
            p = np.exp(logits - logits[mask].max()) * mask
            self.cache[board] = (p / p.sum(), float(v[0]))
        return self.cache[board]


def puct_scores(Q: np.ndarray, N: np.ndarray, P: np.ndarray, c_puct: float) -> np.ndarray:
    """Q(s, a) + c_puct P(s, a) sqrt(1 + sum_b N(s, b)) / (1 + N(s, a)) for each action [9].

    >>> puct_scores(np.array([0.5, 0.0]), np.array([3, 0]), np.array([0.2, 0.8]), 1.0)
    array([0.6, 1.6])
    """
    return Q + c_puct * P * math.sqrt(1 + N.sum()) / (1 + N)


class Node:
    """Edge statistics of one board: prior P, visits N, total value W (for the mover)."""

    __slots__ = ("N", "P", "W")

    def __init__(self, P: np.ndarray):
        self.P, self.N, self.W = P, np.zeros(9), np.zeros(9)

    def select(self, legal_mask: np.ndarray, c_puct: float) -> int:
        Q = np.divide(self.W, self.N, out=np.zeros(9), where=self.N > 0)  # unvisited: Q = 0
        return int(np.where(legal_mask, puct_scores(Q, self.N, self.P, c_puct), -np.inf).argmax())


def search(
    board: tuple[int, ...],
    evaluate: Evaluator,
    n_simulations: int,
    c_puct: float = 1.5,
    *,
    noise: tuple[float, float] | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """PUCT search from ``board``; returns the root's visit counts N(s, .) [9].

    ``noise=(alpha, eps)``: the root prior becomes (1 - eps) p + eps Dir(alpha), AlphaZero's
    exploration in self-play.

    >>> net = PolicyValueNet(); _ = torch.manual_seed(0)
    >>> int(search((1, 1, 0, -1, -1, 0, 0, 0, 0), Evaluator(net), 100).argmax())  # X wins at 2
    2
    """
    p, _ = evaluate(board)
    if noise is not None:
        if rng is None:
            raise ValueError("noise=(alpha, eps) needs rng, a numpy Generator for Dir(alpha)")
        alpha, eps = noise
        eta = np.zeros(9)
        eta[legal(board)] = rng.dirichlet([alpha] * len(legal(board)))
        p = (1 - eps) * p + eps * eta
    tree = {board: Node(p)}
    for _ in range(n_simulations):
        _simulate(tree, board, evaluate, c_puct)
    return tree[board].N


def _simulate(tree: dict, board: tuple[int, ...], evaluate: Evaluator, c_puct: float) -> None:
    """One simulation from ``board``: select down ``tree`` by PUCT, expand and evaluate the new
    leaf (or score the finished game), back the value up the path."""
    path, s = [], board
    while True:
        if not legal(s):  # a finished game: its result for the player to move
            v = winner(s) * to_move(s)
            break
        if s not in tree:  # expansion and evaluation
            p, v = evaluate(s)
            tree[s] = Node(p)
            break
        a = tree[s].select(np.asarray(s) == 0, c_puct)
        path.append((s, a))
        s = play(s, a)
    for s_, a in reversed(path):  # backup: the edge's value is for the player who moves at s_
        v = -v
        tree[s_].N[a] += 1
        tree[s_].W[a] += v
