#!/usr/bin/env python3
"""Checks gdn-run --rank-files against a P = 1 run's global values, without
NumPy.

usage: check_rank_files.py RANK_DIR RANKS INPUTS OUTPUTS SHARDED_ARGS
  RANK_DIR      what --rank-files wrote (rank<r>/, all/)
  INPUTS        the global argN.npy the multi-rank run read (--inputs)
  OUTPUTS       the P = 1 program's resultN.npy (--outputs)
  SHARDED_ARGS  comma-separated argument numbers sharded like result 0
                (their rows are result 0's rows)

For every result with a layout, the ranks' rows (resultN.rows.npy) must
cover every global row exactly once and each rank's values must be the
global result's rows; sharded arguments must be the global argument's rows
at result 0's indices; values without a layout (all/) must equal the global
ones. Prints one line per check and "OK", or the first mismatch and exits 1.
"""
import ast
import os
import struct
import sys

CODES = {"<f8": ("d", 8), "<f4": ("f", 4), "<i4": ("i", 4), "<i8": ("q", 8)}


def read_npy(path):
    """(shape, flat values) of a little-endian, C-order .npy file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit("%s: not an .npy file" % path)
    major = data[6]
    if major == 1:
        (length,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (length,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + length].decode())
    if header["fortran_order"]:
        sys.exit("%s: Fortran order" % path)
    code, size = CODES[header["descr"]]
    shape = tuple(header["shape"])
    count = 1
    for s in shape:
        count *= s
    body = data[start + length:]
    if len(body) != count * size:
        sys.exit("%s: %d bytes for shape %s" % (path, len(body), shape))
    return shape, struct.unpack("<%d%s" % (count, code), body)


def rows_of(shape, values):
    """The array as a list of rows (leading dimension)."""
    width = len(values) // shape[0] if shape[0] else 0
    return [values[i * width:(i + 1) * width] for i in range(shape[0])]


def close(a, b, scale):
    # Rank files are float32; the global files may be float64.
    return all(abs(x - y) <= 1e-6 * scale for x, y in zip(a, b)) and len(a) == len(b)


def fail(message):
    print("FAIL " + message)
    sys.exit(1)


def main():
    rank_dir, ranks, inputs, outputs, sharded = sys.argv[1:]
    ranks = int(ranks)
    sharded = [int(a) for a in sharded.split(",") if a]
    checked = 0
    result0_rows = {}
    for name in sorted(os.listdir(outputs)):
        number = name[len("result"):-len(".npy")]
        gshape, gvalues = read_npy(os.path.join(outputs, name))
        scale = max(1.0, max(map(abs, gvalues), default=0.0))
        shared = os.path.join(rank_dir, "all", name)
        if os.path.exists(shared):
            shape, values = read_npy(shared)
            if shape != gshape or not close(values, gvalues, scale):
                fail("all/%s differs from the P = 1 result" % name)
            print("result %s: the same on every rank" % number)
            checked += 1
            continue
        grows = rows_of(gshape, gvalues)
        covered = [0] * gshape[0]
        for r in range(ranks):
            base = os.path.join(rank_dir, "rank%d" % r, "result" + number)
            shape, values = read_npy(base + ".npy")
            _, indices = read_npy(base + ".rows.npy")
            if shape[0] != len(indices) or shape[1:] != gshape[1:]:
                fail("rank %d result %s: shape %s with %d row indices, global %s"
                     % (r, number, shape, len(indices), gshape))
            for local, row in enumerate(rows_of(shape, values)):
                g = int(indices[local])
                if not 0 <= g < gshape[0]:
                    fail("rank %d result %s: row index %d out of [0, %d)"
                         % (r, number, g, gshape[0]))
                covered[g] += 1
                if not close(row, grows[g], scale):
                    fail("rank %d result %s: local row %d != global row %d"
                         % (r, number, local, g))
            if number == "0":
                result0_rows[r] = [int(i) for i in indices]
        if any(c != 1 for c in covered):
            bad = next(i for i, c in enumerate(covered) if c != 1)
            fail("result %s: global row %d held by %d ranks"
                 % (number, bad, covered[bad]))
        print("result %s: %d ranks' rows are the global result's, each once"
              % (number, ranks))
        checked += 1
    for arg in sharded:
        gshape, gvalues = read_npy(os.path.join(inputs, "arg%d.npy" % arg))
        scale = max(1.0, max(map(abs, gvalues), default=0.0))
        grows = rows_of(gshape, gvalues)
        for r in range(ranks):
            shape, values = read_npy(
                os.path.join(rank_dir, "rank%d" % r, "arg%d.npy" % arg))
            indices = result0_rows[r]
            local_rows = rows_of(shape, values)
            if len(local_rows) != len(indices):
                fail("rank %d arg %d: %d rows, result 0 has %d"
                     % (r, arg, len(local_rows), len(indices)))
            for local, g in enumerate(indices):
                if not close(local_rows[local], grows[g], scale):
                    fail("rank %d arg %d: local row %d != global row %d"
                         % (r, arg, local, g))
        print("arg %d: each rank took the global rows of its shard" % arg)
        checked += 1
    if not checked:
        fail("nothing compared")
    print("OK")


if __name__ == "__main__":
    main()
