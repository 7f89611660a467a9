//===- Gdn.td - umbrella for the gdn dialect ---------------*- tablegen -*-===//
//
// Includes every part of the gdn dialect; the documentation is generated from
// this file so that it covers types, attributes and ops in one page.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDN_TD
#define GDN_DIALECT_GDN_GDN_TD

include "Gdn/GdnDialect.td"
include "Gdn/GdnAttributes.td"
include "Gdn/GdnTypes.td"
include "Gdn/GdnOps.td"
include "Gdn/GdnGradientOps.td"

#endif // GDN_DIALECT_GDN_GDN_TD
