#!/usr/bin/env python3
"""Validates `batchpilot autoscale --export keda|hpa`.

usage: validate_manifests.py BATCHPILOT DATA_DIR

Runs the CLI for each policy (reactive on each metric, scheduled,
predictive) and each format, and validates every YAML document it prints
against the schemas vendored in DATA_DIR (tests/data/k8s/README.md): the KEDA
ScaledObject CRD's openAPIV3Schema and the autoscaling/v2
HorizontalPodAutoscaler components. Strictly: every object schema that lists
`properties` and has no `additionalProperties` is closed, so a misspelled
field fails as the API server's strict field validation would reject it. On
top of the schemas, what KEDA's scalers check in the trigger metadata (cron
expressions, desiredReplicas, thresholds) and the CRD's CEL rule
(minReplicaCount <= maxReplicaCount). Deliberately broken copies must fail,
so that the check is known to catch something.

Exit 0 when everything holds, 1 on a failure, 77 (CTest's SKIPPED) when
PyYAML or jsonschema is missing.
"""

import copy
import json
import os
import re
import subprocess
import sys

try:
    import yaml
    import jsonschema
except ImportError as e:  # never a silent pass: CTest shows SKIPPED
    print(f"SKIP: {e} (install python3-yaml and python3-jsonschema)")
    sys.exit(77)

QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
CRON_FIELD = re.compile(r"^[0-9*/,-]+$")


def closed(schema):
    """A copy of `schema` in which every object that lists properties and
    says nothing of others admits no others."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out and not out.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


def keda_validator(data_dir):
    with open(os.path.join(data_dir, "keda.sh_scaledobjects.yaml")) as f:
        crd = yaml.safe_load(f)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    schema = closed(version["schema"]["openAPIV3Schema"])
    return jsonschema.Draft7Validator(schema)


def hpa_validator(data_dir):
    with open(os.path.join(data_dir, "autoscaling_v2_hpa_openapi.json")) as f:
        spec = json.load(f)
    schema = {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        "components": closed(spec["components"]),
    }
    return jsonschema.Draft7Validator(schema)


def semantic_errors(doc):
    """What the schemas cannot say: the kind, KEDA's trigger metadata, the
    CEL rule, the quantities."""
    errors = []
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind == "ScaledObject":
        if doc.get("apiVersion") != "keda.sh/v1alpha1":
            errors.append(f"apiVersion {doc.get('apiVersion')!r}")
        lo, hi = spec.get("minReplicaCount"), spec.get("maxReplicaCount", 100)
        if lo is not None and lo > hi:
            errors.append("minReplicaCount must be less than or equal to maxReplicaCount")
        for t in spec.get("triggers") or []:
            meta = t.get("metadata") or {}
            if t.get("type") == "cron":
                for key in ("timezone", "start", "end", "desiredReplicas"):
                    if key not in meta:
                        errors.append(f"cron trigger without {key}")
                for key in ("start", "end"):
                    fields = str(meta.get(key, "")).split()
                    if len(fields) != 5 or not all(CRON_FIELD.match(x) for x in fields):
                        errors.append(f"cron {key} {meta.get(key)!r} is not 5 cron fields")
                if meta.get("start") == meta.get("end"):
                    errors.append("cron start and end are the same time")
                if not re.fullmatch(r"[1-9][0-9]*", str(meta.get("desiredReplicas", ""))):
                    errors.append(f"desiredReplicas {meta.get('desiredReplicas')!r} is not a positive count")
            elif t.get("type") == "prometheus":
                for key in ("serverAddress", "query", "threshold"):
                    if key not in meta:
                        errors.append(f"prometheus trigger without {key}")
                try:
                    if float(meta.get("threshold", "x")) <= 0:
                        errors.append("threshold must be positive")
                except ValueError:
                    errors.append(f"threshold {meta.get('threshold')!r} is not a number")
                if t.get("metricType") not in ("AverageValue", "Value"):
                    errors.append(f"metricType {t.get('metricType')!r}")
            else:
                errors.append(f"unexpected trigger type {t.get('type')!r}")
    elif kind == "HorizontalPodAutoscaler":
        if doc.get("apiVersion") != "autoscaling/v2":
            errors.append(f"apiVersion {doc.get('apiVersion')!r}")
        if spec.get("minReplicas", 1) > spec.get("maxReplicas", 0):
            errors.append("minReplicas > maxReplicas")
        for m in spec.get("metrics") or []:
            target = (m.get(m.get("type", "").lower()) or {}).get("target") or {}
            for key in ("averageValue", "value"):
                if key in target and not QUANTITY.match(str(target[key])):
                    errors.append(f"{key} {target[key]!r} is not a quantity")
        for direction in ("scaleUp", "scaleDown"):
            w = ((spec.get("behavior") or {}).get(direction) or {}).get("stabilizationWindowSeconds")
            if w is not None and not 0 <= w <= 3600:
                errors.append(f"{direction} stabilizationWindowSeconds {w} outside 0..3600")
    else:
        errors.append(f"unexpected kind {kind!r}")
    return errors


def problems(doc, validators):
    kind = doc.get("kind") if isinstance(doc, dict) else None
    validator = validators.get(kind)
    if validator is None:
        return [f"no schema for kind {kind!r}"]
    found = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    return found + semantic_errors(doc)


# (name, flags, kinds expected)
CASES = [
    ("reactive queue, keda", ["--export", "keda"], ["ScaledObject"]),
    ("reactive queue, hpa", ["--export", "hpa"], ["HorizontalPodAutoscaler"]),
    (
        "reactive running, keda, tolerance",
        ["--export", "keda", "--metric", "running", "--target", "24", "--tolerance", "0.2", "--up-window", "30s"],
        ["ScaledObject"],
    ),
    ("reactive running, hpa", ["--export", "hpa", "--metric", "running", "--min", "2", "--max", "6"],
     ["HorizontalPodAutoscaler"]),
    ("reactive kv, keda", ["--export", "keda", "--metric", "kv", "--target", "0.75"], ["ScaledObject"]),
    ("reactive kv, hpa", ["--export", "hpa", "--metric", "kv"], ["HorizontalPodAutoscaler"]),
    ("reactive rate, keda", ["--export", "keda", "--metric", "rate", "--target", "2.5", "--server", "sglang"],
     ["ScaledObject"]),
    ("reactive rate, hpa", ["--export", "hpa", "--metric", "rate", "--server", "tgi"], ["HorizontalPodAutoscaler"]),
    ("reactive queue, keda, batchpilot, min 0",
     ["--export", "keda", "--server", "batchpilot", "--min", "0", "--deployment", "llm", "--namespace", "serving",
      "--prometheus", "http://prom.example:9090"], ["ScaledObject"]),
    ("reactive queue, hpa, min 0", ["--export", "hpa", "--min", "0"], ["HorizontalPodAutoscaler"]),
    (
        "scheduled hourly, keda",
        ["--export", "keda", "--policy", "scheduled", "--timezone", "Europe/Paris",
         "--schedule", "1,1,1,1,1,1,2,3,4,4,4,4,4,4,4,4,4,3,3,2,2,1,1,1"],
        ["ScaledObject"],
    ),
    ("scheduled flat, keda", ["--export", "keda", "--policy", "scheduled", "--schedule", "3"], ["ScaledObject"]),
    ("scheduled 15 min, no lead, keda",
     ["--export", "keda", "--policy", "scheduled", "--schedule", "1,2,2,1", "--slot", "15m", "--lead", "0"],
     ["ScaledObject"]),
    ("predictive, keda", ["--export", "keda", "--policy", "predictive", "--replica-rate", "1.5", "--headroom", "1.2"],
     ["ScaledObject"]),
    ("predictive, hpa", ["--export", "hpa", "--policy", "predictive", "--replica-rate", "0.4"],
     ["HorizontalPodAutoscaler"]),
]

# Flags the command must refuse (exit 2, a message on stderr).
REFUSED = [
    ("a schedule as an HPA", ["--export", "hpa", "--policy", "scheduled", "--schedule", "1,2"]),
    ("slots that do not divide a day", ["--export", "keda", "--policy", "scheduled", "--schedule", "1,2",
                                        "--slot", "7m"]),
    ("--watch with --export", ["--export", "keda", "--watch", "http://127.0.0.1:1"]),
    ("an unknown format", ["--export", "helm"]),
    ("TGI has no KV usage", ["--export", "keda", "--metric", "kv", "--server", "tgi"]),
    ("a deployment that is not a name", ["--export", "keda", "--deployment", "Bad Name"]),
]


def run(batchpilot, flags):
    return subprocess.run([batchpilot, "autoscale", *flags], capture_output=True, text=True, timeout=60)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    batchpilot, data_dir = sys.argv[1], sys.argv[2]
    validators = {"ScaledObject": keda_validator(data_dir), "HorizontalPodAutoscaler": hpa_validator(data_dir)}
    failures = 0
    seen = {}
    for name, flags, kinds in CASES:
        r = run(batchpilot, flags)
        if r.returncode != 0:
            print(f"FAIL {name}: exit {r.returncode}: {r.stderr.strip()}")
            failures += 1
            continue
        docs = [d for d in yaml.safe_load_all(r.stdout) if d is not None]
        if [d.get("kind") for d in docs] != kinds:
            print(f"FAIL {name}: documents {[d.get('kind') for d in docs]}, expected {kinds}")
            failures += 1
            continue
        for doc in docs:
            found = problems(doc, validators)
            if found:
                print(f"FAIL {name}:\n  " + "\n  ".join(found) + "\n" + r.stdout)
                failures += 1
            seen.setdefault(doc["kind"], doc)
        print(f"ok   {name}")

    # The -o FILE form writes the same manifest.
    out_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"k8s_manifest_{os.getpid()}.yaml")
    r = run(batchpilot, ["--export", "keda", "-o", out_file])
    try:
        with open(out_file) as f:
            written = f.read()
        os.remove(out_file)
    except OSError:
        written = None
    if r.returncode != 0 or written != run(batchpilot, ["--export", "keda"]).stdout:
        print("FAIL -o FILE: not the manifest printed without it")
        failures += 1
    else:
        print("ok   -o FILE")

    for name, flags in REFUSED:
        r = run(batchpilot, flags)
        if r.returncode != 2 or not r.stderr.strip():
            print(f"FAIL refusing {name}: exit {r.returncode}, stderr {r.stderr.strip()!r}")
            failures += 1
        else:
            print(f"ok   refuses {name}: {r.stderr.strip().splitlines()[0]}")

    # The check must catch a broken manifest: a misspelled field (closed
    # schemas), a wrong type, a broken cron trigger, a bad quantity.
    def mutated(kind, change):
        doc = copy.deepcopy(seen[kind])
        change(doc)
        return doc

    def rename(obj, old, new):
        obj[new] = obj.pop(old)

    r = run(batchpilot, ["--export", "keda", "--policy", "scheduled", "--schedule", "1,2"])
    cron_doc = next(d for d in yaml.safe_load_all(r.stdout) if d)
    broken = [
        ("ScaledObject: spec.pollingIntervall", mutated("ScaledObject",
                                                        lambda d: rename(d["spec"], "pollingInterval",
                                                                         "pollingIntervall"))),
        ("ScaledObject: behavior.scaleUp.stabilisationWindowSeconds", mutated(
            "ScaledObject", lambda d: rename(d["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
                                             ["scaleUp"], "stabilizationWindowSeconds",
                                             "stabilisationWindowSeconds"))),
        ("ScaledObject: threshold as a number", mutated(
            "ScaledObject", lambda d: d["spec"]["triggers"][0]["metadata"].update(threshold=4))),
        ("ScaledObject: min above max", mutated("ScaledObject",
                                                lambda d: d["spec"].update(minReplicaCount=9, maxReplicaCount=2))),
        ("ScaledObject: desiredReplicas as a number",
         (lambda d: (d["spec"]["triggers"][0]["metadata"].update(desiredReplicas=2), d)[1])(copy.deepcopy(cron_doc))),
        ("ScaledObject: a 6-field cron start",
         (lambda d: (d["spec"]["triggers"][0]["metadata"].update(start="0 0 0 * * *"), d)[1])(
             copy.deepcopy(cron_doc))),
        ("HorizontalPodAutoscaler: target.averageVal", mutated(
            "HorizontalPodAutoscaler", lambda d: rename(d["spec"]["metrics"][0]["pods"]["target"], "averageValue",
                                                        "averageVal"))),
        ("HorizontalPodAutoscaler: spec.minReplica", mutated(
            "HorizontalPodAutoscaler", lambda d: rename(d["spec"], "minReplicas", "minReplica"))),
        ("HorizontalPodAutoscaler: averageValue 4 cores", mutated(
            "HorizontalPodAutoscaler",
            lambda d: d["spec"]["metrics"][0]["pods"]["target"].update(averageValue="4 cores"))),
        ("HorizontalPodAutoscaler: metadata.nam", mutated(
            "HorizontalPodAutoscaler", lambda d: rename(d["metadata"], "name", "nam"))),
    ]
    for name, doc in broken:
        found = problems(doc, validators)
        if found:
            print(f"ok   catches {name}: {found[0]}")
        else:
            print(f"FAIL the check passed a broken manifest: {name}")
            failures += 1

    print(f"{failures} failure(s)" if failures else "all manifests valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
