"""labkit's environments in TRL 1.16's ``GRPOTrainer``: the same class as ``environment_factory``
(chat models), or labkit's episode loop as ``rollout_func`` returning ``env_mask`` (the tiny
character-level policy).

Why two paths: TRL's ``environment_factory`` finds tool calls with the chat template's
tool-call parser (``parse_response`` needs a ``response_schema``) and feeds results back as
``tool`` messages; the tiny policy has no chat template, so TRL cannot parse its ``[37*48=``.
For it, :func:`rollout_func` runs :func:`labkit.models.episode.episodes` (same environment
class, same protocol) on TRL's model and returns ``env_mask``, which TRL multiplies into the
loss mask exactly as its own ``tool_mask`` (``completion_mask * tool_mask``).
:func:`trl_inputs` builds the inputs dict of ``GRPOTrainer._compute_loss`` from a labkit
rollout, for the parity test.
"""

from __future__ import annotations

import torch

from labkit.models.episode import episodes

ENV_SCRIPT = '''\
"""GRPO with TRL on a labkit environment, exported from labkit ({source}).

    accelerate launch --config_file accelerate.yaml train_grpo.py [--max-steps N]
"""
import argparse
import pathlib

import torch
from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

from labkit.envs import ENVS
from labkit.integrations.trl_env import rollout_func
{reward_code}

HERE = pathlib.Path(__file__).parent
MODEL = {model!r}
ENV = {env!r}  # labkit.envs.ENVS[ENV][0] is the environment class, passed unchanged
MAX_TURNS = {max_turns!r}
CONFIG = {config}
REWARD_FUNCS = [{reward_names}]


def model_path(name):
    from labkit.integrations.trl_script import resolve_model
    return resolve_model(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-steps", type=int, default=CONFIG["max_steps"])
    ap.add_argument("--output-dir", default=CONFIG["output_dir"])
    a = ap.parse_args()
    kw = {{**CONFIG, "max_steps": a.max_steps, "output_dir": a.output_dir}}
    if not torch.cuda.is_available():
        kw.update(bf16=False, use_cpu=True, activation_checkpointing=False, use_vllm=False)
    data = load_dataset("json", data_files=str(HERE / "data" / "train.jsonl"), split="train")
    env_cls, task_cls = ENVS[ENV]
    path = model_path(MODEL)
    from transformers import AutoTokenizer
    if AutoTokenizer.from_pretrained(path).chat_template:  # TRL parses tool calls itself
        data = data.map(lambda x: {{"prompt": [{{"role": "user", "content": x["prompt"]}}]}})
        env = {{"environment_factory": env_cls}}
    else:  # no chat template (the tiny policy): labkit's episode loop, env_mask to TRL
        env = {{"rollout_func": rollout_func(env_cls, task_cls.protocol, MAX_TURNS)}}
    trainer = GRPOTrainer(model=path, reward_funcs=REWARD_FUNCS, args=GRPOConfig(**kw),
                          train_dataset=data, **env)
    trainer.train()
    trainer.save_model(kw["output_dir"])


if __name__ == "__main__":
    main()
'''


def env_script_text(trl_kwargs: dict, model: str, env: str, reward_funcs, max_turns: int) -> str:
    """``train_grpo.py`` for an environment run: ``trl_kwargs`` as TRL's GRPOConfig, the
    environment ``env`` (a name of ``labkit.envs.ENVS``) passed to TRL unchanged.

    >>> text = env_script_text({"beta": 0.0}, "tiny-tools", "calculator", ["exact_match"], 2)
    >>> "ENV = 'calculator'" in text and "rollout_func(env_cls" in text
    True
    """
    from labkit.integrations.trl_script import config_text, reward_code

    code, names = reward_code(reward_funcs)
    return ENV_SCRIPT.format(
        source=f"model {model}, environment {env}",
        reward_code=code,
        model=model,
        env=env,
        max_turns=max_turns,
        config=config_text(trl_kwargs),
        reward_names=", ".join(names),
    )


def rollout_func(env_factory, protocol, max_turns: int, tool_timeout: float = 1.0):
    """TRL's ``rollout_func(prompts, trainer) -> dict``: one labkit episode per prompt (a fresh
    ``env_factory()`` each) on ``trainer.model``, returning ``prompt_ids``, ``completion_ids``
    (the whole episode), ``logprobs`` (None: TRL recomputes pi_old) and ``env_mask``."""

    def run(prompts: list, trainer) -> dict:
        tok, a = trainer.processing_class, trainer.args
        texts = [p if isinstance(p, str) else p[-1]["content"] for p in prompts]
        envs = [env_factory() for _ in texts]
        r = episodes(
            trainer.model,
            tok,
            texts,
            envs,
            columns=[{"prompt": p} for p in texts],
            protocol=protocol,
            max_completion_length=a.max_completion_length,
            max_turns=max_turns,
            temperature=a.temperature,
            top_k=a.top_k or 0,
            top_p=a.top_p,
            tool_timeout=tool_timeout,
        )
        n = r.lengths.tolist()
        P = r.prompt_mask.sum(-1).tolist()
        out = {
            "prompt_ids": [row[len(row) - p :] for row, p in zip(r.prompt_ids.tolist(), P)],
            "completion_ids": [row[:k] for row, k in zip(r.completion_ids.tolist(), n)],
            "logprobs": None,
            "env_mask": [row[:k] for row, k in zip(r.env_mask.tolist(), n)],
        }
        if callable(getattr(envs[0], "get_reward", None)):  # a column for :func:`env_reward`
            out["env_reward"] = [float(e.get_reward()) for e in envs]
        return out

    return run


def env_reward(completions: list[str], env_reward: list[float], **kwargs) -> list[float]:
    """The environments' ``get_reward()`` as TRL reward function: :func:`rollout_func` returns
    it as the extra column ``env_reward``, which TRL passes to the reward functions.

    >>> env_reward(["a", "b"], env_reward=[1.0, 0.5])
    [1.0, 0.5]
    """
    return list(env_reward)


def trl_inputs(
    r, advantages: torch.Tensor, old_logp: torch.Tensor, ref_logp: torch.Tensor | None = None
) -> dict:
    """The inputs dict of TRL's ``GRPOTrainer._compute_loss`` for a labkit episode rollout
    ``r``: prompts and episodes, ``tool_mask`` = ``env_mask``, advantages, pi_old (and pi_ref)."""
    out = {
        "prompt_ids": r.prompt_ids,
        "prompt_mask": r.prompt_mask,
        "completion_ids": r.completion_ids,
        "completion_mask": r.completion_mask,
        "tool_mask": r.env_mask,
        "advantages": advantages,
        "old_per_token_logps": old_logp,
        "num_items_in_batch": (r.completion_mask * r.env_mask).sum(),
    }
    if ref_logp is not None:
        out["ref_per_token_logps"] = ref_logp
    return out
