"""The run record on every store: one row per run, a cancel request that stays, an ended run never reopened."""

from __future__ import annotations

from engine.index.runs import new_summary, request_cancel


def test_a_run_is_one_record_and_a_cancel_request_survives_its_next_save(store):
    run = new_summary(False, ["C"], "2026-01-01T00:00:00+00:00")
    store.save_run(run)
    assert request_cancel(store)["requested"] is True  # written into the running record
    store.save_run({**run, "filesSeen": 5})  # the run's next progress save
    last = store.last_run()
    assert last["runId"] == run["runId"] and last["filesSeen"] == 5 and last["cancelRequested"] is True
    store.save_run({**run, "status": "cancelled", "filesSeen": 7})
    late = request_cancel(store)  # nothing is running now
    assert late["requested"] is False and late["status"] == "cancelled"
    store.save_run({**run, "status": "running"})  # a late copy of the running record
    assert store.last_run()["status"] == "cancelled" and store.last_run()["filesSeen"] == 7
    other = new_summary(False, ["C"], "2026-01-02T00:00:00+00:00")
    store.save_run(other)
    assert store.last_run()["runId"] == other["runId"] and not store.last_run().get("cancelRequested")


def test_cancel_with_no_run_recorded(store):
    answer = request_cancel(store)
    assert answer == {"requested": False, "status": "none", "message": answer["message"]}
