"""The PMU document's own fapp workflow (sections 6.3 and 6.4): SC1 .. SC5 exported as CSV and XML
per configuration, compared with ``sectormon compare results_baseline results_sector``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sectormon.cli import main
from sectormon.fapp.measurement import read_measurement
from sectormon.fapp.report import CMG_METRICS
from tests.fapp.pmu_layout import SETS, simulate, write_results


@pytest.fixture(scope="module")
def summaries() -> dict[str, dict[str, Any]]:
    return {config: simulate(config) for config in ("off", "on")}


@pytest.fixture(scope="module")
def results(summaries: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Section 6.4's layout: results_baseline/ and results_sector/, every set as .csv, .xml, .txt."""
    root = tmp_path_factory.mktemp("pmu")
    write_results(root / "results_baseline", summaries["off"])
    write_results(root / "results_sector", summaries["on"])
    return root


def _ipc(summary: dict[str, Any]) -> float:
    counts = summary["counts"]
    return float(counts["INST_RETIRED"] / counts["CPU_CYCLES"])


def _compare_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["compare", *argv, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_ipc_improvement_comes_from_section_3s_ipc(
    results: Path, summaries: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The CPU PA report's IPC (0x121) shared the name and left IPC_improvement n/a."""
    base, other = _ipc(summaries["off"]), _ipc(summaries["on"])
    want = (other - base) / base * 100
    assert round(want, 2) == 13.27  # scenario A with the sector cache on: +13.27 %
    data = _compare_json(capsys, str(results / "results_baseline"), str(results / "results_sector"))
    for scope in ("total", "cmg:0", "thread:0"):
        s = data["scopes"][scope]
        assert s["IPC_improvement"] == pytest.approx(want, rel=1e-12)
        assert s["IPC_improvement_source"] == "IPC"
        # Section 3's IPC under its own name; the report's under report:IPC (n/a: no pa1 here).
        assert s["metrics"]["IPC"]["base"] == pytest.approx(base, rel=1e-12)
        assert s["metrics"]["IPC"]["other"] == pytest.approx(other, rel=1e-12)
        assert s["metrics"]["report:IPC"]["base"] is None
    assert main(["compare", str(results / "results_baseline"), str(results / "results_sector")]) == 0
    text = capsys.readouterr().out
    assert text.count("IPC_improvement: +13.27 % (from IPC)") == 3


def test_rows_without_a_value_are_hidden_and_section_3_comes_first(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """~55 rows of n/a per scope came before the section-3 metrics."""
    base, other = str(results / "results_baseline"), str(results / "results_sector")
    assert main(["compare", base, other, "--scope", "total"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line and set(line) == {"-"}) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("("))
    table = lines[start:end]
    assert table[0].startswith("L1D_miss_rate ")  # the profile's first metric
    assert all(len(line.split()) == 9 for line in table)  # metric, unit, base, other, ...
    assert not [line for line in table if line.split()[2:4] == ["n/a", "n/a"]]
    assert "report:" not in text
    hidden = len(CMG_METRICS) + 1  # every report metric, and L2_miss_count_corrected (no 0x396, 0x370)
    assert f"({hidden} metrics with no value on either side not shown; --all shows them)" in text
    assert main(["compare", base, other, "--scope", "total", "--all"]) == 0
    everything = capsys.readouterr().out
    assert "report:Execution time (s)" in everything and "--all shows them" not in everything
    assert everything.index("L1D_miss_rate") < everything.index("report:Execution time (s)")
    assert main(["compare", base, other, "--scope", "total", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "report:" not in md and "--all shows them" in md


def _xml_only(results: Path, tmp_path: Path) -> tuple[Path, Path]:
    out = []
    for config in ("results_baseline", "results_sector"):
        target = tmp_path / config
        target.mkdir()
        for xml in (results / config).glob("*.xml"):
            shutil.copy(xml, target / xml.name)
        out.append(target)
    return out[0], out[1]


def test_xml_exports_work_like_the_csv_ones(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fapppx -txml exports (the document's comparison script reads sc1.xml .. sc5.xml)."""
    base_xml, other_xml = _xml_only(results, tmp_path)
    csv_m = read_measurement(results / "results_baseline")
    xml_m = read_measurement(base_xml)
    assert [Path(p).suffix for p in csv_m.files] == [".csv"] * 5  # the CSV wins where both exist
    assert list(xml_m.sets) == list(SETS) == list(csv_m.sets)
    for name in SETS:
        assert xml_m.sets[name].codes == csv_m.sets[name].codes == SETS[name]
        assert [(r.thread, r.cntvct, r.pmccntr, dict(r.counts)) for r in xml_m.sets[name].rows] == [
            (r.thread, r.cntvct, r.pmccntr, dict(r.counts)) for r in csv_m.sets[name].rows
        ]
    by_csv = _compare_json(capsys, str(results / "results_baseline"), str(results / "results_sector"))
    by_xml = _compare_json(capsys, str(base_xml), str(other_xml))
    assert by_xml["scopes"] == by_csv["scopes"]
    # sectormon fapp and import fapp too.
    assert main(["fapp", str(base_xml), "--json"]) == 0
    fapp_xml = json.loads(capsys.readouterr().out)
    assert main(["fapp", str(results / "results_baseline"), "--json"]) == 0
    fapp_csv = json.loads(capsys.readouterr().out)
    assert fapp_xml["section3"] == fapp_csv["section3"]
    imported = tmp_path / "sector.jsonl.gz"
    assert main(["import", "fapp", str(other_xml), "-o", str(imported)]) == 0
    capsys.readouterr()
    with_import = _compare_json(capsys, str(results / "results_baseline"), str(imported))
    assert with_import["scopes"]["total"] == by_csv["scopes"]["total"]
    assert with_import["other"]["kind"] == "fapp-import" and with_import["warnings"][:1] == [
        f"{results / 'results_baseline'}: CNTFRQ unknown (no info.json cntfrq_hz, no FAPP-info timer "
        "frequency): assuming 100000000 Hz"
    ]


@pytest.mark.parametrize(
    ("xml", "line", "problem"),
    [
        ("<fapp><cpupa><event name='CNTVCT'>1</event>\n<event name='PMCCNTR'>2</cpupa></fapp>", 2,
         "malformed XML"),
        ("<fapp>\n<cpupa><event name='CNTVCT'>x1</event></cpupa></fapp>", 2,
         "event CNTVCT: 'x1' is not an integer"),
        ("<fapp>\n\n<cpupa><event name='CNTVCT'>1</event><event name='PMCCNTR'>2</event>"
         "<event name='cycles'>3</event></cpupa></fapp>", 3, "event name 'cycles' is neither"),
        # A root without children: the line was asked of a parser already gone (ReferenceError).
        ("<fapp/>", 1, "no <event name=...> elements"),
        ("<?xml version='1.0'?>\n<fapp>\n</fapp>", 3, "no <event name=...> elements"),
        ("<fapp><thread id='0'><cpupa><event name='CNTVCT'>1</event><event name='0x0011'>2</event>"
         "</cpupa></thread>\n<thread id='1'><cpupa><event name='0x0011'>2</event>"
         "</cpupa></thread></fapp>", 2, "the group on line 1 has CNTVCT, the one on line 2 has none"),
        ("<?xml version='1.0'?>\n<!DOCTYPE a [<!ENTITY e 'x'>]>\n<a>&e;</a>", 2,
         "XML with a DTD or entities"),
        ("", 1, "malformed XML (no element found)"),
        ("<fapp>\n<thread id='0'><cpupa><event name='CNTVCT'>1</event><event name='PMCCNTR'>2</event>"
         "<event name='0x0011'>-4</event></cpupa></thread></fapp>", 2, "negative value -4"),
        ("<fapp><thread id='0'><cpupa><event name='CNTVCT'>1</event><event name='PMCCNTR'>2</event>"
         "</cpupa></thread>\n<thread id='1'><cpupa><event name='CNTVCT'>1</event><event name='PMCCNTR'>2"
         "</event><event name='0x0008'>5</event></cpupa></thread></fapp>", 2, "events 0x0008 differ"),
    ],
)  # fmt: skip
def test_a_malformed_xml_file_is_one_line_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], xml: str, line: int, problem: str
) -> None:
    (tmp_path / "sc1.xml").write_text(xml)
    assert main(["fapp", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"sectormon: {tmp_path / 'sc1.xml'}:{line}: ") and problem in err[0], err[0]


def test_xml_summaries_are_skipped_and_a_file_without_threads_is_thread_0(tmp_path: Path) -> None:
    group = (
        "<cpupa><event name='CNTVCT'>{}</event><event name='PMCCNTR'>50</event>"
        "<event name='0x0008'>{}</event></cpupa>"
    )
    (tmp_path / "sc1.xml").write_text(
        f"<fapp><process id='0'>{group.format(30, 999)}"
        f"<thread id='4'>{group.format(10, 7)}</thread><thread id='5'>{group.format(11, 8)}</thread>"
        "</process></fapp>"
    )
    m = read_measurement(tmp_path / "sc1.xml")
    assert m.threads == (4, 5) and m.value("sc1", 0x8, 5) == 8  # the process summary left out
    (tmp_path / "sc1.xml").write_text(
        f"<fapp><region name='k' number='2'>{group.format(10, 7)}</region></fapp>"
    )
    m = read_measurement(tmp_path / "sc1.xml")
    assert m.threads == (0,) and m.sets["sc1"].rows[0].region_name == "k"


def test_sectormon_fapp_shows_section_3_alone_on_the_sc_sets(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CPU PA table of SC1 .. SC5 was 51 rows of n/a per thread before the section-3 table."""
    assert main(["fapp", str(results / "results_baseline"), "--width", "120"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("a64fx profile metrics: PMU document section 3")
    assert "Execution time (s)" not in text
    assert text.rstrip().endswith(
        "CPU PA report: no values (sc1, sc2, sc3, sc4, sc5 are not its pa1 .. pa17 sets)"
    )
