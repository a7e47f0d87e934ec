import pytest

from priority_tasks import QueueEmpty, Task, TaskQueue


def test_equal_priorities_pop_in_insertion_order():
    queue = TaskQueue()
    for name in ["lint", "build", "test", "archive"]:
        queue.push(name, priority=1)
    assert [task.name for task in queue.drain()] == ["lint", "build", "test", "archive"]
    assert len(queue) == 0


def test_higher_priority_pops_first():
    queue = TaskQueue()
    queue.push("backup", priority=1)
    queue.push("deploy", priority=5)
    queue.push("notify", priority=1)
    queue.push("rollback", priority=9)
    assert queue.pop().name == "rollback"
    assert [task.name for task in queue.pop_many(3)] == ["deploy", "backup", "notify"]


def test_cancel_skips_the_task():
    queue = TaskQueue()
    queue.push("a", payload={"n": 1})
    queue.push("b")
    queue.push("c")
    assert queue.cancel("a") == Task("a", 0, {"n": 1})
    assert "a" not in queue and len(queue) == 2
    assert queue.peek().name == "b"
    assert [task.name for task in queue.drain()] == ["b", "c"]
    with pytest.raises(KeyError):
        queue.cancel("a")


def test_push_same_name_replaces_and_requeues():
    queue = TaskQueue()
    queue.push("email", payload="old")
    queue.push("sms")
    queue.push("email", payload="new")
    assert len(queue) == 2
    assert [(t.name, t.payload) for t in queue.drain()] == [("sms", None), ("email", "new")]


def test_empty_queue_raises():
    queue = TaskQueue()
    with pytest.raises(QueueEmpty):
        queue.pop()
    queue.push("only")
    queue.cancel("only")
    with pytest.raises(QueueEmpty):
        queue.peek()
    assert queue.pop_many(5) == []
    with pytest.raises(ValueError):
        queue.push("")


def test_reprioritize_keeps_payload():
    queue = TaskQueue()
    queue.push("report", payload={"fmt": "pdf"})
    queue.push("cleanup")
    task = queue.reprioritize("report", 0)
    assert task == Task("report", 0, {"fmt": "pdf"})
    assert sorted(queue.names()) == ["cleanup", "report"]
    assert [t.name for t in queue.drain()] == ["cleanup", "report"]
