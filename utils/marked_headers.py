"""What the scripts that add timing marks to a copy of the runtime's
headers share (scan-timeline.py, fused-phase-profile.py, grid-timeline.py):
the copy, and replacing anchors that must occur exactly once, so that a
kernel that changed stops the script with the text it no longer finds."""
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def copy_headers(argv, usage):
    """Copies SOURCE_INCLUDE (argv[2], default kernels/include) to
    OUT_INCLUDE (argv[1]) and returns OUT_INCLUDE; exits with `usage`
    on other arguments."""
    if len(argv) not in (2, 3):
        sys.exit(usage)
    out = argv[1]
    source = argv[2] if len(argv) == 3 else os.path.join(
        ROOT, 'kernels/include')
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(source, out)
    return out


def replace_once(tool, path, text, anchor, replacement):
    """`text` (the contents of `path`) with its one `anchor` replaced."""
    if text.count(anchor) != 1:
        sys.exit('%s: %s has %d occurrences of the text below, not one; '
                 'update this script\'s anchors to the kernel:\n%s'
                 % (tool, path, text.count(anchor), anchor))
    return text.replace(anchor, replacement)


def patch_header(tool, out, relative, pairs):
    """Replaces in OUT_INCLUDE's header `relative` each (anchor,
    replacement) of `pairs`, every anchor required exactly once."""
    path = os.path.join(out, relative)
    text = open(path).read()
    for anchor, replacement in pairs:
        text = replace_once(tool, path, text, anchor, replacement)
    open(path, 'w').write(text)
