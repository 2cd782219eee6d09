// Tile placed on CANN: CANN Tile (hicann/ops-math math/tile: TensorFlow's Tile, y[i] = x[i mod x's
// dims]; multiples a 1-D int32/int64 of one entry per dim) with ONNX's repeats as its constant
// multiples. The repeats are a host input (ORT keeps them in CPU memory), checked there: one per
// dim of the input, each >= 0, as ONNX requires. All repeats 1 is a device copy; an empty output
// launches nothing.
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::tile {
namespace {

class TileKernel : public PlacedKernel {
 public:
  using PlacedKernel::PlacedKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    std::vector<int64_t> repeats;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    ORTOPS_RETURN_IF_ERROR(InputInts(context, 1, "repeats", &repeats));
    if (repeats.size() != x.shape.size()) {
      return Fail("repeats " + ShapeText(repeats) + " must have one entry per dim of the input " + ShapeText(x.shape));
    }
    std::vector<int64_t> shape;
    bool copy = true;
    for (size_t d = 0; d < repeats.size(); ++d) {
      if (repeats[d] < 0) return Fail("repeats " + ShapeText(repeats) + " must be >= 0");
      shape.push_back(x.shape[d] * repeats[d]);
      copy = copy && repeats[d] == 1;
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      if (copy) return run.CopyOnDevice(out, x.data, Bytes(x));
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, "Tile")
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(repeats.data(), repeats.size() * sizeof(int64_t), ACL_INT64,
                      {static_cast<int64_t>(repeats.size())})
          .Output(out, ElementCount(shape) * ElementSize(x.type), type, shape)
          .Run(run.stream);
    });
  }
};

}  // namespace

// ONNX Tile's types that CANN Tile's prototype lists (hicann/ops-math math/tile/op_graph/tile_proto.h).
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI8, kU8, kI16, kU16, kI32, kI64, kBool}) {
    list.Add("Tile", {In(t), HostInts()}, {In(t)}, Make<TileKernel>);
  }
}

}  // namespace ortops::placed::tile
