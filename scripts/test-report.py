#!/usr/bin/env python3
"""The last lines of ./run-tests: what ran, what was skipped and why, and which capabilities the host had.

Reads the JUnit reports the run wrote (*/target/surefire-reports and failsafe-reports, newer than --since) and the
capabilities the tests probed (*/target/test-capabilities.tsv, written by dev.crucible.testhost.Requires). Where the
run promises capabilities (CRUCIBLE_TEST_PROMISE, as ./run-tests and CI set it), a skip that .ci/allowed-skips does not
list fails the run: exit 1. Exit 2 when there is no report at all (the build stopped before any test ran).
"""
import argparse
import collections
import glob
import os
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # --root replaces it


def reports(since):
    for pattern in ("*/target/surefire-reports/TEST-*.xml", "*/target/failsafe-reports/TEST-*.xml"):
        for path in glob.glob(os.path.join(ROOT, pattern)):
            if os.path.getmtime(path) >= since:
                yield path


def cases(since):
    """(class, method, outcome, message) for every test case of the run."""
    for path in reports(since):
        try:
            suite = ET.parse(path).getroot()
        except ET.ParseError as e:
            print(f"crucible tests: unreadable report {path}: {e}", file=sys.stderr)
            continue
        for case in suite.iter("testcase"):
            klass = case.get("classname", "?")
            name = case.get("name", "?")
            if case.find("failure") is not None or case.find("error") is not None:
                yield klass, name, "failed", ""
            elif case.find("skipped") is not None:
                skipped = case.find("skipped")
                # surefire writes the reason as a message, or as the exception's trace: its first line then
                message = (skipped.get("message") or (skipped.text or "").strip().split("\n")[0]
                           or "no reason given").strip()
                message = message.split("TestAbortedException: ", 1)[-1]
                yield klass, name, "skipped", " ".join(message.split())
            else:
                yield klass, name, "passed", ""


def allowed_skips():
    """(test, message part, why) from .ci/allowed-skips: a tab between the columns, # for comments."""
    entries = []
    path = os.path.join(ROOT, ".ci", "allowed-skips")
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            columns = [c.strip() for c in line.split("\t") if c.strip()]
            if len(columns) != 3:
                sys.exit(f"crucible tests: .ci/allowed-skips:{number}: want TEST<tab>MESSAGE PART<tab>WHY, got {line!r}")
            entries.append(tuple(columns))
    return entries


def allowed(klass, method, message, entries):
    simple = klass.rsplit(".", 1)[-1]
    for test, part, _why in entries:
        name, _, wanted = test.partition("#")
        if name in (klass, simple) and (not wanted or method.startswith(wanted)) and part in message:
            return True
    return False


def capabilities(since):
    """wire name -> (present, promised, why missing), from what the tests probed."""
    found = {}
    for path in glob.glob(os.path.join(ROOT, "*/target/test-capabilities.tsv")):
        if os.path.getmtime(path) < since:
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4:
                    name, state, promise, why = parts
                    present = state == "present"
                    if name not in found or not present:  # one JVM that lacked it is what counts
                        found[name] = (present, promise == "promised", why)
    return found


def main():
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", type=float, default=0, help="only reports written after this epoch second")
    parser.add_argument("--root", default=ROOT, help="the repository whose modules' reports to read")
    args = parser.parse_args()
    ROOT = os.path.abspath(args.root)
    promised = bool(os.environ.get("CRUCIBLE_TEST_PROMISE", "").strip())
    outcomes = collections.Counter()
    reasons = collections.Counter()
    unlisted = []
    entries = allowed_skips()
    for klass, method, outcome, message in cases(args.since):
        outcomes[outcome] += 1
        if outcome == "skipped":
            reasons[message] += 1
            if not allowed(klass, method, message, entries):
                unlisted.append(f"{klass.rsplit('.', 1)[-1]}#{method}: {message}")
    total = sum(outcomes.values())
    if total == 0:
        print("crucible tests: no test report was written (the build stopped before the tests; see above)")
        return 2
    print(f"crucible tests: {total} tests: {outcomes['passed']} passed, {outcomes['failed']} failed, "
          f"{outcomes['skipped']} skipped")
    for message, n in reasons.most_common():
        print(f"  skipped {n}: {message}")
    caps = capabilities(args.since)
    present = sorted(n for n, (ok, _, _) in caps.items() if ok)
    missing = sorted(f"{n} ({why})" for n, (ok, _, why) in caps.items() if not ok)
    print("crucible tests: capabilities present: " + (", ".join(present) or "none probed"))
    if missing:
        print("crucible tests: capabilities missing: " + "; ".join(missing))
    if promised and unlisted:
        print(f"crucible tests: FAILED: {len(unlisted)} skip(s) in a run that promises its capabilities "
              f"(CRUCIBLE_TEST_PROMISE={os.environ['CRUCIBLE_TEST_PROMISE']}) not listed in .ci/allowed-skips:")
        for line in unlisted:
            print("  " + line)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
