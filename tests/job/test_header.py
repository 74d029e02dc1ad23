"""The job file's own header: what merge writes, a reader reads back; damage names the field."""

from __future__ import annotations

import re

import pytest

from sectormon.errors import DataError
from sectormon.io.header_codec import header_from_json
from sectormon.job.header import JOB_SCHEMA, JobHeader
from sectormon.job.nodes import Alignment, Node


def _alignment() -> Alignment:
    nodes = tuple(
        Node(host, f"/tmp/{host}.jsonl", f"runs/{host}.jsonl", header_from_json({}), 0.5, 9.0, offset)
        for host, offset in (("a", 0.0), ("b", 1.5))
    )
    return Alignment(nodes, 1.0, 0.5, 10.5, ("node b started late",))


def test_written_and_read_back() -> None:
    written = JobHeader.of(_alignment())
    out = written.to_json()
    assert list(out) == ["schema", "sectormon", "created", "interval", "start", "end", "nodes", "warnings"]
    assert out["schema"] == JOB_SCHEMA
    assert out["nodes"][1] == {"host": "b", "file": "b.jsonl", "offset": 1.5, "first_t": 0.5, "end_t": 9.0}
    read = JobHeader.from_json("job.jsonl", out)
    assert read.interval == 1.0 and read.warnings == ("node b started late",)
    assert [(n.file, n.offset) for n in read.nodes] == [("a.jsonl", 0.0), ("b.jsonl", 1.5)]


def test_a_node_without_a_file_name_is_named_by_its_place() -> None:
    out = JobHeader.of(_alignment()).to_json()
    del out["nodes"][0]["file"]
    assert JobHeader.from_json("job.jsonl", out).nodes[0].file == "node 0"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"interval": 0}, "'interval'"),
        ({"warnings": [1]}, "'warnings'"),
        ({"nodes": [{"offset": 0.0}, 5]}, "'nodes[1]'"),
        ({"nodes": [{"offset": 0.0}, {"offset": -1}]}, "'nodes[1].offset'"),
    ],
)
def test_a_damaged_field_is_named(change: dict[str, object], field: str) -> None:
    out = {**JobHeader.of(_alignment()).to_json(), **change}
    with pytest.raises(DataError, match=re.escape(f"job header field {field}")):
        JobHeader.from_json("job.jsonl", out)
