"""The `server` check's pure logic: the workload's shape, the logprob shapes of each release,
and the comparison against the requests served alone (a fake HTTP client, no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlxcompat.checks.server_compare import ServerRun, compare_scenario
from mlxcompat.checks.server_workload import (
    HEAD_START_S,
    SCENARIOS,
    Sent,
    head_start,
    queued,
    run_workload,
)
from mlxcompat.drivers.client import Completion, Poster, _logprobs, request_timeout_s
from mlxcompat.models.saved import VOCAB, alphabet, to_ids, to_text


class _Response:
    def __init__(self, body: dict[str, Any]) -> None:
        self.status_code = 200
        self._body = body
        self.text = json.dumps(body)

    def json(self) -> dict[str, Any]:
        return self._body

    def iter_lines(self) -> Any:
        for token in self._body["choices"][0]["text"]:
            yield "data: " + json.dumps({"choices": [{"text": token}]})
        yield "data: [DONE]"

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class FakeClient:
    """Answers every completion with the prompt's last characters (deterministic)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.timeouts: set[float] = set()

    def _answer(self, body: dict[str, Any]) -> _Response:
        self.bodies.append(body)
        text = (body["prompt"] * 2)[-body["max_tokens"]:]
        choice: dict[str, Any] = {"text": text, "finish_reason": "length"}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"id": i, "logprob": -1.0} for i in to_ids(text)]}
        return _Response({"choices": [choice], "usage": {}})

    def post(self, url: str, json: dict[str, Any], timeout: float) -> _Response:
        self.timeouts.add(timeout)
        return self._answer(json)

    def stream(self, method: str, url: str, json: dict[str, Any], timeout: float) -> _Response:
        self.timeouts.add(timeout)
        return self._answer(json)


def test_every_request_waits_the_backends_timeout() -> None:
    """A GPU backend compiles a kernel on its first use: its requests wait longer, the CPU's
    stay at 15 s, and both the plain and the streamed request use the poster's."""
    assert request_timeout_s("cpu") == 15.0 < request_timeout_s("gpu")
    client = FakeClient()
    run_workload(Poster(client, "http://x", to_ids, request_timeout_s("gpu")), model="/m")
    assert client.timeouts == {request_timeout_s("gpu")}


def test_tokens_are_printable_characters_that_round_trip() -> None:
    assert len(alphabet()) == VOCAB and alphabet()[0] == "!" and alphabet()[-1] == "~"
    ids = list(range(VOCAB))
    assert to_ids(to_text(ids)) == ids


def test_the_workload_is_bounded_and_covers_every_scenario() -> None:
    client = FakeClient()
    work = run_workload(Poster(client, "http://x", to_ids), model="/m")
    assert {s.scenario for s in work.sent} == set(SCENARIOS)
    # the model is loaded, then a blocker timed alone twice, before the first group is sent
    warm, timings, sent = client.bodies[0], client.bodies[1:3], client.bodies[3:]
    assert len(sent) == len(work.sent) <= 30 and sorted(b["prompt"] for b in sent) == sorted(
        s.body["prompt"] for s in work.sent)
    blockers = [s.body["prompt"] for s in work.sent if "-blocker-" in s.name]
    assert blockers[0].startswith(warm["prompt"]) and len(warm["prompt"]) < len(blockers[0])
    for timed in timings:  # as long, and no prefix of any of them nor of each other
        assert len(timed["prompt"]) == len(blockers[0])
        assert all(b[0] != timed["prompt"][0] for b in blockers)
    assert timings[0]["prompt"][0] != timings[1]["prompt"][0]
    assert all(b["max_tokens"] <= 40 and b["model"] == "/m" for b in client.bodies)
    assert max(len(b["prompt"]) for b in client.bodies) >= 256  # longer than the prefill step
    turns = {s.name: s for s in work.sent if s.scenario == "multi-turn"}
    first, second, third = (turns[f"conv0-turn{k}"] for k in (1, 2, 3))
    shared = first.body["prompt"] + to_text(first.got.tokens)
    assert second.body["prompt"].startswith(shared) and third.body["prompt"].startswith(shared)
    # the third turn edits the second's message: the cached prompt is longer than the prefix
    assert third.body["prompt"][len(shared)] != second.body["prompt"][len(shared)]
    seeded = [s.body for s in work.sent if s.scenario == "seeded"]
    assert seeded and all(b["temperature"] > 0 and "seed" in b for b in seeded)
    cut = next(s for s in work.sent if s.cancelled)
    assert len(cut.got.tokens) == 3 and cut.body["max_tokens"] > 3


def test_logprobs_of_both_shapes() -> None:
    new = {"logprobs": {"content": [{"id": 3, "logprob": -0.5}, {"id": 7, "logprob": -1.5}]}}
    old = {"logprobs": {"tokens": [3, 7], "token_logprobs": [-0.5, -1.5],
                        "top_logprobs": [[[3, -0.5]], [[7, -1.5]]]}}
    assert _logprobs(new) == _logprobs(old) == ([3, 7], [-0.5, -1.5])
    assert _logprobs({}) == (None, None)


def _run(pairs: list[tuple[Completion, Completion]], scenario: str = "seeded",
         cancelled: bool = False) -> ServerRun:
    sent = [Sent(scenario, f"r{i}", {}, got, cancelled) for i, (got, _) in enumerate(pairs)]
    return ServerRun(sent=sent, alone=[ref for _, ref in pairs])


def test_equal_completions_pass_and_a_drift_fails_with_its_delta() -> None:
    same = Completion([1, 2, 3], [-1.0, -2.0, -3.0], 0.1)
    found = compare_scenario(_run([(same, same)]), "seeded", 1e-4)
    assert found.verdict == "pass" and found.delta == 0.0
    drift = Completion([1, 2, 3], [-1.0, -2.01, -3.0], 0.1)
    found = compare_scenario(_run([(drift, same)]), "seeded", 1e-4)
    assert found.verdict == "fail" and found.tokens_equal
    assert found.delta == pytest.approx(0.01)


def test_other_tokens_fail_even_without_logprobs() -> None:
    got, ref = Completion([1, 5, 3], None, 0.1), Completion([1, 2, 3], None, 0.1)
    found = compare_scenario(_run([(got, ref)]), "seeded", 1e-4)
    assert found.verdict == "fail" and not found.tokens_equal
    assert "tokens differ (row 0 from step 1)" in found.detail


def test_a_failed_request_is_an_error_and_a_cancelled_stream_compares_its_prefix() -> None:
    broken = Completion([], None, 0.1, error="HTTP 500: boom")
    found = compare_scenario(_run([(broken, Completion([1], None, 0.1))]), "seeded", 1e-4)
    assert found.verdict == "error" and "HTTP 500" in found.detail
    prefix, full = Completion([4, 5, 6], None, 0.1), Completion([4, 5, 6, 7, 8], None, 0.1)
    found = compare_scenario(_run([(prefix, full)], "cancel", cancelled=True), "cancel", 1e-4)
    assert found.verdict == "pass"
    wrong = Completion([4, 9, 6], None, 0.1)
    found = compare_scenario(_run([(wrong, full)], "cancel", cancelled=True), "cancel", 1e-4)
    assert found.verdict == "fail"


def test_the_installed_server_names_its_own_flags() -> None:
    pytest.importorskip("mlx_lm.server")
    from mlxcompat.drivers.server import server_flags

    flags = server_flags()
    assert "--model" in flags and "--port" in flags


def test_a_gone_server_ends_the_workload_at_once() -> None:
    class Dead(FakeClient):
        def _answer(self, body: dict[str, Any]) -> _Response:
            self.bodies.append(body)
            raise TimeoutError("ReadTimeout")  # what httpx raises when nothing answers

    client = Dead()
    work = run_workload(Poster(client, "http://x", to_ids), model="/m")
    assert all(s.got.error for s in work.sent)
    assert len(client.bodies) < 15  # the first group only; the rest were never sent
    assert any(s.got.error.startswith("not sent: the server is gone") for s in work.sent)


class _HangingClient(FakeClient):
    """A server that never answers (its generation thread died); released at the end."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.release = threading.Event()

    def post(self, url: str, json: dict[str, Any], timeout: float) -> _Response:
        self.release.wait(10)
        raise TimeoutError("ReadTimeout: timed out")


def test_a_request_in_flight_ends_with_the_servers_death_not_its_timeout() -> None:
    client = _HangingClient()
    calls = []

    def death() -> str:
        calls.append(1)
        return "its generation thread died: TypeError: x" if len(calls) > 3 else ""

    poster = Poster(client, "http://x", to_ids, 15.0, death=death)
    try:
        got = poster({"prompt": "ab", "max_tokens": 2})
        after = poster({"prompt": "cd", "max_tokens": 2})
    finally:
        client.release.set()
    assert got.error == "the server is gone (its generation thread died: TypeError: x)"
    assert after.error.startswith("not sent: the server is gone (its generation thread died")


def test_every_group_has_a_blocker_of_its_own_that_no_other_prompt_starts_like() -> None:
    """The same blocker three times was a prompt-cache hit from the second group on (767 of
    768 tokens), so it no longer held the server while its group arrived."""
    client = FakeClient()
    work = run_workload(Poster(client, "http://x", to_ids), model="/m")
    blockers = [s for s in work.sent if "-blocker-" in s.name]
    assert [s.name for s in blockers] == ["shared-prefix-blocker-0", "shared-prefix-blocker-1",
                                          "long-prompt-blocker-2"]
    firsts = {s.body["prompt"][0] for s in blockers}
    assert len(firsts) == 3 and all(len(s.body["prompt"]) == 768 for s in blockers)
    others = [s.body["prompt"] for s in work.sent if s not in blockers]
    assert not any(p.startswith(b.body["prompt"][:2]) for p in others for b in blockers[1:])


def test_the_head_start_is_shorter_than_a_fast_blocker_and_never_longer_than_50_ms() -> None:
    """On the H200 a blocker was answered in 29-38 ms, before a fixed 50 ms head start
    ended: its group reached an idle server."""
    def answered_in(seconds: float):
        return lambda body: Completion([1, 2], [-1.0, -1.0], seconds)

    assert head_start(answered_in(0.030)) == pytest.approx(0.012)
    assert head_start(answered_in(0.300)) == HEAD_START_S
    failed = lambda body: Completion([], None, 0.01, error="HTTP 500: boom")  # noqa: E731
    assert head_start(failed) == HEAD_START_S


def test_the_head_start_follows_the_faster_of_two_blockers_alone() -> None:
    """A first blocker answered slowly (a busy moment) made a head start as long as a later
    blocker's whole answer: its group met an idle server in every try (0.31.2's llama)."""
    answers = iter([0.060, 0.030])
    slow_then_fast = lambda body: Completion([1, 2], [-1.0, -1.0], next(answers))  # noqa: E731
    assert head_start(slow_then_fast) == pytest.approx(0.012)
    answers = iter([Completion([], None, 0.001, error="HTTP 500: boom"),
                    Completion([1, 2], [-1.0, -1.0], 0.030)])
    assert head_start(lambda body: next(answers)) == pytest.approx(0.012)  # a failure: no time


def test_a_group_sent_after_its_blocker_was_answered_fails_closed() -> None:
    blocker = Completion([1, 2], [-1.0, -1.0], 0.030, began=10.000)
    late = [Completion([3], [-1.0], 0.01, began=10.050), blocker]
    early = [Completion([3], [-1.0], 0.01, began=10.012), blocker]
    barely = [Completion([3], [-1.0], 0.01, began=10.0295), blocker]  # its prefill was done
    assert queued(late) == pytest.approx(-0.020) and queued(early) == pytest.approx(0.018)
    for got, verdict in ((late, "error"), (barely, "error"), (early, "pass")):
        sent = [Sent("shared-prefix", f"r{i}", {}, g, queued_s=queued(got))
                for i, g in enumerate(got)]
        run = ServerRun(sent=sent, alone=list(got), head_start_s=0.05)
        found = compare_scenario(run, "shared-prefix", 1e-4)
        assert found.verdict == verdict, found.detail
    assert "not queued: a group was sent -20 ms before its blocker was answered" in \
        compare_scenario(ServerRun(sent=[Sent("shared-prefix", f"r{i}", {}, g,
                                              queued_s=queued(late))
                                         for i, g in enumerate(late)],
                                   alone=list(late), head_start_s=0.05),
                         "shared-prefix", 1e-4).detail
    assert found.metrics["queued_s"] == [0.018] and found.metrics["head_start_s"] == 0.05


def test_an_idle_group_is_named_for_its_retry() -> None:
    from mlxcompat.checks.server import _idle_group

    got = Completion([3], [-1.0], 0.01)
    sent = [Sent("long-prompt", "long-97", {}, got, queued_s=0.002),
            Sent("shared-prefix", "shared-0", {}, got, queued_s=0.04)]
    assert "long-97's group was sent 2 ms before" in _idle_group(ServerRun(sent=sent))
    assert _idle_group(ServerRun(sent=sent[1:])) == ""


def test_the_server_is_held_while_a_late_group_is_sent() -> None:
    """The group's requests are all sent while the server is stopped (pause before the
    first, resume after the last), and count as arriving when it was continued."""
    import threading
    import time

    from mlxcompat.checks.server_workload import BLOCKER_TOKENS, _body, _together

    events: list[str] = []
    lock = threading.Lock()

    def post(body: dict) -> Completion:
        blocker, began = len(body["prompt"]) == BLOCKER_TOKENS, time.perf_counter()
        with lock:
            events.append("blocker" if blocker else "group")
        time.sleep(0.2 if blocker else 0.0)
        return Completion([1], [-1.0], time.perf_counter() - began, began=began)

    class Hold:
        def pause(self) -> None:
            events.append("pause")

        def resume(self) -> None:
            events.append("resume")

    got = _together(post, [_body([1, 2], 1, True) for _ in range(3)], 0, 0.02, Hold())
    assert events[0] == "blocker" and events[1] == "pause" and events[-1] == "resume"
    assert events.count("group") == 3 and events.index("resume") > max(
        i for i, e in enumerate(events) if e == "group")
    assert queued(got) is not None and queued(got) > 0.1

