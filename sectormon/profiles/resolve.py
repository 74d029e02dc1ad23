"""Which profile a run uses: a built-in one by name, a YAML file by path, or the one that fits the host.

``--profile`` takes a name or a path, or ``auto`` (the default), which picks the first built-in
profile whose ``match`` fits the host's CPU, falling back to the one with an empty ``match``; the
simulated A64FX always gets ``a64fx``. The host's variant (its part's nJ factors) is passed to the
profile here.

Picking one reads each built-in file's ``match`` alone and parses only the chosen profile (a start of
``sectormon stat`` pays for every parse: benchmarks/bench_start.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sectormon.errors import UsageError
from sectormon.profiles import safe_yaml
from sectormon.profiles.build import parse_profile
from sectormon.profiles.model import Profile
from sectormon.profiles.problems import Problem, ProfileError
from sectormon.profiles.safe_yaml import YamlInputError

if TYPE_CHECKING:
    from sectormon.host.topology import Topology

BUILTIN_DIR = Path(__file__).resolve().parent
"""The built-in profiles' YAML files ship beside this module (read as files, as the marker library
is: importlib.resources would import its zip readers at every start)."""


def builtin_profiles() -> tuple[str, ...]:
    """Names of the profiles shipped with sectormon."""
    return tuple(sorted(p.name[: -len(".yaml")] for p in BUILTIN_DIR.iterdir() if p.name.endswith(".yaml")))


def _is_path(name_or_path: str) -> bool:
    return "/" in name_or_path or name_or_path.endswith((".yaml", ".yml"))


def _builtin(name: str, variant: str) -> tuple[Profile, dict[str, Any]]:
    path = BUILTIN_DIR / f"{name}.yaml"
    return parse_profile(
        path.read_text(encoding="utf-8"), str(path), variant=variant, source=f"builtin:{name}"
    )


def _builtin_match(name: str) -> dict[str, Any]:
    """A built-in profile's ``match``, read without the rest of the file (the whole profile is
    parsed, and its ``match`` checked, when it is the one loaded)."""
    text = (BUILTIN_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    return dict(safe_yaml.load_top_level_key(text, "match") or {})


def load_profile(name_or_path: str, *, variant: str = "") -> Profile:
    """Load a built-in profile by name (``a64fx``, ``generic``) or a YAML file by path.

    ``variant`` (from :attr:`Topology.variant`) selects the part's nJ factors when the profile lists
    that variant; ``Profile.variant`` is then set to it, else left ``""`` (the defaults apply).
    """
    if not _is_path(name_or_path):
        if name_or_path not in builtin_profiles():
            raise UsageError(
                f"--profile: unknown profile {name_or_path!r} (built-in: {', '.join(builtin_profiles())}; "
                "or give a path to a .yaml file)"
            )
        return _builtin(name_or_path, variant)[0]
    try:
        text = safe_yaml.read_yaml_text(name_or_path)
    except (OSError, YamlInputError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProfileError(
            name_or_path, [Problem(None, f"cannot read profile: {reason}", "check the --profile path")]
        ) from exc
    return parse_profile(text, name_or_path, variant=variant)[0]


def _matches(match: Mapping[str, Any], topology: Topology) -> bool:
    if "a64fx" in match and bool(match["a64fx"]) != topology.is_a64fx:
        return False
    return not ("model" in match and str(match["model"]).lower() not in topology.model.lower())


def auto_profile_name(topology: Topology) -> str:
    """The built-in profile for this host: the first whose ``match`` fits, else the ``match: {}`` one."""
    fallback = ""
    for name in builtin_profiles():
        match = _builtin_match(name)
        if not match:
            fallback = fallback or name
        elif _matches(match, topology):
            return name
    return fallback or "generic"


def resolve_profile(name: str | None, topology: Topology | None) -> tuple[Profile, str]:
    """The profile ``--profile NAME`` selects, and how it was chosen: ``auto`` (or ``None``) picks
    by the host's CPU (:func:`auto_profile_name`), or ``a64fx`` for the simulated A64FX
    (``topology`` None)."""
    if name not in (None, "auto"):
        return load_profile(name, variant=topology.variant if topology else ""), "--profile"
    if topology is None:
        return load_profile("a64fx"), "auto: simulated A64FX"
    why = "auto: A64FX detected" if topology.is_a64fx else "auto: not an A64FX"
    return load_profile(auto_profile_name(topology), variant=topology.variant), why
