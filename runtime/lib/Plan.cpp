//===- Plan.cpp - where every byte of a gdn_comm collective goes ----------===//
//
// A dimension `dim` of a row-major tensor splits it into `outer` rows (the
// product of the dimensions before it) of `inner` bytes (the dimension and
// everything after it). Cutting or concatenating P pieces along `dim` is
// then a strided copy of `outer` rows: piece i lives at byte i * B of every
// row of P * B bytes. When `outer` is 1 the pieces are contiguous and NCCL
// reads and writes the tensors directly; otherwise the pieces go through the
// workspace, packed one after the other.
//
//===----------------------------------------------------------------------===//

#include "Plan.h"

#include "gdn/runtime/host_checks.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace gdnrt {

size_t elementBytes(gdn_dtype_t dtype) {
  return dtype >= GDN_BF16 && dtype <= GDN_I64 ? gdn::elementBytes(dtype) : 0;
}

size_t onesOffset(gdn_dtype_t dtype) {
  // bf16, f16, f32, f64 blocks in that order; each size is a multiple of
  // 256 bytes, so every block starts aligned.
  switch (dtype) {
  case GDN_BF16:
    return 0;
  case GDN_F16:
    return 2 * kOnes;
  case GDN_F32:
    return 4 * kOnes;
  default:
    return 8 * kOnes;
  }
}

size_t onesBytes() { return 16 * kOnes; }

void writeOnes(char *image) {
  const uint16_t bf16 = 0x3f80, f16 = 0x3c00; // 1.0 in each
  const float f32 = 1.0f;
  const double f64 = 1.0;
  for (int64_t i = 0; i < kOnes; ++i) {
    std::memcpy(image + onesOffset(GDN_BF16) + 2 * i, &bf16, 2);
    std::memcpy(image + onesOffset(GDN_F16) + 2 * i, &f16, 2);
    std::memcpy(image + onesOffset(GDN_F32) + 4 * i, &f32, 4);
    std::memcpy(image + onesOffset(GDN_F64) + 8 * i, &f64, 8);
  }
}

Shape Shape::of(const gdn_tensor_t &tensor) {
  Shape shape;
  for (int32_t d = 0; d < tensor.rank && d < GDN_MAX_RANK; ++d)
    shape.dims.push_back(tensor.shape[d]);
  shape.elementBytes = gdnrt::elementBytes(tensor.dtype);
  return shape;
}

int64_t Shape::product(size_t from, size_t to) const {
  int64_t result = 1;
  for (size_t d = from; d < to && d < dims.size(); ++d)
    result *= dims[d];
  return result;
}

void Plan::copy(Address dst, size_t dstPitch, Address src, size_t srcPitch,
                size_t width, size_t height) {
  if (width == 0 || height == 0)
    return;
  Step step;
  step.kind = Step::Copy;
  step.copy = {dst, dstPitch, src, srcPitch, width, height};
  steps.push_back(step);
}

void Plan::zero(Address dst, size_t bytes) {
  if (bytes == 0)
    return;
  Step step;
  step.kind = Step::Zero;
  step.zero = {dst, bytes};
  steps.push_back(step);
}

Group &Plan::communicate() {
  Step step;
  step.kind = Step::Communicate;
  steps.push_back(step);
  return steps.back().group;
}

void Plan::gemm(const BatchedGemm &gemm) {
  Step step;
  step.kind = Step::Gemm;
  step.gemm = gemm;
  steps.push_back(step);
}

void sumRows(Plan &plan, Address rows, int64_t count, int64_t elements,
             gdn_dtype_t dtype, Address out) {
  // out (1 x elements) = ones (1 x count) * rows (count x elements): every
  // element's terms are added in one GEMM with one rounding. Past kOnes
  // rows the next GEMM accumulates onto the first's (rounded) result.
  const size_t rowBytes = elements * elementBytes(dtype);
  for (int64_t first = 0; first < count; first += kOnes) {
    const int64_t k = std::min(kOnes, count - first);
    plan.gemm({{Buffer::Ones, onesOffset(dtype)},
               {rows.buffer, rows.offset + first * rowBytes},
               out,
               out,
               1,
               elements,
               k,
               1,
               0,
               0,
               0,
               0,
               first > 0,
               dtype});
  }
}

namespace {

std::string describe(const std::vector<int64_t> &dims) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < dims.size(); ++d)
    os << (d ? ", " : "") << dims[d];
  os << "]";
  return os.str();
}

/// Checks that `rank` is one of `ranks`.
bool checkGroup(int ranks, int rank, std::string &error) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    error = "rank " + std::to_string(rank) + " is not in a group of " +
            std::to_string(ranks) + " ranks";
    return false;
  }
  return true;
}

/// Checks `ranks`, `rank`, and that `dim` indexes `shape`.
bool checkGroupAndDim(const Shape &shape, int ranks, int rank, int dim,
                      const char *dimName, std::string &error) {
  if (!checkGroup(ranks, rank, error))
    return false;
  if (dim < 0 || static_cast<size_t>(dim) >= shape.dims.size()) {
    error = std::string(dimName) + " " + std::to_string(dim) +
            " is out of range for a tensor of rank " +
            std::to_string(shape.dims.size());
    return false;
  }
  return true;
}

/// Checks that `actual` is `expected` (shape and element size).
bool checkOutput(const Shape &actual, const Shape &expected, const char *what,
                 const std::string &because, std::string &error) {
  if (actual.elementBytes != expected.elementBytes) {
    error = std::string("the ") + what +
            " has another element type than the input; " + because +
            " keeps it";
    return false;
  }
  if (actual.dims != expected.dims) {
    error = std::string("the ") + what + " has shape " +
            describe(actual.dims) + " but " + because + " gives " +
            describe(expected.dims);
    return false;
  }
  return true;
}

bool checkDivisible(const Shape &shape, int dim, int ranks, const char *what,
                    std::string &error) {
  if (shape.dims[dim] % ranks != 0) {
    error = std::string("the ") + what + " " + describe(shape.dims) +
            " has " + std::to_string(shape.dims[dim]) + " entries along dim " +
            std::to_string(dim) + ", not a multiple of the " +
            std::to_string(ranks) + " ranks";
    return false;
  }
  return true;
}

std::string opText(const char *op, const Shape &input, int ranks, int dim) {
  return std::string(op) + " of " + describe(input.dims) + " over " +
         std::to_string(ranks) + " ranks along dim " + std::to_string(dim);
}

/// The view of an op that cuts `input` into `ranks` pieces along `dim`
/// (one piece per rank, `output` the rank's): `outer` rows, pieces of
/// `piece` bytes per row. Checks the shapes first.
bool splitView(const Shape &input, const Shape &output, int ranks, int rank,
               int dim, const char *op, size_t &outer, size_t &piece,
               std::string &error) {
  if (!checkGroupAndDim(input, ranks, rank, dim, "dim", error) ||
      !checkDivisible(input, dim, ranks, "input", error))
    return false;
  Shape expected = input;
  expected.dims[dim] /= ranks;
  if (!checkOutput(output, expected, "output",
                   opText(op, input, ranks, dim), error))
    return false;
  outer = input.product(0, dim);
  piece = expected.product(dim, expected.dims.size()) * input.elementBytes;
  return true;
}

} // namespace

bool planAllGather(const Shape &input, const Shape &output, int ranks,
                   int rank, int dim, Plan &plan, std::string &error) {
  if (!checkGroupAndDim(input, ranks, rank, dim, "dim", error))
    return false;
  Shape expected = input;
  expected.dims[dim] *= ranks;
  if (!checkOutput(output, expected, "output",
                   opText("all_gather", input, ranks, dim), error))
    return false;
  const size_t outer = input.product(0, dim);
  const size_t piece = input.product(dim, input.dims.size()) *
                       input.elementBytes;
  if (outer <= 1) {
    plan.communicate().messages.push_back(
        {Message::AllGather, {Buffer::Input}, {Buffer::Output}, outer * piece});
    return true;
  }
  const size_t pieceBytes = outer * piece;
  plan.workspaceBytes = ranks * pieceBytes;
  plan.communicate().messages.push_back(
      {Message::AllGather, {Buffer::Input}, {Buffer::Workspace}, pieceBytes});
  for (int i = 0; i < ranks; ++i)
    plan.copy({Buffer::Output, i * piece}, ranks * piece,
              {Buffer::Workspace, i * pieceBytes}, piece, piece, outer);
  return true;
}

bool planReduceScatter(const Shape &input, const Shape &output, int ranks,
                       int rank, int dim, gdn_dtype_t dtype, Plan &plan,
                       std::string &error) {
  size_t outer, piece;
  if (!splitView(input, output, ranks, rank, dim, "reduce_scatter", outer,
                 piece, error))
    return false;
  Message message{Message::ReduceScatter, {Buffer::Input}, {Buffer::Output},
                  outer * piece};
  message.dtype = dtype;
  if (outer > 1) {
    const size_t pieceBytes = outer * piece;
    plan.workspaceBytes = ranks * pieceBytes;
    for (int i = 0; i < ranks; ++i)
      plan.copy({Buffer::Workspace, i * pieceBytes}, piece,
                {Buffer::Input, i * piece}, ranks * piece, piece, outer);
    message.buffer = {Buffer::Workspace};
  }
  plan.communicate().messages.push_back(message);
  return true;
}

bool planAllToAll(const Shape &input, const Shape &output, int ranks,
                  int rank, int splitDim, int concatDim, Plan &plan,
                  std::string &error) {
  if (!checkGroupAndDim(input, ranks, rank, splitDim, "split_dim", error) ||
      !checkGroupAndDim(input, ranks, rank, concatDim, "concat_dim", error) ||
      !checkDivisible(input, splitDim, ranks, "input", error))
    return false;
  Shape piece = input;
  piece.dims[splitDim] /= ranks;
  Shape expected = piece;
  expected.dims[concatDim] *= ranks;
  if (!checkOutput(output, expected, "output",
                   "all_to_all of " + describe(input.dims) + " over " +
                       std::to_string(ranks) + " ranks from split_dim " +
                       std::to_string(splitDim) + " to concat_dim " +
                       std::to_string(concatDim),
                   error))
    return false;
  const size_t n = input.dims.size();
  const size_t outerSplit = input.product(0, splitDim);
  const size_t rowSplit = piece.product(splitDim, n) * input.elementBytes;
  const size_t outerConcat = piece.product(0, concatDim);
  const size_t rowConcat = piece.product(concatDim, n) * input.elementBytes;
  const size_t pieceBytes = outerSplit * rowSplit;

  // Pieces to send: straight from the input when they are contiguous.
  auto sendAddress = [&](int j) -> Address {
    return outerSplit <= 1 ? Address{Buffer::Input, j * rowSplit}
                           : Address{Buffer::Workspace, j * pieceBytes};
  };
  const size_t recvBase = outerSplit <= 1 ? 0 : ranks * pieceBytes;
  auto recvAddress = [&](int i) -> Address {
    return outerConcat <= 1
               ? Address{Buffer::Output, i * rowConcat}
               : Address{Buffer::Workspace, recvBase + i * pieceBytes};
  };
  plan.workspaceBytes = recvBase + (outerConcat <= 1 ? 0 : ranks * pieceBytes);
  if (outerSplit > 1)
    for (int j = 0; j < ranks; ++j)
      plan.copy(sendAddress(j), rowSplit, {Buffer::Input, j * rowSplit},
                ranks * rowSplit, rowSplit, outerSplit);
  Group &group = plan.communicate();
  for (int j = 0; j < ranks; ++j) {
    group.messages.push_back(
        {Message::Send, sendAddress(j), {Buffer::Input}, pieceBytes, j});
    group.messages.push_back(
        {Message::Recv, recvAddress(j), {Buffer::Input}, pieceBytes, j});
  }
  if (outerConcat > 1)
    for (int i = 0; i < ranks; ++i)
      plan.copy({Buffer::Output, i * rowConcat}, ranks * rowConcat,
                recvAddress(i), rowConcat, rowConcat, outerConcat);
  return true;
}

bool planHaloExchange(const Shape &input, const Shape &output, int ranks,
                      int rank, Plan &plan, std::string &error) {
  if (!checkGroupAndDim(input, ranks, rank, 0, "dim", error))
    return false;
  if (output.dims.size() != input.dims.size() ||
      output.elementBytes != input.elementBytes ||
      !std::equal(input.dims.begin() + 1, input.dims.end(),
                  output.dims.begin() + 1)) {
    std::vector<int64_t> rows = input.dims;
    if (!rows.empty())
      rows[0] = output.dims.empty() ? 0 : output.dims[0];
    error = "the halo has shape " + describe(output.dims) +
            " but the rows of the shard " + describe(input.dims) + " give " +
            describe(rows) + " (and the input's element type)";
    return false;
  }
  const int64_t shard = input.dims[0], halo = output.dims[0];
  const size_t row = input.product(1, input.dims.size()) * input.elementBytes;
  const int64_t first = rank * shard; // this shard's first buffer row
  // Rows before the buffer's first row are zeros.
  plan.zero({Buffer::Output}, std::min(halo, std::max<int64_t>(0, halo - first)) *
                                  row);
  Group &group = plan.communicate();
  if (shard == 0 || halo == 0 || row == 0)
    return true;
  // The rows of rank q's shard [q*n, (q+1)*n) that rank t needs:
  // [max(q*n, t*n - h), min((q+1)*n, t*n)).
  auto segment = [&](int64_t q, int64_t t) {
    return std::make_pair(std::max(q * shard, t * shard - halo),
                          std::min((q + 1) * shard, t * shard));
  };
  for (int64_t q = 0; q < rank; ++q) {
    auto [begin, end] = segment(q, rank);
    if (begin < end)
      group.messages.push_back({Message::Recv,
                                {Buffer::Output,
                                 static_cast<size_t>(begin - (first - halo)) * row},
                                {Buffer::Output},
                                static_cast<size_t>(end - begin) * row,
                                static_cast<int>(q)});
  }
  for (int64_t t = rank + 1; t < ranks; ++t) {
    auto [begin, end] = segment(rank, t);
    if (begin < end)
      group.messages.push_back(
          {Message::Send,
           {Buffer::Input, static_cast<size_t>(begin - first) * row},
           {Buffer::Input},
           static_cast<size_t>(end - begin) * row,
           static_cast<int>(t)});
  }
  return true;
}

bool planLocalShard(const Shape &input, const Shape &output, int ranks,
                    int rank, int dim, Plan &plan, std::string &error) {
  size_t outer, piece;
  if (!splitView(input, output, ranks, rank, dim, "local_shard", outer,
                 piece, error))
    return false;
  plan.copy({Buffer::Output}, piece, {Buffer::Input, rank * piece},
            ranks * piece, piece, outer);
  return true;
}

bool planStateExchange(const Shape &transition, const Shape &partial,
                       const Shape &incoming, int ranks, int rank, bool scan,
                       gdn_dtype_t dtype, Plan &plan, std::string &error) {
  if (!checkGroupAndDim(partial, ranks, rank, 0, "dim", error))
    return false;
  if (dtype != GDN_F32 && dtype != GDN_F64) {
    error = "the state summaries must be f32 or f64";
    return false;
  }
  if (partial.dims.size() != 3) {
    error = "the partial state has shape " + describe(partial.dims) +
            ", not [HV, K, V]";
    return false;
  }
  const int64_t heads = partial.dims[0], K = partial.dims[1],
                V = partial.dims[2];
  Shape expectedTransition = partial;
  expectedTransition.dims = {heads, K, K};
  if (!checkOutput(transition, expectedTransition, "transition",
                   "a partial state " + describe(partial.dims) + " ([HV, K, V])",
                   error) ||
      !checkOutput(incoming, partial, "incoming state",
                   "the partial state's shape", error))
    return false;
  const size_t e = partial.elementBytes;
  const size_t mBytes = heads * K * K * e, sBytes = heads * K * V * e;
  // S_next = M * S + S_r, per head; M_next = M_later * M_earlier.
  auto stateGemm = [&](Address m, Address s, Address add, Address out) {
    plan.gemm({m, s, add, out, K, V, K, heads,
               static_cast<size_t>(K * K), static_cast<size_t>(K * V),
               static_cast<size_t>(K * V), static_cast<size_t>(K * V), true,
               dtype});
  };
  auto transitionGemm = [&](Address later, Address earlier, Address out) {
    plan.gemm({later, earlier, later, out, K, K, K, heads,
               static_cast<size_t>(K * K), static_cast<size_t>(K * K),
               static_cast<size_t>(K * K), static_cast<size_t>(K * K), false,
               dtype});
  };
  auto copyAll = [&](Address dst, Address src, size_t bytes) {
    plan.copy(dst, bytes, src, bytes, bytes, 1);
  };

  if (!scan) {
    // Gather every summary, then fold ranks 0 .. rank-1 locally:
    // S_in(1) = S_0, S_in(j + 1) = M_j S_in(j) + S_j. The running state
    // alternates between the output and a temporary so it ends in the output.
    const Address allM{Buffer::Workspace, 0};
    const size_t allS = ranks * mBytes, temp = allS + ranks * sBytes;
    plan.workspaceBytes = temp + sBytes;
    Group &group = plan.communicate();
    group.messages.push_back(
        {Message::AllGather, {Buffer::Input}, allM, mBytes});
    group.messages.push_back({Message::AllGather,
                              {Buffer::Input2},
                              {Buffer::Workspace, allS},
                              sBytes});
    if (rank == 0) {
      plan.zero({Buffer::Output}, sBytes);
      return true;
    }
    const int gemms = rank - 1;
    Address current = gemms % 2 == 0 ? Address{Buffer::Output}
                                     : Address{Buffer::Workspace, temp};
    Address other = gemms % 2 == 0 ? Address{Buffer::Workspace, temp}
                                   : Address{Buffer::Output};
    copyAll(current, {Buffer::Workspace, allS}, sBytes);
    for (int j = 1; j < rank; ++j) {
      stateGemm({Buffer::Workspace, j * mBytes},
                current, {Buffer::Workspace, allS + j * sBytes}, other);
      std::swap(current, other);
    }
    return true;
  }

  // Log-depth (Hillis-Steele) inclusive scan of the summaries over ranks,
  // then a shift by one rank: S_in(r) is the state part of prefix r - 1.
  Address curM{Buffer::Workspace, 0}, curS{Buffer::Workspace, mBytes};
  const Address recvM{Buffer::Workspace, mBytes + sBytes},
      recvS{Buffer::Workspace, 2 * mBytes + sBytes};
  Address newM{Buffer::Workspace, 2 * mBytes + 2 * sBytes},
      newS{Buffer::Workspace, 3 * mBytes + 2 * sBytes};
  plan.workspaceBytes = 3 * (mBytes + sBytes);
  copyAll(curM, {Buffer::Input}, mBytes);
  copyAll(curS, {Buffer::Input2}, sBytes);
  for (int step = 1; step < ranks; step *= 2) {
    Group &group = plan.communicate();
    if (rank + step < ranks) {
      group.messages.push_back({Message::Send, curM, {}, mBytes, rank + step});
      group.messages.push_back({Message::Send, curS, {}, sBytes, rank + step});
    }
    if (rank - step >= 0) {
      group.messages.push_back({Message::Recv, recvM, {}, mBytes, rank - step});
      group.messages.push_back({Message::Recv, recvS, {}, sBytes, rank - step});
      // This rank's prefix comes after the received one.
      transitionGemm(curM, recvM, newM);
      stateGemm(curM, recvS, curS, newS);
      std::swap(curM, newM);
      std::swap(curS, newS);
    }
  }
  if (rank == 0)
    plan.zero({Buffer::Output}, sBytes);
  Group &shift = plan.communicate();
  if (rank + 1 < ranks)
    shift.messages.push_back({Message::Send, curS, {}, sBytes, rank + 1});
  if (rank >= 1)
    shift.messages.push_back({Message::Recv, {Buffer::Output}, {}, sBytes,
                              rank - 1});
  return true;
}

bool planAllReduce(const Shape &input, const Shape &output, int ranks, int rank,
                   gdn_dtype_t dtype, Plan &plan, std::string &error) {
  if (!checkGroup(ranks, rank, error) ||
      !checkOutput(output, input, "output",
                   "all_reduce of " + describe(input.dims) + " over " +
                       std::to_string(ranks) + " ranks",
                   error))
    return false;
  Group &group = plan.communicate();
  if (input.bytes() == 0)
    return true;
  Message message{
      Message::AllReduce, {Buffer::Input}, {Buffer::Output}, input.bytes()};
  message.dtype = dtype;
  group.messages.push_back(message);
  return true;
}

bool planLocalUnshard(const Shape &input, const Shape &output, int ranks,
                      int rank, int dim, Plan &plan, std::string &error) {
  if (!checkGroupAndDim(input, ranks, rank, dim, "dim", error))
    return false;
  Shape expected = input;
  expected.dims[dim] *= ranks;
  if (!checkOutput(output, expected, "output",
                   opText("local_unshard", input, ranks, dim), error))
    return false;
  const size_t outer = input.product(0, dim);
  const size_t piece =
      input.product(dim, input.dims.size()) * input.elementBytes;
  if (outer <= 1) {
    // The blocks are contiguous: zero the ones before and after this rank's.
    plan.zero({Buffer::Output}, rank * piece);
    plan.zero({Buffer::Output, (rank + 1) * piece}, (ranks - rank - 1) * piece);
  } else {
    plan.zero({Buffer::Output}, output.bytes());
  }
  plan.copy({Buffer::Output, rank * piece}, ranks * piece, {Buffer::Input},
            piece, piece, outer);
  return true;
}

bool planReplicatedToPartial(const Shape &input, const Shape &output, int ranks,
                             int rank, Plan &plan, std::string &error) {
  if (!checkGroup(ranks, rank, error) ||
      !checkOutput(output, input, "output",
                   "replicated_to_partial of " + describe(input.dims) +
                       " over " + std::to_string(ranks) + " ranks",
                   error))
    return false;
  const size_t bytes = input.bytes();
  if (rank == 0)
    plan.copy({Buffer::Output}, bytes, {Buffer::Input}, bytes, bytes, 1);
  else
    plan.zero({Buffer::Output}, bytes);
  return true;
}

bool planReturnHalo(const Shape &haloGrad, const Shape &dest,
                    const Shape &output, int ranks, int rank, gdn_dtype_t dtype,
                    Plan &plan, std::string &error) {
  if (!checkGroupAndDim(dest, ranks, rank, 0, "dim", error))
    return false;
  if (haloGrad.dims.size() != dest.dims.size() ||
      haloGrad.elementBytes != dest.elementBytes ||
      !std::equal(dest.dims.begin() + 1, dest.dims.end(),
                  haloGrad.dims.begin() + 1)) {
    std::vector<int64_t> rows = dest.dims;
    rows[0] = haloGrad.dims.empty() ? 0 : haloGrad.dims[0];
    error = "the halo gradient has shape " + describe(haloGrad.dims) +
            " but the rows of the shard gradient " + describe(dest.dims) +
            " give " + describe(rows) + " (and dest's element type)";
    return false;
  }
  if (!checkOutput(output, dest, "output",
                   "return_halo onto a shard gradient " + describe(dest.dims),
                   error))
    return false;
  const int64_t shard = dest.dims[0], halo = haloGrad.dims[0];
  const size_t row = dest.product(1, dest.dims.size()) * dest.elementBytes;
  const int64_t first = rank * shard; // this shard's first buffer row
  // The forward's segments: rows [max(q*n, t*n - h), min((q+1)*n, t*n)) of
  // rank q's shard were in rank t's halo. Their cotangents go back from t
  // to q; rows before the buffer (negative) have no owner and are dropped.
  auto segment = [&](int64_t q, int64_t t) {
    return std::make_pair(std::max(q * shard, t * shard - halo),
                          std::min((q + 1) * shard, t * shard));
  };
  // Every later halo that reaches this shard covers part of its last
  // min(h, n) rows (the tail), and the ranks whose halos do are the ones
  // right after this one.
  const int64_t tail = std::min(halo, shard);
  int64_t contributors = 0;
  if (row > 0 && tail > 0)
    for (int64_t t = rank + 1; t < ranks; ++t) {
      auto [begin, end] = segment(rank, t);
      if (begin >= end)
        break;
      ++contributors;
    }
  const size_t tailBytes = tail * row;
  const size_t head = (shard - (contributors > 0 ? tail : 0)) * row;
  // The tail is summed in slots of the workspace: dest's tail in slot 0,
  // rank (rank + j)'s rows in slot j (zeros where its halo does not reach),
  // so each element's terms are added in one GEMM, in rank order.
  plan.copy({Buffer::Output}, head, {Buffer::Input2}, head, head, 1);
  if (contributors > 0) {
    plan.workspaceBytes = (contributors + 1) * tailBytes;
    plan.copy({Buffer::Workspace}, tailBytes, {Buffer::Input2, head}, tailBytes,
              tailBytes, 1);
    plan.zero({Buffer::Workspace, tailBytes}, contributors * tailBytes);
  }
  Group &group = plan.communicate();
  if (row == 0)
    return true;
  for (int64_t q = 0; q < rank; ++q) {
    auto [begin, end] = segment(q, rank);
    if (begin < end)
      group.messages.push_back(
          {Message::Send,
           {Buffer::Input, static_cast<size_t>(begin - (first - halo)) * row},
           {Buffer::Input},
           static_cast<size_t>(end - begin) * row,
           static_cast<int>(q)});
  }
  for (int64_t j = 1; j <= contributors; ++j) {
    auto [begin, end] = segment(rank, rank + j);
    const int64_t slotRow = begin - (first + shard - tail);
    group.messages.push_back(
        {Message::Recv,
         {Buffer::Workspace,
          j * tailBytes + static_cast<size_t>(slotRow) * row},
         {Buffer::Workspace},
         static_cast<size_t>(end - begin) * row,
         static_cast<int>(rank + j)});
  }
  if (contributors > 0)
    sumRows(plan, {Buffer::Workspace}, contributors + 1,
            tailBytes / dest.elementBytes, dtype, {Buffer::Output, head});
  return true;
}

bool planReverseStateExchange(const Shape &incomingGrad,
                              const Shape &transition, const Shape &partial,
                              const Shape &transitionGrad,
                              const Shape &partialGrad, int ranks, int rank,
                              bool scan, gdn_dtype_t dtype, Plan &plan,
                              std::string &error) {
  (void)scan; // both chains compute the same function; see below
  if (!checkGroup(ranks, rank, error))
    return false;
  if (dtype != GDN_F32 && dtype != GDN_F64) {
    error = "the state summaries and their gradients must be f32 or f64";
    return false;
  }
  if (partial.dims.size() != 3) {
    error = "the partial state has shape " + describe(partial.dims) +
            ", not [HV, K, V]";
    return false;
  }
  const int64_t heads = partial.dims[0], K = partial.dims[1],
                V = partial.dims[2];
  Shape expectedTransition = partial;
  expectedTransition.dims = {heads, K, K};
  const std::string because =
      "a partial state " + describe(partial.dims) + " ([HV, K, V])";
  if (!checkOutput(transition, expectedTransition, "transition", because,
                   error) ||
      !checkOutput(incomingGrad, partial, "incoming state gradient", because,
                   error) ||
      !checkOutput(transitionGrad, expectedTransition, "transition gradient",
                   because, error) ||
      !checkOutput(partialGrad, partial, "partial state gradient", because,
                   error))
    return false;
  const size_t e = partial.elementBytes;
  const size_t mBytes = heads * K * K * e, sBytes = heads * K * V * e;
  const size_t mm = K * K, sv = K * V; // per-head strides in elements
  // Every rank needs M_j and dS_in(j) of the ranks after it (the reverse
  // chain) and M_j, S_j of the ranks before it (S_in): gather all three,
  // then chain locally. A log-depth reverse scan would move the same bytes
  // in log2 P rounds; the states are small (HV K^2), so one gather is
  // simpler and `scan` takes the same plan.
  const size_t allM = 0, allS = ranks * mBytes, allD = allS + ranks * sBytes;
  const Address states[2] = {
      {Buffer::Workspace, allD + ranks * sBytes},
      {Buffer::Workspace, allD + ranks * sBytes + sBytes}};
  const Address laterTemp{Buffer::Workspace,
                          allD + ranks * sBytes + 2 * sBytes};
  plan.workspaceBytes = allD + ranks * sBytes + 3 * sBytes;
  Group &group = plan.communicate();
  group.messages.push_back(
      {Message::AllGather, {Buffer::Input}, {Buffer::Workspace, allM}, mBytes});
  group.messages.push_back({Message::AllGather,
                            {Buffer::Input2},
                            {Buffer::Workspace, allS},
                            sBytes});
  group.messages.push_back({Message::AllGather,
                            {Buffer::Input3},
                            {Buffer::Workspace, allD},
                            sBytes});
  if (rank == ranks - 1) {
    // G(P) = 0: nothing after the last rank reads its summary.
    plan.zero({Buffer::Output2}, sBytes);
    plan.zero({Buffer::Output}, mBytes);
    return true;
  }
  // G(r + 1) into the partial state's gradient: G(P - 1) = dS_in(P - 1),
  // G(j) = M_j^T G(j + 1) + dS_in(j) down to j = r + 1. The running value
  // alternates with a temporary so that it ends in Output2.
  const int gemms = ranks - 2 - rank;
  Address later = gemms % 2 == 0 ? Address{Buffer::Output2} : laterTemp;
  Address other = gemms % 2 == 0 ? laterTemp : Address{Buffer::Output2};
  plan.copy(later, sBytes, {Buffer::Workspace, allD + (ranks - 1) * sBytes},
            sBytes, sBytes, 1);
  for (int j = ranks - 2; j > rank; --j) {
    BatchedGemm step{{Buffer::Workspace, allM + j * mBytes},
                     later,
                     {Buffer::Workspace, allD + j * sBytes},
                     other,
                     K,
                     V,
                     K,
                     heads,
                     mm,
                     sv,
                     sv,
                     sv,
                     true,
                     dtype};
    step.transposeA = true;
    plan.gemm(step);
    std::swap(later, other);
  }
  if (rank == 0) {
    // S_in(0) = 0: the transition of rank 0 met a zero state.
    plan.zero({Buffer::Output}, mBytes);
    return true;
  }
  // S_in(r) as the forward chains it: S_in(1) = S_0,
  // S_in(j + 1) = M_j S_in(j) + S_j.
  Address state = states[0], next = states[1];
  plan.copy(state, sBytes, {Buffer::Workspace, allS}, sBytes, sBytes, 1);
  for (int j = 1; j < rank; ++j) {
    plan.gemm({{Buffer::Workspace, allM + j * mBytes},
               state,
               {Buffer::Workspace, allS + j * sBytes},
               next,
               K,
               V,
               K,
               heads,
               mm,
               sv,
               sv,
               sv,
               true,
               dtype});
    std::swap(state, next);
  }
  // dM_r = G(r + 1) S_in(r)^T per head.
  BatchedGemm outer{{Buffer::Output2},
                    state,
                    {Buffer::Output},
                    {Buffer::Output},
                    K,
                    K,
                    V,
                    heads,
                    sv,
                    sv,
                    mm,
                    mm,
                    false,
                    dtype};
  outer.transposeB = true;
  plan.gemm(outer);
  return true;
}

uint64_t bytesSentByGroup(const Group &group, int rank, int ranks) {
  uint64_t bytes = 0;
  const uint64_t peers = ranks > 1 ? static_cast<uint64_t>(ranks - 1) : 0;
  for (const Message &message : group.messages) {
    switch (message.kind) {
    case Message::Send:
      if (message.peer != rank)
        bytes += message.bytes;
      break;
    case Message::Recv:
      break;
    case Message::AllGather:
    case Message::ReduceScatter:
      bytes += message.bytes * peers;
      break;
    case Message::AllReduce:
      bytes += ranks > 1 ? 2 * message.bytes * peers / ranks : 0;
      break;
    }
  }
  return bytes;
}

} // namespace gdnrt
