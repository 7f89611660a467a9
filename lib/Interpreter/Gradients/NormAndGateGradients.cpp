//===- NormAndGateGradients.cpp - VJPs of the per-row ops -----------------===//
//
// The L2 norm, the gates and the gated RMSNorm act on one row (or one
// element) at a time, so their VJPs are closed-form per row; the formulas
// are derived next to each loop. Parameters shared by all rows (A_log,
// dt_bias, the norm weight) sum their cotangents over rows in row order.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceGradients.h"

#include <cmath>

using namespace mlir::gdn::interp;

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Tensor mlir::gdn::interp::l2normVJP(const Tensor &x, double eps,
                                    const Tensor &dy) {
  Tensor dx = zerosLike(x);
  const int64_t dim = x.getShape().back();
  const int64_t rows = dim == 0 ? 0 : x.getNumElements() / dim;
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.getData() + row * dim;
    const double *dout = dy.getData() + row * dim;
    // y = x r with r = (sum x^2 + eps)^-1/2 and dr/dx_j = -r^3 x_j, so
    // dx_j = r dy_j - r^3 x_j (x . dy).
    double sumSquares = 0.0, projection = 0.0;
    for (int64_t i = 0; i < dim; ++i) {
      sumSquares += in[i] * in[i];
      projection += in[i] * dout[i];
    }
    const double r = 1.0 / std::sqrt(sumSquares + eps);
    for (int64_t i = 0; i < dim; ++i)
      dx.getData()[row * dim + i] =
          r * dout[i] - r * r * r * in[i] * projection;
  }
  return dx;
}

GatesGradients mlir::gdn::interp::gatesVJP(
    const Tensor &a, const Tensor &b, const Tensor &aLog, const Tensor &dtBias,
    bool allowNegEigval, const Tensor *dg, const Tensor *dbeta) {
  const int64_t tokens = a.getDimSize(0), heads = a.getDimSize(1);
  GatesGradients grads{zerosLike(a), zerosLike(b), zerosLike(aLog),
                       zerosLike(dtBias)};
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t i = t * heads + h;
      if (dg) {
        // g = -exp(A_log) softplus(u), u = a + dt_bias: dg/dA_log = g and
        // dg/du = -exp(A_log) softplus'(u), where softplus' is sigmoid below
        // the threshold of 20 and 1 above it (softplus is the identity there).
        const double u = a.getData()[i] + dtBias.getData()[h];
        const double rate = std::exp(aLog.getData()[h]);
        const double softplus = u > 20.0 ? u : std::log1p(std::exp(u));
        const double slope = u > 20.0 ? 1.0 : sigmoid(u);
        const double cotangent = dg->getData()[i];
        grads.daLog.getData()[h] += cotangent * (-rate * softplus);
        const double du = cotangent * (-rate * slope);
        grads.da.getData()[i] = du;
        grads.ddtBias.getData()[h] += du;
      }
      if (dbeta) {
        // beta = c sigmoid(b), c = 1 or 2: dbeta/db = c s (1 - s).
        const double s = sigmoid(b.getData()[i]);
        grads.db.getData()[i] =
            dbeta->getData()[i] * (allowNegEigval ? 2.0 : 1.0) * s * (1.0 - s);
      }
    }
  return grads;
}

GatedRMSNormGradients mlir::gdn::interp::gatedRMSNormVJP(const Tensor &x,
                                                         const Tensor &z,
                                                         const Tensor &weight,
                                                         double eps,
                                                         const Tensor &dy) {
  GatedRMSNormGradients grads{zerosLike(x), zerosLike(z), zerosLike(weight)};
  const int64_t dim = x.getShape().back();
  const int64_t rows = dim == 0 ? 0 : x.getNumElements() / dim;
  std::vector<double> dnormed(dim);
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.getData() + row * dim;
    const double *gate = z.getData() + row * dim;
    const double *dout = dy.getData() + row * dim;
    double sumSquares = 0.0;
    for (int64_t i = 0; i < dim; ++i)
      sumSquares += in[i] * in[i];
    const double r = 1.0 / std::sqrt(sumSquares / dim + eps);
    // y_i = w_i n_i silu(z_i) with n_i = x_i r.
    double projection = 0.0; // x . dn
    for (int64_t i = 0; i < dim; ++i) {
      const double s = sigmoid(gate[i]), silu = gate[i] * s;
      const double normed = in[i] * r, w = weight.getData()[i];
      grads.dweight.getData()[i] += dout[i] * normed * silu;
      grads.dz.getData()[row * dim + i] =
          dout[i] * w * normed * s * (1.0 + gate[i] * (1.0 - s));
      dnormed[i] = dout[i] * w * silu;
      projection += in[i] * dnormed[i];
    }
    // r = (sum x^2 / D + eps)^-1/2, dr/dx_j = -r^3 x_j / D, so
    // dx_j = r dn_j - r^3 x_j (x . dn) / D.
    for (int64_t i = 0; i < dim; ++i)
      grads.dx.getData()[row * dim + i] =
          r * dnormed[i] - r * r * r * in[i] * projection / dim;
  }
  return grads;
}
