"""The located YAML tree: places, typing, merges, and both composers agreeing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.config.yaml_tree import YMap, YScalar, YSeq, read_yaml

EXAMPLE = (Path(__file__).parents[2] / "examples" / "etl.yaml").read_text()


def test_places_are_one_based() -> None:
    root, problems = read_yaml("a:\n  b: [x, 'y']\n", "f.yaml")
    assert problems == []
    assert isinstance(root, YMap)
    inner = root.get("a")
    assert isinstance(inner, YMap)
    seq = inner.get("b")
    assert isinstance(seq, YSeq)
    x, y = seq.items
    assert isinstance(x, YScalar) and isinstance(y, YScalar)
    assert (x.place.line, x.place.col) == (2, 7)
    assert (y.place.line, y.place.col, y.quoted) == (2, 10, True)


def test_yaml_12_typing() -> None:
    root, _ = read_yaml("a: yes\nb: 0o17\nc: 2026-10-19\nd: ~\ne: 1.5\nf: '7'\ng: 1_000\n", "f")
    assert isinstance(root, YMap)
    values = {k.value: v.value for k, v in root.entries if isinstance(v, YScalar)}
    assert values == {
        "a": "yes",
        "b": 15,
        "c": dt.date(2026, 10, 19),
        "d": None,
        "e": 1.5,
        "f": "7",
        "g": 1000,
    }


def test_duplicates_are_kept_for_reporting() -> None:
    root, _ = read_yaml("a: 1\na: 2\n", "f")
    assert isinstance(root, YMap)
    assert root.keys() == ["a", "a"]
    first = root.get("a")
    assert isinstance(first, YScalar) and first.value == 1


def test_merge_keys_own_keys_win() -> None:
    root, problems = read_yaml("base: &b {x: 1, y: 2}\nthing:\n  <<: *b\n  y: 3\n", "f")
    assert problems == []
    assert isinstance(root, YMap)
    thing = root.get("thing")
    assert isinstance(thing, YMap)
    assert {k.value: v.value for k, v in thing.entries if isinstance(v, YScalar)} == {
        "y": 3,
        "x": 1,
    }


def test_syntax_error_is_a_problem_with_place() -> None:
    root, problems = read_yaml("a: [1\nb: 2\n", "f.yaml")
    assert root is None
    assert len(problems) == 1
    assert str(problems[0]).startswith("f.yaml:2:")


def _shape(node: object) -> object:
    if isinstance(node, YMap):
        return ("map", tuple((_shape(k), _shape(v)) for k, v in node.entries), node.place)
    if isinstance(node, YSeq):
        return ("seq", tuple(_shape(i) for i in node.items), node.place)
    if isinstance(node, YScalar) and node.text == "" and not node.quoted:
        # an implicit empty value: libyaml marks it where the next token starts, the pure
        # parser where the value would have been; neither place is one a message points at.
        # Tagged '!' (the non-specific tag), libyaml reads it as the string '' and the pure
        # parser as null: both are "nothing here" to every check of the config
        return ("empty", node.value or None)
    return node


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_c_and_pure_composers_agree(data: st.DataObject) -> None:
    lines = EXAMPLE.splitlines(keepends=True)
    cut = data.draw(st.integers(0, len(lines)))
    extra = data.draw(st.text(alphabet="ab:{}[]-,'\" \n#&*!|>0", max_size=20))
    text = "".join(lines[:cut]) + extra
    fast, fast_problems = read_yaml(text, "f")
    pure, pure_problems = read_yaml(text, "f", pure=True)
    # libyaml and the pure parser differ on a few corner cases of what is valid YAML (a block
    # scalar indicator followed by '#', say; or a lone anchor, '&0:', which one reads as a
    # mapping and the other as an empty document); where both accept and both read a
    # document, they must agree exactly
    if not fast_problems and not pure_problems and fast is not None and pure is not None:
        assert _shape(fast) == _shape(pure)


def test_the_pure_parsers_internal_assert_is_a_problem_not_a_crash() -> None:
    # ruamel's pure-Python scanner asserts on this comment layout (found by random inputs);
    # where libyaml is missing that parser is the one in use
    root, problems = read_yaml("#\n| #b\n]", "f", pure=True)
    assert root is None
    assert [p.message for p in problems] == [
        "YAML the parser cannot read (check comments and indentation)"
    ]


def test_a_document_nested_past_any_config_is_a_problem_not_a_crash() -> None:
    """30,000 levels of brackets (60 KB) overflowed libyaml's composer, which recurses in C,
    and killed the process with SIGSEGV: a reload of such a file ended the scheduler."""
    for text in ("jobs: " + "[" * 30_000 + "]" * 30_000, "a: " + "{b: " * 30_000 + "}" * 30_000):
        for pure in (False, True):
            tree, problems = read_yaml(text, "deep.yaml", pure=pure)
            assert tree is None
            (problem,) = problems
            assert "YAML nested too deeply" in problem.message
    _, (problem,) = read_yaml("jobs: " + "[" * 30_000 + "]" * 30_000, "deep.yaml")
    assert (problem.line, problem.col) == (1, 106)  # the 101st level (the top mapping is one)
    # as deep as a config may go is fine
    tree, problems = read_yaml("a: " + "[" * 99 + "]" * 99, "ok.yaml")
    assert tree is not None and problems == []
