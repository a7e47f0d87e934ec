import pytest

from events import EventBus, StopPropagation, topic_matches


def test_topic_matching():
    assert topic_matches("order.*", "order.created")
    assert not topic_matches("order.*", "order.item.added")
    assert topic_matches("order.#", "order.item.added")
    assert not topic_matches("order.created", "order")


def test_priority_order_and_results():
    bus = EventBus()
    bus.subscribe("order.*", lambda t, p: "audit")
    bus.subscribe("order.created", lambda t, p: p["id"] * 2, priority=10)
    bus.subscribe("user.#", lambda t, p: "nope")
    report = bus.publish("order.created", {"id": 21})
    assert report.results == [42, "audit"]
    assert report.delivered == 2 and report.ok


def test_once_and_stop_propagation():
    bus = EventBus()
    seen = []
    bus.subscribe("job.done", lambda t, p: seen.append("once"), once=True)

    def gate(topic, payload):
        seen.append("gate")
        if payload.get("stop"):
            raise StopPropagation

    bus.subscribe("job.*", gate, priority=-1)
    bus.subscribe("#", lambda t, p: seen.append("tail"), priority=-5)
    assert bus.publish("job.done").delivered == 3
    assert bus.publish("job.done", {"stop": True}).delivered == 1
    assert seen == ["once", "gate", "tail", "gate"]


def test_errors_are_collected_or_raised():
    bus = EventBus()
    bus.subscribe("x", lambda t, p: 1 / 0)
    bus.subscribe("x", lambda t, p: "after")
    report = bus.publish("x")
    assert not report.ok and isinstance(report.errors[0], ZeroDivisionError)
    assert report.results == ["after"] and report.delivered == 2
    strict = EventBus(raise_errors=True)
    strict.subscribe("x", lambda t, p: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        strict.publish("x")


def test_publish_rejects_wildcards_and_copies_payload():
    bus = EventBus()
    with pytest.raises(ValueError):
        bus.publish("order.*")
    original = {"n": 1}
    bus.subscribe("t", lambda t, p: p.update(n=2))
    bus.publish("t", original)
    assert original == {"n": 1}
    assert bus.history == ["t"]
