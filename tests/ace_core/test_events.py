import json

from ace_core.events import EpisodeEvent, JsonlSink, MetricsEvent, event_to_dict


def test_jsonl_sink_writes_metrics_and_events(tmp_path):
    sink = JsonlSink(tmp_path)
    sink.emit(MetricsEvent(step=10, values={"losses/qf1_loss": 0.5}))
    sink.emit(
        EpisodeEvent(step=10, index=0, scenario="000@0+288", steps_survived=5, max_steps=288, reward=1.0)
    )
    sink.close()
    assert json.loads((tmp_path / "metrics.jsonl").read_text()) == {"step": 10, "losses/qf1_loss": 0.5}
    event = json.loads((tmp_path / "events.jsonl").read_text())
    assert event["event"] == "episode" and event["steps_survived"] == 5
    assert not sink.should_stop()


def test_event_to_dict_names_the_kind():
    assert event_to_dict(MetricsEvent(step=1, values={}))["event"] == "metrics"
