"""Build the shipped ``tiny-tools`` policy (labkit/checkpoints/tiny-tools): the ``tiny`` cold
start, taught by a short SFT the text protocol of labkit's toy environments (``labkit.envs``).

Traces (no RL): calculator prompts of three levels (1-digit addition, 2-digit addition, 2-digit
multiplication), half answered directly (the right answer; on multiplication one the model
cannot learn), half calling the tool and stopping, which submits its answer, ``"[37*48=1776]"``;
and
guessing-game episodes whose every guess is uniform in the interval the hints leave. So the
cold start calls the tool about half the time whatever the difficulty, and guesses at random
inside the interval: RL has to learn when to call and how to search.
The SFT loss is masked as the RL loss is: the tool's answers (``1776]``, ``<]``) are context,
not targets (``BracketProtocol.writers``). Why stopping submits: a policy that must copy the
tool's answer after the call (``"[37*48=1776]1776"``) learns the copy badly (0 of 32 hard
held-out prompts right without the mask after 600 steps, 3 % with it after 1500), and GRPO then
drops the tool (call rate 0.47 -> 0.02 in 200 steps): a call that costs and rarely pays. With
the copy gone, what RL must learn is only whether to call.

    python scripts/make_tools_checkpoint.py          # ~10 minutes on 2 shared cores
"""

import argparse
import json
import random

import torch

import labkit as lk
from labkit.core.logprobs import masked_mean
from labkit.envs.base import BracketProtocol
from labkit.envs.calculator import CalcTask, calc_traces
from labkit.envs.guess import guess_traces
from labkit.experiments.tools import probe
from labkit.models.policy import BUILTIN
from labkit.models.rollout import completion_logprobs, tokenize_pairs

PROTOCOL = BracketProtocol()


def masked_sft(model, tok, pairs, steps: int, batch_size: int, lr: float, seed: int) -> None:
    """Cross-entropy on the tokens the policy writes: -mean over (completion_mask x writers)
    of log pi(y_t | x, y_<t); AdamW, 20 warm-up steps, then constant."""
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))
    model.train()
    for step in range(steps):
        batch = tokenize_pairs(tok, [rng.choice(pairs) for _ in range(batch_size)])
        mask = batch.completion_mask.clone()  # [B, T]; eos is the policy's
        for i, (_, target) in enumerate(batch_pairs(batch)):
            mask[i, : len(target)] *= torch.tensor(PROTOCOL.writers(target))
        loss = -masked_mean(completion_logprobs(model, batch), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 200 == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)


def batch_pairs(batch):
    return zip(batch.prompts, batch.completions)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tool-frac", type=float, default=0.5, help="calculator traces that call")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--learning-rate", type=float, default=3e-3)
    ap.add_argument("--out", default=str(BUILTIN["tiny"].parent / "tiny-tools"))
    args = ap.parse_args()

    torch.set_num_threads(1)
    lk.set_seed(args.seed)
    model, tok = lk.load_policy("tiny")
    pairs = calc_traces(CalcTask(), 6000, args.tool_frac, args.seed) + guess_traces(
        16, 3000, args.seed
    )
    random.Random(args.seed).shuffle(pairs)
    masked_sft(model, tok, pairs, args.steps, 64, args.learning_rate, args.seed)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    stats = {
        "calculator": probe(model, tok, "calculator", 384, seed=1),
        "guess": probe(model, tok, "guess", 192, seed=1),
    }
    print(json.dumps(stats, indent=1))
    card = {
        "base": "tiny",
        "seed": args.seed,
        "tool_frac": args.tool_frac,
        "steps": args.steps,
        "learning_rate": args.learning_rate,
        "pairs": len(pairs),
        "probe": "held-out episodes, temperature 1 (labkit.experiments.tools.probe)",
        **stats,
    }
    with open(f"{args.out}/labkit_card.json", "w") as f:
        json.dump(card, f, indent=1)


if __name__ == "__main__":
    main()
