"""Short open-ended prompts shipped with labkit (``labkit/data/short_prompts.txt``).

The task of the seed's SmolLM2 demo: there is no right answer, only a reward on the completion
itself (``length_target``: -|50 - len(completion)|). ``verify`` is therefore always False and
``answer`` is empty. Prompts are wrapped in SmolLM2's chat template (ChatML) by default, so the
instruct model answers as an assistant; ``template="plain"`` keeps the bare text.
"""

from __future__ import annotations

import pathlib
import random

from labkit.tasks.base import Example, Task

DATA = pathlib.Path(__file__).parent.parent / "data" / "short_prompts.txt"
TEMPLATES = {
    "chatml": "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
    "plain": "{}",
}


def read_prompts(path: str | pathlib.Path = DATA) -> list[str]:
    """Non-empty, non-comment lines of a text file.

    >>> len(read_prompts()) >= 60, read_prompts()[0]
    (True, 'Describe a cat.')
    """
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]


class ShortPrompts(Task):
    """The shipped prompts, a seeded fifth held out; no reference answers.

    >>> t = ShortPrompts(); len(t.train), len(t.heldout), t.verify("anything", "")
    (52, 12, False)
    >>> t.train[0].prompt.startswith("<|im_start|>user")
    True
    """

    name = "short_prompts"

    def __init__(
        self,
        template: str = "chatml",
        heldout_fraction: float = 0.2,
        seed: int = 0,
        path: str | pathlib.Path = DATA,
        max_completion_tokens: int = 64,
    ):
        if template not in TEMPLATES:
            raise ValueError(f"template={template!r}: use one of {sorted(TEMPLATES)}")
        if not 0.0 <= heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction={heldout_fraction}: use a value in [0, 1)")
        texts = read_prompts(path)
        random.Random(seed).shuffle(texts)
        examples = [Example(TEMPLATES[template].format(t), "") for t in texts]
        k = int(len(examples) * heldout_fraction)
        self.heldout, self.train = examples[:k], examples[k:]
        self.max_completion_tokens = max_completion_tokens

    def verify(self, completion: str, answer: str) -> bool:
        """No reference answer: never "correct" (accuracy stays 0; read the rewards instead)."""
        return False

    @property
    def max_answer_chars(self) -> int:  # the trainer samples this + 1 tokens by default
        return self.max_completion_tokens - 1
