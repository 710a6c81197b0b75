"""Small MDPs as explicit tables: gymnasium's toy-text worlds, a gridworld and a random walk.

Every environment here is a :class:`TabularMDP`: the full model ``P(s'|s, a)``, the reward of
each transition and whether it ends the episode. Dynamic programming reads the tables; the
sampling methods (MC, TD, Q-learning, DQN, policy gradient) only call :meth:`TabularMDP.step`,
so they see the world the way an agent does.

Shape letters: S states, A actions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Arrow per action index, in each environment's own action order.
FROZEN_LAKE_ARROWS = ("←", "↓", "→", "↑")  # gymnasium FrozenLake: 0 left, 1 down, 2 right, 3 up
CLIFF_ARROWS = ("↑", "→", "↓", "←")  # gymnasium CliffWalking: 0 up, 1 right, 2 down, 3 left
GRID_MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # our gridworld uses CliffWalking's order

# Our own gridworld (gymnasium has none with walls and a pit). S start, G goal (+1),
# H pit (-1), # wall, . free. The shortest path (8 steps) passes next to the pit.
DEFAULT_GRID = (
    "S...#",
    ".##..",
    "...#.",
    ".#H..",
    "....G",
)


@dataclass
class TabularMDP:
    """A finite MDP given by tables.

    P[s, a, s'] is P(s'|s, a); R[s, a, s'] the reward of that transition; done[s, a, s'] is 1
    when it ends the episode (then nothing is bootstrapped from s'). Terminal states are made
    absorbing with zero reward, so every method gives them V = 0.
    """

    P: np.ndarray  # [S, A, S]
    R: np.ndarray  # [S, A, S]
    done: np.ndarray  # [S, A, S]
    p0: np.ndarray  # [S] start distribution
    shape: tuple[int, int] | None = None  # (rows, cols) when the states are grid cells
    arrows: tuple[str, ...] = FROZEN_LAKE_ARROWS
    labels: tuple[str, ...] | None = None  # one letter per state (S, G, H, #, ...) for plots
    name: str = "mdp"
    terminal: np.ndarray = field(init=False)  # [S] bool, episode over
    reachable: np.ndarray = field(init=False)  # [S] bool, can ever be occupied

    def __post_init__(self):
        S, _, S2 = self.P.shape
        if S != S2 or self.R.shape != self.P.shape or self.done.shape != self.P.shape:
            raise ValueError(
                f"P, R, done must all be [S, A, S]; got {self.P.shape}, "
                f"{self.R.shape}, {self.done.shape}"
            )
        if not np.allclose(self.P.sum(-1), 1.0):
            raise ValueError("P: each row P[s, a, :] must sum to 1")
        into = self.P.sum((0, 1)) > 0  # [S] some transition leads here
        into_alive = (self.P * (1 - self.done)).sum((0, 1)) > 0  # [S] ... without ending
        self.terminal = into & ~into_alive & (self.p0 == 0)
        self.reachable = _reachable(self.P, self.p0)
        t = self.terminal
        self.P[t], self.R[t], self.done[t] = 0.0, 0.0, 1.0
        for s in np.flatnonzero(t):  # absorbing: stay put, reward 0, episode over
            self.P[s, :, s] = 1.0
        self._cum = self.P.cumsum(-1)  # [S, A, S] for sampling

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_actions(self) -> int:
        return self.P.shape[1]

    @property
    def r_sa(self) -> np.ndarray:
        """Expected reward r(s, a) = sum_s' P(s'|s,a) R(s,a,s'): [S, A]."""
        return (self.P * self.R).sum(-1)

    @property
    def P_cont(self) -> np.ndarray:
        """P(s'|s,a) times 1[not done]: the mass that bootstraps from s'. [S, A, S]."""
        return self.P * (1.0 - self.done)

    def reset(self, rng: np.random.Generator) -> int:
        """A start state s_0 ~ p0."""
        return int(np.searchsorted(self.p0.cumsum(), rng.random(), side="right"))

    def step(self, s: int, a: int, rng: np.random.Generator) -> tuple[int, float, bool]:
        """Sample (s', r, done) from the model, like ``env.step`` of gymnasium."""
        cum = self._cum[s, a]
        s2 = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(cum) - 1)
        return s2, float(self.R[s, a, s2]), bool(self.done[s, a, s2])


def _reachable(P: np.ndarray, p0: np.ndarray) -> np.ndarray:
    """[S] bool: states some path from a start state reaches (walls and cliff cells are not)."""
    seen = p0 > 0
    while True:
        new = seen | (P[seen].sum((0, 1)) > 0)
        if (new == seen).all():
            return seen
        seen = new


def from_gym(env_id: str, arrows: tuple[str, ...] = FROZEN_LAKE_ARROWS, **kwargs) -> TabularMDP:
    """Tables of a gymnasium toy-text environment, read from ``env.unwrapped.P``.

    P[s][a] is a list of (prob, s', reward, terminated); duplicates (bumping a wall) are summed.

    >>> mdp = from_gym("FrozenLake-v1", is_slippery=False)
    >>> mdp.n_states, mdp.n_actions, float(mdp.P[0, 2, 1])
    (16, 4, 1.0)
    """
    import gymnasium as gym

    env = gym.make(env_id, **kwargs).unwrapped
    S, A = env.observation_space.n, env.action_space.n
    P, R, done = np.zeros((S, A, S)), np.zeros((S, A, S)), np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            for p, s2, r, term in env.P[s][a]:
                if P[s, a, s2] > 0 and (R[s, a, s2] != r or done[s, a, s2] != term):
                    raise ValueError(f"{env_id}: (s={s}, a={a}, s'={s2}) has two outcomes")
                P[s, a, s2] += p
                R[s, a, s2], done[s, a, s2] = r, float(term)
    p0 = np.asarray(env.initial_state_distrib, dtype=float)
    shape = tuple(env.shape) if hasattr(env, "shape") else (env.nrow, env.ncol)
    return TabularMDP(
        P, R, done, p0, shape=shape, arrows=arrows, labels=_gym_labels(env), name=env_id
    )


def _gym_labels(env) -> tuple[str, ...]:
    if hasattr(env, "desc"):  # FrozenLake: S F H G
        return tuple(c.decode() for c in env.desc.flatten())
    labels = np.where(env._cliff.flatten(), "C", ".")  # CliffWalking
    labels[env.start_state_index], labels[-1] = "S", "G"
    return tuple(labels)


def frozen_lake(slippery: bool = False, map_name: str = "4x4") -> TabularMDP:
    """gymnasium FrozenLake (reward 1 at G, holes H end the episode; slippery: 1/3 each way).

    >>> frozen_lake().terminal.nonzero()[0].tolist()  # the 4 holes and the goal
    [5, 7, 11, 12, 15]
    """
    return from_gym("FrozenLake-v1", is_slippery=slippery, map_name=map_name)


def cliff_walking() -> TabularMDP:
    """gymnasium CliffWalking 4x12: -1 a step, -100 and back to start for stepping off the cliff.

    >>> m = cliff_walking(); m.shape, int(m.p0.argmax()), float(m.R[36, 1, 36])
    ((4, 12), 36, -100.0)
    """
    return from_gym("CliffWalking-v1", arrows=CLIFF_ARROWS)


def gridworld(
    layout: tuple[str, ...] = DEFAULT_GRID,
    slip: float = 0.0,
    step_reward: float = 0.0,
    goal: float = 1.0,
    pit: float = -1.0,
) -> TabularMDP:
    """A gridworld from a text map: S start, G goal, H pit, # wall, . free.

    Actions up/right/down/left; a wall or the edge leaves you in place. With ``slip`` > 0 the
    move goes to a random perpendicular direction with probability ``slip`` (split evenly).

    >>> m = gridworld(); m.shape, m.n_states, m.labels[:5]
    ((5, 5), 25, ('S', '.', '.', '.', '#'))
    """
    if not 0.0 <= slip < 1.0:
        raise ValueError(f"slip must be in [0, 1); got {slip}")
    rows, cols = len(layout), len(layout[0])
    cells = "".join(layout)
    if any(len(r) != cols for r in layout) or set(cells) - set("SGH#."):
        raise ValueError("layout: equal-length rows of the letters S G H # . only")
    S, A = rows * cols, 4
    P, R, done = np.zeros((S, A, S)), np.zeros((S, A, S)), np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            outcomes = [(a, 1.0 - slip), ((a + 1) % 4, slip / 2), ((a + 3) % 4, slip / 2)]
            for move, p in outcomes:
                s2 = _move(s, GRID_MOVES[move], layout)
                P[s, a, s2] += p
                R[s, a, s2] = {"G": goal, "H": pit}.get(cells[s2], step_reward)
                done[s, a, s2] = float(cells[s2] in "GH")
    p0 = np.array([float(c == "S") for c in cells])
    return TabularMDP(
        P,
        R,
        done,
        p0,
        shape=(rows, cols),
        arrows=CLIFF_ARROWS,
        labels=tuple(cells),
        name="gridworld",
    )


def _move(s: int, delta: tuple[int, int], layout: tuple[str, ...]) -> int:
    rows, cols = len(layout), len(layout[0])
    r, c = divmod(s, cols)
    r2, c2 = r + delta[0], c + delta[1]
    if not (0 <= r2 < rows and 0 <= c2 < cols) or layout[r2][c2] == "#":
        return s
    return r2 * cols + c2


def random_walk(n: int = 5) -> TabularMDP:
    """Sutton & Barto's random walk (Example 6.2): n states in a row, start in the middle.

    States 0 and n+1 are terminal; stepping right off the end pays +1, everything else 0.
    Action 0 moves left, 1 moves right; under the uniform policy V(i) = i / (n + 1).

    >>> m = random_walk(); m.n_states, m.terminal.nonzero()[0].tolist()
    (7, [0, 6])
    """
    S = n + 2
    P, R, done = np.zeros((S, 2, S)), np.zeros((S, 2, S)), np.zeros((S, 2, S))
    for s in range(1, n + 1):
        for a, s2 in ((0, s - 1), (1, s + 1)):
            P[s, a, s2], R[s, a, s2], done[s, a, s2] = (
                1.0,
                float(s2 == n + 1),
                float(s2 in (0, n + 1)),
            )
    for s in (0, n + 1):  # terminal: absorbing, episode over
        P[s, :, s], done[s, :, s] = 1.0, 1.0
    p0 = np.zeros(S)
    p0[(n + 1) // 2] = 1.0
    labels = ("T",) + tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]) + ("T",)
    return TabularMDP(
        P, R, done, p0, shape=(1, S), arrows=("←", "→"), labels=labels, name=f"random_walk_{n}"
    )
