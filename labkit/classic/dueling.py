"""The dueling head: Q(s, a) from a state value V(s) and advantages A(s, a) on a shared trunk.

Wang et al. 2016, "Dueling Network Architectures for Deep Reinforcement Learning" (ICML, arXiv
1511.06581), eq. 9:

    Q(s, a) = V(s) + A(s, a) - 1/|A| sum_a' A(s, a')

V + A alone is unidentifiable (add c to V and subtract it from A: the same Q). Subtracting the
mean advantage fixes it: then V(s) = mean_a Q(s, a), the advantages sum to zero in each state,
and every Q table is reachable (V = mean_a Q, A = Q - mean_a Q). Why it can learn faster: a
transition from s trains V(s), which moves the value of every action in s, not only the one
taken; the paper's corridor shows the gain growing with the number of similar-valued actions.
Shape letters: B batch, S states, A actions.
"""

from __future__ import annotations

import torch


def dueling_q(V: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """Q = V + A - mean_a A (Wang et al. 2016, eq. 9). V: [B, 1], A: [B, A] -> Q: [B, A].

    >>> dueling_q(torch.tensor([[1.0]]), torch.tensor([[3.0, 1.0]]))  # mean A = 2
    tensor([[2., 0.]])
    """
    return V + A - A.mean(-1, keepdim=True)  # [B, A]


def split_q(Q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The (V, A) that :func:`dueling_q` maps back to ``Q``: V = mean_a Q, A = Q - V.

    >>> V, A = split_q(torch.tensor([[2.0, 0.0]]))
    >>> V.tolist(), A.tolist()
    ([[1.0]], [[1.0, -1.0]])
    """
    V = Q.mean(-1, keepdim=True)  # [B, 1]
    return V, Q - V  # [B, 1], [B, A]


class DuelingQNetwork(torch.nn.Module):
    """One-hot state [B, S] -> trunk (two ReLU layers of ``hidden``) -> V [B, 1] and A [B, A]
    -> Q [B, A] by :func:`dueling_q`. The same trunk as ``labkit.classic.dqn.q_network``; the
    paper's streams have a hidden layer each, here each is one linear layer (the toy is small).

    >>> net = DuelingQNetwork(4, 3, hidden=8)
    >>> net(torch.eye(4)).shape, net.streams(torch.eye(4))[1].mean(-1).abs().max().item() < 1e-6
    (torch.Size([4, 3]), True)
    """

    def __init__(self, n_states: int, n_actions: int, hidden: int = 64, device=None):
        super().__init__()
        self.trunk = torch.nn.Sequential(
            torch.nn.Linear(n_states, hidden, device=device),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden, device=device),
            torch.nn.ReLU(),
        )
        self.value = torch.nn.Linear(hidden, 1, device=device)
        self.advantage = torch.nn.Linear(hidden, n_actions, device=device)

    def streams(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(V [B, 1], A - mean_a A [B, A]): the two identifiable parts of Q."""
        h = self.trunk(x)  # [B, H]
        A = self.advantage(h)  # [B, A]
        return self.value(h), A - A.mean(-1, keepdim=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x)  # [B, H]
        return dueling_q(self.value(h), self.advantage(h))  # [B, A]
