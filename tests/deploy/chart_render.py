"""The chart's values, and the parts of its templates the Python deploy tests need, rendered
without helm (tests/deploy/test_observability.py, tests/deploy/test_image.py): the ConfigMap's
config.toml, and the daemon container's args, ports and volume mounts. A line-by-line rendering
of the few template actions those parts use; any other action fails the test, so a template
change cannot slip past unrendered."""
import copy
import json
import os
import re

import yaml

CHART = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helm", "taot"))

# The sidecar the container test runs (tests/deploy/test_image.py): the job of the PyTorch
# end-to-end test, a token and mutual TLS; tests/deploy/test_chart.py renders it with helm too.
SIDECAR = {"job": {"id": "e2e", "worldSize": 4, "experts": 16, "slots": 2, "expertBytes": 1120},
           "token": {"enabled": True, "create": True, "value": "image-test-token"},
           "tls": {"enabled": True, "secretName": "image-tls", "clientCA": True},
           "roundTimeoutMs": 1000, "graceSeconds": 8, "drainSeconds": 1}


def merged(base, override):
    out = copy.deepcopy(base)
    for k, v in override.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def values(*overrides):
    """values.yaml with each override (a dict, or a file name in helm/taot/ci) merged in turn."""
    with open(os.path.join(CHART, "values.yaml")) as f:
        out = yaml.safe_load(f)
    for o in overrides:
        if isinstance(o, str):
            with open(os.path.join(CHART, "ci", o)) as f:
                o = yaml.safe_load(f)
        out = merged(out, o)
    return out


def _render(lines, values, where):
    """Template lines with if/with/end, range over a list value, and value outputs."""

    def lookup(path):
        node = values
        for key in path.removeprefix(".Values.").split("."):
            node = node[key]
        return node

    def text(v):
        return ("true" if v else "false") if isinstance(v, bool) else str(v)

    def condition(expr):
        if m := re.fullmatch(r"gt \(int (\.Values\.[\w.]+)\) 0", expr):
            return int(lookup(m[1])) > 0
        if m := re.fullmatch(r"and (\.Values\.[\w.]+) (\.Values\.[\w.]+)", expr):
            return bool(lookup(m[1])) and bool(lookup(m[2]))
        if re.fullmatch(r"\.Values\.[\w.]+", expr):
            return bool(lookup(expr))
        raise AssertionError(f"{where}: an action this test cannot render: {expr}")

    def output(expr, item):
        if expr == 'join ", " $params':
            return ", ".join(json.dumps(f"{k}={v}") for k, v in sorted(lookup(".Values.planner.params").items()))
        if expr == ". | quote" and item is not None:
            return json.dumps(text(item))
        if m := re.fullmatch(r"(\.Values\.[\w.]+)( \| quote| \| int64)?", expr):
            return json.dumps(text(lookup(m[1]))) if m[2] == " | quote" else text(lookup(m[1]))
        raise AssertionError(f"{where}: an action this test cannot render: {expr}")

    out, active, loop = [], [True], None
    for line in lines:
        if re.fullmatch(r"\s*\{\{-? (/\*.*\*/|\$\w+ :?=.*|if [^}]*\}\}\{\{ \$\w+ = .*\{\{ end) ?-?\}\}", line):
            continue  # a comment, or a template variable set (the probes', which these parts do not use)
        action = re.fullmatch(r"\s*\{\{-? (.*?) -?\}\}", line)
        if action and action[1].startswith(("if ", "with ")):
            active.append(active[-1] and condition(action[1].split(" ", 1)[1]))
        elif action and action[1].startswith("range .Values."):
            loop = (lookup(action[1].split(" ", 1)[1]), [])
            active.append(active[-1])
        elif action and action[1] == "end":
            active.pop()
            if loop is not None:
                items, body = loop
                loop = None
                for item in items:
                    out += [re.sub(r"\{\{ (.*?) \}\}", lambda m, i=item: output(m[1], i), b) for b in body]
        elif action and action[1].startswith(("$params", "range $")):
            continue  # the params list, rendered by its join

        elif loop is not None:
            loop[1].append(line)
        elif active[-1]:
            out.append(re.sub(r"\{\{ (.*?) \}\}", lambda m: output(m[1], None), line))
    return out


def render_config_toml(values):
    """The ConfigMap's config.toml for `values`."""
    with open(os.path.join(CHART, "templates", "configmap.yaml")) as f:
        template = f.read().split("config.toml: |\n", 1)[1]
    return "\n".join(line.strip() for line in _render(template.splitlines(), values, "configmap.yaml")) + "\n"


def render_container(values):
    """The daemon container's args, ports and volumeMounts (the "taot.container" template in
    _helpers.tpl), as a dict."""
    with open(os.path.join(CHART, "templates", "_helpers.tpl")) as f:
        template = f.read()
    body = template.split('{{- define "taot.container" -}}\n', 1)[1].split("\n{{- end -}}", 1)[0].splitlines()
    keep, parts = False, []
    for line in body:  # the three top-level keys this needs, each up to the next key
        if re.match(r"[A-Za-z]", line):
            keep = line.split(":")[0] in ("args", "ports", "volumeMounts")
        if keep:
            parts.append(line)
    return yaml.safe_load("\n".join(_render(parts, values, "_helpers.tpl")))
