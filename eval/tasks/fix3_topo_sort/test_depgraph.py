import pytest

from depgraph import CycleError, TaskGraph, parse_graph

PIPELINE = """
# build pipeline
deploy: package test
package: build
test: build lint   # lint first
build: fetch
lint:
"""


def test_parse_graph():
    graph = parse_graph(PIPELINE)
    assert graph.tasks == ["build", "deploy", "fetch", "lint", "package", "test"]
    assert graph.dependencies("test") == ["build", "lint"]
    assert graph.dependencies("fetch") == []
    with pytest.raises(ValueError, match="line 2"):
        parse_graph("a: b\nc d\n")


def test_order_puts_dependencies_first():
    order = parse_graph(PIPELINE).order()
    assert order == ["fetch", "build", "package", "lint", "test", "deploy"]


def test_levels_group_parallel_tasks():
    assert parse_graph(PIPELINE).levels() == [["fetch", "lint"], ["build"], ["package", "test"], ["deploy"]]


def test_dependents_are_transitive():
    graph = parse_graph(PIPELINE)
    assert graph.dependents("build") == ["deploy", "package", "test"]
    assert graph.dependents("lint") == ["deploy", "test"]
    assert graph.dependents("deploy") == []
    with pytest.raises(KeyError):
        graph.dependents("publish")


def test_cycle_is_reported_with_its_path():
    graph = parse_graph("a: b\nb: c\nc: a\n")
    with pytest.raises(CycleError) as caught:
        graph.order()
    assert caught.value.cycle == ["a", "b", "c", "a"]

    graph = parse_graph("app: lib\nlib: util\nutil: lib\n")
    with pytest.raises(CycleError) as caught:
        graph.order()
    assert caught.value.cycle == ["lib", "util", "lib"]
    assert str(caught.value) == "dependency cycle: lib -> util -> lib"


def test_levels_refuse_a_cycle():
    graph = TaskGraph()
    graph.add("x", ["y"])
    graph.add("y", ["x"])
    with pytest.raises(CycleError):
        graph.levels()


def test_self_dependency_is_a_cycle():
    graph = TaskGraph()
    with pytest.raises(CycleError) as caught:
        graph.add("build", ["build"])
    assert caught.value.cycle == ["build", "build"]
