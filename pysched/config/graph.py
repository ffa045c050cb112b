"""Finding dependency cycles among jobs, so a config that could never finish is refused.

Only same-date dependencies can deadlock: a cross-date one (``date: previous``) always points
at an earlier run date, so it cannot close a loop. The loader passes only same-date edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def find_cycles(edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of jobs, each as a closed path.

    ``edges`` maps a job to the jobs it depends on. A returned path starts and ends with the
    same job (``["transform", "load", "transform"]``) and follows dependency order, written the
    way an operator reads it: ``transform -> load -> transform``. Iterative, so a long chain of
    thousands of jobs cannot overflow the stack.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_i = work.pop()
            if child_i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges.get(node, ())
            if child_i < len(children):
                work.append((node, child_i + 1))
                child = children[child_i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return [_path_through(group, edges) for group in groups]


def _path_through(group: list[str], edges: Mapping[str, Sequence[str]]) -> list[str]:
    """A shortest cycle inside one strongly connected group, from its first-written job."""
    members = set(group)
    order = {name: i for i, name in enumerate(edges)}
    start = min(group, key=lambda name: order.get(name, len(order)))
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in edges.get(node, ()):
                if child == start:
                    back = [node]
                    while back[-1] != start:
                        back.append(previous[back[-1]])
                    return [*reversed(back), start]
                if child in members and child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [*group, group[0]]
