"""stat's layouts against perf stat 6.1's own output (the lines below were printed by
``perf stat`` on a test host, trailing spaces and all)."""

from __future__ import annotations

import pytest

from sectormon.commands import stat_report
from sectormon.commands.stat_report import (
    Block,
    Elapsed,
    EventLine,
    MetricLine,
    count_text,
    event_csv,
    event_std,
    footer_std,
    group_thousands,
    interval_lines,
    metric_csv,
    metric_std,
    report_lines,
    summary_csv,
    summary_std,
)

PAGE_FAULTS = EventLine("page-faults", 20053.0, run_ns=31299132)
TASK_CLOCK = EventLine("task-clock", 28.65, "msec", run_ns=31299132)
BLANK_METRIC = " " * 38


def test_a_count_and_a_clock_line_up_as_perfs() -> None:
    # perf: "             20053      page-faults" + 32-wide name, then the metric column
    assert event_std(PAGE_FAULTS) == "             20053      page-faults                     " + BLANK_METRIC
    assert event_std(TASK_CLOCK) == "             28.65 msec task-clock                      " + BLANK_METRIC


def test_thousands_follow_the_locales_separator_as_perfs_big_num() -> None:
    assert group_thousands("1234567", ",") == "1,234,567"
    assert group_thousands("-1234.50", ".") == "-1.234.50"
    assert group_thousands("123", ",") == "123"
    assert group_thousands("1234567", "") == "1234567"
    assert count_text(EventLine("cycles", 5205202243.0), ",") == "5,205,202,243"


def test_a_count_that_ran_part_of_the_time_says_its_share() -> None:
    line = EventLine("cycles", 1e6, running=0.6321)
    assert event_std(line).endswith(BLANK_METRIC + "  (63.21%)")
    assert not event_std(EventLine("cycles", 1e6, running=0.999999)).endswith("%)")


def test_missing_counts_are_perfs_words_never_zero() -> None:
    assert event_std(EventLine("cycles", None, supported=False)).lstrip().startswith("<not supported>")
    assert event_std(EventLine("cycles", None, running=0.0)).lstrip().startswith("<not counted>")
    # perf: "<not supported>,,cycles,0,100.00,,"
    assert event_csv(EventLine("cycles", None, supported=False), ",") == "<not supported>,,cycles,0,100.00,,"


def test_csv_has_perfs_fields_in_perfs_order() -> None:
    # perf: "20049,,page-faults:u,31299132,100.00,640.561,K/sec" (metric fields empty here)
    assert event_csv(PAGE_FAULTS, ",") == "20053,,page-faults,31299132,100.00,,"
    assert event_csv(TASK_CLOCK, ";") == "28.65;msec;task-clock;31299132;100.00;;"


def test_repeats_add_the_variance_after_the_event_in_csv_and_the_spread_in_the_summary() -> None:
    # perf -r 3 -x,: "48,,page-faults,1.20%,674691,100.00,74.948,K/sec"
    line = EventLine("page-faults", 48.0, run_ns=674691, noise=1.2)
    assert event_csv(line, ",", runs=3) == "48,,page-faults,1.20%,674691,100.00,,"
    # perf -r 3: "              1053      page-faults      ...      ( +-  0.08% )"
    assert event_std(EventLine("page-faults", 1053.0, noise=0.08)).endswith(BLANK_METRIC + "  ( +-  0.08% )")


def test_a_metric_is_a_line_of_its_own_with_unit_name_and_coverage() -> None:
    line = MetricLine("cpu_utilization", "cores", 0.4351, 0.5)
    text = metric_std(line)
    assert text.startswith(" " * 56 + " #    0.435 cores cpu_utilization")
    assert text.endswith("  (50.00%)")
    assert "n/a" in metric_std(MetricLine("IPC", "inst/cycle", None, 0.0))
    assert metric_csv(line, ",") == ",,,,50.00,0.435,cores cpu_utilization"
    assert metric_csv(MetricLine("IPC", "", None, 0.0), ",") == ",,,,0.00,n/a,IPC"


def test_small_metrics_keep_their_digits() -> None:
    assert "1.23e-05 ratio" in metric_std(MetricLine("rate", "ratio", 1.234e-5, 1.0))
    assert "#    0.000 ratio rate" in metric_std(MetricLine("rate", "ratio", 0.0, 1.0))


def test_the_summary_is_perfs_header_counts_and_footer() -> None:
    block = Block("'/tmp/stat_pf 100'", (EventLine("page-faults", 154.0),))
    text = "".join(
        line + "\n" for line in summary_std(block) + footer_std(Elapsed(0.000003831, None, 0.0, 0.0))
    )
    # perf stat -e page-faults -- /tmp/stat_pf 100 (cat -A: "$" ends each line)
    perf = (
        "\n Performance counter stats for '/tmp/stat_pf 100':\n\n"
        "               154      page-faults                     " + BLANK_METRIC + "\n"
        "\n       0.000003831 seconds time elapsed\n"
        "\n       0.000000000 seconds user\n       0.000000000 seconds sys\n\n\n"
    )
    assert text == perf


def test_repeated_runs_say_their_number_and_the_elapsed_spread_as_perf() -> None:
    block = Block("'/tmp/stat_pf 1000'", (EventLine("page-faults", 1053.0, noise=0.08),))
    lines = summary_std(block, runs=3) + footer_std(Elapsed(0.002991, 0.000468))
    assert lines[1] == " Performance counter stats for '/tmp/stat_pf 1000' (3 runs):"
    # perf: "          0.002991 +- 0.000468 seconds time elapsed  ( +- 15.64% )"
    assert lines[-2] == "          0.002991 +- 0.000468 seconds time elapsed  ( +- 15.65% )"
    assert lines[-1] == ""


@pytest.mark.parametrize(("spread", "digits"), [(0.0173, 4), (0.000468, 6), (2.5, 2)])
def test_the_elapsed_precision_is_two_digits_past_the_spread(spread: float, digits: int) -> None:
    line = footer_std(Elapsed(1.0, spread))[1]
    assert line.split()[0] == f"{1.0:.{digits}f}"


def test_intervals_are_stamped_rows_under_perfs_column_header() -> None:
    first = interval_lines(0.102699753, [EventLine("page-faults", 75.0)], index=0)
    # perf -I 100: "#           time             counts unit events"
    assert first[0] == "#           time             counts unit events"
    assert first[1].startswith("     0.102699753                 75      page-faults")
    assert interval_lines(0.2, [EventLine("page-faults", 1.0)], index=1)[0].startswith("     0.200000000")
    assert interval_lines(0.2, [EventLine("page-faults", 1.0)], index=25)[0].startswith("#")
    # perf -I 100 -x,: "     0.100067347,74,,page-faults,798825,100.00,,"
    csv = interval_lines(0.100067347, [EventLine("page-faults", 74.0, run_ns=798825)], index=0, sep=",")
    assert csv == ["     0.100067347,74,,page-faults,798825,100.00,,"]


def test_regions_in_csv_follow_a_line_naming_them() -> None:
    block = Block("region 'solve' (calls 3)", (PAGE_FAULTS,), seconds=0.5)
    assert summary_csv(block, ",", region=True) == ["# region 'solve' (calls 3)", event_csv(PAGE_FAULTS, ",")]
    text = summary_std(block)
    assert text[1] == " Performance counter stats for region 'solve' (calls 3):"
    assert "0.500000000 seconds in the region" in text[-2]


def test_the_report_puts_the_footer_after_the_run_and_the_regions_after_it() -> None:
    whole = Block("'app'", (PAGE_FAULTS,))
    region = Block("region 'solve' (calls 1)", (PAGE_FAULTS,), seconds=0.5)
    lines = report_lines([whole, region], Elapsed(1.0))
    elapsed = next(i for i, line in enumerate(lines) if "seconds time elapsed" in line)
    assert lines.index(" Performance counter stats for region 'solve' (calls 1):") > elapsed
    csv = report_lines([whole, region], Elapsed(1.0), sep=",")
    assert csv == [event_csv(PAGE_FAULTS, ","), "# region 'solve' (calls 1)", event_csv(PAGE_FAULTS, ",")]


def test_binding_lines_name_each_thread_and_count_the_rest() -> None:
    threads = [(100 + n, str(n % 2), 0) for n in range(17)] + [(200, "0-3", None), (201, "5", 2)]
    lines = stat_report.binding_lines(threads, "--bind 0,1")
    assert lines[0] == " Binding (--bind 0,1): 19 threads, 18 bound to one CPU, 1 migrated"
    assert lines[1].split() == ["tid", "100", "CPU", "0", "migrations", "0"]
    assert len(lines) == 1 + stat_report.MAX_BOUND_SHOWN + 1
    assert lines[-1] == "   and 3 more"
    single = stat_report.binding_lines([(7, "0-3", None)], "sector cache: binding required")
    assert single[0].endswith(": 1 thread, 0 bound to one CPU, 0 migrated")
    assert single[1].split() == ["tid", "7", "CPUs", "0-3", "migrations", "n/a"]


def test_the_binding_follows_the_footer_and_is_comments_in_csv() -> None:
    block = stat_report.Block("'app'", (stat_report.EventLine("page-faults", 5.0),))
    binding = stat_report.binding_lines([(7, "0", 0)], "--bind 0")
    std = stat_report.report_lines([block], stat_report.Elapsed(1.0), binding=binding)
    assert std.index(binding[0]) > next(i for i, line in enumerate(std) if "seconds time elapsed" in line)
    csv = stat_report.report_lines([block], stat_report.Elapsed(1.0), sep=",", binding=binding)
    assert csv[1:] == [f"#{line}" for line in binding]
