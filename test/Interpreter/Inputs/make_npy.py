#!/usr/bin/env python3
"""Writes a .npy file without NumPy, for interpreter tests.

usage: make_npy.py OUT.npy DTYPE SHAPE VALUES...
  DTYPE  one of <f8 <f4 <i4 <i8
  SHAPE  comma-separated sizes, e.g. 4,1,1,1 (empty string for a scalar)
"""
import struct
import sys

CODES = {"<f8": "d", "<f4": "f", "<i4": "i", "<i8": "q"}


def main():
    out, dtype, shape_text, *values = sys.argv[1:]
    shape = [int(s) for s in shape_text.split(",") if s]
    tuple_text = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype, tuple_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    convert = float if dtype.startswith("<f") else int
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), CODES[dtype]), *map(convert, values)))


if __name__ == "__main__":
    main()
