"""One held-out probe (``labkit.runs.evaluate.probe``) behind r1_zero's ``heldout``, prm's
``heldout`` (search's ``sample``) and r1_pipeline's ``probe`` (``rejection_sample``): one seeded
generator drawing batch after batch, so each caller returns what the probe drew."""

import numpy as np
import pytest
import torch

import labkit as lk
from labkit.algos.rejection import rejection_sample
from labkit.experiments import prm, r1_pipeline, r1_zero, search
from labkit.models.rollout import rollout
from labkit.runs.evaluate import probe
from labkit.tasks.scratchpad import parse

TASK = lk.get_task("scratchpad")


@pytest.fixture(scope="module")
def think():
    return lk.load_policy("tiny-think")


def test_the_probe_draws_what_one_seeded_generator_draws_batch_after_batch(think):
    model, tok = think
    ex = TASK.heldout[:6]
    p = probe(
        model, tok, TASK, examples=ex, samples=2, max_completion_length=40, seed=4, batch_size=5
    )
    gen, want, lengths = torch.Generator().manual_seed(4), [], []
    prompts = [e.prompt for e in ex for _ in range(2)]
    for i in range(0, len(prompts), 5):
        b = rollout(model, tok, prompts[i : i + 5], 40, temperature=1.0, generator=gen)
        want, lengths = want + b.completions, lengths + b.lengths.tolist()
    assert p.completions == want and p.lengths == lengths
    assert [e.prompt for e in p.examples] == prompts
    assert p.correct == [TASK.verify(c, e.answer) for c, e in zip(want, p.examples)]
    assert p.by_prompt(2) == [want[i : i + 2] for i in range(0, 12, 2)]
    assert p.accuracy == sum(p.correct) / 12
    whole = probe(model, tok, TASK, 6, seed=4, batch_size=None)  # the first 6 held-out prompts
    assert [e.prompt for e in whole.examples] == [e.prompt for e in ex]
    assert max(whole.lengths) <= TASK.max_completion_chars + 1  # the task's length


def test_the_three_heldout_probes_return_what_the_probe_drew(think):
    model, tok = think
    ex = TASK.heldout[:24]
    p = probe(
        model,
        tok,
        TASK,
        24,
        max_completion_length=r1_zero.SETUP["max_completion_length"],
        seed=3,
        batch_size=None,
    )
    h = r1_zero.heldout(model, tok, n=24, seed=3)
    assert h["accuracy"] == p.accuracy
    assert h["length"] == np.mean([len(c) for c in p.completions])
    q = probe(model, tok, TASK, 24, max_completion_length=search.MAX_LEN, seed=5)
    assert search.sample(model, tok, ex, 1, seed=5) == q.by_prompt(1)
    right = prm.answer_match(q.completions, answer=[e.answer for e in ex])
    assert prm.heldout(model, tok, ex, seed=5)["accuracy"] == sum(right) / 24
    assert (
        r1_pipeline.SETUP["max_completion_length"] == search.MAX_LEN
    )  # so r1_pipeline's probe draws q
    thinks = [parse(c).well_formed and bool(parse(c).think) for c in q.completions]
    assert r1_pipeline.probe(model, tok, TASK, 24, 5) == {
        "accuracy": q.accuracy,
        "think_rate": sum(thinks) / 24,
        "len_mean": sum(q.lengths) / 24,
    }
    assert rejection_sample(model, tok, TASK, ex, 1, seed=5).completions == q.completions
