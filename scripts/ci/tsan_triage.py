#!/usr/bin/env python3
"""Sorts ThreadSanitizer reports from the tests that run a gRPC server (scripts/ci/tsan.sh).

Debian's gRPC is not built with TSan: it hands its call objects from thread to thread through
synchronisation TSan cannot see, so TSan reports races inside gRPC's own inline code (grpcpp
headers, the std::function and ByteBuffer members of its call objects). Those reports are set aside
and counted. Every other report fails the job:

- a data race where either access has a fracpack frame (src/, apps/, include/, tests/) above the
  first gRPC, protobuf or Abseil frame of its stack: our code touched the memory itself;
- any other kind of report (use after free, deadlock, signal, leaked thread, ...);
- a log that holds no parseable report but is not empty.

Usage: tsan_triage.py SOURCE_DIR LOG_FILE...   exit 0: none of ours; 1: ours (printed in full).
"""
import re
import sys

REPORT_START = re.compile(r"^WARNING: ThreadSanitizer: (.+?)(?: \(pid=\d+\))?$")
FRAME = re.compile(r"^\s+#\d+ (?P<function>.*?) (?P<file>\S+) \((?P<module>[^)]*)\)$")
ACCESS = re.compile(r"^  (Previous )?(atomic )?(read|write)\b.* of size \d+", re.IGNORECASE)
LIBRARY_FUNCTION = re.compile(r"^(grpc|grpc_core|grpc_event_engine|google::protobuf|absl)(::|_)")
LIBRARY_FILE = re.compile(r"^/usr/include/(grpc|grpcpp|grpc\+\+|google/protobuf|absl)/")
LIBRARY_MODULE = re.compile(r"(libgrpc|libgpr|libprotobuf|libabsl|libssl|libcrypto|libupb)")


def split_reports(text):
    """Yields (kind, [lines]) for each report between WARNING and SUMMARY."""
    kind, lines = None, []
    for line in text.splitlines():
        start = REPORT_START.match(line)
        if start:
            kind, lines = start.group(1), [line]
        elif kind is not None:
            lines.append(line)
            if line.startswith("SUMMARY: ThreadSanitizer"):
                yield kind, lines
                kind, lines = None, []
    if kind is not None:
        yield kind, lines  # cut off: judged like any other


def access_stacks(lines):
    """The frames of each memory access (not the locations or thread creations)."""
    stacks, current = [], None
    for line in lines:
        if ACCESS.match(line):
            current = []
            stacks.append(current)
        elif current is not None:
            frame = FRAME.match(line)
            if frame:
                current.append(frame)
            elif line.strip():
                current = None
    return stacks


def is_ours(frame, source_dir):
    return frame.group("file").startswith(source_dir + "/") and "/gen/" not in frame.group("file")


def is_library(frame):
    return bool(LIBRARY_FUNCTION.match(frame.group("function")) or LIBRARY_FILE.match(frame.group("file"))
                or LIBRARY_MODULE.search(frame.group("module")))


def ours_above_library(stack, source_dir):
    for frame in stack:  # file before function: `grpc::Status fracpack::f()` names a return type first
        if is_ours(frame, source_dir):
            return True
        if is_library(frame):
            return False
    return False


def is_set_aside(kind, lines, source_dir):
    if kind != "data race":
        return False
    stacks = access_stacks(lines)
    return len(stacks) >= 2 and not any(ours_above_library(s, source_dir) for s in stacks)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    source_dir = argv[1].rstrip("/")
    ours, set_aside = [], 0
    for path in argv[2:]:
        text = open(path, encoding="utf-8", errors="replace").read()
        reports = list(split_reports(text))
        if not reports and text.strip():
            ours.append((path, text.splitlines()))
        for kind, lines in reports:
            if is_set_aside(kind, lines, source_dir):
                set_aside += 1
            else:
                ours.append((path, lines))
    print(f"tsan_triage: {set_aside} report(s) inside gRPC's own code set aside, {len(ours)} of ours")
    for path, lines in ours:
        print(f"--- {path}")
        print("\n".join(lines))
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
