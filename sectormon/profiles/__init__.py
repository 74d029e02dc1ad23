"""Event catalogs, groups and metric formulas as validated data (YAML), and the way to them.

Every A64FX fact (codes, scopes, nJ factors, errata formulas) lives in ``a64fx.yaml``; adding a CPU
is adding a YAML profile. :mod:`.resolve` picks a profile and reads it, :mod:`.build` turns its
YAML (:mod:`.compose`) into a :class:`Profile` that :mod:`.validate` has judged, :mod:`.codec`
writes and reads it in a recording's header, and :mod:`.problems` reports what is wrong with it.
:mod:`.expr` is the formula language the metrics are written in.
"""

from __future__ import annotations

from sectormon.profiles.codec import profile_from_dict, profile_to_dict
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile
from sectormon.profiles.problems import ProfileError
from sectormon.profiles.resolve import auto_profile_name, builtin_profiles, load_profile

__all__ = [
    "EventDef",
    "GroupDef",
    "MetricDef",
    "Profile",
    "ProfileError",
    "auto_profile_name",
    "builtin_profiles",
    "load_profile",
    "profile_from_dict",
    "profile_to_dict",
]
