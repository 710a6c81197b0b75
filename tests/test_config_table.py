"""docs/CONFIG.md is the table of every config field, up to date, and every field documented."""

import importlib.util
import pathlib

from labkit.algos import config

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("config_table", ROOT / "scripts" / "config_table.py")
config_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(config_table)


def test_config_doc_is_up_to_date():
    doc = ROOT / "docs" / "CONFIG.md"
    assert doc.exists() and doc.read_text() == config_table.render(config), (
        "docs/CONFIG.md is stale: run python scripts/config_table.py"
    )


def test_every_config_field_has_a_docstring():
    missing = config_table.missing_docstrings(config)
    assert not missing, f"config fields without a docstring under them: {', '.join(missing)}"


def test_the_table_lists_inherited_fields_with_the_subclass_default_and_docstring():
    rows = {
        cls.__name__: {
            name: (default, meaning) for name, default, meaning in config_table.field_rows(cls)
        }
        for cls in config_table.config_classes(config)
    }
    assert {"GRPOConfig", "PPOConfig", "DPOConfig", "RewardModelConfig"} <= set(rows)
    ppo, grpo = rows["PPOConfig"], rows["GRPOConfig"]
    assert set(grpo) < set(ppo)  # a subclass lists every field of its base
    assert ppo["num_generations"][0] == "`4`" and grpo["num_generations"][0] == "`16`"
    assert ppo["num_generations"][1] != grpo["num_generations"][1]  # PPO's own docstring
    assert ppo["top_p"] == grpo["top_p"]  # inherited as is
