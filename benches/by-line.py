#!/usr/bin/env python3
"""Instructions per operation of one function, by the source line each instruction came from.

Used by `bash benches/host-overhead.sh --by-line` (see there): reads two callgrind outputs of
the same case made with `--dump-instr=yes` at two iteration counts, keeps the instructions
executed inside the functions whose names contain FUNCTION (code inlined into them included),
takes the difference of the two runs per instruction address (the steady state, without the
program's setup) and divides it by the operations of the extra rounds. Each address is mapped
to its source line with `addr2line` (the innermost inlined location), and the lines are
printed with their instructions per operation, most first, then the total.

    by-line.py BINARY FUNCTION OPS SMALL.cg LARGE.cg
"""

import collections
import os
import re
import subprocess
import sys


def costs(path, function):
    """Instructions executed per address inside functions whose name contains `function`."""
    names, out = {}, collections.Counter()
    current, addr, skip = None, 0, False
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            if kind == "fn":
                current = names.get(ident, "")
            continue
        if line.startswith("calls="):
            skip = True  # the next cost line is the call's inclusive cost
            continue
        if not line or line[0] not in "+-*0123456789":
            continue
        fields = line.split()
        token = fields[0]
        if token == "*":
            pass
        elif token[0] in "+-":
            sign = 1 if token[0] == "+" else -1
            addr += sign * int(token[1:], 0)
        else:
            addr = int(token, 0)
        if skip:
            skip = False
            continue
        # Positions are "instr line": the cost follows both.
        if current and function in current and len(fields) > 2:
            out[addr] += int(fields[2])
    return out


def main():
    binary, function, ops, small, large = sys.argv[1:6]
    ops = int(ops)
    a, b = costs(small, function), costs(large, function)
    per = {addr: (b[addr] - a.get(addr, 0)) / ops for addr in b}
    per = {addr: n for addr, n in per.items() if n > 0}
    if not per:
        sys.exit(f"by-line: no instructions found inside a function named like `{function}`")
    addrs = sorted(per)
    lines = subprocess.run(
        ["addr2line", "-e", binary] + [hex(a) for a in addrs],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")
    by_line = collections.Counter()
    root = os.getcwd() + "/"
    for addr, where in zip(addrs, lines):
        where = where.removeprefix(root)
        where = re.sub(r" \(discriminator \d+\)$", "", where)
        where = re.sub(r"^.*/(library|registry/src/[^/]+)/", r"\1/", where)
        by_line[where] += per[addr]
    for where, n in by_line.most_common():
        if n >= 0.5:
            print(f"{n:8.1f}  {where}")
    print(f"{sum(per.values()):8.1f}  total per operation, inside `{function}`")


if __name__ == "__main__":
    main()
