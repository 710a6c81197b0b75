"""skip_zero_advantage (labkit.algos.zero_advantage): the same gradient and the same step record
for less work.

Two trainers from the same seed take one step each, one on every row and one on the rows with a
nonzero advantage only; the gradient of every inner update, the loss, the grad norm and the
whole-batch metrics (entropy, KL to pi_ref, clip fractions) agree to float rounding, for every
loss type and both importance-sampling levels.
"""

import pytest
import torch

import labkit as lk

KW = {
    "prompts_per_step": 8,
    "num_generations": 4,
    "max_steps": 10,
    "seed": 0,
    "num_iterations": 2,
    "save_steps": 0,
}
SAME = [
    "loss",
    "loss/policy",
    "entropy",
    "grad_norm",
    "kl/k1",
    "kl/k3",
    "clip/region",
    "clip/ratio_low",
    "clip/ratio_high",
    "clip/region_last",
    "reward/mean",
    "accuracy",
]


def one_step(skip: bool, **kw):
    """(gradients of each inner update, the step's metrics, per-token rows) of one step."""
    torch.set_num_threads(1)
    tr = lk.GRPOTrainer("tiny", skip_zero_advantage=skip, **{**KW, **kw})
    grads, step = [], tr.optimizer_step

    def record(loss):
        norm = step(loss)
        grads.append(torch.cat([p.grad.flatten() for p in tr.params]))
        return norm

    tr.optimizer_step = record
    m = tr.step()
    return grads, m, tr.log.tokens


@pytest.mark.parametrize(
    "kw",
    [
        {"loss_type": "dapo"},
        {"loss_type": "grpo"},
        {"loss_type": "dr_grpo"},
        {"loss_type": "bnpo"},
        {"loss_type": "cispo", "epsilon_high": 5.0},
        {"importance_sampling_level": "sequence"},
        {"num_iterations": 1, "mask_truncated_completions": True, "max_completion_length": 3},
    ],
)
def test_skipping_zero_advantage_rows_changes_neither_gradient_nor_record(kw):
    g_all, m_all, tok_all = one_step(False, **kw)
    g_skip, m_skip, tok_skip = one_step(True, **kw)
    assert m_skip["train/rows_frac"] < 1  # some rows were skipped on this seed (0.625)
    # Every inner update. After the first, the two trainers' weights differ by rounding, and
    # AdamW divides each coordinate by sqrt(v): a coordinate whose gradient is ~1e-8 moves by
    # ~lr whatever its rounding, so later gradients agree to ~1e-4 (1.1e-4 on dr_grpo on some
    # CPUs), the first to 1e-5.
    for i, (a, b) in enumerate(zip(g_all, g_skip)):
        assert (a - b).norm() <= (1e-5 if i == 0 else 3e-4) * a.norm()
    for k in SAME:
        assert m_skip[k] == pytest.approx(m_all[k], rel=1e-4, abs=1e-6), k
    flat = lambda rows: [x for row in rows["logp"] for x in row]  # the per-token record
    assert flat(tok_skip) == pytest.approx(flat(tok_all), abs=1e-4)


def test_a_batch_without_spread_trains_on_the_diagnostics_rows_only():
    """Mutation check of the row choice: force every advantage but row 5's to 0."""
    from labkit.algos import zero_advantage as za

    torch.set_num_threads(1)
    tr = lk.GRPOTrainer("tiny", skip_zero_advantage=True, diagnostics=2, **KW)
    r = tr.collect()
    tr.prepare(r)
    r.advantages = torch.zeros_like(r.advantages)
    r.advantages[5] = 1.0
    rows = za.trained_rows(r, tr.config, tr.max_len)
    assert rows.index.tolist() == [0, 1, 5] and rows.batch.prompts == [
        r.prompts[i] for i in (0, 1, 5)
    ]
    n = r.loss_mask.sum(-1)  # dapo: the kept rows' tokens over all tokens
    assert rows.scale.item() == pytest.approx((n[[0, 1, 5]].sum() / n.sum()).item())


@pytest.mark.parametrize("kw", [{"beta": 0.04}, {"entropy_coef": 0.01}, {"top_k": 5}])
def test_where_skipping_would_change_the_gradient_every_row_trains(kw):
    """The KL and entropy terms reach rows with A = 0; top-k sampling leaves no pi_old entropy
    to record. A dashboard may switch beta on mid-run: no error, every row trains."""
    _, m, _ = one_step(True, **kw)
    assert m["train/rows_frac"] == 1.0
    with pytest.raises(ValueError, match="PPOTrainer does not apply it"):
        lk.PPOConfig(skip_zero_advantage=True, beta=0.0)
