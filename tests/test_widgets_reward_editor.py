"""RewardEditor without a browser: type code, click Try/Apply, read the message and the figure.

Every failure is one readable message (and the figure keeps its last good data); a valid reward's
histogram, advantages and zero-spread fraction are the bank's by hand; Apply swaps into a trainer
between steps, and a reward that breaks later pauses the run instead of raising in it.
"""

import threading
import time

import pytest
import torch

import labkit as lk
from labkit.core.advantages import group_advantages
from labkit.widgets import Bank, RewardEditor

COMPLETIONS = ["42", "41", "42", "x", "7", "7", "7", "7"]
BANK = Bank(
    COMPLETIONS,
    {"prompts": ["40+2="] * 4 + ["3+4="] * 4, "answer": ["42"] * 4 + ["7"] * 4},
    group=[0] * 4 + [1] * 4,
)
EXACT = (
    "def exact(completions, answer, **kwargs):\n"
    "    return [float(c == a) for c, a in zip(completions, answer)]\n"
)


def _editor(code=EXACT, **kw):
    ed = RewardEditor(BANK, code=code, timeout=kw.pop("timeout", 1.0), **kw)
    ed.try_btn.click()
    return ed


def test_valid_reward_shows_histogram_advantages_and_zero_spread():
    ed = _editor()
    r = torch.tensor([1.0, 0, 1, 0, 1, 1, 1, 1])
    assert list(ed.fig.data[0].x) == r.tolist()
    assert list(ed.fig.data[1].x) == pytest.approx(group_advantages(r, 4).tolist())
    assert ed.result["frac_zero_spread"] == 0.5  # group 1: all four right, no signal
    assert "lk-ok" in ed.message.value and "zero spread (no signal): 50%" in ed.message.value
    best, worst = ed.examples.value.split("<b>worst</b>")
    assert "&#x27;x&#x27;" in worst and "&#x27;x&#x27;" not in best


@pytest.mark.parametrize(
    "code, expected",
    [
        ("def f(completions:\n    return []", "syntax error on line 1"),
        ("x = 1", "no function defined"),
        (
            "def f(completions, **kw):\n    return {}['answer_text']",
            "raised KeyError: 'answer_text'",
        ),
        ("def f(completions, **kw):\n    return [1.0]", "returned 1 values for 8 completions"),
        (
            "def f(completions, **kw):\n    return [float('nan')] * len(completions)",
            "returned nan for completion 0",
        ),
        (
            "def f(completions, **kw):\n    return [float('inf')] * len(completions)",
            "returned inf for completion 0",
        ),
        (
            "def f(completions, **kw):\n    return ['high'] * len(completions)",
            "returned 'high' (str) for completion 0",
        ),
        ("def f(completions, **kw):\n    return 3", "returned int, not a list"),
        ("def f(completions, **kw):\n    while True:\n        pass", "did not finish within 0.3 s"),
        (
            "import not_a_module_xyz\ndef f(completions, **kw):\n    return []",
            "raised ModuleNotFoundError while defining",
        ),
    ],
)
def test_every_failure_is_one_readable_message(code, expected):
    ed = _editor()  # a good Try first: its figure data must survive the failure
    before = list(ed.fig.data[0].x)
    ed.code.value = code
    ed.timeout = 0.3
    ed.try_btn.click()
    assert "lk-error" in ed.message.value
    assert expected in ed.message.value.replace("&#x27;", "'"), ed.message.value
    assert list(ed.fig.data[0].x) == before and ed.fn is None


def test_a_hanging_reward_is_interrupted_not_left_running():
    ed = _editor("def spin(completions, **kw):\n    while True:\n        pass", timeout=0.2)
    assert "did not finish" in ed.message.value
    deadline = time.time() + 5
    while time.time() < deadline and any(
        t.name == "labkit-reward" and t.is_alive() for t in threading.enumerate()
    ):
        time.sleep(0.05)
    assert not any(t.name == "labkit-reward" and t.is_alive() for t in threading.enumerate())


def test_apply_needs_a_trainer_and_a_clean_try_of_the_same_code():
    ed = _editor()
    ed.apply_btn.click()  # a Bank source: nothing to apply to
    assert "no trainer" in ed.message.value
    tr = lk.GRPOTrainer(max_steps=5, num_generations=2, prompts_per_step=2, diagnostics=0)
    tr.step()
    ed = RewardEditor(tr, code=EXACT)
    ed.apply_btn.click()
    assert "press Try first" in ed.message.value
    ed.try_btn.click()
    ed.code.value = EXACT.replace("exact", "other")
    ed.apply_btn.click()
    assert "press Try first" in ed.message.value


def test_apply_swaps_the_reward_between_steps_and_logs_the_switch():
    tr = lk.GRPOTrainer(max_steps=5, num_generations=2, prompts_per_step=2, diagnostics=0)
    tr.step()
    ed = RewardEditor(tr, code=EXACT)
    ed.try_btn.click()
    assert len(ed.result["rewards"]) == 4  # the bank is the trainer's samples
    ed.apply_btn.click()
    assert "applied exact after step 1" in ed.message.value
    assert [f.__name__ for f, _ in tr.scorer.funcs] == ["exact"]
    ev = tr.log.events
    assert ev.iloc[-1]["step"] == 1 and ev.iloc[-1]["reward_funcs"] == ["exact"]
    m = tr.step()
    assert "rewards/exact/mean" in m
    s = tr.log.samples
    last = s[s["step"] == 2]
    assert (last["rewards/exact"] == (last["completion"] == last["answer"]).astype(float)).all()


def test_a_reward_failing_inside_the_run_pauses_it_and_never_raises_there():
    tr = lk.GRPOTrainer(max_steps=5, num_generations=2, prompts_per_step=2, diagnostics=0)
    tr.step()
    code = (
        "calls = []\n"
        "def flaky(completions, **kwargs):\n"
        "    calls.append(1)\n"
        "    if len(calls) > 1:\n"
        "        raise RuntimeError('second call')\n"
        "    return [0.0] * len(completions)\n"
    )
    ed = RewardEditor(tr, code=code)
    ed.try_btn.click()  # first call: fine
    ed.apply_btn.click()
    m = tr.step()  # second call fails inside the training step
    assert tr.pause_event.is_set()
    assert "during training (trainer paused" in ed.message.value
    assert "second call" in ed.message.value
    assert ed.code.error_line == 5  # the raise, from the worker's traceback
    assert m["adv/mean_abs"] == 0.0  # no reward, no signal, no crash


def test_try_on_a_saved_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    tr = lk.GRPOTrainer(
        max_steps=2, num_generations=2, prompts_per_step=2, diagnostics=0, run_name="saved"
    )
    tr.train(progress=False)
    tr.log.close()
    ed = RewardEditor(lk.load_run(tmp_path / "saved"), code=EXACT)
    ed.try_btn.click()
    s = tr.log.samples
    assert ed.result["rewards"] == (s["completion"] == s["answer"]).astype(float).tolist()
    assert ed.apply_btn.disabled  # a saved run has no trainer to swap into


def test_a_reward_stuck_in_c_is_stopped_too():
    """A thread cannot be stopped inside C (a regex backtracking); the worker process is killed."""
    import time

    code = (
        "import re\ndef regex(completions, **kw):\n"
        "    return [float(bool(re.match(r'(a+)+$', 'a' * 40 + 'b'))) for c in completions]"
    )
    t0 = time.perf_counter()
    ed = _editor(code, timeout=0.5)
    assert "did not finish within 0.5 s" in ed.message.value
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize(
    "code, line",
    [
        ("def f(completions, **kw):\n    x = (1 +\n    return [x]", 2),  # syntax error
        ("def f(completions, **kw):\n    out = []\n    out.append(1 / 0)\n    return out", 3),
        ("x = 1\n{}['k']\ndef f(completions, **kw):\n    return []", 2),  # while defining
        ("def f(completions, **kw):\n    return [1.0]", 0),  # wrong count: no line to mark
    ],
)
def test_the_line_an_error_names_is_marked_and_cleared_by_a_clean_try(code, line):
    ed = _editor(code)
    assert "lk-error" in ed.message.value
    assert ed.code.error_line == line
    assert (ed.code.error_message != "") == bool(line)
    assert (f"line {line} is marked" in ed.message.value) == bool(line)
    ed.code.value = EXACT
    ed.try_btn.click()
    assert "lk-ok" in ed.message.value and ed.code.error_line == 0


def test_the_editor_shortcut_runs_try_on_the_code_it_sends():
    ed = RewardEditor(BANK, code="x = 1", timeout=1.0)
    ed.code._handle_msg(
        {
            "content": {"data": {"method": "custom", "content": {"event": "run", "value": EXACT}}},
            "buffers": [],
        }
    )
    assert ed.code.value == EXACT and "✓ exact" in ed.message.value
    assert list(ed.fig.data[0].x) == [1.0, 0, 1, 0, 1, 1, 1, 1]


def test_it_opens_on_the_runs_own_scores_before_any_try():
    tr = lk.GRPOTrainer(max_steps=5, num_generations=2, prompts_per_step=2, diagnostics=0)
    ed = RewardEditor(tr, code=EXACT)
    assert list(ed.fig.data[0].x) == [] and "train at least one step first" in ed.stats.value
    tr.step()
    tr.step()
    ed = RewardEditor(tr, code=EXACT)
    s = tr.log.samples
    assert list(ed.fig.data[0].x) == pytest.approx(s["reward"].tolist())  # no Try pressed
    r = torch.tensor(s["reward"].tolist())
    assert list(ed.fig.data[1].x) == pytest.approx(group_advantages(r, 2).tolist(), abs=1e-6)
    zero = (r.view(-1, 2).std(1) == 0).float().mean().item()
    assert f"zero spread (no signal): {zero:.0%}" in ed.stats.value
    assert "as the run scored them (digit_partial)" in ed.stats.value
    assert "before Try" in ed.fig.layout.title.text and ed.fn is None
    ed = RewardEditor(BANK)  # completions from elsewhere: no scores to show
    assert list(ed.fig.data[0].x) == [] and "press Try" in ed.stats.value
