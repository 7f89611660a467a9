//===- ExpandLayer.cpp - gdn.layer to primitive ops -----------------------===//
//
// Implements gdn-expand-layer: the dataflow of a GatedDeltaNet block written
// once, for the Qwen3-Next (interleaved qkvz/ba) and Qwen3.5 (separate
// projections) layouts. Every activation keeps the layer's sequence layout,
// and the packing is threaded into the conv and the delta rule, so the
// expanded program cannot leak tokens across sequences.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNEXPANDLAYER
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// Builds the primitive ops of one layer. Activations are `[T, ...]` tensors
/// with the element type and layout of the layer's input.
class LayerExpander {
public:
  LayerExpander(LayerOp layer, OpBuilder &builder, bool f32Projections)
      : layer(layer), builder(builder), loc(layer.getLoc()),
        input(layer.getX().getType()) {
    // The verifier lets a dynamic token count on x stand for y's static one
    // (or the reverse); the expanded activations take whichever is known.
    tokens = input.getDimSize(0);
    if (ShapedType::isDynamic(tokens))
      tokens = layer.getY().getType().getDimSize(0);
    // Gates and states are fp32, or f64 in f64 reference programs.
    stateElement = input.getElementType().isF64() ? Type(builder.getF64Type())
                                                  : Type(builder.getF32Type());
    // Wider storage only: an f64 layer keeps f64.
    projectionElement = input.getElementType();
    if (f32Projections && projectionElement.getIntOrFloatBitWidth() < 32)
      projectionElement = builder.getF32Type();
  }

  /// y, then the conv's and the delta rule's final states when the layer
  /// has them.
  SmallVector<Value> expand() {
    LayerOp::Weights w = layer.getWeightsByRole();
    int64_t keyHeads = layer.getKeyHeads(), valueHeads = layer.getValueHeads();
    int64_t headDimK = layer.getHeadDimK(), headDimV = layer.getHeadDimV();
    int64_t channels = layer.getConvChannels();
    Value x = layer.getX(), packing = layer.getPacking();

    Value mixed, z, b, a;
    if (layer.getProjections() == Projections::Qwen3Next) {
      Value qkvz =
          projection(x, w.inProjQkvz,
                     {2 * keyHeads * headDimK + 2 * valueHeads * headDimV});
      Value ba = linear(x, w.inProjBa, {2 * valueHeads});
      auto split = SplitQkvzOp::create(
          builder, loc, projected({channels}),
          projected({valueHeads, headDimV}), activation({valueHeads}),
          activation({valueHeads}), qkvz, ba, keyHeads, headDimK);
      mixed = split.getMixedQkv();
      z = split.getZ();
      b = split.getB();
      a = split.getA();
    } else {
      mixed = projection(x, w.inProjQkv, {channels});
      z = projection(x, w.inProjZ, {valueHeads, headDimV});
      b = linear(x, w.inProjB, {valueHeads});
      a = linear(x, w.inProjA, {valueHeads});
    }

    // A layer with states threads them into the conv and the delta rule.
    Value convFinal = layer.getConvFinalState();
    auto convOp = CausalConv1dOp::create(
        builder, loc, activation({channels}),
        convFinal ? convFinal.getType() : Type(), mixed, w.conv, packing,
        /*bias=*/Value(), layer.getConvInitialState(), layer.getConvWidth(),
        Activation::Silu);
    Value conv = convOp.getY();
    auto qkv =
        SplitQkvOp::create(builder, loc, activation({keyHeads, headDimK}),
                           activation({keyHeads, headDimK}),
                           activation({valueHeads, headDimV}), conv);
    // docs/spec.md fixes the q/k l2norm epsilon at 1e-6 (inside the root).
    FloatAttr l2normEps = builder.getF64FloatAttr(1e-6);
    Value q = L2NormOp::create(builder, loc, qkv.getQ(), l2normEps);
    Value k = L2NormOp::create(builder, loc, qkv.getK(), l2normEps);
    auto gates =
        GatesOp::create(builder, loc, gate({valueHeads}), gate({valueHeads}), a,
                        b, w.aLog, w.dtBias, layer.getAllowNegEigval());

    int64_t seqs = cast<PackingType>(packing.getType()).getSeqs();
    Type stateType = layer.getDeltaFinalState()
                         ? layer.getDeltaFinalState().getType()
                         : Type(RankedTensorType::get(
                               {seqs, valueHeads, headDimK, headDimV},
                               stateElement));
    auto delta = DeltaRuleOp::create(
        builder, loc, activation({valueHeads, headDimV}), stateType, q, k,
        qkv.getV(), gates.getG(), gates.getBeta(), packing,
        layer.getDeltaInitialState(), layer.getScaleAttr(),
        layer.getChunkSizeAttr());
    Value normed =
        GatedRMSNormOp::create(builder, loc, activation({valueHeads, headDimV}),
                               delta.getO(), z, w.norm, layer.getNormEpsAttr());
    // The output takes y's exact type, so the layer's users see no change
    // (y may spell the layout differently, e.g. #gdn.seq<natural>).
    SmallVector<Value> results{LinearOp::create(
        builder, loc, layer.getY().getType(), normed, w.outProj)};
    if (convFinal)
      results.append({convOp.getFinalState(), delta.getFinalState()});
    return results;
  }

private:
  /// A `[T, features...]` activation type in the layer's dtype and layout.
  RankedTensorType activation(ArrayRef<int64_t> features) {
    return tokenTensor(features, input.getElementType());
  }
  /// A `[T, features...]` gate type (fp32) in the layer's layout.
  RankedTensorType gate(ArrayRef<int64_t> features) {
    return tokenTensor(features, stateElement);
  }
  RankedTensorType tokenTensor(ArrayRef<int64_t> features, Type element) {
    SmallVector<int64_t> shape{tokens};
    shape.append(features.begin(), features.end());
    return RankedTensorType::get(shape, element, input.getEncoding());
  }
  /// A `[T, features...]` type for the outputs of projection() (the conv's
  /// input and the gate z): f32 with f32-projections, else the layer's.
  RankedTensorType projected(ArrayRef<int64_t> features) {
    return tokenTensor(features, projectionElement);
  }
  Value linear(Value x, Value weight, ArrayRef<int64_t> features) {
    return LinearOp::create(builder, loc, activation(features), x, weight);
  }
  Value projection(Value x, Value weight, ArrayRef<int64_t> features) {
    return LinearOp::create(builder, loc, projected(features), x, weight);
  }

  LayerOp layer;
  OpBuilder &builder;
  Location loc;
  RankedTensorType input;
  /// Token count of every activation: x's, or y's when x's is dynamic.
  int64_t tokens;
  Type stateElement;
  Type projectionElement;
};

struct GdnExpandLayerPass
    : public mlir::gdn::impl::GdnExpandLayerBase<GdnExpandLayerPass> {
  using GdnExpandLayerBase::GdnExpandLayerBase;
  void runOnOperation() override {
    SmallVector<LayerOp> layers;
    getOperation()->walk([&](LayerOp layer) { layers.push_back(layer); });
    IRRewriter rewriter(&getContext());
    for (LayerOp layer : layers) {
      rewriter.setInsertionPoint(layer);
      SmallVector<Value> results =
          LayerExpander(layer, rewriter, f32Projections).expand();
      rewriter.replaceOp(layer, results);
      ++numLayersExpanded;
    }
  }
};

} // namespace
