"""Environments and episodes: the TRL-shaped interface, the text protocol, the
env mask and turn boundaries of a real episode, tool faults, limits."""

import pathlib
import time

import pytest
import torch

import labkit as lk
from labkit.envs import BracketProtocol, CalcTask, Calculator, GuessNumber, call_tool, env_tools
from labkit.envs.calculator import level
from labkit.models.episode import episodes

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def policy():
    return lk.load_policy("tiny-tools")


def test_tools_are_found_as_trl_finds_them():
    assert list(env_tools(Calculator())) == ["calc"]
    assert list(env_tools(GuessNumber())) == ["guess"]
    g = GuessNumber()
    g.reset(answer="5")
    assert [g.guess("8"), g.guess("3"), g.guess("5")] == ["<", ">", "!"]
    assert g.get_reward() == pytest.approx(1 - 2 / 6)


class Faulty(Calculator):
    """A calculator whose tool raises, hangs or returns junk, by ``mode``."""

    mode = "raise"

    def calc(self, expression: str) -> str:
        """Fail on purpose."""
        if self.mode == "raise":
            raise RuntimeError("boom")
        if self.mode == "hang":
            time.sleep(2.0)
            return "1"
        return {"not": "text"} if self.mode == "junk" else "x" * 50


@pytest.mark.parametrize(
    "mode,fault",
    [
        ("raise", "raised: RuntimeError: boom"),
        ("hang", "timeout"),
        ("junk", "junk: dict"),
        ("long", "junk: 'xxxxxxxxxxxxxxxxxxxx'"),
    ],
)
def test_each_tool_fault_is_named_and_the_episode_reads_error(mode, fault):
    env = type("F", (Faulty,), {"mode": mode})()
    t0 = time.perf_counter()
    out = BracketProtocol().run(env, "[12*34=", timeout=0.2)
    assert time.perf_counter() - t0 < 1.5  # a hang costs the time limit, not the hang
    assert (out.tool, out.args, out.text, out.failure) == ("calc", "12*34", "error]", fault)


def test_a_bad_expression_is_a_failure_not_a_crash():
    assert call_tool(Calculator().calc, ("import os",), 1.0) == (
        "error",
        "raised: ValueError: not an expression of + - * on integers: 'import os'",
    )


def _run(policy, prompts, env_cls, L=20, turns=2, seed=0):
    model, tok = policy
    envs = [env_cls() for _ in prompts]
    cols = [{"prompt": p, "answer": "0"} for p in prompts]
    return envs, episodes(
        model,
        tok,
        prompts,
        envs,
        columns=cols,
        protocol=BracketProtocol(),
        max_completion_length=L,
        max_turns=turns,
        temperature=1.0,
        generator=torch.Generator().manual_seed(seed),
        tool_timeout=0.2,
    )


def test_env_mask_marks_exactly_the_environment_tokens(policy):
    _, r = _run(policy, ["37*48="] * 32, Calculator)
    assert r.tool_calls.sum() > 0
    for i in range(len(r)):
        n = int(r.lengths[i])
        text = "".join(policy[1].decode([t]) for t in r.completion_ids[i, :n].tolist())
        who = r.env_mask[i, :n].tolist()
        env_text = "".join(c for c, w in zip(text, who) if not w)
        if r.tool_calls[i]:  # the environment wrote the result and "]", nothing else
            result = text[text.index("=") + 1 : text.index("]") + 1]
            assert env_text == result and result.endswith("]")
            assert r.turn_ends[i][0] == text.index("=") + 1  # turn 1 ends at the call
        else:
            assert env_text == "" and len(r.turn_ends[i]) == 1
        assert r.env_mask[i, n:].sum() == 0 and r.completion_mask[i, n:].sum() == 0


def test_a_faulty_tool_is_counted_and_every_episode_ends(policy):
    faulty = type("F", (Faulty,), {"mode": "raise"})
    _, r = _run(policy, ["37*48="] * 32, faulty)
    calls = int(r.tool_calls.sum())
    assert calls > 0
    assert sum(len(f) for f in r.tool_failures) == calls
    assert all(
        f == ["raised: RuntimeError: boom"] * int(c)
        for f, c in zip(r.tool_failures, r.tool_calls.tolist())
    )
    assert all("error]" in c for c, k in zip(r.completions, r.tool_calls.tolist()) if k)


def test_limits_truncate_and_mark_the_episode(policy):
    _, r = _run(policy, ["37*48="] * 32, Calculator, L=4, turns=2)  # too short to finish a call
    assert (r.lengths <= 4).all()
    assert {c for c in r.cut} <= {"", "tokens"} and "tokens" in r.cut
    assert r.truncated.tolist() == [c != "" for c in r.cut]
    _, r = _run(policy, ["guess:"] * 16, GuessNumber, L=42, turns=1)  # one guess, then cut
    assert all(c == "turns" for c, k in zip(r.cut, r.tool_calls.tolist()) if k)
    assert r.truncated.any()


def test_calc_task_levels_and_verifier():
    t = CalcTask()
    assert {level(e.prompt) for e in t.heldout} == {"easy", "medium", "hard"}
    assert t.verify("[3+4=7]7", "7") and t.verify("[3+4=7]", "7")  # stop: submit the result
    assert not t.verify("[3+4=7]8", "7") and not t.verify("[3+4=", "7")


def test_a_multiturn_step_masks_env_tokens_and_logs_tools_and_faults():
    from labkit.algos.multiturn import MultiTurnGRPOTrainer
    from labkit.envs import GuessTask, tool_reward

    faulty = type("Faulty", (Faulty,), {"mode": "raise"})
    t = MultiTurnGRPOTrainer(
        "tiny-tools",
        env=faulty,
        reward_funcs=[tool_reward],
        task=CalcTask(),
        num_generations=4,
        prompts_per_step=8,
        max_completion_length=20,
        max_turns=2,
        diagnostics=32,
        seed=0,
    )
    log = t.train(2, progress=False)
    m = log.metrics.iloc[-1]
    assert m["tools/call_rate"] > 0 and m["tools/failure_rate"] == 1.0  # every call raised
    assert {"turns/mean", "reward/per_turn", "len/env", "turns/cut_tokens"} <= set(m.index)
    events = log.events
    assert (events["kind"] == "tool_failure").sum() == 2  # one row per step and fault kind
    assert set(events["fault"].dropna()) == {"raised: RuntimeError: boom"}
    r = t._last
    assert (r.loss_mask * (1 - r.env_mask)).abs().sum() == 0  # env tokens: weight 0
    row = log.samples.iloc[-1]
    assert "".join(s for s, _ in row["episode"]) == row["completion"]
    tok = log.tokens[log.tokens["step"] == 2]
    assert any(not all(e) for e in tok["env_mask"])  # the per-token rows say who wrote what
    g = MultiTurnGRPOTrainer(
        "tiny-tools",
        env=GuessNumber,
        task=GuessTask(),
        num_generations=4,
        prompts_per_step=2,
        max_completion_length=42,
        max_turns=7,
        seed=0,
    )
    assert [f.__name__ for f, _ in g.scorer.funcs] == ["GuessNumber"]  # get_reward, as TRL
    assert g.train(1, progress=False).metrics["turns/mean"].iloc[0] > 1


def test_export_trl_writes_the_environment_script(tmp_path):
    from labkit.integrations.export import export_trl

    ex = export_trl(
        tmp_path,
        lk.GRPOConfig(num_generations=4, prompts_per_step=2, max_completion_length=20),
        "tiny-tools",
        reward_funcs=["labkit.envs:tool_reward"],
        num_gpus=0,
        env="calculator",
    )
    text = ex.script.read_text()
    compile(text, "train_grpo.py", "exec")
    assert "ENV = 'calculator'" in text and "environment_factory" in text
    assert "import tool_reward" in text
    assert (tmp_path / "data" / "train.jsonl").read_text().count("\n") == len(CalcTask().train)


@pytest.mark.slow
def test_the_exported_environment_script_trains_one_step(tmp_path):
    import os
    import subprocess
    import sys

    from labkit.integrations.export import export_trl

    ex = export_trl(
        tmp_path,
        lk.GRPOConfig(num_generations=4, prompts_per_step=2, max_completion_length=20),
        "tiny-tools",
        reward_funcs=["labkit.envs:tool_reward"],
        num_gpus=0,
        env="calculator",
    )
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "PYTHONPATH": str(pathlib.Path(lk.__file__).parent.parent),
    }
    out = subprocess.run(
        [sys.executable, str(ex.script), "--max-steps", "1", "--output-dir", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "o" / "model.safetensors").exists()


def test_the_browser_shows_whole_episodes(tmp_path, monkeypatch):
    from labkit.algos.multiturn import MultiTurnGRPOTrainer
    from labkit.envs import tool_reward
    from labkit.runs.browse import CompletionIndex
    from labkit.widgets.browser import CompletionBrowser

    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    t = MultiTurnGRPOTrainer(
        "tiny-tools",
        env=Calculator,
        reward_funcs=[tool_reward],
        task=CalcTask(),
        num_generations=4,
        prompts_per_step=8,
        max_completion_length=20,
        max_turns=2,
        diagnostics=32,
        run_name="episodes",
        seed=0,
    )
    t.train(1, progress=False)
    index = CompletionIndex(tmp_path / "episodes")
    page, _ = index.page(list(range(len(index))))
    assert {"episode", "turns", "tool_calls", "cut"} <= set(page.columns)
    called = page[page["tool_calls"] > 0]
    assert len(called) and all("«" in e and "]»" in e for e in called["episode"])
    b = CompletionBrowser(tmp_path / "episodes")
    b.table.selected_rows = [int(called.index[0]) % len(b.frame)]
    b.open_tokens()
    assert len(b.tokens.children) in (1, 2)


def test_the_dashboard_draws_tool_and_turn_curves():
    from labkit.algos.multiturn import MultiTurnGRPOTrainer
    from labkit.envs import tool_reward
    from labkit.widgets.dashboard import Dashboard

    t = MultiTurnGRPOTrainer(
        "tiny-tools",
        env=Calculator,
        reward_funcs=[tool_reward],
        task=CalcTask(),
        num_generations=4,
        prompts_per_step=4,
        max_completion_length=20,
        max_turns=2,
        seed=0,
    )
    t.train(2, progress=False)
    d = Dashboard(t)
    d.refresh()
    names = {tr.name: tr for tr in d.live.fig.data}
    assert {"tool calls", "tool failures", "turns", "reward per turn"} <= set(names)
    assert list(names["turns"].y) == t.log.metrics["turns/mean"].tolist()
