"""A profile's YAML as plain Python data, with the line of every key and list item.

Profiles are composed (not just loaded) for two reasons: a fault found later, while building or
checking, is reported at its line, and a duplicate key is a fault here where ``yaml.safe_load``
would silently keep the last one. Composing goes through :mod:`.safe_yaml`'s bounded composer, so
an alias bomb or a hostile nesting is refused with its line like any other YAML fault.
"""

from __future__ import annotations

from typing import Any

import yaml

from sectormon.profiles import safe_yaml
from sectormon.profiles.problems import KeyPath, Problem
from sectormon.profiles.safe_yaml import BoundedSafeConstructor, YamlLimitError


class ComposedYaml:
    """Plain Python data from a composed YAML document plus the line of every key and item.

    ``data`` is None when the text is empty or not YAML; ``problems`` then says why.
    """

    def __init__(self, text: str) -> None:
        self.lines: dict[KeyPath, int] = {(): 1}
        self.problems: list[Problem] = []
        self._constructor = BoundedSafeConstructor()
        try:
            node = safe_yaml.compose(text)
        except YamlLimitError as exc:
            mark = exc.problem_mark
            line = mark.line + 1 if mark is not None else None
            self.problems.append(
                Problem(line, f"YAML refused: {exc.problem}", "a profile needs no more: fix this line")
            )
            self.data: Any = None
            return
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            what = exc.problem or exc.context or "invalid YAML"
            if exc.problem and exc.context and exc.context_mark is not None:
                what += f" ({exc.context} started at line {exc.context_mark.line + 1})"
            self.problems.append(
                Problem(line, f"YAML syntax error: {what}", "fix the YAML syntax at this line")
            )
            self.data = None
            return
        except yaml.YAMLError as exc:
            self.problems.append(Problem(None, f"YAML error: {exc}", "fix the YAML syntax"))
            self.data = None
            return
        self.data = self._convert(node, ()) if node is not None else None

    def _convert(self, node: yaml.Node, path: KeyPath) -> Any:
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    self.problems.append(Problem(line, "a key must be a plain name", "write name: value"))
                    continue
                key = self._scalar(key_node)
                if key in out:
                    first = self.lines.get((*path, key))
                    self.problems.append(
                        Problem(
                            line, f"duplicate key {key!r} (first at line {first})", "remove or rename one"
                        )
                    )
                    continue
                key_path = (*path, key)
                self.lines[key_path] = line
                out[key] = self._convert(value_node, key_path)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                item_path = (*path, i)
                self.lines[item_path] = item.start_mark.line + 1
                items.append(self._convert(item, item_path))
            return items
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            self.problems.append(
                Problem(node.start_mark.line + 1, f"bad value: {what}", "write a plain value")
            )
            return None

    def line_of(self, path: KeyPath) -> int | None:
        """The line of ``path``, or of its nearest located parent (the document starts at line 1)."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)
