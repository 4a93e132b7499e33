#!/usr/bin/env python3
"""Regenerates cases.json from cases.py with the answers of the Go oracle.

    python3 regenerate.py /path/to/gotmpl-oracle

cases.py lists (name, template, data, yaml) written from the Go text/template and sprig
documentation; this script renders each with Go (text/template + sprig 3.2.3 + ghodss/yaml)
and records the output, error and manifest JSON that go_differential.rs compares against.
Build the oracle as described in ../gotmpl-oracle/main.go.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cases import C  # noqa: E402


def main(oracle):
    requests = "".join(
        json.dumps({"template": c["template"], "data": c["data"], "yaml": c["yaml"], "html": c["html"]})
        + "\n"
        for c in C
    )
    answers = subprocess.run(
        [oracle], input=requests.encode(), capture_output=True, check=True
    ).stdout.decode().splitlines()
    cases, names = [], set()
    for c, line in zip(C, answers):
        answer = json.loads(line)
        if c["name"] in names:
            raise SystemExit(f"duplicate case name {c['name']!r}")
        names.add(c["name"])
        entry = {"name": c["name"], "template": c["template"], "data": c["data"]}
        if c["yaml"]:
            entry["yaml"] = True
        if c["html"]:
            entry["html"] = True
        if "error" in answer:
            entry["error"] = answer["error"]
        else:
            entry["output"] = answer["output"]
            if "json" in answer:
                entry["json"] = answer["json"]
        cases.append(entry)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
    print(len(cases), "cases,", sum("error" in e for e in cases), "expecting an error")


if __name__ == "__main__":
    main(sys.argv[1])
