"""The simulator's compiled core (sectormon/sim/_core.c), built when a C compiler is there.

``optional=True``: an install without a compiler still succeeds and the simulator runs its
pure-Python model, which gives the same numbers (docs/sim.md, "The compiled core").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sectormon.sim._core",
            ["sectormon/sim/_core.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
        )
    ]
)
