"""The typed header and its codec: what is read is written back byte for byte (field order,
unknown fields, absent and null fields), and the builder writes this sectormon's order."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sectormon.data.header import FIELD_ORDER, HostFacts
from sectormon.data.proxy import ProxySetting
from sectormon.io.header_codec import _WRITERS, header_from_json, header_to_json
from sectormon.io.jsonl import BadRecord
from tests.io.recording_synth import header

REPO = Path(__file__).resolve().parents[2]


def _first_line(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as f:
        record: dict[str, Any] = json.loads(f.readline())
        return record


def test_every_field_the_header_knows_has_one_writer() -> None:
    assert set(_WRITERS) == set(FIELD_ORDER)


@pytest.mark.parametrize(
    "path",
    sorted([*(REPO / "recordings").glob("*.jsonl.gz"), *(REPO / "tests/fixtures/golden").glob("*.jsonl.gz")]),
    ids=lambda p: p.name,
)
def test_shipped_headers_are_written_back_as_read(path: Path) -> None:
    rec = _first_line(path)
    typed = header_from_json(rec)
    assert json.dumps(header_to_json(typed)) == json.dumps(rec)
    assert typed.options.interval == rec["options"]["interval"]
    assert typed.source.kind == rec["source"]["kind"] and typed.host.name == rec.get("host")
    assert "rotation" not in typed.keys and typed.rotation is None  # from before own-time scaling


def test_unknown_null_and_reordered_fields_pass_through_where_they_were() -> None:
    rec = {
        "future": {"a": [1, 2]},
        "schema": "sectormon/recording/2",
        "options": {"interval": 0.5, "x": 1},
        "wall_t0": None,
        "hotspots": None,
        **header(),
        "rotation": "odd",
        "later": 3,
    }
    typed = header_from_json(rec)
    assert typed.extra == {"future": {"a": [1, 2]}, "later": 3}
    assert typed.rotation == "odd" and typed.hotspots is None and "hotspots" in typed.keys
    assert json.dumps(header_to_json(typed)) == json.dumps(rec)


def test_with_fields_keeps_a_fields_place_and_adds_new_ones_last() -> None:
    typed = header_from_json({"schema": "sectormon/recording/2", **header()})
    proxy = ProxySetting(per_cmg=1, reference="units", events=("A",))
    changed = typed.with_fields(schema="sectormon/header/1", proxy=proxy, recording_started=2.0)
    out = header_to_json(changed)
    assert next(iter(out)) == "schema" and out["schema"] == "sectormon/header/1"
    assert list(out)[-2:] == ["proxy", "recording_started"] and out["proxy"] == proxy.to_json()
    back = changed.without_recording_start()
    assert "recording_started" not in header_to_json(back) and back.recording_started is None
    renamed = typed.with_fields(host=HostFacts(name="job of a, b", kernel=typed.host.kernel))
    assert list(header_to_json(renamed)) == list(header_to_json(typed))


def test_a_bad_proxy_or_hotspots_record_is_a_header_error() -> None:
    with pytest.raises(BadRecord, match=r"header proxy\.per_cmg"):
        header_from_json({"proxy": {"per_cmg": 0, "reference": "units", "events": []}})
    with pytest.raises(BadRecord, match="header hotspots"):
        header_from_json({"hotspots": {}})
    with pytest.raises(BadRecord, match="header 'hotspots' must be an object"):
        header_from_json({"hotspots": 3})


def test_a_live_header_is_written_in_this_sectormons_order() -> None:
    from sectormon.profiles.resolve import load_profile
    from sectormon.rotation.plan import plan_rotation, select_groups
    from sectormon.session.header import build_header
    from sectormon.session.options import SessionOptions
    from tests.rotation.fake_source import FakeSource

    profile = load_profile("generic")
    plan = plan_rotation(profile, select_groups(profile, None), {})
    built = build_header(source=FakeSource({}, {}), profile=profile, plan=plan, options=SessionOptions())
    out = header_to_json(built)
    assert list(out) == [k for k in FIELD_ORDER if k in out]
    assert {"schema", "options", "profile", "groups", "probe"} <= set(out)
    assert header_to_json(header_from_json(json.loads(json.dumps(out)))) == json.loads(json.dumps(out))


def test_what_an_older_header_leaves_out_means_one_thing_everywhere() -> None:
    old = header_from_json({"schema": "sectormon/recording/2", "options": {}})
    assert old.options.frame_interval == 1.0 and old.options.recent_window == 10.0
    assert not old.records_rotation and old.stream_start == 0.0
    new = header_from_json({"options": {"interval": 0.25, "recent_seconds": 2}, "rotation": None})
    assert new.options.frame_interval == 0.25 and new.options.recent_window == 2.0
    assert new.records_rotation  # present, even null: written by a sampler that records it
