"""The marker library under AddressSanitizer and UndefinedBehaviorSanitizer.

markers.c and api.c are compiled with the sanitizers straight into the marked and hostile programs (no shared
library, so the runtime is the program's own), which then run the region tests' cases under the
endpoint: any out-of-bounds access, use after free or undefined behaviour ends the program with
the sanitizer's report and a non-zero exit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.regions.library import PACKAGE_DIR
from tests.regions.regions_helpers import PROGRAMS, build, counting, run_marked

pytestmark = pytest.mark.syscall

SANITIZE = (
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
)
CASES = [
    ("marked", ()),
    ("hostile", ("unpaired",)),
    ("hostile", ("names", "5000")),
    ("hostile", ("thread-exit",)),
    ("hostile", ("open-at-exit",)),
    ("hostile", ("nested",)),
    ("hostile", ("threads", "50")),
    ("hostile", ("fork",)),
    ("hostile", ("likwid-get",)),
]


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("sanitized")
    library = [str(PACKAGE_DIR / "markers.c"), str(PACKAGE_DIR / "api.c"), f"-I{PACKAGE_DIR}"]
    try:
        return {
            name: build(
                PROGRAMS / f"{name}.c", out / name, *SANITIZE, "-DLIKWID_PERFMON", link=False, extra=library
            )
            for name in ("marked", "hostile")
        }
    except Exception as exc:  # a gcc without libasan/libubsan
        pytest.skip(f"cannot build with -fsanitize=address,undefined here: {exc}")


@pytest.mark.parametrize(("program", "args"), CASES, ids=[" ".join((p, *a)) for p, a in CASES])
def test_the_library_is_clean_under_asan_and_ubsan(
    programs: dict[str, Path], program: str, args: tuple[str, ...]
) -> None:
    with counting() as endpoint:
        run = run_marked(endpoint, programs[program], *args, env={"ASAN_OPTIONS": "detect_leaks=1"})
        snapshot = endpoint.read()
    assert run.returncode == 0, run.stderr
    assert "runtime error" not in run.stderr and "Sanitizer" not in run.stderr
    if program == "marked":  # (page faults differ: ASan's shadow memory faults too)
        assert [w.calls for w in snapshot.of("worker")] == [1, 1, 1]
        assert [r.calls for r in snapshot.of("fapp_pages", 1)] == [4]
