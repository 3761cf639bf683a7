"""No import circle among the modules of lab and grader: no module imports, through any chain
of project imports, one that imports it back. Every import is read with `ast` by tests/layers.py,
at the top of a module and inside functions alike (an import moved into a function to dodge a
circle still closes it when that function runs); only imports under TYPE_CHECKING, which never
run, are left out. A module is the one an import names (`from grader.course import catalog`:
grader.course.catalog); a package's __init__ counts only where an import names the package."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.layers import Import, imports

ROOT = Path(__file__).resolve().parents[2]


def import_graph(found: list[Import]) -> dict[str, dict[str, list[Import]]]:
    """importer -> imported -> the imports between them that run (TYPE_CHECKING's left out)."""
    graph: dict[str, dict[str, list[Import]]] = defaultdict(lambda: defaultdict(list))
    for one in found:
        if not one.type_checking:
            graph[one.importer][one.imported].append(one)
    return graph


def circles(graph: dict[str, dict[str, list[Import]]]) -> list[list[str]]:
    """The graph's strongly connected components of two modules or more (each a set of modules
    that all reach one another through imports), each sorted, in sorted order: Tarjan's
    algorithm, iterative (the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(component: list[str], graph: dict[str, dict[str, list[Import]]]) -> str:
    """A circle's modules and the imports among them, each with its line and where it is."""
    members = set(component)
    lines = [" <-> ".join(component)]
    for importer in component:
        for imported in sorted(set(graph[importer]) & members):
            for line, in_function in sorted({(one.line, one.in_function) for one in graph[importer][imported]}):
                where = "in a function" if in_function else "at the top"
                lines.append(f"    {importer} (line {line}, {where}) imports {imported}")
    return "\n".join(lines)


def test_no_import_circle_among_the_modules_of_lab_and_grader():
    graph = import_graph(imports(ROOT))
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(describe(c, graph) for c in found)


def test_the_circle_finder_finds_a_circle_through_a_function_and_not_through_type_checking():
    def edge(a: str, b: str, *, in_function: bool = False, type_checking: bool = False) -> Import:
        return Import(a, b, 1, in_function, type_checking)

    graph = import_graph([edge("a", "b"), edge("b", "c"), edge("c", "a", in_function=True), edge("c", "d"),
                          edge("d", "e"), edge("e", "d", type_checking=True), edge("f", "f.g"),
                          edge("f.g", "f")])
    assert circles(graph) == [["a", "b", "c"], ["f", "f.g"]]
    assert "c (line 1, in a function) imports a" in describe(["a", "b", "c"], graph)
