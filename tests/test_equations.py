"""docs/EQUATIONS.md, the key-equations page, is current: every formula's quoted lines are where
the page says, and a line that moves or changes makes the page stale."""

import importlib
import importlib.util
import pathlib
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("equations", ROOT / "scripts" / "equations.py")
equations = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(equations)

DOC = ROOT / "docs" / "EQUATIONS.md"


@pytest.fixture(scope="module")
def entries():
    return equations.load()


def test_equations_doc_is_up_to_date(entries):
    assert DOC.exists() and DOC.read_text() == equations.render(entries), (
        "docs/EQUATIONS.md is stale: run python scripts/equations.py"
    )


def test_every_quoted_line_is_where_the_page_says():
    text = DOC.read_text()
    claims = equations.page_claims(text)
    assert len(claims) == text.count("**Code:**")  # the parser saw every reference
    assert not equations.stale_claims(text), "quoted lines no longer at their place"


def test_every_marker_finds_exactly_its_line(entries):
    for e in entries:
        for ref in e["code"]:
            span = equations.locate(ref)  # raises unless each marker matches exactly one line
            lines = (ROOT / span.path).read_text().splitlines()
            markers = ref.get("lines", [])
            if markers:
                assert markers[0] in lines[span.first - 1], (e["id"], markers[0])
                assert markers[-1] in lines[span.last - 1], (e["id"], markers[-1])


def test_every_entry_names_a_paper_and_the_course_formulas_are_there(entries):
    ids = {e["id"] for e in entries}
    course = {
        "k1", "k2", "k3", "k3-is", "gae", "grpo-advantage", "rloo", "reinforce-baseline",
        "dr-grpo-advantage", "dr-grpo-constant", "clip-higher", "dynamic-sampling",
        "dapo-token-level", "overlong-filtering", "soft-overlong", "gspo", "cispo", "ppo-clip",
        "value-clipping", "kl-reward", "dpo", "ipo", "bradley-terry", "tis", "off-policy-mask",
        "entropy-bonus", "kimi-length",
    }  # fmt: skip
    assert course <= ids, course - ids
    for e in entries:
        assert e["latex"].strip() and all(p["title"] and p["year"] for p in e["paper"]), e["id"]


def _module(tmp_path, body: str):
    (tmp_path / "eqmod.py").write_text(textwrap.dedent(body))
    sys.modules.pop("eqmod", None)
    importlib.invalidate_caches()
    return importlib.import_module("eqmod")


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("eqmod", None)


def _entry(lines):
    code = {"fn": "eqmod:f"} | ({"lines": lines} if lines else {})
    paper = {"authors": "A", "year": 2000, "title": "T"}
    return {"id": "x", "section": "S", "title": "X", "latex": "x", "paper": [paper], "code": [code]}


def test_a_moved_or_changed_line_changes_the_page(toy):
    src = """
    def f(x):
        y = x + 1
        return 2 * y
    """
    _module(toy, src)
    entry = _entry(["return 2 * y"])
    before = equations.render([entry], root=toy)
    assert "[eqmod.py:4](../eqmod.py#L4)" in before and "return 2 * y" in before
    assert not equations.stale_claims(before, root=toy)
    _module(toy, "\n# a line above moves f down\n" + textwrap.dedent(src))
    moved = equations.render([entry], root=toy)
    assert moved != before and "[eqmod.py:6](../eqmod.py#L6)" in moved
    assert equations.stale_claims(before, root=toy) == ["eqmod.py:4-4"]  # the old page is wrong
    _module(toy, src.replace("2 * y", "3 * y"))
    with pytest.raises(ValueError, match="matches 0 lines"):
        equations.render([entry], root=toy)  # the marker's line changed: the entry must be fixed


def test_a_marker_must_be_unambiguous_and_no_marker_quotes_the_function(toy):
    _module(toy, "def f(x):\n    y = x\n    y = y\n    return y\n")
    with pytest.raises(ValueError, match="matches 2 lines"):
        equations.render([_entry(["y = "])], root=toy)
    whole = equations.render([_entry(None)], root=toy)
    assert "[eqmod.py:1-4](../eqmod.py#L1-L4)" in whole and "def f(x):" in whole


def test_the_registry_refuses_unknown_fields(tmp_path):
    bad = tmp_path / "eq.toml"
    bad.write_text('[[equation]]\nid = "a"\nsection = "s"\ntitle = "t"\nlatex = "x"\nlatx = "y"\n')
    with pytest.raises(ValueError, match="unknown \\['latx'\\]"):
        equations.load(bad)
