"""How a job frame names a node's own scopes: ``node:HOST/cmg:N``, ``node:HOST/core:N``...

One module, so the job's scopes (:mod:`.combine`) and its regions' scopes (:mod:`.regions`) name
a node's scopes alike.
"""

from __future__ import annotations


def node_key(host: str, kind: str, ident: str) -> str:
    """A node's scope key in a job frame: ``node:HOST/cmg:N``, ``node:HOST/core:N``."""
    return f"node:{host}/{kind}:{ident}"
