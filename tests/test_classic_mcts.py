"""MCTS on tic-tac-toe against the exact minimax values."""

import numpy as np

from labkit.classic.mcts import EMPTY, legal, mcts, minimax, play, play_game, to_move, ucb


def test_minimax_ground_truth():
    assert minimax(EMPTY) == 0  # perfect play draws
    assert minimax((1, 1, 0, -1, -1, 0, 0, 0, 0)) == 1  # X to move wins at 2


def test_mcts_wins_now_and_blocks():
    assert mcts((1, 1, 0, -1, -1, 0, 0, 0, 0), 200)["best"] == 2  # X completes the top row
    board = (1, 1, 0, -1, 0, 0, 0, 0, 0)  # O to move must block at 2
    assert to_move(board) == -1 and mcts(board, 400)["best"] == 2


def test_mcts_moves_are_minimax_optimal_on_random_positions():
    rng, checked = np.random.default_rng(0), 0
    while checked < 30:
        board = EMPTY
        for _ in range(rng.integers(1, 6)):
            board = (
                play(board, legal(board)[rng.integers(len(legal(board)))])
                if legal(board)
                else board
            )
        if not legal(board):
            continue
        best = mcts(board, 1000, seed=checked)["best"]
        assert minimax(play(board, best)) == minimax(board), board
        checked += 1


def test_mcts_never_loses_to_random_and_draws_itself():
    rng = np.random.default_rng(1)

    def agent(sims):
        return lambda board: mcts(board, sims, seed=int(rng.integers(1 << 30)))["best"]

    as_x = [play_game(agent(200), "random", rng) for _ in range(10)]
    as_o = [play_game("random", agent(200), rng) for _ in range(10)]
    assert min(as_x) >= 0 and max(as_o) <= 0  # never loses
    assert as_x.count(1) >= 8 and as_o.count(-1) >= 6  # and mostly wins (X can't force a win)
    assert all(play_game(agent(500), agent(500), rng) == 0 for _ in range(3))  # perfect play


def test_ucb_prefers_unvisited_then_balances():
    assert ucb(0.0, 0, 10, 1.4) == float("inf")
    assert ucb(1.0, 2, 10, 0.0) == 0.5  # c = 0: pure exploitation
    assert ucb(0.0, 1, 100, 1.0) > ucb(0.0, 50, 100, 1.0)  # rarely tried gets the bonus
