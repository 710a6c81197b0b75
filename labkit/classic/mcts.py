"""Monte Carlo tree search on tic-tac-toe: the AlphaZero loop in miniature, without the network.

Each simulation does the four steps of the seed's MCTS slide (002); Kocsis & Szepesvari 2006
(UCT); Browne et al. 2012 (survey):

    selection   walk down the tree by UCB:  argmax_a  Q(s,a) + c sqrt(ln N(s) / N(s,a))
    expansion   add one new child
    evaluation  a random playout to the end (AlphaZero replaces it by the value net v_phi(s),
                and UCB's bonus by the prior p_theta(a|s), its "PUCT" rule)
    backup      add the result to N and W on the path, flipping the sign at every ply

Q(s, a) = W / N is from the view of the player who moved at s. A board is a tuple of 9 cells
(1 = X, -1 = O, 0 = empty); X moves first.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
EMPTY = (0,) * 9


def winner(board: tuple[int, ...]) -> int:
    """1 if X has three in a row, -1 if O has, else 0.

    >>> winner((1, 1, 1, 0, -1, -1, 0, 0, 0))
    1
    """
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


def to_move(board: tuple[int, ...]) -> int:
    """1 (X) when both have played equally often, else -1 (O)."""
    return 1 if board.count(1) == board.count(-1) else -1


def legal(board: tuple[int, ...]) -> list[int]:
    """Empty cells, or none when the game is over."""
    return [] if winner(board) else [i for i in range(9) if board[i] == 0]


def play(board: tuple[int, ...], a: int) -> tuple[int, ...]:
    """The board after the player to move takes cell a."""
    if board[a] != 0:
        raise ValueError(f"cell {a} is taken; legal moves: {legal(board)}")
    return board[:a] + (to_move(board),) + board[a + 1 :]


@cache
def minimax(board: tuple[int, ...]) -> int:
    """Exact game value for X (+1 win, 0 draw, -1 loss) with perfect play: the ground truth.

    >>> minimax(EMPTY)  # tic-tac-toe is a draw
    0
    """
    if winner(board) or not legal(board):
        return winner(board)
    values = [minimax(play(board, a)) for a in legal(board)]
    return max(values) if to_move(board) == 1 else min(values)


def ucb(W: float, n: int, N: int, c: float) -> float:
    """UCB1 score Q + c sqrt(ln N / n); an unvisited child scores +inf (try it first).

    >>> round(ucb(W=3.0, n=4, N=16, c=1.4), 4)  # 0.75 + 1.4 * sqrt(ln 16 / 4)
    1.9156
    """
    return math.inf if n == 0 else W / n + c * math.sqrt(math.log(N) / n)


def _playout(board: tuple[int, ...], rng: np.random.Generator) -> int:
    """Evaluation: random moves to the end; the result for X."""
    while legal(board):
        moves = legal(board)
        board = play(board, moves[rng.integers(len(moves))])
    return winner(board)


def mcts(board: tuple[int, ...], n_simulations: int = 400, c: float = 1.4, seed: int = 0) -> dict:
    """Run MCTS from ``board``; returns {"visits": [9], "q": [9] (for the player to move),
    "best": most visited move}.

    >>> out = mcts((1, 1, 0, -1, -1, 0, 0, 0, 0), n_simulations=200)  # X to move, wins at 2
    >>> out["best"]
    2
    """
    rng = np.random.default_rng(seed)
    N, W = {}, {}  # (board, a) -> visits, total result for the player who plays a at board
    for _ in range(n_simulations):
        path, s = [], board
        while legal(s):  # selection, until a child has never been tried (expansion)
            n_s = sum(N.get((s, a), 0) for a in legal(s))
            a = max(
                legal(s),
                key=lambda a, s=s, n_s=n_s: ucb(
                    W.get((s, a), 0.0), N.get((s, a), 0), max(n_s, 1), c
                ),
            )
            path.append((s, a))
            new = (s, a) not in N
            s = play(s, a)
            if new:
                break
        z = _playout(s, rng)  # evaluation, result for X
        for s_, a in path:  # backup: each edge scores the result for its mover
            N[(s_, a)] = N.get((s_, a), 0) + 1
            W[(s_, a)] = W.get((s_, a), 0.0) + z * to_move(s_)
    visits = np.array([N.get((board, a), 0) for a in range(9)])
    q = np.array([W.get((board, a), 0.0) / max(N.get((board, a), 0), 1) for a in range(9)])
    return {"visits": visits, "q": q, "best": int(visits.argmax())}


def play_game(x_player, o_player, rng: np.random.Generator | None = None) -> int:
    """Play one game; each player is ``fn(board) -> move`` or ``"random"``. Returns winner()."""
    rng = rng or np.random.default_rng(0)
    board = EMPTY
    while legal(board):
        player = x_player if to_move(board) == 1 else o_player
        if player == "random":
            moves = legal(board)
            board = play(board, moves[rng.integers(len(moves))])
        else:
            board = play(board, player(board))
    return winner(board)
