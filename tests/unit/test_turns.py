"""Turn-taking: one timed round at a time, only once every live worker waits, in an order
that rotates each cycle; the worker side blocks until it is told to go."""

from __future__ import annotations

import io
import os
import threading
from dataclasses import dataclass, field

import pytest

from mlxcompat.turns import TurnOrder, TurnTaker


@dataclass
class FakeWorker:
    name: str
    waiting: str = ""
    exited: bool = False
    to_worker: io.StringIO = field(default_factory=io.StringIO)

    def told(self) -> int:
        return self.to_worker.getvalue().count("go\n")


def _cycle(order: TurnOrder, workers: list[FakeWorker]) -> list[str]:
    """Every worker asks; grant turns one by one until the cycle is spent."""
    granted = []
    for w in workers:
        w.waiting = "round"
    for _ in workers:
        order.grant(workers, others_running=False)
        current = order.current
        assert isinstance(current, FakeWorker)
        granted.append(current.name)
        order.done(current)
        current.waiting = "round"  # it asks for its next round at once
    return granted


def test_turns_rotate_each_cycle() -> None:
    workers = [FakeWorker("a"), FakeWorker("b"), FakeWorker("c")]
    order = TurnOrder()
    assert _cycle(order, workers) == ["a", "b", "c"]
    assert _cycle(order, workers) == ["b", "c", "a"]
    assert _cycle(order, workers) == ["c", "a", "b"]


def test_no_turn_while_a_worker_still_checks_or_another_holds_one() -> None:
    a, b = FakeWorker("a", waiting="round"), FakeWorker("b")
    order = TurnOrder()
    order.grant([a, b], others_running=False)
    assert order.current is None and a.told() == 0  # b is not waiting yet
    b.waiting = "round"
    order.grant([a, b], others_running=True)
    assert order.current is None  # correctness work still runs elsewhere
    order.grant([a, b], others_running=False)
    assert order.current is a and a.told() == 1
    order.grant([a, b], others_running=False)
    assert b.told() == 0  # a holds the turn until it asks for the next one


def test_a_worker_that_exits_leaves_the_cycle() -> None:
    a, b = FakeWorker("a", waiting="r"), FakeWorker("b", waiting="r")
    order = TurnOrder()
    order.grant([a, b], others_running=False)
    b.exited = True
    order.gone(b)
    order.done(a)
    a.waiting = "r"
    order.grant([a, b], others_running=False)
    assert order.current is a and b.told() == 0


def test_the_worker_side_asks_and_blocks_until_go() -> None:
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    taker = TurnTaker(to_worker_r, from_worker_w)
    got: list[str] = []
    thread = threading.Thread(target=lambda: (taker.turn("llama b8"), got.append("ran")))
    thread.start()
    with os.fdopen(from_worker_r) as asks:
        assert asks.readline() == "want llama b8\n"
        assert got == []
        with os.fdopen(to_worker_w, "w") as tell:
            tell.write("go\n")
            tell.flush()
            thread.join(timeout=10)
            assert got == ["ran"]
            taker.release()
            assert asks.readline() == "done llama b8\n"


def test_a_reply_other_than_go_is_an_error() -> None:
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    os.write(to_worker_w, b"stop\n")
    with pytest.raises(RuntimeError, match="answered 'stop'"):
        TurnTaker(to_worker_r, from_worker_w).turn("x")
    os.close(from_worker_r)


def test_without_a_channel_every_turn_is_granted() -> None:
    taker = TurnTaker()
    taker.turn("by hand")
    taker.release()


def test_with_hold_the_others_are_frozen_for_a_turn_and_thawed_for_their_own() -> None:
    events: list[str] = []
    hold = (lambda w: events.append(f"freeze {w.name}"), lambda w: events.append(f"thaw {w.name}"))
    workers = [FakeWorker("a"), FakeWorker("b"), FakeWorker("c")]
    order = TurnOrder(hold)  # type: ignore[arg-type]
    assert _cycle(order, workers) == ["a", "b", "c"]
    assert events == ["freeze b", "freeze c", "freeze a", "thaw b", "freeze b", "thaw c"]
    assert [w.name for w in order.frozen] == ["a", "b"]  # type: ignore[attr-defined]
    workers[0].exited = True
    order.gone(workers[0])
    order.thaw_all()
    assert events[-1:] == ["thaw b"] and order.frozen == []


def test_without_hold_nothing_is_frozen() -> None:
    order = TurnOrder()
    workers = [FakeWorker("a"), FakeWorker("b")]
    _cycle(order, workers)
    assert order.frozen == []
