// Host stand-in: see emulated_cuda.h.
#include "emulated_cuda.h"
