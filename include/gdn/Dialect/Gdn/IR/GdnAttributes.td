//===- GdnAttributes.td - gdn enums and attributes ---------*- tablegen -*-===//
//
// Attributes of the gdn dialect: the activation and projection-layout enums,
// and the tensor encodings that put a tensor's distribution across ranks into
// its type, so that layout mismatches are caught by the verifier.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNATTRIBUTES_TD
#define GDN_DIALECT_GDN_GDNATTRIBUTES_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/TensorEncoding.td"
include "mlir/IR/EnumAttr.td"

class Gdn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Gdn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Gdn_Activation : I32Enum<"Activation", "activation after the causal conv", [
  I32EnumCase<"None", 0, "none">,
  I32EnumCase<"Silu", 1, "silu">
]> {
  let cppNamespace = "::mlir::gdn";
}

def Gdn_ActivationAttr : EnumAttr<Gdn_Dialect, Gdn_Activation, "act"> {
  let assemblyFormat = "`<` $value `>`";
}

def Gdn_Projections : I32Enum<"Projections", "input projection layout of a GDN layer", [
  I32EnumCase<"Qwen3Next", 0, "qwen3_next">,
  I32EnumCase<"Qwen3_5", 1, "qwen3_5">
]> {
  let cppNamespace = "::mlir::gdn";
}

def Gdn_ProjectionsAttr : EnumAttr<Gdn_Dialect, Gdn_Projections, "projections"> {
  let assemblyFormat = "`<` $value `>`";
}

def Gdn_SeqLayoutKind : I32Enum<"SeqLayoutKind", "distribution of tokens across ranks", [
  I32EnumCase<"Natural", 0, "natural">,
  I32EnumCase<"Contiguous", 1, "contiguous">,
  I32EnumCase<"Zigzag", 2, "zigzag">
]> {
  let cppNamespace = "::mlir::gdn";
}

//===----------------------------------------------------------------------===//
// Tensor encodings
//===----------------------------------------------------------------------===//

def Gdn_SeqLayoutAttr : Gdn_Attr<"SeqLayout", "seq",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "how the tokens (dimension 0) of a tensor are spread over ranks";
  let description = [{
    A tensor encoding for packed activations `[T, ...]`:

    * `natural`: all tokens, in packing order (the same as no encoding).
    * `contiguous, ranks = P`: this rank's contiguous slice of `T / P` tokens.
    * `zigzag, ranks = P`: every sequence is cut into `2P` equal pieces and
      rank `r` holds pieces `r` and `2P - 1 - r` of each sequence, so causal
      work is balanced. Needs every sequence length to be a multiple of `2P`.
    * `zigzag, ranks = P, inner = S`: sequence parallelism inside zigzag
      context parallelism. Each of the `P` zigzag shards is cut into `S`
      contiguous pieces; of the `S * P` ranks (SP innermost), rank
      `c * S + s` holds piece `s` of zigzag shard `c`. Gathering over the SP
      group of `S` ranks gives back the zigzag shard. (Contiguous shards
      nest without this: contiguous over `S * P` ranks.)

    ```mlir
    tensor<2048x8192xbf16, #gdn.seq<zigzag, ranks = 4>>
    ```

    Ops of the gdn dialect require all their activation operands and results
    to share one layout; builtin ops such as `arith.addf` require equal types,
    so adding a zigzag shard to a naturally ordered tensor does not verify.
  }];
  let parameters = (ins EnumParameter<Gdn_SeqLayoutKind>:$kind,
                        DefaultValuedParameter<"int64_t", "1">:$ranks,
                        DefaultValuedParameter<"int64_t", "1">:$inner);
  let builders = [
    AttrBuilder<(ins "SeqLayoutKind":$kind, "int64_t":$ranks), [{
      return $_get($_ctxt, kind, ranks, 1);
    }]>
  ];
  let assemblyFormat =
      "`<` $kind (`,` `ranks` `=` $ranks^)? (`,` `inner` `=` $inner^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True when the tensor holds only this rank's share of the tokens.
    bool isSharded() const { return getKind() != SeqLayoutKind::Natural; }
    /// All ranks the tokens are spread over: `ranks * inner`.
    int64_t getTotalRanks() const { return getRanks() * getInner(); }
  }];
}

def Gdn_HeadsLayoutAttr : Gdn_Attr<"HeadsLayout", "heads",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "all tokens, this rank's share of the heads (dimension 1)";
  let description = [{
    The layout after the headwise (Ulysses) all-to-all of context
    parallelism: every rank holds all `T` tokens, in natural packing order,
    for `H / P` of the heads.

    ```mlir
    tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
    ```
  }];
  let parameters = (ins "int64_t":$ranks);
  let assemblyFormat = "`<` `ranks` `=` $ranks `>`";
  let genVerifyDecl = 1;
}

#endif // GDN_DIALECT_GDN_GDNATTRIBUTES_TD
