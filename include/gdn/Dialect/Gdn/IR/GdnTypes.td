//===- GdnTypes.td - gdn types -----------------------------*- tablegen -*-===//
//
// The packing type: packed-sequence metadata as a first-class value. Its static
// parameters (sequence count, token count, padding, maximum length) let the
// verifier relate activations and states to the packing they belong to.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNTYPES_TD
#define GDN_DIALECT_GDN_GDNTYPES_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Gdn_PackingType : TypeDef<Gdn_Dialect, "Packing"> {
  let mnemonic = "packing";
  let summary = "packed-sequence metadata (cu_seqlens, optional padded offsets)";
  let description = [{
    Describes how `seqs` sequences are packed into a buffer of `tokens` rows.
    Either count may be `?` when only known at run time.

    * `padded`: the packing also carries `cu_padded`; sequence `i` occupies
      the slot `[cu_padded[i], cu_padded[i+1])` of the buffer and its real
      tokens are the first `cu_seqlens[i+1] - cu_seqlens[i]` of that slot.
      `tokens` is then the buffer size `cu_padded[N]`.
    * `max_len`: a static upper bound on every sequence's real length, which
      kernels may use to size their work.

    ```mlir
    !gdn.packing<seqs = 8, tokens = 530>
    !gdn.packing<seqs = ?, tokens = ?, padded, max_len = 4096>
    ```
  }];
  let parameters = (ins "int64_t":$seqs, "int64_t":$tokens, "bool":$padded,
                        "int64_t":$maxLen);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilder<(ins "int64_t":$seqs, "int64_t":$tokens), [{
      return $_get($_ctxt, seqs, tokens, /*padded=*/false,
                   ::mlir::ShapedType::kDynamic);
    }]>
  ];
  let extraClassDeclaration = [{
    bool hasStaticSeqs() const { return !::mlir::ShapedType::isDynamic(getSeqs()); }
    bool hasStaticTokens() const { return !::mlir::ShapedType::isDynamic(getTokens()); }
    bool hasMaxLen() const { return !::mlir::ShapedType::isDynamic(getMaxLen()); }
  }];
}

#endif // GDN_DIALECT_GDN_GDNTYPES_TD
