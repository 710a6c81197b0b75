"""TR-DPO's refresh of pi_ref as a pure function: the rule on a hand case, the hard update, and
TRL's own ``SyncRefModelCallback`` on the same two tiny policies (identical parameters after)."""

import types

import pytest
import torch
from accelerate import Accelerator
from trl import DPOConfig as TRLDPOConfig
from trl import GRPOConfig as TRLGRPOConfig
from trl.trainer.callbacks import SyncRefModelCallback

import labkit as lk
from labkit.models.policy import frozen_copy
from labkit.models.reference import refresh_due, refresh_reference


def two_linears():
    ref, pi = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor([[1.0, -2.0]]))
        ref.bias.fill_(0.5)
        pi.weight.copy_(torch.tensor([[3.0, 2.0]]))
        pi.bias.fill_(-1.5)
    return ref, pi


def test_the_rule_by_hand():
    ref, pi = two_linears()
    refresh_reference(ref, pi, 0.6)  # 0.6 theta + 0.4 theta_ref
    assert ref.weight[0].tolist() == pytest.approx([0.6 * 3 + 0.4 * 1, 0.6 * 2 + 0.4 * -2])
    assert ref.bias.item() == pytest.approx(0.6 * -1.5 + 0.4 * 0.5)
    refresh_reference(ref, pi, 0.6)  # again: the gap to theta shrinks by 1 - alpha each time
    assert ref.weight[0, 0].item() == pytest.approx(3 - 0.4**2 * (3 - 1))
    assert pi.weight.tolist() == [[3.0, 2.0]]  # the policy is untouched


def test_alpha_one_is_a_hard_update():
    ref, pi = two_linears()
    refresh_reference(ref, pi, 1.0)
    assert all(torch.equal(a, b) for a, b in zip(ref.parameters(), pi.parameters()))


@pytest.mark.parametrize("alpha", [0.0, -0.1, 1.5])
def test_alpha_outside_0_1_is_refused(alpha):
    ref, pi = two_linears()
    with pytest.raises(ValueError, match=f"alpha={alpha}: use 0 < alpha <= 1"):
        refresh_reference(ref, pi, alpha)


def test_a_reference_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="differ in shape"):
        refresh_reference(torch.nn.Linear(2, 1), torch.nn.Linear(3, 1), 0.5)
    with pytest.raises(ValueError):  # a different number of parameters
        refresh_reference(torch.nn.Linear(2, 1), torch.nn.Linear(2, 1, bias=False), 0.5)


def test_due_after_every_tau_th_step():
    assert [s for s in range(13) if refresh_due(s, 4)] == [4, 8, 12]
    assert all(refresh_due(s, 1) for s in range(1, 5)) and not refresh_due(0, 1)


@pytest.mark.parametrize("alpha", [0.6, 1.0, 0.05])
def test_equals_trls_callback_on_two_tiny_policies(alpha):
    """TRL's ``SyncRefModelCallback.on_step_end`` (TRL's own firing rule and mix) and labkit's
    rule, on copies of the same pi_ref and pi_theta: bit-identical parameters after each step."""
    policy, _ = lk.load_policy("tiny")
    ref_trl, ref_lk = frozen_copy(policy), frozen_copy(policy)
    callback = SyncRefModelCallback(ref_model=ref_trl, accelerator=Accelerator(cpu=True))
    args = types.SimpleNamespace(ref_model_sync_steps=3, ref_model_mixup_alpha=alpha)
    g = torch.Generator().manual_seed(0)
    for step in range(1, 7):  # refreshes after steps 3 and 6
        with torch.no_grad():  # pi_theta moves between steps, as an optimizer would move it
            for p in policy.parameters():
                p.add_(0.01 * torch.randn(p.shape, generator=g))
        callback.on_step_end(args, types.SimpleNamespace(global_step=step), None, model=policy)
        if refresh_due(step, 3):
            refresh_reference(ref_lk, policy, alpha)
        same = [torch.equal(a, b) for a, b in zip(ref_trl.parameters(), ref_lk.parameters())]
        assert all(same), step
    moved = [not torch.equal(a, b) for a, b in zip(ref_lk.parameters(), policy.parameters())]
    assert any(moved) == (alpha < 1)  # after step 6: a soft update trails pi_theta; hard is it


@pytest.mark.parametrize(
    ("trl_class", "ours"), [(TRLGRPOConfig, lk.GRPOConfig), (TRLDPOConfig, lk.DPOConfig)]
)
def test_trls_defaults(trl_class, ours, tmp_path):
    theirs = trl_class(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none")
    for name in ("sync_ref_model", "ref_model_mixup_alpha", "ref_model_sync_steps"):
        assert getattr(ours(), name) == getattr(theirs, name), name
