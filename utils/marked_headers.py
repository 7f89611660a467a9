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


# The marks of fused-phase-profile.py and fused-backward-phase-profile.py:
# GDN_PROFILE_MARK(slot) adds the cycles since the thread's previous mark
# (profT) to gdnProf[slot], in block 0 and where profLeader holds. It goes
# before the header's first `namespace gdn {` (this text replaces it).
PROFILE_MARK_MACRO = '''
#define GDN_PROFILE_MARK(slot)                                                 \\
  do {                                                                         \\
    if (blockIdx.x == 0 && profLeader) {                                       \\
      const unsigned long long now_ = clock64();                               \\
      atomicAdd(&gdnProf[slot], now_ - profT);                                 \\
      profT = now_;                                                            \\
    }                                                                          \\
  } while (0)
namespace gdn {
namespace device {
'''
