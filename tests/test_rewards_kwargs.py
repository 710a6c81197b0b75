"""Reward functions get what TRL 1.16 passes them (prompts, completions, completion_ids, every
dataset column, trainer_state, log_extra, log_metric), by keyword, inline and in worker
processes, in GRPO, PPO and multi-turn runs."""

import pytest
import torch
from trl.rewards import get_soft_overlong_punishment

import labkit as lk
from labkit.algos.multiturn import MultiTurnGRPOTrainer
from labkit.envs import CalcTask, Calculator, tool_reward
from labkit.rewards import RewardError

SMALL = {"num_generations": 4, "prompts_per_step": 2, "max_steps": 2, "save_steps": 0}
INLINE = {"reward_runtime": "inline"}


def token_lengths(tr):
    """Each recorded completion's token count (eos included), read from the samples."""
    return list(tr.log.samples["length"])


def test_trls_soft_overlong_punishment_measures_tokens_not_characters():
    # its first parameter is completion_ids: passed positionally, it got the strings
    L, cache = 4, 2
    punish = get_soft_overlong_punishment(max_completion_len=L, soft_punish_cache=cache)
    tr = lk.GRPOTrainer("tiny", reward_funcs=[punish], **SMALL)
    tr.train(progress=False)
    got = list(tr.log.samples["rewards/soft_overlong_punishment_reward"])
    assert got == punish([[0] * n for n in token_lengths(tr)])
    chars = punish([[0] * len(c) for c in tr.log.samples["completion"]])
    assert got != chars  # the tiny tokenizer: one token per character, plus eos


def spy(calls):
    """A TRL-style reward that records what it is given and logs through TRL's callbacks."""

    def reward_spy(completions, completion_ids, trainer_state, log_extra, log_metric, **kw):
        calls.append({"step": trainer_state.global_step, "max": trainer_state.max_steps})
        log_extra("n_ids", [len(ids) for ids in completion_ids])
        log_metric("spy/first_id", float(completion_ids[0][0]))
        return [float(len(ids)) for ids in completion_ids]

    return reward_spy


@pytest.mark.parametrize(
    "runtime",
    [{"reward_runtime": "inline"}, {"reward_runtime": "process", "reward_workers": 2}],
    ids=["inline", "two-worker-processes"],
)
def test_completion_ids_trainer_state_and_logs_reach_the_run(runtime):
    calls = []
    tr = lk.GRPOTrainer("tiny", reward_funcs=[spy(calls)], **SMALL, **runtime)
    tr.train(progress=False)
    s, m = tr.log.samples, tr.log.metrics
    assert list(s["rewards/reward_spy"]) == [float(n) for n in token_lengths(tr)]
    assert list(s["n_ids"]) == token_lengths(tr)  # log_extra: a column of the completions
    assert "spy/first_id" in m and m["spy/first_id"].notna().all()  # log_metric: a metric
    if runtime["reward_runtime"] == "inline":  # a worker's list is its own
        assert calls == [{"step": 0, "max": 2}, {"step": 1, "max": 2}]


def test_ppo_and_multiturn_rewards_get_the_same_keywords():
    calls = []
    ppo = lk.PPOTrainer("tiny", reward_funcs=[spy(calls)], **SMALL, **INLINE)
    ppo.train(progress=False)
    assert "n_ids" in ppo.log.samples and "spy/first_id" in ppo.log.metrics
    mt = MultiTurnGRPOTrainer(
        "tiny-tools",
        env=Calculator,
        reward_funcs=[tool_reward, spy(calls)],
        task=CalcTask(),
        max_completion_length=20,
        max_turns=2,
        **SMALL,
        **INLINE,
    )
    mt.train(progress=False)
    s = mt.log.samples
    assert list(s["n_ids"]) == list(s["length"])  # an episode's ids: policy and tool tokens
    assert [c["step"] for c in calls] == [0, 1, 0, 1]


def test_every_column_is_passed_by_name_and_a_missing_one_is_named():
    rows = [{"question": f"{a}+1=", "answer": str(a + 1), "level": a % 3} for a in range(10, 30)]
    task = lk.tasks.from_dataset(rows, prompt="question", answer="answer")
    seen = []

    def by_level(completions, level, prompts, **kw):
        seen.append((list(level), list(prompts)))
        return [0.0] * len(completions)

    lk.GRPOTrainer(
        "tiny", reward_funcs=[by_level], task=task, **SMALL, **INLINE, max_completion_length=4
    ).step()
    levels, prompts = seen[0]
    assert all(f"{int(p.split('+')[0]) % 3}" == str(lv) for lv, p in zip(levels, prompts))

    def needs_solution(completions, solution, **kw):  # TRL's accuracy_reward's shape
        return [0.0] * len(completions)

    tr = lk.GRPOTrainer("tiny", reward_funcs=[needs_solution], **SMALL, **INLINE)
    with pytest.raises(RewardError, match="needs 'solution', which the data does not have"):
        tr.step()


def test_a_reward_written_for_the_positional_call_still_runs():
    def first_char_digit(texts, **kw):  # its first parameter is not named completions
        return [float(t[:1].isdigit()) for t in texts]

    tr = lk.GRPOTrainer("tiny", reward_funcs=[first_char_digit], **SMALL)
    m = tr.step()
    assert 0.0 <= m["rewards/first_char_digit/mean"] <= 1.0
    assert torch.isfinite(torch.tensor(m["reward/mean"]))
