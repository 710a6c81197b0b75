"""AlphaZero on tic-tac-toe: PUCT on a hand-made node, the loss and its gradient in closed form,
the value target's sign, the search finding a win in one and the block, the board symmetries,
the exact position set, and (slow) self-play training that improves the network on a fixed
seed."""

import math

import numpy as np
import pytest
import torch

from labkit.classic.alphazero import (
    SYMMETRIES,
    Evaluator,
    Node,
    PolicyValueNet,
    encode,
    puct_scores,
    search,
    value_target,
)
from labkit.classic.mcts import EMPTY, legal, minimax, play, to_move, winner
from labkit.classic.self_play import (
    AlphaZeroConfig,
    alphazero_loss,
    augment,
    match,
    positions,
    self_play_game,
    train_alphazero,
)


def test_puct_selection_on_a_hand_made_node():
    node = Node(np.array([0.2, 0.3, 0.5, 0, 0, 0, 0, 0, 0]))
    node.N[:3], node.W[:3] = [10, 2, 0], [6.0, 1.5, 0.0]
    # sqrt(1 + 12) = 3.6056; c = 1: a0 0.6 + 0.2 * 3.6056 / 11 = 0.6656,
    # a1 0.75 + 0.3 * 3.6056 / 3 = 1.1106, a2 0 + 0.5 * 3.6056 / 1 = 1.8028
    Q = np.divide(node.W, node.N, out=np.zeros(9), where=node.N > 0)
    np.testing.assert_allclose(
        puct_scores(Q, node.N, node.P, 1.0)[:3],
        [0.6 + 0.2 * math.sqrt(13) / 11, 0.75 + 0.3 * math.sqrt(13) / 3, 0.5 * math.sqrt(13)],
    )
    legal_mask = np.array([True] * 3 + [False] * 6)
    assert node.select(legal_mask, c_puct=1.0) == 2  # the prior's pull on the unvisited move
    assert node.select(legal_mask, c_puct=0.1) == 1  # small c: the best Q (0.786 vs 0.607, 0.18)
    legal_mask[2] = False
    assert node.select(legal_mask, c_puct=1.0) == 1  # illegal moves are never picked


def test_alphazero_loss_and_its_gradient_in_closed_form():
    logits = torch.tensor([[1.0, 0.0, -1.0] + [0.0] * 6], requires_grad=True)
    v = torch.tensor([0.2], requires_grad=True)
    pi, z = torch.tensor([[0.5, 0.25, 0.25] + [0.0] * 6]), torch.tensor([-1.0])
    loss, stats = alphazero_loss(logits, v, pi, z)
    p = torch.softmax(logits.detach(), -1)
    assert stats["loss/value"].item() == pytest.approx(1.2**2)  # (z - v)^2
    assert stats["loss/policy"].item() == pytest.approx(-(pi * p.log()).sum().item())
    loss.backward()
    torch.testing.assert_close(logits.grad, p - pi)  # d(-pi^T log softmax)/d logits = p - pi
    torch.testing.assert_close(v.grad, torch.tensor([2 * 1.2]))  # d(z - v)^2/dv = -2 (z - v)


def test_value_target_flips_sign_with_the_player_to_move():
    x_won = (1, 1, 1, -1, -1, 0, 0, 0, 0)  # a game X won: +1 where X moves, -1 where O moves
    assert [value_target(b, winner(x_won)) for b in (EMPTY, (1,) + (0,) * 8)] == [1, -1]
    assert [value_target(b, -1) for b in (EMPTY, (1,) + (0,) * 8)] == [-1, 1]  # O won
    assert value_target((1,) + (0,) * 8, 0) == 0  # a draw is 0 for both
    rng, net = np.random.default_rng(0), PolicyValueNet()
    for _ in range(3):  # in self-play records: target x to_move is the one result z of the game
        records = self_play_game(Evaluator(net), AlphaZeroConfig(num_simulations=8), rng)
        z = {target * to_move(board) for board, _, target in records}
        assert len(z) == 1 and z <= {-1, 0, 1}
        assert len({to_move(b) for b, _, _ in records}) == 2  # both players' positions
        for board, pi, _ in records:
            assert pi.sum() == pytest.approx(1.0) and (pi[np.asarray(board) != 0] == 0).all()


def test_search_backs_up_wins_with_the_right_sign():
    torch.manual_seed(0)
    ev = Evaluator(PolicyValueNet())
    x_wins_at_2 = (1, 1, 0, -1, -1, 0, 0, 0, 0)  # X to move
    assert int(search(x_wins_at_2, ev, 64).argmax()) == 2
    o_must_block = (1, 1, 0, -1, 0, 0, 0, 0, 0)  # O to move; every other move loses
    assert to_move(o_must_block) == -1 and int(search(o_must_block, ev, 200).argmax()) == 2


def test_symmetries_map_boards_to_boards_and_keep_the_game_value():
    assert sorted(map(tuple, np.sort(SYMMETRIES, 1))) == [tuple(range(9))] * 8  # permutations
    assert len({tuple(p) for p in SYMMETRIES}) == 8
    board = (1, 0, 0, -1, 1, 0, 0, 0, -1)  # X to move: a position with one winning line
    for perm in SYMMETRIES:
        image = tuple(np.asarray(board)[perm])
        assert minimax(image) == minimax(board)
        for i in range(9):  # move i on the image is move perm[i] on the board
            if image[i] == 0:
                assert minimax(play(image, i)) == minimax(play(board, perm[i]))
    x, pi, z = augment([(board, np.eye(9)[2], 1)])
    assert x.shape == (8, 27) and pi.shape == (8, 9) and (z == 1).all()
    assert all(pi[k, list(SYMMETRIES[k]).index(2)] == 1 for k in range(8))
    np.testing.assert_array_equal(x[0], encode(board))


def test_every_reachable_position_once():
    boards = positions()
    assert len(boards) == 4520  # 5,478 legal positions, 958 of them finished
    assert EMPTY in boards and all(legal(b) for b in boards)


def test_match_scores_wins_draws_and_losses():
    first = lambda b: legal(b)[0]
    r = match(first, "random", 10, np.random.default_rng(0))
    assert r["wins"] + r["draws"] + r["losses"] == 10
    assert r["score"] == pytest.approx((r["wins"] + r["draws"] / 2) / 10)


@pytest.mark.slow
def test_self_play_training_improves_the_network():
    _, st = train_alphazero(AlphaZeroConfig(iterations=10, seed=0))
    assert st["optimal move rate"][-1] > st["optimal move rate"][0] + 0.1
    assert st["value error"][-1] < st["value error"][0] - 0.05
    assert st["positions"][0] == 0 < st["positions"][1] <= st["positions"][-1]  # 8 per record
