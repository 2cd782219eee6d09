// The window attributes placed Conv, ConvTranspose and pooling share, read at kernel creation (any
// of them may be absent: their defaults depend on the input's rank, known at run time), and their
// 2-D form: a 1-D window over (N, C, L) is the 2-D one over (N, C, 1, L) (H = 1, its stride,
// dilation 1, no pads), which is how the kernels send it to CANN's 2-D ops (4-D NCHW only).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cann/acl_op.h"
#include "common/tensor_io.h"

namespace ortops::placed {

struct ConvAttributes {
  std::vector<int64_t> strides, pads, dilations, kernel_shape;  // as the node has them ({} if absent)
  int64_t group = 1;
  std::string auto_pad = "NOTSET";

  // Reads them from the node; `op` names it in errors.
  OrtStatusPtr Read(const OrtKernelInfo* info, const char* op) {
    OrtStatusPtr status = nullptr;
    if ((status = ReadIntsAttribute(info, op, "strides", {}, &strides)) != nullptr ||
        (status = ReadIntsAttribute(info, op, "pads", {}, &pads)) != nullptr ||
        (status = ReadIntsAttribute(info, op, "dilations", {}, &dilations)) != nullptr ||
        (status = ReadIntsAttribute(info, op, "kernel_shape", {}, &kernel_shape)) != nullptr ||
        (status = ReadIntAttribute(info, op, "group", 1, &group)) != nullptr ||
        (status = ReadStringAttribute(info, op, "auto_pad", "NOTSET", &auto_pad)) != nullptr) {
      return status;
    }
    return nullptr;
  }

  // "" if the lists fit one spatial rank (1 to `max_rank`: each has that many entries, pads twice
  // as many, or is absent) and the values are in range; else what is wrong.
  std::string Check(size_t max_rank = 2) const {
    const size_t rank = Rank();
    if (rank > max_rank || !Fits(rank).empty()) {
      return "strides " + ShapeText(strides) + ", pads " + ShapeText(pads) + ", dilations " + ShapeText(dilations) +
             " and kernel_shape " + ShapeText(kernel_shape) + " are not of one spatial rank 1 to " +
             std::to_string(max_rank);
    }
    for (int64_t s : strides) {
      if (s < 1) return "strides " + ShapeText(strides) + " must be >= 1";
    }
    for (int64_t d : dilations) {
      if (d < 1) return "dilations " + ShapeText(dilations) + " must be >= 1";
    }
    for (int64_t p : pads) {
      if (p < 0) return "pads " + ShapeText(pads) + " must be >= 0";
    }
    if (group < 1) return "group " + std::to_string(group) + " must be >= 1";
    return "";
  }

  // "" if the node's lists fit `spatial` dims (the input's rank - 2); else what is wrong.
  std::string Fits(size_t spatial) const {
    const bool ok = (strides.empty() || strides.size() == spatial) && (pads.empty() || pads.size() == 2 * spatial) &&
                    (dilations.empty() || dilations.size() == spatial) &&
                    (kernel_shape.empty() || kernel_shape.size() == spatial);
    return ok ? ""
              : "the attributes are " + std::to_string(Rank()) + "-D, the input has " + std::to_string(spatial) +
                    " spatial dims";
  }

  // "" if auto_pad is one of ONNX's (NOTSET, SAME_UPPER, SAME_LOWER, VALID) and, if SAME_*, the
  // window is not dilated (ONNX's SAME formula has no dilation; ORT's CPU EP refuses it too).
  std::string CheckAutoPad() const {
    if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID") {
      return "auto_pad " + auto_pad + " is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID";
    }
    if (auto_pad.rfind("SAME", 0) == 0) {
      for (int64_t d : dilations) {
        if (d != 1) {
          return "auto_pad " + auto_pad + " with dilations " + ShapeText(dilations) +
                 ": the pads are not defined for a dilated kernel";
        }
      }
    }
    return "";
  }

  // The pads of `spatial` dims ([begins..., ends...]) for an input of spatial extents `in`, with
  // strides `s` and window extents (dilated) `extent`: the node's (0 if absent) under NOTSET,
  // zeros under VALID, ONNX's SAME_* pads (output ceil(in / s); SAME_UPPER puts the odd pad at
  // the end, SAME_LOWER at the begin).
  std::vector<int64_t> ResolvePads(const std::vector<int64_t>& in, const std::vector<int64_t>& s,
                                   const std::vector<int64_t>& extent) const {
    const size_t spatial = in.size();
    std::vector<int64_t> out = pads.empty() || auto_pad != "NOTSET" ? std::vector<int64_t>(2 * spatial, 0) : pads;
    if (auto_pad.rfind("SAME", 0) != 0) return out;
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t total = std::max<int64_t>(0, ((in[i] + s[i] - 1) / s[i] - 1) * s[i] + extent[i] - in[i]);
      SplitPad(total, auto_pad == "SAME_UPPER", &out[i], &out[spatial + i]);
    }
    return out;
  }

  // A total padding split between an axis's begin and end as ONNX does: the smaller half
  // (floor(total / 2), also for a negative total) at the begin if `upper`, else at the end.
  static void SplitPad(int64_t total, bool upper, int64_t* begin, int64_t* end) {
    const int64_t small = total >= 0 ? total / 2 : -((1 - total) / 2), large = total - small;
    *begin = upper ? small : large;
    *end = upper ? large : small;
  }

  size_t Rank() const {
    if (!strides.empty()) return strides.size();
    if (!dilations.empty()) return dilations.size();
    if (!kernel_shape.empty()) return kernel_shape.size();
    return pads.size() / 2;
  }
};

// An ONNX per-axis list of `spatial` (1 or 2) entries (`fallback` each if absent) as the 2-D one
// ([1, v] for 1-D: H = 1).
inline std::vector<int64_t> As2d(const std::vector<int64_t>& values, size_t spatial, int64_t fallback) {
  std::vector<int64_t> out = values.empty() ? std::vector<int64_t>(spatial, fallback) : values;
  if (spatial == 1) out.insert(out.begin(), 1);
  return out;
}

// ONNX pads of `spatial` dims ([begins..., ends...]; 0 if absent) as CANN's 2-D [top, bottom,
// left, right] ([0, 0, begin, end] for 1-D), or for 3-D [head, tail, top, bottom, left, right].
inline std::vector<int64_t> CannPads(const std::vector<int64_t>& pads, size_t spatial) {
  std::vector<int64_t> p = pads.empty() ? std::vector<int64_t>(2 * spatial, 0) : pads;
  if (spatial == 1) return {0, 0, p[0], p[1]};
  if (spatial == 3) return {p[0], p[3], p[1], p[4], p[2], p[5]};
  return {p[0], p[2], p[1], p[3]};
}

// The window attributes of CANN's convolution ops (Conv2D, Conv3DV2, Conv2DBackpropInput,
// Conv3DBackpropInputV2): strides and dilations of the 2 (NCHW, As2d's) or 3 (NCDHW) window axes
// with 1 on N and C, pads in CANN's order (CannPads), groups and data_format.
inline cann::AclOp& ConvWindowAttributes(cann::AclOp& op, const std::vector<int64_t>& strides,
                                         const std::vector<int64_t>& cann_pads, const std::vector<int64_t>& dilations,
                                         int64_t groups) {
  std::vector<int64_t> all_strides{1, 1}, all_dilations{1, 1};
  all_strides.insert(all_strides.end(), strides.begin(), strides.end());
  all_dilations.insert(all_dilations.end(), dilations.begin(), dilations.end());
  return op.AttrInts("strides", all_strides)
      .AttrInts("pads", cann_pads)
      .AttrInts("dilations", all_dilations)
      .AttrInt("groups", groups)
      .AttrString("data_format", strides.size() == 3 ? "NCDHW" : "NCHW");
}

// Why CANN's 3-D convolution `op` cannot take a window: "strides [..], dilations [..], W [..] and
// pads [..] exceed CANN <op>'s limits <limits>" (pads: ONNX's).
inline std::string Conv3dLimitsText(const char* op, const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dilations, const std::vector<int64_t>& w_shape,
                                    const std::vector<int64_t>& pads, const char* limits) {
  return "strides " + ShapeText(strides) + ", dilations " + ShapeText(dilations) + ", W " + ShapeText(w_shape) +
         " and pads " + ShapeText(pads) + " exceed CANN " + op + "'s limits " + limits;
}

// A shape of `spatial` dims after N and C as the 4-D one ([N, C, 1, L] for 1-D).
inline std::vector<int64_t> As4d(const std::vector<int64_t>& shape) {
  std::vector<int64_t> out = shape;
  if (out.size() == 3) out.insert(out.begin() + 2, 1);
  return out;
}

}  // namespace ortops::placed
