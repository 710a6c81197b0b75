"""TRL runs in labkit's run log, and labkit configs as TRL configs.

:class:`RunLogCallback` is a ``transformers.TrainerCallback``: add it to a TRL ``GRPOTrainer``,
``RLOOTrainer`` or ``DPOTrainer`` and every logged step lands in a :class:`labkit.RunLog`, with
TRL's metric names mapped to labkit's (``reward`` -> ``reward/mean``, ``kl`` -> ``kl/k3`` for GRPO
and ``kl/k1`` for RLOO, ``completions/mean_length`` -> ``len/mean``, ...; every raw value is also
kept as ``trl/<name>``). With ``log_completions=True`` (GRPO, RLOO) TRL writes each logged
generation batch to ``<output_dir>/completions/completions_<step>.parquet``; the callback reads
those into sample rows (prompt, completion, each reward, weighted total, advantage, length), so
labkit's plots, dashboard figure and report work on a TRL run.

:func:`trl_config` maps a labkit :class:`~labkit.config.GRPOConfig` to TRL's ``GRPOConfig``:
one labkit step (``prompts_per_step`` x ``num_generations`` completions, one optimizer step per
inner iteration) is one TRL step; ``gradient_checkpointing`` is TRL's
``activation_checkpointing`` (transformers 5's name; ``gradient_checkpointing`` is its deprecated
alias, which TRL sets to True by default), ``tis_cap``/``tis_mode`` are TRL's
``vllm_importance_sampling_*`` (TRL applies them only when vLLM generates); with no GPU it sets
``bf16=False, use_cpu=True``.
"""

from __future__ import annotations

import math
import pathlib

from transformers import TrainerCallback

from labkit.algos.config import GRPOConfig
from labkit.runs.log import RunLog, runs_root
from labkit.tasks.base import max_completion_tokens

# TRL metric -> labkit metric key (README's table). "kl" depends on the trainer (see KL_KEY).
COMMON = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr", "entropy": "entropy"}
RL_KEYS = {
    "reward": "reward/mean",
    "reward_std": "reward/std",
    "frac_reward_zero_std": "adv/frac_zero_std",
    "clip_ratio/low_mean": "clip/ratio_low",
    "clip_ratio/high_mean": "clip/ratio_high",
    "clip_ratio/region_mean": "clip/region",
    "completions/mean_length": "len/mean",
    "completions/clipped_ratio": "len/truncated_frac",
}
# DPO's implicit reward r = beta log(pi/pi_ref): the margin chosen - rejected is its "reward".
DPO_KEYS = {
    "rewards/margins": "reward/mean",
    "rewards/accuracies": "accuracy",
    "rewards/chosen": "dpo/reward_chosen",
    "rewards/rejected": "dpo/reward_rejected",
    "logps/chosen": "dpo/logp_chosen",
    "logps/rejected": "dpo/logp_rejected",
}
KL_KEY = {"grpo": "kl/k3", "rloo": "kl/k1"}  # GRPO: k3 loss (IS-corrected); RLOO: k1 in reward


def trainer_kind(args) -> str:
    """'grpo', 'rloo' or 'dpo' from the TRL config class (``GRPOConfig`` -> 'grpo')."""
    name = type(args).__name__.lower()
    for kind in ("grpo", "rloo", "dpo"):
        if name.startswith(kind):
            return kind
    return "other"


def map_metrics(logs: dict, step: int, kind: str) -> dict:
    """One labkit metric row from a TRL ``logs`` dict (raw values kept as ``trl/<key>``).

    >>> m = map_metrics({"reward": 0.5, "kl": 0.01, "rewards/f/mean": 0.5}, 3, "grpo")
    >>> m["step"], m["reward/mean"], m["kl/k3"], m["rewards/f/mean"], m["trl/kl"]
    (3, 0.5, 0.01, 0.5, 0.01)
    """
    table = {**COMMON, **(DPO_KEYS if kind == "dpo" else RL_KEYS)}
    if kind in KL_KEY:
        table["kl"] = KL_KEY[kind]
    row = {"step": step}
    for k, v in logs.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        row[f"trl/{k}"] = v
        if k in table:
            row[table[k]] = v
        elif k.startswith("rewards/") and kind != "dpo":  # rewards/<fn>/mean|std: same keys
            row[k] = v
    return row


def sample_rows(frame, weights: dict[str, float], G: int, tokenizer=None) -> list[dict]:
    """labkit sample rows from one TRL completions parquet table (columns step, prompt,
    completion, one per reward function, advantage). ``reward`` is the weighted sum of the
    reward columns that are not NaN (TRL's ``nansum``); ``group`` is the row index // G."""
    rows = []
    for i, r in enumerate(frame.to_dict("records")):
        per_fn = {name: _num(r.get(name)) for name in weights}
        total = sum(w * per_fn[n] for n, w in weights.items() if per_fn[n] is not None)
        completion = str(r["completion"])
        length = (
            len(tokenizer(completion, add_special_tokens=False)["input_ids"])
            if tokenizer is not None
            else None
        )
        rows.append(
            {
                "step": int(r["step"]),
                "group": i // G,
                "prompt": str(r["prompt"]),
                "completion": completion,
                "answer": None,
                "reward": total,
                "advantage": _num(r.get("advantage")),
                "length": length,
                "truncated": None,
                "correct": None,
                **{f"rewards/{n}": v for n, v in per_fn.items()},
            }
        )
    return rows


def _num(v):
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


class RunLogCallback(TrainerCallback):
    """Feeds a TRL trainer's logs (and logged completions) into a labkit :class:`RunLog`.

    ``run``: a RunLog, a run name (written to ``runs/<name>/``) or None (memory only).
    ``on_record(log, metrics)`` is called after each recorded step (a live figure's refresh).
    Completions: ``cb.attach(trainer)`` (instead of ``callbacks=[cb]``) reads the batch TRL keeps
    for ``log_completions`` at each log (GRPO and RLOO); without it, GRPO's parquet files are
    read one log later (TRL writes them just after ``on_log``) and at the end.

    >>> cb = RunLogCallback(); cb.log.metrics.empty
    True
    """

    def __init__(self, run: RunLog | str | None = None, on_record=None):
        if isinstance(run, RunLog):
            self.log = run
        else:
            self.log = RunLog(runs_root() / run if run else None, {"source": "trl"})
        self.on_record, self.trainer = on_record, None
        self._read: set[str] = set()
        self._last_batch = None

    def attach(self, trainer) -> RunLogCallback:
        """Add this callback to ``trainer`` and read its logged completions directly."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    def on_train_begin(self, args, state, control, **kwargs):
        self.kind = trainer_kind(args)
        self.log.config.update(
            {
                "source": "trl",
                "trainer": self.kind,
                **{
                    k: v
                    for k, v in args.to_dict().items()
                    if isinstance(v, (int, float, str, bool, type(None)))
                },
            }
        )
        if self.log.path is not None:
            self.log.write_config()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or state.global_step == 0 or "train_runtime" in logs:
            return  # the end-of-training summary is not a step
        tok = kwargs.get("processing_class")
        tok = getattr(tok, "tokenizer", tok)  # a processor wraps its tokenizer
        if self.trainer is not None:
            self._read_trainer(args, state.global_step, tok)
        else:
            self._read_parquet(args, tok)
        row = map_metrics(logs, state.global_step, getattr(self, "kind", trainer_kind(args)))
        self.log.log("metrics", [row])
        if self.on_record is not None:
            self.on_record(self.log, row)

    def on_train_end(self, args, state, control, **kwargs):
        if self.trainer is None:
            tok = kwargs.get("processing_class")
            self._read_parquet(args, getattr(tok, "tokenizer", tok))

    def _read_trainer(self, args, step: int, tok) -> None:
        """The generation batch TRL keeps for ``log_completions`` (skipped if already read)."""
        logs = getattr(self.trainer, "_logs", None)
        if not getattr(args, "log_completions", False) or not logs or not logs["prompt"]:
            return
        import pandas as pd

        frame = pd.DataFrame(
            {
                "step": step,
                "prompt": list(logs["prompt"]),
                "completion": list(logs["completion"]),
                **{k: list(v) for k, v in logs["rewards"].items()},
                "advantage": list(logs["advantages"]),
            }
        )
        key = (tuple(frame["completion"]), tuple(frame["advantage"]))
        if key != self._last_batch:  # a batch reused for mu updates is recorded once
            self._last_batch = key
            self._log_samples(args, frame, list(logs["rewards"]), tok)

    def _read_parquet(self, args, tok) -> None:
        """Sample rows from the completions parquet files TRL wrote since the last call."""
        folder = pathlib.Path(args.output_dir) / "completions"
        if not getattr(args, "log_completions", False) or not folder.exists():
            return
        import pandas as pd

        for f in sorted(folder.glob("completions_*.parquet")):
            if f.name not in self._read:
                self._read.add(f.name)
                frame = pd.read_parquet(f)
                names = [
                    c
                    for c in frame.columns
                    if c not in ("step", "prompt", "completion", "advantage")
                ]
                self._log_samples(args, frame, names, tok)

    def _log_samples(self, args, frame, names: list[str], tok) -> None:
        w = list(getattr(args, "reward_weights", None) or [1.0] * len(names))
        G = getattr(args, "num_generations", None) or len(frame)
        self.log.log("samples", sample_rows(frame, dict(zip(names, w)), G, tok))


def trl_config(
    cfg: GRPOConfig | None = None,
    output_dir: str = "trl-run",
    task=None,
    num_processes: int = 1,
    **overrides,
):
    """TRL's ``GRPOConfig`` for the labkit config ``cfg`` (same names, same meaning).

    ``per_device_train_batch_size`` = prompts_per_step x num_generations / num_processes, so
    one TRL step trains on the same completions as one labkit step. No GPU: ``bf16=False,
    use_cpu=True``. ``overrides`` win over everything.

    >>> a = trl_config(GRPOConfig(num_generations=4, prompts_per_step=2, max_completion_length=8))
    >>> a.per_device_train_batch_size, a.num_generations, a.loss_type, a.log_completions
    (8, 4, 'dapo', True)
    """
    import torch
    from trl import GRPOConfig as TRLConfig

    return TRLConfig(
        **{
            **trl_kwargs(
                cfg or GRPOConfig(), output_dir, task, num_processes, torch.cuda.is_available()
            ),
            **overrides,
        }
    )


SAME_NAMES = (
    "num_generations",
    "temperature",
    "top_k",
    "top_p",
    "learning_rate",
    "lr_scheduler_type",
    "weight_decay",
    "max_grad_norm",
    "beta",
    "epsilon",
    "epsilon_high",
    "num_iterations",
    "loss_type",
    "scale_rewards",
    "importance_sampling_level",
    "mask_truncated_completions",
    "reward_weights",
    "max_steps",
    "seed",
)


def trl_kwargs(
    cfg: GRPOConfig,
    output_dir: str = "trl-run",
    task=None,
    num_processes: int = 1,
    gpu: bool = False,
) -> dict:
    """The keyword arguments of TRL's ``GRPOConfig`` for ``cfg`` (plain values: the export
    writes them into a script).

    >>> kw = trl_kwargs(GRPOConfig(prompts_per_step=4, num_generations=8), num_processes=2)
    >>> kw["per_device_train_batch_size"], kw["max_completion_length"], kw["use_cpu"]
    (16, 256, True)
    """
    if cfg.loss_type not in ("grpo", "bnpo", "dr_grpo", "dapo", "cispo"):
        raise ValueError(
            f"loss_type={cfg.loss_type!r} has no TRL GRPOTrainer equivalent: use "
            "one of 'grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo'"
        )
    if cfg.beta > 0 and cfg.kl_estimator != "k3":
        raise ValueError(
            f"kl_estimator={cfg.kl_estimator!r}: TRL's GRPO penalty is k3 only; "
            "set kl_estimator='k3' (or beta=0) before exporting"
        )
    batch = cfg.prompts_per_step * cfg.num_generations
    if batch % num_processes:
        raise ValueError(
            f"prompts_per_step x num_generations = {batch} does not split over "
            f"num_processes={num_processes}: choose sizes whose product it divides"
        )
    length = (
        max_completion_tokens(task, cfg.max_completion_length)
        if task is not None
        else cfg.max_completion_length or 256
    )
    kw = {name: getattr(cfg, name) for name in SAME_NAMES}
    kw.update(
        output_dir=output_dir,
        max_completion_length=length,
        per_device_train_batch_size=batch // num_processes,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        logging_steps=1,
        log_completions=True,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        max_steps=cfg.max_steps * cfg.num_iterations,
    )  # TRL counts optimizer steps
    kw["temperature"] = cfg.temperature or 1e-5  # TRL samples; labkit's 0 means greedy
    # explicit: TRL's GRPOConfig defaults to checkpointing on (gradient_checkpointing=True)
    kw["activation_checkpointing"] = cfg.gradient_checkpointing
    kw.update(tis_kwargs(cfg))
    kw.update(ref_sync_kwargs(cfg))
    if not gpu:
        kw.update(bf16=False, use_cpu=True)
    return kw


def ref_sync_kwargs(cfg: GRPOConfig) -> dict:
    """TRL's three TR-DPO fields when ``cfg`` refreshes pi_ref (none otherwise: TRL's
    defaults); TRL counts optimizer steps, so its ``ref_model_sync_steps`` is labkit's x
    ``num_iterations``.

    >>> ref_sync_kwargs(GRPOConfig(beta=0.1, sync_ref_model=True, ref_model_sync_steps=8,
    ...                            num_iterations=2))["ref_model_sync_steps"]
    16
    """
    if not cfg.sync_ref_model:
        return {}
    if cfg.beta == 0:
        raise ValueError(
            "sync_ref_model=True with beta=0: TRL keeps no pi_ref at beta 0 and refuses the "
            "refresh; set beta > 0 (or sync_ref_model=False) before exporting"
        )
    return {
        "sync_ref_model": True,
        "ref_model_mixup_alpha": cfg.ref_model_mixup_alpha,
        "ref_model_sync_steps": cfg.ref_model_sync_steps * cfg.num_iterations,
    }


TIS_NOTE = "TRL applies TIS only when generation runs in vLLM (use_vllm=True)"
NOTES = {
    "activation_checkpointing": "labkit's gradient_checkpointing",
    "vllm_importance_sampling_correction": f"labkit's tis_cap (None: off); {TIS_NOTE}",
    "vllm_importance_sampling_mode": "labkit's tis_mode",
    "vllm_importance_sampling_clip_max": "labkit's tis_cap, C",
}
"""Comments the exported script writes beside these TRL fields."""


def tis_kwargs(cfg: GRPOConfig) -> dict:
    """TRL's ``vllm_importance_sampling_*`` for labkit's truncated importance sampling
    (``tis_cap`` C, ``tis_mode``: the same four mode names). ``tis_cap=None`` turns TRL's off:
    it is on by default (``sequence_mask``, C = 3). TRL applies it only to vLLM generations.

    >>> tis_kwargs(GRPOConfig(tis_cap=2.0))["vllm_importance_sampling_clip_max"]
    2.0
    >>> tis_kwargs(GRPOConfig())
    {'vllm_importance_sampling_correction': False}
    """
    if cfg.tis_cap is None:
        return {"vllm_importance_sampling_correction": False}
    return {
        "vllm_importance_sampling_correction": True,
        "vllm_importance_sampling_mode": cfg.tis_mode,
        "vllm_importance_sampling_clip_max": cfg.tis_cap,
    }
