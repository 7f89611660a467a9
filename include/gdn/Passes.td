//===- Passes.td - every gdn pass, for the C API ------------*- tablegen -*-===//
//
// The passes of every level in one record set: the C API's
// mlirCreateGdnTransforms<Pass>() and mlirRegisterGdnTransformsPasses() are
// generated from it. Each level's passes are declared in its own Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_PASSES_TD
#define GDN_PASSES_TD

include "gdn/Dialect/Gdn/Transforms/Passes.td"
include "gdn/Dialect/GdnComm/Transforms/Passes.td"
include "gdn/Conversion/Passes.td"
include "gdn/Dialect/GdnKernel/Transforms/Passes.td"

#endif // GDN_PASSES_TD
