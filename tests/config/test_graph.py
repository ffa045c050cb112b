import itertools

from hypothesis import given
from hypothesis import strategies as st

from pysched.config.graph import find_cycles


def test_two_job_cycle_reads_in_dependency_order() -> None:
    assert find_cycles({"transform": ["load"], "load": ["transform"]}) == [
        ["transform", "load", "transform"]
    ]


def test_three_job_cycle_follows_edges() -> None:
    cycles = find_cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]})
    assert cycles == [["a", "b", "c", "a"]]


def test_no_cycle_in_a_chain_or_diamond() -> None:
    assert find_cycles({"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}) == []


def test_long_chain_does_not_overflow() -> None:
    edges = {f"j{i}": [f"j{i + 1}"] for i in range(20_000)}
    edges["j20000"] = ["j0"]
    (cycle,) = find_cycles(edges)
    assert cycle[0] == cycle[-1] == "j0"
    assert len(cycle) == 20_002


@given(
    st.dictionaries(
        st.sampled_from("abcdefg"), st.lists(st.sampled_from("abcdefg"), max_size=3), max_size=7
    )
)
def test_every_reported_path_is_a_real_cycle(edges: dict[str, list[str]]) -> None:
    for cycle in find_cycles(edges):
        assert cycle[0] == cycle[-1]
        for upstream, downstream in itertools.pairwise(cycle):
            assert downstream in edges.get(upstream, [])
