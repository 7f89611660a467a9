#===- __main__.py - python -m gdn_torch: compile specs, fill a cache ------===#
#
# The compiler's half of gdn_torch on the command line (compiler.main):
# needs the compiler (gdn-opt, gdn-translate, nvcc), not torch.
#
#===------------------------------------------------------------------------===#

import sys

from .compiler import main

sys.exit(main())
