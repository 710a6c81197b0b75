import math

import pandas as pd
import pytest
import torch

from labkit.algos import rm_ensemble as ens
from labkit.core.overoptimization import ensemble_reward, kl_distance, preference_as_reward
from labkit.experiments import reward_hacking as rh
from labkit.plots.overoptimization import gao_figure, gao_points


class FakeRM:
    """A reward model that scores a completion by ``weight`` x its digits' sum, counting calls."""

    def __init__(self, weight: float):
        self.weight, self.calls = weight, 0

    def eval(self):
        return self

    def __call__(self, prompts, completions):
        self.calls += 1
        return torch.tensor([self.weight * sum(map(int, c)) for c in completions])


def test_ensemble_min_and_mean_by_hand():
    scores = torch.tensor([[1.0, -2.0, 5.0], [3.0, 0.0, 4.0], [2.0, 1.0, 6.0]])  # [k=3, B=3]
    assert ensemble_reward(scores, "min").tolist() == [1.0, -2.0, 4.0]
    assert ensemble_reward(scores, "mean").tolist() == pytest.approx([2.0, -1 / 3, 5.0])
    with pytest.raises(ValueError, match="how="):
        ensemble_reward(scores, "max")


def test_par_is_the_mean_sigmoid_against_the_references():
    """sigmoid(0) = 1/2; sigmoid(ln 3) = 3/4, sigmoid(-ln 3) = 1/4: bounded, centred."""
    r = torch.tensor([1.0, 1.0 + math.log(3.0), 100.0])
    r_ref = torch.tensor([[1.0, 1.0], [1.0, 1.0 + 2 * math.log(3.0)], [0.0, 0.0]])
    par = preference_as_reward(r, r_ref)
    assert par.tolist() == pytest.approx([0.5, (0.75 + 0.25) / 2, 1.0])
    assert float(par.max()) <= 1.0  # however far the proxy is pushed, the reward stays <= 1


def test_kl_distance_is_the_root_of_the_sequence_kl():
    assert kl_distance(0.25, 4.0) == pytest.approx(1.0)  # 0.25 nats a token x 4 tokens
    assert kl_distance(0.0, 7.0) == 0.0 and kl_distance(-0.01, 3.0) == 0.0
    m = pd.DataFrame({"kl/k3": [0.0, 0.5, 2.0], "len/mean": [3.0, 2.0, 2.0]})
    assert rh.with_distance(m)[rh.D].tolist() == pytest.approx([0.0, 1.0, 2.0])


def test_member_scores_are_computed_once_a_batch_and_shared():
    rms = [FakeRM(1.0), FakeRM(-1.0)]
    scores = ens.MemberScores(rms)
    proxy, low = ens.member_reward(scores, 0), ens.ensemble(scores, "min")
    mean = ens.ensemble(scores, "mean")
    batch = {"completions": ["12", "9"], "prompts": ["5+7=", "4+5="]}
    assert proxy(**batch) == [3.0, 9.0]  # digit sums
    assert low(**batch) == [-3.0, -9.0] and mean(**batch) == [0.0, 0.0]
    assert [rm.calls for rm in rms] == [1, 1]  # three readers, one scoring
    assert proxy.__name__ == "proxy" and low.__name__ == "ensemble_min"


def test_par_reward_centres_on_cached_reference_scores():
    scores = ens.MemberScores([FakeRM(1.0)])
    ref = ens.ReferenceRewards.__new__(ens.ReferenceRewards)  # references given by hand
    ref.cache = {"5+7=": torch.tensor([3.0, 5.0])}
    par = ens.par_reward(scores, ref)
    out = par(completions=["12", "8"], prompts=["5+7=", "5+7="])  # r = 3, 8
    s = torch.sigmoid
    want = [(0.5 + float(s(torch.tensor(-2.0)))) / 2, float(s(torch.tensor([5.0, 3.0])).mean())]
    assert out == pytest.approx(want)


def test_reference_rewards_sample_each_prompt_once():
    from labkit.models.policy import load_policy
    from labkit.tasks import get_task

    policy, tok = load_policy("tiny")
    rm = FakeRM(0.0)  # scores 0: only the counting matters
    ref = ens.ReferenceRewards(rm, policy, tok, get_task("addition"), M=3, seed=0)
    assert ref(["1+2=", "3+4=", "1+2="]).shape == (3, 3)
    assert ref(["3+4="]).shape == (1, 3) and rm.calls == 1  # seen prompts are not resampled


def fake_metrics(n: int = 20) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": range(1, n + 1),
            rh.GOLD: [0.5] * n,
            rh.PROXY: [float(k) for k in range(n)],
            "kl/k3": [0.1] * n,
            "len/mean": [3.0] * n,
        }
    ).pipe(rh.with_distance)


def test_claims_name_arms_and_summary_columns():
    columns = set(rh.summarize(0.5, 0.4, fake_metrics()))
    for c in rh.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in rh.ARMS, c.key
        assert c.baseline is None or c.baseline in rh.ARMS, c.key
    assert set(rh.EXPERIMENT.live["arms"]) <= set(rh.ARMS)
    assert len(rh.EXPERIMENT.seeds) >= 5
    assert set(rh.CURVES) <= set(fake_metrics()) | {"reward/mean"}


def test_a_run_that_never_reaches_the_matched_distance_has_no_value_there():
    m = fake_metrics().assign(**{rh.D: 0.1})
    assert math.isnan(rh.summarize(0.5, 0.5, m)[rh.AT_D])


@pytest.mark.parametrize("arm", list(rh.ARMS | rh.EXTRA_ARMS))
def test_each_arm_optimises_the_reward_its_docstring_names(arm, monkeypatch):
    rms = (FakeRM(1.0), FakeRM(2.0), FakeRM(-1.0))
    monkeypatch.setattr(rh, "members", lambda: rms)
    monkeypatch.setattr(ens.ReferenceRewards, "__call__", lambda self, p: torch.zeros(len(p), 1))
    settings = (rh.ARMS | rh.EXTRA_ARMS)[arm]
    funcs, weights = rh.rewards(settings, policy=torch.nn.Linear(1, 1), tok=None, seed=0)
    batch = {"completions": ["12"], "prompts": ["5+7="], "answer": ["12"]}
    assert funcs[-1](**batch) == [3.0] and weights[-1] == (
        1.0 if settings["reward"] == "proxy" else 0.0
    )
    want = {"proxy": 3.0, "proxy + KL": 3.0, "ensemble mean": 2.0, "ensemble min": -3.0}
    if arm in want:
        assert funcs[0](**batch) == [want[arm]]
    if arm == "PAR":
        assert funcs[0](**batch) == pytest.approx([float(torch.sigmoid(torch.tensor(3.0)))])
        assert settings["scale_rewards"] == "none"
    assert settings.get("beta", 0.0) == (rh.BETA if arm == "proxy + KL" else 0.0)
    if arm == "gold":
        assert funcs[0] == "exact_match"


def test_gao_figure_draws_proxy_and_gold_per_arm():
    curves = pd.concat(
        [fake_metrics().assign(arm=a, seed=s) for a in ("proxy", "ensemble min") for s in (0, 1)]
    )
    pts = gao_points(curves, rh.D, rh.PROXY, smooth=1, bins=1)
    assert pts["y"].tolist() == pytest.approx([9.5, 9.5]) and pts["runs"].tolist() == [2, 2]
    fig = gao_figure(curves, rh.PROXY, rh.GOLD)
    assert len(fig.data) == 4 and {t.name for t in fig.data} == {"proxy", "ensemble min"}


class LengthRM(FakeRM):
    """Scores any completion (digits or not) by ``weight`` x its length."""

    def __call__(self, prompts, completions):
        self.calls += 1
        return torch.tensor([self.weight * len(c) for c in completions])


@pytest.mark.parametrize("arm", ["ensemble min", "PAR"])
def test_a_fast_run_logs_gaos_curve_and_the_summary(arm, runs, monkeypatch):
    """Two GRPO steps from pi_init on stand-in reward models: the curves the lab draws and every
    column a claim reads (the gold at d = 0.5 may be NaN this early)."""
    monkeypatch.setattr(rh, "members", lambda: (LengthRM(1.0), LengthRM(0.5), LengthRM(-1.0)))
    out = rh.train(arm, rh.ARMS[arm], seed=0, steps=2, fast=True, run_name="rh", tick=print)
    assert set(rh.CURVES) <= set(out.curves) and len(out.curves) == 2
    assert (out.curves[rh.D] >= 0).all() and out.curves["kl/k3"].notna().all()
    assert {c.metric for c in rh.CLAIMS} <= set(out.summary)
    assert 0.0 <= out.summary["gold before"] <= 1.0


def test_the_members_are_made_the_same_way_but_for_the_seed():
    """The shipped cards: one recipe (readout, pairs, steps, learning rate), seeds 0, 1, 2."""
    from labkit.algos.reward_model import load_reward_model

    cards = [load_reward_model(name).card for name in rh.MEMBERS]
    assert [c["seed"] for c in cards] == [0, 1, 2]
    assert {c["readout"] for c in cards} == {"head"} and {c["data_seed"] for c in cards} == {0}
    same = [{k: v for k, v in c["config"].items() if k != "seed"} for c in cards]
    assert same[0] == same[1] == same[2] and same[0]["max_steps"] == 800
    assert {c["train_pairs"] for c in cards} == {cards[0]["train_pairs"]}
