//===- GdnDialect.td - the gdn dialect definition ----------*- tablegen -*-===//
//
// The gdn dialect models Gated DeltaNet layers over packed sequences. It is the
// level at which docs/spec.md is stated: every op here computes exactly the
// function written there, and the reference interpreter executes these ops.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNDIALECT_TD
#define GDN_DIALECT_GDN_GDNDIALECT_TD

include "mlir/IR/OpBase.td"

def Gdn_Dialect : Dialect {
  let name = "gdn";
  let summary = "Gated DeltaNet layers over packed (THD) sequences";
  let description = [{
    The `gdn` dialect describes the Gated DeltaNet (GDN) layers of hybrid models
    such as Qwen3-Next and Qwen3.5, as used in training with packed sequences.

    Three ideas shape it:

    * Packed-sequence metadata is a typed value, `!gdn.packing`, built from
      `cu_seqlens` (and optionally the padded offsets). Every op that mixes
      tokens over time (`gdn.causal_conv1d`, `gdn.delta_rule`) takes it as an
      operand, so forgetting the sequence boundaries does not verify.
    * How a tensor is distributed along tokens (natural order, a contiguous
      shard, a zigzag shard) or heads is part of its type, as a tensor
      encoding (`#gdn.seq`, `#gdn.heads`). Mixing layouts is a type error.
    * The composite `gdn.layer` describes a whole GatedDeltaNet block with its
      weights as operands; `gdn-expand-layer` rewrites it into the primitive
      ops, for both the Qwen3-Next and the Qwen3.5 projection layouts.

    Activations are packed: a tensor `[T, ...]` holds the tokens of all
    sequences one after another, with no batch dimension.
  }];
  let cppNamespace = "::mlir::gdn";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = [];
  let extraClassDeclaration = [{
  private:
    // Defined next to the storage classes they need (GdnAttributes.cpp,
    // GdnTypes.cpp).
    void registerAttributes();
    void registerTypes();
  }];
}

class Gdn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Gdn_Dialect, mnemonic, traits>;

#endif // GDN_DIALECT_GDN_GDNDIALECT_TD
