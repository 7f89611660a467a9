//===- Gdn.td - umbrella for the gdn dialect ---------------*- tablegen -*-===//
//
// Includes every part of the gdn dialect; the documentation is generated from
// this file so that it covers types, attributes and ops in one page.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDN_TD
#define GDN_DIALECT_GDN_GDN_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "gdn/Dialect/Gdn/IR/GdnAttributes.td"
include "gdn/Dialect/Gdn/IR/GdnTypes.td"
include "gdn/Dialect/Gdn/IR/GdnOps.td"
include "gdn/Dialect/Gdn/IR/GdnGradientOps.td"

#endif // GDN_DIALECT_GDN_GDN_TD
